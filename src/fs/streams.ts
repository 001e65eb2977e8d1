/**
 * fs.createReadStream / createWriteStream as real Node streams over workspace descriptors. The
 * stream classes come from the host at run time (src/ never imports node:stream); in a browser
 * these members throw ENOSYS saying why.
 */
import { FsError } from '../errors.js'
import { builtin } from '../host.js'
import { encodingOption, flagsArgument, pathArgument } from './arguments.js'
import type { FsOperations } from './operations.js'

interface StreamModule {
  Readable: new (options: Record<string, unknown>) => NodeStream
  Writable: new (options: Record<string, unknown>) => NodeStream
}

interface NodeStream {
  push(chunk: Uint8Array | null): boolean
  emit(event: string, ...args: unknown[]): boolean
  setEncoding(encoding: string): unknown
  destroy(error?: Error): unknown
}

type Callback = (error?: Error | null) => void

interface StreamOptions {
  flags?: string
  encoding?: string
  fd?: number
  mode?: number
  autoClose?: boolean
  emitClose?: boolean
  start?: number
  end?: number
  highWaterMark?: number
}

function streams(name: string): StreamModule {
  const module = builtin<StreamModule>('node:stream')
  if (!module) throw new FsError('ENOSYS', name, undefined, undefined, 'function not implemented: Node streams are needed (use the promises API in a browser)')
  return module
}

function options(value: unknown): StreamOptions {
  if (typeof value === 'string') return { encoding: value }
  return (value ?? {}) as StreamOptions
}

/** Closes the stream's descriptor unless autoClose is off; a close error is reported if none was. */
function closeOnDestroy(ops: FsOperations, fd: number | undefined, opts: StreamOptions, error: Error | null): Error | null {
  if (fd === undefined || opts.autoClose === false) return error
  try {
    ops.close(fd)
  } catch (closeError) {
    return error ?? (closeError as Error)
  }
  return error
}

export function createReadStream(ops: FsOperations, file: unknown, value?: unknown): NodeStream {
  const { Readable } = streams('createReadStream')
  const opts = options(value)
  const path = opts.fd === undefined ? pathArgument(file) : undefined
  const encoding = encodingOption(opts.encoding ?? null, null)
  const end = opts.end ?? Infinity
  let fd = opts.fd
  let position = opts.start
  let bytesRead = 0
  const stream: NodeStream & Record<string, unknown> = new Readable({
    highWaterMark: opts.highWaterMark ?? 64 * 1024,
    emitClose: opts.emitClose ?? true,
    construct(callback: Callback) {
      try {
        if (fd === undefined) fd = ops.open(path, flagsArgument(opts.flags, 'r'), opts.mode)
        stream.fd = fd
        stream.pending = false
        callback()
        stream.emit('open', fd)
        stream.emit('ready')
      } catch (error) {
        callback(error as Error)
      }
    },
    read(this: NodeStream, size: number) {
      try {
        const want = Math.max(0, Math.min(size, end - (position ?? bytesRead) + 1))
        if (want === 0) return void this.push(null)
        const chunk = new Uint8Array(want)
        const n = ops.read(fd, chunk, 0, want, position ?? null)
        if (position !== undefined) position += n
        bytesRead += n
        stream.bytesRead = bytesRead
        this.push(n === 0 ? null : chunk.subarray(0, n))
      } catch (error) {
        this.destroy(error as Error)
      }
    },
    destroy(error: Error | null, callback: Callback) {
      callback(closeOnDestroy(ops, fd, opts, error))
    },
  }) as NodeStream & Record<string, unknown>
  Object.assign(stream, { path: path ?? undefined, bytesRead: 0, pending: true })
  if (encoding && encoding !== 'buffer') stream.setEncoding(encoding)
  return stream
}

export function createWriteStream(ops: FsOperations, file: unknown, value?: unknown): NodeStream {
  const { Writable } = streams('createWriteStream')
  const opts = options(value)
  const path = opts.fd === undefined ? pathArgument(file) : undefined
  const encoding = encodingOption(opts.encoding ?? 'utf8', 'utf8')
  let fd = opts.fd
  let position = opts.start
  let bytesWritten = 0
  const stream: NodeStream & Record<string, unknown> = new Writable({
    decodeStrings: true,
    defaultEncoding: encoding === 'buffer' || encoding === null ? 'utf8' : encoding,
    emitClose: opts.emitClose ?? true,
    highWaterMark: opts.highWaterMark ?? 16 * 1024,
    construct(callback: Callback) {
      try {
        if (fd === undefined) fd = ops.open(path, flagsArgument(opts.flags, 'w'), opts.mode ?? 0o666)
        stream.fd = fd
        stream.pending = false
        callback()
        stream.emit('open', fd)
        stream.emit('ready')
      } catch (error) {
        callback(error as Error)
      }
    },
    write(chunk: Uint8Array, _encoding: string, callback: Callback) {
      try {
        const n = ops.write(fd, chunk, 0, chunk.byteLength, position ?? null)
        if (position !== undefined) position += n
        bytesWritten += n
        stream.bytesWritten = bytesWritten
        callback()
      } catch (error) {
        callback(error as Error)
      }
    },
    final(callback: Callback) {
      try {
        if (fd !== undefined) ops.fsync(fd)
        callback()
      } catch (error) {
        callback(error as Error)
      }
    },
    destroy(error: Error | null, callback: Callback) {
      callback(closeOnDestroy(ops, fd, opts, error))
    },
  }) as NodeStream & Record<string, unknown>
  Object.assign(stream, { path: path ?? undefined, bytesWritten: 0, pending: true })
  return stream
}
