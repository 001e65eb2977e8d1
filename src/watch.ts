/**
 * `rewindfs/watch`: fs.watch, fs.promises.watch and fs.watchFile for a workspace, as a capability
 * passed to it (`Workspace.open({ watch: fsWatch })`), so the core entry does not carry them. The
 * events are inotify's on Linux (src/fs/watch.ts); the change feed they read is the core's.
 */
import { type Watching, WatchRegistry } from './fs/watch.js'

export type { FSWatcher, StatWatcher, WatchEventType, Watches, Watching } from './fs/watch.js'

/** The watching capability: pass it as `Workspace.open({ watch: fsWatch })`; forks and transactions' staged fs inherit it. */
export const fsWatch: Watching = (ops) => new WatchRegistry(ops)
