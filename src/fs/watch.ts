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
import { abortError } from './write-data.js'
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
  /** Its birth time: with ino, what tells its inode's other names (hard links) in notifications. */
  readonly born: number
  readonly type: EntryType
  /** What self events are named: the basename of the path as the caller gave it. */
  readonly label: string
  readonly recursive: boolean
  /** The inode is gone: inotify sent IN_IGNORED, nothing more comes. */
  ended: boolean
  /** Its place among the watches, in the order they started (events go to them in that order). */
  readonly order: number
  /** The last event queued in delivery round `lastRound`, as (mask, name): the kernel merges a repeat. */
  last: string
  lastRound: number
  deliver(events: readonly (readonly [WatchEventType, string])[]): void
  /** The workspace closed. */
  end(): void
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
function eventsFor(watch: Watch, notifications: readonly Notification[], round: number): [WatchEventType, string][] {
  const out: [WatchEventType, string][] = []
  const push = (type: WatchEventType, name: string, mask: string) => {
    const key = `${mask}\0${name}`
    if (key === watch.last && watch.lastRound === round) return
    watch.last = key
    watch.lastRound = round
    out.push([type, name])
  }
  for (const n of notifications) {
    if (watch.ended) break
    if (n.shared && n.ino === watch.ino && n.born === watch.born && watch.type !== 'dir' && n.to === undefined && n.from === undefined) {
      // The watched inode through any of its names (hard links): writes, and its link count as an
      // attribute change; it ends with its last name. A watched name removed leaves the watch on it.
      if (n.kind === 'delete' && (n.links ?? 1) <= 1) {
        push('change', watch.label, 'attrib')
        push('rename', watch.label, 'delete-self')
        push('rename', watch.label, 'ignored')
        watch.ended = true
      } else {
        push('change', watch.label, n.kind === 'modify' ? 'modify' : 'attrib')
        if (n.path === watch.path && n.kind === 'delete') watch.path = ''
      }
      continue
    }
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

/**
 * Node's watch error: its fields in Node's order, and the path again as `filename`. Node's JS
 * UVException leaves an empty path out (of the message and the fields) but keeps it as `filename`.
 */
function watchError(error: FsError, given: string): Error {
  if (given === '') {
    const failure = new Error(new FsError(error.code, 'watch').message)
    return Object.assign(failure, { errno: error.errno, syscall: 'watch', code: error.code, filename: given })
  }
  const failure = new Error(new FsError(error.code, 'watch', given).message)
  return Object.assign(failure, { errno: error.errno, syscall: 'watch', code: error.code, path: given, filename: given })
}


const DISPOSE: typeof Symbol.dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose')

interface Timer {
  ref?(): unknown
  unref?(): unknown
}

/** One watch's events, in order: (eventType, filename relative to the watched path). */
export type WatchEvents = readonly (readonly [WatchEventType, string])[]

/** Where a watch's events go. */
export interface WatchSink {
  events(events: WatchEvents): void
  /**
   * The watch is over without being closed by its owner: it never started (`started` false, with
   * Node's watch error), or what it watched went away (a worker closed or crashed).
   */
  end(error: Error | undefined, started: boolean): void
}

/**
 * Starts a watch on `given` (a validated path, as the caller gave it) and returns the function that
 * stops it. In process it throws Node's watch error at once; across a worker the answer comes later
 * and a failed start is told to `sink.end`.
 */
export type StartWatch = (given: string, recursive: boolean, sink: WatchSink) => () => void

/** fs.watch(filename, options?, listener?) over `start`: an FSWatcher emitting 'change' (eventType, filename). */
export function createWatcher(start: StartWatch, filename: unknown, options?: unknown, listener?: unknown): FSWatcher {
  if (typeof options === 'function') {
    listener = options
    options = {}
  }
  const opts = watchOptions(options)
  const given = pathArgument(filename, 'filename', 'watch')
  const emitter = new EventEmitter() as unknown as Emitter & FSWatcher
  let closed = false
  const name = (text: string) => filenameIn(text, opts.encoding)
  const stop = start(given, opts.recursive, {
    events: (events) => {
      for (const [type, file] of events) {
        if (closed) return
        emitter.emit('change', type, name(file))
      }
    },
    end: (error, started) => {
      if (closed) return
      if (!started) {
        // As Node's FSWatcher when its handle fails: closed without 'close', the error told.
        closed = true
        emitter.emit('error', error)
        return
      }
      if (error && emitter.listenerCount('error') > 0) emitter.emit('error', error)
      close()
    },
  })
  if (typeof listener === 'function') emitter.on('change', listener as Listener)
  const close = () => {
    if (closed) return
    closed = true
    stop()
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
 * fs.promises.watch over `start`: an async iterator of { eventType, filename }. Events are queued
 * (up to `maxQueue`, then dropped or, with overflow: 'throw', an error), as newer Node does; the
 * signal ends it with an AbortError.
 */
export function watchIterator(start: StartWatch, filename: unknown, options?: unknown): AsyncGenerator<{ eventType: WatchEventType; filename: string | Uint8Array }> {
  return (async function* () {
    const opts = watchOptions(options ?? {})
    const maxQueue = opts.maxQueue
    if (opts.signal?.aborted) throw abortError(opts.signal)
    const given = pathArgument(filename, 'filename', 'watch')
    const queue: { eventType: WatchEventType; filename: string | Uint8Array }[] = []
    let overflowed = false
    let ended: { error: Error | undefined } | undefined
    let wake: (() => void) | undefined
    const stop = start(given, opts.recursive, {
      events: (events) => {
        for (const [eventType, file] of events) {
          if (queue.length >= maxQueue) {
            if (opts.overflow === 'throw') overflowed = true
            continue
          }
          queue.push({ eventType, filename: filenameIn(file, opts.encoding) })
        }
        wake?.()
      },
      end: (error) => {
        ended = { error }
        wake?.()
      },
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
        if (ended) {
          if (ended.error) throw ended.error
          return
        }
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
      }
    } finally {
      opts.signal?.removeEventListener('abort', abort)
      stop()
    }
  })()
}

/** fs.watch, fs.promises.watch, fs.watchFile and fs.unwatchFile of one fs layer. */
export interface Watches {
  watch(filename: unknown, options?: unknown, listener?: unknown): FSWatcher
  iterate(filename: unknown, options?: unknown): AsyncGenerator<{ eventType: WatchEventType; filename: string | Uint8Array }>
  watchFile(filename: unknown, options?: unknown, listener?: unknown): StatWatcher
  unwatchFile(filename: unknown, listener?: unknown): void
}

/**
 * The watching capability (`watching` from rewindfs/watch, passed as `Workspace.open({ watch })`):
 * what the fs surface's watch members run on. Without it they are ENOSYS.
 */
export type Watching = (ops: FsOperations) => Watches

export class WatchRegistry implements Watches {
  private readonly watches = new Set<Watch>()
  /** The watches by the path of what they watch: a batch asks only those on its paths and above. */
  private readonly byPath = new Map<string, Set<Watch>>()
  private started = 0
  /** Delivery rounds so far: a watch's last event merges only with a repeat in the same round. */
  private round = 0
  private unsubscribe: (() => void) | undefined
  private readonly statWatchers = new Map<string, StatWatcherState>()
  /** Work counters (the complexity tests read them): watches asked about a batch. */
  readonly counters = { asked: 0 }

  constructor(private readonly ops: FsOperations) {}

  private batch(batch: ChangeBatch): void {
    const notifications = batch.notifications
    if (notifications.length === 0) return
    for (const watch of this.concerned(notifications)) {
      if (watch.ended) continue
      const at = watch.path
      this.counters.asked++
      const events = eventsFor(watch, notifications, this.round)
      if (watch.path !== at) this.moved(watch, at)
      if (events.length > 0) watch.deliver(events)
    }
  }

  /**
   * The watches a batch may concern, in the order they started: those on a notification's path,
   * its directory or a directory above it (recursive watches). Every watch where a notification
   * can move watches it does not name (a directory renamed above them, another name of an inode):
   * with thousands of watches (a watcher per directory, as chokidar makes), asking each of them
   * about every batch made a watched write O(watches).
   */
  private concerned(notifications: readonly Notification[]): Watch[] {
    const found = new Set<Watch>()
    for (const n of notifications) {
      if (n.shared || (n.kind === 'delete' && n.to !== undefined && n.type === 'dir')) return [...this.watches]
      for (let at = n.path; ; at = dirname(at)) {
        const here = this.byPath.get(at)
        if (here) for (const watch of here) found.add(watch)
        if (at === '/' || at === '') break
      }
    }
    return [...found].sort((a, b) => a.order - b.order)
  }

  private index(watch: Watch, path: string): void {
    let here = this.byPath.get(path)
    if (here === undefined) this.byPath.set(path, (here = new Set()))
    here.add(watch)
  }

  private unindex(watch: Watch, path: string): void {
    const here = this.byPath.get(path)
    if (here?.delete(watch) && here.size === 0) this.byPath.delete(path)
  }

  private moved(watch: Watch, from: string): void {
    this.unindex(watch, from)
    this.index(watch, watch.path)
  }

  /** Starts a watch on what `given` names now; errors are Node's ('watch', with `filename`), thrown at once. */
  readonly start: StartWatch = (given, recursive, sink) => {
    // Resolved as the kernel does (not lexically first): 'file/' is ENOTDIR, 'link/..' is physical.
    const path = given === '' ? '' : absolute(given, this.ops.cwd)
    let entry
    try {
      entry = this.ops.overlay.resolve(path, 'watch', true, given)
    } catch (error) {
      if (!(error instanceof FsError)) throw error
      throw watchError(error, given)
    }
    const meta = this.ops.overlay.meta(entry)
    const watch: Watch = {
      path: entry.path,
      ino: meta.ino,
      born: meta.birthtimeMs,
      type: entry.type,
      // libuv names self events after what follows the last '/' of the path as given ('' for 'dir/').
      label: given.slice(given.lastIndexOf('/') + 1),
      recursive,
      ended: false,
      order: this.started++,
      last: '',
      lastRound: -1,
      deliver: (events) => sink.events(events),
      end: () => sink.end(undefined, true),
    }
    this.watches.add(watch)
    this.index(watch, watch.path)
    this.unsubscribe ??= this.ops.changes.subscribe({
      paths: true,
      batch: (batch) => this.batch(batch),
      delivered: () => {
        this.round++
      },
      closed: () => {
        // The workspace closed: every watcher closes ('close'), every iterator ends.
        const watches = [...this.watches]
        this.watches.clear()
        this.byPath.clear()
        this.unsubscribe = undefined
        for (const watch of watches) watch.end()
      },
    })
    return () => this.remove(watch)
  }

  private remove(watch: Watch): void {
    if (!this.watches.delete(watch)) return
    this.unindex(watch, watch.path)
    if (this.watches.size === 0) {
      this.unsubscribe?.()
      this.unsubscribe = undefined
    }
  }

  /** fs.watch(filename, options?, listener?). */
  watch(filename: unknown, options?: unknown, listener?: unknown): FSWatcher {
    return createWatcher(this.start, filename, options, listener)
  }

  /** fs.promises.watch(filename, options?). */
  iterate(filename: unknown, options?: unknown): AsyncGenerator<{ eventType: WatchEventType; filename: string | Uint8Array }> {
    return watchIterator(this.start, filename, options)
  }

  /**
   * fs.watchFile: Node's StatWatcher. The stat of the path is polled every `interval` ms; a change
   * (times, size, mode, owner, inode) calls listeners with (current, previous). A missing file has
   * the zeroed stat, and is reported once when first polled. One watcher per path, shared.
   */
  watchFile(filename: unknown, options?: unknown, listener?: unknown): StatWatcher {
    const given = pathArgument(filename, 'filename', 'watch')
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
      // Node polls path.resolve(filename): 'file/' is the file, '..' folded lexically.
      state = new StatWatcherState(this.ops, path, interval, opts.bigint === true, opts.persistent !== false)
      this.statWatchers.set(path, state)
      state.start()
    }
    state.emitter.on('change', listener as Listener)
    return state.emitter
  }

  /** fs.unwatchFile: removes one listener, or all; the watcher stops when none is left. */
  unwatchFile(filename: unknown, listener?: unknown): void {
    const given = pathArgument(filename, 'filename', 'watch')
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
export function filenameIn(name: string, encoding: Encoding | 'buffer'): string | Uint8Array {
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
