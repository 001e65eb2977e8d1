/**
 * Scrubbing a pack segment: every record header read, dead records included. Open reads index
 * files, not the segments they describe, and a blob read checks one record: a damaged header of a
 * record nothing reads any more (journal text before the last reset) or a segment's header could
 * rot unseen. `ws.verify()` and `rewindfs verify` scrub, reading what nothing else reads as `git
 * fsck` does, and report what fails as an open that scanned every segment would; nothing is
 * changed or cut.
 */
import { hostFs as fs } from './host-fs.js'
import { SegmentWindow } from './pack-io.js'
import { Kind, type Place, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, SEGMENT_VERSION, isKind, readRecordHeader, readSegmentHeader, recordBytes } from './pack-format.js'

/** Bytes of a segment that fail their checks: where, how many, why. */
export interface SegmentFinding extends Place {
  readonly length: number
  readonly reason: string
}

export interface SegmentScrub {
  readonly segment: number
  /** The scrub reads the segment's bytes before this offset (the log's end: not a torn tail, nor zeros written ahead; a last end byte a crash kept from being written is counted in). */
  readonly end: number
  readonly salt: number
  /** Whether a record at this offset of the segment was forgotten (damage there is passed over). */
  readonly forgotten: (offset: number) => boolean
}

/**
 * Walks a segment's records from its header to `end` as an open without index files would: the
 * segment header, every record header (a damaged one: the bytes to the next whole header are one
 * finding, at the offset open's scan lists them under), and every forget record's checksum. What
 * is damaged where a record was forgotten (set aside already, or deleted) is passed over, as open
 * passes it over. Payloads are left to their readers: a live blob's read checks it, the engine
 * checks every live journal line; dead ones nothing reads, and a damaged one set aside and
 * replaced (a repaired journal, a blob written again) is no damage any more.
 */
export async function scrubSegment(fd: number, scrub: SegmentScrub): Promise<{ findings: SegmentFinding[]; bytesRead: number }> {
  const { segment, end, salt } = scrub
  const reader = new SegmentWindow(fd, end, salt)
  const findings: SegmentFinding[] = []
  const found = (offset: number, length: number, reason: string) => {
    if (!scrub.forgotten(offset)) findings.push({ segment, offset, length, reason })
  }
  const first = await reader.viewAsync(0, SEGMENT_HEADER_BYTES)
  const header = readSegmentHeader(first.bytes.subarray(0, Math.min(first.end, SEGMENT_HEADER_BYTES)))
  if (!header) found(0, Math.min(end, SEGMENT_HEADER_BYTES), 'the segment header fails its checksum')
  else if (header.version !== SEGMENT_VERSION || header.segment !== segment || header.salt !== salt) found(0, SEGMENT_HEADER_BYTES, `the segment header names segment ${header.segment}, version ${header.version}, salt ${header.salt}`)
  let at = SEGMENT_HEADER_BYTES
  while (at < end) {
    const { bytes, offset, end: viewEnd } = await reader.viewAsync(at, RECORD_HEADER_BYTES)
    const head = readRecordHeader(bytes, offset, viewEnd, salt)
    if (typeof head !== 'object') {
      const next = head === 'short' ? undefined : await reader.nextHeaderAsync(at + 1)
      found(at, (next ?? end) - at, head === 'short' ? 'a segment ends inside a record header' : 'a record header fails its checksum')
      if (next === undefined) break
      at = next
      continue
    }
    const recordEnd = at + recordBytes(head.idLength, head.length)
    if (recordEnd > end) {
      found(at, end - at, 'a record runs past the end of its segment')
      break
    }
    if (!isKind(head.kind)) found(at, recordEnd - at, `a record of kind ${head.kind}, which this rewindfs does not write`)
    else if (head.kind === Kind.Forget && (await reader.crc(at + RECORD_HEADER_BYTES, head.idLength + head.length)) !== head.checksum) {
      found(at, recordEnd - at, 'a record of forgotten blobs fails its checksum (they would show again)')
    }
    at = recordEnd
  }
  return { findings, bytesRead: reader.bytesRead }
}

/** Opens a segment for scrubbing; undefined when it is gone (collected meanwhile: its live records were copied first). */
export function openForScrub(file: string): number | undefined {
  try {
    return fs.openSync(file, 'r')
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return undefined
    throw error
  }
}
