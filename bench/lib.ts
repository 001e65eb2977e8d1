/**
 * Helpers for bench/run.ts: timing, file layout and content, formatting, machine info, and the
 * minimal synchronous fs shape every subject is driven through.
 */
import { execFileSync } from 'node:child_process'
import { lstatSync, readFileSync, readdirSync } from 'node:fs'
import { cpus, platform, release, totalmem } from 'node:os'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** What the benches call on every subject (node:fs, memfs, unionfs, ZenFS and rewindfs all have it). */
export interface FsLike {
  mkdirSync(path: string, options?: { recursive?: boolean }): unknown
  writeFileSync(path: string, data: Uint8Array): void
  readFileSync(path: string): Uint8Array
  statSync(path: string): { size: number }
}

export const FILE_SIZE = 1024
export const FILES_PER_DIR = 1000

/** `/d<k>/f<i>.txt`, `dirs` directories with files dealt round-robin. */
export function layout(files: number, dirs: number): { dirs: string[]; paths: string[] } {
  const dirPaths = Array.from({ length: dirs }, (_, d) => `/d${d}`)
  const paths = Array.from({ length: files }, (_, i) => `${dirPaths[i % dirs]}/f${i}.txt`)
  return { dirs: dirPaths, paths }
}

export function dirsFor(files: number): number {
  return Math.max(1, Math.ceil(files / FILES_PER_DIR))
}

/**
 * One shared 1 KiB buffer whose first 4 bytes are stamped with the file's index before each
 * write: contents differ (no dedup advantage), nothing is allocated per write, and a reader can
 * check the stamp, which also catches an fs that keeps the caller's buffer instead of copying it.
 */
export class Content {
  readonly bytes = new Uint8Array(FILE_SIZE)
  private readonly view = new DataView(this.bytes.buffer)
  constructor(salt = 0) {
    for (let i = 0; i < FILE_SIZE; i++) this.bytes[i] = 97 + ((i * 7 + salt) % 26)
  }
  stamp(i: number): Uint8Array {
    this.view.setUint32(0, i, true)
    return this.bytes
  }
  static stampOf(data: Uint8Array): number {
    return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0, true)
  }
}

/** A permutation of 0..n-1 (stride by a prime that does not divide n), so reads do not follow write order. */
export function strided(n: number): Uint32Array {
  let stride = 7919
  while (n % stride === 0) stride += 2
  const order = new Uint32Array(n)
  for (let i = 0; i < n; i++) order[i] = (i * stride) % n
  return order
}

export function fillFs(fs: FsLike, paths: readonly string[], dirs: readonly string[], content = new Content()): void {
  for (const dir of dirs) fs.mkdirSync(dir, { recursive: true })
  for (let i = 0; i < paths.length; i++) fs.writeFileSync(paths[i]!, content.stamp(i))
}

/** Checks a few files read back with the right stamp and size. */
export function verify(fs: FsLike, paths: readonly string[], label: string): void {
  const samples = [0, 1, paths.length >> 1, paths.length - 1]
  for (const i of samples) {
    const data = fs.readFileSync(paths[i]!)
    if (data.byteLength !== FILE_SIZE || Content.stampOf(data) !== i) {
      throw new Error(`${label}: ${paths[i]} read back wrong (size ${data.byteLength}, stamp ${Content.stampOf(data)}, expected ${i})`)
    }
  }
}

export function now(): number {
  return performance.now()
}

/** Milliseconds taken by fn. */
export function time(fn: () => void): number {
  const start = performance.now()
  fn()
  return performance.now() - start
}

export async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

// ---- garbage collection and memory -------------------------------------------------------------

let gcFn: (() => void) | undefined = (globalThis as { gc?: () => void }).gc
export function gcAvailable(): boolean {
  if (!gcFn) {
    try {
      setFlagsFromString('--expose-gc')
      gcFn = runInNewContext('gc') as () => void
    } catch {
      gcFn = undefined
    }
  }
  return gcFn !== undefined
}

export function fullGc(): void {
  if (!gcAvailable()) return
  for (let i = 0; i < 3; i++) gcFn!()
}

/** heapUsed + arrayBuffers after a full GC. */
export function retainedBytes(): number {
  fullGc()
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.arrayBuffers
}

// ---- formatting ------------------------------------------------------------------------------

export function fmtOps(opsPerSec: number): string {
  if (!Number.isFinite(opsPerSec)) return 'n/a'
  if (opsPerSec >= 1e6) return `${(opsPerSec / 1e6).toFixed(2)} M/s`
  if (opsPerSec >= 1e3) return `${(opsPerSec / 1e3).toFixed(1)} k/s`
  return `${opsPerSec.toFixed(0)} /s`
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a'
  if (ms < 0.01) return `${(ms * 1000).toFixed(2)} µs`
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`
  if (ms < 100) return `${ms.toFixed(2)} ms`
  if (ms < 10_000) return `${ms.toFixed(0)} ms`
  return `${(ms / 1000).toFixed(1)} s`
}

export function fmtRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return 'n/a'
  if (ratio >= 100) return `${Math.round(ratio).toLocaleString('en-US')}×`
  if (ratio >= 10) return `${ratio.toFixed(1)}×`
  return `${ratio.toFixed(2)}×`
}

export function fmtBytes(bytes: number): string {
  if (Math.abs(bytes) >= 4 * 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024 / 1024).toFixed(1)} GiB`
  if (Math.abs(bytes) >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
  if (Math.abs(bytes) >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${bytes} B`
}

export function fmtCount(n: number): string {
  return n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n)
}

/** A markdown table; the first column is left-aligned, the others right-aligned unless `left`. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], left = false): string {
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 || left ? ' --- ' : ' ---: ')).join('|')}|`]
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`)
  return lines.join('\n')
}

// ---- environment -------------------------------------------------------------------------------

function packageVersion(name: string): string {
  try {
    const url = new URL(`../node_modules/${name}/package.json`, import.meta.url)
    return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version
  } catch {
    return '?'
  }
}

function gitVersion(): string {
  try {
    return execFileSync('git', ['--version'], { encoding: 'utf8' }).trim().replace(/^git version /, '')
  } catch {
    return 'not installed'
  }
}

export function machineInfo(): { label: string; value: string }[] {
  const cores = cpus()
  return [
    { label: 'Date', value: new Date().toISOString() },
    { label: 'CPU', value: `${cores[0]?.model.trim() ?? 'unknown'} × ${cores.length} cores` },
    { label: 'Memory', value: fmtBytes(totalmem()) },
    { label: 'OS', value: `${platform()} ${release()}` },
    { label: 'Node', value: `${process.version} (${process.execArgv.join(' ') || 'no flags'})` },
    {
      label: 'Versions',
      value: ['memfs', 'unionfs', '@zenfs/core', '@jsonjoy.com/fs-snapshot', 'esbuild'].map((n) => `${n} ${packageVersion(n)}`).join(', ') + `, git ${gitVersion()}`,
    },
  ]
}

export function progress(message: string): void {
  process.stderr.write(`[bench ${(process.uptime()).toFixed(0).padStart(4)}s] ${message}\n`)
}

// ---- per-subject timing loops -------------------------------------------------------------------

/** Timed loops over one fs. Each returns milliseconds and checks the bytes/sizes it saw. */
export interface Loops {
  write(): number
  /** n writes of one identical payload over the n files: content the fs already holds elsewhere. */
  writeSame(payload: Uint8Array): number
  read(order: Uint32Array): number
  stat(order: Uint32Array): number
  /** A hard link of each file (`<path>.link`), then a stat of each link in `order`: [link ms, stat ms]. */
  links(order: Uint32Array): [number, number]
}

type LoopsFactory = (fs: FsLike, paths: readonly string[], content: Content, fileSize: number) => Loops

const LOOPS_SOURCE = `
const n = paths.length
return {
  write() {
    const start = performance.now()
    for (let i = 0; i < n; i++) fs.writeFileSync(paths[i], content.stamp(i))
    return performance.now() - start
  },
  writeSame(payload) {
    const start = performance.now()
    for (let i = 0; i < n; i++) fs.writeFileSync(paths[i], payload)
    return performance.now() - start
  },
  read(order) {
    let bytes = 0
    const start = performance.now()
    for (let i = 0; i < n; i++) bytes += fs.readFileSync(paths[order[i]]).byteLength
    const ms = performance.now() - start
    if (bytes !== n * fileSize) throw new Error('read ' + bytes + ' bytes, expected ' + n * fileSize)
    return ms
  },
  stat(order) {
    let size = 0
    const start = performance.now()
    for (let i = 0; i < n; i++) size += fs.statSync(paths[order[i]]).size
    const ms = performance.now() - start
    if (size !== n * fileSize) throw new Error('stat saw ' + size + ' bytes, expected ' + n * fileSize)
    return ms
  },
  links(order) {
    let start = performance.now()
    for (let i = 0; i < n; i++) fs.linkSync(paths[i], paths[i] + '.link')
    const link = performance.now() - start
    let nlink = 0
    start = performance.now()
    for (let i = 0; i < n; i++) nlink += fs.statSync(paths[order[i]] + '.link').nlink
    const stat = performance.now() - start
    if (nlink !== 2 * n) throw new Error('the links show ' + nlink + ' names, expected ' + 2 * n)
    return [link, stat]
  },
}`

const loopsCache = new Map<string, LoopsFactory>()

/**
 * The timing loops compiled separately for each subject (new Function with the subject's name in
 * the source), so their call sites stay monomorphic: a loop shared by memfs, unionfs, ZenFS and
 * rewindfs would go megamorphic and penalise whichever subject runs last (measured: up to 2× on
 * statSync).
 */
export function loopsFor(subject: string): LoopsFactory {
  let factory = loopsCache.get(subject)
  if (!factory) {
    factory = new Function('fs', 'paths', 'content', 'fileSize', `// ${subject.replace(/\n/g, ' ')}\n${LOOPS_SOURCE}`) as LoopsFactory
    loopsCache.set(subject, factory)
  }
  return factory
}

/** Bytes under a directory: the sum of file sizes (apparent) and the blocks they occupy (disk, as du counts). */
export function dirBytes(root: string): { apparent: number; disk: number } {
  let apparent = 0
  let disk = 0
  const stack = [root]
  while (stack.length > 0) {
    const dir = stack.pop()!
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      const stats = lstatSync(path)
      disk += stats.blocks * 512
      if (entry.isDirectory()) stack.push(path)
      else apparent += stats.size
    }
  }
  return { apparent, disk }
}
