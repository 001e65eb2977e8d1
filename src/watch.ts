/**
 * `rewindfs/watch`: knowing which paths changed, as a capability passed to a workspace
 * (`Workspace.open({ watch: watching })`), so the core entry does not carry it: the notifications
 * derived from the overlay's changes (src/engine/path-changes.ts) and what reads them, fs.watch,
 * fs.promises.watch and ws.events 'change' (src/fs/watch.ts), with fs.watchFile. The events are
 * inotify's on Linux; the change feed that orders and delivers them is the core's.
 */
import { PathChanges } from './engine/path-changes.js'
import { type Watching, WatchRegistry } from './fs/watch.js'

export type { FSWatcher, StatWatcher, WatchEventType, Watches, Watching } from './fs/watch.js'

/** The watching capability: pass it as `Workspace.open({ watch: watching })`; forks and transactions' staged fs inherit it. */
export const watching: Watching = (ops) => {
  const paths = new PathChanges(ops.overlay, ops.changes)
  ops.overlay.observer = paths
  ops.changes.deriver = paths
  return new WatchRegistry(ops)
}
