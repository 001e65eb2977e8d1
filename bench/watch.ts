/**
 * Watching: a recursive watcher on / over a workspace of 10k files, 10k writes. The target: 10k
 * events arrive, one batch per operation (ws.events 'change' counts the batches), and a watched
 * workspace writes at close to the speed of an unwatched one. memfs's recursive watch over the same
 * writes is the peer; a transaction of 10k writes (one operation) is one batch of 10k. Across a
 * worker thread, the main thread watches / and the writes go as one batch() (one task in the
 * worker): one event message carries all 10k events.
 *
 *   node --expose-gc --import tsx bench/watch.ts [--quick]
 */
import { Worker } from 'node:worker_threads'
import { Volume } from 'memfs'
import type { Workspace } from '../src/index.js'
import { fmtOps, fullGc, median, progress, table } from './lib.js'

const QUICK = process.argv.includes('--quick')
const FILES = QUICK ? 2_000 : 10_000
const REPS = QUICK ? 1 : 3
const DIRS = 100

const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
const { Workspace: WorkspaceClass } = (await import(DIST_ENTRY)) as typeof import('../src/index.js')
// Watching is a capability a workspace is given (rewindfs/watch), as users pass it.
const { watching } = (await import(new URL('../dist/src/watch.js', import.meta.url).href)) as typeof import('../src/watch.js')
const { openWorkerWorkspace } = (await import(new URL('../dist/worker/index.js', import.meta.url).href)) as typeof import('../worker/index.js')

const paths = Array.from({ length: FILES }, (_, i) => `/d${i % DIRS}/f${i}.txt`)
const content = (i: number, round: number) => {
  const bytes = new Uint8Array(1024).fill(97)
  new DataView(bytes.buffer).setUint32(0, i * 4 + round)
  return bytes
}

type Writable = { mkdirSync(path: string, options?: { recursive?: boolean }): unknown; writeFileSync(path: string, data: Uint8Array): void }

function fill(fs: Writable): void {
  for (let d = 0; d < DIRS; d++) fs.mkdirSync(`/d${d}`, { recursive: true })
  for (let i = 0; i < FILES; i++) fs.writeFileSync(paths[i]!, content(i, 0))
}

/** Overwrites every file once; returns ms until the writes returned and until the last event arrived. */
async function overwrite(fs: Writable, delivered: () => number, expected: number): Promise<{ writes: number; events: number }> {
  const start = performance.now()
  for (let i = 0; i < FILES; i++) fs.writeFileSync(paths[i]!, content(i, 1))
  const writes = performance.now() - start
  while (delivered() < expected) {
    await new Promise((resolve) => setImmediate(resolve))
    if (performance.now() - start > 60_000) break
  }
  return { writes, events: performance.now() - start }
}

interface Row {
  subject: string
  writes: number
  events: number
  received: number
  batches: number | string
  /** Event messages the worker posted (worker rows only). */
  messages?: number
}

async function rewind(watched: boolean): Promise<Row> {
  const ws: Workspace = await WorkspaceClass.open({ autoCheckpoint: false, watch: watching })
  fill(ws.fs as unknown as Writable)
  let received = 0
  let batches = 0
  const watcher = watched ? ws.fs.watch('/', { recursive: true }, () => received++) : undefined
  const off = watched ? ws.events.on('change', () => batches++) : undefined
  const times = await overwrite(ws.fs as unknown as Writable, () => received, watched ? FILES : 0)
  watcher?.close()
  off?.()
  await ws.close()
  return { subject: watched ? 'rewindfs, recursive watch on /' : 'rewindfs, no watcher', ...times, received, batches: watched ? batches : '' }
}

async function memfs(watched: boolean): Promise<Row> {
  const volume = new Volume()
  fill(volume as unknown as Writable)
  let received = 0
  const watcher = watched ? volume.watch('/', { recursive: true }, () => received++) : undefined
  const times = await overwrite(volume as unknown as Writable, () => received, watched ? FILES : 0)
  watcher?.close()
  return { subject: watched ? 'memfs, recursive watch on /' : 'memfs, no watcher', ...times, received, batches: 'n/a' }
}

/** One transaction writing every file: one operation, so one batch. */
async function transaction(): Promise<Row> {
  const ws: Workspace = await WorkspaceClass.open({ autoCheckpoint: false, watch: watching })
  fill(ws.fs as unknown as Writable)
  let received = 0
  let batches = 0
  ws.fs.watch('/', { recursive: true }, () => received++)
  ws.events.on('change', () => batches++)
  const start = performance.now()
  await ws.transaction((fs) => {
    for (let i = 0; i < FILES; i++) fs.writeFileSync(paths[i]!, content(i, 2))
  })
  const writes = performance.now() - start
  while (received < FILES && performance.now() - start < 60_000) await new Promise((resolve) => setImmediate(resolve))
  const events = performance.now() - start
  await ws.close()
  return { subject: 'rewindfs, one transaction of all the writes', writes, events, received, batches }
}

/** The engine in a worker thread (the built entry), watched from this thread; all the writes in one batch(). */
async function acrossWorker(): Promise<Row> {
  const worker = new Worker(new URL('../dist/worker/entry.js', import.meta.url))
  let messages = 0
  worker.on('message', (data: { kind?: string }) => {
    if (data?.kind === 'rewindfs:events') messages++
  })
  const ws = await openWorkerWorkspace(worker, { autoCheckpoint: false })
  const ops = (round: number) => paths.map((path, i) => ({ op: 'writeFile' as const, args: [path, content(i, round)] }))
  await ws.batch([...Array.from({ length: DIRS }, (_, d) => ({ op: 'mkdir' as const, args: [`/d${d}`] })), ...ops(0)])
  let received = 0
  let batches = 0
  const watcher = ws.fs.watch('/', { recursive: true }, () => received++)
  const off = ws.events.on('change', () => batches++)
  messages = 0
  const start = performance.now()
  await ws.batch(ops(1))
  const writes = performance.now() - start
  while (received < FILES && performance.now() - start < 60_000) await new Promise((resolve) => setImmediate(resolve))
  const events = performance.now() - start
  watcher.close()
  off()
  await ws.close()
  return { subject: 'rewindfs in a worker thread, watched from the main thread, one batch()', writes, events, received, batches, messages }
}

const subjects: [string, () => Promise<Row>][] = [
  ['memfs, no watcher', () => memfs(false)],
  ['memfs, recursive watch on /', () => memfs(true)],
  ['rewindfs, no watcher', () => rewind(false)],
  ['rewindfs, recursive watch on /', () => rewind(true)],
  ['rewindfs, one transaction', transaction],
  ['rewindfs in a worker thread', acrossWorker],
]
const rows: string[][] = []
for (const [name, run] of subjects) {
  const samples: Row[] = []
  for (let rep = 0; rep < REPS; rep++) {
    fullGc()
    samples.push(await run())
    progress(`watch ${name} rep ${rep + 1}: writes ${samples.at(-1)!.writes.toFixed(0)} ms, events ${samples.at(-1)!.events.toFixed(0)} ms, ${samples.at(-1)!.received} events`)
  }
  const last = samples.at(-1)!
  rows.push([
    last.subject,
    fmtOps((FILES / median(samples.map((s) => s.writes))) * 1000),
    `${median(samples.map((s) => s.events)).toFixed(0)} ms`,
    String(last.received),
    String(last.batches),
    last.messages === undefined ? '' : String(last.messages),
  ])
}
console.log(
  `#### Watching: ${FILES.toLocaleString('en-US')} files of 1 KiB, each overwritten once (median of ${REPS})\n\n` +
    table(['subject', 'writeFileSync', 'all events delivered after', 'events', "batches (ws.events 'change')", 'event messages from the worker'], rows),
)
