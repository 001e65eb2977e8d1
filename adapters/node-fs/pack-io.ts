/**
 * File access for pack segments: a moving window the scan and the scrub read a segment through,
 * positional reads and writes that finish what a short one left, zeros to preallocate with, and
 * fdatasync in libuv's thread pool (for syncs the calling thread should not wait for: pack-sync.ts).
 */
import { hostFs as fs } from './host-fs.js'
import { RECORD_HEADER_BYTES, crc32, readRecordHeader } from './pack-format.js'

const WINDOW = 1024 * 1024

/**
 * A moving window over a segment file: reads 1 MiB at a time, synchronously for open's scan,
 * asynchronously (the event loop runs between reads) for a scrub.
 */
export class SegmentWindow {
  private buffer = Buffer.alloc(0)
  /** The file bytes the buffer holds: [start, start + length). */
  private start = 0
  private length = 0
  /** Bytes read from the file so far (the scan's work, counted). */
  bytesRead = 0
  /** `size`: the window reads no byte at or past it (the file's size, or where a scrub stops). */
  constructor(
    private readonly fd: number,
    readonly size: number,
    private readonly salt: number,
  ) {}

  /** The bytes from `at` on (at least `want` of them where the file has them), and where `at` is in them. */
  view(at: number, want: number): { bytes: Buffer; offset: number; end: number } {
    const length = this.miss(at, want)
    if (length !== undefined) this.filled(at, readFully(this.fd, this.buffer, length, at))
    return { bytes: this.buffer, offset: at - this.start, end: this.length }
  }

  /** The same, read asynchronously. */
  async viewAsync(at: number, want: number): Promise<{ bytes: Buffer; offset: number; end: number }> {
    const length = this.miss(at, want)
    if (length !== undefined) this.filled(at, await readFullyAsync(this.fd, this.buffer, length, at))
    return { bytes: this.buffer, offset: at - this.start, end: this.length }
  }

  /** Undefined when the buffer holds the bytes asked for; otherwise how many to read from `at` (the buffer made large enough). */
  private miss(at: number, want: number): number | undefined {
    if (at >= this.start && Math.min(this.size, at + want) <= this.start + this.length) return undefined
    const length = Math.max(0, Math.min(this.size - at, Math.max(want, WINDOW)))
    if (this.buffer.length < length || this.buffer.length > 4 * Math.max(length, WINDOW)) this.buffer = Buffer.allocUnsafe(Math.max(length, WINDOW))
    return length
  }

  private filled(at: number, read: number): void {
    this.length = read
    this.bytesRead += read
    this.start = at
  }

  header(at: number): ReturnType<typeof readRecordHeader> {
    const { bytes, offset, end } = this.view(at, RECORD_HEADER_BYTES)
    return readRecordHeader(bytes, offset, end, this.salt)
  }

  /** The first offset from `from` on where a whole, checksummed record header is. */
  nextHeader(from: number): number | undefined {
    for (let at = from; at + RECORD_HEADER_BYTES <= this.size; at++) {
      const { bytes, offset } = this.view(at, RECORD_HEADER_BYTES)
      if (bytes[offset] !== 0x52 || bytes[offset + 1] !== 0x57 || bytes[offset + 2] !== 0x50 || bytes[offset + 3] !== 0x4b) continue
      if (typeof this.header(at) === 'object') return at
    }
    return undefined
  }

  /** The same, read asynchronously. */
  async nextHeaderAsync(from: number): Promise<number | undefined> {
    for (let at = from; at + RECORD_HEADER_BYTES <= this.size; at++) {
      const { bytes, offset, end } = await this.viewAsync(at, RECORD_HEADER_BYTES)
      if (bytes[offset] !== 0x52 || bytes[offset + 1] !== 0x57 || bytes[offset + 2] !== 0x50 || bytes[offset + 3] !== 0x4b) continue
      if (typeof readRecordHeader(bytes, offset, end, this.salt) === 'object') return at
    }
    return undefined
  }

  /** CRC-32 of `length` bytes from `at`, read asynchronously a window at a time; undefined when the window ends first. */
  async crc(at: number, length: number): Promise<number | undefined> {
    let crc = 0
    for (let done = 0; done < length; ) {
      const want = Math.min(WINDOW, length - done)
      const { bytes, offset, end } = await this.viewAsync(at + done, want)
      if (end - offset < want) return undefined
      crc = crc32(bytes, offset, offset + want, crc)
      done += want
    }
    return crc
  }

  /** Where the zeros at the end of the file start (the file's size when it does not end in zeros). */
  zeroTail(): number {
    const chunk = Buffer.allocUnsafe(WINDOW)
    // A page first (a segment closed cleanly ends in its last record), then more at a time.
    for (let end = this.size, step = 4096; end > 0; step = Math.min(WINDOW, step * 4)) {
      const start = Math.max(0, end - step)
      const read = readFully(this.fd, chunk, end - start, start)
      this.bytesRead += read
      for (let i = read - 1; i >= 0; i--) if (chunk[i] !== 0) return start + i + 1
      end = start
    }
    return 0
  }

  bytes(at: number, length: number): Uint8Array {
    const out = Buffer.allocUnsafe(length)
    this.bytesRead += readFully(this.fd, out, length, at)
    return out
  }
}

/** pread until `length` bytes are in `buffer` (or the file ends: the rest is left as it was). */
export function readFully(fd: number, buffer: Uint8Array, length: number, position: number): number {
  let done = 0
  while (done < length) {
    const read = fs.readSync(fd, buffer, done, length - done, position + done)
    if (read === 0) break
    done += read
  }
  return done
}

/** The same, asynchronously (libuv's pool), so many blob reads overlap. */
export async function readFullyAsync(fd: number, buffer: Uint8Array, length: number, position: number): Promise<number> {
  let done = 0
  while (done < length) {
    const read = await new Promise<number>((resolve, reject) => fs.read(fd, buffer, done, length - done, position + done, (error, bytes) => (error ? reject(error) : resolve(bytes))))
    if (read === 0) break
    done += read
  }
  return done
}

/** pwritev until every byte is written (a short write continues where it stopped). */
export function writeFully(fd: number, pieces: readonly Uint8Array[], position: number): number {
  let written = 0
  let index = 0
  let skip = 0
  while (index < pieces.length) {
    const batch: Uint8Array[] = []
    for (let i = index; i < pieces.length && batch.length < 512; i++) batch.push(i === index && skip > 0 ? pieces[i].subarray(skip) : pieces[i])
    let wrote = fs.writevSync(fd, batch as NodeJS.ArrayBufferView[], position + written)
    written += wrote
    while (index < pieces.length && wrote >= pieces[index].length - skip) {
      wrote -= pieces[index].length - skip
      skip = 0
      index++
    }
    skip += wrote
  }
  return written
}

/** A zero page source for preallocation (never written to). */
export const ZEROS = new Uint8Array(WINDOW)

/** fdatasync in libuv's thread pool. */
export function fdatasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())))
}
