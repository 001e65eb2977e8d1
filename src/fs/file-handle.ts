/**
 * fs/promises FileHandle over a descriptor of the workspace, as Node's: an EventEmitter ('close'),
 * every method resolves or rejects and never throws synchronously, and once closed `fd` is -1 and
 * every method rejects with Node's "file closed" EBADF. Streams, web streams (browsers too) and
 * readLines read and write through the same descriptor. Loaded on first use (./async-forms.ts):
 * the core's helpers come from its kit.
 */
import { chunkEncoding, collectChunks, kit } from './async-forms.js'
import { EventEmitter } from './emitter.js'
import type { FsOperations } from './operations.js'
import type { StreamClasses } from './streams.js'

/** Node's error for a call on a closed FileHandle: EBADF named after the call, message 'file closed'. */
function fileClosed(syscall: string): Error {
  return Object.assign(new Error('file closed'), { code: 'EBADF', syscall })
}

function invalidState(message: string): Error {
  return Object.assign(new Error(`Invalid state: ${message}`), { code: 'ERR_INVALID_STATE' })
}

/** FileHandle.read's options (unchecked: the descriptor's read checks them as Node does). */
interface ReadOptions {
  buffer?: unknown
  offset?: unknown
  length?: unknown
  position?: unknown
}

/** How many bytes writeFile writes at a time when it has a signal to check (Node's kWriteFileMaxChunkSize). */
const WRITE_PART = 512 * 1024

/** Bytes a web stream reads before it waits a turn of the event loop (as streams.ts's TURN_EVERY). */
const TURN_EVERY = 1 << 20

/** A later turn of the event loop: setImmediate, or a timer where there is none (browsers). */
function later(run: () => void): void {
  const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate
  if (typeof immediate === 'function') immediate(run)
  else setTimeout(run, 0)
}

/** How many bytes a web stream asks for at a time (Node's autoAllocateChunkSize). */
const WEB_CHUNK = 16384

export class FileHandle extends EventEmitter {
  #descriptor: number
  /** The close in progress (or done): later calls share it. */
  #closing: Promise<void> | undefined
  /** A web stream is reading through this handle. */
  #locked = false
  /**
   * As Node's: the handle's own reference, which close() drops, and one per call that waits
   * (readFile, writeFile): the descriptor closes when the last goes, so a close() called while one
   * runs waits for it, as `try { return handle.readFile() } finally { await handle.close() }` needs.
   */
  #refs = 1
  /** Settles the close() that waits for the calls in progress. */
  #whenFree: { resolve: () => void; reject: (error: unknown) => void } | undefined
  /** What the workspace's close calls: closes now, whatever is in progress (that then fails EBADF). */
  readonly #owner = { close: () => this.closeNow() }

  readonly #ops: FsOperations
  readonly #streams: StreamClasses

  constructor(ops: FsOperations, fd: number, streams: StreamClasses) {
    super()
    this.#ops = ops
    this.#streams = streams
    this.#descriptor = fd
    ops.handles.add(this.#owner)
  }

  /** The descriptor, -1 once closed. */
  get fd(): number {
    return this.#descriptor
  }

  private async use<T>(syscall: string, body: () => T): Promise<T> {
    if (this.#descriptor === -1) throw fileClosed(syscall)
    return body()
  }

  /** Runs `body`, which waits, holding a reference (see #refs). */
  private async held<T>(syscall: string, body: () => Promise<T>): Promise<T> {
    if (this.#descriptor === -1) throw fileClosed(syscall)
    this.#refs++
    try {
      return await body()
    } finally {
      if (--this.#refs === 0) this.release()
    }
  }

  /**
   * Node 20's FileHandle.read: (buffer, offset?, length?, position?), (buffer, options) or
   * (options?), whose buffer is a new one of 16 KiB when it has none. A null offset is 0 and a
   * null length the rest of the buffer; a position that is not a safe integer from 0 up reads at
   * (and moves) the file position.
   */
  read(bufferOrOptions?: unknown, offset?: unknown, length?: unknown, position?: unknown): Promise<{ bytesRead: number; buffer: Uint8Array }> {
    return this.use('read', () => {
      let buffer = bufferOrOptions
      if (!ArrayBuffer.isView(buffer)) {
        if (bufferOrOptions !== undefined && bufferOrOptions !== null && (typeof bufferOrOptions !== 'object' || Array.isArray(bufferOrOptions))) {
          throw kit.typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be of type object.${kit.describeReceived(bufferOrOptions)}`)
        }
        ;({ buffer = kit.newBuffer(16384), offset = 0, length, position = null } = (bufferOrOptions ?? {}) as ReadOptions)
      }
      if (offset !== null && typeof offset === 'object') ({ offset = 0, length, position = null } = offset as ReadOptions)
      offset ??= 0
      // Not a buffer: the descriptor's read refuses it first.
      length ??= ArrayBuffer.isView(buffer) ? buffer.byteLength - (offset as number) : 0
      const bytesRead = this.#ops.read(this.fd, buffer, offset, length, kit.fileOffset(position), true)
      return { bytesRead, buffer: buffer as Uint8Array }
    })
  }

  readv<T extends ArrayBufferView[]>(buffers: T, position?: unknown): Promise<{ bytesRead: number; buffers: T }> {
    return this.use('readv', () => ({ bytesRead: this.#ops.readv(this.fd, buffers, position), buffers }))
  }

  write<T>(data: T, offsetOrPosition?: unknown, lengthOrEncoding?: unknown, position?: unknown): Promise<{ bytesWritten: number; buffer: T }> {
    return this.use('write', () => ({ bytesWritten: this.#ops.write(this.fd, data, offsetOrPosition, lengthOrEncoding, position), buffer: data }))
  }

  writev<T extends ArrayBufferView[]>(buffers: T, position?: unknown): Promise<{ bytesWritten: number; buffers: T }> {
    return this.use('writev', () => ({ bytesWritten: this.#ops.writev(this.fd, buffers, position), buffers }))
  }

  /** Node checks the signal after a stat of the file, so an abort right after the call rejects: this waits a turn for one. */
  readFile(options?: unknown): Promise<Uint8Array | string> {
    return this.held('readFile', async () => {
      const signal = kit.signalOption(options)
      if (signal?.aborted) throw kit.abortError(signal)
      // Node reads after its stat: what is written in the same turn as the call is read too.
      await (signal ? new Promise((resolve) => setTimeout(resolve, 0)) : undefined)
      if (signal?.aborted) throw kit.abortError(signal)
      if (this.#descriptor === -1) throw fileClosed('readFile')
      return this.#ops.readFile(this.fd, options)
    })
  }

  /**
   * Data as Node's: a string, bytes, or an iterable (async too) of them; an aborted signal rejects.
   * Checked and written at the call, as Node's runs to its first write: a close called right after
   * it does not stop it, nor does an abort. With a signal, Node writes 512 KiB at a time and checks
   * the signal between the parts, so an abort after the call leaves the parts before it written.
   */
  writeFile(data: unknown, options?: unknown): Promise<void> {
    return this.held('writeFile', async () => {
      const signal = kit.signalOption(options)
      if (signal?.aborted) throw kit.abortError(signal)
      if (kit.isChunks(data)) {
        const bytes = await collectChunks(data, options, signal, (partial) => this.#ops.writeFile(this.fd, partial, options))
        return this.use('writeFile', () => this.#ops.writeFile(this.fd, bytes, options))
      }
      if (signal === undefined) return this.#ops.writeFile(this.fd, data, options)
      const bytes = kit.dataArgument(data, chunkEncoding(options), 'data')
      for (let at = 0; ; ) {
        const part = bytes.subarray(at, at + WRITE_PART)
        this.#ops.writeFile(this.fd, part, options)
        at += part.byteLength
        if (at >= bytes.byteLength) return
        await new Promise((resolve) => setTimeout(resolve, 0))
        if (signal.aborted) throw kit.abortError(signal)
        if (this.#descriptor === -1) throw fileClosed('writeFile')
      }
    })
  }

  appendFile(data: unknown, options?: unknown): Promise<void> {
    return this.writeFile(data, options)
  }

  stat(options?: unknown) {
    return this.use('fstat', () => this.#ops.fstat(this.fd, options))
  }

  truncate(len?: unknown): Promise<void> {
    return this.use('ftruncate', () => this.#ops.ftruncate(this.fd, len))
  }

  chmod(mode: unknown): Promise<void> {
    return this.use('fchmod', () => this.#ops.fchmod(this.fd, mode))
  }

  chown(uid: unknown, gid: unknown): Promise<void> {
    return this.use('fchown', () => this.#ops.fchown(this.fd, uid, gid))
  }

  utimes(atime: unknown, mtime: unknown): Promise<void> {
    return this.use('futimes', () => this.#ops.futimes(this.fd, atime, mtime))
  }

  sync(): Promise<void> {
    return this.use('fsync', () => this.#ops.fsync(this.fd))
  }

  datasync(): Promise<void> {
    return this.use('fdatasync', () => this.#ops.fdatasync(this.fd))
  }

  /** A ReadStream over this handle; it closes the handle when it closes (unless autoClose is false). */
  createReadStream(options?: Record<string, unknown>): unknown {
    return new this.#streams.ReadStream(undefined, { ...options, fd: this })
  }

  createWriteStream(options?: Record<string, unknown>): unknown {
    return new this.#streams.WriteStream(undefined, { ...options, fd: this })
  }

  /**
   * The file from the current position as a web ReadableStream of Uint8Array chunks (a byte
   * stream, so BYOB readers work; 16 KiB at a time otherwise). Works in browsers. While it reads,
   * the handle is locked for other web streams; when it ends or is cancelled the handle stays open.
   */
  readableWebStream(options: { type?: unknown } = {}): ReadableStream<Uint8Array> {
    if (this.#descriptor === -1) throw invalidState('The FileHandle is closed')
    // close() was called and waits for calls in progress (see #refs).
    if (this.#closing) throw invalidState('The FileHandle is closing')
    if (this.#locked) throw invalidState('The FileHandle is locked')
    if (options.type !== undefined && typeof options.type !== 'string') {
      throw kit.typeError('ERR_INVALID_ARG_TYPE', `The "options.type" property must be of type string.`)
    }
    this.#locked = true
    const done = () => {
      this.#locked = false
    }
    // Node cancels the stream when the handle closes: a read after that is done, not an error (EBADF).
    const closed = () => this.#descriptor === -1
    const read = (target: Uint8Array): number => (closed() ? 0 : this.#ops.read(this.fd, target, 0, target.byteLength, null))
    // As a stream (./streams.ts): a turn of the event loop each MiB, which Node's reads each take, so a
    // loop over the stream does not keep timers and I/O from running until the file is through.
    let left = TURN_EVERY
    const paced = (n: number): Promise<void> | undefined => {
      if ((left -= n) > 0) return undefined
      left = TURN_EVERY
      return new Promise((resolve) => later(resolve))
    }
    const source = {
      type: 'bytes' as const,
      autoAllocateChunkSize: WEB_CHUNK,
      pull: (controller: ReadableByteStreamController) => {
        const request = controller.byobRequest!
        const view = request.view!
        try {
          const n = read(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))
          if (n === 0) {
            done()
            controller.close()
          }
          request.respond(n)
          return paced(n)
        } catch (error) {
          done()
          controller.error(error)
        }
      },
      cancel: done,
    }
    try {
      return new ReadableStream(source) as ReadableStream<Uint8Array>
    } catch {
      // A host without byte streams: the same chunks through a default stream.
      return new ReadableStream<Uint8Array>({
        pull: (controller) => {
          try {
            const chunk = new Uint8Array(WEB_CHUNK)
            const n = read(chunk)
            if (n === 0) {
              done()
              controller.close()
            } else controller.enqueue(chunk.subarray(0, n))
            return paced(n)
          } catch (error) {
            done()
            controller.error(error)
          }
        },
        cancel: done,
      })
    }
  }

  /** Node's readline Interface over createReadStream(options): lines, any line ending; closes the handle at the end. */
  readLines(options?: Record<string, unknown>): AsyncIterable<string> {
    const readline = kit.builtin<{ createInterface(options: Record<string, unknown>): AsyncIterable<string> }>('node:readline')
    if (!readline) throw new kit.FsError('ENOSYS', 'readLines', undefined, undefined, 'function not implemented: Node readline is needed (in a browser, use readableWebStream)')
    return readline.createInterface({ input: this.createReadStream(options), crlfDelay: Infinity })
  }

  /**
   * Closes the descriptor, once the calls in progress are done (see #refs); a second close shares
   * the first, or resolves once closed, as Node's does. 'close' is emitted at the call, as Node does.
   * An own property, as Node's: `const { close } = handle` works.
   */
  readonly close = (): Promise<void> => {
    if (this.#descriptor === -1) return this.#closing ?? Promise.resolve()
    if (this.#closing) return this.#closing
    if (--this.#refs === 0) this.#closing = this.closeDescriptor()
    else this.#closing = new Promise<void>((resolve, reject) => (this.#whenFree = { resolve, reject }))
    this.emit('close')
    return this.#closing
  }

  /** The last reference went while a close() waited: the descriptor closes now. */
  private release(): void {
    const waiting = this.#whenFree
    if (!waiting) return
    this.#whenFree = undefined
    this.closeDescriptor().then(waiting.resolve, waiting.reject)
  }

  private closeDescriptor(): Promise<void> {
    const fd = this.#descriptor
    this.#descriptor = -1
    this.#ops.handles.delete(this.#owner)
    try {
      this.#ops.close(fd)
      return Promise.resolve()
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The workspace closes under the handle: the descriptor closes now, a close() that waited with it. */
  private closeNow(): Promise<void> {
    if (this.#descriptor === -1) return this.#closing ?? Promise.resolve()
    const emit = this.#closing === undefined
    const closed = this.closeDescriptor()
    if (this.#whenFree) {
      closed.then(this.#whenFree.resolve, this.#whenFree.reject)
      this.#whenFree = undefined
    }
    this.#closing ??= closed
    if (emit) this.emit('close')
    return closed
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
