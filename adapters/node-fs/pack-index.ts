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
import { Kind, type Place, crc32, decodePlaces, encodePlaces } from './pack-format.js'

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

export function encodeIndex(index: SegmentIndex): Uint8Array {
  const ids = index.entries.map((entry) => encoder.encode(entry.id))
  const forgets = index.entries.map((entry) => (entry.places ? encodePlaces(entry.places) : undefined))
  let size = HEAD_BYTES + 4
  index.entries.forEach((_, i) => (size += ENTRY_BYTES + ids[i].length + (forgets[i]?.length ?? 0)))
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
    bytes.set(ids[i], at + ENTRY_BYTES)
    at += ENTRY_BYTES + ids[i].length
    if (forgets[i]) {
      bytes.set(forgets[i]!, at)
      at += forgets[i]!.length
    }
  })
  view.setUint32(at, crc32(bytes, 0, at), true)
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
  if (view.getUint32(end, true) !== crc32(bytes, 0, end)) return undefined
  return { segment: view.getUint32(8, true), salt: view.getUint32(12, true), covered: getU48(view, 16), count: view.getUint32(24, true) }
}

/**
 * Visits an index's records in order, without making an object of each (open reads a hundred
 * thousand of them): kind, place and lengths, checksum, and where the id (and a forget record's
 * places) start in `bytes`. False when the records do not fill the index exactly.
 */
export function walkIndex(bytes: Uint8Array, head: IndexHead, visit: (kind: Kind, offset: number, idLength: number, length: number, checksum: number, idAt: number) => void): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const end = bytes.length - 4
  let at = HEAD_BYTES
  for (let i = 0; i < head.count; i++) {
    if (at + ENTRY_BYTES > end) return false
    const kind = view.getUint8(at) as Kind
    const idLength = view.getUint16(at + 2, true)
    const offset = getU48(view, at + 4)
    const length = getU48(view, at + 10)
    const checksum = view.getUint32(at + 16, true)
    const idAt = at + ENTRY_BYTES
    at = idAt + idLength
    if (kind === Kind.Forget) at += length
    if (at > end) return false
    visit(kind, offset, idLength, length, checksum, idAt)
  }
  return at === end
}

/** The index the bytes hold, or undefined when they are not a whole, checksummed index. */
export function decodeIndex(bytes: Uint8Array): SegmentIndex | undefined {
  const head = readIndexHead(bytes)
  if (!head) return undefined
  const entries: IndexEntry[] = []
  let places = true
  const whole = walkIndex(bytes, head, (kind, offset, idLength, length, checksum, idAt) => {
    const id = idLength > 0 ? decoder.decode(bytes.subarray(idAt, idAt + idLength)) : ''
    let forgotten: Place[] | undefined
    if (kind === Kind.Forget) {
      forgotten = decodePlaces(bytes.subarray(idAt + idLength, idAt + idLength + length))
      if (!forgotten) places = false
    }
    entries.push({ kind, offset, idLength, length, checksum, id, ...(forgotten ? { places: forgotten } : {}) })
  })
  if (!whole || !places) return undefined
  return { segment: head.segment, salt: head.salt, covered: head.covered, entries }
}

export function indexName(segment: number): string {
  return `${String(segment).padStart(8, '0')}.idx`
}
