/**
 * The worker's side of watching across the channel. The page's watches run here as fs.watch on the
 * workspace and its ws.events listeners as ws.events listeners (one source of truth for what is
 * reported); what they are told goes to the page in one message per delivery of the change feed
 * (one operation, or every operation that ended in one task, such as a batch), never one per path,
 * and before the answer to the call that caused it.
 */
import type { WorkspaceEvent, WorkspaceEventType } from '../src/engine/events.js'
import type { Workspace } from '../src/workspace.js'
import { EVENTS_MESSAGE } from './constants.js'
import type { EventItem, EventsMessage, StatusRecord } from './protocol.js'

export class EventRelay {
  private outbox: EventItem[] = []
  private scheduled = false

  constructor(private readonly post: (message: EventsMessage) => void) {}

  /** Starts the page's watch `id` on `ws`; Node's watch error is thrown at once. Returns the function that stops it. */
  watch(handle: number, ws: Workspace, id: number, path: string, recursive: boolean): () => void {
    const watcher = ws.fs.watch(path, { recursive }, (type, name) => this.watchEvent(handle, id, type, String(name)))
    return () => watcher.close()
  }

  /** Relays the ws.events of `types`; returns the function that stops. */
  events(handle: number, ws: Workspace, types: readonly WorkspaceEventType[]): () => void {
    const offs = types.map((type) => ws.events.on(type, (event) => this.push({ handle, event: event as WorkspaceEvent })))
    return () => {
      for (const off of offs) off()
    }
  }

  /** An event the worker makes itself (a follower's 'reload' and 'writer'), for a page that listens for it. */
  emit(handle: number, event: WorkspaceEvent): void {
    this.push({ handle, event })
  }

  /** A session's status changed outside any call (a follower reloaded, or became the writer). */
  status(handle: number, status: StatusRecord): void {
    this.push({ handle, status })
  }

  /**
   * A follower's watch moved to the reloaded workspace: it is told the paths the writer changed
   * under what it watches, as Node would ('rename' for a path that came or went, 'change' for one
   * changed in place; names relative to the watched directory, direct children only unless recursive).
   */
  reloaded(handle: number, id: number, watch: { readonly path: string; readonly recursive: boolean }, paths: readonly string[], before: Workspace, after: Workspace): void {
    const exists = (ws: Workspace, path: string) => {
      try {
        ws.fs.lstatSync(path)
        return true
      } catch {
        return false
      }
    }
    const root = watch.path === '/' ? '' : watch.path
    for (const path of paths) {
      let name: string
      if (path === watch.path) name = path.slice(path.lastIndexOf('/') + 1)
      else if (path.startsWith(`${root}/`)) name = path.slice(root.length + 1)
      else continue
      if (!watch.recursive && name.includes('/')) continue
      this.watchEvent(handle, id, exists(before, path) === exists(after, path) ? 'change' : 'rename', name)
    }
  }

  /** Posts what was collected: after each delivery, and before each answer (a call's events reach the page first). */
  flush(): void {
    this.scheduled = false
    if (this.outbox.length === 0) return
    const items = this.outbox
    this.outbox = []
    this.post({ kind: EVENTS_MESSAGE, items })
  }

  /** One watch's events in a row travel as one flat list. */
  private watchEvent(handle: number, watch: number, type: string, name: string): void {
    const tail = this.outbox[this.outbox.length - 1]
    if (tail && 'watch' in tail && tail.handle === handle && tail.watch === watch) tail.events.push(type, name)
    else this.push({ handle, watch, events: [type, name] })
  }

  private push(item: EventItem): void {
    this.outbox.push(item)
    if (this.scheduled) return
    this.scheduled = true
    // The feed delivers every listener in one go: the flush queued here runs once it is done.
    queueMicrotask(() => this.flush())
  }
}
