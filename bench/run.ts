/**
 * rewindfs benchmarks, side by side in one process: a script, not a test.
 *
 *   npm run bench          full sizes (100k files), writes bench/results.md   (~5–10 min on 2 cores)
 *   npm run bench:quick    small sizes, prints only (a smoke run)
 *
 * Flags: --quick, --out <file> (write the markdown there), --no-git, --only <section,...> with
 * sections ops, streams, lower, checkpoint, memory, bundle, engine, adapters, search, exec, bisect, postgres.
 *
 * Sections
 *   1. ops        writeFileSync / readFileSync / statSync of 1 KiB files spread over directories:
 *                 memfs Volume, unionfs (memfs lower + memfs upper), ZenFS CopyOnWrite (InMemory
 *                 readable + InMemory writable, through ZenFS's synchronous fs API) and rewindfs;
 *                 also n writes of one identical payload over the files (duplicate content), and a
 *                 hard link of each file, then a stat of each link.
 *   1b. streams   createWriteStream then createReadStream of one 100 MB file: memfs and rewindfs.
 *   2. lower      reading files that live in the lower layer only (cold first pass, warm second pass).
 *   3. checkpoint rewindfs checkpoint()/restore() vs a shadow git repository on disk vs memfs's
 *                 snapshot API (@jsonjoy.com/fs-snapshot toSnapshotSync / fromSnapshotSync).
 *   4. memory     retained heap + array buffers for N × 1 KiB files: rewindfs vs memfs.
 *   5. bundle     src/index.ts bundled for a neutral platform, minified, gzipped.
 *   6. engine     the rollback engine (bench/engine.ts): undo latency, restore latency against changed
 *                 paths, journal append throughput with MemoryStore and directoryStore, history bytes
 *                 of 100 versions of a 1 MB file vs a shadow git repository and full copies.
 *   7. adapters   flush to a directory, IndexedDB, Docker volumes (scripts of their own).
 *   8. search     the agent tools' search_files / find_files vs grep -rn / find on the same
 *                 directory (bench/search.ts): 100k files, 500 MB.
 *   9. exec       ws.exec around a command (bench/exec.ts): overlay mode vs copy mode vs the command
 *                 run directly, in projects of 1k–100k files, and a real build (tsc -p).
 *  10. bisect     ws.bisect over 256 operations on a 10k-file project vs git bisect run over the same
 *                 history as commits, each against its own test runs (bench/bisect.ts).
 *  11. postgres  sessions on PostgreSQL (bench/postgres.ts): group commits/s for 1 KiB writes on the
 *                server, PGlite and directoryStore beside raw INSERTs of the same bytes; storage of
 *                20 forked sessions vs 20 directory stores; open/resume latency in another process.
 */
import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { fromSnapshotSync, toSnapshotSync } from '@jsonjoy.com/fs-snapshot'
import { CopyOnWrite, InMemory, configureSingle, fs as zenfs } from '@zenfs/core'
import { Volume } from 'memfs'
import { Union } from 'unionfs'
import type { Workspace } from '../src/index.js'
import { GZIP_BUDGET_BYTES, bundleSize, kib } from '../scripts/bundle-size.js'
import { benchEngine } from './engine.js'
import { benchSearch } from './search.js'
import { benchExec } from './exec.js'
import { benchBisect } from './bisect.js'
import { benchPostgres } from './postgres.js'
import {
  Content,
  FILE_SIZE,
  FILES_PER_DIR,
  type FsLike,
  dirsFor,
  fillFs,
  fmtBytes,
  fmtCount,
  fmtMs,
  fmtOps,
  fmtRatio,
  fullGc,
  gcAvailable,
  layout,
  loopsFor,
  machineInfo,
  median,
  progress,
  retainedBytes,
  strided,
  table,
  time,
  timeAsync,
  verify,
} from './lib.js'

// ---- configuration -----------------------------------------------------------------------------

const argv = process.argv.slice(2)
const QUICK = argv.includes('--quick') || process.env.BENCH_QUICK === '1'
const argValue = (flag: string) => {
  const i = argv.indexOf(flag)
  return i >= 0 ? argv[i + 1] : undefined
}
const OUT = argValue('--out') ?? (QUICK ? undefined : new URL('./results.md', import.meta.url).pathname)
const ONLY = argValue('--only')?.split(',')
const WITH_GIT = !argv.includes('--no-git')
const run = (section: string) => !ONLY || ONLY.includes(section)

const CONFIG = QUICK
  ? { files: 5_000, dirs: 50, reps: 2, checkpointSizes: [1_000, 5_000], memoryFiles: 5_000, checkpointSamples: 50, restoreSamples: 5, changed: 100 }
  : { files: 100_000, dirs: 100, reps: 3, checkpointSizes: [1_000, 10_000, 100_000], memoryFiles: 100_000, checkpointSamples: 200, restoreSamples: 9, changed: 100 }
/** ZenFS's sync writes are ~1–3k/s here and slow down as directories grow: one repetition only. */
const ZENFS_REPS = 1
/** Run the 100k shadow-git checkpoint only when the 10k one predicts it finishes within this. */
const GIT_LIMIT_MS = 60_000

const report: string[] = []
const notes: string[] = []
const emit = (markdown: string) => {
  report.push(markdown)
  console.log(markdown + '\n')
}

type Opened = { fs: FsLike; close?: () => Promise<void> | void }

// ---- subjects ----------------------------------------------------------------------------------

function memfsVolume(): FsLike {
  return new Volume() as unknown as FsLike
}

function unionOf(lower: FsLike): FsLike {
  const upper = new Volume()
  // unionfs sends writes to the last fs added; reads try the last first, then fall through.
  return new Union().use(lower as never).use(upper as never) as unknown as FsLike
}

/** ZenFS CopyOnWrite over an InMemory readable (optionally pre-filled) and an InMemory writable. */
async function zenCow(fill?: { paths: string[]; dirs: string[] }): Promise<FsLike> {
  const readable = InMemory.create({ label: 'ro' })
  await readable.ready()
  if (fill) {
    zenfs.umount('/')
    zenfs.mount('/', readable)
    fillFs(zenfs as unknown as FsLike, fill.paths, fill.dirs)
  }
  await configureSingle({ backend: CopyOnWrite, readable, writable: InMemory.create({ label: 'cow' }) })
  return zenfs as unknown as FsLike
}

const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
/** Loaded on first use, so the other subjects still run when src/ does not load. */
let rewindfs: typeof import('../src/index.js') | undefined
/** ZenFS's fs is global: mount an empty InMemory on / so the filled one can be collected before the next subject. */
async function zenRelease(): Promise<void> {
  await configureSingle({ backend: InMemory })
}

async function rewind(lower?: Parameters<typeof Workspace.open>[0]): Promise<{ ws: Workspace; fs: FsLike }> {
  // The built package, as users install it (the peers are compiled JS too; tsx's transform of src/
  // wraps every closure for its names, which costs on hot paths). `npm run bench` builds first.
  rewindfs ??= (await import(DIST_ENTRY)) as typeof import('../src/index.js')
  const ws = await rewindfs.Workspace.open(lower ?? {})
  return { ws, fs: ws.fs as unknown as FsLike }
}

interface Subject {
  name: string
  reps: number
  open(): Promise<Opened>
}

const EMPTY_SUBJECTS: Subject[] = [
  { name: 'memfs', reps: CONFIG.reps, open: async () => ({ fs: memfsVolume() }) },
  { name: 'unionfs (memfs+memfs)', reps: CONFIG.reps, open: async () => ({ fs: unionOf(memfsVolume()) }) },
  { name: 'ZenFS CopyOnWrite (sync API)', reps: ZENFS_REPS, open: async () => ({ fs: await zenCow(), close: zenRelease }) },
  {
    name: 'rewindfs',
    reps: CONFIG.reps,
    open: async () => {
      const { ws, fs } = await rewind()
      return { fs, close: () => ws.close() }
    },
  },
  {
    name: 'rewindfs (autoCheckpoint: false)',
    reps: CONFIG.reps,
    open: async () => {
      const { ws, fs } = await rewind({ autoCheckpoint: false })
      return { fs, close: () => ws.close() }
    },
  },
]

// ---- 1. ops ------------------------------------------------------------------------------------

interface OpsResult {
  write: number
  read: number
  stat: number
  /** Writes of one identical payload over every file (duplicate content). */
  same: number
  /** linkSync of every file, then statSync of every link (NaN where the fs has no hard links). */
  link: number
  linkStat: number
}

/** One run: a fresh fs, n writes, then n reads and n stats in strided order. */
async function opsOnce(subject: Subject, paths: readonly string[], dirs: readonly string[], order: Uint32Array): Promise<OpsResult> {
  const { fs, close } = await subject.open()
  for (const dir of dirs) fs.mkdirSync(dir, { recursive: true })
  const loops = loopsFor(`ops ${subject.name}`)(fs, paths, new Content(), FILE_SIZE)
  const n = paths.length
  const write = loops.write()
  verify(fs, paths, subject.name)
  const read = loops.read(order)
  const stat = loops.stat(order)
  const same = loops.writeSame(new Content(1).bytes)
  let links: [number, number] = [NaN, NaN]
  try {
    links = loops.links(order)
  } catch (error) {
    progress(`ops ${subject.name}: no hard links (${(error as Error).message.split('\n')[0]})`)
  }
  await close?.()
  return { write: (n / write) * 1000, read: (n / read) * 1000, stat: (n / stat) * 1000, same: (n / same) * 1000, link: (n / links[0]) * 1000, linkStat: (n / links[1]) * 1000 }
}

async function benchOps(): Promise<void> {
  const { paths, dirs } = layout(CONFIG.files, CONFIG.dirs)
  const order = strided(paths.length)
  const results = new Map<string, OpsResult>()
  const failures = new Map<string, string>()
  // The subjects take turns rep by rep, as in the streams section: blocks of one subject's reps after
  // another's measured the order (the heap, the machine) as much as the fs.
  const samples = new Map<string, OpsResult[]>(EMPTY_SUBJECTS.map((subject) => [subject.name, []]))
  const rounds = Math.max(...EMPTY_SUBJECTS.map((subject) => subject.reps))
  for (let rep = 0; rep < rounds; rep++) {
    for (const subject of EMPTY_SUBJECTS) {
      if (rep >= subject.reps || failures.has(subject.name)) continue
      try {
        const heapBefore = retainedBytes()
        const r = await opsOnce(subject, paths, dirs, order)
        samples.get(subject.name)!.push(r)
        progress(`ops ${subject.name} rep ${rep + 1}/${subject.reps}: write ${fmtOps(r.write)}, read ${fmtOps(r.read)}, stat ${fmtOps(r.stat)}, same-content write ${fmtOps(r.same)}, link ${fmtOps(r.link)}, stat of a link ${fmtOps(r.linkStat)} (heap before: ${fmtBytes(heapBefore)})`)
      } catch (error) {
        failures.set(subject.name, failure(subject.name, error))
      }
    }
  }
  for (const subject of EMPTY_SUBJECTS) {
    const taken = samples.get(subject.name)!
    if (failures.has(subject.name)) continue
    results.set(subject.name, {
      write: median(taken.map((s) => s.write)),
      read: median(taken.map((s) => s.read)),
      stat: median(taken.map((s) => s.stat)),
      same: median(taken.map((s) => s.same)),
      link: median(taken.map((s) => s.link)),
      linkStat: median(taken.map((s) => s.linkStat)),
    })
  }
  const ours = results.get('rewindfs')
  const ops = (value: number) => (Number.isNaN(value) ? 'n/a' : fmtOps(value))
  const ratio = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? 'n/a' : fmtRatio(a / b))
  const rows = [...results].map(([name, r]) => [
    name,
    fmtOps(r.write),
    fmtOps(r.read),
    fmtOps(r.stat),
    fmtOps(r.same),
    ops(r.link),
    ops(r.linkStat),
    name === 'rewindfs'
      ? '1'
      : ours
        ? [ratio(ours.write, r.write), ratio(ours.read, r.read), ratio(ours.stat, r.stat), ratio(ours.same, r.same), ratio(ours.link, r.link), ratio(ours.linkStat, r.linkStat)].join(' / ')
        : 'n/a',
  ])
  for (const [name, message] of failures) rows.push([name, 'FAILED', message, '', '', '', '', ''])
  emit(
    `### 1. Sync fs ops: ${fmtCount(CONFIG.files)} × 1 KiB files in ${CONFIG.dirs} dirs (empty lower; median of ${CONFIG.reps} runs, ZenFS ${ZENFS_REPS}, the subjects taking turns)\n\n` +
      table(['fs', 'writeFileSync', 'readFileSync', 'statSync', 'writeFileSync, same content', 'linkSync', 'statSync of a hard link', 'rewindfs ÷ it (write / read / stat / same / link / link stat)'], rows) +
      '\n\nRatios above 1× mean rewindfs is faster. Reads and stats visit the files in a strided (non-write) order. ' +
      '"Same content" writes one identical 1 KiB payload over each of the files (content the fs already holds: agents and package managers do this all the time). ' +
      '"linkSync" makes a hard link of each file; "statSync of a hard link" stats those links (n/a: the fs has no hard links).',
  )
}

// ---- 1b. streams -------------------------------------------------------------------------------

type StreamFs = {
  createWriteStream(path: string, options?: { highWaterMark?: number }): NodeJS.WritableStream
  createReadStream(path: string, options?: { highWaterMark?: number }): NodeJS.ReadableStream
  statSync(path: string): { size: number }
}

/** Writes `size` bytes through createWriteStream in 64 KiB chunks, then reads them back with createReadStream; MB/s. */
async function streamOnce(fs: StreamFs, size: number): Promise<{ write: number; read: number }> {
  const chunk = new Uint8Array(64 * 1024).fill(120)
  const chunks = Math.ceil(size / chunk.byteLength)
  const write = await timeAsync(() =>
    pipeline(
      (async function* () {
        for (let i = 0; i < chunks; i++) yield chunk
      })(),
      fs.createWriteStream('/big.bin'),
    ),
  )
  if (fs.statSync('/big.bin').size !== chunks * chunk.byteLength) throw new Error('the streamed file has the wrong size')
  let seen = 0
  const read = await timeAsync(async () => {
    for await (const part of fs.createReadStream('/big.bin')) seen += (part as Uint8Array).byteLength
  })
  if (seen !== chunks * chunk.byteLength) throw new Error(`read ${seen} bytes back, expected ${chunks * chunk.byteLength}`)
  const mb = (chunks * chunk.byteLength) / 1e6
  return { write: (mb / write) * 1000, read: (mb / read) * 1000 }
}

/** Runs of the streams section per subject: each is a second or two, and one read varies by 2× run to run. */
const STREAM_REPS = QUICK ? 2 : 7

async function benchStreams(): Promise<void> {
  const size = QUICK ? 10e6 : 100e6
  const subjects: [string, () => Promise<{ fs: StreamFs; close?: () => Promise<void> }>][] = [
    ['memfs', async () => ({ fs: memfsVolume() as unknown as StreamFs })],
    [
      'rewindfs',
      async () => {
        const { ws, fs } = await rewind()
        return { fs: fs as unknown as StreamFs, close: () => ws.close() }
      },
    ],
  ]
  // The subjects take turns rep by rep (memfs, rewindfs, memfs, …): one 100 MB read is a second or
  // less, and the heap and the machine change over a run, so blocks of one subject's reps after the
  // other's measured the order as much as the fs.
  const samples = new Map<string, { write: number; read: number }[]>(subjects.map(([name]) => [name, []]))
  const failures = new Map<string, string>()
  for (let rep = 0; rep < STREAM_REPS; rep++) {
    for (const [name, open] of subjects) {
      if (failures.has(name)) continue
      try {
        fullGc()
        const { fs, close } = await open()
        const sample = await streamOnce(fs, size)
        samples.get(name)!.push(sample)
        await close?.()
        progress(`streams ${name} rep ${rep + 1}: write ${sample.write.toFixed(0)} MB/s, read ${sample.read.toFixed(0)} MB/s`)
      } catch (error) {
        failures.set(name, failure(`streams ${name}`, error))
      }
    }
  }
  const results = new Map<string, { write: number; read: number } | string>()
  for (const [name] of subjects) {
    const taken = samples.get(name)!
    results.set(name, failures.get(name) ?? { write: median(taken.map((s) => s.write)), read: median(taken.map((s) => s.read)) })
  }
  const ours = results.get('rewindfs')
  const rows = [...results].map(([name, r]) => {
    if (typeof r === 'string') return [name, 'FAILED', r, '']
    const ratio = name === 'rewindfs' ? '1' : typeof ours === 'object' ? `${fmtRatio(ours.write / r.write)} / ${fmtRatio(ours.read / r.read)}` : 'n/a'
    return [name, `${r.write.toFixed(0)} MB/s`, `${r.read.toFixed(0)} MB/s`, ratio]
  })
  emit(
    `### 1b. Streams: one ${(size / 1e6).toFixed(0)} MB file (median of ${STREAM_REPS} runs, the subjects taking turns)\n\n` +
      table(['fs', 'createWriteStream (64 KiB chunks)', 'createReadStream', 'rewindfs ÷ it (write / read)'], rows),
  )
}

// ---- 2. lower-layer reads ----------------------------------------------------------------------

/** Cold read pass, warm read pass, stat pass over files that exist only in the lower layer; ops/s. */
async function lowerOnce(subject: { name: string; open: () => Promise<Opened> }, paths: readonly string[], order: Uint32Array): Promise<number[]> {
  const { fs, close } = await subject.open()
  const loops = loopsFor(`lower ${subject.name}`)(fs, paths, new Content(), FILE_SIZE)
  const cold = loops.read(order)
  const warm = loops.read(order)
  const stat = loops.stat(order)
  verify(fs, paths, subject.name)
  await close?.()
  return [cold, warm, stat].map((ms) => (paths.length / ms) * 1000)
}

async function benchLower(): Promise<void> {
  const { paths, dirs } = layout(CONFIG.files, CONFIG.dirs)
  const order = strided(paths.length)
  progress('lower: building a memfs Volume with the lower tree')
  const lowerVolume = memfsVolume()
  fillFs(lowerVolume, paths, dirs)

  const subjects: { name: string; open: () => Promise<Opened> }[] = [
    { name: 'memfs (the Volume itself, reference)', open: async () => ({ fs: lowerVolume }) },
    { name: 'unionfs (lower Volume + empty Volume)', open: async () => ({ fs: unionOf(lowerVolume) }) },
    { name: 'ZenFS CopyOnWrite (InMemory readable)', open: async () => ({ fs: await zenCow({ paths, dirs }), close: zenRelease }) },
    {
      name: 'rewindfs, lower = memfs Volume',
      open: async () => {
        const { syncFsSource } = (await import(new URL('../dist/src/adapter-kit.js', import.meta.url).href)) as typeof import('../src/adapter-kit.js')
        const { ws, fs } = await rewind({ lower: syncFsSource(lowerVolume as never) })
        return { fs, close: () => ws.close() }
      },
    },
    {
      name: 'rewindfs, lower = fixture object',
      open: async () => {
        const fixture: Record<string, Uint8Array> = {}
        for (const path of paths) fixture[path] = lowerVolume.readFileSync(path)
        let ws!: Workspace
        const ms = await timeAsync(async () => (ws = (await rewind({ lower: fixture })).ws))
        notes.push(`Opening a rewindfs workspace over a ${fmtCount(paths.length)}-file fixture object took ${fmtMs(ms)} (the fixture is validated and copied once).`)
        return { fs: ws.fs as unknown as FsLike, close: () => ws.close() }
      },
    },
  ]
  const OURS = 'rewindfs, lower = memfs Volume'
  const measured = new Map<string, number[] | string>()
  for (const subject of subjects) {
    fullGc()
    progress(`lower: ${subject.name}`)
    try {
      const ops = await lowerOnce(subject, paths, order)
      measured.set(subject.name, ops)
      progress(`lower: ${subject.name}: ${ops.map(fmtOps).join(', ')}`)
    } catch (error) {
      measured.set(subject.name, failure(subject.name, error))
    }
  }
  const ours = measured.get(OURS)
  const rows = [...measured].map(([name, ops]) => {
    if (typeof ops === 'string') return [name, 'FAILED', ops, '', '']
    const ratio = name === OURS ? '1' : Array.isArray(ours) ? ops.map((o, i) => fmtRatio(ours[i]! / o)).join(' / ') : 'n/a'
    return [name, ...ops.map(fmtOps), ratio]
  })
  emit(
    `### 2. Reading lower-layer files: ${fmtCount(CONFIG.files)} × 1 KiB files only in the lower layer\n\n` +
      table(['fs', 'readFileSync, first pass', 'readFileSync, second pass', 'statSync', 'rewindfs (memfs lower) ÷ it'], rows),
  )
}

/** Logs the stack, returns a one-line message for the table. */
function failure(name: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  progress(`${name} FAILED: ${error instanceof Error ? (error.stack ?? message) : message}`)
  notes.push(`${name} failed: \`${message.split('\n')[0]!.replace(/`/g, "'").replace(/\|/g, '\\|')}\``)
  return message.split('\n')[0]!.replace(/\|/g, '\\|').slice(0, 120)
}

// ---- 3. checkpoint / restore -------------------------------------------------------------------

interface RewindCheckpoint {
  files: number
  fill: number
  first: number
  steady: number
  restore: number
  nodesCopiedPerWrite: number
}

async function rewindCheckpoint(files: number): Promise<RewindCheckpoint> {
  const { paths, dirs } = layout(files, dirsFor(files))
  const content = new Content()
  const { ws, fs } = await rewind()
  const fill = time(() => fillFs(fs, paths, dirs, content))
  const first = await timeAsync(() => ws.checkpoint({ name: 'bulk' }))

  // Steady state: one file changes between checkpoints (an agent turn that edits a file).
  const steady: number[] = []
  let nodesCopied = 0
  for (let k = 0; k < CONFIG.checkpointSamples; k++) {
    const before = ws.counters.nodesCopied
    fs.writeFileSync(paths[(k * 7919) % files]!, content.stamp(1e6 + k))
    nodesCopied += ws.counters.nodesCopied - before
    steady.push(await timeAsync(() => ws.checkpoint({ name: `cp-${k}` })))
  }

  // Restore: change `changed` files spread over the tree, then restore the checkpoint before them.
  const base = await ws.checkpoint({ name: 'base' })
  const baseline = paths.map((_, i) => i).filter((i) => i % Math.max(1, Math.floor(files / CONFIG.changed)) === 0).slice(0, CONFIG.changed)
  const expected = baseline.map((i) => Content.stampOf(fs.readFileSync(paths[i]!)))
  const restores: number[] = []
  for (let r = 0; r < CONFIG.restoreSamples; r++) {
    for (const i of baseline) fs.writeFileSync(paths[i]!, content.stamp(2e6 + r))
    let changes = 0
    restores.push(await timeAsync(async () => (changes = (await ws.restore(base.id)).changes.length)))
    if (changes !== baseline.length) throw new Error(`rewindfs restore at ${files} files reported ${changes} changes, expected ${baseline.length}`)
    baseline.forEach((i, j) => {
      const got = Content.stampOf(fs.readFileSync(paths[i]!))
      if (got !== expected[j]) throw new Error(`rewindfs restore at ${files} files: ${paths[i]} has stamp ${got}, expected ${expected[j]}`)
    })
  }
  await ws.close()
  return { files, fill, first, steady: median(steady), restore: median(restores), nodesCopiedPerWrite: nodesCopied / CONFIG.checkpointSamples }
}

interface GitCheckpoint {
  files: number
  first?: number
  incremental?: number
  restore?: number
  estimate?: string
}

const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' }

/** A shadow repository as coding agents keep one: separate git dir, the project as work tree. */
function shadowGit(files: number, timeoutMs: number): GitCheckpoint {
  const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-git-'))
  const work = join(root, 'work')
  const gitDir = join(root, 'shadow', '.shadow')
  try {
    const { paths, dirs } = layout(files, dirsFor(files))
    const content = new Content()
    nodeFs.mkdirSync(work)
    for (const dir of dirs) nodeFs.mkdirSync(work + dir)
    for (let i = 0; i < paths.length; i++) nodeFs.writeFileSync(work + paths[i], content.stamp(i))
    const git = `git -c user.name=bench -c user.email=bench@example.invalid -c commit.gpgsign=false -c gc.auto=0 -c core.fsmonitor=false --git-dir='${gitDir}' --work-tree='${work}'`
    const sh = (command: string) => execFileSync('sh', ['-c', command], { env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, encoding: 'utf8' })
    const checkpoint = `${git} add -A && ${git} commit -q --no-verify -m cp`
    // The first checkpoint hashes and stores every file: repeated on a fresh shadow repo where cheap.
    const firsts: number[] = []
    for (let k = 0; k < (files > 10_000 ? 1 : 3); k++) {
      nodeFs.rmSync(join(root, 'shadow'), { recursive: true, force: true })
      sh(`mkdir -p '${join(root, 'shadow')}' && ${git} init -q && sync`)
      firsts.push(time(() => sh(checkpoint)))
    }
    const first = median(firsts)
    const incremental: number[] = []
    for (let k = 0; k < 3; k++) {
      nodeFs.writeFileSync(work + paths[(k * 7919) % files], content.stamp(1e6 + k))
      incremental.push(time(() => sh(checkpoint)))
    }
    const sha = sh(`${git} rev-parse HEAD`).trim()
    const changed = paths.filter((_, i) => i % Math.max(1, Math.floor(files / CONFIG.changed)) === 0).slice(0, CONFIG.changed)
    const restores: number[] = []
    for (let r = 0; r < 3; r++) {
      for (const path of changed) nodeFs.writeFileSync(work + path, content.stamp(2e6 + r))
      restores.push(time(() => sh(`${git} reset -q --hard ${sha}`)))
    }
    return { files, first, incremental: median(incremental), restore: median(restores) }
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
  }
}

interface SnapshotCheckpoint {
  files: number
  snapshot: number
  restore: number
}

function memfsSnapshot(files: number): SnapshotCheckpoint {
  const { paths, dirs } = layout(files, dirsFor(files))
  const volume = new Volume()
  fillFs(volume as unknown as FsLike, paths, dirs)
  type SnapshotFs = Parameters<typeof toSnapshotSync>[0]['fs']
  const snapshots: number[] = []
  let snapshot: ReturnType<typeof toSnapshotSync> = null
  for (let k = 0; k < 3; k++) snapshots.push(time(() => (snapshot = toSnapshotSync({ fs: volume as unknown as SnapshotFs, path: '/' }))))
  const restores: number[] = []
  for (let k = 0; k < 3; k++) {
    const fresh = new Volume()
    restores.push(time(() => fromSnapshotSync(snapshot, { fs: fresh as unknown as SnapshotFs, path: '/' })))
    if (k === 0) verify(fresh as unknown as FsLike, paths, 'fs-snapshot restore')
  }
  return { files, snapshot: median(snapshots), restore: median(restores) }
}

async function benchCheckpoint(): Promise<void> {
  const sizes = CONFIG.checkpointSizes
  const ours: (RewindCheckpoint | string)[] = []
  // Warm-up so the smallest size is not measured with cold (unoptimised) code.
  try {
    await rewindCheckpoint(Math.min(500, sizes[0]!))
  } catch {
    // reported by the real runs below
  }
  for (const files of sizes) {
    fullGc()
    progress(`checkpoint: rewindfs at ${fmtCount(files)} files`)
    try {
      const result = await rewindCheckpoint(files)
      ours.push(result)
      progress(`checkpoint: rewindfs at ${fmtCount(files)}: checkpoint ${fmtMs(result.steady)}, first ${fmtMs(result.first)}, restore ${fmtMs(result.restore)}`)
    } catch (error) {
      ours.push(failure(`rewindfs checkpoint/restore at ${fmtCount(files)} files`, error))
    }
  }
  const snaps: SnapshotCheckpoint[] = []
  for (const files of sizes) {
    fullGc()
    progress(`checkpoint: memfs + fs-snapshot at ${fmtCount(files)} files`)
    snaps.push(memfsSnapshot(files))
  }
  const gits: GitCheckpoint[] = []
  if (WITH_GIT) {
    let perFile: number | undefined
    for (const files of sizes) {
      const predicted = perFile === undefined ? 0 : perFile * files
      if (files > 10_000 && predicted > GIT_LIMIT_MS) {
        gits.push({ files, estimate: `~${fmtMs(predicted)} (estimated linearly from ${fmtCount(sizes[sizes.indexOf(files) - 1]!)}; not run)` })
        continue
      }
      progress(`checkpoint: shadow git at ${fmtCount(files)} files${predicted ? ` (predicted ${fmtMs(predicted)})` : ''}`)
      try {
        const result = shadowGit(files, files > 10_000 ? GIT_LIMIT_MS : 10 * GIT_LIMIT_MS)
        gits.push(result)
        perFile = result.first! / files
        progress(`checkpoint: shadow git at ${fmtCount(files)}: first ${fmtMs(result.first!)}, incremental ${fmtMs(result.incremental!)}, restore ${fmtMs(result.restore!)}`)
      } catch (error) {
        const timedOut = (error as { signal?: string }).signal === 'SIGTERM' || (error as { code?: string }).code === 'ETIMEDOUT'
        if (!timedOut) throw error
        gits.push({ files, estimate: `> ${fmtMs(GIT_LIMIT_MS)} (stopped); ~${fmtMs((perFile ?? 0) * files)} estimated linearly` })
      }
    }
  }

  const gitCell = (g: GitCheckpoint | undefined, key: 'first' | 'incremental' | 'restore') =>
    !g ? 'skipped' : g[key] !== undefined ? fmtMs(g[key]) : key === 'first' ? g.estimate! : 'n/a'
  const rows = sizes.map((files, i) => {
    const o = ours[i]!
    const s = snaps[i]!
    const g = gits[i]
    const mine = typeof o === 'string' ? ['FAILED', o, ''] : [fmtMs(o.steady), fmtMs(o.first), fmtMs(o.restore)]
    return [fmtCount(files), ...mine, gitCell(g, 'incremental'), gitCell(g, 'first'), gitCell(g, 'restore'), fmtMs(s.snapshot), fmtMs(s.restore)]
  })
  emit(
    `### 3. Checkpoint and restore (files × 1 KiB, ${FILES_PER_DIR} per dir)\n\n` +
      table(
        [
          'files',
          'rewindfs checkpoint (1 file changed since last)',
          'rewindfs first checkpoint after bulk write',
          `rewindfs restore (${CONFIG.changed} changed paths)`,
          'shadow git checkpoint (1 file changed)',
          'shadow git first checkpoint',
          `shadow git restore (reset --hard, ${CONFIG.changed} changed)`,
          'fs-snapshot toSnapshotSync',
          'fs-snapshot fromSnapshotSync (into new Volume)',
        ],
        rows,
      ) +
      `\n\nrewindfs: medians of ${CONFIG.checkpointSamples} checkpoints / ${CONFIG.restoreSamples} restores; git and fs-snapshot: medians of 3 (first git checkpoint at 100k: 1 run; \`sync\` before it). ` +
      'Shadow git = `git --git-dir=<tmp>/.shadow --work-tree=<dir> add -A && git commit -q -m cp` via sh, on ' +
      `${tmpdir()} (local disk), restore = \`git reset -q --hard <sha>\`. fs-snapshot restore = fromSnapshotSync of the whole tree (it has no partial restore).`,
  )

  // Targets.
  const measured = ours.filter((o): o is RewindCheckpoint => typeof o !== 'string')
  if (measured.length < 2) {
    emit('- rewindfs targets not evaluated: checkpoint/restore failed (see notes)')
    return
  }
  const small = measured[0]!
  const large = measured.at(-1)!
  const at10k = measured.find((o) => o.files === 10_000) ?? large
  const git10k = gits.find((g) => g.files === at10k.files)
  const scale = large.steady / small.steady
  const scaleFirst = large.first / small.first
  const lines = [
    `- rewindfs checkpoint t(${fmtCount(large.files)}) / t(${fmtCount(small.files)}) = **${scale.toFixed(2)}** (target ≤ 3) ${scale <= 3 ? '✅' : '❌'}; first checkpoint after a bulk write: ${scaleFirst.toFixed(2)}`,
  ]
  if (git10k?.incremental !== undefined && git10k.first !== undefined) {
    const vsIncremental = git10k.incremental / at10k.steady
    const vsFirst = git10k.first / at10k.first
    lines.push(
      `- speedup vs shadow git at ${fmtCount(at10k.files)}: **${fmtRatio(vsIncremental)}** on an incremental checkpoint (1 file changed), ${fmtRatio(vsFirst)} on the first checkpoint (target ≥ 1,000×) ${vsIncremental >= 1000 ? '✅' : '❌'}`,
    )
  } else lines.push('- shadow git not measured (--no-git or git missing)')
  lines.push(
    `- restore of ${CONFIG.changed} changed paths in a ${fmtCount(large.files)}-file tree: **${fmtMs(large.restore)}** (target < 5 ms) ${large.restore < 5 ? '✅' : '❌'}; restore t(${fmtCount(large.files)}) / t(${fmtCount(small.files)}) = ${(large.restore / small.restore).toFixed(2)}`,
    `- path copying: a write after a checkpoint created ${measured.map((o) => `${o.nodesCopiedPerWrite.toFixed(1)} (${fmtCount(o.files)})`).join(', ')} upper nodes on average (\`ws.counters.nodesCopied\`)`,
    `- filling the tree through ws.fs took ${measured.map((o) => `${fmtMs(o.fill)} (${fmtCount(o.files)})`).join(', ')}`,
  )
  emit(lines.join('\n'))
}

// ---- 4. memory ---------------------------------------------------------------------------------

async function benchMemory(): Promise<void> {
  if (!gcAvailable()) {
    emit('### 4. Resident memory\n\nskipped: run with `node --expose-gc`')
    return
  }
  const files = CONFIG.memoryFiles
  const { paths, dirs } = layout(files, CONFIG.dirs)
  const raw = files * FILE_SIZE
  const measure = async (name: string, build: () => Promise<{ keep: unknown; extra?: () => string; close?: () => Promise<void> }>) => {
    const before = retainedBytes()
    const { keep, extra, close } = await build()
    const after = retainedBytes()
    const delta = after - before
    progress(`memory: ${name} ${fmtBytes(delta)}`)
    const row = [name, fmtBytes(delta), `${(delta / files).toFixed(0)} B`, `${fmtBytes(delta - raw)} (${(((delta - raw) / raw) * 100).toFixed(0)}%)`, extra?.() ?? '']
    // Keeps the fs reachable until after the measurement.
    if (keep === undefined) throw new Error('unreachable')
    await close?.()
    return row
  }
  const rows: string[][] = []
  rows.push(
    await measure('memfs Volume', async () => {
      const volume = memfsVolume()
      fillFs(volume, paths, dirs)
      return { keep: volume }
    }),
  )
  fullGc()
  rows.push(
    await measure('rewindfs (empty lower)', async () => {
      const { ws, fs } = await rewind()
      fillFs(fs, paths, dirs)
      return { keep: ws, extra: () => `ws.storage: ${ws.storage.blobs} blobs, ${fmtBytes(ws.storage.bytes)}`, close: () => ws.close() }
    }),
  )
  fullGc()
  rows.push(
    await measure('rewindfs + checkpoint + 1% of files rewritten', async () => {
      const { ws, fs } = await rewind()
      const content = new Content()
      fillFs(fs, paths, dirs, content)
      await ws.checkpoint({ name: 'a' })
      for (let i = 0; i < files; i += 100) fs.writeFileSync(paths[i]!, content.stamp(3e6 + i))
      return { keep: ws, extra: () => `ws.storage: ${ws.storage.blobs} blobs, ${fmtBytes(ws.storage.bytes)}`, close: () => ws.close() }
    }),
  )
  fullGc()
  emit(
    `### 4. Resident memory: ${fmtCount(files)} × 1 KiB files (distinct contents), after global.gc()\n\n` +
      table(['fs', 'heapUsed + arrayBuffers delta', 'per file', 'over raw content', 'notes'], rows) +
      `\n\nRaw content: ${fmtBytes(raw)}.`,
  )
}

// ---- 5. bundle ---------------------------------------------------------------------------------

async function benchBundle(): Promise<void> {
  const size = await bundleSize()
  // What users install: the built entry (npm run bench builds first), bundled the same way.
  const built = await bundleSize(fileURLToPath(new URL('../dist/src/index.js', import.meta.url)))
  const top = size.inputs
    .slice(0, 5)
    .map((input) => `${input.path.replace(/^node_modules\//, '')} ${kib(input.bytes)}`)
    .join(', ')
  const goal = (gzip: number) => `≤ ${kib(GZIP_BUDGET_BYTES)} ${gzip <= GZIP_BUDGET_BYTES ? '✅' : '❌'}`
  emit(
    `### 5. Core entry bundle (src/index.ts; esbuild bundle+minify, esm, platform neutral, mainFields module,main; gzip -9)\n\n` +
      table(
        ['bundle', 'minified', 'min+gzip', 'goal'],
        [
          ['one unsplit file (the whole core)', kib(size.unsplit.minified), `**${kib(size.unsplit.gzip)}**`, goal(size.unsplit.gzip)],
          ['code splitting: loaded at import', kib(size.minified), `**${kib(size.gzip)}**`, goal(size.gzip)],
          ...(size.lazy.minified > 0 ? [['code splitting: loaded on first use', kib(size.lazy.minified), kib(size.lazy.gzip), '']] : []),
        ],
      ) +
      `\n\nLargest inputs (minified): ${top}. Not in the core entry: the durable journal (a store carries it), the flush engine (a flush target), the bisect search (an exec runner), watching (Workspace.open({ watch }), rewindfs/watch), export and zip (rewindfs/export), RollbackStack (rewindfs/rollback-stack), the sync-fs lower (rewindfs/adapter-kit). The built package's entry (dist/src/index.js) bundles to ${kib(built.unsplit.gzip)} as one file.`,
  )
}

// ---- 7. adapters -------------------------------------------------------------------------------

/**
 * The adapter benches are scripts of their own (each needs its own process: a browser, a daemon,
 * fsyncs); this runs them and keeps their tables. One that cannot run here says why.
 */
async function benchAdapters(): Promise<void> {
  const scripts: [title: string, script: string, args: string[]][] = [
    ['Flush of files to a directory vs cp -r (goal within 2×)', 'bench/flush-directory.ts', QUICK ? ['1000'] : []],
    ['IndexedDB group commits in Chromium vs raw idb-keyval setMany', 'bench/indexeddb.ts', QUICK ? ['--quick'] : []],
    ['OPFS store group commits in Chromium vs the IndexedDB store (goal ≥ 3×)', 'bench/opfs.ts', QUICK ? ['--quick'] : []],
    ['Reopen of a workspace of 20k files in Chromium: the OPFS store vs the IndexedDB store', 'bench/opfs.ts', QUICK ? ['--quick', '--reopen'] : ['--reopen']],
    ['Docker volume flush of 1k files vs docker cp', 'bench/docker.ts', []],
  ]
  const parts: string[] = []
  for (const [title, script, args] of scripts) {
    progress(`adapters: ${script}`)
    try {
      const output = execFileSync(process.execPath, ['--import', 'tsx', script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 })
      const lines = output.split('\n').filter((line) => line.startsWith('|'))
      parts.push(`#### ${title}\n\n${lines.length > 0 ? lines.join('\n') : 'no table printed'}`)
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? (error as Error).message).trim().split('\n').slice(-1)[0]
      parts.push(`#### ${title}\n\nnot run here: ${stderr}`)
    }
  }
  emit(`### 7. Adapters (\`${[...new Set(scripts.map(([, script]) => script))].join('`, `')}\`)\n\n` + parts.join('\n\n'))
}

/** History on demand (bench/history.ts): a store of long history opened in a fresh process, its table kept. */
async function benchHistoryOnDemand(): Promise<void> {
  const output = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/history.ts', ...(QUICK ? ['--quick'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 3_600_000 })
  emit(output.trim().replace(/^### /, '#### 6.5 '))
}

// ---- main --------------------------------------------------------------------------------------

const started = performance.now()
const header =
  `## rewindfs benchmarks${QUICK ? ' (quick)' : ''}\n\n` +
  table(['machine', ''], machineInfo().map(({ label, value }) => [label, value]), true) +
  `\n\nRun with \`npm run bench${QUICK ? ':quick' : ''}\`. Single process, sections run one after another with a GC in between.`
emit(header)
const sections: [string, () => Promise<void>][] = [
  ['ops', benchOps],
  ['streams', benchStreams],
  ['lower', benchLower],
  ['checkpoint', benchCheckpoint],
  ['memory', benchMemory],
  ['bundle', benchBundle],
  ['engine', () => benchEngine({ quick: QUICK, withGit: WITH_GIT, emit })],
  ['history', benchHistoryOnDemand],
  ['adapters', benchAdapters],
  ['search', () => benchSearch({ quick: QUICK, emit })],
  ['exec', () => benchExec({ quick: QUICK, emit })],
  ['bisect', () => benchBisect({ quick: QUICK, emit })],
  ['postgres', () => benchPostgres({ quick: QUICK, emit })],
]
let failed = false
for (const [name, section] of sections) {
  if (!run(name)) continue
  try {
    await section()
  } catch (error) {
    failed = true
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error)
    progress(`section ${name} FAILED: ${message}`)
    emit(`### ${name}\n\nFAILED: \`${(error instanceof Error ? error.message : String(error)).split('\n')[0]!.replace(/`/g, "'")}\``)
  }
  fullGc()
}
if (notes.length) emit('### Notes\n\n' + notes.map((n) => `- ${n}`).join('\n'))
emit(`Total bench time: ${fmtMs(performance.now() - started)}.`)
if (OUT) {
  nodeFs.writeFileSync(OUT, report.join('\n\n') + '\n')
  progress(`wrote ${OUT}`)
}
process.exitCode = failed ? 1 : 0
