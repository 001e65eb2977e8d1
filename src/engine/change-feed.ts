/**
 * The change feed: every change to the merged view, whatever made it (an fs call, undo, redo,
 * restore, reset, a transaction's commit, an exec ingest), as per-path notifications in the kernel's
 * terms (create, delete, modify, attrib), batched per operation and delivered asynchronously, in
 * order, to fs.watch, fs.watchFile's neighbours and ws.events. The overlay reports each slot it
 * changes and each whole-tree move (one place); the journal closes a batch when an operation ends.
 * Nothing is collected while nobody listens.
 */
import { type ChangeRecord, diffTrees } from '../diff.js'
import type { EntryType } from '../lower/source.js'
import type { DirNode, Meta, UpperNode } from '../layer/nodes.js'
import { mapGet } from '../layer/persistent-map.js'
import { type ChangeObserver, type Entry, type Overlay, metaFromLower } from '../overlay.js'
import { join } from '../path.js'
import type { OperationRecord } from './journal.js'

/**
 * What happened to one path, as inotify would say it. `replace`: another inode took the name (a
 * rename over it, a restore): for the directory a rename, for the old inode its end.
 */
export type NotificationKind = 'create' | 'delete' | 'modify' | 'attrib' | 'replace'

export interface Notification {
  /** Canonical workspace path. */
  readonly path: string
  readonly kind: NotificationKind
  /** The entry's type: after the change, or before it for a delete. */
  readonly type: EntryType
  /** The inode at the path after the change (the removed one for a delete). */
  readonly ino: number
  /** For a replace: the inode that lost the name. */
  readonly replaced?: number
  /** A rename: on the delete, where the entry went; on the create or replace, where it came from. */
  readonly to?: string
  readonly from?: string
  /** On a derived create or delete: the entry's birth time, which with ino and type tells one entry (lower and upper inode numbers can coincide). */
  readonly born?: number
  /** The inode has several names (hard links; `born` is then set too): a watch on any of them hears of it. */
  readonly shared?: true
  /** On a shared inode's delete: its link count before it (more than one: the inode lives on). */
  readonly links?: number
}

/** How a batch came about: an operation (recorded or not), or undo/redo of a recorded one. */
export type BatchCause = 'operation' | 'undo' | 'redo'

export interface ChangeBatch {
  readonly notifications: readonly Notification[]
  readonly cause: BatchCause
  /** The journal's record of the operation, when there is one (a no-op write has none). */
  readonly record?: OperationRecord
}

/** Anything else a subscriber is told in the same order as the batches (checkpoints, restores). */
export interface FeedMessage {
  readonly kind: string
  readonly payload: unknown
}

export interface FeedSubscriber {
  /** Wants path notifications (fs watchers, ws.events 'change' listeners), not only records. */
  readonly paths: boolean
  batch?(batch: ChangeBatch): void
  message?(message: FeedMessage): void
  /** After each delivery round: everything changed since the last one has been delivered. */
  delivered?(): void
  /** The workspace closed: nothing more comes. */
  closed?(): void
}

type Item = { batch: ChangeBatch } | { message: FeedMessage }

/** The host's microtask queue (every engine we run on has one). */
const soon: (fn: () => void) => void = (fn) => queueMicrotask(fn)

export class ChangeFeed implements ChangeObserver {
  private readonly subscribers = new Set<FeedSubscriber>()
  private pathSubscribers = 0
  private pending: Notification[] = []
  private readonly queue: Item[] = []
  private scheduled = false

  constructor(private readonly overlay: Overlay) {}

  /** Whether changes to the view are being collected (someone wants paths). */
  get active(): boolean {
    return this.pathSubscribers > 0
  }

  /** Whether anyone listens at all (batches are closed and delivered only then). */
  get listening(): boolean {
    return this.subscribers.size > 0
  }

  subscribe(subscriber: FeedSubscriber): () => void {
    this.subscribers.add(subscriber)
    if (subscriber.paths) this.pathSubscribers++
    return () => {
      if (!this.subscribers.delete(subscriber)) return
      if (subscriber.paths) this.pathSubscribers--
      if (this.pathSubscribers === 0) this.pending = []
    }
  }

  /** The workspace closed: what is queued is delivered, then every subscriber is told and dropped. */
  close(): void {
    if (this.queue.length > 0 || this.pending.length > 0) this.deliver()
    const subscribers = [...this.subscribers]
    this.subscribers.clear()
    this.pathSubscribers = 0
    this.pending = []
    for (const subscriber of subscribers) subscriber.closed?.()
  }

  // ---- from the overlay ------------------------------------------------------------------------

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

  // ---- from the fs layer and the journal ----------------------------------------------------------

  /**
   * Replaces what the feed derived for `path` since `mark` by the steps a Linux syscall makes (a
   * copy is open with O_CREAT, ftruncate, fchmod, the data: inotify reports each).
   */
  override(mark: number, path: string, kinds: readonly NotificationKind[]): void {
    if (!this.active) return
    let ino = 0
    let type: EntryType = 'file'
    let shared: { born: number; shared: true } | undefined
    const kept: Notification[] = []
    for (let i = mark; i < this.pending.length; i++) {
      const n = this.pending[i]
      if (n.path !== path) kept.push(n)
      else if (n.kind !== 'delete') {
        ;({ ino, type } = n)
        if (n.shared) shared = { born: n.born!, shared: true }
      }
    }
    // Mark past the end (the changes were never collected): only the explicit steps remain.
    mark = Math.min(mark, this.pending.length)
    if (ino === 0) {
      const entry = this.overlay.lookup(path, false)
      if (!entry) return
      ino = this.overlay.meta(entry).ino
      type = entry.type
    }
    this.pending.length = mark
    this.pending.push(...kept)
    for (const kind of kinds) this.pending.push(shared ? { path, kind, type, ino, ...shared } : { path, kind, type, ino })
  }

  /** Where the notifications of the current operation stand, for override and moved. */
  mark(): number {
    return this.pending.length
  }

  /**
   * A rename, as inotify reports it: the name leaves `from` and arrives at `to` (over `replaced`, if
   * something was there); what is inside a moved directory is not reported, only the move.
   */
  moved(mark: number, from: string, to: string, type: EntryType, ino: number, replaced?: { type: EntryType; ino: number }): void {
    if (!this.active) return
    this.pending.length = Math.min(mark, this.pending.length)
    this.pending.push({ path: from, kind: 'delete', type, ino, to })
    this.pending.push(replaced ? { path: to, kind: 'replace', type, ino, replaced: replaced.ino, from } : { path: to, kind: 'create', type, ino, from })
  }

  /** Closes the current operation's batch (the journal calls this when an operation ends). */
  seal(record?: OperationRecord, cause: BatchCause = 'operation'): void {
    if (!this.listening) return
    const notifications = pairMoves(this.pending)
    this.pending = []
    if (notifications.length === 0 && record === undefined) return
    this.enqueue({ batch: { notifications, cause, ...(record ? { record } : {}) } })
  }

  /** Tells subscribers something in order with the batches (a checkpoint, a restore). */
  post(kind: string, payload: unknown): void {
    if (!this.listening) return
    this.seal() // what happened outside any operation comes first
    this.enqueue({ message: { kind, payload } })
  }

  private enqueue(item: Item): void {
    this.queue.push(item)
    if (!this.scheduled) {
      this.scheduled = true
      soon(() => this.deliver())
    }
  }

  private deliver(): void {
    this.scheduled = false
    // Changes made outside any operation (no journal: a transaction's staging fs) form a batch.
    if (this.pending.length > 0) this.seal()
    const items = this.queue.splice(0)
    const subscribers = [...this.subscribers]
    for (const item of items) {
      for (const subscriber of subscribers) {
        if ('batch' in item) subscriber.batch?.(item.batch)
        else subscriber.message?.(item.message)
      }
    }
    for (const subscriber of subscribers) subscriber.delivered?.()
  }

  // ---- deriving notifications ---------------------------------------------------------------------

  private push(path: string, kind: NotificationKind, type: EntryType, ino: number, replaced?: number, entry?: Entry): void {
    const shared = entry?.node !== undefined && entry.node.type !== 'dir' && entry.node.nlink !== undefined
    if (shared) this.pending.push({ path, kind, type, ino, born: entry.node!.meta.birthtimeMs, shared: true })
    else this.pending.push(replaced === undefined ? { path, kind, type, ino } : { path, kind, type, ino, replaced })
    this.schedule()
  }

  /** A derived create or delete, with what tells the entry apart for pairMoves (and a shared inode's link count). */
  private pushEntry(entry: Entry, kind: 'create' | 'delete'): void {
    const meta = this.metaOf(entry)
    const nlink = entry.node?.type !== 'dir' ? entry.node?.nlink : undefined
    const notification: Notification = { path: entry.path, kind, type: entry.type, ino: meta.ino, born: meta.birthtimeMs }
    this.pending.push(nlink === undefined ? notification : { ...notification, shared: true, links: nlink })
    this.schedule()
  }

  private schedule(): void {
    if (!this.scheduled && this.listening) {
      // Closed by the journal at the end of the operation; this is the fallback for changes outside one.
      this.scheduled = true
      soon(() => this.deliver())
    }
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
function pairMoves(notifications: Notification[]): Notification[] {
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
