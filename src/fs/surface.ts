/**
 * The Node-compatible `fs` object, generated from one table over FsOperations: each operation is
 * written once (synchronously) and gets its `xSync`, callback `x` and `promises.x` forms here.
 * Members that are not triples keep Node's own shapes (exists, streams, watch, FileHandle). The
 * watch members run on the watching capability when one is given (./watch.ts), so the core does
 * not carry them. What only the promise and callback forms use (FileHandle, chunked writes, cp's
 * awaited filter) is ./async-forms.ts, imported on first use.
 */
import { concatBytes, isEncoding } from '../bytes.js'
import { FsError, codedError, typeError } from '../errors.js'
import { type NotLoadedError, isNotLoaded } from '../lower/source.js'
import { joinLexically } from '../path.js'
import { constants, dataArgument, describeReceived, fileOffset, pathArgument, validateFunction, validateObject } from './arguments.js'
import { HostBuffer, builtin } from '../host.js'
import type { FileHandle } from './file-handle.js'
import { type FsOperations, cpArguments, rmOptions } from './operations.js'
import { Dir, Dirent, Stats } from './stats.js'
import { type StreamFs, hasStreams, streamClasses } from './streams.js'
import type { Watches, Watching } from './watch.js'
import { abortError, isChunks, signalOption } from './write-data.js'

type Operation = (...args: unknown[]) => unknown

type AsyncForms = typeof import('./async-forms.js')
/** ./async-forms.ts once loaded: until then no FileHandle exists. */
let asyncForms: AsyncForms | undefined
let loadingAsyncForms: Promise<AsyncForms> | undefined
/** Loads ./async-forms.ts once; a failed load (a chunk a browser could not fetch) is tried again on the next call. */
function loadAsyncForms(): Promise<AsyncForms> {
  return (loadingAsyncForms ??= import('./async-forms.js').then(
    (loaded) => {
      loaded.provide({ concatBytes, isEncoding, FsError, typeError, builtin, joinLexically, dataArgument, describeReceived, fileOffset, abortError, isChunks, signalOption, newBuffer })
      return (asyncForms = loaded)
    },
    (error: unknown) => {
      loadingAsyncForms = undefined
      throw error
    },
  ))
}

/** Runs `use` with ./async-forms.ts: at once when it is loaded (a cp filter is then asked within the call, as Node asks it), else once it is. */
function withAsyncForms<T>(use: (forms: AsyncForms) => Promise<T>): Promise<T> {
  return asyncForms ? use(asyncForms) : loadAsyncForms().then(use)
}

function isFileHandle(value: unknown): value is FileHandle {
  return asyncForms !== undefined && value instanceof asyncForms.FileHandle
}

/**
 * Operations with all three forms, each with the number of arguments Node declares before the
 * callback: a missing callback is reported as Node does, naming what is in that position.
 */
const triples = {
  access: 2,
  appendFile: 3,
  chmod: 2,
  chown: 3,
  copyFile: 3,
  cp: 3,
  lchown: 3,
  link: 2,
  lstat: 2,
  lutimes: 3,
  mkdir: 2,
  mkdtemp: 2,
  opendir: 2,
  readdir: 2,
  readFile: 2,
  readlink: 2,
  realpath: 2,
  rename: 2,
  rm: 2,
  rmdir: 2,
  stat: 2,
  statfs: 2,
  symlink: 3,
  truncate: 2,
  unlink: 1,
  utimes: 3,
  writeFile: 3,
} as const satisfies Partial<Record<keyof FsOperations, number>>

/** Descriptor operations: sync and callback forms (the promise API uses FileHandle instead). */
const descriptorCalls = {
  close: 1,
  fchmod: 2,
  fchown: 3,
  fdatasync: 1,
  fstat: 2,
  fsync: 1,
  ftruncate: 2,
  futimes: 3,
  open: 3,
} as const satisfies Partial<Record<keyof FsOperations, number>>

/**
 * Members whose callback and promise forms wait for something before the call: it returns the
 * arguments to run with (undefined when there is nothing to wait for), throwing argument errors.
 */
type Prepare = (ops: FsOperations, args: unknown[], run: Operation) => Promise<unknown[]> | undefined
const prepared: Partial<Record<keyof typeof triples, { callback: Prepare; promise: Prepare }>> = {
  // Node awaits cp's filter there, and copies later.
  cp: { callback: checkedCp, promise: checkedCp },
  readFile: { callback: abortable(1, true), promise: abortable(1, true) },
  // Node's async rimraf, not rmSync's (see FsOperations.rm).
  rm: { callback: asynchronousRm, promise: asynchronousRm },
  // The promise forms also write iterables of chunks.
  writeFile: { callback: abortable(2), promise: chunked },
  appendFile: { callback: abortable(2), promise: chunked },
}

/**
 * cp: its options and paths checked at once (their errors thrown, as Node throws them), then the
 * filter's answers gathered where there is one (./async-forms.ts). The copy runs later even
 * without one, as Node's asynchronous copy does: what fails in it, a Buffer path among them (see
 * FsOperations.cp), comes to the callback, where it was thrown at the call.
 */
function checkedCp(ops: FsOperations, args: unknown[]): Promise<unknown[]> {
  const checked = cpArguments(args)
  if (checked.opts.filter === undefined) return Promise.resolve(args)
  return withAsyncForms((forms) => forms.cpFilterAnswers(ops, args, checked))
}

/** rm as its callback and promise forms run it; argument errors are thrown at once, as Node's are. */
function asynchronousRm(_ops: FsOperations, args: unknown[]): Promise<unknown[]> {
  pathArgument(args[0], 'path', 'lstat')
  rmOptions(args[1])
  return Promise.resolve([args[0], args[1], true])
}

/**
 * Rejects with Node's AbortError when the options (argument `index`) hold an aborted signal, or
 * one aborted before the call gets to it: Node opens the file first and checks the signal before
 * it reads, so an abort right after the call is an AbortError there. A read (`untilRun`) waits a
 * turn for one; it ran at once (on a microtask), so readFile then abort() resolved with the content.
 */
function abortable(index: number, untilRun = false): Prepare {
  return (_ops, args) => {
    const signal = signalOption(args[index])
    if (signal === undefined) return undefined
    if (signal.aborted) return Promise.reject(abortError(signal))
    if (!untilRun) return undefined
    return new Promise((resolve, reject) => later(() => (signal.aborted ? reject(abortError(signal)) : resolve(args))))
  }
}

/** writeFile's data as the promise API takes it: an aborted signal rejects; chunks are read first (see collectChunks). */
function chunked(ops: FsOperations, args: unknown[], run: Operation): Promise<unknown[]> | undefined {
  const [file, data, options] = args
  const signal = signalOption(options)
  if (signal?.aborted) return Promise.reject(abortError(signal))
  if (!isChunks(data)) return undefined
  return withAsyncForms((forms) => forms.collectChunks(data, options, signal, (bytes) => run(file, bytes, options))).then((bytes) => [file, bytes, options])
}

/** Members whose sync and callback forms also take a descriptor, but whose promise forms take a path (or a FileHandle: byHandle) only. */
const byPath = new Set(['appendFile', 'readFile', 'truncate', 'writeFile'])

/** The promise members that also take a FileHandle (Node 20's truncate takes a path only). */
const byHandle = new Set(['appendFile', 'readFile', 'writeFile'])

/** A FileHandle as a promise member was given it: its descriptor then (-1: closed before the call). */
class HandleAtCall {
  constructor(
    readonly handle: FileHandle,
    readonly fd: number,
  ) {}
}

/**
 * Node's promises.readFile(handle) reads after a stat, holding no reference to the handle: closed
 * in between (a close() right after the call), the read fails EBADF. Closed before the call, the
 * descriptor it passes is -1 (ERR_OUT_OF_RANGE), as Node's.
 */
function descriptorAtRead(given: HandleAtCall): number {
  if (given.fd !== -1 && given.handle.fd === -1) throw new FsError('EBADF', 'read')
  return given.handle.fd
}

/** Node takes these members' options as the callback when none follows (`callback ||= options`). */
const optionsAsCallback: Record<string, number> = { readFile: 1, writeFile: 2, appendFile: 2 }

/** Node's fs callbacks run on a later turn of the event loop. */
const later: (fn: () => void) => void =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function'
    ? (fn) => (globalThis as unknown as { setImmediate(fn: () => void): void }).setImmediate(fn)
    : (fn) => setTimeout(fn, 0)

/** Argument errors are thrown synchronously by Node's callback API; system errors go to the callback. */
function isArgumentError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  // A file: URL whose escapes are not UTF-8: decodeURIComponent's URIError, thrown as Node's is.
  if (error instanceof URIError) return true
  return typeof code === 'string' && (code.startsWith('ERR_INVALID_ARG') || code === 'ERR_OUT_OF_RANGE' || code.startsWith('ERR_INVALID_URL'))
}

/** Loads what an asynchronous lower source had not loaded; the call is then run again. */
type Loader = (error: NotLoadedError) => Promise<void>

/** Each retry loads at least one more file, so this only bounds a source that never loads. */
const MAX_LOADS = 10_000

async function runLoading(run: Operation, args: unknown[], load: Loader | undefined): Promise<unknown> {
  for (let loads = 0; ; loads++) {
    try {
      return run(...args)
    } catch (error) {
      if (!load || !isNotLoaded(error) || loads >= MAX_LOADS) throw error
      await load(error)
    }
  }
}

/**
 * The callback of a callback-form call: the last argument when it is a function. Otherwise the
 * error names what Node would find in the callback's place (usually nothing: 'Received undefined').
 */
function takeCallback(name: string, args: unknown[], arity: number): (...results: unknown[]) => void {
  if (typeof args[args.length - 1] === 'function') return args.pop() as (...results: unknown[]) => void
  const required = optionsAsCallback[name]
  const received = required !== undefined ? (args.length > required ? args[args.length - 1] : undefined) : args[arity]
  validateFunction(received, 'cb')
  throw new Error('unreachable')
}

function callbackForm(
  name: string,
  arity: number,
  run: Operation,
  load?: Loader,
  spread?: (result: unknown, args: unknown[]) => unknown[],
  prepare?: (args: unknown[]) => Promise<unknown[]> | undefined,
): Operation {
  return (...args: unknown[]) => {
    let cb: (...results: unknown[]) => void
    if (name === 'close' && typeof args[args.length - 1] !== 'function' && args.length <= 1) {
      // Node's default close callback rethrows an error on a later turn.
      cb = (error) => {
        if (error) throw error
      }
    } else cb = takeCallback(name, args, arity)
    let result: unknown
    try {
      const waiting = prepare?.(args)
      if (waiting) {
        waiting.then((ready) => runLoading(run, ready, load)).then(
          (value) => later(() => (spread ? cb(null, ...spread(value, args)) : cb(null, value))),
          (failure: unknown) => later(() => cb(failure)),
        )
        return
      }
      result = run(...args)
    } catch (error) {
      if (isArgumentError(error)) throw error
      if (load && isNotLoaded(error)) {
        load(error)
          .then(() => runLoading(run, args, load))
          .then(
          (value) => later(() => (spread ? cb(null, ...spread(value, args)) : cb(null, value))),
          (failure: unknown) => later(() => cb(failure)),
        )
        return
      }
      later(() => cb(error))
      return
    }
    later(() => (spread ? cb(null, ...spread(result, args)) : cb(null, result)))
  }
}

function promiseForm(run: Operation, load?: Loader, prepare?: (args: unknown[]) => Promise<unknown[]> | undefined): Operation {
  if (!prepare) return (...args: unknown[]) => runLoading(run, args, load)
  return async (...args: unknown[]) => runLoading(run, (await prepare(args)) ?? args, load)
}


/** util.promisify.custom (a registered symbol: no import of util). */
const PROMISIFY = Symbol.for('nodejs.util.promisify.custom')

/** The names util.promisify gives read/write-like calls' two results. */
const promisifiedNames = {
  read: ['bytesRead', 'buffer'],
  write: ['bytesWritten', 'buffer'],
  readv: ['bytesRead', 'buffers'],
  // Node's own names, 'buffer' though it is the array.
  writev: ['bytesWritten', 'buffer'],
} as const

/** What an error's message says between its code and its syscall ('permission denied'). */
function detailOf(error: FsError): string {
  const end = error.message.lastIndexOf(`, ${error.syscall}`)
  return error.message.slice(error.code.length + 2, end < 0 ? undefined : end)
}

/** A zeroed buffer of the host's kind (Buffer on Node). */
function newBuffer(size: number): Uint8Array {
  return HostBuffer ? HostBuffer.allocUnsafe(size).fill(0) : new Uint8Array(size)
}

/** Arguments the callback gets after the error for read/write-like calls: (bytes, buffer). */
const bytesAndBuffer = (n: unknown, args: unknown[]) => [n, args[1]]

export interface SurfaceOptions {
  /** Loads contents an asynchronous lower source has not loaded yet (promise and callback forms). */
  load?: Loader
  /** Runs fs.watch, fs.promises.watch and fs.watchFile (rewindfs/watch); without it they are ENOSYS. */
  watch?: Watching
}

/**
 * fs.watch: Node adds the listener (the options when they are a function) once the watch has
 * started, so one that is there but not a function is refused then (ERR_INVALID_ARG_TYPE); the
 * watch it started is closed here (Node's keeps running, out of the caller's reach).
 */
function watchWithListener(watches: Watches, filename: unknown, opts: unknown, listener: unknown): unknown {
  const watcher = watches.watch(filename, opts, listener)
  const given = typeof opts === 'function' ? opts : listener
  if (given && typeof given !== 'function') {
    watcher.close()
    validateFunction(given, 'listener')
  }
  return watcher
}

/** A watch member without the watching capability. */
function unwatched(syscall: string): () => never {
  return () => {
    throw new FsError('ENOSYS', syscall, undefined, undefined, "function not implemented: pass Workspace.open({ watch: watching }) with watching from 'rewindfs/watch'")
  }
}

/**
 * promises.readFile, writeFile or appendFile given a FileHandle. Node's writes go through the
 * handle (FileHandle.writeFile: written at the call, so a close() right after it waits for them);
 * a handle closed before the call fails its first write (EBADF, 'write').
 */
function withHandle(name: string, handle: FileHandle, rest: unknown[], form: Operation): unknown {
  if (name === 'readFile') return form(new HandleAtCall(handle, handle.fd), ...rest)
  if (handle.fd === -1) return Promise.reject(new FsError('EBADF', 'write'))
  const [data, options] = rest
  return name === 'writeFile' ? handle.writeFile(data, options) : handle.appendFile(data, options)
}

/** The object users take in place of `node:fs`. Its type is structural; see NodeFs in ../types.ts. */
export function createFs(ops: FsOperations, options: SurfaceOptions = {}): Record<string, unknown> {
  const fs: Record<string, unknown> = {}
  const promises: Record<string, unknown> = {}
  const bind = (method: keyof FsOperations): Operation => (ops[method] as Operation).bind(ops)

  for (const [name, arity] of Object.entries(triples)) {
    const run = bind(name as keyof typeof triples)
    const waitFor = prepared[name as keyof typeof triples]
    fs[name + 'Sync'] = run
    fs[name] = callbackForm(name, arity, run, options.load, undefined, waitFor && ((args) => waitFor.callback(ops, args, run)))
    // The promise API takes FileHandles, never numeric descriptors: a number is a bad path there.
    const promised: Operation = byPath.has(name) ? (file, ...rest) => run(file instanceof HandleAtCall ? descriptorAtRead(file) : pathArgument(file, 'path', 'open'), ...rest) : run
    const form = promiseForm(promised, options.load, waitFor && ((args) => waitFor.promise(ops, args, promised)))
    promises[name] = byHandle.has(name) ? (file: unknown, ...rest: unknown[]) => (isFileHandle(file) ? withHandle(name, file, rest, form) : form(file, ...rest)) : form
  }
  for (const [name, arity] of Object.entries(descriptorCalls)) {
    const run = bind(name as keyof typeof descriptorCalls)
    fs[name + 'Sync'] = run
    fs[name] = callbackForm(name, arity, run, options.load)
  }
  // Node's promise readdir walks a recursive listing from a stack: the same entries, another order.
  promises.readdir = promiseForm((path, opts) => ops.readdir(path, opts, true), options.load)
  // throwIfNoEntry is statSync's and lstatSync's: Node's callback and promise forms fail with ENOENT.
  for (const name of ['stat', 'lstat'] as const) {
    const run: Operation = (path, opts) => ops[name](path, opts, false)
    fs[name] = callbackForm(name, triples[name], run, options.load)
    promises[name] = promiseForm(run, options.load)
  }

  // Node 20's opendirSync names no path in the errors of its opendir(3) (its context carries none),
  // and cpSync lists each directory through it; the callback and promise forms name the path.
  for (const name of ['opendir', 'cp'] as const) {
    const run = bind(name)
    fs[name + 'Sync'] = (...args: unknown[]) => {
      try {
        return run(...args)
      } catch (error) {
        if (error instanceof FsError && error.syscall === 'opendir' && error.path !== undefined) throw new FsError(error.code, 'opendir', undefined, undefined, detailOf(error))
        throw error
      }
    }
  }

  // realpath: the JS implementation reports 'lstat', the native one (and promises) 'realpath'.
  const realpathNative: Operation = (path, options) => ops.realpath(path, options, 'realpath')
  Object.assign(fs.realpathSync as object, { native: realpathNative })
  Object.assign(fs.realpath as object, { native: callbackForm('realpath', 2, realpathNative, options.load) })
  promises.realpath = promiseForm(realpathNative, options.load)

  // Node's callback read decides by its argument count: given offset, length and position (with the
  // callback, more than four arguments), a null offset is 0, not options as readSync takes it.
  const readByCount: Operation = (...args) => ops.read(args[0], args[1], args[2], args[3], args[4], args.length > 3)
  // read/write report two results to callbacks: (err, bytes, buffer), readv/writev (err, bytes, buffers).
  for (const [name, arity] of [['read', 5], ['write', 5], ['readv', 3], ['writev', 3]] as const) {
    const run = bind(name)
    fs[name + 'Sync'] = run
    fs[name] = callbackForm(name, arity, name === 'read' ? readByCount : run, options.load, bytesAndBuffer)
    // util.promisify of these resolves to both results, as Node's do ({ bytesRead, buffer }, …).
    const [count, data] = promisifiedNames[name]
    Object.defineProperty(fs[name], PROMISIFY, {
      value: (...args: unknown[]) =>
        new Promise((resolve, reject) =>
          (fs[name] as Operation)(...args, (error: unknown, n: unknown, buffer: unknown) => (error ? reject(error) : resolve({ [count]: n, [data]: buffer }))),
        ),
    })
  }
  // fs.read(fd, callback) and fs.read(fd, { buffer, offset, length, position }, callback): Node
  // reads into the buffer given, or a new one of 16 KiB, and calls back with that buffer.
  const readWithBuffer = fs.read as Operation
  fs.read = Object.assign((...args: unknown[]) => {
    if (typeof args[args.length - 1] === 'function' && args.length <= 3 && !ArrayBuffer.isView(args[1])) {
      const callback = args.pop()
      const params = args[1]
      if (params !== undefined && params !== null) validateObject(params, 'options')
      const { buffer, offset, length, position } = (params ?? {}) as Record<string, unknown>
      return readWithBuffer(args[0], buffer ?? newBuffer(16384), { offset, length, position }, callback)
    }
    return readWithBuffer(...args)
  }, { [PROMISIFY]: (readWithBuffer as unknown as Record<symbol, unknown>)[PROMISIFY] })
  fs.openAsBlob = (path: unknown, opts?: unknown) => ops.openAsBlob(path, opts, (size, type, read) => withAsyncForms(async (forms) => new forms.FileBlob(read, size, type)))

  fs.existsSync = (path: unknown) => ops.exists(path)
  fs.exists = (path: unknown, callback: unknown) => {
    validateFunction(callback, 'cb')
    const result = ops.exists(path)
    later(() => (callback as (exists: boolean) => void)(result))
  }
  // Its callback has no error argument: util.promisify resolves to the answer, as Node's custom one does.
  Object.defineProperty(fs.exists, PROMISIFY, { value: (path: unknown) => new Promise((resolve) => (fs.exists as Operation)(path, resolve)) })

  // Node's own ReadStream and WriteStream, reading and writing through these callback forms.
  const streams = streamClasses(fs as unknown as StreamFs, isFileHandle)
  // Absent where the host has no Node streams (reading the members never throws).
  const streamsHere = hasStreams()
  for (const name of ['ReadStream', 'WriteStream'] as const) {
    const get = () => (streamsHere ? streams[name] : undefined)
    Object.defineProperty(fs, name, { get, enumerable: true, configurable: true })
    // Node's deprecated aliases.
    Object.defineProperty(fs, `File${name}`, { get, enumerable: true, configurable: true })
  }
  fs.createReadStream = (path: unknown, opts?: unknown) => new streams.ReadStream(path, opts as Record<string, unknown>)
  fs.createWriteStream = (path: unknown, opts?: unknown) => new streams.WriteStream(path, opts as Record<string, unknown>)

  promises.open = async (path: unknown, flags?: unknown, mode?: unknown) => {
    const { FileHandle } = asyncForms ?? (await loadAsyncForms())
    return new FileHandle(ops, (await runLoading(() => ops.open(path, flags ?? 'r', mode), [], options.load)) as number, streams)
  }
  // As on Linux, where Node has no lchmod: the promise member exists and rejects.
  promises.lchmod = async () => {
    throw codedError('ERR_METHOD_NOT_IMPLEMENTED', 'The lchmod() method is not implemented')
  }
  const watches = options.watch?.(ops)
  fs.watch = watches ? (filename: unknown, opts?: unknown, listener?: unknown) => watchWithListener(watches, filename, opts, listener) : unwatched('watch')
  promises.watch = watches ? (filename: unknown, opts?: unknown) => watches.iterate(filename, opts) : unwatched('watch')
  // Node checks watchFile's and unwatchFile's path first, as 'path' (it polls it with stat).
  fs.watchFile = watches ? (filename: unknown, opts?: unknown, listener?: unknown) => (pathArgument(filename, 'path', 'stat'), watches.watchFile(filename, opts, listener)) : unwatched('watchFile')
  fs.unwatchFile = watches ? (filename: unknown, listener?: unknown) => (pathArgument(filename, 'path', 'stat'), watches.unwatchFile(filename, listener)) : unwatched('unwatchFile')

  Object.assign(fs, { Dirent, Stats, Dir, constants, F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, promises })
  promises.constants = constants
  return fs
}
