/**
 * fs.watch, fs.promises.watch and fs.watchFile over the workspace's change feed. Events are what
 * inotify-backed watchers report on Linux (checked against node:fs on a real directory): a watch
 * is on the inode a path names (a directory's entries, or the file itself); an entry created,
 * deleted or renamed is 'rename', a write or an attribute change of a file is 'change', any change
 * to a directory is 'rename' (inotify flags it IN_ISDIR); identical consecutive events of one
 * operation coalesce, as the kernel's queue does. A watch follows its inode through renames and
 * ends when the inode goes ('change' for a file's link count, then 'rename' twice). `recursive`
 * reports every path below as a watch on its directory would, relative to the watched one. Every
 * change to the view is seen, whatever made it (fs calls, undo, redo, restore, reset,
 * transactions, exec), one batch per operation, delivered asynchronously. Changes made to the lower
 * source by other programs are not seen.
 */
import { type Encoding, decode, encode, toCallerBytes } from '../bytes.js'
import type { ChangeBatch, Notification } from '../engine/change-feed.js'
import { FsError } from '../errors.js'
import type { EntryType } from '../lower/source.js'
import { absolute, basename, dirname, isWithin, normalize } from '../path.js'
import { encodingOption, pathArgument, validateBoolean, validateFunction, validateInteger, validateObject } from './arguments.js'
import { type Emitter, EventEmitter } from './emitter.js'
import type { FsOperations } from './operations.js'
import { type Stats, zeroStats } from './stats.js'

type Listener = (...args: unknown[]) => void

export type WatchEventType = 'rename' | 'change'

/** One watch: an inotify-like mark on the inode a path named when it started. */
interface Watch {
  /** Where the inode is now (a rename of it or of a directory above moves the watch along). */
  path: string
  readonly ino: number
  readonly type: EntryType
  /** What self events are named: the basename of the path as the caller gave it. */
  readonly label: string
  readonly recursive: boolean
  /** The inode is gone: inotify sent IN_IGNORED, nothing more comes. */
  ended: boolean
  /** The last event queued in this delivery round, as (mask, name): the kernel merges a repeat. */
  last: string
  deliver(events: readonly (readonly [WatchEventType, string])[]): void
}

/** What a watch on a path's directory reports for a notification about that path. */
function parentEvent(n: Notification): WatchEventType {
  return (n.kind === 'modify' || n.kind === 'attrib') && n.type !== 'dir' ? 'change' : 'rename'
}

/**
 * The events a watch reports for one batch (one operation). The kernel's queue merges an event
 * identical to the one before it (same mask, same name) until the process reads the queue, which
 * Node does between turns of its event loop: so repeats merge across the operations of one
 * synchronous run (a round), and two events Node shows alike do not (a copy's truncate, fchmod and
 * data are three 'change' events).
 */
function eventsFor(watch: Watch, notifications: readonly Notification[]): [WatchEventType, string][] {
  const out: [WatchEventType, string][] = []
  const push = (type: WatchEventType, name: string, mask: string) => {
    const key = `${mask}\0${name}`
    if (key === watch.last) return
    watch.last = key
    out.push([type, name])
  }
  for (const n of notifications) {
    if (watch.ended) break
    if (n.path === watch.path) {
      if (n.kind === 'modify' || n.kind === 'attrib') push(watch.type === 'dir' ? 'rename' : 'change', watch.label, n.kind)
      else if (n.kind === 'delete' && n.ino === watch.ino && n.to !== undefined) {
        push('rename', watch.label, 'move-self') // the watch goes with its inode
        watch.path = n.to
      } else if ((n.kind === 'delete' && n.ino === watch.ino) || (n.kind === 'replace' && n.replaced === watch.ino)) {
        // The inode is gone: its link count (a file's IN_ATTRIB), IN_DELETE_SELF, IN_IGNORED.
        if (watch.type !== 'dir') push('change', watch.label, 'attrib')
        push('rename', watch.label, 'delete-self')
        push('rename', watch.label, 'ignored')
        watch.ended = true
      }
      continue
    }
    if (watch.type === 'dir') {
      if (dirname(n.path) === watch.path) push(parentEvent(n), basename(n.path), n.kind)
      else if (watch.recursive && isWithin(n.path, watch.path)) push(parentEvent(n), n.path.slice(watch.path === '/' ? 1 : watch.path.length + 1), n.kind)
    }
    // A directory above the watched inode was renamed: the watch is now under the new name.
    if (n.kind === 'delete' && n.to !== undefined && n.type === 'dir' && isWithin(watch.path, n.path)) watch.path = n.to + watch.path.slice(n.path.length)
  }
  return out
}

export interface FSWatcher {
  on(event: 'change', listener: (eventType: WatchEventType, filename: string | Uint8Array) => void): this
  on(event: 'close' | 'error', listener: Listener): this
  on(event: string, listener: Listener): this
  close(): void
  ref(): this
  unref(): this
  [Symbol.dispose](): void
}

export interface StatWatcher {
  on(event: 'change', listener: (current: Stats, previous: Stats) => void): this
  on(event: string, listener: Listener): this
  start(): void
  stop(): void
  ref(): this
  unref(): this
}

/** Node's AbortError: name 'AbortError', code 'ABORT_ERR', the signal's reason as its cause. */
function abortError(signal: AbortSignal | undefined): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal?.reason }), { name: 'AbortError', code: 'ABORT_ERR' })
}

const DISPOSE: typeof Symbol.dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose')

interface Timer {
  ref?(): unknown
  unref?(): unknown
}

export class WatchRegistry {
  private readonly watches = new Set<Watch>()
  private unsubscribe: (() => void) | undefined
  private readonly statWatchers = new Map<string, StatWatcherState>()

  constructor(private readonly ops: FsOperations) {}

  private batch(batch: ChangeBatch): void {
    if (batch.notifications.length === 0) return
    for (const watch of [...this.watches]) {
      if (watch.ended) continue
      const events = eventsFor(watch, batch.notifications)
      if (events.length > 0) watch.deliver(events)
    }
  }

  /** Starts a watch on what `filename` names now; errors are Node's ('watch', with `filename`). */
  private add(filename: unknown, recursive: boolean, deliver: Watch['deliver']): Watch {
    const given = pathArgument(filename, 'filename')
    const path = given === '' ? '' : normalize(absolute(given, this.ops.cwd))
    let entry
    try {
      entry = this.ops.overlay.resolve(path, 'watch', true, given)
    } catch (error) {
      if (!(error instanceof FsError)) throw error
      // Node's watch errors carry their fields in this order, and the path again as `filename`.
      const failure = new Error(new FsError(error.code, 'watch', given).message)
      throw Object.assign(failure, { errno: error.errno, syscall: 'watch', code: error.code, path: given, filename: given })
    }
    const watch: Watch = {
      path: entry.path,
      ino: this.ops.overlay.meta(entry).ino,
      type: entry.type,
      // libuv names self events after what follows the last '/' of the path as given ('' for 'dir/').
      label: given.slice(given.lastIndexOf('/') + 1),
      recursive,
      ended: false,
      last: '',
      deliver,
    }
    this.watches.add(watch)
    this.unsubscribe ??= this.ops.changes.subscribe({
      paths: true,
      batch: (batch) => this.batch(batch),
      delivered: () => {
        for (const watch of this.watches) watch.last = ''
      },
    })
    return watch
  }

  private remove(watch: Watch): void {
    this.watches.delete(watch)
    if (this.watches.size === 0) {
      this.unsubscribe?.()
      this.unsubscribe = undefined
    }
  }

  /** fs.watch(filename, options?, listener?): an FSWatcher emitting 'change' (eventType, filename). */
  watch(filename: unknown, options?: unknown, listener?: unknown): FSWatcher {
    if (typeof options === 'function') {
      listener = options
      options = {}
    }
    const opts = watchOptions(options)
    const emitter = new EventEmitter() as unknown as Emitter & FSWatcher
    let closed = false
    const name = (text: string) => filenameIn(text, opts.encoding)
    const watch = this.add(filename, opts.recursive, (events) => {
      for (const [type, file] of events) {
        if (closed) return
        emitter.emit('change', type, name(file))
      }
    })
    if (typeof listener === 'function') emitter.on('change', listener as Listener)
    const close = () => {
      if (closed) return
      closed = true
      this.remove(watch)
      queueMicrotask(() => emitter.emit('close'))
    }
    Object.assign(emitter, {
      close,
      ref: () => emitter,
      unref: () => emitter,
      [DISPOSE]: close,
    })
    if (opts.signal) {
      if (opts.signal.aborted) queueMicrotask(close)
      else opts.signal.addEventListener('abort', close, { once: true })
    }
    return emitter
  }

  /**
   * fs.promises.watch: an async iterator of { eventType, filename }. Events are queued (up to
   * `maxQueue`, then dropped or, with overflow: 'throw', an error), as newer Node does; the
   * signal ends it with an AbortError.
   */
  iterate(filename: unknown, options?: unknown): AsyncGenerator<{ eventType: WatchEventType; filename: string | Uint8Array }> {
    const registry = this
    return (async function* () {
      const opts = watchOptions(options ?? {})
      const maxQueue = opts.maxQueue
      if (opts.signal?.aborted) throw abortError(opts.signal)
      const queue: { eventType: WatchEventType; filename: string | Uint8Array }[] = []
      let overflowed = false
      let wake: (() => void) | undefined
      const watch = registry.add(filename, opts.recursive, (events) => {
        for (const [eventType, file] of events) {
          if (queue.length >= maxQueue) {
            if (opts.overflow === 'throw') overflowed = true
            continue
          }
          queue.push({ eventType, filename: filenameIn(file, opts.encoding) })
        }
        wake?.()
      })
      const abort = () => wake?.()
      opts.signal?.addEventListener('abort', abort, { once: true })
      try {
        for (;;) {
          if (opts.signal?.aborted) throw abortError(opts.signal)
          if (overflowed) throw Object.assign(new Error(`fs.watch maxQueue exceeded`), { code: 'ERR_FS_WATCH_QUEUE_OVERFLOW' })
          if (queue.length > 0) {
            yield queue.shift()!
            continue
          }
          await new Promise<void>((resolve) => (wake = resolve))
          wake = undefined
        }
      } finally {
        opts.signal?.removeEventListener('abort', abort)
        registry.remove(watch)
      }
    })()
  }

  /**
   * fs.watchFile: Node's StatWatcher. The stat of the path is polled every `interval` ms; a change
   * (times, size, mode, owner, inode) calls listeners with (current, previous). A missing file has
   * the zeroed stat, and is reported once when first polled. One watcher per path, shared.
   */
  watchFile(filename: unknown, options?: unknown, listener?: unknown): StatWatcher {
    const given = pathArgument(filename, 'filename')
    if (typeof options === 'function') {
      listener = options
      options = {}
    }
    const opts = (options ?? {}) as { interval?: unknown; persistent?: unknown; bigint?: unknown }
    validateObject(opts, 'options')
    const interval = opts.interval === undefined ? 5007 : validateInteger(opts.interval, 'interval', 0, 2 ** 31 - 1)
    if (opts.persistent !== undefined) validateBoolean(opts.persistent, 'persistent')
    validateFunction(listener, 'listener')
    const path = normalize(absolute(given, this.ops.cwd))
    let state = this.statWatchers.get(path)
    if (!state) {
      state = new StatWatcherState(this.ops, given, interval, opts.bigint === true, opts.persistent !== false)
      this.statWatchers.set(path, state)
      state.start()
    }
    state.emitter.on('change', listener as Listener)
    return state.emitter
  }

  /** fs.unwatchFile: removes one listener, or all; the watcher stops when none is left. */
  unwatchFile(filename: unknown, listener?: unknown): void {
    const given = pathArgument(filename, 'filename')
    const path = normalize(absolute(given, this.ops.cwd))
    const state = this.statWatchers.get(path)
    if (!state) return
    if (typeof listener === 'function') state.emitter.removeListener('change', listener as Listener)
    else state.emitter.removeAllListeners('change')
    if (state.emitter.listenerCount('change') === 0) {
      state.stop()
      this.statWatchers.delete(path)
    }
  }
}

/** A filename in the watcher's encoding: a Buffer for 'buffer' (a Uint8Array off Node), else text. */
function filenameIn(name: string, encoding: Encoding | 'buffer'): string | Uint8Array {
  if (encoding === 'utf8' || encoding === 'utf-8') return name
  const bytes = encode(name)
  return encoding === 'buffer' ? toCallerBytes(bytes) : decode(bytes, encoding)
}

/** The options fs.watch and fs.promises.watch take, validated as Node does. */
function watchOptions(options: unknown) {
  const opts = (typeof options === 'string' ? { encoding: options } : (options ?? {})) as {
    recursive?: unknown
    persistent?: unknown
    encoding?: unknown
    signal?: unknown
    maxQueue?: unknown
    overflow?: unknown
  }
  validateObject(opts, 'options')
  if (opts.recursive !== undefined) validateBoolean(opts.recursive, 'options.recursive')
  if (opts.persistent !== undefined) validateBoolean(opts.persistent, 'options.persistent')
  const encoding = encodingOption(opts, 'utf8') ?? 'utf8'
  const signal = opts.signal as AbortSignal | undefined
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || !('aborted' in signal))) {
    throw Object.assign(new TypeError(`The "options.signal" property must be an instance of AbortSignal.`), { code: 'ERR_INVALID_ARG_TYPE' })
  }
  const maxQueue = opts.maxQueue === undefined ? 2048 : validateInteger(opts.maxQueue, 'options.maxQueue', 0)
  const overflow = opts.overflow === undefined ? 'ignore' : opts.overflow
  if (overflow !== 'ignore' && overflow !== 'throw') {
    throw Object.assign(new TypeError(`The property 'options.overflow' must be one of: 'ignore', 'throw'. Received ${String(overflow)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  return { recursive: opts.recursive === true, encoding, signal, maxQueue, overflow }
}

/** One polled path: uv_fs_poll's rules on top of the workspace's stat. */
class StatWatcherState {
  readonly emitter: Emitter & StatWatcher
  private timer: (ReturnType<typeof setInterval> & Timer) | undefined
  private previous: Stats | undefined
  /** The error code of the last poll, if it failed. */
  private failed: string | undefined
  private referenced: boolean

  constructor(
    private readonly ops: FsOperations,
    private readonly path: string,
    private readonly interval: number,
    private readonly bigint: boolean,
    persistent: boolean,
  ) {
    this.referenced = persistent
    const emitter = new EventEmitter() as unknown as Emitter & StatWatcher
    Object.assign(emitter, {
      start: () => this.start(),
      stop: () => this.stop(),
      ref: () => {
        this.referenced = true
        this.timer?.ref?.()
        return emitter
      },
      unref: () => {
        this.referenced = false
        this.timer?.unref?.()
        return emitter
      },
    })
    this.emitter = emitter
  }

  start(): void {
    if (this.timer !== undefined) return
    // The first poll sets the baseline; a path that cannot be stat()ed is reported at once (zeroed).
    queueMicrotask(() => this.poll())
    this.timer = setInterval(() => this.poll(), Math.max(1, this.interval)) as ReturnType<typeof setInterval> & Timer
    if (!this.referenced) this.timer.unref?.()
  }

  stop(): void {
    if (this.timer === undefined) return
    clearInterval(this.timer)
    this.timer = undefined
    queueMicrotask(() => this.emitter.emit('stop'))
  }

  private poll(): void {
    if (this.timer === undefined) return
    let current: Stats
    let failure: string | undefined
    try {
      current = this.ops.stat(this.path, { bigint: this.bigint }) as Stats
    } catch (error) {
      failure = (error as { code?: string }).code ?? 'EIO'
      current = zeroStats(this.bigint) as Stats
    }
    const previous = this.previous ?? (zeroStats(this.bigint) as Stats)
    const first = this.previous === undefined && this.failed === undefined
    if (failure !== undefined) {
      // A failure is reported when it is new (not again while the path stays missing).
      if (this.failed !== failure) this.emitter.emit('change', current, previous)
      this.failed = failure
      this.previous = current
      return
    }
    const wasFailing = this.failed !== undefined
    this.failed = undefined
    this.previous = current
    if (!first && (wasFailing || !sameStat(current, previous))) this.emitter.emit('change', current, previous)
  }
}

/** uv_fs_poll's comparison: times (not atime), size, mode, owner, inode, device. */
function sameStat(a: Stats, b: Stats): boolean {
  return (
    a.ctimeMs === b.ctimeMs &&
    a.mtimeMs === b.mtimeMs &&
    a.birthtimeMs === b.birthtimeMs &&
    a.size === b.size &&
    a.mode === b.mode &&
    a.uid === b.uid &&
    a.gid === b.gid &&
    a.ino === b.ino &&
    a.dev === b.dev
  )
}
