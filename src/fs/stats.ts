/**
 * Stats, Dirent and Dir with Node's shapes, so code that inspects them (isFile(), mtimeMs,
 * dirent.parentPath, for await of opendir) works unchanged.
 */
import { typeError } from '../errors.js'
import type { EntryType } from '../lower/source.js'
import type { StatFields } from '../overlay.js'
import { validateFunction } from './arguments.js'
import { joinLexically } from '../path.js'

const S_IFMT = 0o170000
const typeChecks = {
  isFile: 0o100000,
  isDirectory: 0o040000,
  isSymbolicLink: 0o120000,
  isBlockDevice: 0o060000,
  isCharacterDevice: 0o020000,
  isFIFO: 0o010000,
  isSocket: 0o140000,
} as const

abstract class StatsBase<N extends number | bigint> {
  declare dev: N
  declare mode: N
  declare nlink: N
  declare uid: N
  declare gid: N
  declare rdev: N
  declare blksize: N
  declare ino: N
  declare size: N
  declare blocks: N
  declare atimeMs: N
  declare mtimeMs: N
  declare ctimeMs: N
  declare birthtimeMs: N
  // Own data properties, made with the stat, as Node 20's are: a spread, Object.keys or a
  // structured clone (a worker's postMessage) of a stat keeps them. Node rounds the milliseconds
  // (a Date would cut them).
  declare atime: Date
  declare mtime: Date
  declare ctime: Date
  declare birthtime: Date

  /** The four Dates, set last: Node's stats list them after every numeric field. */
  protected dated(): void {
    this.atime = new Date(Math.round(Number(this.atimeMs)))
    this.mtime = new Date(Math.round(Number(this.mtimeMs)))
    this.ctime = new Date(Math.round(Number(this.ctimeMs)))
    this.birthtime = new Date(Math.round(Number(this.birthtimeMs)))
  }

  private is(bits: number): boolean {
    return (Number(this.mode) & S_IFMT) === bits
  }
  isFile(): boolean {
    return this.is(typeChecks.isFile)
  }
  isDirectory(): boolean {
    return this.is(typeChecks.isDirectory)
  }
  isSymbolicLink(): boolean {
    return this.is(typeChecks.isSymbolicLink)
  }
  isBlockDevice(): boolean {
    return this.is(typeChecks.isBlockDevice)
  }
  isCharacterDevice(): boolean {
    return this.is(typeChecks.isCharacterDevice)
  }
  isFIFO(): boolean {
    return this.is(typeChecks.isFIFO)
  }
  isSocket(): boolean {
    return this.is(typeChecks.isSocket)
  }
}

const numericFields = ['dev', 'mode', 'nlink', 'uid', 'gid', 'rdev', 'blksize', 'ino', 'size', 'blocks'] as const
const timeFields = ['atime', 'mtime', 'ctime', 'birthtime'] as const

export class Stats extends StatsBase<number> {
  constructor(fields: StatFields) {
    super()
    for (const key of numericFields) this[key] = fields[key]
    for (const key of timeFields) this[`${key}Ms`] = fields[`${key}Ms`]
    this.dated()
  }
}

export class BigIntStats extends StatsBase<bigint> {
  declare atimeNs: bigint
  declare mtimeNs: bigint
  declare ctimeNs: bigint
  declare birthtimeNs: bigint

  constructor(fields: StatFields) {
    super()
    for (const key of numericFields) this[key] = BigInt(Math.trunc(fields[key]))
    const nanoseconds: bigint[] = []
    for (const key of timeFields) {
      // Whole milliseconds and the rest apart: ms * 1e6 as one double loses the low digits (its
      // spacing is 256 ns today), so Ns could disagree with Ms. The rest is whole microseconds, all
      // a millisecond double keeps now (and all utimes sets, as libuv does). Node's Ms is Ns / 1e6
      // cut toward zero, before 1970 too.
      const ms = fields[`${key}Ms`]
      const whole = Math.trunc(ms)
      const nanos = Math.max(-999, Math.min(999, Math.round((ms - whole) * 1e3))) * 1000
      this[`${key}Ms`] = BigInt(whole)
      nanoseconds.push(BigInt(whole) * 1_000_000n + BigInt(nanos))
    }
    // After every Ms, as Node lists them.
    timeFields.forEach((key, i) => (this[`${key}Ns`] = nanoseconds[i]))
    this.dated()
  }
}

export function createStats(fields: StatFields, bigint: boolean): Stats | BigIntStats {
  return bigint ? new BigIntStats(fields) : new Stats(fields)
}

/** What fs.watchFile reports for a path that cannot be stat()ed: every field zero, times at the epoch. */
export function zeroStats(bigint: boolean): Stats | BigIntStats {
  const fields = {} as StatFields
  for (const key of numericFields) fields[key] = 0
  for (const key of timeFields) fields[`${key}Ms`] = 0
  return createStats(fields, bigint)
}

/** What fs.statfs returns (Node's StatFs: the same fields, numbers or bigints). */
export class StatFs<N extends number | bigint = number | bigint> {
  declare type: N
  declare bsize: N
  declare blocks: N
  declare bfree: N
  declare bavail: N
  declare files: N
  declare ffree: N

  constructor(values: readonly number[], bigint: boolean) {
    const [type, bsize, blocks, bfree, bavail, files, ffree] = values.map((v) => (bigint ? BigInt(v) : v)) as N[]
    Object.assign(this, { type, bsize, blocks, bfree, bavail, files, ffree })
  }
}

/** Where a Dirent keeps its type, as Node's does: a symbol, so it is no key of Object.keys or JSON. */
const kType = Symbol('type')
/** libuv's dirent types (UV_DIRENT_FILE, _DIR, _LINK), what Node's Dirent holds. */
const DIRENT_TYPES: Record<EntryType, number> = { file: 1, dir: 2, symlink: 3 }

/** A directory entry; its name is a Buffer (a Uint8Array outside Node) when listed with encoding 'buffer'. */
export class Dirent<Name extends string | Uint8Array = string> {
  readonly parentPath: string
  /** Node 20 also exposes the parent directory as `path` (deprecated alias of parentPath). */
  readonly path: string
  readonly [kType]: number

  constructor(
    readonly name: Name,
    type: EntryType,
    parentPath: string,
  ) {
    this.parentPath = parentPath
    this.path = parentPath
    this[kType] = DIRENT_TYPES[type]
  }
  isFile(): boolean {
    return this[kType] === 1
  }
  isDirectory(): boolean {
    return this[kType] === 2
  }
  isSymbolicLink(): boolean {
    return this[kType] === 3
  }
  isBlockDevice(): boolean {
    return false
  }
  isCharacterDevice(): boolean {
    return false
  }
  isFIFO(): boolean {
    return false
  }
  isSocket(): boolean {
    return false
  }
}

/** A Dirent as plain fields, for a worker to post (structured clone drops symbol keys). */
export function direntFields(dirent: Dirent<string | Uint8Array>): { name: string | Uint8Array; parentPath: string; type: number } {
  return { name: dirent.name, parentPath: dirent.parentPath, type: dirent[kType] }
}

/** The Dirent direntFields describes. */
export function direntOf(fields: { name: string | Uint8Array; parentPath: string; type: number }): Dirent<string | Uint8Array> {
  const dirent = Object.create(Dirent.prototype) as Dirent<string | Uint8Array>
  return Object.assign(dirent, { name: fields.name, parentPath: fields.parentPath, path: fields.parentPath, [kType]: fields.type })
}

const dirClosed = () => Object.assign(new Error('Directory handle was closed'), { code: 'ERR_DIR_CLOSED' })

/**
 * What fs.opendir returns. Entries are listed on first read; with `recursive`, a directory's own
 * entries are listed when it is read, and queued after those already listed, as Node's Dir does.
 */
export class Dir {
  private entries: Dirent<string | Uint8Array>[] | undefined
  private closed = false

  /** `top` lists the directory opened (on the first read); `list` a directory below it, by its path. */
  constructor(
    readonly path: string,
    private readonly top: () => Dirent<string | Uint8Array>[],
    private readonly list: (path: string) => Dirent<string | Uint8Array>[],
    private readonly recursive = false,
  ) {}

  readSync(): Dirent | null {
    if (this.closed) throw dirClosed()
    this.entries ??= this.top()
    const entry = this.entries.shift()
    if (entry === undefined) return null
    if (this.recursive && entry.isDirectory()) this.entries.push(...this.list(joinLexically(entry.parentPath, String(entry.name))))
    return entry as Dirent
  }

  read(): Promise<Dirent | null>
  read(callback: (error: Error | null, entry: Dirent | null) => void): void
  read(callback?: (error: Error | null, entry: Dirent | null) => void): Promise<Dirent | null> | void {
    // Node throws this one at once, callback or not.
    if (this.closed) throw dirClosed()
    if (callback === undefined) {
      return new Promise((resolve, reject) => {
        try {
          resolve(this.readSync())
        } catch (error) {
          reject(error)
        }
      })
    }
    validateFunction(callback, 'callback')
    let entry: Dirent | null = null
    let failure: Error | null = null
    try {
      entry = this.readSync()
    } catch (error) {
      failure = error as Error
    }
    queueMicrotask(() => callback(failure, entry))
  }

  closeSync(): void {
    if (this.closed) throw dirClosed()
    this.closed = true
  }

  close(): Promise<void>
  close(callback: (error: Error | null) => void): void
  close(callback?: (error: Error | null) => void): Promise<void> | void {
    if (callback === undefined) {
      return new Promise((resolve, reject) => {
        try {
          this.closeSync()
          resolve()
        } catch (error) {
          reject(error)
        }
      })
    }
    if (typeof callback !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function.')
    let failure: Error | null = null
    try {
      this.closeSync()
    } catch (error) {
      failure = error as Error
    }
    queueMicrotask(() => callback(failure))
  }

  async *entriesIterator(): AsyncGenerator<Dirent> {
    try {
      for (let entry = this.readSync(); entry !== null; entry = this.readSync()) yield entry
    } finally {
      if (!this.closed) this.closeSync()
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<Dirent> {
    return this.entriesIterator()
  }
}

