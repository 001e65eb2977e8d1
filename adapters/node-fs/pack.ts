/**
 * The pack log: a directory store's blobs and journal as records appended to segment files
 * (`packs/<number>.pack`, format in pack-format.ts), so a group commit — its blobs, then its
 * journal text — is one append to one file and one fdatasync. Order makes it crash-safe: a
 * journal record follows the blobs it names in the same file, and a crash keeps a prefix of what
 * was appended, so a journal record is never durable without its blobs (a segment is fdatasynced
 * before the next one is made). Zeros written ahead of the records make that fdatasync flush data
 * pages, not a new file size.
 *
 * The index (blob id → segment, offset, length, checksum) is kept in memory, so reading a blob is
 * one positional read checked against its checksum, synchronously or not. Open builds it from each
 * segment's index file (pack-index.ts, written when a segment is sealed, and for the last one when
 * the store closes) and scans only what no index file covers: the last segment's records appended
 * after its index file (all of it after a crash, at most `segmentBytes`) and any segment without
 * one, so opening costs the number of records, not the bytes of history; after a clean close it
 * takes back the state the close saved (pack-state.ts), so it costs less than one step per record. A
 * segment's last record cut short by a crash is a torn tail: presented to the engine when it was
 * journal text, kept aside before it is cut at the first append. Bytes that cannot be read
 * anywhere else are damage: reported (as a blob that cannot be read, and as an unreadable journal
 * record where the journal runs), kept, never cut. So is any segment holding less than its index
 * file lists, or missing while the file remains: a crash never cuts what was durable when the file
 * was written, so acknowledged records were lost (the index file is kept: it is the proof); after
 * the last segment, appends then go on in a new segment after it. Deleted blobs are forgotten by a
 * record naming their places; garbage collection copies the live records of a segment that holds
 * mostly dead ones to the end of the log, makes them durable, then removes the old segment's index
 * file and the segment (a segment missing whose index file lists nothing the store still needs is
 * what a collection removed, not a loss).
 */
import { crc32 as nativeCrc32 } from 'node:zlib'
import { hostFs as fs } from './host-fs.js'
import { isTempName, syncDirectory, tempName } from './files.js'
import { SegmentWindow, ZEROS, fdatasync, readFully, readFullyAsync, writeFully } from './pack-io.js'
import { SyncPolicy } from './pack-sync.js'
import { type IndexEntry, type IndexHead, type IndexRecords, decodeIndex, encodeIndex, indexName, listIndex, readIndexHead } from './pack-index.js'
import { type BlobLocation, BlobLocations } from './pack-locations.js'
import { openForScrub, scrubSegment } from './pack-scrub.js'
import { type PackState, type SegmentMark, type StatePiece, decodeState, encodeState } from './pack-state.js'
import {
  Kind,
  type Place,
  RECORD_END,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  SEGMENT_VERSION,
  crc32,
  decodePlaces,
  encodePlaces,
  isKind,
  placeKey,
  readRecordHeader,
  readSegmentHeader,
  recordBytes,
  writeRecordHead,
  recordHead,
  segmentHeader,
} from './pack-format.js'

export type { BlobLocation } from './pack-locations.js'

/** Bytes of a segment that are no record (damage), as a blob id that cannot be read. */
interface Unreadable extends Place {
  readonly length: number
  readonly reason: string
  /** Bytes the segment no longer holds (cut below what its index file lists, or missing): open finds them, a scrub of the segment cannot. */
  readonly lost?: boolean
}

/** A segment's index file as read, its head checked (its number and salt). */
interface IndexFile {
  readonly bytes: Buffer
  readonly head: IndexHead
}

/** A segment gone while its index file remains, and what the index file lists. */
interface MissingSegment {
  readonly segment: number
  readonly covered: number
  readonly bytes: Buffer
  readonly records: IndexRecords
}

function missingReason(covered: number): string {
  return `the segment is missing, but its index file, written when the segment was whole and durable, lists records up to byte ${covered}: it was removed after they were written`
}

/**
 * Where a forget record marks lost bytes as kept aside (repair): the place just past them. Their
 * own place may be where a blob's record started, which a deletion before the loss forgot.
 */
function lostMark(piece: Unreadable): Place {
  return { segment: piece.segment, offset: piece.offset + piece.length }
}

/** A piece of the journal in log order: journal text, or damage where journal text may have been. */
type JournalPiece = (BlobLocation & { readonly kind: typeof Kind.Append | typeof Kind.Reset }) | (Unreadable & { readonly kind: 'damage' })

/** The segment appends go to: its descriptor, and how far zeros were written ahead of its records. */
interface Active {
  readonly segment: number
  readonly fd: number
  allocated: number
}

/**
 * A segment's read descriptor and the reads in flight on it: one retired (its segment collected, a
 * reader's rescan) is closed only once none is, so a read never lands on a closed descriptor or on
 * another file that reused its number.
 */
interface Reader {
  readonly fd: number
  inFlight: number
  retired: boolean
}

/** A segment being collected and its live blobs not copied yet. */
interface CollectState {
  readonly segment: number
  readonly pending: [string, BlobLocation][]
}

/** The last record of the last segment, cut short. */
interface Torn extends Place {
  readonly kind?: number
  /** Where its payload starts (when its header is whole). */
  readonly payloadOffset?: number
  /** Where what was written of it ends (zeros a segment was preallocated with may follow). */
  readonly end: number
  /** Its journal text was copied aside with the journal (setAside), so cutting it keeps nothing more. */
  captured: boolean
}

export interface PackLogOptions {
  readonly readOnly: boolean
  /** The store's salt: record headers are checksummed with it (pack-format.ts). */
  readonly salt: number
  /** A segment is sealed and a new one started once it holds this many bytes. */
  readonly segmentBytes: number
  /** Writes bytes kept aside under a new name in the store's directory; returns the name. */
  readonly keep: (kind: 'pack' | 'blob', label: string, what: string, bytes: Uint8Array) => string
  /** Runs `step` after the store's calls queued so far (garbage collection in the background). */
  readonly background: (step: () => Promise<void>) => void
  /** Budget of a group commit's fdatasync waited for on the calling thread (pack-sync.ts); 0: always in the thread pool. */
  readonly blockingSyncMs: number
}

export interface PackStats {
  readonly segments: number
  readonly blobs: number
  /** Unreadable places listed as blobs. */
  readonly damaged: number
  /** A torn tail waits to be kept aside and cut. */
  readonly torn: boolean
  readonly collecting: boolean
  readonly appendedBytes: number
  /** fdatasyncs of pack segments (directory and new-file fsyncs not counted). */
  readonly fdatasyncs: number
  /** Group commits' fdatasyncs waited for on the calling thread (the rest went to the thread pool). */
  readonly blockingSyncs: number
  readonly collected: number
  /** Segments whose records open took from their index file, or from the state a clean close saved. */
  readonly indexedSegments: number
  /** Opens (and a reader's rescans) that took back the state a clean close saved instead of reading index files (pack-state.ts). */
  readonly statesRestored: number
  /** Bytes of segments open (and a reader's rescans) read record by record: what no index file covered. */
  readonly scannedBytes: number
  /** Blobs read (their payloads), and the bytes of them. */
  readonly blobsRead: number
  readonly blobBytesRead: number
  /** Bytes of journal text read (readJournal: the last reset record and what follows it). */
  readonly journalBytesRead: number
  /** Bytes of segments scrubs read (scrub()). */
  readonly scrubbedBytes: number
}

export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
/** A sealed segment whose live records fill less than this share of it is rewritten. */
const LIVE_FRACTION = 0.5
/**
 * Zeros written ahead of the active segment's records: an fdatasync then flushes data pages only,
 * not a new file size (what PostgreSQL does with its zero-filled WAL segments).
 */
const PREALLOCATE = 4 * 1024 * 1024

/**
 * zlib's CRC-32 of `bytes` continuing from `value`. Node's zlib.crc32 answers 0 for an empty view
 * of a zero-length ArrayBuffer (Buffer.alloc(0), an empty file read) whatever `value` is: zlib
 * returns its initial value when given no buffer. Empty data leaves a CRC as it is.
 */
function crcOn(bytes: Uint8Array, value: number): number {
  return bytes.length === 0 ? value : nativeCrc32(bytes, value)
}

/**
 * An empty blob whose record says checksum 0: what the bug crcOn avoids wrote for an empty content
 * given as such a view (rewindfs before 2026-11-29). Its payload holds no byte to damage and the
 * engine hashes what it reads against the id, so it reads as the empty content it is.
 */
function writtenByCrcBug(location: BlobLocation): boolean {
  return location.length === 0 && location.checksum === 0
}
/** Bytes garbage collection copies per step before letting queued calls run. */
const COLLECT_SLICE = 8 * 1024 * 1024
const DAMAGE_PREFIX = 'pack-damage:'
const NO_ID = new Uint8Array(0)
/** A blob payload up to this size is copied into its group's buffer; a larger one is written from its own bytes. */
const COPY_LIMIT = 64 * 1024
/** The encoding buffer kept between appends grows to at most this. */
const SCRATCH_LIMIT = 4 * 1024 * 1024
/** Characters of a reset record's text encoded at a time (appendText), and the buffer they are encoded into (three bytes a character at most). */
const TEXT_SLICE = 64 * 1024
const TEXT_BUFFER = 3 * TEXT_SLICE

const decoder = new TextDecoder()

export function segmentName(segment: number): string {
  return `${String(segment).padStart(8, '0')}.pack`
}

function segmentNumber(name: string): number | undefined {
  const match = /^(\d{8,})\.pack$/.exec(name)
  return match ? Number(match[1]) : undefined
}

function indexNumber(name: string): number | undefined {
  const match = /^(\d{8,})\.idx$/.exec(name)
  return match ? Number(match[1]) : undefined
}

/** A record to append: its bytes, and what its segment's index lists for it (its place is added). */
interface Appended {
  readonly pieces: readonly Uint8Array[]
  readonly entry: Omit<IndexEntry, 'offset'>
}

function storeError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(`rewindfs: ${message}`), { code })
}

export function formatError(message: string): Error & { code: string } {
  return storeError('ERR_REWINDFS_STORE_FORMAT', message)
}

/** The id under which damaged bytes are listed: `pack-damage:<segment>:<offset>`. */
function damageId(place: Place): string {
  return `${DAMAGE_PREFIX}${place.segment}:${place.offset}`
}

export class PackLog {
  readonly directory: string
  /** Blob id → where its record is. */
  private index = new BlobLocations()
  /** Further copies of a blob (a collection a crash interrupted): forgotten with it. */
  private copies = new Map<string, Place[]>()
  /** Damage, by the id it is listed under. */
  private unreadable = new Map<string, Unreadable>()
  /** Damage the last scrub found (in records nothing reads any more too), by the id it lists it as: what setAside can take. */
  private scrubbed = new Map<string, Unreadable>()
  /** The journal: the last reset and everything after it, in log order. */
  private journal: JournalPiece[] = []
  /** Forgotten places, by the segment of the record that forgot them (collection copies those still needed). */
  private forgets = new Map<number, Place[]>()
  /** Segment number → its size in bytes. */
  private segments = new Map<number, number>()
  private torn: Torn | undefined
  /** Where the last record's end byte is missing (written before the next append). */
  private unterminated: number | undefined
  private active: Active | undefined
  /**
   * The number the next segment takes when appends must not go on in the last one: it was cut
   * short, or segments after it are missing while their index files remain (damage: its bytes are
   * kept, never appended over, and a lost segment's number is not used again, so its index file
   * never describes a segment it was not written for); or it was sealed and the next one failed to
   * start. Undefined: appends go on in the last segment.
   */
  private nextSegment: number | undefined
  /** The records of the active segment (or the last one, before it is opened for appends), for its index file. */
  private activeEntries: IndexEntry[] = []
  /** The active segment's index file as open found it (the records it covers come before activeEntries): decoded only to write it anew. */
  private activeBase: Buffer | undefined
  /** The active segment holds damage: it gets no index file (its damage is found by scanning it). */
  private activeDamaged = false
  /** How far the last segment's index file covers it (0: none), so close writes it only when it grew. */
  private lastIndexed = 0
  /** Each segment's last record: where, and its header as the segment holds it (a saved state is checked against it). */
  private lastRecords = new Map<number, { readonly offset: number; readonly head: Uint8Array }>()
  /** Bytes appended since the last fdatasync. */
  private dirty = false
  /** Descriptors reads go through, by segment. */
  private readonly reads = new Map<number, Reader>()
  /** Set once an fdatasync failed: what was written may be lost, so nothing more is acknowledged. */
  private failure: Error | undefined
  private collecting = false
  private stopped = false
  /** Work counters (tests prove the write path by them, the bench reports them). */
  private readonly counters = { appendedBytes: 0, fdatasyncs: 0, blockingSyncs: 0, collected: 0, indexedSegments: 0, statesRestored: 0, scannedBytes: 0, blobsRead: 0, blobBytesRead: 0, journalBytesRead: 0, scrubbedBytes: 0 }

  /** Whether a group commit's fdatasync blocks (pack-sync.ts), and the bytes written since the last one. */
  private readonly syncPolicy: SyncPolicy
  private unsynced = 0

  constructor(
    private readonly root: string,
    private readonly options: PackLogOptions,
  ) {
    this.directory = `${root}/packs`
    this.syncPolicy = new SyncPolicy(options.blockingSyncMs)
    this.scan()
  }

  // ---- scanning ----------------------------------------------------------------------------

  private segmentFile(segment: number): string {
    return `${this.directory}/${segmentName(segment)}`
  }

  private indexFile(segment: number): string {
    return `${this.directory}/${indexName(segment)}`
  }

  /**
   * Rebuilds everything from the segments (readSegments). A reader beside a writer reads the segments as
   * of one moment: it keeps every segment it read open (a descriptor holds a file the writer's
   * collection removes after), and a segment listed but removed before it was opened was
   * collected meanwhile: its live records were copied to the end first, perhaps to a segment the
   * listing predates, so the reader lists what follows it again and reads on to the end there
   * (what it read before it is as it was). It never starts over: a writer collecting one segment
   * after another as the reader reaches them cannot keep it from finishing.
   */
  private scan(): void {
    try {
      this.readSegments()
    } catch (error) {
      // A reader lets go of what it opened; the writer holds no descriptor from a scan.
      this.closeReads()
      throw error
    }
  }

  /**
   * Reads everything from the segments: the index, the journal, damage and a torn tail. A
   * segment's index file gives the records it covers; the rest of the segment is read record by
   * record. The writer writes the index file of a sealed segment that has none and no damage.
   */
  private readSegments(): void {
    this.closeReads()
    let { names, numbers, lost, missing } = this.listSegments()
    // A reader lists again before it reports segments lost: a writer may have collected one and
    // started the next while the first listing was read (neither is certain to be in it then).
    if ((lost.length > 0 || missing.length > 0) && this.options.readOnly) ({ names, numbers, lost, missing } = this.listSegments())
    // Temp files a crash kept from being renamed into place are the writer's own.
    if (!this.options.readOnly) for (const name of names) if (isTempName(name)) fs.rmSync(`${this.directory}/${name}`, { force: true })
    this.nextSegment = lost.length > 0 ? lost.at(-1)!.segment + 1 : undefined
    if (lost.length === 0 && missing.length === 0 && this.restoreState(numbers)) {
      this.removeStrayIndexes(names, numbers, [])
      // A reader holds the segments as they are now (scan); one removed since, it reads them as below.
      if (!this.options.readOnly || numbers.every((segment) => this.holdListed(segment))) return
      this.closeReads()
    }
    this.lastRecords = new Map()
    /**
     * Blob records in log order, indexed once every forgotten place is known: an index file's
     * (walked again then, its ids taken as bytes: open takes a hundred thousand of them, no string
     * made), or a record found by scanning.
     */
    const blobs: ({ readonly segment: number; readonly bytes: Buffer; readonly records: IndexRecords } | { readonly segment: number; readonly id: string; readonly offset: number; readonly length: number; readonly checksum: number })[] = []
    /** How many blob records, and their ids' bytes: the index is made that large at once. */
    const listed = { blobs: 0, idBytes: 0 }
    const forgotten = new Map<number, Set<number>>()
    const forget = (places: readonly Place[]) => {
      for (const place of places) {
        let offsets = forgotten.get(place.segment)
        if (!offsets) forgotten.set(place.segment, (offsets = new Set()))
        offsets.add(place.offset)
      }
    }
    const isForgotten = (place: Place) => forgotten.get(place.segment)?.has(place.offset) === true
    const damage: Unreadable[] = []
    let journal: JournalPiece[] = []
    this.segments = new Map()
    this.forgets = new Map()
    this.torn = undefined
    this.unterminated = undefined
    this.activeEntries = []
    this.activeBase = undefined
    this.activeDamaged = false
    this.lastIndexed = 0
    /**
     * Segments missing inside the log while their index files remain: the index file says what
     * each held, so its journal text takes its place in the log (as damage), its forgotten places
     * stay forgotten, and whether anything the store still needs was in it is decided below.
     */
    const gone: { readonly piece: Unreadable; readonly text: JournalPiece | undefined; readonly blobs: { readonly offset: number; readonly id: string }[]; readonly forgets: Place[] }[] = []
    let lastPresent = numbers.at(-1)
    let order = [...numbers, ...missing.map((entry) => entry.segment)].sort((a, b) => a - b)
    const missingOf = new Map(missing.map((entry) => [entry.segment, entry]))
    for (let k = 0; k < order.length; k++) {
      const segment = order[k]
      const absent = missingOf.get(segment)
      if (absent) {
        const piece: Unreadable = { segment, offset: SEGMENT_HEADER_BYTES, length: absent.covered - SEGMENT_HEADER_BYTES, reason: missingReason(absent.covered), lost: true }
        const { bytes, records } = absent
        const blobsListed: { offset: number; id: string }[] = []
        const forgets: Place[] = []
        let reset = false
        let append = false
        for (let r = 0; r < records.count; r++) {
          const kind = records.kind[r]
          const idAt = records.idAt[r]
          if (kind === Kind.Blob) blobsListed.push({ offset: records.offset[r], id: bytes.toString('utf8', idAt, idAt + records.idLength[r]) })
          else if (kind === Kind.Reset) reset = true
          else if (kind === Kind.Append) append = true
          else if (kind === Kind.Forget) forgets.push(...(decodePlaces(bytes.subarray(idAt + records.idLength[r], idAt + records.idLength[r] + records.length[r])) ?? []))
        }
        const text: JournalPiece | undefined = reset || append ? { ...piece, kind: 'damage' } : undefined
        if (reset) journal = [text!]
        else if (append) journal.push(text!)
        gone.push({ piece, text, blobs: blobsListed, forgets })
        continue
      }
      const fd = this.openListed(segment)
      if (fd === undefined) {
        // A reader: collected since the listing (scan). What follows it is listed again (itself as
        // missing, if its index file remains); what came before it was read.
        const now = this.listSegments()
        lost = now.lost
        lastPresent = now.numbers.at(-1)
        for (const entry of now.missing) if (entry.segment >= segment) missingOf.set(entry.segment, entry)
        const next = [...now.numbers.filter((n) => n > segment), ...now.missing.flatMap((entry) => (entry.segment >= segment ? [entry.segment] : []))]
        order = [...order.slice(0, k), ...next.sort((a, b) => a - b)]
        k--
        continue
      }
      const last = segment === lastPresent
      // A reader keeps it open: its reads and its journal are of the segments as this scan read them.
      if (this.options.readOnly) this.hold(segment, fd)
      try {
        // Its index file before its size: the file is written once the segment holds all it lists,
        // so one read first never lists more than the size read after it holds, unless bytes were
        // lost (a reader that read the size first could take a writer sealing it for a cut).
        const file = this.indexFileOf(segment)
        const size = fs.fstatSync(fd).size
        const window = new SegmentWindow(fd, size, this.options.salt)
        /** The segment's whole records, in order: what its index file lists. */
        const entries: IndexEntry[] = []
        let damaged = false
        /** Bytes that are no record: listed, and where journal text may have been, damage in the journal too. */
        const damagedAt = (offset: number, length: number, reason: string, journalText = true, lost = false) => {
          const piece = { segment, offset, length, reason, ...(lost ? { lost } : {}) }
          damaged = true
          damage.push(piece)
          if (journalText) journal.push({ ...piece, kind: 'damage' })
        }
        /** A whole record: indexed, and its part of the journal. */
        const place = (kind: Kind, offset: number, idLength: number, length: number, checksum: number, id: string, places?: readonly Place[]) => {
          if (kind === Kind.Blob) {
            blobs.push({ segment, id, offset, length, checksum })
            listed.blobs++
            listed.idBytes += idLength
            return
          }
          const location: BlobLocation = { segment, offset, idLength, length, checksum }
          if (kind === Kind.Forget) {
            forget(places!)
            this.forgets.set(segment, [...(this.forgets.get(segment) ?? []), ...places!])
          } else if (kind === Kind.Reset) journal = [{ ...location, kind: Kind.Reset }]
          else journal.push({ ...location, kind: Kind.Append })
        }
        /** The last whole record taken record by record (after what an index file listed). */
        let lastTaken: IndexEntry | undefined
        const take = (entry: IndexEntry) => {
          entries.push(entry)
          lastTaken = entry
          place(entry.kind, entry.offset, entry.idLength, entry.length, entry.checksum, entry.id, entry.places)
        }
        let at = SEGMENT_HEADER_BYTES
        const indexed = this.readIndex(file, fd, size)
        if (indexed) {
          if (!last && indexed.head.covered < size) {
            // Its records are listed again: its index file is written anew, now.
            for (const entry of decodeIndex(indexed.bytes)!.entries) take(entry)
          } else {
            // The last segment's index file is kept as read: written anew (at close) with what follows it.
            if (last) this.activeBase = indexed.bytes
            const { bytes, records } = indexed
            blobs.push({ segment, bytes, records })
            listed.blobs += indexed.blobs
            listed.idBytes += indexed.idBytes
            for (const i of indexed.others) {
              const kind = records.kind[i] as Kind
              const idEnd = records.idAt[i] + records.idLength[i]
              place(kind, records.offset[i], records.idLength[i], records.length[i], records.checksum[i], '', kind === Kind.Forget ? decodePlaces(bytes.subarray(idEnd, idEnd + records.length[i])) : undefined)
            }
          }
          at = indexed.head.covered
          this.counters.indexedSegments++
        } else {
          // Read apart from the window: the window's first read is taken after the last segment's
          // end is found below (zeroTail), so it never holds bytes from before an append that
          // was in flight then (a reader beside the writer would read zeros inside whole records).
          const head = Buffer.alloc(Math.min(size, SEGMENT_HEADER_BYTES))
          const first = readSegmentHeader(head.subarray(0, readFully(fd, head, head.length, 0)))
          if (first && first.version !== SEGMENT_VERSION) throw formatError(`pack segment ${segmentName(segment)} has format version ${first.version}; this rewindfs reads version ${SEGMENT_VERSION}`)
          if (!first) damagedAt(0, Math.min(size, SEGMENT_HEADER_BYTES), 'the segment header fails its checksum', false)
        }
        // The last segment may end in zeros it was preallocated with: where they start, the log ends.
        const dataEnd = last && at < size ? window.zeroTail() : size
        let end = size
        while (at < size) {
          if (at >= dataEnd) {
            end = at
            break
          }
          const head = window.header(at)
          if (typeof head === 'object') {
            if (!isKind(head.kind)) throw formatError(`pack segment ${segmentName(segment)} holds a record of kind ${head.kind} at byte ${at}, written by a newer rewindfs`)
            const recordEnd = at + recordBytes(head.idLength, head.length)
            const payload = at + RECORD_HEADER_BYTES + head.idLength
            // Its end byte (never zero) before the zeros, or the file ends first: a crash cut it
            // short. Everything but the end byte, its checksum right: whole (the byte is written
            // before the next append), so what the engine replays of it stays.
            const unterminated = last && recordEnd > dataEnd && recordEnd - 1 <= Math.min(dataEnd, size) && crc32(window.bytes(at + RECORD_HEADER_BYTES, head.idLength + head.length)) === head.checksum
            if (unterminated) this.unterminated = recordEnd - 1
            if (recordEnd <= dataEnd || unterminated) {
              const entry = { kind: head.kind, offset: at, idLength: head.idLength, length: head.length, checksum: head.checksum }
              if (head.kind === Kind.Blob) {
                const { bytes, offset } = window.view(at + RECORD_HEADER_BYTES, head.idLength)
                take({ ...entry, id: decoder.decode(bytes.subarray(offset, offset + head.idLength)) })
              } else if (head.kind === Kind.Forget) {
                const bytes = window.bytes(payload, head.length)
                const places = crc32(bytes) === head.checksum ? decodePlaces(bytes) : undefined
                if (places) take({ ...entry, id: '', places })
                else damagedAt(at, recordEnd - at, 'a record of forgotten blobs fails its checksum (they show again)', false)
              } else take({ ...entry, id: '' })
              at = recordEnd
              continue
            }
            // Cut short: torn at the end of the last segment (a whole header says how long the record is), damage elsewhere.
            if (last) this.torn = { segment, offset: at, kind: head.kind, payloadOffset: payload, end: Math.min(dataEnd, size), captured: false }
            else damagedAt(at, size - at, 'a record runs past the end of its segment')
            break
          }
          // No whole record header. The last one of the last segment cut short inside its header
          // (nothing but zeros after it) is torn; anywhere else, damage: what follows is read again
          // from the next whole record header.
          if (last && dataEnd - at <= RECORD_HEADER_BYTES) {
            this.torn = { segment, offset: at, end: dataEnd, captured: false }
            break
          }
          if (head === 'short') {
            damagedAt(at, size - at, 'a segment ends inside a record header')
            break
          }
          const next = window.nextHeader(at + 1)
          damagedAt(at, (next ?? size) - at, 'a record header fails its checksum')
          if (next === undefined) break
          at = next
        }
        // The last segment shorter than its index file (written at a clean close, when all it lists
        // was durable) says: not a crash, which only ever cuts what came after the last fdatasync,
        // but acknowledged records lost (a copy or a tool that cut the file). Damage, never a torn
        // tail to drop: the workspace opens frozen at the last state the segment still proves.
        // So is any other segment shorter than its index file (written when it was sealed): a crash
        // never cuts a sealed segment. Its index file is kept (it is what proves the loss).
        const cut = !indexed ? this.cutShort(file, segment, fd, size) : undefined
        if (cut !== undefined) {
          const from = this.torn?.segment === segment ? this.torn.offset : Math.max(end, at)
          if (last) this.torn = undefined
          if (cut > from) damagedAt(from, cut - from, `the segment ends at byte ${size}, but its index file, written when the segment was whole and durable, lists records up to byte ${cut}: it was cut short after they were written`, true, true)
          if (last) this.nextSegment ??= segment + 1
        }
        this.counters.scannedBytes += window.bytesRead
        // Where the next append goes: after the last record (over the zeros; past the file's end
        // when only its end byte is missing), or after what is torn or damaged.
        this.segments.set(segment, this.torn?.segment === segment ? this.torn.end : Math.max(end, at))
        const lastRecord = lastTaken ? this.lastRecordOf(lastTaken) : indexed?.last
        if (lastRecord) this.lastRecords.set(segment, lastRecord)
        if (last) {
          this.activeEntries = entries
          this.activeDamaged = damaged
          this.lastIndexed = indexed?.head.covered ?? 0
        }
        else if ((!indexed || indexed.head.covered < size) && !damaged && !this.options.readOnly) this.writeIndex(segment, size, entries)
      } finally {
        if (!this.options.readOnly) fs.closeSync(fd)
      }
    }
    // Segments after the last one, missing: what their index files list was acknowledged and is gone.
    for (const { segment, covered } of lost) {
      const piece = { segment, offset: SEGMENT_HEADER_BYTES, length: covered - SEGMENT_HEADER_BYTES, reason: missingReason(covered), lost: true }
      damage.push(piece)
      journal.push({ ...piece, kind: 'damage' })
    }
    // A missing segment's forgotten places: whether another record forgets them too (a collection
    // writes those of a segment it removes again first), then forgotten, as its index file says.
    const forgetsLost = gone.map(({ forgets }) => forgets.some((place) => this.segments.has(place.segment) && !isForgotten(place)))
    for (const { forgets } of gone) forget(forgets)
    this.index = new BlobLocations(listed.blobs, listed.idBytes)
    this.copies = new Map()
    // The first place of an id not forgotten is the blob's; a later one is a copy (a collection a crash interrupted).
    const copy = (id: string, segment: number, offset: number) => this.copies.set(id, [...(this.copies.get(id) ?? []), { segment, offset }])
    for (const source of blobs) {
      const { segment } = source
      const dropped = forgotten.get(segment)
      if ('bytes' in source) {
        const { bytes, records } = source
        for (let i = 0; i < records.count; i++) {
          const offset = records.offset[i]
          if (records.kind[i] !== Kind.Blob || dropped?.has(offset)) continue
          const idAt = records.idAt[i]
          const idLength = records.idLength[i]
          if (!this.index.addFrom(bytes, idAt, idLength, segment, offset, records.length[i], records.checksum[i])) copy(bytes.toString('utf8', idAt, idAt + idLength), segment, offset)
        }
      } else if (!dropped?.has(source.offset) && !this.index.add(source.id, segment, source.offset, source.length, source.checksum)) copy(source.id, segment, source.offset)
    }
    /** Damage repair kept aside (forgotten); lost bytes by the mark past their end (lostMark), so a blob deleted at their place does not hide them. */
    const recorded = (piece: Unreadable) => isForgotten(piece.lost ? lostMark(piece) : piece)
    /**
     * A segment missing inside the log is damage when the store needed something it held: journal
     * text the journal still runs through, a blob held nowhere else and not forgotten, a forgotten
     * place no other record forgets. One that held none of those is what a collection removes
     * (its live records copied to the end first, then the segment and its index file removed: a
     * crash between the two left the index file of a store written before the order was index
     * file first), and its index file proves nothing.
     */
    const evidence = new Set(lost.map(({ segment }) => segment))
    gone.forEach(({ piece, text, blobs: held }, i) => {
      const needed = (text !== undefined && journal.includes(text)) || forgetsLost[i] || held.some(({ offset, id }) => !this.index.has(id) && !isForgotten({ segment: piece.segment, offset }))
      if (!needed) return
      damage.push(piece)
      if (!recorded(piece)) evidence.add(piece.segment)
    })
    this.unreadable = new Map()
    for (const piece of damage) if (!recorded(piece)) this.unreadable.set(damageId(piece), piece)
    this.journal = journal.filter((piece) => piece.kind !== 'damage' || !recorded(piece))
    if (!this.options.readOnly) this.removeStrayIndexes(names, numbers, evidence)
  }

  /** Opens a listed segment; undefined when a reader finds it removed since (ENOENT: collected, scan). */
  private openListed(segment: number): number | undefined {
    try {
      return fs.openSync(this.segmentFile(segment), 'r')
    } catch (error) {
      if (this.options.readOnly && (error as { code?: string }).code === 'ENOENT') return undefined
      throw error
    }
  }

  /** A reader holds a listed segment open (hold); false when it was removed since. */
  private holdListed(segment: number): boolean {
    const fd = this.openListed(segment)
    if (fd !== undefined) this.hold(segment, fd)
    return fd !== undefined
  }

  /** A reader's descriptor of a segment as its scan read it: its reads go through it until the next scan. */
  private hold(segment: number, fd: number): void {
    this.reads.set(segment, { fd, inFlight: 0, retired: false })
  }

  /**
   * The writer removes index files of segments that are gone and prove nothing: one that does not
   * read or lists no record, or one of a segment a collection removed. Not those `kept` (missing
   * segments whose loss is not recorded yet: they are what proves it).
   */
  private removeStrayIndexes(names: readonly string[], present: readonly number[], kept: Iterable<number>): void {
    if (this.options.readOnly) return
    const keep = new Set([...present, ...kept])
    for (const name of names) {
      const indexed = indexNumber(name)
      if (indexed !== undefined && !keep.has(indexed)) fs.rmSync(`${this.directory}/${name}`, { force: true })
    }
  }

  /**
   * The store's files, its segments' numbers in order, the segments lost after the last one, and
   * those missing before it: gone while their index files remain. An index file is written once
   * its segment is durable (sealed, or the last one at a clean close), a crash never removes a
   * segment, and a collection removes only a sealed one (a later segment is there), its index file
   * first: one past the last segment that lists records says they were acknowledged and removed
   * since; one before it, the same when the segment held what the store needs (scan). One that
   * does not read, is about another segment or store, or lists none proves nothing.
   */
  private listSegments(): { names: string[]; numbers: number[]; lost: MissingSegment[]; missing: MissingSegment[] } {
    let names: string[]
    try {
      names = fs.readdirSync(this.directory)
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error
      names = []
    }
    const numbers = names.flatMap((name) => segmentNumber(name) ?? []).sort((a, b) => a - b)
    const present = new Set(numbers)
    const last = numbers.at(-1) ?? 0
    const lost: MissingSegment[] = []
    const missing: MissingSegment[] = []
    for (const segment of names.flatMap((name) => indexNumber(name) ?? []).sort((a, b) => a - b)) {
      if (present.has(segment)) continue
      const file = this.indexFileOf(segment)
      const records = file && listIndex(file.bytes, file.head)
      if (file && records && records.count > 0) (segment > last ? lost : missing).push({ segment, covered: file.head.covered, bytes: file.bytes, records })
    }
    return { names, numbers, lost, missing }
  }

  /**
   * A segment's index file, when it is whole and about this segment as it is: its number and salt,
   * covering no more than the segment holds, its last record's header and id as the segment has
   * them (a segment written anew under the same number does not match).
   */
  private readIndex(file: IndexFile | undefined, fd: number, size: number): { head: IndexHead; bytes: Buffer; records: IndexRecords; blobs: number; idBytes: number; others: number[]; last?: { offset: number; head: Uint8Array } } | undefined {
    if (!file || file.head.covered > size || file.head.covered < SEGMENT_HEADER_BYTES) return undefined
    const { bytes, head } = file
    // Its records fill it exactly (a forget record's places whole); the last one is checked against the segment.
    const records = listIndex(bytes, head)
    if (!records) return undefined
    // Its blob records counted; its others (journal text, forgotten places: a few) listed for the scan.
    let blobs = 0
    let idBytes = 0
    const others: number[] = []
    for (let i = 0; i < records.count; i++) {
      const kind = records.kind[i]
      if (kind === Kind.Blob) {
        blobs++
        idBytes += records.idLength[i]
      } else if (kind === Kind.Forget && records.length[i] % 12 !== 0) return undefined
      else others.push(i)
    }
    const last = records.count - 1
    if (last < 0) return head.covered === SEGMENT_HEADER_BYTES ? { head, bytes, records, blobs, idBytes, others } : undefined
    const offset = records.offset[last]
    if (offset + recordBytes(records.idLength[last], records.length[last]) !== head.covered) return undefined
    const expected = this.listedHead(fd, bytes, records, last)
    return expected && { head, bytes, records, blobs, idBytes, others, last: { offset, head: expected } }
  }

  /** A segment's index file and its head, when it is a whole one about this segment (its number and salt). */
  private indexFileOf(segment: number): IndexFile | undefined {
    let bytes: Buffer
    try {
      bytes = fs.readFileSync(this.indexFile(segment))
    } catch {
      return undefined
    }
    const head = readIndexHead(bytes)
    return head && head.segment === segment && head.salt === this.options.salt ? { bytes, head } : undefined
  }

  /** Record `i` of an index file's records as a header (and id), when the segment holds it so at its place. */
  private listedHead(fd: number, bytes: Buffer, records: IndexRecords, i: number): Uint8Array | undefined {
    const idAt = records.idAt[i]
    const expected = recordHead(records.kind[i] as Kind, bytes.subarray(idAt, idAt + records.idLength[i]), records.length[i], records.checksum[i], this.options.salt)
    const stored = Buffer.allocUnsafe(expected.length)
    return readFully(fd, stored, stored.length, records.offset[i]) === stored.length && stored.equals(expected) ? expected : undefined
  }

  /**
   * Where a segment's index file says its records end, when that is past the segment's end and the
   * file is about this segment (its number and salt, and the last record it lists within what the
   * segment still holds is there, header and id; cut inside its first record, what is left of the
   * segment's header and that record's header and id): the segment was cut short. Undefined
   * otherwise (no index file, or one about another segment that had this number: it proves nothing).
   */
  private cutShort(file: IndexFile | undefined, segment: number, fd: number, size: number): number | undefined {
    if (!file || file.head.covered <= size) return undefined
    const records = listIndex(file.bytes, file.head)
    if (!records || records.count === 0) return undefined
    let within = -1
    for (let i = 0; i < records.count; i++) if (records.offset[i] + recordBytes(records.idLength[i], records.length[i]) <= size) within = i
    const holds = within >= 0 ? this.listedHead(fd, file.bytes, records, within) !== undefined : this.holdsStart(segment, fd, file.bytes, records, size)
    return holds ? file.head.covered : undefined
  }

  /**
   * Whether a segment cut before the end of its first record holds, up to the cut, the header a
   * segment of its number and salt has, then the first record's header and id as its index file lists them.
   */
  private holdsStart(segment: number, fd: number, bytes: Buffer, records: IndexRecords, size: number): boolean {
    if (records.offset[0] !== SEGMENT_HEADER_BYTES) return false
    const idAt = records.idAt[0]
    const first = recordHead(records.kind[0] as Kind, bytes.subarray(idAt, idAt + records.idLength[0]), records.length[0], records.checksum[0], this.options.salt)
    const expected = Buffer.concat([segmentHeader(segment, this.options.salt), first]).subarray(0, size)
    const stored = Buffer.allocUnsafe(expected.length)
    return readFully(fd, stored, stored.length, 0) === stored.length && stored.equals(expected)
  }

  /** A record's header (and id) as its segment holds it, and where. */
  private lastRecordOf(entry: IndexEntry): { offset: number; head: Uint8Array } {
    return { offset: entry.offset, head: recordHead(entry.kind, entry.idLength > 0 ? Buffer.from(entry.id, 'utf8') : NO_ID, entry.length, entry.checksum, this.options.salt) }
  }

  // ---- the saved state ---------------------------------------------------------------------

  private get stateFile(): string {
    return `${this.directory}/state`
  }

  /**
   * Takes back the state a clean close saved (pack-state.ts), if the segments are exactly as it
   * describes them: the same ones, each of its size and ending in its last record. False otherwise
   * (nothing changed: the scan goes on).
   */
  private restoreState(numbers: readonly number[]): boolean {
    let state: PackState | undefined
    let index: BlobLocations
    try {
      state = decodeState(fs.readFileSync(this.stateFile), this.options.salt)
      if (!state || state.segments.length !== numbers.length || state.segments.some((mark, i) => mark.segment !== numbers[i])) return false
      if (state.journal.some((piece) => piece.kind !== Kind.Append && piece.kind !== Kind.Reset)) return false
      for (const mark of state.segments) if (!this.segmentMatches(mark)) return false
      index = BlobLocations.from(state.index)
    } catch {
      return false
    }
    this.index = index
    this.segments = new Map(state.segments.map((mark) => [mark.segment, mark.size]))
    this.lastRecords = new Map(state.segments.flatMap((mark) => (mark.last ? [[mark.segment, mark.last] as const] : [])))
    this.journal = state.journal.map((piece) => ({ ...piece, kind: piece.kind as typeof Kind.Append | typeof Kind.Reset }))
    this.forgets = new Map(state.forgets.map(([segment, places]) => [segment, [...places]]))
    this.copies = new Map(state.copies.map(([id, places]) => [id, [...places]]))
    this.unreadable = new Map()
    this.torn = undefined
    this.unterminated = undefined
    this.activeEntries = []
    // The last segment's index file is read again when appends need it (activeList).
    this.activeBase = undefined
    this.activeDamaged = false
    this.lastIndexed = state.lastIndexed
    this.counters.indexedSegments += numbers.length
    this.counters.statesRestored++
    return true
  }

  /** Whether a segment is of the size a saved state lists and holds the last record it lists. */
  private segmentMatches(mark: SegmentMark): boolean {
    let fd: number
    try {
      fd = fs.openSync(this.segmentFile(mark.segment), 'r')
    } catch {
      return false
    }
    try {
      if (fs.fstatSync(fd).size !== mark.size) return false
      if (mark.last === undefined) return mark.size === SEGMENT_HEADER_BYTES
      const stored = Buffer.allocUnsafe(mark.last.head.length)
      return readFully(fd, stored, stored.length, mark.last.offset) === stored.length && stored.equals(mark.last.head)
    } finally {
      fs.closeSync(fd)
    }
  }

  /**
   * Saves the state for the next open (close, after the last segment's index file): only a
   * writer's that appended, ending clean — nothing torn, unterminated or damaged, every segment's
   * last record known, the last segment's index file covering it whole. Not fsynced: a state a
   * crash damaged fails its checksum, one it left behind no longer matches the segments.
   */
  private saveState(): void {
    if (this.options.readOnly || this.failure || this.counters.appendedBytes === 0 || this.torn || this.unterminated !== undefined || this.unreadable.size > 0 || this.activeDamaged) return
    const numbers = [...this.segments.keys()].sort((a, b) => a - b)
    const marks: SegmentMark[] = []
    for (const segment of numbers) {
      const size = this.segments.get(segment)!
      const last = this.lastRecords.get(segment)
      if (last === undefined ? size !== SEGMENT_HEADER_BYTES : last.offset + last.head.length > size) return
      marks.push({ segment, size, ...(last ? { last } : {}) })
    }
    if (numbers.length > 0 && this.lastIndexed !== this.segments.get(numbers.at(-1)!)) return
    const journal: StatePiece[] = []
    for (const piece of this.journal) {
      if (piece.kind === 'damage') return
      journal.push({ kind: piece.kind, segment: piece.segment, offset: piece.offset, idLength: piece.idLength, length: piece.length, checksum: piece.checksum })
    }
    const bytes = encodeState({ segments: marks, lastIndexed: this.lastIndexed, journal, forgets: [...this.forgets], copies: [...this.copies], index: this.index.columns() }, this.options.salt)
    const temp = tempName(this.stateFile)
    try {
      fs.writeFileSync(temp, bytes)
      fs.renameSync(temp, this.stateFile)
    } catch {
      fs.rmSync(temp, { force: true })
    }
  }

  /**
   * Writes a segment's index file (temp, rename). Not fsynced: it holds nothing the segment does
   * not, and one a crash damaged fails its checksum and is ignored. One that cannot be written is
   * skipped: the segment is scanned instead.
   */
  private writeIndex(segment: number, covered: number, entries: readonly IndexEntry[]): void {
    const last = entries.at(-1)
    if (last) this.lastRecords.set(segment, this.lastRecordOf(last))
    const file = this.indexFile(segment)
    const temp = tempName(file)
    try {
      fs.writeFileSync(temp, encodeIndex({ segment, salt: this.options.salt, covered, entries }))
      fs.renameSync(temp, file)
    } catch {
      fs.rmSync(temp, { force: true })
    }
  }

  // ---- reading -----------------------------------------------------------------------------

  private reader(segment: number): Reader {
    let reader = this.reads.get(segment)
    if (reader === undefined) {
      reader = { fd: fs.openSync(this.segmentFile(segment), 'r'), inFlight: 0, retired: false }
      this.reads.set(segment, reader)
    }
    return reader
  }

  /** Stops handing out a segment's descriptor; closes it once the reads in flight on it are done. */
  private retire(segment: number): void {
    const reader = this.reads.get(segment)
    if (reader === undefined) return
    this.reads.delete(segment)
    reader.retired = true
    if (reader.inFlight === 0) fs.closeSync(reader.fd)
  }

  /** Runs a read; a reader whose segment the writer collected meanwhile looks at the packs again and runs it once more. */
  private async again<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read()
    } catch (error) {
      if (!this.options.readOnly || (error as { code?: string }).code !== 'ENOENT') throw error
      this.scan()
      return read()
    }
  }

  private closeReads(): void {
    for (const segment of [...this.reads.keys()]) this.retire(segment)
  }

  /** Reads `length` bytes at `position` of a segment (a reader's segments may have been collected: it looks again once). */
  private async readAt(segment: number, position: number, length: number): Promise<Uint8Array> {
    // Not from Buffer's shared pool: a small blob kept in memory must not keep a whole pool slab alive.
    const buffer = Buffer.allocUnsafeSlow(length)
    const reader = this.reader(segment)
    reader.inFlight++
    let read: number
    try {
      read = await readFullyAsync(reader.fd, buffer, length, position)
    } finally {
      if (--reader.inFlight === 0 && reader.retired) fs.closeSync(reader.fd)
    }
    return read === length ? buffer : buffer.subarray(0, read)
  }

  has(id: string): boolean {
    return this.index.has(id) || this.unreadable.has(id)
  }

  ids(): string[] {
    return [...this.index.keys(), ...this.unreadable.keys()]
  }

  /** A blob's bytes, checked against its checksum: a mismatch is EIO, never content. */
  read(id: string): Promise<Uint8Array | undefined> {
    return this.again(() => this.readBlob(id))
  }

  private async readBlob(id: string): Promise<Uint8Array | undefined> {
    const location = this.locate(id)
    if (location === undefined) return undefined
    // The header, id and payload in one read: the header as the index has it, the checksum over the id and payload.
    const record = await this.readAt(location.segment, location.offset, RECORD_HEADER_BYTES + location.idLength + location.length)
    return this.checkedNow(id, location, record)
  }

  /**
   * checked(), and for a reader whose record of a blob fails its checks, what the segments say
   * now: the writer may have deleted it since and overwritten its record with zeros (a purge, once
   * the deletion is durable), which is no damage: undefined then, as for a blob not held; its bytes
   * read where the segments hold it now if elsewhere; EIO only when the record it reads is still the blob's.
   */
  private checkedNow(id: string, location: BlobLocation, record: Uint8Array): Uint8Array | undefined {
    try {
      return this.checked(id, location, record)
    } catch (error) {
      if (!this.options.readOnly) throw error
      const now = new PackLog(this.root, this.options)
      try {
        const there = now.index.get(id)
        if (there === undefined) return undefined
        if (there.segment === location.segment && there.offset === location.offset) throw error
        return now.readBlobSync(id, false)
      } finally {
        now.closeReads()
      }
    }
  }

  /** A blob's bytes read synchronously (one positional read), checked as read() checks them. */
  readSync(id: string): Uint8Array | undefined {
    try {
      return this.readBlobSync(id)
    } catch (error) {
      if (!this.options.readOnly || (error as { code?: string }).code !== 'ENOENT') throw error
      this.scan()
      return this.readBlobSync(id)
    }
  }

  /** `now`: a reader's failed check asks the segments as they are now (checkedNow). */
  private readBlobSync(id: string, now = true): Uint8Array | undefined {
    const location = this.locate(id)
    if (location === undefined) return undefined
    const length = RECORD_HEADER_BYTES + location.idLength + location.length
    const buffer = Buffer.allocUnsafeSlow(length)
    const read = readFully(this.reader(location.segment).fd, buffer, length, location.offset)
    const record = buffer.subarray(0, read)
    return now ? this.checkedNow(id, location, record) : this.checked(id, location, record)
  }

  /** Where a blob is; damage listed as a blob throws EIO. */
  private locate(id: string): BlobLocation | undefined {
    const damage = this.unreadable.get(id)
    if (damage) throw this.damageError(damage)
    return this.index.get(id)
  }

  /**
   * A blob's payload from its record as read (header, id, payload): EIO when the header is not the
   * one the index lists (an index file vouches for a record open did not read) or the id and
   * payload fail their checksum; never content.
   */
  private checked(id: string, location: BlobLocation, record: Uint8Array): Uint8Array {
    const where = `blob '${id}' in pack segment ${segmentName(location.segment)} at byte ${location.offset}`
    if (!this.headerMatches(record, Kind.Blob, location)) throw storeError('EIO', `${where}: its record header is damaged; it is kept as it is`)
    const bytes = record.subarray(RECORD_HEADER_BYTES)
    if (bytes.length !== location.idLength + location.length || (crc32(bytes) !== location.checksum && !writtenByCrcBug(location))) {
      throw storeError('EIO', `${where} fails its checksum; it is kept as it is`)
    }
    this.counters.blobsRead++
    this.counters.blobBytesRead += location.length
    return new Uint8Array(bytes.buffer, bytes.byteOffset + location.idLength, location.length)
  }

  /** Whether a record read from its place starts with a whole header saying what the index says of it. */
  private headerMatches(record: Uint8Array, kind: number, location: BlobLocation): boolean {
    const head = readRecordHeader(record, 0, record.length, this.options.salt)
    return typeof head === 'object' && head.kind === kind && head.idLength === location.idLength && head.length === location.length && head.checksum === location.checksum
  }

  /** Every readable blob's id and size (damage listed as a blob has none). */
  sizes(): [string, number][] {
    return this.index.sizes()
  }

  /** A readable blob's size from the index (undefined: not held, or damage listed as a blob). */
  sizeOf(id: string): number | undefined {
    return this.index.lengthOf(id)
  }

  /** How many readable blobs and their bytes, kept as the index changes; and the damage listed as blobs. */
  totals(): { blobs: number; bytes: number; unreadable: string[] } {
    return { blobs: this.index.size, bytes: this.index.bytes, unreadable: [...this.unreadable.keys()] }
  }

  private damageError(damage: Unreadable): Error {
    return storeError('EIO', `pack segment ${segmentName(damage.segment)}, bytes ${damage.offset} to ${damage.offset + damage.length}, cannot be read (${damage.reason}); they are kept as they are`)
  }

  /** The journal as text, as a journal file would hold it: whole lines, then what a torn append left. */
  journalText(): Promise<string> {
    return this.again(() => this.readJournalText())
  }

  private async readJournalText(): Promise<string> {
    const parts: string[] = []
    const line = (text: string) => {
      if (parts.length > 0 && !parts[parts.length - 1].endsWith('\n')) parts.push('\n')
      parts.push(text + '\n')
    }
    for (const piece of this.journal) {
      if (piece.kind === 'damage') {
        // Journal text may have been there: one line no reader takes for a record, so the journal is damaged here.
        line(JSON.stringify({ rewindfs: 'unreadable pack bytes', segment: piece.segment, offset: piece.offset, bytes: piece.length, reason: piece.reason }))
        continue
      }
      // As stored, even if it fails its checksum: every line carries its own, so the engine finds the
      // damaged one. Under a header that is not the one listed (an index file vouched for it), damage.
      const record = await this.readAt(piece.segment, piece.offset, RECORD_HEADER_BYTES + piece.idLength + piece.length)
      if (!this.headerMatches(record, piece.kind, piece)) {
        line(JSON.stringify({ rewindfs: 'unreadable pack bytes', segment: piece.segment, offset: piece.offset, bytes: recordBytes(piece.idLength, piece.length), reason: 'a record header fails its checksum' }))
        continue
      }
      parts.push(decoder.decode(record.subarray(RECORD_HEADER_BYTES + piece.idLength)))
      this.counters.journalBytesRead += piece.length
    }
    const torn = this.torn
    if (torn?.kind === Kind.Append && torn.payloadOffset !== undefined) {
      if (torn.end > torn.payloadOffset) parts.push(decoder.decode(await this.readAt(torn.segment, torn.payloadOffset, torn.end - torn.payloadOffset)))
    }
    return parts.join('')
  }

  /** The bytes kept aside for a blob or damage, exactly as stored. */
  async stored(id: string): Promise<Uint8Array | undefined> {
    const damage = this.unreadable.get(id) ?? this.scrubbed.get(id)
    // A lost segment's damage: nothing of it is left to keep.
    if (damage && !this.segments.has(damage.segment)) return new Uint8Array(0)
    if (damage) return this.readAt(damage.segment, damage.offset, damage.length)
    const location = this.index.get(id)
    return location && this.readAt(location.segment, location.offset + RECORD_HEADER_BYTES + location.idLength, location.length)
  }

  /**
   * Every segment read record header by record header, dead records included (pack-scrub.ts): what
   * an open scanning every segment would find damaged, each under the id it lists damage as
   * (`pack-damage:<segment>:<offset>`) and why, and the bytes open found lost (a last segment cut
   * short, segments missing). Changes nothing; appends and collection may go on meanwhile (they write past what it
   * reads, and a collected segment it did not open yet is skipped: its live records were copied).
   */
  async scrub(): Promise<{ id: string; reason: string }[]> {
    const forgotten = new Set<string>()
    for (const places of this.forgets.values()) for (const place of places) forgotten.add(placeKey(place))
    const work = [...this.segments].sort((a, b) => a[0] - b[0]).map(([segment, size]) => ({ segment, end: this.torn?.segment === segment ? this.torn.offset : size }))
    const out: { id: string; reason: string }[] = []
    const found = new Map<string, Unreadable>()
    for (const { segment, end } of work) {
      // A reader scrubs the segments it holds, as its scan read them (a collection may have removed one since).
      const held = this.options.readOnly ? this.reads.get(segment) : undefined
      if (held) held.inFlight++
      const fd = held ? held.fd : openForScrub(this.segmentFile(segment))
      if (fd === undefined) continue
      try {
        const { findings, bytesRead } = await scrubSegment(fd, { segment, end, salt: this.options.salt, forgotten: (offset) => forgotten.has(`${segment}:${offset}`) })
        this.counters.scrubbedBytes += bytesRead
        for (const finding of findings) {
          const reason = `pack segment ${segmentName(segment)}, bytes ${finding.offset} to ${finding.offset + finding.length}: ${finding.reason}; they are kept as they are`
          out.push({ id: damageId(finding), reason })
          found.set(damageId(finding), { segment, offset: finding.offset, length: finding.length, reason })
        }
      } finally {
        if (held === undefined) fs.closeSync(fd)
        else if (--held.inFlight === 0 && held.retired) fs.closeSync(fd)
      }
    }
    // Bytes open found lost (a segment cut below its index file, or missing): no segment holds them to read, so they are listed as open lists them.
    for (const [id, damage] of this.unreadable) {
      if (!damage.lost || found.has(id)) continue
      out.push({ id, reason: `pack segment ${segmentName(damage.segment)}, bytes ${damage.offset} to ${damage.offset + damage.length}: ${damage.reason}` })
      found.set(id, damage)
    }
    this.scrubbed = found
    return out
  }

  /** A reader looks again (the writer may have appended or collected since). */
  refresh(): void {
    this.scan()
  }

  // ---- writing -----------------------------------------------------------------------------

  /** Throws EIO once an fdatasync failed (what it failed to write may be gone from the kernel's cache too). */
  check(): void {
    if (this.failure) throw storeError('EIO', `an earlier fdatasync of the pack failed (${this.failure.message}); nothing more is written`)
  }

  /** Before any append: the torn tail kept aside and cut, a first segment made (or the last one opened). */
  private prepare(): Active {
    this.check()
    if (this.torn) this.cutTorn()
    if (this.active === undefined) {
      const last = Math.max(0, ...this.segments.keys())
      if (this.nextSegment !== undefined) this.startNext(last)
      else if (last > 0) {
        const fd = fs.openSync(this.segmentFile(last), 'r+')
        this.active = { segment: last, fd, allocated: fs.fstatSync(fd).size }
      } else this.startSegment(1)
    }
    if (this.unterminated !== undefined) {
      const active = this.active!
      writeFully(active.fd, [RECORD_END], this.unterminated)
      active.allocated = Math.max(active.allocated, this.unterminated + 1)
      this.unterminated = undefined
      this.dirty = true
    }
    return this.active!
  }

  /** Writes the index file of the segment appends went to, sealed; the next segment starts a new list. */
  private indexSealed(segment: number): void {
    const entries = this.activeDamaged ? undefined : this.activeList(segment)
    if (entries) this.writeIndex(segment, this.segments.get(segment)!, entries)
    this.activeEntries = []
    this.activeBase = undefined
    this.activeDamaged = false
    this.lastIndexed = 0
  }

  /**
   * On close: the last segment's index file, covering its records so far, so the next open reads
   * it rather than the segment (appends go on after it; open scans only what follows). Not when the
   * segment ends in what a crash left (a torn or unterminated record) or holds damage: those are
   * found by scanning. Only after appends: a store opened and closed without writing (one the engine
   * found damaged, say) is left exactly as it was. A segment written anew under its number does not
   * match it (readIndex).
   */
  private indexLast(): void {
    if (this.active === undefined || this.failure || this.activeDamaged || this.torn || this.unterminated !== undefined) return
    const { segment } = this.active
    const covered = this.segments.get(segment)
    if (covered === undefined || covered <= this.lastIndexed) return
    const entries = this.activeList(segment)
    if (!entries) return
    this.writeIndex(segment, covered, entries)
    this.lastIndexed = covered
  }

  /**
   * Every record of the active segment, for its index file: those its index file listed at open,
   * then the rest. Open from a saved state did not read that file: it is read now, and when it no
   * longer says what it said then, undefined (the segment gets no index file: the next open scans it).
   */
  private activeList(segment: number): IndexEntry[] | undefined {
    if (this.activeBase === undefined && this.lastIndexed > 0) {
      try {
        this.activeBase = fs.readFileSync(this.indexFile(segment))
      } catch {
        return undefined
      }
    }
    if (this.activeBase === undefined) return this.activeEntries
    const base = decodeIndex(this.activeBase)
    if (!base || base.segment !== segment || base.salt !== this.options.salt || base.covered !== this.lastIndexed) return undefined
    return [...base.entries, ...this.activeEntries]
  }

  /** Cuts the zeros preallocated past the active segment's last record (sealing, closing). */
  private trimActive(): void {
    const active = this.active!
    const end = this.segments.get(active.segment)!
    if (active.allocated <= end) return
    fs.ftruncateSync(active.fd, end)
    active.allocated = end
    this.dirty = true
  }

  /** Seals the active segment, durable first (a record in the next one must never be durable without it), and starts the next. */
  private seal(): Active {
    const { segment, fd } = this.active!
    this.trimActive()
    if (this.dirty) {
      try {
        fs.fdatasyncSync(fd)
      } catch (error) {
        // As in sync(): what the kernel failed to write may be gone from its cache too, and a retry's fdatasync would not say so.
        this.failure = error as Error
        throw error
      }
      this.counters.fdatasyncs++
    }
    this.dirty = false
    this.unsynced = 0
    // Let go of before it is closed, the next segment's number kept: one that fails to start
    // (EACCES, ENOSPC, EMFILE) leaves no descriptor for a retry or close() to close again (by then
    // its number may be another file's), and the next append starts it.
    this.active = undefined
    this.nextSegment = segment + 1
    fs.closeSync(fd)
    this.indexSealed(segment)
    this.startNext(segment)
    return this.active!
  }

  /** A new segment, whole or not at all: written to a temp name, fsynced, renamed, the directory fsynced. */
  private startSegment(segment: number): void {
    fs.mkdirSync(this.directory, { recursive: true })
    const file = this.segmentFile(segment)
    const temp = tempName(file)
    const fd = fs.openSync(temp, 'wx+', 0o644)
    try {
      fs.writeSync(fd, segmentHeader(segment, this.options.salt))
      fs.fsyncSync(fd)
      fs.renameSync(temp, file)
      syncDirectory(this.directory)
    } catch (error) {
      // Not kept open: the store holds only the descriptors it goes on using. One renamed into
      // place is made again, over it, by the next try (it holds no record yet).
      fs.closeSync(fd)
      fs.rmSync(temp, { force: true })
      throw error
    }
    this.segments.set(segment, SEGMENT_HEADER_BYTES)
    this.active = { segment, fd, allocated: SEGMENT_HEADER_BYTES }
  }

  /**
   * Appends start a new segment, numbered `nextSegment`, rather than going on in the last one
   * (`last`): it was sealed, or cut short (its bytes are damage, kept as they are), or segments
   * after it are lost. Its last record whole but for its end byte gets the byte first, durably, as
   * a sealed segment is durable before the next one is made.
   */
  private startNext(last: number): void {
    if (this.unterminated !== undefined) {
      const fd = fs.openSync(this.segmentFile(last), 'r+')
      try {
        writeFully(fd, [RECORD_END], this.unterminated)
        fs.fdatasyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      this.unterminated = undefined
    }
    // The last segment's records are not the new one's (its index file stays as it is).
    this.activeEntries = []
    this.activeBase = undefined
    this.activeDamaged = false
    this.lastIndexed = 0
    this.startSegment(this.nextSegment!)
    this.nextSegment = undefined
  }

  /** Keeps the torn tail aside (unless its text was kept with the journal), then cuts it off durably. */
  private cutTorn(): void {
    const torn = this.torn!
    const size = torn.end
    const fd = fs.openSync(this.segmentFile(torn.segment), 'r+')
    try {
      if (!torn.captured) {
        const bytes = Buffer.allocUnsafe(size - torn.offset)
        readFully(fd, bytes, bytes.length, torn.offset)
        this.options.keep('pack', 'torn', `${String(torn.segment).padStart(8, '0')}-${torn.offset}`, bytes)
      }
      fs.ftruncateSync(fd, torn.offset)
      fs.fdatasyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    this.segments.set(torn.segment, torn.offset)
    this.torn = undefined
  }

  /** The torn tail's journal text went aside with the journal: cutting it keeps nothing more. */
  journalKeptAside(): void {
    const torn = this.torn
    if (torn?.kind === Kind.Append && torn.payloadOffset! < this.segments.get(torn.segment)!) torn.captured = true
  }

  /**
   * Appends records (each its pieces) at the end of the log; returns where each starts. A segment
   * past its size is sealed before the next record. A failed write is cut back.
   */
  private append(records: readonly Appended[]): Place[] {
    const pieces: Uint8Array[] = []
    const ends: number[] = []
    let at = 0
    for (const record of records) {
      for (const piece of record.pieces) {
        pieces.push(piece)
        at += piece.length
      }
      ends.push(at)
    }
    const places: Place[] = []
    this.write(pieces, ends, (i, segment, offset) => {
      places.push({ segment, offset })
      return { ...records[i].entry, offset }
    })
    return places
  }

  /**
   * Appends records back to back at the end of the log: `pieces` hold their bytes in order (a piece
   * may hold many records, as a group commit's blobs encoded in one buffer), `ends[i]` is where
   * record i ends in them. A segment past its size is sealed before the next record. Once a run of
   * records is written, `placed(i, segment, offset)` is told where record i went and returns what
   * the segment's index lists for it. A failed write is cut back.
   */
  private write(pieces: readonly Uint8Array[], ends: readonly number[], placed: (record: number, segment: number, offset: number) => IndexEntry): void {
    let active = this.prepare()
    let piece = 0
    /** Bytes of pieces[piece] already written (a segment boundary fell inside it). */
    let used = 0
    for (let next = 0; next < ends.length; ) {
      if (this.segments.get(active.segment)! >= this.options.segmentBytes) active = this.seal()
      const start = this.segments.get(active.segment)!
      const first = next
      const from = first === 0 ? 0 : ends[first - 1]
      // As many records as fit (at least one: a record larger than a segment gets one of its own).
      do next++
      while (next < ends.length && start + ends[next - 1] - from < this.options.segmentBytes)
      const at = start + ends[next - 1] - from
      // The pieces holding those records' bytes, cut where a record of the next run begins.
      const run: Uint8Array[] = []
      for (let left = at - start; left > 0; ) {
        const bytes = pieces[piece]
        const take = Math.min(left, bytes.length - used)
        run.push(used === 0 && take === bytes.length ? bytes : bytes.subarray(used, used + take))
        left -= take
        used += take
        if (used === bytes.length) {
          piece++
          used = 0
        }
      }
      const records = run.length
      const zeros = this.zerosAfter(run, at, active.allocated)
      const allocated = this.writeRecords(active, start, at, zeros, (withZeros) => writeFully(active.fd, withZeros ? run : run.slice(0, records), start))
      this.wrote(active, start, at, allocated)
      for (let i = first; i < next; i++) this.activeEntries.push(placed(i, active.segment, start + (i === 0 ? 0 : ends[i - 1]) - from))
    }
  }

  /**
   * Past the zeros written ahead of the active segment's records (`allocated`): more zeros after
   * records that end at `end`, pushed onto the same write. Appends then overwrite them, and an
   * fdatasync flushes their pages without the file's size. Returns how far the zeros then reach.
   */
  private zerosAfter(run: Uint8Array[], end: number, allocated: number): number {
    if (end <= allocated) return allocated
    const reach = Math.max(end, Math.min(this.options.segmentBytes, end + PREALLOCATE))
    for (let zero = end; zero < reach; zero += ZEROS.length) run.push(ZEROS.subarray(0, Math.min(ZEROS.length, reach - zero)))
    return reach
  }

  /**
   * Writes records to the active segment from `start` to `end` through `put(withZeros)`, the zeros
   * after them reaching `allocated`; returns how far zeros then reach. A failed write is cut back.
   * One that carried zeros and failed for want of space goes again without them: they only spare
   * fdatasync the file's size, and a disk that cannot hold 4 MiB more must still take a commit of a
   * few bytes, as SQLite's does.
   */
  private writeRecords(active: Active, start: number, end: number, allocated: number, put: (withZeros: boolean) => void): number {
    try {
      put(true)
      return allocated
    } catch (error) {
      if ((error as { code?: string })?.code !== 'ENOSPC' || allocated <= end) this.cutBack(active, start, error)
      fs.ftruncateSync(active.fd, start)
      active.allocated = start
    }
    try {
      put(false)
      return end
    } catch (error) {
      this.cutBack(active, start, error)
    }
  }

  /** A write to the active segment from `start` failed: cut back to where it began. */
  private cutBack(active: Active, start: number, error: unknown): never {
    fs.ftruncateSync(active.fd, start)
    active.allocated = start
    throw error
  }

  /** Records were written to the active segment from `start` to `end`, zeros after them to `allocated`. */
  private wrote(active: Active, start: number, end: number, allocated: number): void {
    // The records, and the zeros written after them when they passed the preallocated ones.
    this.unsynced += end - start + (allocated > active.allocated ? allocated - end : 0)
    active.allocated = allocated
    this.segments.set(active.segment, end)
    this.counters.appendedBytes += end - start
    this.dirty = true
  }

  /**
   * Makes everything appended so far durable: one fdatasync of the active segment, waited for on
   * the calling thread while the disk answers within the budget (pack-sync.ts), else in the pool.
   */
  async sync(): Promise<void> {
    this.check()
    if (!this.dirty || this.active === undefined) return
    this.dirty = false
    this.counters.fdatasyncs++
    const bytes = this.unsynced
    this.unsynced = 0
    try {
      if (this.syncPolicy.blocking(bytes)) {
        const start = performance.now()
        fs.fdatasyncSync(this.active.fd)
        this.syncPolicy.took(performance.now() - start)
        this.counters.blockingSyncs++
      } else await fdatasync(this.active.fd)
    } catch (error) {
      // What the kernel failed to write may be gone from its cache too: acknowledge nothing more.
      this.failure = error as Error
      throw error
    }
  }

  /**
   * Appends blobs the log does not hold yet (not durable until the next sync). Their records are
   * encoded back to back into one buffer and written at once: a copy of each payload costs less
   * than the three views and the iovecs a record of its own pieces would (a group commit's blobs
   * are mostly small); one larger than COPY_LIMIT is written from the caller's bytes.
   */
  putBlobs(blobs: readonly (readonly [string, Uint8Array])[]): void {
    const fresh: (readonly [string, Uint8Array])[] = []
    const idLengths: number[] = []
    const seen = blobs.length > 1 ? new Set<string>() : undefined
    let copied = 0
    for (const blob of blobs) {
      const id = blob[0]
      if (this.index.has(id) || seen?.has(id)) continue
      seen?.add(id)
      const idLength = Buffer.byteLength(id, 'utf8')
      fresh.push(blob)
      idLengths.push(idLength)
      copied += RECORD_HEADER_BYTES + idLength + (blob[1].length > COPY_LIMIT ? 0 : blob[1].length + RECORD_END.length)
    }
    if (fresh.length === 0) return
    const buffer = this.scratch(copied)
    const pieces: Uint8Array[] = []
    const ends: number[] = []
    const checksums: number[] = []
    let at = 0
    let written = 0
    let total = 0
    for (let i = 0; i < fresh.length; i++) {
      const [id, bytes] = fresh[i]
      const idLength = idLengths[i]
      buffer.write(id, at + RECORD_HEADER_BYTES, idLength, 'utf8')
      // recordChecksum's value (CRC-32 of the id's UTF-8, then the payload), by zlib: three times faster.
      const checksum = crcOn(bytes, nativeCrc32(id))
      // The id is in place already: it is copied onto itself (a plain view: Buffer's subarray costs ten times more).
      writeRecordHead(buffer, at, Kind.Blob, new Uint8Array(buffer.buffer, buffer.byteOffset + at + RECORD_HEADER_BYTES, idLength), bytes.length, checksum, this.options.salt)
      at += RECORD_HEADER_BYTES + idLength
      if (bytes.length > COPY_LIMIT) {
        pieces.push(buffer.subarray(written, at), bytes, RECORD_END)
        written = at
      } else {
        buffer.set(bytes, at)
        at += bytes.length
        buffer[at++] = RECORD_END[0]
      }
      checksums.push(checksum)
      total += RECORD_HEADER_BYTES + idLength + bytes.length + RECORD_END.length
      ends.push(total)
    }
    if (written < at) pieces.push(buffer.subarray(written, at))
    this.write(pieces, ends, (i, segment, offset) => {
      // One object is both the blob's location and its index file entry.
      const location = { kind: Kind.Blob, segment, offset, idLength: idLengths[i], length: fresh[i][1].length, checksum: checksums[i], id: fresh[i][0] }
      this.index.set(location.id, location)
      return location
    })
  }

  /**
   * A buffer of at least `bytes` to encode records into, valid until the next call: the writes are
   * synchronous, so one buffer serves every append. A fresh buffer per group commit costs more
   * than encoding into it (a 100 KiB one is new pages the kernel faults in and zeroes, and unmaps
   * after: measured 100–500 µs a commit in this VM, against 5–10 for a reused one).
   */
  private scratch(bytes: number): Buffer {
    // A compaction's megabytes are not kept between appends.
    if (bytes > SCRATCH_LIMIT) return Buffer.allocUnsafe(bytes)
    if (this.scratchBuffer === undefined || this.scratchBuffer.length < bytes) this.scratchBuffer = Buffer.allocUnsafe(Math.max(bytes, 256 * 1024))
    return this.scratchBuffer
  }

  private scratchBuffer: Buffer | undefined

  /** A forget record of `payload` (no id), to append. */
  private plain(kind: typeof Kind.Forget, payload: Uint8Array, places?: readonly Place[]): Appended {
    const checksum = nativeCrc32(payload)
    return {
      pieces: [recordHead(kind, new Uint8Array(0), payload.length, checksum, this.options.salt), payload, RECORD_END],
      entry: { kind, idLength: 0, length: payload.length, checksum, id: '', ...(places ? { places } : {}) },
    }
  }

  /**
   * Appends one group commit's journal records (lines, each checked to hold no line end) and makes
   * them, and every blob before them, durable. The record is encoded in one buffer: header, the
   * lines each followed by a line end, the end byte.
   */
  async appendJournal(records: readonly string[]): Promise<void> {
    if (records.length > 0) {
      let length = 0
      for (const record of records) length += Buffer.byteLength(record, 'utf8') + 1
      const bytes = this.scratch(RECORD_HEADER_BYTES + length + RECORD_END.length)
      let at = RECORD_HEADER_BYTES
      for (const record of records) {
        at += bytes.write(record, at, 'utf8')
        bytes[at++] = 0x0a
      }
      bytes[at] = RECORD_END[0]
      const checksum = nativeCrc32(bytes.subarray(RECORD_HEADER_BYTES, at))
      writeRecordHead(bytes, 0, Kind.Append, NO_ID, length, checksum, this.options.salt)
      this.write([bytes.subarray(0, at + 1)], [at + 1], (_, segment, offset) => {
        // One object is both the journal piece and the index file entry.
        const piece = { kind: Kind.Append, segment, offset, idLength: 0, length, checksum, id: '' }
        this.journal.push(piece)
        return piece
      })
    }
    await this.sync()
  }

  /** Replaces the journal: one reset record holding all of it (`text`: pieces, in order), durable when this resolves. */
  async replaceJournal(text: readonly string[]): Promise<void> {
    this.appendReset(text)
    await this.sync()
    this.collectSoon()
  }

  /** The reset record of `text` (pieces, in order), appended (not yet durable). */
  appendReset(text: readonly string[]): void {
    this.journal = [this.appendText(Kind.Reset, text)]
  }

  /**
   * A record of `text` (the UTF-8 of its pieces, in order), appended without encoding all of it at
   * once: encoded a slice at a time through the scratch buffer, twice — for the checksum the head
   * holds, then to write each slice where it goes after the head. A snapshot is megabytes, and a
   * fresh buffer of megabytes costs more in page faults than encoding it again (5.5 MB: 27 ms in
   * this VM; joined into one string first, 36 ms more). The head goes first, as in one write: a
   * crash midway leaves a record cut short (a torn tail), never bytes without a head.
   */
  private appendText(kind: typeof Kind.Reset, text: readonly string[]): BlobLocation & { readonly kind: typeof Kind.Reset } {
    let length = 0
    let checksum = 0
    this.encodeSlices(text, (bytes) => {
      length += bytes.length
      checksum = crcOn(bytes, checksum)
    })
    let active = this.prepare()
    if (this.segments.get(active.segment)! >= this.options.segmentBytes) active = this.seal()
    const start = this.segments.get(active.segment)!
    const end = start + RECORD_HEADER_BYTES + length + RECORD_END.length
    // The end byte, then zeros past those written ahead (as write() does), written after the text.
    const tail: Uint8Array[] = [RECORD_END]
    const zeros = this.zerosAfter(tail, end, active.allocated)
    const allocated = this.writeRecords(active, start, end, zeros, (withZeros) => {
      writeFully(active.fd, [recordHead(kind, NO_ID, length, checksum, this.options.salt)], start)
      let at = start + RECORD_HEADER_BYTES
      this.encodeSlices(text, (bytes) => (at += writeFully(active.fd, [bytes], at)))
      writeFully(active.fd, withZeros ? tail : [RECORD_END], at)
    })
    this.wrote(active, start, end, allocated)
    const entry = { kind, idLength: 0, length, checksum, id: '', offset: start }
    this.activeEntries.push(entry)
    return { ...entry, segment: active.segment }
  }

  /**
   * The UTF-8 of `text`'s pieces, in order (of their concatenation: a pair of surrogates may be cut
   * between two pieces), encoded into the scratch buffer a slice at a time: each filled buffer goes
   * to `take`.
   */
  private encodeSlices(text: readonly string[], take: (bytes: Uint8Array) => void): void {
    const buffer = this.scratch(TEXT_BUFFER)
    let filled = 0
    const encode = (slice: string) => {
      if (filled + 3 * slice.length > TEXT_BUFFER) {
        take(buffer.subarray(0, filled))
        filled = 0
      }
      filled += buffer.write(slice, filled, 'utf8')
    }
    // A high surrogate that ended a piece, encoded with what follows it (each half alone would encode as U+FFFD).
    let carried = ''
    for (const piece of text) {
      for (let from = 0; from < piece.length; ) {
        let to = Math.min(piece.length, from + TEXT_SLICE - carried.length)
        // A slice never ends between the halves of a surrogate pair.
        if ((piece.charCodeAt(to - 1) & 0xfc00) === 0xd800) to--
        if (to === from) {
          // The piece's last character, a high surrogate: one carried before it had no low half after it.
          if (carried !== '') encode(carried)
          carried = piece[from]
          from++
          continue
        }
        encode(carried + (to - from === piece.length ? piece : piece.slice(from, to)))
        carried = ''
        from = to
      }
    }
    if (carried !== '') encode(carried)
    if (filled > 0) take(buffer.subarray(0, filled))
  }

  /** sync(), blocking (a migration on open). */
  syncNow(): void {
    this.check()
    if (!this.dirty || this.active === undefined) return
    this.dirty = false
    this.unsynced = 0
    this.counters.fdatasyncs++
    fs.fdatasyncSync(this.active.fd)
  }

  /** Every place a blob (or damage listed as one) is stored at. */
  private placesOf(id: string): Place[] {
    const damage = this.unreadable.get(id) ?? this.scrubbed.get(id)
    // Lost bytes are marked past their end too: that is what open reads as their loss recorded.
    if (damage?.lost) return [damage, lostMark(damage)]
    const location = this.index.get(id) ?? damage
    return location ? [location, ...(this.copies.get(id) ?? [])] : []
  }

  /** Forgets blobs durably (one record naming their places); missing ids are ignored. */
  async forget(ids: readonly string[]): Promise<void> {
    const places = ids.flatMap((id) => this.placesOf(id))
    if (places.length === 0) return
    const [place] = this.append([this.plain(Kind.Forget, encodePlaces(places), places)])
    this.forgets.set(place.segment, [...(this.forgets.get(place.segment) ?? []), ...places])
    for (const id of ids) {
      this.index.delete(id)
      this.copies.delete(id)
      this.unreadable.delete(id)
      this.scrubbed.delete(id)
    }
    const gone = new Set(places.map(placeKey))
    this.journal = this.journal.filter((piece) => piece.kind !== 'damage' || !gone.has(placeKey(piece)))
    await this.sync()
    this.collectSoon()
  }

  /**
   * Forgets blobs, then overwrites their records' ids and contents with zeros wherever they are
   * stored, copies a collection made included (a purge: a leaked secret must not wait in a dead
   * record until its segment is collected, as SQLite's secure_delete overwrites deleted content).
   * The forget is durable first, so a crash part way leaves forgotten records, zeroed or not.
   * A record whose header fails its checksum is left as it is: nothing says how long it is.
   */
  async erase(ids: readonly string[]): Promise<void> {
    const places = ids.flatMap((id) => this.placesOf(id))
    await this.forget(ids)
    const bySegment = new Map<number, Place[]>()
    for (const place of places) bySegment.set(place.segment, [...(bySegment.get(place.segment) ?? []), place])
    const head = new Uint8Array(RECORD_HEADER_BYTES)
    for (const [segment, list] of bySegment) {
      if (!this.segments.has(segment)) continue
      const fd = fs.openSync(this.segmentFile(segment), 'r+')
      try {
        for (const { offset } of list) {
          if (readFully(fd, head, RECORD_HEADER_BYTES, offset) < RECORD_HEADER_BYTES) continue
          const header = readRecordHeader(head, 0, RECORD_HEADER_BYTES, this.options.salt)
          if (typeof header !== 'object') continue
          const start = offset + RECORD_HEADER_BYTES
          const end = start + header.idLength + header.length
          for (let at = start; at < end; at += ZEROS.length) writeFully(fd, [ZEROS.subarray(0, Math.min(ZEROS.length, end - at))], at)
        }
        fs.fdatasyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
    }
  }

  /** Keeps a blob's stored bytes (or damage's) aside under a new name, then forgets it; undefined if absent. */
  async setAside(id: string, label: string, what: string): Promise<string | undefined> {
    const bytes = await this.stored(id)
    if (bytes === undefined) return undefined
    const name = this.options.keep('blob', label, what, bytes)
    await this.forget([id])
    return name
  }

  // ---- garbage collection ------------------------------------------------------------------

  /** Starts collecting in the background if a sealed segment is mostly dead records. */
  private collectSoon(): void {
    if (this.collecting || this.stopped || this.options.readOnly) return
    if (this.victim() === undefined) return
    this.collecting = true
    this.later()
  }

  /** Queues the next collection step; one that fails stops collecting (the next deletion tries again). */
  private later(state?: CollectState): void {
    this.options.background(async () => {
      try {
        await this.collect(state)
      } catch (error) {
        this.collecting = false
        this.collectError = error as Error
      }
    })
  }

  /** Why the last collection stopped early, if it did. */
  collectError: Error | undefined

  /** The sealed segment with the smallest live share under LIVE_FRACTION, holding no live journal text. */
  private victim(): number | undefined {
    const live = this.index.liveBytes(recordBytes)
    const add = (segment: number, bytes: number) => live.set(segment, (live.get(segment) ?? 0) + bytes)
    for (const [segment, places] of this.forgets) add(segment, RECORD_HEADER_BYTES + 12 * places.length)
    const journal = new Set(this.journal.map((piece) => piece.segment))
    // A segment cut short keeps its bytes and its index file (the proof of the loss) until repair records the loss.
    const cut = new Set([...this.unreadable.values()].flatMap((damage) => (damage.lost ? [damage.segment] : [])))
    let best: number | undefined
    let bestShare = LIVE_FRACTION
    for (const [segment, size] of this.segments) {
      if (segment === this.active?.segment || journal.has(segment) || segment === this.torn?.segment || cut.has(segment)) continue
      const share = (live.get(segment) ?? 0) / Math.max(1, size - SEGMENT_HEADER_BYTES)
      if (share < bestShare) {
        best = segment
        bestShare = share
      }
    }
    return best
  }

  /**
   * One step of collecting: copies up to COLLECT_SLICE bytes of the victim's live records to the
   * end of the log, verbatim (a damaged blob stays damaged), and queues the next step; once all
   * are copied, makes them durable and only then removes the victim.
   */
  private async collect(state?: CollectState): Promise<void> {
    if (this.stopped || this.failure) {
      this.collecting = false
      return
    }
    if (state === undefined) {
      const segment = this.victim()
      if (segment === undefined) {
        this.collecting = false
        return
      }
      const pending = [...this.index.entries()].filter(([, location]) => location.segment === segment).sort((a, b) => a[1].offset - b[1].offset)
      state = { segment, pending }
      // Damage in it is kept aside (and forgotten) before the segment goes.
      for (const [id, damage] of [...this.unreadable]) if (damage.segment === segment) await this.setAside(id, 'damaged', Buffer.from(id, 'utf8').toString('hex'))
    }
    const { segment, pending } = state
    let copied = 0
    while (pending.length > 0 && copied < COLLECT_SLICE) {
      const [id, location] = pending.shift()!
      const now = this.index.get(id)
      if (now?.segment !== location.segment || now.offset !== location.offset) continue // deleted or set aside meanwhile
      const length = recordBytes(location.idLength, location.length)
      const bytes = await this.readAt(segment, location.offset, length)
      // Forgotten or erased while it was read: its copy would bring it back.
      const after = this.index.get(id)
      if (after?.segment !== location.segment || after.offset !== location.offset) continue
      const [place] = this.append([{ pieces: [bytes], entry: { kind: Kind.Blob, idLength: location.idLength, length: location.length, checksum: location.checksum, id } }])
      this.index.set(id, { ...location, ...place })
      // Until the victim is gone, a crash leaves both copies: forgetting the blob forgets both.
      this.copies.set(id, [...(this.copies.get(id) ?? []), location])
      copied += length
    }
    if (pending.length > 0) {
      this.later(state)
      return
    }
    const stillForgotten = (this.forgets.get(segment) ?? []).filter((place) => place.segment !== segment && this.segments.has(place.segment))
    if (stillForgotten.length > 0) {
      const [place] = this.append([this.plain(Kind.Forget, encodePlaces(stillForgotten), stillForgotten)])
      this.forgets.set(place.segment, [...(this.forgets.get(place.segment) ?? []), ...stillForgotten])
    }
    // The copies are durable before the only other copy goes.
    await this.sync()
    this.retire(segment)
    // Its index file first: one left without its segment (a crash between the two) would read as the segment lost.
    fs.rmSync(this.indexFile(segment), { force: true })
    fs.unlinkSync(this.segmentFile(segment))
    syncDirectory(this.directory)
    this.segments.delete(segment)
    this.lastRecords.delete(segment)
    this.counters.collected++
    this.forgets.delete(segment)
    for (const [id, places] of this.copies) {
      const left = places.filter((place) => place.segment !== segment)
      if (left.length > 0) this.copies.set(id, left)
      else this.copies.delete(id)
    }
    for (const places of this.forgets.values()) for (let i = places.length - 1; i >= 0; i--) if (places[i].segment === segment) places.splice(i, 1)
    this.later()
  }

  /** Stops collecting (close): a step in flight finishes, no new one starts. */
  stop(): void {
    this.stopped = true
  }

  async close(): Promise<void> {
    this.stopped = true
    try {
      if (!this.failure) {
        // A store closed cleanly keeps no preallocated zeros.
        if (this.active !== undefined) this.trimActive()
        await this.sync()
        this.indexLast()
        this.saveState()
      }
    } finally {
      const active = this.active
      this.active = undefined
      try {
        if (active !== undefined) fs.closeSync(active.fd)
      } finally {
        this.closeReads()
      }
    }
  }

  /** What the log holds, and work counters since it was opened (appended bytes, fdatasyncs of segments, segments collected). */
  get stats(): PackStats {
    return { segments: this.segments.size, blobs: this.index.size, damaged: this.unreadable.size, torn: this.torn !== undefined, collecting: this.collecting, ...this.counters }
  }
}
