/**
 * The flush contract: a real place (a directory, an IndexedDB tree, a Docker volume) that can take
 * the workspace's change set. `ws.flush` computes the set, checks conflicts against the versions it
 * recorded and hands the set to `apply`, which must be all or nothing: after a crash the target holds
 * either its old generation or the new one, never a mix, once `recover` has run.
 */
import type { Overlay } from '../overlay.js'
import type { Recorded } from './book.js'
import type { FlushHost, FlushOptions, FlushReport, Planned } from './flush.js'
import type { PinnedLower } from './pinned-lower.js'

/**
 * One path's new state. Parents come before children; deletes of a directory remove its whole tree.
 * A file entry with `link` is another name of the inode an earlier entry of the same set wrote at
 * that path (a hard link in the workspace): a target that can make hard links makes this path one
 * (`hardLinks`); any other writes the content, which is the same.
 */
export type FlushEntry =
  | { readonly path: string; readonly kind: 'file'; readonly mode: number; readonly mtimeMs: number; readonly content: Uint8Array; readonly link?: string }
  | { readonly path: string; readonly kind: 'dir'; readonly mode: number; readonly mtimeMs: number }
  | { readonly path: string; readonly kind: 'symlink'; readonly target: string }
  | { readonly path: string; readonly kind: 'delete' }

/**
 * What a target says about an apply beside the versions (a property of the array `apply` resolves
 * to; a target with nothing to say returns a plain array).
 */
export interface AppliedNotes {
  /**
   * Files the target wrote anew whose extended attributes and ACLs it could not carry over from
   * the file it replaced (they may have had none), and why: the tools to read them are missing.
   */
  readonly xattrsNotKept?: { readonly paths: readonly string[]; readonly why: string }
}

export interface FlushProgress {
  readonly done: number
  readonly total: number
  readonly path?: string
}

export interface FlushTarget {
  readonly kind: string
  /**
   * The flush engine the workspace runs to this target (conflict checks against the ledgers, the
   * change set, canaries, pins): `flushEngine` from rewindfs/adapter-kit. A capability the target
   * carries, so a workspace that never flushes never carries it.
   */
  readonly flusher: FlushEngine
  /** Stable identity of the place (e.g. 'directory:/abs/root'): flush records are kept per id. */
  readonly id: string
  /** Whether file entries with `link` become hard links there (otherwise they are written as copies, and the report says so). */
  readonly hardLinks?: boolean
  /**
   * The current version of each path (undefined: nothing there), in the same terms as the
   * LowerSource versions when the target is also a lower source, so a path the workspace read can be
   * compared with what is there now.
   */
  versions(paths: readonly string[]): Promise<(string | undefined)[]>
  /**
   * Paths under the directory `path` (not itself) whose entry changed since `sinceMs` (epoch ms):
   * content, metadata or name (a ctime later than it). A flush that deletes or replaces a directory
   * the workspace took away without reading all of it reports these as conflicts. Optional: a
   * target without it is checked on the directory's own version alone.
   */
  changedSince?(path: string, sinceMs: number): Promise<string[]>
  /**
   * Applies the entries all or nothing (a manifest first, then the moves), and resolves to each
   * path's version afterwards (undefined for deleted paths), in the order of `entries`. A target
   * that stages before it commits calls `beforeCommit` once everything is staged, just before the
   * commit point: when it throws, the target takes the staging back, changes nothing and rejects
   * with its error (the flush checks conflicts again there).
   */
  apply(entries: readonly FlushEntry[], onProgress?: (progress: FlushProgress) => void, beforeCommit?: () => Promise<void>): Promise<(string | undefined)[] & AppliedNotes>
  /** Rolls an interrupted apply forward (called before every flush; targets also call it on open). */
  recover?(): Promise<void>
  /**
   * Runs `section` holding the target's flush lock, waiting for it if another flush (another
   * workspace, another process) holds it. A flush runs its recovery, conflict check and apply in one
   * section, so what the check saw is what the apply replaces: a concurrent flush is either seen as
   * a conflict or applies after. `versions`, `apply` and `recover` called inside the section run
   * under the held lock. Without it, a flush checks and applies unlocked (fine for a target only
   * this process writes).
   */
  exclusive?<T>(section: () => Promise<T>): Promise<T>
  /**
   * Paths the target keeps to itself (its staging folder): why, when `path` is one of them. A flush
   * that would write such a path is refused before anything is written (EINVAL naming the path).
   */
  reserved?(path: string): string | undefined
}

/** The flush algorithm (src/flush/flush.ts), as a target carries it. */
export interface FlushEngine {
  flush(host: FlushHost, targets: readonly FlushTarget[], options?: FlushOptions): Promise<FlushReport>
  /** What differs between the workspace and the lower source's state after a flush into it. */
  differences(overlay: Overlay, lower: PinnedLower, ledger: ReadonlyMap<string, Recorded>): Planned[]
}

export function isFlushTarget(value: unknown): value is FlushTarget {
  const target = value as Partial<FlushTarget> | null
  return (
    typeof target === 'object' &&
    target !== null &&
    typeof target.apply === 'function' &&
    typeof target.versions === 'function' &&
    typeof target.id === 'string' &&
    typeof target.flusher?.flush === 'function'
  )
}
