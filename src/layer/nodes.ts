/**
 * The upper layer: an immutable-by-default tree of nodes over the lower source.
 *
 * A directory node either merges with a lower directory (`lower` names it, which after a rename
 * may be another path: overlayfs's redirect_dir) or hides the lower layer entirely (`lower: null`,
 * an opaque directory). A whiteout hides one lower entry. Files point at blobs by id, so keeping an
 * old tree alive (a checkpoint) keeps its content without copying it. Names that share an inode
 * (hard links) hold a HardLink into the tree's inode table (see inodes.ts).
 */
import type { BlobId } from '../blob/store.js'
import type { HardLink } from './inodes.js'
import { type EditToken, type MapRoot, emptyMap } from './persistent-map.js'

export interface Meta {
  /** Permission bits only (0o7777). */
  readonly mode: number
  readonly uid: number
  readonly gid: number
  readonly atimeMs: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly birthtimeMs: number
  readonly ino: number
}

/**
 * Meta's shape seen once with non-numbers in its time fields, at load. Times are beyond V8's small
 * integers, and a field it has seen only such numbers in gets a box of its own in every object,
 * allocated again on every copy (four per Meta, on every write, link and touch); after this they
 * are plain references, which a copied Meta shares. A call, so that bundlers keep it.
 */
Object.freeze({ mode: 0, uid: 0, gid: 0, atimeMs: null, mtimeMs: null, ctimeMs: null, birthtimeMs: null, ino: 0 })

export interface FileNode {
  readonly type: 'file'
  readonly meta: Meta
  readonly blob: BlobId
  readonly size: number
  /** Only on an inode record (inodes.ts): how many names it has. */
  readonly nlink?: number
}

export interface SymlinkNode {
  readonly type: 'symlink'
  readonly meta: Meta
  readonly target: string
  /** Only on an inode record (inodes.ts): how many names it has. */
  readonly nlink?: number
}

export interface DirNode {
  readonly type: 'dir'
  /** Mutable only while `token` is the layer's current edit token (see persistent-map.ts). */
  meta: Meta
  children: MapRoot<UpperNode>
  /** The lower directory merged under this one, or null when opaque. */
  readonly lower: string | null
  token: EditToken | null
  /** Hard-link names in this subtree (inodes.ts); changed with `children`. */
  links: number
  /**
   * The mode of the lower directory this one was copied up from, as it was then (undefined where
   * unknown: made in the workspace, or read from a store written before it was kept). A flush
   * writes a directory's mode only where the workspace changed it: a chmod made on disk since, by
   * someone else, is theirs, neither a conflict nor undone.
   */
  readonly lowerMode: number | undefined
}

export interface Whiteout {
  readonly type: 'whiteout'
}

export type EntryNode = FileNode | SymlinkNode | DirNode
export type UpperNode = EntryNode | Whiteout | HardLink

export const WHITEOUT: Whiteout = Object.freeze({ type: 'whiteout' })

export function dirNode(meta: Meta, lower: string | null, token: EditToken | null, lowerMode?: number): DirNode {
  return { type: 'dir', meta, children: emptyMap<UpperNode>(), lower, token, links: 0, lowerMode }
}

/** A directory copied up from the lower one at `lower`, whose metadata it takes (`meta`). */
export function copiedDir(meta: Meta, lower: string, token: EditToken | null): DirNode {
  return dirNode(meta, lower, token, meta.mode)
}

/** A copy owned by `token`, sharing children until they are edited. */
export function cloneDir(node: DirNode, token: EditToken): DirNode {
  return { type: 'dir', meta: node.meta, children: node.children, lower: node.lower, token, links: node.links, lowerMode: node.lowerMode }
}

/** `meta` with new change and modification times, as a literal of Meta's one shape (cheaper than a spread on write paths). */
export function timesChanged(meta: Meta, ctimeMs: number, mtimeMs: number = meta.mtimeMs): Meta {
  return { mode: meta.mode, uid: meta.uid, gid: meta.gid, atimeMs: meta.atimeMs, mtimeMs, ctimeMs, birthtimeMs: meta.birthtimeMs, ino: meta.ino }
}

/** A file or symlink node with another `meta` and link count (an inode record when `nlink` is set). */
export function withMeta<T extends FileNode | SymlinkNode>(node: T, meta: Meta, nlink: number | undefined = node.nlink): T {
  if (node.type === 'file') {
    return (nlink === undefined ? { type: 'file', meta, blob: node.blob, size: node.size } : { type: 'file', meta, blob: node.blob, size: node.size, nlink }) as T
  }
  return (nlink === undefined ? { type: 'symlink', meta, target: (node as SymlinkNode).target } : { type: 'symlink', meta, target: (node as SymlinkNode).target, nlink }) as T
}

export const S_IFMT = 0o170000
export const S_IFREG = 0o100000
export const S_IFDIR = 0o040000
export const S_IFLNK = 0o120000

export const typeBits = { file: S_IFREG, dir: S_IFDIR, symlink: S_IFLNK } as const
