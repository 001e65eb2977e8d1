/**
 * fs on the page's side: every fs.promises member (FileHandle and Dir forwarded by descriptor and
 * id), exists, streams (Node's where the host has node:stream, web streams everywhere) and watch.
 * Each call is one message; answers are rebuilt (Buffers, Stats, Dirents, Node-shaped errors).
 */
import type { AsyncFileHandle, AsyncFs, AsyncFsMember } from '../src/async-workspace.js'
import { FsError } from '../src/errors.js'
import { constants, validateFunction } from '../src/fs/arguments.js'
import { type StartWatch, createWatcher, watchIterator } from '../src/fs/watch.js'
import { fsMembers } from './constants.js'
import { type FsSend, WorkerDir, WorkerFileHandle } from './remote-handle.js'
import { type StreamOptions, nodeReadStream, nodeWriteStream, webReadStream, webWriteStream } from './remote-streams.js'
import { decodeValue } from './values.js'

/** `transfer: true` hands the data's buffer to the worker (it is detached here) instead of copying it. */
export interface TransferOption {
  transfer?: boolean
}

type WriteData = Uint8Array
type WriteOptions = TransferOption & { encoding?: null; mode?: number; flag?: string }
type PathLike = import('node:fs').PathLike

/** Stream options as the page takes them: `fd` may be a FileHandle from `open()`. */
export type WorkerStreamOptions = Omit<StreamOptions, 'fd'> & { fd?: AsyncFileHandle | number }

/** The members `fs` and `fs.promises` share on the page: Node's fs.promises, `{ transfer: true }` on writes of bytes, `exists`, and the streams. */
type WorkerFsMembers = Omit<AsyncFs, 'watch'> & {
  writeFile(file: string, data: WriteData, options: WriteOptions): Promise<void>
  appendFile(file: string, data: WriteData, options: WriteOptions): Promise<void>
  /** Node's callback form, or a promise of the answer without a callback. */
  exists(path: PathLike): Promise<boolean>
  exists(path: PathLike, callback: (exists: boolean) => void): void
  /** A Node ReadStream where the host has node:stream; in a browser, a web ReadableStream. */
  createReadStream: typeof import('node:fs').createReadStream
  /** A Node WriteStream where the host has node:stream; in a browser, a web WritableStream. */
  createWriteStream: typeof import('node:fs').createWriteStream
  /** The file's bytes as a web ReadableStream, in any host; `start`/`end` as createReadStream's. */
  readableWebStream(path: PathLike, options?: WorkerStreamOptions): ReadableStream<Uint8Array>
  /** A web WritableStream into the file (flags 'w' unless given), in any host. */
  writableWebStream(path: PathLike, options?: WorkerStreamOptions): WritableStream<Uint8Array | string>
}

/** fs on the page: the promise members, and Node's fs.watch (an FSWatcher of the worker's changes). */
export type WorkerFs = WorkerFsMembers & {
  readonly promises: WorkerFsPromises
  watch: typeof import('node:fs').watch
}

/** fs.promises on the page: the same members, and fs.promises.watch (an async iterator of the worker's changes). */
export type WorkerFsPromises = WorkerFsMembers & {
  readonly promises: WorkerFsPromises
  watch: AsyncFs['watch']
}

/** Strips `transfer: true` from a write's options and lists the buffer to hand over. */
function transferable(op: string, args: readonly unknown[], transfers: Transferable[]): readonly unknown[] {
  if (op !== 'writeFile' && op !== 'appendFile') return args
  const options = args[2]
  if (typeof options !== 'object' || options === null || !('transfer' in options)) return args
  const { transfer, ...rest } = options as TransferOption
  if (transfer && ArrayBuffer.isView(args[1])) transfers.push(args[1].buffer as ArrayBuffer)
  return [args[0], args[1], rest, ...args.slice(3)]
}

/** A batch packs contents anyway: `transfer` is only taken out of the options. */
export function withoutTransfer(op: AsyncFsMember, args: readonly unknown[]): readonly unknown[] {
  return transferable(op, args, [])
}

/** A transaction's staged fs is not watched across the channel: its changes are told when it commits. */
const unwatchable: StartWatch = (given) => {
  throw new FsError('ENOSYS', 'watch', given, undefined, "function not implemented (a transaction's staged fs is not watched across a worker: watch the workspace's fs, which tells the commit)")
}

/** `watches`: where watches start (the workspace's fs; a staged fs has none). */
export function createWorkerFs(send: FsSend, watches: StartWatch = unwatchable): WorkerFs {
  const fs: Record<string, unknown> = {}
  const call = async (op: string, args: readonly unknown[]) => {
    const transfers: Transferable[] = []
    return decodeValue(await send({ t: 'fs', op, args: transferable(op, args, transfers) }, transfers))
  }
  for (const op of fsMembers) if (op !== 'exists') fs[op] = (...args: unknown[]) => call(op, args)

  const open = async (path: unknown, flags?: unknown, mode?: unknown) => new WorkerFileHandle(send, (await send({ t: 'file', op: 'open', args: [path, flags, mode] }, [])) as number)
  fs.open = open
  fs.opendir = async (path: unknown, options?: unknown) => {
    const { id, path: opened } = (await send({ t: 'dir', op: 'open', args: [path, options] }, [])) as { id: number; path: string }
    const bufferSize = (options as { bufferSize?: unknown } | undefined)?.bufferSize
    return new WorkerDir(send, id, opened, typeof bufferSize === 'number' ? bufferSize : 32)
  }
  fs.exists = (path: unknown, callback?: unknown) => {
    const answer = call('exists', [path]) as Promise<boolean>
    if (callback === undefined) return answer
    validateFunction(callback, 'cb')
    void answer.then(callback as (exists: boolean) => void, () => (callback as (exists: boolean) => void)(false))
  }

  /** The descriptor a stream reads or writes: its `fd` option, or `path` opened with its flags. */
  const opener = (path: unknown, opts: WorkerStreamOptions, flags: string) => {
    const fd = opts.fd
    if (fd instanceof WorkerFileHandle) return async () => fd
    if (typeof fd === 'number') return async () => new WorkerFileHandle(send, fd)
    return () => open(path, opts.flags ?? flags, opts.mode ?? 0o666)
  }
  const streamOptions = (value: unknown): WorkerStreamOptions => (typeof value === 'string' ? { encoding: value } : ((value ?? {}) as WorkerStreamOptions))
  const named = (path: unknown, opts: WorkerStreamOptions) => (opts.fd === undefined && typeof path === 'string' ? path : undefined)
  fs.createReadStream = (path: unknown, value?: unknown) => {
    const opts = streamOptions(value)
    return nodeReadStream(opener(path, opts, 'r'), named(path, opts), { ...opts, fd: undefined })
  }
  fs.createWriteStream = (path: unknown, value?: unknown) => {
    const opts = streamOptions(value)
    return nodeWriteStream(opener(path, opts, 'w'), named(path, opts), { ...opts, fd: undefined })
  }
  fs.readableWebStream = (path: unknown, value?: unknown) => {
    const opts = streamOptions(value)
    return webReadStream(opener(path, opts, 'r'), { ...opts, fd: undefined })
  }
  fs.writableWebStream = (path: unknown, value?: unknown) => {
    const opts = streamOptions(value)
    return webWriteStream(opener(path, opts, 'w'), { ...opts, fd: undefined })
  }
  fs.constants = constants
  fs.watch = (filename: unknown, options?: unknown, listener?: unknown) => createWatcher(watches, filename, options, listener)
  const promises: Record<string, unknown> = { ...fs, watch: (filename: unknown, options?: unknown) => watchIterator(watches, filename, options) }
  promises.promises = promises
  fs.promises = promises
  return fs as unknown as WorkerFs
}
