/**
 * The Node-compatible `fs` object, generated from one table over FsOperations: each operation is
 * written once (synchronously) and gets its `xSync`, callback `x` and `promises.x` forms here.
 * Members that are not triples keep Node's own shapes (exists, streams, watch, FileHandle).
 */
import { FsError } from '../errors.js'
import { type NotLoadedError, isNotLoaded } from '../lower/source.js'
import { constants, pathArgument, validateFunction } from './arguments.js'
import { FileHandle } from './file-handle.js'
import type { FsOperations } from './operations.js'
import { Dir, Dirent, Stats } from './stats.js'
import { createReadStream, createWriteStream } from './streams.js'
import { type FSWatcher, WatchRegistry } from './watch.js'

type Operation = (...args: unknown[]) => unknown

/** Operations with all three forms; the value is the FsOperations method. */
const triples = {
  access: 'access',
  appendFile: 'appendFile',
  chmod: 'chmod',
  chown: 'chown',
  copyFile: 'copyFile',
  cp: 'cp',
  lchown: 'lchown',
  link: 'link',
  lstat: 'lstat',
  lutimes: 'lutimes',
  mkdir: 'mkdir',
  mkdtemp: 'mkdtemp',
  opendir: 'opendir',
  readdir: 'readdir',
  readFile: 'readFile',
  readlink: 'readlink',
  realpath: 'realpath',
  rename: 'rename',
  rm: 'rm',
  rmdir: 'rmdir',
  stat: 'stat',
  symlink: 'symlink',
  truncate: 'truncate',
  unlink: 'unlink',
  utimes: 'utimes',
  writeFile: 'writeFile',
} as const satisfies Record<string, keyof FsOperations>

/** Descriptor operations: sync and callback forms (the promise API uses FileHandle instead). */
const descriptorCalls = {
  close: 'close',
  fchmod: 'fchmod',
  fchown: 'fchown',
  fdatasync: 'fdatasync',
  fstat: 'fstat',
  fsync: 'fsync',
  ftruncate: 'ftruncate',
  futimes: 'futimes',
  open: 'open',
} as const satisfies Record<string, keyof FsOperations>

/** Members whose sync and callback forms also take a descriptor, but whose promise forms take a path only. */
const byPath = new Set(['appendFile', 'readFile', 'truncate', 'writeFile'])

/** Node members we do not implement: each throws ENOSYS rather than silently missing. */
const unsupported = ['readv', 'writev', 'statfs', 'openAsBlob', 'watchFile', 'unwatchFile'] as const

/** Node's fs callbacks run on a later turn of the event loop. */
const later: (fn: () => void) => void =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function'
    ? (fn) => (globalThis as unknown as { setImmediate(fn: () => void): void }).setImmediate(fn)
    : (fn) => setTimeout(fn, 0)

/** Argument errors are thrown synchronously by Node's callback API; system errors go to the callback. */
function isArgumentError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
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

function callbackForm(run: Operation, load?: Loader, spread?: (result: unknown, args: unknown[]) => unknown[]): Operation {
  return (...args: unknown[]) => {
    const callback = args.pop()
    validateFunction(callback, 'cb')
    const cb = callback as (...results: unknown[]) => void
    let result: unknown
    try {
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

function promiseForm(run: Operation, load?: Loader): Operation {
  return (...args: unknown[]) => runLoading(run, args, load)
}

function enosys(name: string): Operation {
  return () => {
    throw new FsError('ENOSYS', name)
  }
}

export interface SurfaceOptions {
  /** Loads contents an asynchronous lower source has not loaded yet (promise and callback forms). */
  load?: Loader
}

/** The object users take in place of `node:fs`. Its type is structural; see NodeFs in ../types.ts. */
export function createFs(ops: FsOperations, options: SurfaceOptions = {}): Record<string, unknown> {
  const fs: Record<string, unknown> = {}
  const promises: Record<string, unknown> = {}
  const bind = (method: keyof FsOperations): Operation => (ops[method] as Operation).bind(ops)

  for (const [name, method] of Object.entries(triples)) {
    const run = bind(method)
    fs[name + 'Sync'] = run
    fs[name] = callbackForm(run, options.load)
    // The promise API takes FileHandles, never numeric descriptors: a number is a bad path there.
    promises[name] = promiseForm(byPath.has(name) ? (file, ...rest) => run(file instanceof FileHandle ? file.fd : pathArgument(file), ...rest) : run, options.load)
  }
  for (const [name, method] of Object.entries(descriptorCalls)) {
    const run = bind(method)
    fs[name + 'Sync'] = run
    fs[name] = callbackForm(run, options.load)
  }

  // realpath: the JS implementation reports 'lstat', the native one (and promises) 'realpath'.
  const realpathNative: Operation = (path, options) => ops.realpath(path, options, 'realpath')
  Object.assign(fs.realpathSync as object, { native: realpathNative })
  Object.assign(fs.realpath as object, { native: callbackForm(realpathNative, options.load) })
  promises.realpath = promiseForm(realpathNative, options.load)

  // read/write report two results to callbacks: (err, bytes, buffer).
  const read = bind('read')
  const write = bind('write')
  fs.readSync = read
  fs.writeSync = write
  fs.read = callbackForm(read, options.load, (n, args) => [n, args[1]])
  fs.write = callbackForm(write, options.load, (n, args) => [n, args[1]])

  fs.existsSync = (path: unknown) => ops.exists(path)
  fs.exists = (path: unknown, callback: unknown) => {
    validateFunction(callback, 'cb')
    const result = ops.exists(path)
    later(() => (callback as (exists: boolean) => void)(result))
  }

  promises.open = async (path: unknown, flags?: unknown, mode?: unknown) =>
    new FileHandle(ops, (await runLoading(() => ops.open(path, flags ?? 'r', mode), [], options.load)) as number)
  promises.lchmod = enosys('lchmod')
  const watches = new WatchRegistry(ops)
  fs.watch = (filename: unknown, opts?: unknown, listener?: unknown): FSWatcher => watches.watch(filename, opts, listener)
  promises.watch = (filename: unknown, opts?: unknown) => watches.iterate(filename, opts)

  fs.createReadStream = (path: unknown, opts?: unknown) => createReadStream(ops, path, opts)
  fs.createWriteStream = (path: unknown, opts?: unknown) => createWriteStream(ops, path, opts)

  for (const name of unsupported) {
    fs[name] = enosys(name)
    if (!name.endsWith('File') && name !== 'openAsBlob') fs[name + 'Sync'] = enosys(name)
  }
  promises.statfs = enosys('statfs')

  Object.assign(fs, { Dirent, Stats, Dir, constants, F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, promises })
  promises.constants = constants
  return fs
}
