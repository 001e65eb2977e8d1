/**
 * The index file of a pack segment (`packs/<n>.idx`): the records of the segment's first
 * `covered` bytes — kind, place, lengths, checksum, the blob's id, a forget record's places — so
 * opening a store reads a few bytes per record instead of every segment. Like git's .idx beside
 * its packs it holds nothing the segment does not: one that is missing, damaged (its CRC-32 fails)
 * or not about this segment (its number, its salt, the header of its last record as the segment
 * holds it) is ignored and the segment is scanned. Written for a segment once it is sealed (the
 * last segment, still appended to, is always scanned).
 *
 *   0  'RWFSIDX1'   8 u32 segment   12 u32 salt   16 u48 covered   22 u16 reserved   24 u32 count
 *  28  entries: u8 kind, u8 0, u16 id length, u48 offset, u48 payload length, u32 checksum,
 *      the id, then a forget record's payload
 *  end u32 CRC-32 of everything before it
 */
import { crc32 } from 'node:zlib'
import { Kind, type Place, decodePlaces, encodePlaces } from './pack-format.js'

const MAGIC = new TextEncoder().encode('RWFSIDX1')
const HEAD_BYTES = 28
const ENTRY_BYTES = 20

/** One record of a segment, as its index lists it. */
export interface IndexEntry {
  readonly kind: Kind
  readonly offset: number
  readonly idLength: number
  readonly length: number
  readonly checksum: number
  /** A blob's id ('' for other kinds). */
  readonly id: string
  /** A forget record's places. */
  readonly places?: readonly Place[]
}

export interface SegmentIndex {
  readonly segment: number
  readonly salt: number
  /** The records cover the segment's bytes before this offset. */
  readonly covered: number
  readonly entries: readonly IndexEntry[]
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function setU48(view: DataView, at: number, value: number): void {
  view.setUint32(at, value % 2 ** 32, true)
  view.setUint16(at + 4, Math.floor(value / 2 ** 32), true)
}

function getU48(view: DataView, at: number): number {
  return view.getUint32(at, true) + view.getUint16(at + 4, true) * 2 ** 32
}

/** Writes `id` (whose UTF-8 is `length` bytes) into `bytes` at `at`: an ASCII id (a hash's) byte by byte, with no array made for it. */
function writeId(bytes: Uint8Array, at: number, id: string, length: number): void {
  if (length !== id.length) {
    encoder.encodeInto(id, bytes.subarray(at, at + length))
    return
  }
  for (let i = 0; i < length; i++) bytes[at + i] = id.charCodeAt(i)
}

export function encodeIndex(index: SegmentIndex): Uint8Array {
  const forgets = index.entries.map((entry) => (entry.places ? encodePlaces(entry.places) : undefined))
  let size = HEAD_BYTES + 4
  index.entries.forEach((entry, i) => (size += ENTRY_BYTES + entry.idLength + (forgets[i]?.length ?? 0)))
  const bytes = new Uint8Array(size)
  const view = new DataView(bytes.buffer)
  bytes.set(MAGIC)
  view.setUint32(8, index.segment, true)
  view.setUint32(12, index.salt, true)
  setU48(view, 16, index.covered)
  view.setUint32(24, index.entries.length, true)
  let at = HEAD_BYTES
  index.entries.forEach((entry, i) => {
    view.setUint8(at, entry.kind)
    view.setUint16(at + 2, entry.idLength, true)
    setU48(view, at + 4, entry.offset)
    setU48(view, at + 10, entry.length)
    view.setUint32(at + 16, entry.checksum, true)
    writeId(bytes, at + ENTRY_BYTES, entry.id, entry.idLength)
    at += ENTRY_BYTES + entry.idLength
    if (forgets[i]) {
      bytes.set(forgets[i]!, at)
      at += forgets[i]!.length
    }
  })
  // zlib's CRC-32 (native), the same value as the kit's.
  view.setUint32(at, crc32(bytes.subarray(0, at)), true)
  return bytes
}

/** What an index file says of itself: its segment, salt, how far it covers it, how many records. */
export interface IndexHead {
  readonly segment: number
  readonly salt: number
  readonly covered: number
  readonly count: number
}

/** The head of a whole, checksummed index, or undefined when the bytes are not one. */
export function readIndexHead(bytes: Uint8Array): IndexHead | undefined {
  if (bytes.length < HEAD_BYTES + 4) return undefined
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const end = bytes.length - 4
  if (view.getUint32(end, true) !== crc32(bytes.subarray(0, end))) return undefined
  return { segment: view.getUint32(8, true), salt: view.getUint32(12, true), covered: getU48(view, 16), count: view.getUint32(24, true) }
}

/** An index's records, field by field in typed arrays (open lists a hundred thousand of them: no object, no call each). */
export interface IndexRecords {
  readonly count: number
  readonly kind: Uint8Array
  readonly offset: Float64Array
  readonly idLength: Uint16Array
  /** Payload bytes. */
  readonly length: Float64Array
  readonly checksum: Uint32Array
  /** Where the record's id starts in the index's bytes (a forget record's places follow it). */
  readonly idAt: Uint32Array
}

/** An index's records, read in one pass; undefined when they do not fill the index exactly. */
export function listIndex(bytes: Uint8Array, head: IndexHead): IndexRecords | undefined {
  const { count } = head
  const end = bytes.length - 4
  if (count > (end - HEAD_BYTES) / ENTRY_BYTES) return undefined
  const records = {
    count,
    kind: new Uint8Array(count),
    offset: new Float64Array(count),
    idLength: new Uint16Array(count),
    length: new Float64Array(count),
    checksum: new Uint32Array(count),
    idAt: new Uint32Array(count),
  }
  const u32 = (at: number) => (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0
  let at = HEAD_BYTES
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_BYTES > end) return undefined
    const kind = bytes[at]
    const idLength = bytes[at + 2] | (bytes[at + 3] << 8)
    const length = u32(at + 10) + (bytes[at + 14] | (bytes[at + 15] << 8)) * 2 ** 32
    records.kind[i] = kind
    records.idLength[i] = idLength
    records.offset[i] = u32(at + 4) + (bytes[at + 8] | (bytes[at + 9] << 8)) * 2 ** 32
    records.length[i] = length
    records.checksum[i] = u32(at + 16)
    records.idAt[i] = at + ENTRY_BYTES
    at += ENTRY_BYTES + idLength
    if (kind === Kind.Forget) at += length
    if (at > end) return undefined
  }
  return at === end ? records : undefined
}

/** The index the bytes hold, or undefined when they are not a whole, checksummed index. */
export function decodeIndex(bytes: Uint8Array): SegmentIndex | undefined {
  const head = readIndexHead(bytes)
  const records = head && listIndex(bytes, head)
  if (!head || !records) return undefined
  const entries: IndexEntry[] = []
  for (let i = 0; i < records.count; i++) {
    const kind = records.kind[i] as Kind
    const idAt = records.idAt[i]
    const idLength = records.idLength[i]
    const length = records.length[i]
    const id = idLength > 0 ? decoder.decode(bytes.subarray(idAt, idAt + idLength)) : ''
    let places: Place[] | undefined
    if (kind === Kind.Forget) {
      places = decodePlaces(bytes.subarray(idAt + idLength, idAt + idLength + length))
      if (!places) return undefined
    }
    entries.push({ kind, offset: records.offset[i], idLength, length, checksum: records.checksum[i], id, ...(places ? { places } : {}) })
  }
  return { segment: head.segment, salt: head.salt, covered: head.covered, entries }
}

export function indexName(segment: number): string {
  return `${String(segment).padStart(8, '0')}.idx`
}
