/**
 * Any object with Node's synchronous read API (node:fs, a memfs Volume, …) as a read-only lower
 * source. Only the four read members below are ever touched. Contents are read lazily on every
 * call, so a change on disk shows up in `version` and the workspace can detect it.
 */
import { describe, isBytes, utf8Bytes } from './fixture.js'
import type { EntryType, LowerSource, LowerStat, WalkerEntry } from './source.js'
import { normalize } from '../path.js'

/** What syncFsSource reads from `lstatSync`. */
export interface SyncStats {
  readonly mode: number
  readonly size: number
  readonly mtimeMs: number
  readonly ino: number
  readonly uid?: number
  readonly gid?: number
  readonly nlink?: number
  readonly ctimeMs?: number
  readonly atimeMs?: number
  readonly birthtimeMs?: number
  isFile(): boolean
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

/** An entry from `readdirSync(path, { withFileTypes: true })`. */
export interface SyncDirent {
  readonly name: string | Uint8Array
  isFile(): boolean
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

/** The synchronous read members of node:fs that syncFsSource uses; nothing that writes. */
export interface SyncReadableFs {
  readFileSync(path: string): string | Uint8Array
  /** Called with `{ withFileTypes: true }`; plain names are accepted from fs's that ignore it. */
  readdirSync(path: string, options: { withFileTypes: true }): readonly (string | Uint8Array | SyncDirent)[]
  lstatSync(path: string): SyncStats
  readlinkSync(path: string): string | Uint8Array
}

const READ_MEMBERS = ['readFileSync', 'readdirSync', 'lstatSync', 'readlinkSync'] as const
const MAX_ROOT_LINKS = 40 // Linux's MAXSYMLINKS
const utf8 = new TextDecoder()

function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
}

/**
 * Node-shaped stats as a LowerStat, versioned by size, mtime and inode; undefined for what a
 * workspace cannot hold (FIFOs, sockets, devices). Shared with the directory adapter.
 */
export function lowerStatOf(stats: SyncStats): LowerStat | undefined {
  const type = typeOf(stats)
  if (!type) return undefined
  return {
    type,
    mode: stats.mode & 0o7777,
    size: stats.size,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
    atimeMs: stats.atimeMs,
    birthtimeMs: stats.birthtimeMs,
    ino: stats.ino,
    ...(stats.uid !== undefined ? { uid: stats.uid } : {}),
    ...(stats.gid !== undefined ? { gid: stats.gid } : {}),
    nlink: type === 'dir' ? undefined : stats.nlink,
    version: lowerVersionOf(stats),
  }
}

/**
 * A directory entry's version: size, mtime and inode, and the ctime where the file system has one,
 * which moves with every change of content or metadata (a chmod, a chown, a file put back with its
 * old size and mtime by `touch -r`, `cp -p` or rsync), as git's index compares it.
 */
export function lowerVersionOf(stats: SyncStats): string {
  return stats.ctimeMs === undefined ? `${stats.size}:${stats.mtimeMs}:${stats.ino}` : `${stats.size}:${stats.mtimeMs}:${stats.ino}:${stats.ctimeMs}`
}

/** The entry type a Stats or a Dirent says (undefined: neither file, directory nor symlink). */
function typeOf(stats: Pick<SyncStats, 'isFile' | 'isDirectory' | 'isSymbolicLink'>): EntryType | undefined {
  if (stats.isFile()) return 'file'
  if (stats.isDirectory()) return 'dir'
  if (stats.isSymbolicLink()) return 'symlink'
  return undefined
}

class SyncFsSource implements LowerSource {
  readonly kind = 'sync-fs'
  /** The root without trailing slashes ('' for '/'), so `base + path` is the host path. */
  private readonly base: string

  constructor(
    private readonly fs: SyncReadableFs,
    private readonly root: string,
  ) {
    this.base = root.replace(/\/+$/, '')
    const stat = this.stat('/')
    if (stat?.type !== 'dir') throw new TypeError(`rewindfs: sync-fs root '${root}' is ${stat ? `a ${stat.type}` : 'missing'}, not a directory`)
  }

  private host(path: string): string {
    const normal = normalize(path) // folds '..' at '/', so no path climbs above the root
    return normal === '/' ? this.base || '/' : this.base + normal
  }

  private lstat(hostPath: string): SyncStats | undefined {
    try {
      return this.fs.lstatSync(hostPath)
    } catch (error) {
      const code = codeOf(error)
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
      throw error
    }
  }

  /** The root is followed if it is a symlink (e.g. macOS's /tmp): '/' must stat as a directory. */
  private rootStats(): SyncStats | undefined {
    let hostPath = this.base || '/'
    for (let links = 0; ; links++) {
      const stats = this.lstat(hostPath)
      if (!stats?.isSymbolicLink()) return stats
      if (links === MAX_ROOT_LINKS) return undefined
      const target = this.text(this.fs.readlinkSync(hostPath))
      hostPath = target.startsWith('/') ? target : hostPath.slice(0, hostPath.lastIndexOf('/')) + '/' + target
    }
  }

  private text(value: string | Uint8Array): string {
    return typeof value === 'string' ? value : utf8.decode(value)
  }

  /**
   * Entries that are neither file, directory nor symlink (FIFOs, sockets, devices) count as not
   * there: the workspace cannot represent them, and reading a FIFO would block. readdir leaves
   * them out to match.
   */
  stat(path: string): LowerStat | undefined {
    const host = this.host(path)
    const stats = host === (this.base || '/') ? this.rootStats() : this.lstat(host)
    return stats && lowerStatOf(stats)
  }

  readdir(path: string): string[] {
    const names: string[] = []
    for (const entry of this.fs.readdirSync(this.host(path), { withFileTypes: true })) {
      if (typeof entry === 'string') names.push(entry)
      else if (isBytes(entry)) names.push(utf8.decode(entry))
      else if (entry.isFile() || entry.isDirectory() || entry.isSymbolicLink()) names.push(this.text(entry.name))
    }
    return names
  }

  /**
   * readdir with types from the same one listing (the dirents' types: node:fs's d_type, memfs's
   * nodes), so a names-only listing of the workspace stats no entry. The entries left out are
   * readdir's (neither file, directory nor symlink). An fs that lists plain names despite
   * withFileTypes has no types to give: each name is lstat'ed, as stat would, and one stat can no
   * longer see is left out. The listing's marks are settled by each entry's ctime
   * (LowerSource.readdirTypes): node:fs on Linux moves it on a rename onto a name; memfs 4 does not.
   */
  readdirTypes(path: string): WalkerEntry[] {
    const host = this.host(path)
    const prefix = host === '/' ? '/' : host + '/'
    const entries: WalkerEntry[] = []
    for (const entry of this.fs.readdirSync(host, { withFileTypes: true })) {
      if (typeof entry === 'string' || isBytes(entry)) {
        const name = typeof entry === 'string' ? entry : utf8.decode(entry)
        const stats = this.lstat(prefix + name)
        const type = stats && typeOf(stats)
        if (type) entries.push({ name, type })
        continue
      }
      const type = typeOf(entry)
      if (type) entries.push({ name: this.text(entry.name), type })
    }
    return entries
  }

  readFile(path: string): Uint8Array {
    const data = this.fs.readFileSync(this.host(path))
    return typeof data === 'string' ? utf8Bytes(data) : data
  }

  readlink(path: string): string {
    return this.text(this.fs.readlinkSync(this.host(path)))
  }

  toString(): string {
    return `sync-fs(${this.root})`
  }
}

/**
 * A read-only source over `fs` at `root` (source path '/a' is `root + '/a'`). stat() uses lstat,
 * returns undefined on ENOENT/ENOTDIR and rethrows anything else; version is
 * `${size}:${mtimeMs}:${ino}`. Intermediate symlinks are the host's to resolve: the workspace
 * resolves links itself and only asks for children of directories.
 */
export function syncFsSource(fs: SyncReadableFs, root: string = '/'): LowerSource {
  if (typeof fs !== 'object' && typeof fs !== 'function') throw new TypeError(`rewindfs: syncFsSource needs an fs object, got ${describe(fs)}`)
  if (fs === null) throw new TypeError('rewindfs: syncFsSource needs an fs object, got null')
  for (const member of READ_MEMBERS) {
    // `in` first, so a guarded fs (a Proxy) is only asked for the members used.
    if (!(member in fs) || typeof fs[member] !== 'function') {
      throw new TypeError(`rewindfs: syncFsSource needs an fs with ${READ_MEMBERS.join(', ')}; ${member} is missing`)
    }
  }
  if (typeof root !== 'string' || root === '' || root.includes('\0')) {
    throw new TypeError(`rewindfs: syncFsSource root must be a non-empty path without NUL bytes, got ${JSON.stringify(root)}`)
  }
  return new SyncFsSource(fs, root)
}
