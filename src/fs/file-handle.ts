/**
 * fs/promises FileHandle over a descriptor of the workspace: every method resolves or rejects,
 * never throws synchronously, as Node's does.
 */
import { FsError } from '../errors.js'
import type { FsOperations } from './operations.js'

export class FileHandle {
  private closed = false

  constructor(
    private readonly ops: FsOperations,
    readonly fd: number,
  ) {}

  private async use<T>(syscall: string, body: () => T): Promise<T> {
    if (this.closed) throw new FsError('EBADF', syscall)
    return body()
  }

  read(buffer?: unknown, offset?: unknown, length?: unknown, position?: unknown): Promise<{ bytesRead: number; buffer: Uint8Array }> {
    return this.use('read', () => {
      let target = buffer
      let options: unknown = offset
      if (!ArrayBuffer.isView(buffer) && typeof buffer === 'object' && buffer !== null) {
        const opts = buffer as { buffer?: Uint8Array; offset?: number; length?: number; position?: number | null }
        target = opts.buffer ?? new Uint8Array(16384)
        options = { offset: opts.offset, length: opts.length, position: opts.position }
      } else if (buffer === undefined) target = new Uint8Array(16384)
      const bytesRead = typeof options === 'object' && options !== null
        ? this.ops.read(this.fd, target, options)
        : this.ops.read(this.fd, target, offset, length, position)
      return { bytesRead, buffer: target as Uint8Array }
    })
  }

  write<T>(data: T, offsetOrPosition?: unknown, lengthOrEncoding?: unknown, position?: unknown): Promise<{ bytesWritten: number; buffer: T }> {
    return this.use('write', () => ({ bytesWritten: this.ops.write(this.fd, data, offsetOrPosition, lengthOrEncoding, position), buffer: data }))
  }

  readFile(options?: unknown): Promise<Uint8Array | string> {
    return this.use('read', () => this.ops.readFile(this.fd, options))
  }

  writeFile(data: unknown, options?: unknown): Promise<void> {
    return this.use('write', () => this.ops.writeFile(this.fd, data, options))
  }

  appendFile(data: unknown, options?: unknown): Promise<void> {
    return this.use('write', () => this.ops.writeFile(this.fd, data, options))
  }

  stat(options?: unknown) {
    return this.use('fstat', () => this.ops.fstat(this.fd, options))
  }

  truncate(len?: unknown): Promise<void> {
    return this.use('ftruncate', () => this.ops.ftruncate(this.fd, len))
  }

  chmod(mode: unknown): Promise<void> {
    return this.use('fchmod', () => this.ops.fchmod(this.fd, mode))
  }

  chown(uid: unknown, gid: unknown): Promise<void> {
    return this.use('fchown', () => this.ops.fchown(this.fd, uid, gid))
  }

  utimes(atime: unknown, mtime: unknown): Promise<void> {
    return this.use('futime', () => this.ops.futimes(this.fd, atime, mtime))
  }

  sync(): Promise<void> {
    return this.use('fsync', () => this.ops.fsync(this.fd))
  }

  datasync(): Promise<void> {
    return this.use('fdatasync', () => this.ops.fdatasync(this.fd))
  }

  /** A second close resolves, as Node's does. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.ops.close(this.fd)
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
