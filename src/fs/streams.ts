/**
 * fs.ReadStream and fs.WriteStream over the workspace. They are Node's own classes, given the
 * workspace's callback fs through their `fs` option (a documented part of Node's streams), so
 * events, chunking (highWaterMark, start/end), close(), destroy and errors are Node's exactly. The
 * classes are reached at run time (src/ never imports node:); in a browser these members throw
 * ENOSYS saying why, and FileHandle.readableWebStream is the way to stream there. A stream's own
 * reads and writes call back on a microtask, as memfs's calls do: Node's streams wait for each chunk,
 * and a turn of the event loop per chunk (the fs surface's callbacks) was most of a big file's time;
 * a stream still waits a turn per MiB, so the event loop runs while it streams (see TURN_EVERY).
 */
import { FsError, codedError, typeError } from '../errors.js'
import { builtin } from '../host.js'
import { isNotLoaded } from '../lower/source.js'
import { describeReceived } from './arguments.js'

/** The callback-form members Node's streams call on their `fs` option. */
export interface StreamFs {
  open: (...args: unknown[]) => unknown
  read: (...args: unknown[]) => unknown
  write: (...args: unknown[]) => unknown
  writev: (...args: unknown[]) => unknown
  close: (...args: unknown[]) => unknown
  fsync: (...args: unknown[]) => unknown
  readSync?: (...args: unknown[]) => unknown
  writeSync?: (...args: unknown[]) => unknown
  writevSync?: (...args: unknown[]) => unknown
}

type Callback = (error: unknown, ...results: unknown[]) => void

/**
 * Bytes a stream moves on microtasks before it waits a turn of the event loop. Node's reads and
 * writes each take a turn, so timers and I/O run while a big file streams; on microtasks alone
 * none ran until the whole file was through (a server answered nothing else meanwhile, and an
 * abort from a timer was never seen). A turn per MiB keeps most of the microtasks' speed.
 */
const TURN_EVERY = 1 << 20

/** One stream's count of the bytes it moved since its last turn. */
interface Pace {
  left: number
}

/** Runs `next` on a microtask, or after a turn of the event loop once the stream has moved TURN_EVERY bytes. */
function after(pace: Pace, bytes: unknown, next: () => void): void {
  pace.left -= typeof bytes === 'number' ? bytes : 0
  if (pace.left > 0) return queueMicrotask(next)
  pace.left = TURN_EVERY
  // Streams are Node's (node:fs), so setImmediate is there.
  ;(globalThis as unknown as { setImmediate(run: () => void): void }).setImmediate(next)
}

/**
 * The callback form of `name` for a stream: the sync call, called back with what Node's callback
 * gets (`results` of the value and the arguments), on a microtask or after a turn (see `after`); a
 * file an asynchronous lower source has not loaded yet goes through the ordinary callback form,
 * which loads it first.
 */
function onMicrotask(fs: StreamFs, name: 'read' | 'write' | 'writev', pace: Pace, results: (value: unknown, args: unknown[]) => unknown[]): (...args: unknown[]) => void {
  const sync = fs[`${name}Sync`]
  const slow = fs[name]
  if (sync === undefined) return slow
  return (...args: unknown[]) => {
    const callback = args.pop() as Callback
    let value: unknown
    try {
      value = sync(...args)
    } catch (error) {
      if (isNotLoaded(error)) return void slow(...args, callback)
      queueMicrotask(() => callback(error))
      return
    }
    after(pace, value, () => callback(null, ...results(value, args)))
  }
}

type StreamConstructor = new (path: unknown, options?: Record<string, unknown>) => object

interface HostStreams {
  ReadStream: StreamConstructor
  WriteStream: StreamConstructor
}

export interface StreamClasses {
  ReadStream: StreamConstructor
  WriteStream: StreamConstructor
}

/** Something that stands for an open descriptor of the workspace (our FileHandle). */
export interface HandleLike {
  readonly fd: number
  close(): Promise<void>
  once(event: 'close', listener: () => void): unknown
}

function hostStreams(name: string): HostStreams {
  const fs = builtin<HostStreams>('node:fs')
  if (!fs?.ReadStream) throw new FsError('ENOSYS', name, undefined, undefined, 'function not implemented: Node streams are needed (in a browser, use FileHandle.readableWebStream)')
  return fs
}

/**
 * Options as Node's streams take them, with the workspace as their fs: a string is the encoding; a
 * FileHandle as `fd` is read through and closed with the handle; a caller's own `fs` is kept.
 */
function withWorkspace(path: unknown, options: unknown, fs: StreamFs, isHandle: (value: unknown) => value is HandleLike): Record<string, unknown> {
  // As Node's (a function is taken as no options there): spread, a number or a boolean was {}.
  if (options !== undefined && options !== null && typeof options !== 'string' && typeof options !== 'object' && typeof options !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be one of type string or object.${describeReceived(options)}`)
  }
  const opts: Record<string, unknown> = typeof options === 'string' ? { encoding: options } : { ...((options ?? {}) as Record<string, unknown>) }
  if (opts.fs === undefined) {
    // Opens the path it was given, even if `stream.path` is changed to show another name (mountOver shows host paths).
    const open = fs.open
    const pace: Pace = { left: TURN_EVERY }
    fs = {
      ...fs,
      open: (_path: unknown, ...rest: unknown[]) => open(path, ...rest),
      read: onMicrotask(fs, 'read', pace, (bytes, args) => [bytes, args[1]]),
      write: onMicrotask(fs, 'write', pace, (bytes, args) => [bytes, args[1]]),
      writev: onMicrotask(fs, 'writev', pace, (bytes, args) => [bytes, args[1]]),
    }
  }
  const fd = opts.fd
  if (isHandle(fd)) {
    // As Node's: a FileHandle is read through its own methods, so a caller's `fs` cannot be used.
    if (opts.fs) throw codedError('ERR_METHOD_NOT_IMPLEMENTED', 'The FileHandle with fs method is not implemented')
    opts.fd = fd.fd
    opts.fs ??= {
      ...fs,
      close: (_fd: unknown, callback: (error?: unknown) => void) => void fd.close().then(() => callback(), callback),
    }
  }
  opts.fs ??= fs
  return opts
}

/**
 * A stream class bound to the workspace, made as Node makes its own: a function that is also
 * callable without `new` and applied to an object a subclass made (`Host.apply(this, arguments)`),
 * which graceful-fs's gracefulify (and so fs-extra) does to wrap the streams of the fs it is
 * given. An ES class cannot be called so: gracefulify(ws.fs).createReadStream threw "Class
 * constructor ReadStream cannot be invoked without 'new'".
 */
function boundStream(name: string, Host: StreamConstructor, fs: StreamFs, isHandle: (value: unknown) => value is HandleLike): StreamConstructor {
  const hostInit = Host as unknown as (this: object, path: unknown, options: Record<string, unknown>) => void
  const Stream = function (this: object, path: unknown, options?: unknown): object | void {
    if (!(this instanceof Stream)) return new (Stream as unknown as StreamConstructor)(path, options as Record<string, unknown>)
    hostInit.call(this, path, withWorkspace(path, options, fs, isHandle))
    // As Node's: a stream over a FileHandle closes when the handle does (the workspace's close too).
    const fd = (options as { fd?: unknown } | undefined)?.fd
    if (isHandle(fd)) fd.once('close', () => (this as { close(): void }).close())
  }
  Object.defineProperty(Stream, 'name', { value: name })
  Object.setPrototypeOf(Stream.prototype, Host.prototype)
  Object.setPrototypeOf(Stream, Host)
  return Stream as unknown as StreamConstructor
}

/** The workspace's ReadStream and WriteStream (subclasses of Node's, bound to `fs`). */
export function streamClasses(fs: StreamFs, isHandle: (value: unknown) => value is HandleLike): StreamClasses {
  let classes: StreamClasses | undefined
  const make = (name: string): StreamClasses => {
    if (classes) return classes
    const host = hostStreams(name)
    return (classes = { ReadStream: boundStream('ReadStream', host.ReadStream, fs, isHandle), WriteStream: boundStream('WriteStream', host.WriteStream, fs, isHandle) })
  }
  return {
    get ReadStream() {
      return make('ReadStream').ReadStream
    },
    get WriteStream() {
      return make('WriteStream').WriteStream
    },
  }
}

/** Whether this host has Node's streams (fs.ReadStream is then the workspace's class, else absent). */
export function hasStreams(): boolean {
  return builtin<HostStreams>('node:fs')?.ReadStream !== undefined
}
