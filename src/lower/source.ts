/**
 * The lower layer's contract. A LowerSource is read-only from the workspace's point of view:
 * no fs call ever writes to it. Paths are absolute, normalised POSIX paths inside the source
 * ('/' is its root). Sources are read lazily; a path the workspace never read stays live, as in
 * overlayfs.
 */
import type { ExecRunner } from '../exec.js'

export type EntryType = 'file' | 'dir' | 'symlink'

export interface LowerStat {
  readonly type: EntryType
  /** Permission bits (0o7777); the type bits are derived from `type`. */
  readonly mode: number
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs?: number
  readonly atimeMs?: number
  readonly birthtimeMs?: number
  readonly ino?: number
  /** Owner and group as the source holds them (a directory on disk); 0 when absent. */
  readonly uid?: number
  readonly gid?: number
  /** Names the entry has in the source (hard links on disk); 1 when absent. */
  readonly nlink?: number
  /**
   * Changes whenever the entry's content or metadata changes (size + mtime + inode + ctime, or a
   * hash). The workspace records it the first time it reads a path, so a later change underneath is
   * detectable (flush and restore conflict checks; compared with versionHolds).
   */
  readonly version: string
}

/**
 * Whether a version recorded earlier still holds for what a source reports now: the same, or an
 * older form of it that a later rewindfs extended with more fields (':'-separated, the old ones
 * first: a directory's `size:mtime:ino` before `:ctime` was added), compared on the fields it has.
 */
export function versionHolds(recorded: string, now: string): boolean {
  return recorded === now || (recorded !== '' && now.length > recorded.length && now.charCodeAt(recorded.length) === 58 /* : */ && now.startsWith(recorded))
}

export interface LowerSource {
  /** A short name for messages, e.g. 'fixture', 'directory'. */
  readonly kind: string
  /**
   * Identity of the place it reads (e.g. 'directory:/abs/root'). A durable store remembers it and
   * refuses to reopen over another; a flush target with the same id is this source (a rebase).
   */
  readonly id?: string
  /** lstat semantics (symlinks are not followed); undefined when nothing is there. */
  stat(path: string): LowerStat | undefined
  /** Names of a directory's entries, any order. Only called on paths that stat as 'dir'. */
  readdir(path: string): string[]
  /**
   * readdir with each entry's type, where the source has the types without a stat per entry (a
   * directory on disk: the d_type of its listing). A listing then records marks for its entries
   * instead of their versions (listing.ts), which their first lookup settles by their `ctimeMs`: a
   * source that offers this must give a ctime on Date.now()'s clock that moves with every change of
   * an entry, a rename or link onto its name included, as Linux's does.
   */
  readdirTypes?(path: string): WalkerEntry[]
  /** Only called on paths that stat as 'file'. */
  readFile(path: string): Uint8Array
  /**
   * Up to `length` bytes of a file from `position` into `target` at `offset`; how many (fewer only
   * at its end). Optional: where offered, a descriptor reads a large file a part at a time instead
   * of whole (a stream of a project's 3 GB file, which readFile cannot hold). Only called on paths
   * that stat as 'file'.
   */
  readInto?(path: string, target: Uint8Array, offset: number, length: number, position: number): number
  /** Only called on paths that stat as 'symlink'. */
  readlink(path: string): string
  /** Sources whose contents load asynchronously make these paths readable synchronously. */
  prefetch?(paths: readonly string[]): Promise<void>
  /** Runs commands over the source's own files (a directory can): ws.exec's default runner. */
  readonly exec?: ExecRunner
  /** Faster reads for one walk over the tree, where the source has them (see LowerWalker). */
  walker?(): LowerWalker
  close?(): Promise<void> | void
  /**
   * Paths the source keeps to itself as a flush target (its staging folder): why, when `path` (a
   * normalised workspace path) is one of them; otherwise undefined. The workspace refuses to create
   * such a path (EINVAL with the reason), since no flush could ever write it there.
   */
  reserved?(path: string): string | undefined
}

/** A directory entry as a walk lists it. */
export interface WalkerEntry {
  readonly name: string
  readonly type: EntryType
}

/**
 * Reads for one walk over the tree (the agent tools' search_files, find_files and list_directory
 * over paths the workspace never changed), from a source that serves them faster than its stat,
 * readdir and readFile one path at a time: a directory on disk lists names with their types in one
 * call, reads files into one reused buffer and skips the per-call confinement walk. It shows what
 * the source's own calls show. Paths are the source's; a walk passes only a path with no symlink
 * along it and the entries below it that this walker listed, so an implementation may map paths
 * lexically, following no link.
 */
export interface LowerWalker {
  /** A directory's entries, any order (what readdir lists, with their types). */
  list(path: string): WalkerEntry[]
  /** A file's bytes, valid until this walker's next read (it may reuse one buffer). */
  read(path: string): Uint8Array
  /**
   * A file's bytes a part at a time, `size` bytes each (the last fewer, an empty file none), each
   * valid only during its `visit`, until `visit` returns false or the file ends: a search that
   * stops at its first match reads no further. Optional: without it a walk reads files whole.
   */
  readParts?(path: string, size: number, visit: (part: Uint8Array) => boolean): void
  /** A file's size and modification time (lstat). */
  stat(path: string): { readonly size: number; readonly mtimeMs: number }
  readlink(path: string): string
}

/**
 * A synchronous read of a file whose contents an asynchronous source (IndexedDB, a Docker volume)
 * has not loaded yet. The promise and callback forms of fs load it and retry by themselves.
 */
export class NotLoadedError extends Error {
  readonly code = 'ERR_REWINDFS_NOT_LOADED'
  constructor(readonly path: string, kind: string) {
    super(
      `rewindfs: the contents of '${path}' are not loaded from the ${kind} source yet: use the promises API ` +
        `(fs.promises.readFile) or await ws.prefetch(['${path}']) before a synchronous read`,
    )
    this.name = 'NotLoadedError'
  }
}

export function isNotLoaded(error: unknown): error is NotLoadedError {
  return (error as { code?: unknown } | null)?.code === 'ERR_REWINDFS_NOT_LOADED'
}
