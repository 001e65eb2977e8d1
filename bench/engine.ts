/**
 * Section 6 of bench/run.ts: the rollback engine.
 *   6.1 undo latency of one write and of a 50-step undo in a filled workspace;
 *   6.2 restore latency against the number of changed paths, in two tree sizes (it should follow
 *       the changed paths, not the tree);
 *   6.3 journal append throughput with a durable store: MemoryStore and the node-fs directoryStore
 *       (one fdatasync per group commit), group commits by `await ws.sync()` every 1, 10, 100 ops,
 *       each directoryStore cell next to raw append + fdatasync of the bytes it wrote, same interval,
 *       timed warm (after an untimed run of the cell), the median of three;
 *   6.4 history bytes: 100 versions of a 1 MB text file with a 3-line edit each, rewindfs vs a
 *       shadow git repository (loose and after `git gc`) vs full copies.
 * Every measure checks what it timed (contents back, change counts, a reopen from the store).
 */
import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store, Workspace } from '../src/index.js'
import { Content, type FsLike, dirBytes, dirsFor, fillFs, fmtBytes, fmtCount, fmtMs, fmtOps, fmtRatio, fullGc, layout, median, progress, table, timeAsync } from './lib.js'

export interface EngineBenchOptions {
  quick: boolean
  /** False with --no-git: the shadow git rows of 6.4 are skipped. */
  withGit: boolean
  emit(markdown: string): void
}

const FULL = {
  undoFiles: 10_000,
  undoSamples: 101,
  undoDeepSamples: 21,
  restoreSizes: [10_000, 100_000],
  restoreSamples: 21,
  /** Per throughput cell: this many ops, unless the cap runs out first (a slow disk). */
  throughputOps: 20_000,
  throughputCapMs: 4_000,
  /** Timed runs per throughput cell (after one untimed): the median is reported. */
  throughputSamples: 3,
  versions: 100,
}
const QUICK = {
  undoFiles: 2_000,
  undoSamples: 21,
  undoDeepSamples: 5,
  restoreSizes: [2_000, 10_000],
  restoreSamples: 3,
  throughputOps: 2_000,
  throughputCapMs: 500,
  throughputSamples: 1,
  versions: 20,
}
type Config = typeof FULL

const CHANGED = [1, 10, 100, 1000]
const DEEP_UNDO = 50
const GROUPS = [1, 10, 100]

// The built package, as run.ts measures it (`npm run bench` builds first).
const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
const DIST_NODE_FS = new URL('../dist/adapters/node-fs/index.js', import.meta.url).href
const DIST_ADAPTER_KIT = new URL('../dist/src/adapter-kit.js', import.meta.url).href
let rewindfs: typeof import('../src/index.js') | undefined
async function load(): Promise<typeof import('../src/index.js')> {
  return (rewindfs ??= (await import(DIST_ENTRY)) as typeof import('../src/index.js'))
}
async function open(options: Parameters<typeof Workspace.open>[0] = {}): Promise<Workspace> {
  return (await load()).Workspace.open(options)
}

/** A filled workspace: `files` × 1 KiB over dirsFor(files) directories, written through ws.fs. */
async function filled(files: number): Promise<{ ws: Workspace; fs: FsLike; paths: string[]; content: Content }> {
  const { paths, dirs } = layout(files, dirsFor(files))
  const content = new Content()
  const ws = await open()
  const fs = ws.fs as unknown as FsLike
  fillFs(fs, paths, dirs, content)
  return { ws, fs, paths, content }
}

/** `count` indices spread evenly over 0..n-1. */
function spread(n: number, count: number): number[] {
  const step = Math.max(1, Math.floor(n / count))
  return Array.from({ length: Math.min(count, n) }, (_, i) => i * step)
}

function expectStamp(fs: FsLike, path: string, stamp: number, what: string): void {
  const got = Content.stampOf(fs.readFileSync(path))
  if (got !== stamp) throw new Error(`${what}: ${path} has stamp ${got}, expected ${stamp}`)
}

function failed(what: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  progress(`engine: ${what} FAILED: ${error instanceof Error ? (error.stack ?? message) : message}`)
  return `FAILED: \`${message.split('\n')[0]!.replace(/`/g, "'").replace(/\|/g, '\\|').slice(0, 160)}\``
}

// ---- 6.1 undo ----------------------------------------------------------------------------------

async function benchUndo(config: Config): Promise<string> {
  const files = config.undoFiles
  progress(`engine: undo on a ${fmtCount(files)}-file workspace`)
  const { ws, fs, paths, content } = await filled(files)
  await ws.checkpoint({ name: 'filled' })

  const single: number[] = []
  for (let s = 0; s < config.undoSamples; s++) {
    const i = (s * 7919) % files
    fs.writeFileSync(paths[i]!, content.stamp(1e6 + s))
    let undone = 0
    single.push(await timeAsync(async () => (undone = (await ws.undo()).undone.length)))
    if (undone !== 1) throw new Error(`undo of one write undid ${undone} operations`)
    expectStamp(fs, paths[i]!, i, 'undo of one write')
  }

  const deep: number[] = []
  for (let s = 0; s < config.undoDeepSamples; s++) {
    const touched = Array.from({ length: DEEP_UNDO }, (_, k) => (s * 104_729 + k * 7919) % files)
    touched.forEach((i, k) => fs.writeFileSync(paths[i]!, content.stamp(2e6 + s * DEEP_UNDO + k)))
    let undone = 0
    deep.push(await timeAsync(async () => (undone = (await ws.undo({ steps: DEEP_UNDO })).undone.length)))
    if (undone !== DEEP_UNDO) throw new Error(`a ${DEEP_UNDO}-step undo undid ${undone} operations`)
    for (const i of touched) expectStamp(fs, paths[i]!, i, `${DEEP_UNDO}-step undo`)
  }
  await ws.close()
  const oneStep = median(single)
  const fifty = median(deep)
  progress(`engine: undo ${fmtMs(oneStep)}, ${DEEP_UNDO}-step undo ${fmtMs(fifty)}`)
  return (
    `### 6.1 Undo latency (${fmtCount(files)} × 1 KiB files in the workspace)\n\n` +
    table(
      ['undo', 'median', 'per operation undone', 'samples'],
      [
        ['`ws.undo()` of one writeFileSync', fmtMs(oneStep), fmtMs(oneStep), String(config.undoSamples)],
        [`\`ws.undo({ steps: ${DEEP_UNDO} })\` of ${DEEP_UNDO} writes to distinct files`, fmtMs(fifty), fmtMs(fifty / DEEP_UNDO), String(config.undoDeepSamples)],
      ],
    ) +
    '\n\nTimed from the call to the resolved result (which includes `changesReverted`, the line counts per file); every sample checks the files read back as before the writes.'
  )
}

// ---- 6.2 restore against changed paths --------------------------------------------------------

interface RestoreCost {
  /** Median milliseconds of one restore. */
  ms: number
  /** Work counters of one restore (`ws.counters`): clock-free, so other processes cannot move them. */
  lookups: number
  blobsTouched: number
}

/** Restore cost for each count in CHANGED, in a tree of `files`. */
async function restoreCosts(files: number, samples: number): Promise<RestoreCost[]> {
  const { ws, fs, paths, content } = await filled(files)
  const base = await ws.checkpoint({ name: 'base' })
  const costs: RestoreCost[] = []
  for (const changed of CHANGED) {
    const indices = spread(files, changed)
    const times: number[] = []
    let lookups = 0
    let blobsTouched = 0
    for (let r = 0; r < samples; r++) {
      for (const i of indices) fs.writeFileSync(paths[i]!, content.stamp(3e6 + r))
      let changes = 0
      const before = ws.counters
      times.push(await timeAsync(async () => (changes = (await ws.restore(base.id)).changes.length)))
      lookups = ws.counters.lookups - before.lookups
      blobsTouched = ws.counters.blobsTouched - before.blobsTouched
      if (changes !== indices.length) throw new Error(`restore of ${indices.length} changed paths in ${files} files reported ${changes} changes`)
      for (const i of [indices[0]!, indices.at(-1)!]) expectStamp(fs, paths[i]!, i, 'restore')
    }
    costs.push({ ms: median(times), lookups, blobsTouched })
  }
  await ws.close()
  return costs
}

async function benchRestore(config: Config): Promise<string> {
  const sizes = config.restoreSizes
  const results = new Map<number, RestoreCost[] | string>()
  // Warm-up on a small tree, so the first size is not measured with cold code.
  await restoreCosts(1_000, 2)
  for (const files of sizes) {
    fullGc()
    progress(`engine: restore in a ${fmtCount(files)}-file tree`)
    try {
      const costs = await restoreCosts(files, config.restoreSamples)
      results.set(files, costs)
      progress(`engine: restore at ${fmtCount(files)}: ${costs.map((c) => fmtMs(c.ms)).join(', ')}`)
    } catch (error) {
      results.set(files, failed(`restore at ${fmtCount(files)} files`, error))
    }
  }
  const at = (files: number, c: number) => {
    const r = results.get(files)!
    return typeof r === 'string' ? undefined : r[c]!
  }
  const rows = CHANGED.map((changed, c) => {
    const cells = sizes.map((files) => at(files, c)?.ms).map((ms) => (ms === undefined ? 'FAILED' : fmtMs(ms)))
    const perPath = sizes.map((files) => at(files, c)?.ms).map((ms) => (ms === undefined ? 'n/a' : fmtMs(ms / changed)))
    const small = at(sizes[0]!, c)
    const large = at(sizes.at(-1)!, c)
    const ratio = small && large ? fmtRatio(large.ms / small.ms) : 'n/a'
    const work = sizes.map((files) => at(files, c)).map((cost) => (cost ? `${cost.lookups} / ${cost.blobsTouched}` : 'n/a'))
    return [String(changed), ...cells, perPath.join(' / '), ratio, work.join(' · ')]
  })
  const failures = [...results.values()].filter((r): r is string => typeof r === 'string')
  const largest = results.get(sizes.at(-1)!)
  const growth = Array.isArray(largest) ? fmtRatio(largest.at(-1)!.ms / largest[0]!.ms) : 'n/a'
  const large = fmtCount(sizes.at(-1)!)
  const small = fmtCount(sizes[0]!)
  return (
    `### 6.2 Restore latency against changed paths (files × 1 KiB, 1000 per dir)\n\n` +
    table(
      ['changed paths', ...sizes.map((files) => `restore in ${fmtCount(files)} files`), `per changed path (${small} / ${large})`, `t(${large}) / t(${small})`, `lookups / blobs touched per restore (${small} · ${large})`],
      rows,
    ) +
    `\n\n\`await ws.restore(base)\` after rewriting the changed paths (spread over the tree), medians of ${config.restoreSamples}; each restore reports exactly that many changes and the files read back as in the checkpoint. ` +
    `In the ${large}-file tree, ${fmtCount(CHANGED.at(-1)!)} changed paths cost ${growth} what 1 does; the t column is the cost of a ${fmtRatio(sizes.at(-1)! / sizes[0]!)} larger tree. ` +
    'The last column is `ws.counters` across one restore: work that depends on the changed paths only, whatever else runs on the machine.' +
    (failures.length ? `\n\n${failures.join('\n\n')}` : '')
  )
}

// ---- 6.3 journal append throughput --------------------------------------------------------------

interface Throughput {
  ops: number
  opsPerSecond: number
  /** The longest single `await ws.sync()`: the commit that replaces the journal with a compaction's snapshot shows here. */
  longestSync: number
  /** Page faults the process took while timed, per operation: new memory touched (on this VM a run takes about 20 µs longer for each extra one). */
  faultsPerOp: number
}

/** The process's page faults so far (minor and major). */
function faults(): number {
  const usage = process.resourceUsage()
  return usage.minorPageFault + usage.majorPageFault
}

type Op = (fs: FsLike, n: number) => void

const opContent = new Content(1)
const OPS: { name: string; run: Op }[] = [
  // A new 1 KiB blob per op: the group commit stores blobs first, then the journal records.
  { name: 'writeFileSync 1 KiB', run: (fs, n) => fs.writeFileSync(`/t/f${n}`, opContent.stamp(n)) },
  // Journal records only, no blob.
  { name: 'mkdirSync', run: (fs, n) => fs.mkdirSync(`/t/d${n}`) },
]

/** What a store wrote while ops were timed: bytes appended and fdatasyncs (directoryStore's pack counters). */
interface Written {
  appendedBytes: number
  fdatasyncs: number
}

/**
 * Records config.throughputOps ops (fewer if config.throughputCapMs runs out), syncing every
 * `group`; the rate is amortised over the whole run, compactions included. Checks a reopen sees every op.
 */
async function throughput(
  config: Config,
  store: () => Store | undefined,
  op: Op,
  group: number,
  verify: (ops: number, reopened: Store | undefined) => Promise<void>,
  counters?: (store: Store) => Written | undefined,
): Promise<Throughput & { written?: Written; commits: number }> {
  const durable = store()
  const ws = await open(durable ? { store: durable } : {})
  const fs = ws.fs as unknown as FsLike
  fs.mkdirSync('/t')
  await ws.sync()
  const before = durable && counters?.(durable)
  let n = 0
  let commits = 0
  let longestSync = 0
  const faultsBefore = faults()
  const start = performance.now()
  let now = start
  while (n < config.throughputOps && now - start < config.throughputCapMs) {
    for (let k = 0; k < group; k++) op(fs, n++)
    const beforeSync = performance.now()
    await ws.sync()
    commits++
    now = performance.now()
    longestSync = Math.max(longestSync, now - beforeSync)
  }
  const faultsPerOp = (faults() - faultsBefore) / n
  const after = durable && counters?.(durable)
  await ws.close()
  await verify(n, durable)
  const written = before && after ? { appendedBytes: after.appendedBytes - before.appendedBytes, fdatasyncs: after.fdatasyncs - before.fdatasyncs } : undefined
  return { ops: n, opsPerSecond: (n / (now - start)) * 1000, longestSync, faultsPerOp, commits, ...(written ? { written } : {}) }
}

/**
 * The disk's own rate for the same bytes: `bytesPerOp` appended to one file per op (one write
 * each) and one fdatasync every `group` ops, for as many ops (or as long) as a cell.
 */
function rawAppend(config: Config, dir: string, bytesPerOp: number, group: number): Throughput {
  const file = join(dir, `raw-append-${group}`)
  const fd = nodeFs.openSync(file, 'a')
  const record = Buffer.alloc(Math.max(1, Math.round(bytesPerOp)), 0x61)
  let n = 0
  let longestSync = 0
  const faultsBefore = faults()
  const start = performance.now()
  let now = start
  try {
    while (n < config.throughputOps && now - start < config.throughputCapMs) {
      for (let k = 0; k < group; k++, n++) nodeFs.writeSync(fd, record)
      const beforeSync = performance.now()
      nodeFs.fdatasyncSync(fd)
      now = performance.now()
      longestSync = Math.max(longestSync, now - beforeSync)
    }
  } finally {
    nodeFs.closeSync(fd)
    nodeFs.rmSync(file, { force: true })
  }
  return { ops: n, opsPerSecond: (n / (now - start)) * 1000, longestSync, faultsPerOp: (faults() - faultsBefore) / n }
}

async function benchJournal(config: Config): Promise<string> {
  const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-journal-'))
  let stores = 0
  const reopenCheck = (makeAgain: (store: Store) => Store) => async (ops: number, durable: Store | undefined) => {
    const again = await open({ store: makeAgain(durable!) })
    const names = (again.fs.readdirSync('/t') as string[]).length
    await again.close()
    if (names !== ops) throw new Error(`reopened from the ${durable!.kind} store: ${names} entries in /t, expected ${ops}`)
  }
  const { MemoryStore } = (await import(DIST_ADAPTER_KIT)) as typeof import('../src/adapter-kit.js')
  const { directoryStore } = (await import(DIST_NODE_FS)) as typeof import('../adapters/node-fs/index.js')
  let directoryPath = ''
  const subjects: {
    name: string
    store: () => Store | undefined
    verify: (ops: number, durable: Store | undefined) => Promise<void>
    counters?: (store: Store) => Written | undefined
  }[] = [
    { name: 'no store (in memory only)', store: () => undefined, verify: async () => undefined },
    { name: 'MemoryStore', store: () => new MemoryStore(), verify: reopenCheck((store) => store) },
    {
      name: `directoryStore (node-fs, ${tmpdir()})`,
      store: () => directoryStore((directoryPath = join(root, `store-${stores++}`))),
      verify: reopenCheck(() => directoryStore(directoryPath)),
      counters: (store) => (store as ReturnType<typeof directoryStore>).packStats,
    },
  ]
  const rows: string[][] = []
  /** fdatasyncs per group commit in every directoryStore cell (the target is one). */
  const syncsPerCommit: number[] = []
  const ratios: number[] = []
  try {
    // Warm-up, so the first cell is not measured with cold (unoptimised) code.
    for (const op of OPS) await throughput(config, () => undefined, op.run, 100, async () => undefined)
    for (const subject of subjects) {
      for (const op of OPS) {
        const cells: string[] = []
        const raw: string[] = []
        const ratio: string[] = []
        const faulted: string[] = []
        let longest = 0
        let rawLongest = 0
        for (const group of GROUPS) {
          fullGc()
          try {
            // Timed warm, as a long-running process runs: the same cell once untimed first (its code
            // optimised, the heap grown to its size), then the timed runs, each on a store of its
            // own. No forced GC between them: one shrinks the heap, and on this VM every page taken
            // back costs a fault of 13-15 us (0.2-0.3 more per operation in these cells: 3-7 us).
            await throughput(config, subject.store, op.run, group, subject.verify, subject.counters)
            // The median of a few timed runs: consecutive runs of one cell differ by up to 1.5x here.
            const samples: { result: Throughput & { written?: Written; commits: number }; disk?: Throughput; bytesPerOp?: number; rate: number }[] = []
            for (let sample = 0; sample < config.throughputSamples; sample++) {
              const result = await throughput(config, subject.store, op.run, group, subject.verify, subject.counters)
              if (!result.written) {
                samples.push({ result, rate: result.opsPerSecond })
                continue
              }
              // Side by side, right after it: the same bytes per op appended raw, synced at the same
              // interval (warmed the same way before the first: once untimed).
              const bytesPerOp = result.written.appendedBytes / result.ops
              if (sample === 0) rawAppend(config, root, bytesPerOp, group)
              const disk = rawAppend(config, root, bytesPerOp, group)
              samples.push({ result, disk, bytesPerOp, rate: result.opsPerSecond / disk.opsPerSecond })
            }
            samples.sort((a, b) => a.rate - b.rate)
            const { result, disk, bytesPerOp } = samples[samples.length >> 1]
            for (const sample of samples) {
              longest = Math.max(longest, sample.result.longestSync)
              if (sample.disk) rawLongest = Math.max(rawLongest, sample.disk.longestSync)
              if (sample.result.written) syncsPerCommit.push(sample.result.written.fdatasyncs / sample.result.commits)
            }
            cells.push(fmtOps(result.opsPerSecond) + (result.ops < config.throughputOps ? ` (${fmtCount(result.ops)} ops)` : ''))
            progress(`engine: journal ${subject.name}, ${op.name}, sync every ${group}: ${fmtOps(result.opsPerSecond)} over ${result.ops} ops (median of ${samples.length}: ${samples.map((sample) => fmtOps(sample.result.opsPerSecond)).join(', ')}), longest sync ${fmtMs(result.longestSync)}`)
            if (disk && bytesPerOp !== undefined) {
              ratios.push(result.opsPerSecond / disk.opsPerSecond)
              raw.push(`${fmtOps(disk.opsPerSecond)} (${Math.round(bytesPerOp)} B/op)`)
              faulted.push(`${result.faultsPerOp.toFixed(2)} / ${disk.faultsPerOp.toFixed(2)}`)
              ratio.push(`${Math.round((100 * result.opsPerSecond) / disk.opsPerSecond)} %`)
              progress(`engine: raw append + fdatasync of ${Math.round(bytesPerOp)} B/op, sync every ${group}: ${fmtOps(disk.opsPerSecond)} (directoryStore ${ratio.at(-1)}; ratios ${samples.map((sample) => `${Math.round(100 * sample.rate)} %`).join(', ')})`)
            }
          } catch (error) {
            cells.push(failed(`journal ${subject.name} ${op.name} every ${group}`, error))
          }
        }
        rows.push([subject.name, op.name, ...cells, fmtMs(longest)])
        if (raw.length === GROUPS.length) {
          rows.push(['↳ raw append + fdatasync of the same bytes, same interval', op.name, ...raw, fmtMs(rawLongest)])
          rows.push(['↳ directoryStore ÷ raw', op.name, ...ratio, ''])
          rows.push(['↳ page faults per operation (directoryStore / raw)', op.name, ...faulted, ''])
        }
      }
    }
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
  }
  const syncs = syncsPerCommit.length > 0 ? `${Math.min(...syncsPerCommit).toFixed(2)}–${Math.max(...syncsPerCommit).toFixed(2)}` : 'n/a'
  return (
    `### 6.3 Journal append throughput (operations recorded per second)\n\n` +
    table(['store', 'operation', ...GROUPS.map((g) => `\`await ws.sync()\` every ${g}`), 'longest `ws.sync()`'], rows) +
    `\n\nEach cell records ${fmtCount(config.throughputOps)} operations into /t (fewer, as shown, where ${fmtMs(config.throughputCapMs)} ran out) and divides by the whole time, ` +
    'automatic compactions included (one starts once the journal holds 10 000 records and as many bytes as its last snapshot; the MemoryStore\'s is encoded in slices while the event loop is idle and, once it falls behind, a little at each commit, the directoryStore\'s on its worker thread from the store itself, which in a 20k-operation cell answers about when the cell ends, so the cell\'s bytes and time hold none of its write: the close writes it; commits go on meanwhile; its longest sync is the journal replaced). ' +
    'Cells are timed warm, after one untimed run of the same cell (the steady state of a long-running process: its code optimised, its heap grown; no forced garbage collection between them)' +
    (config.throughputSamples > 1 ? `; of ${config.throughputSamples} timed runs, each followed by its raw row, the one with the median ratio (the median rate for the other rows) is shown (the longest sync: of all of them). ` : '. ') +
    'A group commit appends its new blobs, then its journal records, to one pack segment and makes both durable with one fdatasync ' +
    `(measured: ${syncs} fdatasyncs per group commit, sealing a full segment included). ` +
    'Right after each directoryStore cell, the raw row appends the bytes per operation that cell wrote (its pack counters: blobs, journal text, record headers, compactions) to one file, one write per operation, with an fdatasync at the same interval: ' +
    `what the disk gives for the same durable bytes; the ÷ row is directoryStore's share of it (target ≥ 50 %; measured ${ratios.length > 0 ? `${Math.round(100 * Math.min(...ratios))}–${Math.round(100 * Math.max(...ratios))} %` : 'n/a'}). ` +
    'The faults row counts the page faults the process took while each was timed, per operation (process.resourceUsage): new memory touched, which the raw row barely does; the heap a workspace grows as it records is new memory unless the process still holds pages it freed, so this count moves between runs of the same cell, and the rate with it. ' +
    'After each run the workspace is reopened from the store and must list every entry written. The in-memory rows are the ceiling (no store: `ws.sync()` only settles).'
  )
}

// ---- 6.4 history bytes ------------------------------------------------------------------------

const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' }

/** The 1 MB text file of test/gc.test.ts: 20,000 lines, three of them edited per version. */
function versionsOf(count: number): () => Generator<string> {
  return function* () {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`)
    yield lines.join('\n')
    for (let v = 1; v <= count; v++) {
      for (const at of [v * 7, v * 70 + 3, v * 150 + 11]) lines[at] = `edited in version ${v}`
      yield lines.join('\n')
    }
  }
}

/** Waits until the background delta slices have nothing left to do (bytes stop changing); returns when they last changed. */
async function settleBackground(ws: Workspace, limitMs: number): Promise<number> {
  const start = performance.now()
  let last = ws.storage.bytes
  let changedAt = start
  let quiet = 0
  while (quiet < 40 && performance.now() - start < limitMs) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    const bytes = ws.storage.bytes
    if (bytes === last) quiet++
    else {
      quiet = 0
      changedAt = performance.now()
    }
    last = bytes
  }
  return changedAt - start
}

interface RewindHistory {
  size: number
  base: number
  eager: number
  background: number
  backgroundMs: number
  collected: number
  writeMs: number
}

async function rewindHistory(versions: () => Generator<string>, count: number): Promise<RewindHistory> {
  // No automatic checkpoints: exactly one checkpoint per version.
  const ws = await open({ autoCheckpoint: false })
  const all = versions()
  const first = all.next().value as string
  ws.fs.writeFileSync('/big.txt', first)
  await ws.checkpoint({ name: 'v0' })
  ws.collectGarbage()
  const base = ws.storage.bytes
  const middle = Math.ceil(count / 2)
  let middleText = ''
  let latest = first
  const start = performance.now()
  for (let v = 1; v <= count; v++) {
    latest = all.next().value as string
    if (v === middle) middleText = latest
    ws.fs.writeFileSync('/big.txt', latest)
    await ws.checkpoint({ name: `v${v}` })
  }
  const writeMs = performance.now() - start
  const eager = ws.storage.bytes
  const backgroundMs = await settleBackground(ws, 30_000)
  const background = ws.storage.bytes
  ws.collectGarbage()
  const collected = ws.storage.bytes
  // Old versions must still read back from their deltas: the middle one and the newest are checked whole.
  await ws.restore(`v${middle}`)
  if (ws.fs.readFileSync('/big.txt', 'utf8') !== middleText) throw new Error(`version ${middle} read back wrong after deltas`)
  await ws.restore(`v${count}`)
  if (ws.fs.readFileSync('/big.txt', 'utf8') !== latest) throw new Error(`version ${count} read back wrong after deltas`)
  await ws.close()
  return { size: Buffer.byteLength(first), base, eager, background, backgroundMs, collected, writeMs }
}

interface GitHistory {
  base: number
  baseGc: number
  loose: { apparent: number; disk: number }
  packed: { apparent: number; disk: number }
  commitMs: number
  gcMs: number
}

function gitHistory(versions: () => Generator<string>): GitHistory {
  const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-history-'))
  const work = join(root, 'work')
  const gitDir = join(root, '.shadow')
  try {
    nodeFs.mkdirSync(work)
    const git = `git -c user.name=bench -c user.email=bench@example.invalid -c commit.gpgsign=false -c gc.auto=0 -c core.fsmonitor=false --git-dir='${gitDir}' --work-tree='${work}'`
    const sh = (command: string) => execFileSync('sh', ['-c', command], { env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' })
    // No template: sample hooks would count as history bytes.
    sh(`${git} init -q --template=`)
    const commits: number[] = []
    let base = 0
    let baseGc = 0
    let v = 0
    for (const text of versions()) {
      nodeFs.writeFileSync(join(work, 'big.txt'), text)
      const start = performance.now()
      sh(`${git} add -A && ${git} commit -q --no-verify -m v${v}`)
      commits.push(performance.now() - start)
      if (v === 0) {
        base = dirBytes(gitDir).apparent
        // The one-version repository packed, in a copy: growth after gc is measured against it.
        const copy = join(root, '.shadow-v0')
        nodeFs.cpSync(gitDir, copy, { recursive: true })
        sh(`git -c gc.auto=0 --git-dir='${copy}' gc -q`)
        baseGc = dirBytes(copy).apparent
        nodeFs.rmSync(copy, { recursive: true, force: true })
      }
      v++
    }
    const loose = dirBytes(gitDir)
    const start = performance.now()
    sh(`${git} gc -q`)
    const gcMs = performance.now() - start
    const packed = dirBytes(gitDir)
    const count = sh(`${git} rev-list --count HEAD`).trim()
    if (Number(count) !== v) throw new Error(`shadow git has ${count} commits, expected ${v}`)
    return { base, baseGc, loose, packed, commitMs: median(commits), gcMs }
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
  }
}

async function benchHistory(config: Config, withGit: boolean): Promise<string> {
  const count = config.versions
  const versions = versionsOf(count)
  progress(`engine: history of ${count} versions of a 1 MB file (rewindfs)`)
  const ours = await rewindHistory(versions, count)
  progress(`engine: rewindfs keeps ${fmtBytes(ours.collected - ours.base)} more after ${count} versions`)
  let git: GitHistory | string | undefined
  if (withGit) {
    progress(`engine: history of ${count} versions (shadow git)`)
    try {
      git = gitHistory(versions)
      progress(`engine: shadow git loose ${fmtBytes(git.loose.apparent)}, packed ${fmtBytes(git.packed.apparent)}`)
    } catch (error) {
      git = failed('shadow git history', error)
    }
  }
  const size = ours.size
  const row = (name: string, total: number, growth: number, note: string) => [name, fmtBytes(total), fmtBytes(growth), fmtBytes(Math.round(growth / count)), fmtRatio((count * size) / growth), note]
  const rows = [
    row('rewindfs, right after the writes (before the background delta slices)', ours.eager, ours.eager - ours.base, `writes + checkpoints took ${fmtMs(ours.writeMs)}`),
    row('rewindfs, after the background delta slices', ours.background, ours.background - ours.base, `settled within ${fmtMs(ours.backgroundMs)}`),
    row('rewindfs, after `ws.collectGarbage()`', ours.collected, ours.collected - ours.base, '`ws.storage.bytes`'),
  ]
  if (typeof git === 'string') rows.push(['shadow git', git, '', '', '', ''])
  else if (git) {
    rows.push(
      row('shadow git, loose objects', git.loose.apparent, git.loose.apparent - git.base, `on disk (du): ${fmtBytes(git.loose.disk)}; commit ${fmtMs(git.commitMs)} median`),
      row('shadow git, after `git gc`', git.packed.apparent, git.packed.apparent - git.baseGc, `on disk (du): ${fmtBytes(git.packed.disk)}; gc took ${fmtMs(git.gcMs)}`),
    )
  } else rows.push(['shadow git', 'skipped (--no-git)', '', '', '', ''])
  rows.push(row('full copies', (count + 1) * size, count * size, ''))
  return (
    `### 6.4 History bytes: ${count} versions of a ${fmtBytes(size)} text file, a 3-line edit and one checkpoint each\n\n` +
    table(['kept by', `total (${count + 1} versions)`, `growth for the ${count} later versions`, 'per version', 'full copies ÷ it (growth)', 'notes'], rows) +
    '\n\nrewindfs: `ws.storage.bytes` (blob store, uncompressed; old versions become reverse deltas against their successor); growth is over the first version after a collection. ' +
    'The middle and the newest version are restored and checked after the deltas. ' +
    'Shadow git: `git add -A && git commit` per version into a separate git dir (no hook templates), sizes are the sum of file sizes in it; loose objects are zlib-compressed whole versions, `git gc` packs them as deltas. ' +
    'Growth after gc is against the one-version repository packed.'
  )
}

// ---- section -------------------------------------------------------------------------------

export async function benchEngine(options: EngineBenchOptions): Promise<void> {
  const config = options.quick ? QUICK : FULL
  // BENCH_ENGINE_PARTS=6.3 (a comma list) runs only those parts: a smoke run of one.
  const only = process.env.BENCH_ENGINE_PARTS?.split(',')
  const parts = ([
    ['6.1 Undo latency', () => benchUndo(config)],
    ['6.2 Restore latency against changed paths', () => benchRestore(config)],
    ['6.3 Journal append throughput', () => benchJournal(config)],
    ['6.4 History bytes', () => benchHistory(config, options.withGit)],
  ] as [string, () => Promise<string>][]).filter(([title]) => !only || only.some((part) => title.startsWith(part)))
  // Other processes on the machine move these timings: the load is printed with them.
  const loadBefore = loadavg()[0]!
  let failures = 0
  for (const [title, part] of parts) {
    fullGc()
    try {
      options.emit(await part())
    } catch (error) {
      failures++
      options.emit(`### ${title}\n\n${failed(title, error)}`)
    }
  }
  options.emit(`Load average (1 min) when section 6 started / ended: ${loadBefore.toFixed(1)} / ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores.`)
  if (failures > 0) throw new Error(`${failures} of the engine benchmarks failed (see above)`)
}
