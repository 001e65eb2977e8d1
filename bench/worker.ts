/**
 * The engine in a worker thread: round trips of single calls, and batched operations per second for
 * a stated mix, against the same mix run in-process with the sync API as the ceiling.
 *
 *   node --expose-gc --import tsx bench/worker.ts
 */
import { Worker } from 'node:worker_threads'
import { availableParallelism, cpus, loadavg } from 'node:os'
import { Workspace } from '../src/workspace.js'
import { type BatchOp, openWorkerWorkspace } from '../worker/index.js'

const FILES = 10_000
const BATCH = 2_000
const BATCHES = 50
const SINGLE = 5_000
/** 1 KiB contents that differ per file and per write, as an agent's edits do (identical ones would be deduplicated). */
let written = 0
function kib(): Uint8Array {
  const bytes = new Uint8Array(1024).fill(97)
  new DataView(bytes.buffer).setFloat64(0, ++written)
  return bytes
}

const path = (i: number) => `/d${i % 100}/f${i}.txt`

/** The mix: 50% reads of 1 KiB files (bytes), 30% stats, 20% writes of 1 KiB. */
function mix(seed: number, count: number): BatchOp[] {
  const ops: BatchOp[] = []
  for (let k = 0; k < count; k++) {
    const i = (seed * 7919 + k * 104_729) % FILES
    const roll = k % 10
    if (roll < 5) ops.push({ op: 'readFile', args: [path(i)] })
    else if (roll < 8) ops.push({ op: 'stat', args: [path(i)] })
    else ops.push({ op: 'writeFile', args: [path(i), kib()] })
  }
  return ops
}

const rate = (count: number, ms: number) => `${(count / ms).toFixed(1)} k/s`

/** Wall time, and CPU time of the whole process (main thread and worker): on a busy machine the second is the cost. */
interface Timing {
  wall: number
  cpu: number
}

const RUNS = 3

/** The median of RUNS runs by wall time (other work on the machine only ever slows a run down); `prepare` is not timed. */
async function timed<T>(body: (input: T) => Promise<void>, prepare: (run: number) => T = () => undefined as T): Promise<Timing> {
  const runs: Timing[] = []
  for (let run = 0; run < RUNS; run++) {
    const input = prepare(run)
    ;(globalThis as { gc?: () => void }).gc?.()
    const cpu = process.cpuUsage()
    const start = performance.now()
    await body(input)
    const used = process.cpuUsage(cpu)
    runs.push({ wall: performance.now() - start, cpu: (used.user + used.system) / 1000 })
  }
  return runs.sort((a, b) => a.wall - b.wall)[Math.floor(RUNS / 2)]
}

const worker = new Worker(new URL('../worker/bootstrap.mjs', import.meta.url))
const ws = await openWorkerWorkspace(worker, { autoCheckpoint: false })
for (let d = 0; d < 100; d++) await ws.fs.mkdir(`/d${d}`)
for (let start = 0; start < FILES; start += BATCH) {
  await ws.batch(Array.from({ length: BATCH }, (_, k) => ({ op: 'writeFile' as const, args: [path(start + k), kib()] })))
}

// Warm-up, so both sides run optimised code.
for (let w = 0; w < 3; w++) await ws.batch(mix(w, BATCH))
for (let w = 0; w < 500; w++) await ws.fs.stat(path(w))

const rows: [string, string, string, string][] = []
const row = (name: string, count: number, t: Timing, note: string) => rows.push([name, rate(count, t.wall), rate(count, t.cpu), note])

const singleStat = await timed(async () => {
  for (let k = 0; k < SINGLE; k++) await ws.fs.stat(path(k))
})
row('single `fs.stat`, awaited one by one', SINGLE, singleStat, `${((singleStat.wall / SINGLE) * 1000).toFixed(1)} µs per round trip`)

const singleRead = await timed(async () => {
  for (let k = 0; k < SINGLE; k++) await ws.fs.readFile(path(k))
})
row('single `fs.readFile` (1 KiB), awaited one by one', SINGLE, singleRead, `${((singleRead.wall / SINGLE) * 1000).toFixed(1)} µs per round trip`)

const concurrent = await timed(async () => {
  await Promise.all(Array.from({ length: SINGLE }, (_, k) => ws.fs.stat(path(k))))
})
row(`single \`fs.stat\`, ${SINGLE} in flight`, SINGLE, concurrent, 'one message each, pipelined')

// New contents every run: rewriting a file with what it holds is a no-op the engine does not record.
const batchesFor = (run: number) => Array.from({ length: BATCHES }, (_, b) => mix(run * BATCHES + b + 10, BATCH))
let failures = 0
const batched = await timed(async (batches) => {
  for (const ops of batches) for (const result of await ws.batch(ops)) if (!result.ok) failures++
}, batchesFor)
if (failures > 0) throw new Error(`bench: ${failures} batched operations failed`)
const batchedRate = (BATCHES * BATCH * 1000) / batched.wall
row(`\`batch\` of ${BATCH} (50% readFile 1 KiB, 30% stat, 20% writeFile 1 KiB)`, BATCHES * BATCH, batched, `goal ≥ 100 k/s (wall) ${batchedRate >= 100_000 ? '✅' : '❌'}`)
await ws.close()

// The ceiling: the same mix on an in-process workspace through the sync API.
const local = await Workspace.open({ autoCheckpoint: false })
for (let d = 0; d < 100; d++) local.fs.mkdirSync(`/d${d}`)
for (let i = 0; i < FILES; i++) local.fs.writeFileSync(path(i), kib())
const sync = local.fs as unknown as Record<string, (...args: unknown[]) => unknown>
for (let w = 0; w < 3; w++) for (const { op, args } of mix(w, BATCH)) sync[`${op}Sync`](...args)
const inProcess = await timed(async (batches) => {
  for (const ops of batches) for (const { op, args } of ops) sync[`${op}Sync`](...args)
}, batchesFor)
row('same mix in-process, sync API (ceiling)', BATCHES * BATCH, inProcess, 'no channel')
await local.close()

console.log(`#### Engine in a worker thread (Node ${process.versions.node}, ${cpus()[0]?.model.trim() ?? 'cpu'}, ${availableParallelism()} cores; ${FILES} files of 1 KiB; median of ${RUNS} runs)\n`)
console.log('| calls | per second (wall) | per CPU second (both threads) | notes |')
console.log('| --- | ---: | ---: | --- |')
for (const cells of rows) console.log(`| ${cells.join(' | ')} |`)
console.log(`\nLoad average while it ran: ${loadavg().map((n) => n.toFixed(1)).join(', ')}.`)
