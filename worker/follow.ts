/**
 * Tabs, in the worker: a workspace over a store other tabs share (IndexedDB, OPFS: the store has
 * `onChange`). While another tab writes, this tab follows: each commit it hears, the workspace is
 * reopened on the store's new state (one reload at a time; commits heard meanwhile make one more),
 * and the page is told what changed (a 'reload' event). When the writer's tab goes away and this
 * tab is next in the Web Locks queue, the store becomes the writer and the workspace is reopened
 * for writing (a 'writer' event). The successive workspaces share the store and the lower source:
 * each is given them through a lease whose close() does nothing, and the session's end closes them.
 */
import type { WorkspaceEvent } from '../src/engine/events.js'
import type { Operation } from '../src/engine/journal.js'
import type { Store } from '../src/engine/store.js'
import type { LowerSource } from '../src/lower/source.js'
import type { Workspace } from '../src/workspace.js'

/** `target` with a close() that does nothing (its owner closes it); everything else is the target's own. */
export function lease<T extends object>(target: T): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === 'close') return async () => undefined
      const value: unknown = Reflect.get(object, property, object)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value
    },
  })
}

/** Operations new in `next` or undone or redone since `previous`, oldest first. */
export function changedOperations(previous: Workspace, next: Workspace): Operation[] {
  const before = new Map(previous.history().map((op) => [op.id, op.undone === true]))
  return next
    .history()
    .filter((op) => before.get(op.id) !== (op.undone === true))
    .reverse()
}

/** What reopening told: the new workspace and the event that says why. */
export type Reopened = { readonly ws: Workspace; readonly event: WorkspaceEvent }

export class Following {
  private readonly off: () => void
  /** The reload running now, if one is. */
  private running: Promise<void> | undefined
  /** A commit (or the promotion) was heard while a reload ran: one more follows it. */
  private again: 'commit' | 'writer' | undefined
  private closed = false
  /** Whether the first workspace is in the session's place (until then a change heard waits in `again`). */
  private started = false

  constructor(
    readonly store: Store,
    readonly lower: LowerSource,
    /** Opens a workspace on the leased store and lower. */
    private readonly open: (store: Store, lower: LowerSource) => Promise<Workspace>,
    /** The workspace the session has now. */
    private readonly current: () => Workspace | undefined,
    /** Puts a reopened workspace in the session's place (or closes it, when the session is gone). */
    private readonly swap: (reopened: Reopened) => Promise<void>,
    /** A reload failed: the session keeps the workspace it had. */
    private readonly failed: (error: unknown) => void,
  ) {
    this.off = store.onChange!((change) => {
      // A writer hears no commits of its own; a promotion always reopens.
      if (change.kind === 'commit' && !store.readOnly) return
      this.request(change.kind)
    })
  }

  /** The first workspace; the session calls `begin()` once it holds it. */
  first(): Promise<Workspace> {
    return this.open(lease(this.store), lease(this.lower))
  }

  /**
   * The first workspace is in the session's place: what was heard while it opened reloads now (it
   * may have read the store before that commit, or as a follower before this tab was promoted).
   */
  begin(): void {
    this.started = true
    const next = this.again
    this.again = undefined
    if (next) this.request(next)
  }

  private request(kind: 'commit' | 'writer'): void {
    if (this.closed) return
    if (this.running || !this.started) {
      if (this.again !== 'writer') this.again = kind
      return
    }
    this.running = this.reload(kind).finally(() => {
      this.running = undefined
      const next = this.again
      this.again = undefined
      if (next) this.request(next)
    })
  }

  private async reload(kind: 'commit' | 'writer'): Promise<void> {
    const previous = this.current()
    if (!previous) return
    let ws: Workspace
    try {
      ws = await this.open(lease(this.store), lease(this.lower))
    } catch (error) {
      this.failed(error)
      return
    }
    const event: WorkspaceEvent =
      kind === 'writer'
        ? { type: 'writer', reason: `this tab took over writing the ${this.store.kind} store: the tab that wrote it went away` }
        : reloadEvent(changedOperations(previous, ws))
    await this.swap({ ws, event })
  }

  /** Waits for a reload in flight (tests, close). */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }

  /** Stops following: no reload starts from here on; one in flight finishes. */
  async stop(): Promise<void> {
    this.closed = true
    this.off()
    await this.idle()
  }

  /** Closes the store and the lower source the workspaces shared (after the last workspace closed). */
  async release(): Promise<void> {
    try {
      await this.store.close?.()
    } finally {
      await this.lower.close?.()
    }
  }
}

function reloadEvent(operations: Operation[]): WorkspaceEvent {
  const paths = new Set<string>()
  for (const op of operations) for (const path of op.paths) paths.add(path)
  return { type: 'reload', operations, paths: [...paths].sort() }
}
