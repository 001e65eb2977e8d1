/**
 * ws.events: what happens to a workspace, for timelines and file-tree views, from one subscription.
 * Operations (every fs call, transaction, restore, reset, side effect), undo and redo of them,
 * checkpoints, restores, the paths each operation changed, and the durable store failing and
 * coming back, delivered asynchronously in the order they happened. An emitter (`on` returns the
 * unsubscribe function) and an async iterator (`stream`); browser-safe, nothing from Node. Path changes are only collected while someone
 * listens for them. The events come from a source: the workspace's own change feed, or (on a
 * page) the worker's, relayed one message per delivery.
 */
import type { EntryType } from '../lower/source.js'
import type { Checkpoint } from '../workspace.js'
import type { BatchCause, ChangeBatch, ChangeFeed, FeedMessage } from './change-feed.js'
import { type Operation, publicOperation } from './journal.js'

/** One path's change, as a file-tree view needs it. `moved`: renamed from `from` (its entries came along). */
export interface PathChange {
  readonly path: string
  readonly kind: 'created' | 'deleted' | 'modified' | 'attributes' | 'moved'
  readonly entry: EntryType
  readonly from?: string
}

export interface RestoreEvent {
  /** The checkpoint name, or a description of the point ('at <time>', 'after <operation>'). */
  readonly target: string
  readonly applied: boolean
  /** Paths the restore changed. */
  readonly changes: number
  readonly guard?: Checkpoint
}

/**
 * The durable store failed, came back, or was given up. What it says in full is in ws.status
 * (`degraded`, `reconnect`), current when the event is delivered.
 */
export interface StoreEvent {
  /**
   * failed: a group commit failed and the workspace goes on in memory (degraded; EDEGRADED from
   * sync); reconnected: the store came back and took what was kept back; refused: it cannot be
   * resumed (another writer took the session, or the store is gone), the workspace stays in memory.
   */
  readonly state: 'failed' | 'reconnected' | 'refused'
  readonly message: string
}

export interface WorkspaceEventMap {
  /** A new operation in the journal (also transactions, restores, resets, side effects, state sets). */
  operation: { readonly operation: Operation }
  /** An operation was undone or redone. */
  undo: { readonly operation: Operation }
  redo: { readonly operation: Operation }
  /** The paths one operation (or an undo or redo of it) changed; `operation` is absent for a write that changed nothing. */
  change: { readonly changes: readonly PathChange[]; readonly cause: BatchCause; readonly operation?: Operation }
  checkpoint: { readonly checkpoint: Checkpoint }
  restore: RestoreEvent
  /**
   * A follower (a workspace in a worker whose store another tab writes) reloaded the writer's
   * commits: the operations that are new or were undone or redone since it last loaded, and the
   * paths they name. Only a worker's workspace emits it (rewindfs/worker).
   */
  reload: { readonly operations: readonly Operation[]; readonly paths: readonly string[] }
  /** A follower became the store's writer (the writer's tab went away) and was reopened for writing. Only a worker's workspace emits it. */
  writer: { readonly reason: string }
  /** The durable store failed, came back or was given up: an IDE's storage indicator, without polling ws.status. */
  store: StoreEvent
}

export type WorkspaceEventType = keyof WorkspaceEventMap
export type WorkspaceEvent = { [K in WorkspaceEventType]: { readonly type: K } & WorkspaceEventMap[K] }[WorkspaceEventType]

type AnyListener = (event: WorkspaceEvent) => void

export interface StreamOptions {
  /** Only these kinds of event (default: all). */
  types?: readonly WorkspaceEventType[]
  /** Ends the stream (the iterator finishes; no error). */
  signal?: AbortSignal
}

/**
 * Where events come from: told the types listened for, it calls `emit` with events (of those types
 * at least) in order, until the function it returns is called.
 */
export type EventSource = (types: ReadonlySet<WorkspaceEventType>, emit: (event: WorkspaceEvent) => void) => () => void

export class WorkspaceEvents {
  private readonly listeners = new Map<WorkspaceEventType, Set<AnyListener>>()
  private unsubscribe: (() => void) | undefined
  /** The types the source was last told, as a key ('' when unsubscribed). */
  private subscribed = ''
  private readonly endings = new Set<() => void>()

  /** `paths`: whether 'change' events can be told (the workspace was given the watching capability). */
  constructor(
    private readonly source: EventSource,
    private readonly paths = true,
  ) {}

  /** Calls `listener` with every event of `type`; returns the function that stops it. */
  on<K extends WorkspaceEventType>(type: K, listener: (event: { readonly type: K } & WorkspaceEventMap[K]) => void): () => void {
    return this.add(type, listener as unknown as AnyListener)
  }

  private add(type: WorkspaceEventType, listener: AnyListener): () => void {
    if (typeof listener !== 'function') throw new TypeError('rewindfs: ws.events.on(type, listener) needs a function')
    if (!EVENT_TYPES.has(type)) throw new TypeError(`rewindfs: unknown event type '${String(type)}'; one of ${[...EVENT_TYPES].join(', ')}`)
    if (type === 'change' && !this.paths) {
      throw Object.assign(new Error("rewindfs: ws.events 'change' needs the watching capability: pass Workspace.open({ watch: watching }) with watching from 'rewindfs/watch'"), { code: 'ENOSYS' })
    }
    let set = this.listeners.get(type)
    if (!set) this.listeners.set(type, (set = new Set()))
    set.add(listener)
    this.resubscribe()
    return () => {
      set.delete(listener)
      this.resubscribe()
    }
  }

  off<K extends WorkspaceEventType>(type: K, listener: (event: { readonly type: K } & WorkspaceEventMap[K]) => void): void {
    this.listeners.get(type)?.delete(listener as unknown as AnyListener)
    this.resubscribe()
  }

  /** Every event (or those of `types`) as an async iterator, until `signal` aborts or the workspace closes. */
  stream(options: StreamOptions = {}): AsyncIterableIterator<WorkspaceEvent> {
    const types = options.types ?? [...EVENT_TYPES].filter((type) => type !== 'change' || this.paths)
    const queue: WorkspaceEvent[] = []
    let wake: (() => void) | undefined
    let ended = options.signal?.aborted === true
    const push: AnyListener = (event) => {
      queue.push(event)
      wake?.()
    }
    const offs = ended ? [] : types.map((type) => this.add(type, push))
    // The workspace closing ends the stream after what it already told; an abort ends it at once.
    const end = (drop = false) => {
      ended = true
      if (drop) queue.length = 0
      for (const off of offs) off()
      this.endings.delete(end)
      wake?.()
    }
    this.endings.add(end)
    options.signal?.addEventListener('abort', () => end(true), { once: true })
    const iterator: AsyncIterableIterator<WorkspaceEvent> = {
      next: async () => {
        for (;;) {
          if (queue.length > 0) return { value: queue.shift()!, done: false }
          if (ended) return { value: undefined, done: true }
          await new Promise<void>((resolve) => (wake = resolve))
          wake = undefined
        }
      },
      return: async () => {
        end(true)
        return { value: undefined, done: true }
      },
      [Symbol.asyncIterator]: () => iterator,
    }
    return iterator
  }

  /** Ends every stream (the workspace closed). */
  close(): void {
    for (const end of [...this.endings]) end()
  }

  /** Subscribes to the source while anyone listens, for the types listened for (a 'change' listener makes the feed collect paths). */
  private resubscribe(): void {
    const types = new Set<WorkspaceEventType>()
    for (const [type, set] of this.listeners) if (set.size > 0) types.add(type)
    const key = [...types].sort().join(',')
    if (key === this.subscribed) return
    const previous = this.unsubscribe
    this.unsubscribe = undefined
    this.subscribed = key
    // The new subscription first, so what the feed has collected and not yet delivered is kept.
    if (types.size > 0) this.unsubscribe = this.source(types, (event) => this.emit(event))
    previous?.()
  }

  private emit(event: WorkspaceEvent): void {
    for (const listener of [...(this.listeners.get(event.type) ?? [])]) listener(event)
  }
}

/** The events of a workspace's own change feed. */
export function feedEvents(feed: ChangeFeed): EventSource {
  return (types, emit) => {
    const wantsChanges = types.has('change')
    // Only the store's events wanted: no batch is made for each operation.
    const wantsBatches = wantsChanges || types.has('operation') || types.has('undo') || types.has('redo')
    return feed.subscribe({
      paths: wantsChanges,
      batch: wantsBatches ? (batch) => {
        const operation = batch.record ? publicOperation(batch.record) : undefined
        if (wantsChanges && batch.notifications.length > 0) {
          emit({ type: 'change', changes: pathChanges(batch), cause: batch.cause, ...(operation ? { operation } : {}) })
        }
        if (!operation) return
        if (batch.cause === 'operation') emit({ type: 'operation', operation })
        else emit({ type: batch.cause, operation })
      } : undefined,
      message: (message: FeedMessage) => {
        if (message.kind === 'checkpoint') emit({ type: 'checkpoint', checkpoint: message.payload as Checkpoint })
        else if (message.kind === 'restore') emit({ type: 'restore', ...(message.payload as RestoreEvent) })
        else if (message.kind === 'store') emit({ type: 'store', ...(message.payload as StoreEvent) })
      },
    })
  }
}

const EVENT_TYPES: ReadonlySet<WorkspaceEventType> = new Set<WorkspaceEventType>(['operation', 'undo', 'redo', 'change', 'checkpoint', 'restore', 'reload', 'writer', 'store'])

/** The feed's notifications as path changes: a rename is one 'moved', a delete and create of one path stay two. */
function pathChanges(batch: ChangeBatch): PathChange[] {
  const out: PathChange[] = []
  let last: PathChange | undefined
  for (const n of batch.notifications) {
    if (n.kind === 'delete' && n.to !== undefined) continue
    let change: PathChange
    if (n.from !== undefined) change = { path: n.path, kind: 'moved', entry: n.type, from: n.from }
    else if (n.kind === 'create') change = { path: n.path, kind: 'created', entry: n.type }
    else if (n.kind === 'delete') change = { path: n.path, kind: 'deleted', entry: n.type }
    else if (n.kind === 'attrib') change = { path: n.path, kind: 'attributes', entry: n.type }
    else change = { path: n.path, kind: 'modified', entry: n.type }
    // One path, one kind per run: a new file's write after its creation is part of 'created'.
    if (last && last.path === change.path && (last.kind === change.kind || (last.kind === 'created' && change.kind !== 'deleted'))) continue
    out.push(change)
    last = change
  }
  return out
}
