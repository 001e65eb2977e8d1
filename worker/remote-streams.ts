/**
 * Streams on the page's side over a worker descriptor: Node streams where the host has
 * node:stream, web streams everywhere. Each chunk is one read or write in the worker, pulled or
 * pushed only as the consumer takes it (the stream's highWaterMark bounds what is buffered), so a
 * 100 MB file never crosses whole.
 */
import { builtin } from '../src/host.js'
import { rangeError } from '../src/errors.js'
import { validateInteger } from '../src/fs/arguments.js'
import type { WorkerFileHandle } from './remote-handle.js'

export interface StreamOptions {
  flags?: string
  encoding?: string | null
  /** A FileHandle of this workspace (or its descriptor number) to read or write instead of opening `path`. */
  fd?: WorkerFileHandle | number
  mode?: number
  autoClose?: boolean
  emitClose?: boolean
  start?: number
  end?: number
  highWaterMark?: number
  /** Write streams: sync the file before closing. */
  flush?: boolean
  signal?: AbortSignal
}

type Callback = (error?: Error | null) => void
type Open = () => Promise<WorkerFileHandle>

interface NodeStreamClasses {
  Readable: new (options: Record<string, unknown>) => NodeStream
  Writable: new (options: Record<string, unknown>) => NodeStream
}

interface NodeStream {
  push(chunk: Uint8Array | null): boolean
  emit(event: string, ...args: unknown[]): boolean
  once(event: string, listener: (...args: unknown[]) => void): unknown
  setEncoding(encoding: string): unknown
  destroy(error?: Error): unknown
  destroyed: boolean
}

/** Node's stream classes, where the host has them. */
export function nodeStreams(): NodeStreamClasses | undefined {
  return builtin<NodeStreamClasses>('node:stream')
}

function options(value: unknown): StreamOptions {
  if (typeof value === 'string') return { encoding: value }
  return (value ?? {}) as StreamOptions
}

/** start/end as Node checks them, synchronously. */
function range(opts: StreamOptions): { start: number | undefined; end: number } {
  const start = opts.start === undefined ? undefined : validateInteger(opts.start, 'start', 0)
  const end = opts.end === undefined || opts.end === Infinity ? Infinity : validateInteger(opts.end, 'end', 0)
  if (start !== undefined && start > end) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "start" is out of range. It must be <= "end" (here: ${end}). Received ${start}`)
  }
  return { start, end }
}

async function closeQuietly(handle: WorkerFileHandle | undefined, error: Error | null): Promise<Error | null> {
  if (!handle) return error
  try {
    await handle.close()
    return error
  } catch (closeError) {
    return error ?? (closeError as Error)
  }
}

/** Node's fs.ReadStream over a worker descriptor (`open` gives it; `path` names it for the stream's `path`). */
export function nodeReadStream(open: Open, path: string | undefined, value?: unknown): unknown {
  const classes = nodeStreams()
  if (!classes) return webReadStream(open, options(value))
  const opts = options(value)
  const { start, end } = range(opts)
  const highWaterMark = opts.highWaterMark ?? 64 * 1024
  let handle: WorkerFileHandle | undefined
  let position = start
  let bytesRead = 0
  const stream = new classes.Readable({
    highWaterMark,
    emitClose: opts.emitClose ?? true,
    ...(opts.signal ? { signal: opts.signal } : {}),
    construct(callback: Callback) {
      open().then(
        (opened) => {
          handle = opened
          Object.assign(stream, { fd: opened.fd, pending: false })
          callback()
          stream.emit('open', opened.fd)
          stream.emit('ready')
        },
        (error: Error) => callback(error),
      )
    },
    read(this: NodeStream, size: number) {
      const want = Math.max(0, Math.min(size, end - (position ?? bytesRead) + 1))
      if (want === 0) return void this.push(null)
      handle!.readBytes(want, position ?? null).then(
        (chunk) => {
          if (position !== undefined) position += chunk.byteLength
          bytesRead += chunk.byteLength
          Object.assign(stream, { bytesRead })
          this.push(chunk.byteLength === 0 ? null : chunk)
        },
        (error: Error) => this.destroy(error),
      )
    },
    destroy(error: Error | null, callback: Callback) {
      if (opts.autoClose === false) return callback(error)
      closeQuietly(handle, error).then(callback)
    },
  }) as NodeStream & Record<string, unknown>
  Object.assign(stream, { path, bytesRead: 0, pending: true, close: closeMethod(stream) })
  if (opts.encoding && opts.encoding !== 'buffer') stream.setEncoding(opts.encoding)
  return stream
}

/** Node's fs.WriteStream over a worker descriptor; chunks written while one is in flight go together in one write. */
export function nodeWriteStream(open: Open, path: string | undefined, value?: unknown): unknown {
  const classes = nodeStreams()
  if (!classes) return webWriteStream(open, options(value))
  const opts = options(value)
  const { start } = range({ start: opts.start })
  let handle: WorkerFileHandle | undefined
  let position = start
  let bytesWritten = 0
  const write = async (bytes: Uint8Array) => {
    const n = await handle!.writeBytes(bytes, position ?? null)
    if (position !== undefined) position += n
    bytesWritten += n
    Object.assign(stream, { bytesWritten })
  }
  const encoding = opts.encoding ?? 'utf8'
  const stream = new classes.Writable({
    decodeStrings: true,
    defaultEncoding: encoding === 'buffer' ? 'utf8' : encoding,
    emitClose: opts.emitClose ?? true,
    highWaterMark: opts.highWaterMark ?? 16 * 1024,
    ...(opts.signal ? { signal: opts.signal } : {}),
    construct(callback: Callback) {
      open().then(
        (opened) => {
          handle = opened
          Object.assign(stream, { fd: opened.fd, pending: false })
          callback()
          stream.emit('open', opened.fd)
          stream.emit('ready')
        },
        (error: Error) => callback(error),
      )
    },
    write(chunk: Uint8Array, _encoding: string, callback: Callback) {
      write(chunk).then(() => callback(), callback)
    },
    writev(chunks: { chunk: Uint8Array }[], callback: Callback) {
      write(concat(chunks.map((c) => c.chunk))).then(() => callback(), callback)
    },
    final(callback: Callback) {
      if (!opts.flush || !handle) return callback()
      handle.sync().then(() => callback(), callback)
    },
    destroy(error: Error | null, callback: Callback) {
      if (opts.autoClose === false) return callback(error)
      closeQuietly(handle, error).then(callback)
    },
  }) as NodeStream & Record<string, unknown>
  Object.assign(stream, { path, bytesWritten: 0, pending: true, close: closeMethod(stream) })
  return stream
}

/** ReadStream/WriteStream.close(callback): destroys the stream, calling back once it has closed. */
function closeMethod(stream: NodeStream): (callback?: (error?: Error | null) => void) => void {
  return (callback) => {
    if (callback) stream.once('close', () => callback())
    stream.destroy()
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]
  const total = chunks.reduce((sum, c) => sum + c.byteLength, 0)
  const out = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

/** A web ReadableStream of a worker file: one chunk read ahead at most. */
export function webReadStream(open: Open, value?: StreamOptions): ReadableStream<Uint8Array> {
  const opts = value ?? {}
  const { start, end } = range(opts)
  const chunkSize = opts.highWaterMark ?? 64 * 1024
  let handle: WorkerFileHandle | undefined
  let position = start
  let bytesRead = 0
  const finish = async () => {
    if (opts.autoClose !== false) await handle?.close()
  }
  return new ReadableStream<Uint8Array>({
    async start() {
      handle = await open()
    },
    async pull(controller) {
      const want = Math.max(0, Math.min(chunkSize, end - (position ?? bytesRead) + 1))
      const chunk = want === 0 ? new Uint8Array(0) : await handle!.readBytes(want, position ?? null)
      if (chunk.byteLength === 0) {
        await finish()
        controller.close()
        return
      }
      if (position !== undefined) position += chunk.byteLength
      bytesRead += chunk.byteLength
      controller.enqueue(chunk)
    },
    async cancel() {
      await finish()
    },
  })
}

/** A web WritableStream into a worker file: each chunk is written before the next is taken. */
export function webWriteStream(open: Open, value?: StreamOptions): WritableStream<Uint8Array | string> {
  const opts = value ?? {}
  const { start } = range({ start: opts.start })
  const encoder = new TextEncoder()
  let handle: WorkerFileHandle | undefined
  let position = start
  const finish = async () => {
    if (opts.autoClose !== false) await handle?.close()
  }
  return new WritableStream<Uint8Array | string>({
    async start() {
      handle = await open()
    },
    async write(chunk) {
      const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk
      const n = await handle!.writeBytes(bytes, position ?? null)
      if (position !== undefined) position += n
    },
    async close() {
      if (opts.flush) await handle?.sync()
      await finish()
    },
    async abort() {
      await finish()
    },
  })
}

/** The lines of a worker file, as readline gives them: \n, \r\n and \r each end one; a last line without an end is a line. */
export async function* readLines(handle: WorkerFileHandle, value?: StreamOptions): AsyncGenerator<string> {
  const opts = value ?? {}
  const { start, end } = range(opts)
  const chunkSize = opts.highWaterMark ?? 64 * 1024
  const decoder = new TextDecoder(opts.encoding && opts.encoding !== 'utf8' ? opts.encoding : 'utf-8')
  let position = start
  let bytesRead = 0
  let text = ''
  try {
    for (;;) {
      const want = Math.max(0, Math.min(chunkSize, end - (position ?? bytesRead) + 1))
      const chunk = want === 0 ? new Uint8Array(0) : await handle.readBytes(want, position ?? null)
      const done = chunk.byteLength === 0
      if (position !== undefined) position += chunk.byteLength
      bytesRead += chunk.byteLength
      text += done ? decoder.decode() : decoder.decode(chunk, { stream: true })
      let from = 0
      for (const match of text.matchAll(/\r\n|\n|\r/g)) {
        // A \r at the end may be the first half of \r\n: wait for the next chunk.
        if (!done && match[0] === '\r' && match.index === text.length - 1) break
        yield text.slice(from, match.index)
        from = match.index + match[0].length
      }
      text = text.slice(from)
      if (done) {
        if (text !== '') yield text
        return
      }
    }
  } finally {
    if (opts.autoClose !== false) await handle.close()
  }
}
