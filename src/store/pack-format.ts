/**
 * The byte format of a pack segment, as pure functions over Uint8Array (no node:fs), so any store
 * that can append to a file and read at an offset can share it (the OPFS store does; exported from
 * `rewindfs/adapter-kit` as `pack`).
 *
 * A segment is a 24-byte header (`RWFSPACK`, format version, segment number, the store's salt,
 * CRC-32 of the 20 bytes before it) and records, each
 *
 *   0  u32  magic 'RWPK'          16  u32  CRC-32 of the id and the payload
 *   4  u8   kind                  20  u32  CRC-32 of bytes 0..20, seeded with the store's salt
 *   5  u8   flags (0)             24       id (UTF-8), then the payload, then one end byte (0x0a)
 *   6  u16  id length
 *   8  u48  payload length (u32 low, u16 high), 14 u16 reserved (0)
 *
 * all little-endian. The header's own checksum makes its lengths trustworthy before anything
 * after them is read, so a record cut short by a crash (a whole header, too few bytes after it) is
 * told from a damaged one; the checksum of id and payload is kept in the index, so one positional
 * read checks a blob. The end byte is never zero, so where a segment's preallocated zeros begin
 * tells whether its last record was written whole. The magic lets a reader find the next record
 * after a damaged one; the salt (a
 * random number per store, in its format file) keeps it from taking for a record one that a blob
 * holds (a pack of another store stored as a file's content).
 */

export const SEGMENT_MAGIC = 'RWFSPACK'
export const SEGMENT_VERSION = 1
export const SEGMENT_HEADER_BYTES = 24
export const RECORD_MAGIC = 0x4b505752 // 'RWPK' read little-endian
export const RECORD_HEADER_BYTES = 24
/** The byte every record ends with (not zero: see above). */
export const RECORD_END = new Uint8Array([0x0a])
/** Payload lengths are 48-bit. */
export const MAX_PAYLOAD = 2 ** 48 - 1

export const Kind = {
  /** A blob under its id. */
  Blob: 1,
  /** One group commit's journal text (whole lines). */
  Append: 2,
  /** The whole journal, replacing everything before it (compaction, repair). */
  Reset: 3,
  /** Records that no longer count, by segment and offset: deleted or set-aside blobs. */
  Forget: 4,
} as const
export type Kind = (typeof Kind)[keyof typeof Kind]

export function isKind(value: number): value is Kind {
  return value >= Kind.Blob && value <= Kind.Forget
}

// ---- CRC-32 (IEEE 802.3, as zlib and `crc32` compute it), slicing by 8 -----------------------

const TABLES = (() => {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256))
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    tables[0][n] = c
  }
  for (let n = 0; n < 256; n++) {
    let c = tables[0][n]
    for (let t = 1; t < 8; t++) {
      c = tables[0][c & 0xff] ^ (c >>> 8)
      tables[t][n] = c
    }
  }
  return tables
})()

/** CRC-32 of `bytes[start, end)`, continuing from `crc` (pass the result of a previous call). */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES
  let c = ~crc
  let i = start
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24))
    c = t7[a & 0xff] ^ t6[(a >>> 8) & 0xff] ^ t5[(a >>> 16) & 0xff] ^ t4[a >>> 24] ^ t3[bytes[i + 4]] ^ t2[bytes[i + 5]] ^ t1[bytes[i + 6]] ^ t0[bytes[i + 7]]
  }
  for (; i < end; i++) c = t0[(c ^ bytes[i]) & 0xff] ^ (c >>> 8)
  return ~c >>> 0
}

// ---- segment header --------------------------------------------------------------------------

const encoder = new TextEncoder()
const MAGIC_BYTES = encoder.encode(SEGMENT_MAGIC)

export function segmentHeader(segment: number, salt: number): Uint8Array {
  const bytes = new Uint8Array(SEGMENT_HEADER_BYTES)
  bytes.set(MAGIC_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(8, SEGMENT_VERSION, true)
  view.setUint32(12, segment, true)
  view.setUint32(16, salt, true)
  view.setUint32(20, crc32(bytes, 0, 20), true)
  return bytes
}

/** What a segment's first bytes say (its version, number and salt), or undefined when they are no whole, checksummed segment header. */
export function readSegmentHeader(bytes: Uint8Array): { version: number; segment: number; salt: number } | undefined {
  if (bytes.length < SEGMENT_HEADER_BYTES) return undefined
  for (let i = 0; i < MAGIC_BYTES.length; i++) if (bytes[i] !== MAGIC_BYTES[i]) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEGMENT_HEADER_BYTES)
  if (view.getUint32(20, true) !== crc32(bytes, 0, 20)) return undefined
  return { version: view.getUint32(8, true), segment: view.getUint32(12, true), salt: view.getUint32(16, true) }
}

// ---- records ---------------------------------------------------------------------------------

export interface RecordHeader {
  readonly kind: number
  readonly idLength: number
  readonly length: number
  /** CRC-32 of the id and the payload. */
  readonly checksum: number
}

/** The checksum a record carries for its id and payload. */
export function recordChecksum(id: Uint8Array, payload: Uint8Array): number {
  return crc32(payload, 0, payload.length, crc32(id))
}

/** Header and id of a record whose payload is `length` bytes, `checksum` its recordChecksum, in a store salted `salt`. */
export function recordHead(kind: Kind, id: Uint8Array, length: number, checksum: number, salt: number): Uint8Array {
  const head = new Uint8Array(RECORD_HEADER_BYTES + id.length)
  writeRecordHead(head, 0, kind, id, length, checksum, salt)
  return head
}

/** The same, written into `target` at `at` (many records' headers in one buffer). */
export function writeRecordHead(target: Uint8Array, at: number, kind: Kind, id: Uint8Array, length: number, checksum: number, salt: number): void {
  if (id.length > 0xffff) throw new RangeError(`rewindfs: a blob id is at most 65535 bytes, got ${id.length}`)
  if (length > MAX_PAYLOAD) throw new RangeError(`rewindfs: a pack record holds at most ${MAX_PAYLOAD} bytes`)
  const view = new DataView(target.buffer, target.byteOffset + at, RECORD_HEADER_BYTES)
  view.setUint32(0, RECORD_MAGIC, true)
  view.setUint8(4, kind)
  view.setUint8(5, 0)
  view.setUint16(6, id.length, true)
  view.setUint32(8, length % 2 ** 32, true)
  view.setUint16(12, Math.floor(length / 2 ** 32), true)
  view.setUint16(14, 0, true)
  view.setUint32(16, checksum, true)
  view.setUint32(20, crc32(target, at, at + 20, salt), true)
  target.set(id, at + RECORD_HEADER_BYTES)
}

export function recordBytes(idLength: number, length: number): number {
  return RECORD_HEADER_BYTES + idLength + length + RECORD_END.length
}

/** Reads the record header at `bytes[at]`: 'short' when fewer than its 24 bytes are there, 'bad' when its magic or checksum is wrong. */
export function readRecordHeader(bytes: Uint8Array, at: number, end: number, salt: number): RecordHeader | 'short' | 'bad' {
  if (end - at < RECORD_HEADER_BYTES) return 'short'
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, RECORD_HEADER_BYTES)
  if (view.getUint32(0, true) !== RECORD_MAGIC) return 'bad'
  if (view.getUint32(20, true) !== crc32(bytes, at, at + 20, salt)) return 'bad'
  return { kind: view.getUint8(4), idLength: view.getUint16(6, true), length: view.getUint32(8, true) + view.getUint16(12, true) * 2 ** 32, checksum: view.getUint32(16, true) }
}

// ---- forget records --------------------------------------------------------------------------

/** Where a record is: its segment and the offset of its header. */
export interface Place {
  readonly segment: number
  readonly offset: number
}

const PLACE_BYTES = 12

export function encodePlaces(places: readonly Place[]): Uint8Array {
  const bytes = new Uint8Array(places.length * PLACE_BYTES)
  const view = new DataView(bytes.buffer)
  places.forEach((place, i) => {
    view.setUint32(i * PLACE_BYTES, place.segment, true)
    view.setUint32(i * PLACE_BYTES + 4, place.offset % 2 ** 32, true)
    view.setUint32(i * PLACE_BYTES + 8, Math.floor(place.offset / 2 ** 32), true)
  })
  return bytes
}

export function decodePlaces(bytes: Uint8Array): Place[] | undefined {
  if (bytes.length % PLACE_BYTES !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const places: Place[] = []
  for (let at = 0; at < bytes.length; at += PLACE_BYTES) {
    places.push({ segment: view.getUint32(at, true), offset: view.getUint32(at + 4, true) + view.getUint32(at + 8, true) * 2 ** 32 })
  }
  return places
}

export function placeKey(place: Place): string {
  return `${place.segment}:${place.offset}`
}
