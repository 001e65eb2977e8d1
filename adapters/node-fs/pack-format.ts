/**
 * The byte format of a pack segment is the kit's (`pack` from rewindfs/adapter-kit, in
 * src/store/pack-format.ts), so the directory store and the OPFS store write the same records.
 */
import { pack } from 'rewindfs/adapter-kit'

export const {
  SEGMENT_MAGIC,
  SEGMENT_VERSION,
  SEGMENT_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_HEADER_BYTES,
  RECORD_END,
  MAX_PAYLOAD,
  Kind,
  isKind,
  crc32,
  segmentHeader,
  readSegmentHeader,
  recordChecksum,
  recordHead,
  writeRecordHead,
  recordBytes,
  readRecordHeader,
  encodePlaces,
  decodePlaces,
  placeKey,
} = pack
export type Kind = pack.Kind
export type RecordHeader = pack.RecordHeader
export type Place = pack.Place
