/**
 * fs.watch and fs.promises.watch on the page's side. Each watch runs in the worker (fs.watch on the
 * workspace, so what is reported is decided in one place) under a number of this side's; its
 * events arrive in the worker's event messages and go to the watcher here. Options, encodings,
 * signals and the queue of fs.promises.watch are this side's (src/fs/watch.ts).
 */
import type { StartWatch, WatchEventType, WatchSink } from '../src/fs/watch.js'

export class RemoteWatches {
  private readonly sinks = new Map<number, WatchSink>()
  private next = 1

  constructor(private readonly send: (message: object) => Promise<unknown>) {}

  /** Asks the worker to watch; a watch it cannot start (ENOENT…) ends with Node's watch error. */
  readonly start: StartWatch = (given, recursive, sink) => {
    const id = this.next++
    this.sinks.set(id, sink)
    this.send({ t: 'watch', op: 'start', id, path: given, recursive }).catch((error: Error) => {
      if (this.sinks.delete(id)) sink.end(error, false)
    })
    return () => {
      if (!this.sinks.delete(id)) return
      // The workspace may be closed already: then there is nothing left to stop.
      this.send({ t: 'watch', op: 'stop', id }).catch(() => undefined)
    }
  }

  /** Watch `id`'s events, as the worker sent them: flat (eventType, filename) pairs. */
  deliver(id: number, flat: readonly string[]): void {
    const sink = this.sinks.get(id)
    if (!sink) return // stopped here while its events were on their way
    const events: [WatchEventType, string][] = []
    for (let i = 0; i + 1 < flat.length; i += 2) events.push([flat[i] === 'change' ? 'change' : 'rename', flat[i + 1]])
    sink.events(events)
  }

  /** The workspace closed (no error) or its worker crashed: every watch ends. */
  end(error?: Error): void {
    const sinks = [...this.sinks.values()]
    this.sinks.clear()
    for (const sink of sinks) sink.end(error, true)
  }
}
