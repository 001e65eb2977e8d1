/**
 * The change feed: every change to the merged view, whatever made it (an fs call, undo, redo,
 * restore, reset, a transaction's commit, an exec ingest), as per-path notifications in the kernel's
 * terms (create, delete, modify, attrib), batched per operation and delivered asynchronously, in
 * order, to fs.watch and ws.events, with the operations, checkpoints and restores. The overlay
 * reports each slot it changes and each whole-tree move to the deriver (./path-changes.ts, which the
 * watching capability installs); the fs layer gives the exact steps of a syscall; the journal
 * closes a batch when an operation ends. Nothing is collected while nobody listens.
 */
import type { EntryType } from '../lower/source.js'
import type { ChangeObserver, Overlay } from '../overlay.js'
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

/** Anything else a subscriber is told in the same order as the batches (checkpoints, restores, the store's state). */
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

/** Derives per-path notifications from the overlay's changes (engine/path-changes.ts), adding them to the feed. */
export interface PathDeriver extends ChangeObserver {
  /** The operation's notifications with its renames paired (a delete and a create of one inode). */
  pair(notifications: Notification[]): Notification[]
}

export class ChangeFeed {
  private readonly subscribers = new Set<FeedSubscriber>()
  private pathSubscribers = 0
  /** Subscribers that take batches: with none (only messages are wanted), no operation makes one. */
  private batchSubscribers = 0
  private pending: Notification[] = []
  private readonly queue: Item[] = []
  private scheduled = false

  /** Set by the watching capability (rewindfs/watch); without it no path is ever collected. */
  deriver: PathDeriver | undefined

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
    if (subscriber.batch) this.batchSubscribers++
    return () => {
      if (!this.subscribers.delete(subscriber)) return
      if (subscriber.paths) this.pathSubscribers--
      if (subscriber.batch) this.batchSubscribers--
      if (this.pathSubscribers === 0) this.pending = []
    }
  }

  /** The workspace closed: what is queued is delivered, then every subscriber is told and dropped. */
  close(): void {
    if (this.queue.length > 0 || this.pending.length > 0) this.deliver()
    const subscribers = [...this.subscribers]
    this.subscribers.clear()
    this.pathSubscribers = 0
    this.batchSubscribers = 0
    this.pending = []
    for (const subscriber of subscribers) subscriber.closed?.()
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

  /** A notification the deriver made; delivered at the end of the operation, or soon outside one. */
  add(notification: Notification): void {
    this.pending.push(notification)
    if (!this.scheduled && this.listening) {
      // Closed by the journal at the end of the operation; this is the fallback for changes outside one.
      this.scheduled = true
      soon(() => this.deliver())
    }
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
    if (this.batchSubscribers === 0) return
    const notifications = this.deriver ? this.deriver.pair(this.pending) : this.pending
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
}
