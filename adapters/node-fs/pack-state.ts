/**
 * What a scan of the pack segments finds — the blob index, the journal's pieces, forgotten places,
 * copies — written whole (`packs/state`) when a writer closes cleanly after appending, so the next
 * open takes it back instead of rebuilding it: the index's columns are read as they are, no blob
 * inserted. Like an index file it holds nothing the segments do not, and it is believed only while
 * they are exactly as it describes them: the same segments, each of the size it lists and ending in
 * the record it lists (read back and compared). Anything else — a crash after more appends, a
 * collection, a segment written anew, a damaged or foreign file — and it is ignored: open scans
 * the index files and segments as before. Never fsynced; checked by its CRC-32.
 *
 *   0 'RWFSSTA1'  8 u32 salt  12 u32 JSON bytes  16 u32 slots  20 u32 table slots  24 u32 arena
 *  bytes  28 u32 free slots  32 f64 payload bytes  40 u32 blobs  44 u32 dead arena bytes
 *  48 JSON (segments, journal, forgets, copies), then the index's columns, each from a multiple
 *  of 8; at the end u32 CRC-32 of everything before it
 */
import { crc32 } from 'node:zlib'
import type { Place } from './pack-format.js'
import type { LocationColumns } from './pack-locations.js'

const MAGIC = Buffer.from('RWFSSTA1')
const HEAD_BYTES = 48

/** A segment as the state saw it: its size, and its last record (where, and its header as the segment holds it). */
export interface SegmentMark {
  readonly segment: number
  readonly size: number
  /** Undefined when the segment holds no record. */
  readonly last?: { readonly offset: number; readonly head: Uint8Array }
}

/** A piece of the journal: a reset or an append record. */
export interface StatePiece extends Place {
  readonly kind: number
  readonly idLength: number
  readonly length: number
  readonly checksum: number
}

export interface PackState {
  readonly segments: readonly SegmentMark[]
  /** How far the last segment's index file covers it. */
  readonly lastIndexed: number
  readonly journal: readonly StatePiece[]
  readonly forgets: readonly (readonly [number, readonly Place[]])[]
  readonly copies: readonly (readonly [string, readonly Place[]])[]
  readonly index: LocationColumns
}

interface StateJson {
  segments: [number, number, number, string][]
  lastIndexed: number
  journal: [number, number, number, number, number, number][]
  forgets: [number, [number, number][]][]
  copies: [string, [number, number][]][]
}

const align = (at: number) => (at + 7) & ~7

/** The columns in the order they are written: typed arrays first (8-byte ones, then 4, 2, 1), then the arena. */
type Column = 'table' | 'offset' | 'length' | 'segment' | 'checksum' | 'idAt' | 'hash' | 'free' | 'idLength' | 'live' | 'arena'
const COLUMNS: readonly Column[] = ['table', 'offset', 'length', 'segment', 'checksum', 'idAt', 'hash', 'free', 'idLength', 'live', 'arena']

export function encodeState(state: PackState, salt: number): Uint8Array {
  const json: StateJson = {
    segments: state.segments.map((mark) => [mark.segment, mark.size, mark.last?.offset ?? -1, mark.last ? Buffer.from(mark.last.head).toString('base64') : '']),
    lastIndexed: state.lastIndexed,
    journal: state.journal.map((piece) => [piece.kind, piece.segment, piece.offset, piece.idLength, piece.length, piece.checksum]),
    forgets: state.forgets.map(([segment, places]) => [segment, places.map((place) => [place.segment, place.offset])]),
    copies: state.copies.map(([id, places]) => [id, places.map((place) => [place.segment, place.offset])]),
  }
  const text = Buffer.from(JSON.stringify(json))
  const { index } = state
  let size = align(HEAD_BYTES + text.length)
  for (const column of COLUMNS) size = align(size + index[column].byteLength)
  const bytes = Buffer.alloc(size + 4)
  MAGIC.copy(bytes, 0)
  bytes.writeUInt32LE(salt, 8)
  bytes.writeUInt32LE(text.length, 12)
  bytes.writeUInt32LE(index.segment.length, 16)
  bytes.writeUInt32LE(index.table.length, 20)
  bytes.writeUInt32LE(index.arena.length, 24)
  bytes.writeUInt32LE(index.free.length, 28)
  bytes.writeDoubleLE(index.bytes, 32)
  bytes.writeUInt32LE(index.count, 40)
  bytes.writeUInt32LE(index.arenaDead, 44)
  text.copy(bytes, HEAD_BYTES)
  let at = align(HEAD_BYTES + text.length)
  for (const column of COLUMNS) {
    const array = index[column]
    bytes.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), at)
    at = align(at + array.byteLength)
  }
  bytes.writeUInt32LE(crc32(bytes.subarray(0, size)), size)
  return bytes
}

/** The state the bytes hold, for a store of this salt; undefined when they are not a whole one. */
export function decodeState(file: Uint8Array, salt: number): PackState | undefined {
  if (file.length < HEAD_BYTES + 4) return undefined
  // The columns are read in place: 8-byte ones need the bytes at a multiple of 8.
  const bytes = file.byteOffset % 8 === 0 ? Buffer.from(file.buffer, file.byteOffset, file.byteLength) : Buffer.from(file)
  const end = bytes.length - 4
  if (!bytes.subarray(0, 8).equals(MAGIC) || bytes.readUInt32LE(end) !== crc32(bytes.subarray(0, end)) || bytes.readUInt32LE(8) !== salt) return undefined
  const textBytes = bytes.readUInt32LE(12)
  const slots = bytes.readUInt32LE(16)
  const tableSlots = bytes.readUInt32LE(20)
  const arenaBytes = bytes.readUInt32LE(24)
  const freeSlots = bytes.readUInt32LE(28)
  const lengths: Record<Column, number> = { table: tableSlots, offset: slots, length: slots, segment: slots, checksum: slots, idAt: slots, hash: slots, free: freeSlots, idLength: slots, live: slots, arena: arenaBytes }
  const width: Record<Column, number> = { table: 4, offset: 8, length: 8, segment: 4, checksum: 4, idAt: 4, hash: 4, free: 4, idLength: 2, live: 1, arena: 1 }
  let at = align(HEAD_BYTES + textBytes)
  const starts = {} as Record<Column, number>
  for (const column of COLUMNS) {
    starts[column] = at
    at = align(at + lengths[column] * width[column])
  }
  if (at !== end) return undefined
  let json: StateJson
  try {
    json = JSON.parse(bytes.toString('utf8', HEAD_BYTES, HEAD_BYTES + textBytes)) as StateJson
  } catch {
    return undefined
  }
  const { buffer, byteOffset } = bytes
  const view = <T>(make: new (buffer: ArrayBufferLike, offset: number, length: number) => T, column: Column) => new make(buffer, byteOffset + starts[column], lengths[column])
  const places = (list: [number, number][]) => list.map(([segment, offset]) => ({ segment, offset }))
  return {
    segments: json.segments.map(([segment, size, offset, head]) => ({ segment, size, ...(offset >= 0 ? { last: { offset, head: Buffer.from(head, 'base64') } } : {}) })),
    lastIndexed: json.lastIndexed,
    journal: json.journal.map(([kind, segment, offset, idLength, length, checksum]) => ({ kind, segment, offset, idLength, length, checksum })),
    forgets: json.forgets.map(([segment, list]) => [segment, places(list)] as const),
    copies: json.copies.map(([id, list]) => [id, places(list)] as const),
    index: {
      table: view(Int32Array, 'table'),
      offset: view(Float64Array, 'offset'),
      length: view(Float64Array, 'length'),
      segment: view(Uint32Array, 'segment'),
      checksum: view(Uint32Array, 'checksum'),
      idAt: view(Uint32Array, 'idAt'),
      hash: view(Uint32Array, 'hash'),
      free: view(Uint32Array, 'free'),
      idLength: view(Uint16Array, 'idLength'),
      live: view(Uint8Array, 'live'),
      arena: view(Uint8Array, 'arena'),
      arenaDead: bytes.readUInt32LE(44),
      count: bytes.readUInt32LE(40),
      bytes: bytes.readDoubleLE(32),
    },
  }
}
