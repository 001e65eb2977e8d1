/**
 * History on demand (`npm run bench:history`; bench/run.ts embeds its table): a directoryStore
 * holding a long history — `files` files rewritten `rounds` times, a checkpoint after each round,
 * every version a distinct blob of `size` bytes (100k blobs, 2 GiB by default) — is opened in a
 * fresh process, which reports the time to open, the resident memory it took (RSS and V8 heap over
 * a baseline taken before, after a GC) and `ws.storage`; then it restores the oldest checkpoint
 * and reads 100 of its files, counting the blobs read back from the store (`ws.counters.blobsRead`).
 * Goals (issue 13): open ≤ 300 ms, resident memory ≤ 150 MiB plus the cache, ≤ 100 blobs read for
 * the 100 files. The same store opened through a wrapper without `readBlobSync` (every content
 * read on open, as for a store without synchronous reads) is the comparison row, run where the
 * history fits in memory comfortably (≤ 1 GiB).
 *
 * Arguments: --quick (2k files × 5 rounds × 4 KiB), or --files N --rounds N --size BYTES; --keep
 * leaves the store in place and prints its path.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fmtBytes, fmtCount, fmtMs, fullGc, progress, table } from './lib.js'

const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
const DIST_NODE_FS = new URL('../dist/adapters/node-fs/index.js', import.meta.url).href
const MiB = 1024 * 1024

interface Scale {
  files: number
  rounds: number
  size: number
}

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const value = (name: string) => {
  const at = args.indexOf(name)
  return at >= 0 ? Number(args[at + 1]) : undefined
}

/** One file's content in one round: distinct bytes (no dedup), cheap to make. */
function contentOf(base: Uint8Array, round: number, file: number): Uint8Array {
  const bytes = base.slice()
  const view = new DataView(bytes.buffer)
  for (let at = 0; at + 8 <= bytes.length; at += 512) {
    view.setUint32(at, round, true)
    view.setUint32(at + 4, file, true)
  }
  return bytes
}

function pathOf(file: number): string {
  return `/d${file % 100}/f${file}.txt`
}

/** Writes the history into a new directory store. */
async function build(dir: string, scale: Scale): Promise<void> {
  const { Workspace } = (await import(DIST_ENTRY)) as typeof import('../src/index.js')
  const { directoryStore } = (await import(DIST_NODE_FS)) as typeof import('../adapters/node-fs/index.js')
  const base = new Uint8Array(scale.size)
  for (let i = 0; i < base.length; i++) base[i] = 97 + ((i * 31) % 26)
  // Checkpoints are kept (manual); operations beyond the default retention are pruned, as in a long session.
  const ws = await Workspace.open({ store: directoryStore(dir), autoCheckpoint: false, cacheBytes: 64 * MiB })
  for (let d = 0; d < Math.min(100, scale.files); d++) ws.fs.mkdirSync(`/d${d}`)
  const started = performance.now()
  for (let round = 0; round < scale.rounds; round++) {
    for (let file = 0; file < scale.files; file++) ws.fs.writeFileSync(pathOf(file), contentOf(base, round, file))
    await ws.checkpoint({ name: `r${round}` })
    if (round % 10 === 9) progress(`history: round ${round + 1}/${scale.rounds}, ${fmtBytes((round + 1) * scale.files * scale.size)} written in ${fmtMs(performance.now() - started)}`)
  }
  await ws.close()
}

interface Measured {
  openMs: number
  rssBytes: number
  heapBytes: number
  storage: { blobs: number; resident: { blobs: number; bytes: number }; durable: { blobs: number; bytes: number }; contents: string; cache: { limit: number } }
  blobsRead: number
  filesRead: number
  restoreMs: number
  /** Operations replayed from the journal's tail after its last snapshot (compactions run every 10 000 records). */
  replayed: number
}

/** In a fresh process: open the store, measure, restore the oldest checkpoint and read 100 of its files. */
async function measure(dir: string, scale: Scale, preload: boolean): Promise<Measured> {
  const { Workspace } = (await import(DIST_ENTRY)) as typeof import('../src/index.js')
  const { directoryStore } = (await import(DIST_NODE_FS)) as typeof import('../adapters/node-fs/index.js')
  fullGc()
  const before = process.memoryUsage()
  const started = performance.now()
  const raw = directoryStore(dir)
  // A store without synchronous reads: the same one with readBlobSync (and the lookups that go with it) hidden.
  const hidden = new Set<PropertyKey>(['readBlobSync', 'blobSizes', 'blobSize', 'blobTotals'])
  const store = preload ? new Proxy(raw, { get: (target, key) => (hidden.has(key) ? undefined : Reflect.get(target, key)) }) : raw
  const ws = await Workspace.open({ store, autoCheckpoint: false })
  const openMs = performance.now() - started
  fullGc()
  const after = process.memoryUsage()
  const storage = ws.storage
  const replayed = ws.status.loaded?.operations ?? 0
  const read = ws.counters.blobsRead
  const restoreStarted = performance.now()
  await ws.restore('r0')
  const restoreMs = performance.now() - restoreStarted
  const files = Math.min(100, scale.files)
  const base = new Uint8Array(scale.size)
  for (let i = 0; i < base.length; i++) base[i] = 97 + ((i * 31) % 26)
  for (let file = 0; file < files; file++) {
    const bytes = ws.fs.readFileSync(pathOf(file)) as Uint8Array
    const expected = contentOf(base, 0, file)
    if (bytes.length !== expected.length || Buffer.compare(bytes, expected) !== 0) throw new Error(`file ${file} of checkpoint r0 read back wrong`)
  }
  const blobsRead = ws.counters.blobsRead - read
  await ws.close()
  return { openMs, rssBytes: after.rss - before.rss, heapBytes: after.heapUsed - before.heapUsed, storage, blobsRead, filesRead: files, restoreMs, replayed }
}

function runChild(dir: string, scale: Scale, preload: boolean): Measured {
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', new URL(import.meta.url).pathname, '--measure', dir, '--files', String(scale.files), '--rounds', String(scale.rounds), '--size', String(scale.size), ...(preload ? ['--preload'] : [])],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * MiB, timeout: 1_800_000 },
  )
  return JSON.parse(output.trim().split('\n').at(-1)!) as Measured
}

async function main(): Promise<void> {
  const quick = flag('--quick')
  const scale: Scale = {
    files: value('--files') ?? (quick ? 2000 : 1000),
    rounds: value('--rounds') ?? (quick ? 5 : 100),
    size: value('--size') ?? (quick ? 4096 : 20 * 1024),
  }
  if (flag('--measure')) {
    const dir = args[args.indexOf('--measure') + 1]!
    process.stdout.write(JSON.stringify(await measure(dir, scale, flag('--preload'))) + '\n')
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'rewindfs-history-'))
  const history = scale.files * scale.rounds * scale.size
  try {
    progress(`history: writing ${fmtCount(scale.files * scale.rounds)} blobs, ${fmtBytes(history)}, into ${dir}`)
    await build(dir, scale)
    const rows: string[][] = []
    const row = (name: string, m: Measured) => [
      name,
      `${fmtMs(m.openMs)} (${fmtCount(m.replayed)} operations replayed)`,
      `${fmtBytes(m.rssBytes)} RSS / ${fmtBytes(m.heapBytes)} heap`,
      `${fmtBytes(m.storage.resident.bytes)} (${fmtCount(m.storage.resident.blobs)} blobs)`,
      `${fmtBytes(m.storage.durable.bytes)} (${fmtCount(m.storage.durable.blobs)} blobs)`,
      `${m.blobsRead} for ${m.filesRead} files`,
      fmtMs(m.restoreMs),
    ]
    const onDemand = runChild(dir, scale, false)
    progress(`history: on demand, open ${fmtMs(onDemand.openMs)}, +${fmtBytes(onDemand.rssBytes)} RSS, ${onDemand.blobsRead} blobs read for ${onDemand.filesRead} files`)
    rows.push(row(`directoryStore, contents on demand (cacheBytes ${fmtBytes(onDemand.storage.cache.limit)})`, onDemand))
    if (history <= 1024 * MiB) {
      const preload = runChild(dir, scale, true)
      progress(`history: preloaded, open ${fmtMs(preload.openMs)}, +${fmtBytes(preload.rssBytes)} RSS`)
      rows.push(row('the same store without readBlobSync (every content read on open)', preload))
    } else rows.push(['the same store without readBlobSync (every content read on open)', `not run: it would hold ${fmtBytes(history)} in memory`, '', '', '', '', ''])
    const goals = [
      `open ${fmtMs(onDemand.openMs)} (goal ≤ 300 ms) ${onDemand.openMs <= 300 ? '✅' : '❌'}`,
      `resident ${fmtBytes(onDemand.rssBytes)} RSS over the baseline (goal ≤ 150 MiB plus the cache) ${onDemand.rssBytes <= 150 * MiB ? '✅' : '❌'}`,
      `${onDemand.blobsRead} blobs read for ${onDemand.filesRead} files of the oldest checkpoint (goal ≤ 100) ${onDemand.blobsRead <= 100 ? '✅' : '❌'}`,
    ]
    console.log(
      `### History on demand: ${fmtCount(scale.files)} files × ${scale.rounds} rounds of ${fmtBytes(scale.size)}, a checkpoint each (${fmtCount(scale.files * scale.rounds)} blobs, ${fmtBytes(history)})\n\n` +
        table(['store', 'open', 'memory taken by open (after GC)', 'ws.storage resident', 'ws.storage durable', 'blobs read (restore the oldest checkpoint, read its files)', 'restore'], rows) +
        `\n\nEach row opens the store in a fresh process (\`node --expose-gc\`), memory measured over a baseline taken just before. ${goals.join('; ')}.`,
    )
  } finally {
    if (flag('--keep')) progress(`history: store kept at ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
}

await main()
