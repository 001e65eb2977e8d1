/**
 * fs/promises FileHandle and Dir on the page's side: a descriptor (or Dir id) of the worker's
 * workspace, every method forwarded to it. The caller's buffers never cross: a read sends the
 * buffer's size and copies back only the bytes read; a write sends its own copy of the bytes.
 * A handle the page drops unclosed is closed in the worker when it is collected, as Node does.
 */
import { asCallerBytes } from '../src/bytes.js'
import type { Dirent } from '../src/fs/stats.js'
import type { FileMember } from './constants.js'
import { type StreamOptions, nodeReadStream, nodeWriteStream, readLines, webReadStream } from './remote-streams.js'
import { decodeValue } from './values.js'

/** Posts one fs message (to the workspace, or to a transaction's staged fs) and answers its value. */
export type FsSend = (message: object, transfers: Transferable[]) => Promise<unknown>

/** Node's syscall names for a call on a closed handle. */
const syscalls: Record<FileMember, string> = {
  read: 'read',
  write: 'write',
  readv: 'readv',
  writev: 'writev',
  readFile: 'readFile',
  writeFile: 'writeFile',
  appendFile: 'writeFile',
  stat: 'fstat',
  truncate: 'ftruncate',
  chmod: 'fchmod',
  chown: 'fchown',
  utimes: 'futime',
  sync: 'fsync',
  datasync: 'fdatasync',
  close: 'close',
}

/** Node's error for a call on a closed FileHandle: EBADF named after the call, message 'file closed'. */
function fileClosed(syscall: string): Error {
  return Object.assign(new Error('file closed'), { code: 'EBADF', syscall })
}

/** The bytes of any view, as a Uint8Array over the same memory. */
function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

/** A copy of a view's bytes in a buffer of its own, to hand over (a Buffer may be a slice of a shared pool). */
export function ownCopy(view: ArrayBufferView): Uint8Array<ArrayBuffer> {
  return bytesOf(view).slice()
}

/** Writes' data: bytes go as their own transferred copy, anything else (strings, bad arguments) as it is. */
function outgoing(data: unknown, transfers: Transferable[]): unknown {
  if (!ArrayBuffer.isView(data)) return data
  const copy = ownCopy(data)
  transfers.push(copy.buffer)
  return copy
}

/** Where a read's bytes start in the caller's buffer (the arguments were valid: the read ran). */
function readOffset(offsetOrOptions: unknown): number {
  const offset = typeof offsetOrOptions === 'object' && offsetOrOptions !== null ? (offsetOrOptions as { offset?: unknown }).offset : offsetOrOptions
  return typeof offset === 'number' ? offset : 0
}

const closers = new FinalizationRegistry<() => void>((close) => close())

export class WorkerFileHandle {
  private descriptor: number
  private closing: Promise<void> | undefined

  constructor(
    private readonly send: FsSend,
    fd: number,
  ) {
    this.descriptor = fd
    closers.register(this, () => void send({ t: 'file', op: 'close', fd, args: [] }, []).catch(() => undefined), this)
  }

  /** The worker's descriptor; -1 once closed, as Node's. */
  get fd(): number {
    return this.descriptor
  }

  private call(op: FileMember, args: unknown[], transfers: Transferable[] = []): Promise<unknown> {
    if (this.descriptor === -1) return Promise.reject(fileClosed(syscalls[op]))
    return this.send({ t: 'file', op, fd: this.descriptor, args }, transfers).then(decodeValue)
  }

  /** `length` bytes at `position` (null: at the file position), as the worker's own transferred buffer; fewer at the end. */
  async readBytes(length: number, position: number | null): Promise<Uint8Array> {
    const { bytes } = (await this.call('read', [length, 0, length, position])) as { bytes: Uint8Array }
    return asCallerBytes(bytes)
  }

  /** Writes all of `bytes` at `position` (null: at the file position); the caller's bytes are copied, not detached. */
  async writeBytes(bytes: Uint8Array, position: number | null): Promise<number> {
    const transfers: Transferable[] = []
    return (await this.call('write', [outgoing(bytes, transfers), 0, bytes.byteLength, position], transfers)) as number
  }

  async read(bufferOrOptions?: unknown, offset?: unknown, length?: unknown, position?: unknown): Promise<{ bytesRead: number; buffer: ArrayBufferView }> {
    let buffer = bufferOrOptions
    if (!ArrayBuffer.isView(buffer) && (buffer === undefined || buffer === null || typeof buffer === 'object')) {
      // read() and read({ buffer, offset, length, position }), with Node's defaults.
      const options = (buffer ?? {}) as { buffer?: unknown; offset?: unknown; length?: unknown; position?: unknown }
      buffer = options.buffer ?? asCallerBytes(new Uint8Array(16384))
      offset = options.offset ?? 0
      length = options.length ?? (ArrayBuffer.isView(buffer) ? buffer.byteLength - (offset as number) : undefined)
      position = options.position ?? null
    }
    if (!ArrayBuffer.isView(buffer)) {
      // Not a buffer: the worker's read refuses it with Node's error.
      await this.call('read', [null, buffer, offset, length, position])
      throw new TypeError('unreachable: the read should have been refused')
    }
    const { bytesRead, bytes } = (await this.call('read', [buffer.byteLength, offset, length, position])) as { bytesRead: number; bytes: Uint8Array }
    bytesOf(buffer).set(bytes, readOffset(offset))
    return { bytesRead, buffer }
  }

  async write(data: unknown, offsetOrPosition?: unknown, lengthOrEncoding?: unknown, position?: unknown): Promise<{ bytesWritten: number; buffer: unknown }> {
    const transfers: Transferable[] = []
    const bytesWritten = (await this.call('write', [outgoing(data, transfers), offsetOrPosition, lengthOrEncoding, position], transfers)) as number
    return { bytesWritten, buffer: data }
  }

  async readv(buffers: readonly ArrayBufferView[], position?: number | null): Promise<{ bytesRead: number; buffers: readonly ArrayBufferView[] }> {
    const views = Array.isArray(buffers) && buffers.every((b) => ArrayBuffer.isView(b))
    // Not buffers: the worker's readv refuses them with Node's error.
    const args = views ? [buffers.map((b) => b.byteLength), position] : [null, buffers, position]
    const { bytesRead, bytes } = (await this.call('readv', args)) as { bytesRead: number; bytes: Uint8Array }
    let at = 0
    for (const buffer of buffers) {
      if (at >= bytesRead) break
      const part = bytes.subarray(at, at + buffer.byteLength)
      bytesOf(buffer).set(part)
      at += part.byteLength
    }
    return { bytesRead, buffers }
  }

  async writev(buffers: readonly ArrayBufferView[], position?: number | null): Promise<{ bytesWritten: number; buffers: readonly ArrayBufferView[] }> {
    const transfers: Transferable[] = []
    const copies = Array.isArray(buffers) ? buffers.map((b) => outgoing(b, transfers)) : buffers
    const bytesWritten = (await this.call('writev', [copies, position], transfers)) as number
    return { bytesWritten, buffers }
  }

  readFile(options?: unknown): Promise<unknown> {
    return this.call('readFile', [options])
  }

  async writeFile(data: unknown, options?: unknown): Promise<void> {
    const transfers: Transferable[] = []
    await this.call('writeFile', [outgoing(data, transfers), options], transfers)
  }

  async appendFile(data: unknown, options?: unknown): Promise<void> {
    const transfers: Transferable[] = []
    await this.call('appendFile', [outgoing(data, transfers), options], transfers)
  }

  stat(options?: unknown): Promise<unknown> {
    return this.call('stat', [options])
  }

  async truncate(len?: unknown): Promise<void> {
    await this.call('truncate', [len])
  }

  async chmod(mode: unknown): Promise<void> {
    await this.call('chmod', [mode])
  }

  async chown(uid: unknown, gid: unknown): Promise<void> {
    await this.call('chown', [uid, gid])
  }

  async utimes(atime: unknown, mtime: unknown): Promise<void> {
    await this.call('utimes', [atime, mtime])
  }

  async sync(): Promise<void> {
    await this.call('sync', [])
  }

  async datasync(): Promise<void> {
    await this.call('datasync', [])
  }

  /** A second close resolves, as Node's does. */
  close(): Promise<void> {
    if (this.closing) return this.closing
    this.closing = this.call('close', []).then(() => undefined)
    this.descriptor = -1
    closers.unregister(this)
    return this.closing
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  /** The file's lines (\n, \r\n or \r end one), read in chunks; the handle closes at the end unless `autoClose: false` (Node's default). */
  readLines(options?: StreamOptions): AsyncIterable<string> {
    return readLines(this, options)
  }

  /** A web ReadableStream of the file's bytes from the current position (Node's: the handle stays open). */
  readableWebStream(): ReadableStream<Uint8Array> {
    if (this.descriptor === -1) throw fileClosed('read')
    return webReadStream(async () => this, { autoClose: false })
  }

  createReadStream(options?: StreamOptions): unknown {
    return nodeReadStream(async () => this, undefined, options)
  }

  createWriteStream(options?: StreamOptions): unknown {
    return nodeWriteStream(async () => this, undefined, options)
  }
}

const dirClosed = () => Object.assign(new Error('Directory handle was closed'), { code: 'ERR_DIR_CLOSED' })

/** fs.Dir over a Dir the worker keeps open: entries come `bufferSize` at a time. */
export class WorkerDir {
  private entries: Dirent[] = []
  private ended = false
  private closed = false
  /** Reads run one after another, as Node queues them. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly send: FsSend,
    private readonly id: number,
    readonly path: string,
    private readonly bufferSize: number,
  ) {
    closers.register(this, () => void send({ t: 'dir', op: 'close', id }, []).catch(() => undefined), this)
  }

  private async next(): Promise<Dirent | null> {
    if (this.closed) throw dirClosed()
    if (this.entries.length === 0 && !this.ended) {
      const batch = decodeValue(await this.send({ t: 'dir', op: 'read', id: this.id, count: this.bufferSize }, [])) as Dirent[]
      if (batch.length === 0) this.ended = true
      this.entries = batch
    }
    return this.entries.shift() ?? null
  }

  read(): Promise<Dirent | null>
  read(callback: (error: Error | null, entry: Dirent | null) => void): void
  read(callback?: (error: Error | null, entry: Dirent | null) => void): Promise<Dirent | null> | void {
    const result = (this.queue = this.queue.catch(() => undefined).then(() => this.next())) as Promise<Dirent | null>
    if (!callback) return result
    result.then(
      (entry) => callback(null, entry),
      (error: Error) => callback(error, null),
    )
  }

  close(): Promise<void>
  close(callback: (error: Error | null) => void): void
  close(callback?: (error: Error | null) => void): Promise<void> | void {
    const result = this.closed
      ? Promise.reject(dirClosed())
      : (() => {
          this.closed = true
          closers.unregister(this)
          return this.send({ t: 'dir', op: 'close', id: this.id }, []).then(() => undefined)
        })()
    if (!callback) return result
    result.then(
      () => callback(null),
      (error: Error) => callback(error),
    )
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Dirent> {
    try {
      for (let entry = await this.read(); entry !== null; entry = await this.read()) yield entry
    } finally {
      if (!this.closed) await this.close()
    }
  }
}
