/**
 * A streaming zip writer, so exportView() needs no zip library: each entry is a local header and its
 * data, a slice at a time, then one central directory. The CRC and sizes are in the local header
 * wherever they can be known first; only a deflated file of several slices puts them in a data
 * descriptor after its data. Zip64 records appear exactly where a count, size or offset needs them,
 * so trees past 65 535 entries or 4 GiB stream too. Unix modes, symlinks and times are written as
 * Info-ZIP's `zip` writes them. Deflate is the host's own: node:zlib where Node is,
 * CompressionStream('deflate-raw') in browsers.
 */
import { builtin } from './host.js'

export interface ZipEntry {
  /** The path inside the archive, '/'-separated, without a leading '/' (a directory's gets one added). */
  name: string
  kind: 'file' | 'directory' | 'symlink'
  /** st_mode: the type bits and the permission bits. */
  mode: number
  mtimeMs: number
  /** A file's size as known before reading it; decides whether its local header needs zip64. Unknown: assume it may. */
  size?: number
  /**
   * A file's contents in slices, or a symlink's target as bytes; not called for a directory. Called
   * a second time for a file of several slices that is stored, so it must give the same bytes again.
   */
  contents?: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>
}

/** Raw deflate (RFC 1951) of a stream of slices, as a stream of slices. */
export type Deflate = (slices: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>

const LOCAL = 0x04034b50
const DESCRIPTOR = 0x08074b50
const CENTRAL = 0x02014b50
const END = 0x06054b50
const END64 = 0x06064b50
const LOCATOR64 = 0x07064b50
const ZIP64_FIELD = 0x0001
/** Info-ZIP's extended timestamp: flags (mtime present) then the mtime in seconds, UTC. */
const TIMESTAMP_FIELD = 0x5455
/** Sizes follow in a data descriptor. */
const FLAG_DESCRIPTOR = 1 << 3
/** The name is UTF-8. */
const FLAG_UTF8 = 1 << 11
const STORED = 0
const DEFLATED = 8
/** Made on Unix (3), by a writer of spec version 4.5 (zip64). */
const MADE_BY = (3 << 8) | 45
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
const S_IFREG = 0o100000
/** MS-DOS directory attribute, set beside the Unix mode as Info-ZIP does. */
const DOS_DIRECTORY = 0x10
/** The largest value a 16/32-bit field holds; the value itself means "see the zip64 record". */
const MAX16 = 0xffff
const MAX32 = 0xffffffff
/** Headers and small slices are written into blocks of this size, yielded when full. */
const BLOCK = 64 * 1024
/** DOS times hold 1980 to 2107, local time. */
const DOS_MIN = new Date(1980, 0, 1).getTime()
const DOS_MAX = new Date(2107, 11, 31, 23, 59, 58).getTime()

interface Written {
  name: Uint8Array
  flags: number
  method: number
  time: number
  date: number
  crc: number
  compressed: number
  size: number
  offset: number
  attributes: number
  /** Info-ZIP's extended timestamp: the mtime in UTC seconds. */
  seconds: number
  /** The local header has a zip64 field, so the descriptor's sizes are 8 bytes. */
  zip64Local: boolean
}

/**
 * The archive of `entries`, in order, as chunks: a run of headers and small files up to 64 KiB,
 * or one slice of a file (or its deflated output), so memory stays at about one slice whatever the
 * archive's size. Without `deflate` every file is stored. One pass; abandoning it (return()) stops
 * reading contents.
 */
export async function* writeZip(entries: Iterable<ZipEntry> | AsyncIterable<ZipEntry>, deflate?: Deflate): AsyncGenerator<Uint8Array, void, undefined> {
  const encoder = new TextEncoder()
  const written: Written[] = []
  const out = new Output()
  // Names live in one growing buffer: one allocation per many entries, not one each.
  let names = new Uint8Array(BLOCK)
  let namesUsed = 0

  for await (const entry of entries) {
    const text = entry.kind === 'directory' ? `${entry.name}/` : entry.name
    if (namesUsed + text.length * 3 > names.byteLength) {
      const grown = new Uint8Array(Math.max(names.byteLength * 2, namesUsed + text.length * 3))
      grown.set(names.subarray(0, namesUsed))
      names = grown
    }
    const name = names.subarray(namesUsed, namesUsed + encoder.encodeInto(text, names.subarray(namesUsed)).written)
    namesUsed += name.byteLength
    if (name.byteLength > MAX16) throw Object.assign(new RangeError(`rewindfs: a zip entry's name holds at most 65 535 bytes: '${entry.name.slice(0, 80)}…'`), { code: 'ERR_OUT_OF_RANGE' })
    const type = entry.kind === 'directory' ? S_IFDIR : entry.kind === 'symlink' ? S_IFLNK : S_IFREG
    const at = new Date(Math.min(Math.max(Number.isFinite(entry.mtimeMs) ? entry.mtimeMs : DOS_MIN, DOS_MIN), DOS_MAX))
    const record: Written = {
      name,
      flags: name.byteLength !== text.length ? FLAG_UTF8 : 0,
      method: STORED,
      time: (at.getHours() << 11) | (at.getMinutes() << 5) | (at.getSeconds() >> 1),
      date: ((at.getFullYear() - 1980) << 9) | ((at.getMonth() + 1) << 5) | at.getDate(),
      crc: 0,
      compressed: 0,
      size: 0,
      offset: out.offset,
      attributes: (((type | (entry.mode & 0o7777)) << 16) | (entry.kind === 'directory' ? DOS_DIRECTORY : 0)) >>> 0,
      seconds: Math.max(0, Math.min(MAX32, Math.floor(entry.mtimeMs / 1000))) || 0,
      zip64Local: false,
    }
    written.push(record)

    const source = entry.kind === 'directory' || !entry.contents ? [] : entry.contents()
    const slices = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]()
    let exhausted = false
    try {
      const first = await slices.next()
      const second = first.done ? first : await slices.next()
      exhausted = second.done === true
      if (second.done) {
        // Whole in one slice (every directory and symlink, most files): sizes go in the local header,
        // and a file is stored where deflate would not make it smaller, as Info-ZIP's zip does.
        const data = first.done ? new Uint8Array(0) : first.value
        const packed = entry.kind === 'file' && deflate && data.byteLength > 0 ? await collect(deflate(once(data))) : undefined
        const deflated = packed !== undefined && packed.byteLength < data.byteLength
        Object.assign(record, { crc: crc32(data), size: data.byteLength, compressed: deflated ? packed.byteLength : data.byteLength, method: deflated ? DEFLATED : STORED })
        record.zip64Local = record.size >= MAX32 || record.compressed >= MAX32
        localHeader(out, record)
        out.data(deflated ? packed : data)
        if (out.ready) yield* out.full()
        continue
      }
      yield* deflate ? streamed(out, entry, record, [first.value, second.value], slices, deflate) : storedTwice(out, entry, record, [first.value, second.value], slices)
      exhausted = true
    } finally {
      // Abandoned or failed part way: let the source close what it opened.
      if (!exhausted) await slices.return?.()
    }
  }

  const directoryOffset = out.offset
  for (const record of written) {
    centralHeader(out, record)
    if (out.ready) yield* out.full()
  }
  end(out, written.length, out.offset - directoryOffset, directoryOffset)
  yield* out.rest()
}

/** The slices read so far, then the rest of them. */
async function* resume(read: readonly Uint8Array[], rest: Iterator<Uint8Array> | AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  yield* read
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value
}

/**
 * A file of several slices, deflated: its CRC and sizes go in a descriptor after its data, with
 * 8-byte sizes where its local header has a zip64 field (the size may pass 4 GiB, or is unknown).
 */
async function* streamed(
  out: Output,
  entry: ZipEntry,
  record: Written,
  read: readonly Uint8Array[],
  rest: Iterator<Uint8Array> | AsyncIterator<Uint8Array>,
  deflate: Deflate,
): AsyncGenerator<Uint8Array> {
  record.method = DEFLATED
  record.flags |= FLAG_DESCRIPTOR
  record.zip64Local = entry.size === undefined || deflateBound(entry.size) >= MAX32
  localHeader(out, record)
  const counted = async function* (): AsyncGenerator<Uint8Array> {
    for await (const slice of resume(read, rest)) {
      record.crc = crc32(slice, record.crc)
      record.size += slice.byteLength
      yield slice
    }
  }
  for await (const slice of deflate(counted())) {
    record.compressed += slice.byteLength
    out.data(slice)
    yield* out.full()
  }
  if (!record.zip64Local && (record.compressed >= MAX32 || record.size >= MAX32)) {
    throw Object.assign(new RangeError(`rewindfs: '${entry.name}' gave ${record.size} bytes, more than the ${entry.size} it was said to hold, so its zip header is wrong`), {
      code: 'ERR_REWINDFS_ZIP_SIZE',
    })
  }
  out.reserve(24).u32(DESCRIPTOR).u32(record.crc)
  if (record.zip64Local) out.u64(record.compressed).u64(record.size)
  else out.u32(record.compressed).u32(record.size)
  yield* out.full()
}

/**
 * A file of several slices, stored: read once for its CRC and size, then again to write it, so its
 * local header says everything. A streaming reader (Java's ZipInputStream, bsdtar from a pipe)
 * cannot find the end of stored data that is followed by a descriptor; Info-ZIP avoids it too.
 */
async function* storedTwice(out: Output, entry: ZipEntry, record: Written, read: readonly Uint8Array[], rest: Iterator<Uint8Array> | AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const slice of resume(read, rest)) {
    record.crc = crc32(slice, record.crc)
    record.size += slice.byteLength
  }
  record.compressed = record.size
  record.zip64Local = record.size >= MAX32
  localHeader(out, record)
  let again = 0
  for await (const slice of entry.contents!()) {
    again += slice.byteLength
    if (again > record.size) break
    out.data(slice)
    yield* out.full()
  }
  if (again !== record.size) {
    throw Object.assign(new Error(`rewindfs: '${entry.name}' gave ${record.size} bytes, then ${again} when read again to be stored: it changed while being read`), {
      code: 'ERR_REWINDFS_ZIP_SIZE',
    })
  }
}

/** zlib's compressBound: deflate's output for `size` bytes is never longer. */
function deflateBound(size: number): number {
  return size + Math.floor(size / 4096) + Math.floor(size / 16384) + Math.floor(size / 33554432) + 13
}

function localHeader(out: Output, record: Written): void {
  const descriptor = (record.flags & FLAG_DESCRIPTOR) !== 0
  const extra = 9 + (record.zip64Local ? 20 : 0)
  out.reserve(30 + record.name.byteLength + extra)
  out.u32(LOCAL).u16(versionNeeded(record, record.zip64Local)).u16(record.flags).u16(record.method).u16(record.time).u16(record.date)
  // Streamed: CRC and sizes follow in the descriptor.
  if (descriptor) out.u32(0).u32(record.zip64Local ? MAX32 : 0).u32(record.zip64Local ? MAX32 : 0)
  else out.u32(record.crc).u32(Math.min(record.compressed, MAX32)).u32(Math.min(record.size, MAX32))
  out.u16(record.name.byteLength).u16(extra).bytes(record.name)
  out.u16(TIMESTAMP_FIELD).u16(5).u8(1).u32(record.seconds)
  // Streamed, the sizes are not known yet (zero): the field says the descriptor's sizes are 8 bytes.
  if (record.zip64Local) out.u16(ZIP64_FIELD).u16(16).u64(descriptor ? 0 : record.size).u64(descriptor ? 0 : record.compressed)
}

function centralHeader(out: Output, record: Written): void {
  // Only the values that do not fit go in the zip64 field, in the spec's order.
  const large = [record.size, record.compressed, record.offset].filter((value) => value >= MAX32)
  const extra = 9 + (large.length > 0 ? 4 + 8 * large.length : 0)
  out.reserve(46 + record.name.byteLength + extra)
  out
    .u32(CENTRAL)
    .u16(MADE_BY)
    .u16(versionNeeded(record, record.zip64Local || large.length > 0))
    .u16(record.flags)
    .u16(record.method)
    .u16(record.time)
    .u16(record.date)
    .u32(record.crc)
    .u32(Math.min(record.compressed, MAX32))
    .u32(Math.min(record.size, MAX32))
    .u16(record.name.byteLength)
    .u16(extra)
    .u16(0) // comment
    .u16(0) // disk
    .u16(0) // internal attributes
    .u32(record.attributes)
    .u32(Math.min(record.offset, MAX32))
    .bytes(record.name)
  out.u16(TIMESTAMP_FIELD).u16(5).u8(1).u32(record.seconds)
  if (large.length > 0) {
    out.u16(ZIP64_FIELD).u16(8 * large.length)
    for (const value of large) out.u64(value)
  }
}

function end(out: Output, count: number, directorySize: number, directoryOffset: number): void {
  const zip64 = count >= MAX16 || directorySize >= MAX32 || directoryOffset >= MAX32
  out.reserve(56 + 20 + 22)
  if (zip64) {
    const recordOffset = directoryOffset + directorySize
    out.u32(END64).u64(44).u16(MADE_BY).u16(45).u32(0).u32(0).u64(count).u64(count).u64(directorySize).u64(directoryOffset)
    out.u32(LOCATOR64).u32(0).u64(recordOffset).u32(1)
  }
  out
    .u32(END)
    .u16(0)
    .u16(0)
    .u16(Math.min(count, MAX16))
    .u16(Math.min(count, MAX16))
    .u32(Math.min(directorySize, MAX32))
    .u32(Math.min(directoryOffset, MAX32))
    .u16(0)
}

/** 1.0 stores, 2.0 deflates or makes directories, 4.5 has zip64 fields. */
function versionNeeded(record: Written, zip64: boolean): number {
  return zip64 ? 45 : record.method === DEFLATED || (record.attributes & DOS_DIRECTORY) !== 0 ? 20 : 10
}

/** The archive's bytes on their way out: small writes fill shared blocks, a big slice passes as it is. */
class Output {
  /** Bytes written so far: the next record's offset. */
  offset = 0
  private chunks: Uint8Array[] = []
  private block = new Uint8Array(BLOCK)
  private view = new DataView(this.block.buffer)
  private at = 0

  /** Makes room for `size` contiguous bytes. */
  reserve(size: number): this {
    if (this.at + size > this.block.byteLength) {
      this.seal()
      if (size > this.block.byteLength) {
        this.block = new Uint8Array(size)
        this.view = new DataView(this.block.buffer)
      }
    }
    return this
  }

  data(slice: Uint8Array): void {
    if (slice.byteLength === 0) return
    if (slice.byteLength >= BLOCK / 2) {
      this.seal()
      this.chunks.push(slice)
      this.offset += slice.byteLength
    } else this.reserve(slice.byteLength).bytes(slice)
  }

  /** Whether chunks are ready to go. */
  get ready(): boolean {
    return this.chunks.length > 0
  }

  /** Chunks ready to go: sealed blocks and passed slices. */
  *full(): Generator<Uint8Array> {
    while (this.chunks.length > 0) yield this.chunks.shift()!
  }

  *rest(): Generator<Uint8Array> {
    this.seal()
    yield* this.full()
  }

  u8(value: number): this {
    this.view.setUint8(this.at++, value)
    this.offset += 1
    return this
  }

  u16(value: number): this {
    this.view.setUint16(this.at, value, true)
    this.at += 2
    this.offset += 2
    return this
  }

  u32(value: number): this {
    this.view.setUint32(this.at, value >>> 0, true)
    this.at += 4
    this.offset += 4
    return this
  }

  u64(value: number): this {
    return this.u32(value % 0x100000000).u32(Math.floor(value / 0x100000000))
  }

  bytes(value: Uint8Array): this {
    this.block.set(value, this.at)
    this.at += value.byteLength
    this.offset += value.byteLength
    return this
  }

  private seal(): void {
    if (this.at === 0) return
    this.chunks.push(this.block.subarray(0, this.at))
    this.block = new Uint8Array(BLOCK)
    this.view = new DataView(this.block.buffer)
    this.at = 0
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  yield data
}

async function collect(slices: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  for await (const slice of slices) parts.push(slice)
  return concat(parts)
}

interface NodeZlib {
  crc32?: (data: Uint8Array, value?: number) => number
  deflateRawSync(data: Uint8Array, options: { level: number }): Uint8Array
  createDeflateRaw(options: { level: number }): NodeDeflateStream
}

interface NodeDeflateStream {
  on(event: 'data', listener: (chunk: Uint8Array) => void): this
  on(event: 'error', listener: (error: Error) => void): this
  on(event: 'end', listener: () => void): this
  write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean
  end(): this
  destroy(): this
}

const zlib = builtin<NodeZlib>('node:zlib')

/** The slicing-by-8 tables of the CRC-32 polynomial zip uses, for hosts without a native CRC. */
let tables: Int32Array | undefined

function crcTables(): Int32Array {
  const table = new Int32Array(256 * 8)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  for (let n = 0; n < 256; n++) for (let s = 256; s < 2048; s += 256) table[s + n] = (table[s - 256 + n] >>> 8) ^ table[table[s - 256 + n] & 0xff]
  return table
}

/** CRC-32 as zip uses it (IEEE), continuing from `crc`, in JavaScript: eight bytes a step. */
export function crc32Table(data: Uint8Array, crc = 0): number {
  const t = (tables ??= crcTables())
  let c = ~crc
  let i = 0
  for (const last = data.length - 7; i < last; i += 8) {
    const word = c ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24))
    c =
      t[1792 + (word & 0xff)] ^
      t[1536 + ((word >>> 8) & 0xff)] ^
      t[1280 + ((word >>> 16) & 0xff)] ^
      t[1024 + (word >>> 24)] ^
      t[768 + data[i + 4]] ^
      t[512 + data[i + 5]] ^
      t[256 + data[i + 6]] ^
      t[data[i + 7]]
  }
  for (; i < data.length; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8)
  return ~c >>> 0
}

/** CRC-32 continuing from `crc`: node:zlib's where the host has it, else the table. */
export const crc32: (data: Uint8Array, crc?: number) => number = zlib?.crc32 ? (data, crc = 0) => zlib.crc32!(data, crc) : crc32Table

/**
 * The host's deflate at `level` (1–9): node:zlib where Node is (a file of one slice in one
 * synchronous call, a longer one through a stream), else CompressionStream('deflate-raw'), which
 * has no level: browsers use their default. Undefined when the host has neither.
 */
export function nativeDeflate(level: number): Deflate | undefined {
  if (zlib) return (slices) => zlibDeflate(zlib, level, slices)
  if (typeof CompressionStream === 'function') return compressionStreamDeflate
  return undefined
}

async function* zlibDeflate(zlib: NodeZlib, level: number, slices: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const source = slices[Symbol.asyncIterator]()
  try {
    const first = await source.next()
    const second = first.done ? first : await source.next()
    if (second.done) {
      yield zlib.deflateRawSync(first.done ? new Uint8Array(0) : first.value, { level })
      return
    }
    const stream = zlib.createDeflateRaw({ level })
    const output: Uint8Array[] = []
    let failure: Error | undefined
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('data', (chunk) => output.push(chunk))
      stream.on('error', (error) => reject((failure = error)))
      stream.on('end', resolve)
    })
    ended.catch(() => {})
    const write = (slice: Uint8Array) => new Promise<void>((resolve, reject) => stream.write(slice, (error) => (error ? reject(error) : resolve())))
    try {
      await write(first.value)
      await write(second.value)
      for (let next = await source.next(); !next.done; next = await source.next()) {
        if (failure) throw failure
        if (output.length > 0) yield concat(output.splice(0))
        await write(next.value)
      }
      stream.end()
      await ended
      if (output.length > 0) yield concat(output.splice(0))
    } finally {
      // Abandoned or failed: free zlib's state now rather than at collection.
      if (!failure) stream.destroy()
    }
  } finally {
    await source.return?.()
  }
}

/** Deflate through the web's CompressionStream, as in browsers: no level, the platform's default. */
export async function* compressionStreamDeflate(slices: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const stream = new CompressionStream('deflate-raw')
  const writer = stream.writable.getWriter()
  const reader = stream.readable.getReader()
  const output: Uint8Array[] = []
  // Read while writing: a TransformStream holds further writes until its output is read.
  const pumped = (async () => {
    for (let next = await reader.read(); !next.done; next = await reader.read()) output.push(next.value)
  })()
  pumped.catch(() => {})
  let finished = false
  try {
    for await (const slice of slices) {
      await writer.write(slice as Uint8Array<ArrayBuffer>)
      if (output.length > 0) yield concat(output.splice(0))
    }
    await writer.close()
    await pumped
    finished = true
    if (output.length > 0) yield concat(output.splice(0))
  } finally {
    if (!finished) {
      await writer.abort().catch(() => {})
      await reader.cancel().catch(() => {})
    }
  }
}
