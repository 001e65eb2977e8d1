/**
 * Hard links in the persistent upper layer: names that share one inode.
 *
 * Design. A name in a directory either holds its node (a file is its content and metadata) or, once
 * it has been hard-linked, a `HardLink` naming an inode by id. The inodes live in one more directory
 * node of the same tree, the inode table, kept under the root at the name `INODES` ('\0inodes': no
 * real name can contain a NUL byte, and the fs surface refuses one). Its children are the inode
 * records, keyed by id, each a file or symlink node with its link count (`nlink`).
 *
 * - A checkpoint stays O(1): the table is part of the root it freezes, so a kept root keeps every
 *   name and every inode as they were, and a restore moves both with one pointer.
 * - A write stays O(depth): writing through any name replaces the record in the table (a path of
 *   depth 1 under the root), not the names, so every other name sees the write at once.
 * - The journal, undo, redo, transactions and the durable stores need nothing new: a record is an
 *   upper slot like any other ('/\0inodes/<id>'), recorded, replayed and collected as one. A slot
 *   sequence keeps an invariant the reverse order keeps too: a record is set before a name points
 *   at it and deleted only after the last name that pointed at it is gone.
 * - What must find the names of an inode (a diff, watchers told of an undone write, rm -r dropping
 *   link counts, the exec layer, flush) walks only directories that hold links: every directory
 *   counts the hard-link names in its subtree (`DirNode.links`), kept up to date on each slot change
 *   along the path it already copies.
 *
 * Lower-layer files that are hard links on disk are not shared: like overlayfs without `index=on`,
 * each name is copied up on its own (it keeps the lower inode number; its link count becomes 1).
 */
import type { DirNode, FileNode, SymlinkNode, UpperNode } from './nodes.js'
import { mapEntries, mapGet } from './persistent-map.js'

/**
 * The first inode number the upper layer gives. Lower entries keep theirs: a directory's from the
 * disk (small on a young file system), a fixture's 1 to n, a source without them 2^32 plus a hash
 * of the path (below 2^33). Numbering new entries from 1 gave a new file the number of a lower one,
 * and code that tells files apart by (dev, ino) took the two for one (fs-extra's "Source and
 * destination must not be the same").
 */
export const FIRST_UPPER_INO = 2 ** 36

/** The name of the inode table under the root. */
export const INODES = '\u0000inodes'
/** The table's own path, for the slots of its records. */
export const INODES_PATH = '/' + INODES

/** A name that is one of several names of an inode. */
export interface HardLink {
  readonly type: 'link'
  /** The inode's key in the table (unique in the workspace; not its st_ino, which it keeps). */
  readonly id: number
}

/** An inode shared by names: a file or a symlink (directories cannot be hard-linked). */
export type InodeRecord = FileNode | SymlinkNode

export function hardLink(id: number): HardLink {
  return { type: 'link', id }
}

/** What every record's slot path begins with (one string: a record path is this and the id). */
const RECORDS = INODES_PATH + '/'

/** The slot path of an inode record. */
export function recordPath(id: number): string {
  return RECORDS + id
}

/** The record id a slot path names, or undefined for a path that is not a record. */
export function recordId(path: string): number | undefined {
  if (!path.startsWith(RECORDS)) return undefined
  const id = Number(path.slice(RECORDS.length))
  return Number.isSafeInteger(id) ? id : undefined
}

/** The inode table of a tree, if it has one. */
export function tableOf(root: DirNode): DirNode | undefined {
  const table = mapGet(root.children, INODES)
  return table?.type === 'dir' ? table : undefined
}

/** An inode's record in a table. */
export function recordIn(table: DirNode | undefined, id: number): InodeRecord | undefined {
  if (table === undefined) return undefined
  const record = mapGet(table.children, String(id))
  return record?.type === 'file' || record?.type === 'symlink' ? record : undefined
}

/** How many hard-link names a slot value holds, itself and below. */
export function linksIn(node: UpperNode | undefined): number {
  if (node === undefined) return 0
  if (node.type === 'link') return 1
  return node.type === 'dir' ? node.links : 0
}

/** The ids of the hard-link names at or below a slot value (walking only directories that hold some). */
export function linkIds(node: UpperNode | undefined, into: number[] = []): number[] {
  if (node === undefined) return into
  if (node.type === 'link') into.push(node.id)
  else if (node.type === 'dir' && node.links > 0) {
    for (const [name, child] of mapEntries<UpperNode>(node.children)) if (name !== INODES) linkIds(child, into)
  }
  return into
}

/**
 * The names (canonical paths) of the given inodes in a tree, sorted. Walks only directories that
 * hold hard links: O(those directories' entries), nothing for a tree without links.
 */
export function namesOf(root: DirNode, ids: ReadonlySet<number>): Map<number, string[]> {
  const names = new Map<number, string[]>()
  if (ids.size === 0 || root.links === 0) return names
  const walk = (dir: DirNode, path: string) => {
    for (const [name, child] of mapEntries<UpperNode>(dir.children)) {
      if (name === INODES) continue
      const childPath = path === '/' ? '/' + name : `${path}/${name}`
      if (child.type === 'link' && ids.has(child.id)) {
        const list = names.get(child.id)
        if (list) list.push(childPath)
        else names.set(child.id, [childPath])
      } else if (child.type === 'dir' && child.links > 0) walk(child, childPath)
    }
  }
  walk(root, '/')
  for (const list of names.values()) list.sort()
  return names
}

/**
 * Where a recorded slot change is shown to people (undo reports, an operation's diff): its own path,
 * or for an inode record whose content changed, the first path the operation named (the name it was
 * written through). A record change that only moved its link count is shown by its names' own slots:
 * undefined.
 */
export function shownAt(path: string, before: UpperNode | undefined, after: UpperNode | undefined, paths: readonly string[]): string | undefined {
  if (recordId(path) === undefined) return path
  const changed = before?.type === 'file' && after?.type === 'file' ? before.blob !== after.blob : before?.type === 'symlink' && after?.type === 'symlink' && before.target !== after.target
  return changed ? paths[0] : undefined
}
