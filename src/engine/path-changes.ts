/**
 * Per-path notifications derived from the overlay's changes, as inotify reports them: a slot that
 * changed becomes the creates, deletes, writes and attribute changes of what it shows (a
 * directory's entries too), a whole-tree move (restore, reset) the difference of the two trees,
 * and a delete and a create of one inode in one operation a rename. The watching capability
 * (rewindfs/watch) installs it as the overlay's observer, so the core does not carry it: without
 * it nothing asks which paths changed (fs.watch and ws.events 'change' need it).
 */
import { type ChangeRecord, diffTrees } from '../diff.js'
import type { EntryType } from '../lower/source.js'
import type { DirNode, Meta, UpperNode } from '../layer/nodes.js'
import { mapGet } from '../layer/persistent-map.js'
import { type Entry, type Overlay, metaFromLower } from '../overlay.js'
import { join } from '../path.js'
import type { ChangeFeed, Notification, NotificationKind, PathDeriver } from './change-feed.js'

export class PathChanges implements PathDeriver {
  constructor(
    private readonly overlay: Overlay,
    private readonly feed: ChangeFeed,
  ) {}

  /** Collecting only while someone wants paths (see ChangeObserver). */
  get active(): boolean {
    return this.feed.active
  }

  slot(path: string, before: UpperNode | undefined, after: UpperNode | undefined, lowerPath: string | null): void {
    this.compare(this.slotEntry(path, before, lowerPath), this.slotEntry(path, after, lowerPath))
  }

  meta(path: string, before: Meta, after: Meta): void {
    if (before.ino !== after.ino || !explicitChange(before, after)) return
    this.push(path, 'attrib', 'dir', after.ino)
  }

  root(before: DirNode, after: DirNode): void {
    for (const record of diffTrees(this.overlay, before, after)) this.fromRecord(record)
  }

  pair(notifications: Notification[]): Notification[] {
    return pairMoves(notifications)
  }

  private push(path: string, kind: NotificationKind, type: EntryType, ino: number, replaced?: number, entry?: Entry): void {
    const shared = entry?.node !== undefined && entry.node.type !== 'dir' && entry.node.nlink !== undefined
    if (shared) this.feed.add({ path, kind, type, ino, born: entry.node!.meta.birthtimeMs, shared: true })
    else this.feed.add(replaced === undefined ? { path, kind, type, ino } : { path, kind, type, ino, replaced })
  }

  /** A derived create or delete, with what tells the entry apart for pairMoves (and a shared inode's link count). */
  private pushEntry(entry: Entry, kind: 'create' | 'delete'): void {
    const meta = this.metaOf(entry)
    const nlink = entry.node?.type !== 'dir' ? entry.node?.nlink : undefined
    const notification: Notification = { path: entry.path, kind, type: entry.type, ino: meta.ino, born: meta.birthtimeMs }
    this.feed.add(nlink === undefined ? notification : { ...notification, shared: true, links: nlink })
  }

  /** The merged entry a slot value shows: an upper node, nothing (whiteout), or the lower entry. */
  private slotEntry(path: string, node: UpperNode | undefined, lowerPath: string | null): Entry | undefined {
    if (node) return this.overlay.slotEntry(path, node)
    if (lowerPath === null) return undefined
    const stat = this.overlay.lower.stat(lowerPath)
    return stat ? { path, type: stat.type, node: undefined, lowerPath, lowerStat: stat, link: undefined, inodes: undefined } : undefined
  }

  private metaOf(entry: Entry): Meta {
    return entry.node ? entry.node.meta : metaFromLower(entry.lowerStat!, entry.lowerPath!)
  }

  /** A child of a merged directory, looked up without recording a sighting of the lower path. */
  private child(dir: Entry, name: string): Entry | undefined {
    const path = join(dir.path, name)
    const upper = dir.node?.type === 'dir' ? mapGet(dir.node.children, name) : undefined
    if (upper !== undefined) return this.overlay.slotEntry(path, upper, dir.inodes)
    return dir.lowerPath === null ? undefined : this.slotEntry(path, undefined, join(dir.lowerPath, name))
  }

  private children(dir: Entry): Entry[] {
    const out: Entry[] = []
    for (const name of this.overlay.names(dir)) {
      const child = this.child(dir, name)
      if (child) out.push(child)
    }
    return out
  }

  /** A new entry: created, then written if it has content; a directory's entries after it. */
  private created(entry: Entry): void {
    const meta = this.metaOf(entry)
    this.pushEntry(entry, 'create')
    if (entry.type === 'file' && this.overlay.size(entry) > 0) this.push(entry.path, 'modify', 'file', meta.ino, undefined, entry)
    if (entry.type === 'dir') for (const child of this.children(entry)) this.created(child)
  }

  /** A removed entry: a directory's entries first (rm -r removes bottom up), then itself. */
  private deleted(entry: Entry): void {
    if (entry.type === 'dir') for (const child of this.children(entry)) this.deleted(child)
    this.pushEntry(entry, 'delete')
  }

  private compare(before: Entry | undefined, after: Entry | undefined): void {
    if (!before && !after) return
    if (!after) return this.deleted(before!)
    if (!before) return this.created(after)
    const was = this.metaOf(before)
    const now = this.metaOf(after)
    if (before.type !== after.type || was.ino !== now.ino) {
      if (before.type === 'dir') for (const child of this.children(before)) this.deleted(child)
      this.push(after.path, 'replace', after.type, now.ino, was.ino)
      if (after.type === 'dir') for (const child of this.children(after)) this.created(child)
      else if (after.type === 'file' && this.overlay.size(after) > 0) this.push(after.path, 'modify', 'file', now.ino)
      return
    }
    if (after.type === 'file' && !sameContent(before, after, this.overlay)) this.push(after.path, 'modify', 'file', now.ino, undefined, after)
    else if (after.type === 'dir' ? explicitChange(was, now) : explicitChange(was, now) || (after.type === 'symlink' && !sameMeta(was, now))) {
      this.push(after.path, 'attrib', after.type, now.ino, undefined, after)
    }
    // A file's new node with the same bytes, only its times moved (or not even those): a write of
    // the same bytes or a truncation to the same size, still a write to watchers.
    else if (after.type === 'file' && before.node !== after.node) this.push(after.path, 'modify', 'file', now.ino, undefined, after)
    if (after.type === 'dir' && (before.node !== after.node || before.lowerPath !== after.lowerPath)) {
      const names = new Set([...this.overlay.names(before), ...this.overlay.names(after)])
      for (const name of [...names].sort()) this.compare(this.child(before, name), this.child(after, name))
    }
  }

  /** A whole-tree difference (diffTrees already expanded added and deleted subtrees). */
  private fromRecord(record: ChangeRecord): void {
    const { before, after } = record
    if (after && !before) {
      const meta = this.metaOf(after)
      this.pushEntry(after, 'create')
      if (after.type === 'file' && this.overlay.size(after) > 0) this.push(after.path, 'modify', 'file', meta.ino)
    } else if (before && !after) this.pushEntry(before, 'delete')
    else if (before && after) {
      const was = this.metaOf(before)
      const now = this.metaOf(after)
      if (before.type !== after.type || was.ino !== now.ino) this.push(after.path, 'replace', after.type, now.ino, was.ino)
      else if (after.type === 'file' && !sameContent(before, after, this.overlay)) this.push(after.path, 'modify', 'file', now.ino)
      else if (after.type === 'dir' ? explicitChange(was, now) : !sameMeta(was, now)) this.push(after.path, 'attrib', after.type, now.ino)
    }
  }
}

/**
 * Whether a directory's metadata changed by a chmod, chown or utimes: its mtime and ctime alone
 * change whenever an entry is added or removed, which inotify does not report (replaying a
 * transaction or an undo sets them with the entries).
 */
function explicitChange(a: Meta, b: Meta): boolean {
  return a.mode !== b.mode || a.uid !== b.uid || a.gid !== b.gid || a.atimeMs !== b.atimeMs
}

/**
 * Derived changes that are renames: an inode deleted at one path and created at another in the
 * same operation (an undo or redo of a rename, a transaction that moved something). Reported as
 * inotify reports a rename, one name leaving and one arriving; what was inside comes along unreported.
 */
export function pairMoves(notifications: Notification[]): Notification[] {
  const deletes = new Map<string, number>()
  const creates = new Map<string, number>()
  notifications.forEach((n, i) => {
    if (n.born === undefined) return
    const key = `${n.type}:${n.ino}:${n.born}`
    if (n.kind === 'delete') deletes.set(key, i)
    else if (n.kind === 'create') creates.set(key, i)
  })
  const pairs: [create: number, remove: number][] = []
  for (const [key, c] of creates) {
    const d = deletes.get(key)
    if (d !== undefined && notifications[d].path !== notifications[c].path) pairs.push([c, d])
  }
  if (pairs.length === 0) return notifications
  const moves = new Map<string, string>() // source path -> destination, of every pair
  for (const [c, d] of pairs) moves.set(notifications[d].path, notifications[c].path)
  /** A pair inside a moved directory, at the same place relative to it, is carried along. */
  const carried = (c: number, d: number): boolean => {
    const from = notifications[d].path
    const to = notifications[c].path
    const parentFrom = from.slice(0, from.lastIndexOf('/')) || '/'
    const parentTo = to.slice(0, to.lastIndexOf('/')) || '/'
    return moves.get(parentFrom) === parentTo && from.slice(parentFrom.length) === to.slice(parentTo.length)
  }
  const drop = new Set<number>()
  // At the first of the two positions: the name leaving, then arriving.
  const moved = new Map<number, Notification[]>()
  for (const [c, d] of pairs) {
    drop.add(c).add(d)
    if (carried(c, d)) continue
    moved.set(Math.min(c, d), [
      { ...notifications[d], to: notifications[c].path },
      { ...notifications[c], from: notifications[d].path },
    ])
  }
  const out: Notification[] = []
  notifications.forEach((n, i) => {
    const replacement = moved.get(i)
    if (replacement) out.push(...replacement)
    // A moved file's 'modify' right after its create is not a write.
    else if (n.kind === 'modify' && i > 0 && drop.has(i - 1) && notifications[i - 1].path === n.path) return
    else if (!drop.has(i)) out.push(n)
  })
  return out
}

function sameMeta(a: Meta, b: Meta): boolean {
  return a.mode === b.mode && a.uid === b.uid && a.gid === b.gid && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.atimeMs === b.atimeMs
}

/** Same bytes without reading them: the same blob, the same lower file, or the same size and mtime. */
function sameContent(a: Entry, b: Entry, overlay: Overlay): boolean {
  if (a.node?.type === 'file' && b.node?.type === 'file') return a.node.blob === b.node.blob
  if (!a.node && !b.node) return a.lowerPath === b.lowerPath
  return overlay.size(a) === overlay.size(b) && overlay.meta(a).mtimeMs === overlay.meta(b).mtimeMs
}
