/**
 * The OPFS store's log: blobs and journal text as records of the kit's pack format (what the
 * directory store writes) appended to segment files `<n>.pack` in the store's directory. A group
 * commit's blobs and its journal text go to one segment in one write, made durable by one flush()
 * of its sync access handle: a journal record is never durable without the blobs it names, and a
 * crash keeps a prefix of what was written. Every call on a handle crosses into the browser, so
 * the log makes few: one write per group commit, reads through a window of a few MiB.
 *
 * The index (blob id → segment, offset, length, checksum) is rebuilt from the segments on open. A
 * last record cut short is a torn tail: its journal text is shown to the engine, and before the
 * next append it is kept aside and cut. Bytes that cannot be read anywhere else are damage:
 * listed as a blob that cannot be read (`pack-damage:<segment>:<offset>`) and, where journal text
 * may have been, as a journal line no decoder accepts; kept, never cut. Deleted blobs are forgotten
 * by a record naming their places; a sealed segment whose live records fill less than half of it is
 * collected: its live records are copied to the end of the log and made durable, then it is removed.
 *
 * The writer holds a sync access handle on every segment; a follower (another tab, read-only)
 * holds none and reads through File snapshots, looking again when the writer committed.
 */
import { pack } from 'rewindfs/adapter-kit'
import { type SyncAccessHandle, fileHandle, fileNames, isNotFound, isTempName, opfsError, openSyncHandle, readFully, readWhole, removeIfPresent, storeDirectory, translate, writeAtomically, writeFully } from './files.js'

const { Kind, RECORD_END, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, SEGMENT_VERSION, crc32, decodePlaces, encodePlaces, isKind, placeKey, readRecordHeader, readSegmentHeader, recordBytes, recordChecksum, recordHead, segmentHeader, writeRecordHead } = pack
type Place = pack.Place

/** Where a record is, and what its id and payload must check against. */
interface Location extends Place {
  readonly idLength: number
  /** Payload bytes. */
  readonly length: number
  /** CRC-32 of the id and the payload. */
  readonly checksum: number
}

/** Bytes of a segment that are no record (damage). */
interface Unreadable extends Place {
  readonly length: number
  readonly reason: string
}

/** A piece of the journal in log order: journal text, or damage where journal text may have been. */
type JournalPiece = (Location & { readonly kind: 'text' }) | (Unreadable & { readonly kind: 'damage' })

/** The last record of the last segment, cut short by a crash. */
interface Torn extends Place {
  readonly kind?: number
  /** Where its payload starts (when its header is whole). */
  readonly payloadOffset?: number
  /** Where what was written of it ends (the segment's size). */
  readonly end: number
  /** Its journal text went aside with the journal (setAside), so cutting it keeps nothing more. */
  captured: boolean
}

interface Segment {
  readonly number: number
  /** Where the next record goes: the end of its records (and of any damage). */
  size: number
  /** The writer's handle (held for the log's life). */
  handle?: SyncAccessHandle
  /** A follower's snapshot of the file. */
  file?: File
}

/** Blob id → where its record is, keeping the bytes of the payloads it lists (the store's totals, without a sum per call). */
class LocationIndex extends Map<string, Location> {
  bytes = 0

  override set(id: string, location: Location): this {
    this.bytes += location.length - (this.get(id)?.length ?? 0)
    return super.set(id, location)
  }

  override delete(id: string): boolean {
    const location = this.get(id)
    if (location !== undefined) this.bytes -= location.length
    return super.delete(id)
  }
}

/** A blob put and not yet written (it goes out with the next group commit). */
interface PendingBlob {
  readonly id: string
  readonly name: Uint8Array
  readonly bytes: Uint8Array
}

export interface LogOptions {
  /** The store's name (its directory under the origin's `rewindfs/`). */
  readonly name: string
  /** A segment takes no new group commit once it holds this many bytes. */
  readonly segmentBytes: number
  /** Writes bytes kept aside under a new name; returns the name. */
  readonly keep: (kind: 'pack' | 'blob' | 'format', label: string, what: string | undefined, bytes: Uint8Array) => Promise<string>
}

export interface LogStats {
  readonly segments: number
  readonly blobs: number
  /** Unreadable places listed as blobs. */
  readonly damaged: number
  /** A torn tail waits to be kept aside and cut. */
  readonly torn: boolean
  /** Bytes appended since the log was opened. */
  readonly appendedBytes: number
  /** Writes through a sync access handle (one per group commit). */
  readonly writes: number
  /** flush() calls of a segment's handle (one per group commit). */
  readonly flushes: number
  /** Segments collected (their live records copied on, the file removed). */
  readonly collected: number
  /** Blobs read synchronously (readBlobSync). */
  readonly syncReads: number
}

export const DEFAULT_SEGMENT_BYTES = 32 * 1024 * 1024
const FORMAT_FILE = 'format'
const FORMAT_NAME = 'rewindfs-opfs'
const LAYOUT = 1
/** Reads go through windows this large (each read of a handle or a File is a call into the browser), a few at a time. */
const WINDOW = 2 * 1024 * 1024
const WINDOWS = 4
/** A sealed segment whose live records fill less than this share of it is collected. */
const LIVE_FRACTION = 0.5
/** Bytes of live records collection copies per write. */
const COLLECT_BYTES = 4 * 1024 * 1024
const DAMAGE_PREFIX = 'pack-damage:'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export function segmentName(segment: number): string {
  return `${String(segment).padStart(8, '0')}.pack`
}

function segmentNumber(name: string): number | undefined {
  const match = /^(\d{8,})\.pack$/.exec(name)
  return match ? Number(match[1]) : undefined
}

/** A segment that is not there (any more): the writer collected it. */
function isGone(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'ENOENT' || isNotFound(error)
}

function damageId(place: Place): string {
  return `${DAMAGE_PREFIX}${place.segment}:${place.offset}`
}

function formatError(message: string): Error & { code: string } {
  return Object.assign(new Error(`rewindfs: ${message}`), { code: 'ERR_REWINDFS_STORE_FORMAT' })
}

/** The salt the format file names, or undefined when it names none (missing, or damaged); a newer layout is refused. */
function parseFormat(bytes: Uint8Array | undefined, name: string): number | undefined {
  let parsed: { store?: unknown; layout?: unknown; salt?: unknown } | undefined
  try {
    parsed = bytes === undefined ? undefined : (JSON.parse(decoder.decode(bytes)) as typeof parsed)
  } catch {
    parsed = undefined
  }
  const salt = parsed?.salt
  if (parsed?.store === FORMAT_NAME && typeof parsed.layout === 'number' && parsed.layout > LAYOUT) {
    throw formatError(`the OPFS store '${name}' has layout ${parsed.layout}; this rewindfs reads layout ${LAYOUT}. Open it with a matching rewindfs version.`)
  }
  if (parsed?.store === FORMAT_NAME && parsed.layout === LAYOUT && typeof salt === 'number' && Number.isInteger(salt) && salt >= 0 && salt < 2 ** 32) return salt
  return undefined
}

export class SegmentLog {
  private directory: FileSystemDirectoryHandle | undefined
  private salt: number | undefined
  /** What the last scan found wrong with the format file and mended (saltOf), if anything. */
  notice: string | undefined
  private writer: boolean
  private segments = new Map<number, Segment>()
  /** Blob id → where its record is. */
  private index = new LocationIndex()
  /** Further copies of a blob (the same id put again after a crash lost the index): forgotten with it. */
  private copies = new Map<string, Place[]>()
  /** Damage, by the id it is listed under. */
  private unreadable = new Map<string, Unreadable>()
  /** The journal: the last reset and everything after it, in log order. */
  private journal: JournalPiece[] = []
  /** Places forgotten, by the segment of the record that forgot them (collection copies those still needed). */
  private forgets = new Map<number, Place[]>()
  private torn: Torn | undefined
  /** Where the last record's end byte is missing (written before the next append). */
  private unterminated: Place | undefined
  private pending: PendingBlob[] = []
  private pendingIds = new Map<string, PendingBlob>()
  /** Bytes written since the last flush, by segment. */
  private dirty = new Set<number>()
  /** Set once a flush failed: what was written may be lost, so nothing more is acknowledged. */
  private failure: Error | undefined
  /** The last window read of each segment. */
  private windows = new Map<number, { start: number; bytes: Uint8Array }>()
  private readonly counters = { appendedBytes: 0, writes: 0, flushes: 0, collected: 0, syncReads: 0 }

  private constructor(
    private readonly options: LogOptions,
    writer: boolean,
  ) {
    this.writer = writer
  }

  static async open(options: LogOptions, writer: boolean): Promise<SegmentLog> {
    const log = new SegmentLog(options, writer)
    try {
      await log.scan()
    } catch (error) {
      log.closeHandles()
      throw error
    }
    return log
  }

  // ---- scanning ------------------------------------------------------------------------------

  /** Rebuilds everything from the segments: the index, the journal, damage and a torn tail. */
  async scan(): Promise<void> {
    // A follower may find a segment gone that the writer collected while it looked: it looks again.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.scanOnce()
      } catch (error) {
        if (this.writer || !isGone(error) || attempt >= 3) throw error
      }
    }
  }

  /** Runs a read; a follower whose segment the writer collected since it looked reads the log again and runs it once more. */
  private async again<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read()
    } catch (error) {
      if (this.writer || !isGone(error)) throw error
      await this.scan()
      return read()
    }
  }

  /**
   * The salt records are read with. The format file is the one file with no checksum of its own,
   * and its salt is also in every segment's checksummed header: one that names none, or another,
   * while the headers agree is read as they say, reported (`notice`) and written again by a writer
   * (the damaged file kept aside). Without segments nothing was ever stored: a new one is written.
   */
  private async saltOf(said: number | undefined, format: Uint8Array | undefined, numbers: readonly number[]): Promise<number | undefined> {
    this.notice = undefined
    if (numbers.length === 0) return said
    const salts = new Set<number>()
    for (const number of numbers) {
      const segment = this.segments.get(number)!
      if ((await this.fileSize(segment)) < SEGMENT_HEADER_BYTES) continue
      const header = readSegmentHeader(await this.read(number, 0, SEGMENT_HEADER_BYTES))
      if (header) salts.add(header.salt)
    }
    if (said !== undefined && (salts.size === 0 || salts.has(said))) return said
    const [headers] = salts
    if (salts.size !== 1) {
      const what = format === undefined ? 'is missing' : said === undefined ? 'does not name its layout (damaged?)' : `names salt ${said}, which no segment's header names`
      throw formatError(`the OPFS store '${this.options.name}' holds pack segments but its '${FORMAT_FILE}' file ${what}; nothing was changed`)
    }
    const was = format === undefined ? 'missing (' : `damaged (it named ${said === undefined ? 'no readable layout' : `salt ${said}`}; `
    const found = `the store's '${FORMAT_FILE}' file was ${was}every pack segment's checksummed header names salt ${headers}): it is read as the headers say`
    if (!this.writer) {
      this.notice = `${found}; opened read-only, the file was left as it is (the writer rewrites it)`
      return headers
    }
    const kept = format === undefined ? undefined : await this.options.keep('format', 'damaged', undefined, format)
    await writeAtomically(this.directory!, FORMAT_FILE, encoder.encode(JSON.stringify({ store: FORMAT_NAME, layout: LAYOUT, salt: headers }) + '\n'))
    this.notice = `${found}; the file was written again from them${kept ? `, the damaged one kept aside as 'kept/${kept}'` : ''}`
    return headers
  }

  private async scanOnce(): Promise<void> {
    this.windows.clear()
    this.directory ??= await storeDirectory(this.options.name, false)
    const names = this.directory ? await fileNames(this.directory) : []
    const numbers = names.flatMap((name) => segmentNumber(name) ?? []).sort((a, b) => a - b)
    const format = this.directory && names.includes(FORMAT_FILE) ? await readWhole(this.directory, FORMAT_FILE) : undefined
    const said = parseFormat(format, this.options.name)
    // Temp files of writes a crash cut short are the writer's to remove.
    if (this.writer && this.directory) for (const name of names) if (isTempName(name)) await removeIfPresent(this.directory, name)
    const previous = this.segments
    this.segments = new Map()
    for (const number of numbers) {
      const segment: Segment = { number, size: 0, ...(this.writer ? { handle: previous.get(number)?.handle } : {}) }
      this.segments.set(number, segment)
    }
    // Handles of segments that went away are let go; the writer opens one on each of the others.
    for (const [number, segment] of previous) if (!this.segments.has(number)) segment.handle?.close()
    if (this.writer) for (const segment of this.segments.values()) segment.handle ??= await openSyncHandle((await fileHandle(this.directory!, segmentName(segment.number)))!)
    const salt = await this.saltOf(said, format, numbers)
    this.salt = salt

    const blobs: [string, Location][] = []
    const forgotten = new Set<string>()
    const damage: Unreadable[] = []
    let journal: JournalPiece[] = []
    const forgets = new Map<number, Place[]>()
    this.torn = undefined
    this.unterminated = undefined
    for (const [i, number] of numbers.entries()) {
      const last = i === numbers.length - 1
      const segment = this.segments.get(number)!
      const size = await this.fileSize(segment)
      const damaged = (offset: number, length: number, reason: string, journalText = true) => {
        const piece = { segment: number, offset, length, reason }
        damage.push(piece)
        if (journalText) journal.push({ ...piece, kind: 'damage' })
      }
      if (size < SEGMENT_HEADER_BYTES) {
        // The last segment's header cut short: a crash as it was made. It holds nothing.
        if (last) this.torn = { segment: number, offset: 0, end: size, captured: false }
        else if (size > 0) damaged(0, size, 'a segment shorter than its header', false)
        segment.size = size
        continue
      }
      const first = readSegmentHeader(await this.read(number, 0, SEGMENT_HEADER_BYTES))
      if (first && first.version !== SEGMENT_VERSION) throw formatError(`pack segment ${segmentName(number)} has format version ${first.version}; this rewindfs reads version ${SEGMENT_VERSION}`)
      if (!first) damaged(0, SEGMENT_HEADER_BYTES, 'the segment header fails its checksum', false)
      let at = SEGMENT_HEADER_BYTES
      while (at < size) {
        const head = readRecordHeader(await this.read(number, at, RECORD_HEADER_BYTES), 0, Math.min(RECORD_HEADER_BYTES, size - at), salt ?? 0)
        if (typeof head === 'object') {
          if (!isKind(head.kind)) throw formatError(`pack segment ${segmentName(number)} holds a record of kind ${head.kind} at byte ${at}, written by a newer rewindfs`)
          const recordEnd = at + recordBytes(head.idLength, head.length)
          const payload = at + RECORD_HEADER_BYTES + head.idLength
          // All but its end byte, its checksum right: whole (the byte is written before the next
          // append), so what the engine replays of it stays.
          const unterminated = last && recordEnd === size + 1 && crc32(await this.read(number, at + RECORD_HEADER_BYTES, head.idLength + head.length)) === head.checksum
          if (unterminated) this.unterminated = { segment: number, offset: size }
          if (recordEnd <= size || unterminated) {
            const location: Location = { segment: number, offset: at, idLength: head.idLength, length: head.length, checksum: head.checksum }
            if (head.kind === Kind.Blob) blobs.push([decoder.decode(await this.read(number, at + RECORD_HEADER_BYTES, head.idLength)), location])
            else if (head.kind === Kind.Forget) {
              const bytes = await this.read(number, payload, head.length)
              const places = crc32(bytes) === head.checksum ? decodePlaces(bytes) : undefined
              if (places) {
                for (const place of places) forgotten.add(placeKey(place))
                forgets.set(number, [...(forgets.get(number) ?? []), ...places])
              } else damaged(at, recordEnd - at, 'a record of forgotten blobs fails its checksum (they show again)', false)
            } else if (head.kind === Kind.Reset) journal = [{ ...location, kind: 'text' }]
            else journal.push({ ...location, kind: 'text' })
            at = Math.min(recordEnd, size)
            continue
          }
          // Cut short: torn at the end of the last segment, damage anywhere else.
          if (last) this.torn = { segment: number, offset: at, kind: head.kind, payloadOffset: payload, end: size, captured: false }
          else damaged(at, size - at, 'a record runs past the end of its segment')
          break
        }
        // No whole record header: the last one of the last segment cut short inside its header is
        // torn; anywhere else damage, read again from the next whole record header.
        if (head === 'short') {
          if (last) this.torn = { segment: number, offset: at, end: size, captured: false }
          else damaged(at, size - at, 'a segment ends inside a record header')
          break
        }
        const next = await this.nextHeader(number, at + 1, size)
        damaged(at, (next ?? size) - at, 'a record header fails its checksum')
        if (next === undefined) break
        at = next
      }
      // Appends go after everything there (damage stays), a torn tail is cut first.
      segment.size = this.torn?.segment === number ? this.torn.offset : size
    }
    this.index = new LocationIndex()
    this.copies = new Map()
    for (const [id, location] of blobs) {
      if (forgotten.has(placeKey(location))) continue
      if (!this.index.has(id)) this.index.set(id, location)
      else this.copies.set(id, [...(this.copies.get(id) ?? []), location])
    }
    this.unreadable = new Map()
    for (const piece of damage) if (!forgotten.has(placeKey(piece))) this.unreadable.set(damageId(piece), piece)
    this.journal = journal.filter((piece) => piece.kind !== 'damage' || !forgotten.has(placeKey(piece)))
    this.forgets = forgets
  }

  /** The first offset from `from` on where a whole, checksummed record header is. */
  private async nextHeader(segment: number, from: number, size: number): Promise<number | undefined> {
    for (let at = from; at + RECORD_HEADER_BYTES <= size; at++) {
      const bytes = await this.read(segment, at, RECORD_HEADER_BYTES)
      if (bytes[0] !== 0x52 || bytes[1] !== 0x57 || bytes[2] !== 0x50 || bytes[3] !== 0x4b) continue
      if (typeof readRecordHeader(bytes, 0, bytes.length, this.salt ?? 0) === 'object') return at
    }
    return undefined
  }

  // ---- reading -------------------------------------------------------------------------------

  private async fileSize(segment: Segment): Promise<number> {
    if (segment.handle) return segment.handle.getSize()
    segment.file = await this.snapshot(segment.number)
    return segment.file.size
  }

  private async snapshot(segment: number): Promise<File> {
    const handle = this.directory && (await fileHandle(this.directory, segmentName(segment)))
    if (!handle) throw opfsError('ENOENT', 'read', segmentName(segment), 'the pack segment is gone (the writer collected it)')
    return handle.getFile()
  }

  /** `length` bytes at `at` of a segment (fewer where it ends), through its window. */
  private async read(segment: number, at: number, length: number): Promise<Uint8Array> {
    if (this.segments.get(segment)?.handle) return this.readSync(segment, at, length)
    const window = this.windowed(segment, at, length)
    if (window) return window
    if (length > WINDOW) return this.readDirect(segment, at, length)
    return this.keepWindow(segment, at, length, await this.readDirect(segment, at, WINDOW))
  }

  /** The same through the writer's handle, synchronously. */
  private readSync(number: number, at: number, length: number): Uint8Array {
    const window = this.windowed(number, at, length)
    if (window) return window
    const handle = this.segments.get(number)?.handle
    if (!handle) throw opfsError('ENOENT', 'read', segmentName(number), 'no such pack segment (or it is not open for writing here)')
    if (length > WINDOW) return readFully(handle, length, at)
    return this.keepWindow(number, at, length, readFully(handle, WINDOW, at))
  }

  private windowed(segment: number, at: number, length: number): Uint8Array | undefined {
    const window = this.windows.get(segment)
    if (window && at >= window.start && at + length <= window.start + window.bytes.length) return window.bytes.subarray(at - window.start, at - window.start + length)
    return undefined
  }

  private keepWindow(segment: number, at: number, length: number, bytes: Uint8Array): Uint8Array {
    this.windows.delete(segment)
    // The least recently filled window goes first.
    if (this.windows.size >= WINDOWS) this.windows.delete(this.windows.keys().next().value!)
    this.windows.set(segment, { start: at, bytes })
    return bytes.subarray(0, Math.min(length, bytes.length))
  }

  private async readDirect(number: number, at: number, length: number): Promise<Uint8Array> {
    const segment = this.segments.get(number)
    if (!segment) throw opfsError('ENOENT', 'read', segmentName(number), 'no such pack segment')
    if (segment.handle) return readFully(segment.handle, length, at)
    // A follower's snapshot goes stale once the writer appends: it takes a new one and reads again.
    for (let attempt = 0; ; attempt++) {
      segment.file ??= await this.snapshot(number)
      try {
        return new Uint8Array(await segment.file.slice(at, at + length).arrayBuffer())
      } catch (error) {
        segment.file = undefined
        if (attempt > 0 || isNotFound(error)) throw translate(error, 'read', segmentName(number))
      }
    }
  }

  has(id: string): boolean {
    return this.index.has(id) || this.unreadable.has(id) || this.pendingIds.has(id)
  }

  ids(): string[] {
    return [...this.index.keys(), ...this.unreadable.keys(), ...[...this.pendingIds.keys()].filter((id) => !this.index.has(id))]
  }

  /** A blob's bytes (a copy), checked against its checksum: a mismatch is EIO, never content. */
  readBlob(id: string): Promise<Uint8Array | undefined> {
    return this.again(() => this.readBlobOnce(id))
  }

  private async readBlobOnce(id: string): Promise<Uint8Array | undefined> {
    const location = this.locate(id)
    if (location === undefined || location instanceof Uint8Array) return location
    // The id and the payload in one read: their checksum covers both.
    return this.checked(id, location, await this.read(location.segment, location.offset + RECORD_HEADER_BYTES, location.idLength + location.length))
  }

  /**
   * A blob's bytes read synchronously through the writer's handle (history on demand: one read,
   * checked like readBlob); only the writer holds handles.
   */
  readBlobSync(id: string): Uint8Array | undefined {
    const location = this.locate(id)
    if (location === undefined || location instanceof Uint8Array) return location
    this.counters.syncReads++
    return this.checked(id, location, this.readSync(location.segment, location.offset + RECORD_HEADER_BYTES, location.idLength + location.length))
  }

  /** Every blob's id and size, without reading contents. */
  sizes(): [string, number][] {
    const sizes: [string, number][] = [...this.index].map(([id, location]) => [id, location.length])
    for (const [id, blob] of this.pendingIds) if (!this.index.has(id)) sizes.push([id, blob.bytes.length])
    return sizes
  }

  /** A blob's size, written or pending (undefined: not held, or damage listed as a blob). */
  sizeOf(id: string): number | undefined {
    return this.pendingIds.get(id)?.bytes.length ?? this.index.get(id)?.length
  }

  /** How many readable blobs (pending ones included) and their bytes, and the damage listed as blobs. */
  totals(): { blobs: number; bytes: number; unreadable: string[] } {
    let blobs = this.index.size
    let bytes = this.index.bytes
    for (const [id, blob] of this.pendingIds) {
      if (this.index.has(id)) continue
      blobs++
      bytes += blob.bytes.length
    }
    return { blobs, bytes, unreadable: [...this.unreadable.keys()] }
  }

  /** Where a blob is: its bytes when it is not written yet, undefined when absent; damage throws. */
  private locate(id: string): Location | Uint8Array | undefined {
    const pending = this.pendingIds.get(id)
    if (pending) return new Uint8Array(pending.bytes)
    const damage = this.unreadable.get(id)
    if (damage) throw this.damageError(damage)
    return this.index.get(id)
  }

  private checked(id: string, location: Location, bytes: Uint8Array): Uint8Array {
    if (bytes.length !== location.idLength + location.length || crc32(bytes) !== location.checksum) {
      throw opfsError('EIO', 'read', id, `blob '${id}' in pack segment ${segmentName(location.segment)} at byte ${location.offset} fails its checksum; it is kept as it is`)
    }
    return bytes.slice(location.idLength)
  }

  private damageError(damage: Unreadable): Error {
    return opfsError('EIO', 'read', damageId(damage), `pack segment ${segmentName(damage.segment)}, bytes ${damage.offset} to ${damage.offset + damage.length}, cannot be read (${damage.reason}); they are kept as they are`)
  }

  /** The journal as text, as a journal file would hold it: whole lines, then what a torn append left. */
  journalText(): Promise<string> {
    return this.again(() => this.journalTextOnce())
  }

  private async journalTextOnce(): Promise<string> {
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
      // As stored, even if it fails its checksum: every line carries its own, so the engine finds the damaged one.
      parts.push(decoder.decode(await this.read(piece.segment, piece.offset + RECORD_HEADER_BYTES + piece.idLength, piece.length)))
    }
    const torn = this.torn
    if (torn?.kind === Kind.Append && torn.payloadOffset !== undefined && torn.end > torn.payloadOffset) {
      parts.push(decoder.decode(await this.read(torn.segment, torn.payloadOffset, torn.end - torn.payloadOffset)))
    }
    return parts.join('')
  }

  /** The bytes of a blob or of damage, exactly as stored (to keep aside). */
  async stored(id: string): Promise<Uint8Array | undefined> {
    const pending = this.pendingIds.get(id)
    if (pending) return new Uint8Array(pending.bytes)
    const damage = this.unreadable.get(id)
    if (damage) return (await this.read(damage.segment, damage.offset, damage.length)).slice()
    const location = this.index.get(id)
    return location && (await this.read(location.segment, location.offset + RECORD_HEADER_BYTES + location.idLength, location.length)).slice()
  }

  // ---- writing -------------------------------------------------------------------------------

  /** A follower got the writer's lock: it holds handles from now on and reads the log again. */
  async becomeWriter(): Promise<void> {
    this.writer = true
    try {
      await this.scan()
    } catch (error) {
      this.writer = false
      this.closeHandles()
      throw error
    }
  }

  private check(): void {
    if (this.failure) throw opfsError('EIO', 'write', this.options.name, `an earlier flush of the pack failed (${this.failure.message}); nothing more is written`)
    if (!this.writer) throw opfsError('EROFS', 'write', this.options.name, 'the OPFS store is open read-only')
  }

  /** The segment the next append goes to: a torn tail kept aside and cut first, the store made if new, a full segment sealed. */
  private async prepare(): Promise<Segment> {
    this.check()
    if (this.salt === undefined) {
      this.directory ??= await storeDirectory(this.options.name, true)
      const salt = crypto.getRandomValues(new Uint32Array(1))[0]
      await writeAtomically(this.directory!, FORMAT_FILE, encoder.encode(JSON.stringify({ store: FORMAT_NAME, layout: LAYOUT, salt }) + '\n'))
      this.salt = salt
    }
    if (this.torn) await this.cutTorn()
    let active = this.active()
    if (active === undefined) active = await this.startSegment(1)
    else if (active.size >= this.options.segmentBytes) {
      this.flush(active) // a record in the next segment is never durable without this one
      active = await this.startSegment(active.number + 1)
    }
    if (this.unterminated !== undefined && this.unterminated.segment === active.number) {
      writeFully(active.handle!, RECORD_END, this.unterminated.offset)
      active.size = Math.max(active.size, this.unterminated.offset + 1)
      this.unterminated = undefined
      this.dirty.add(active.number)
    }
    return active
  }

  private active(): Segment | undefined {
    let last: Segment | undefined
    for (const segment of this.segments.values()) if (!last || segment.number > last.number) last = segment
    return last
  }

  /** A new segment: made with its header, durable before any record goes into it. */
  private async startSegment(number: number): Promise<Segment> {
    const name = segmentName(number)
    const handle = await openSyncHandle((await fileHandle(this.directory!, name, true))!)
    try {
      handle.truncate(0)
      writeFully(handle, segmentHeader(number, this.salt!), 0)
      handle.flush()
    } catch (error) {
      handle.close()
      await removeIfPresent(this.directory!, name).catch(() => undefined)
      throw translate(error, 'write', name)
    }
    const segment: Segment = { number, size: SEGMENT_HEADER_BYTES, handle }
    this.segments.set(number, segment)
    return segment
  }

  /** Keeps the torn tail aside (unless its text went aside with the journal), then cuts it off durably. */
  private async cutTorn(): Promise<void> {
    const torn = this.torn!
    const segment = this.segments.get(torn.segment)!
    const handle = segment.handle!
    if (!torn.captured && torn.end > torn.offset && torn.offset > 0) {
      const bytes = readFully(handle, torn.end - torn.offset, torn.offset)
      await this.options.keep('pack', 'torn', `${String(torn.segment).padStart(8, '0')}-${torn.offset}`, bytes)
    }
    try {
      if (torn.offset === 0) {
        // A segment cut short as it was made: made again.
        handle.truncate(0)
        writeFully(handle, segmentHeader(torn.segment, this.salt!), 0)
        segment.size = SEGMENT_HEADER_BYTES
      } else {
        handle.truncate(torn.offset)
        segment.size = torn.offset
      }
      handle.flush()
    } catch (error) {
      throw translate(error, 'truncate', segmentName(torn.segment))
    }
    this.windows.delete(torn.segment)
    this.torn = undefined
  }

  /** The torn tail's journal text went aside with the journal: cutting it keeps nothing more. */
  journalKeptAside(): void {
    const torn = this.torn
    if (torn?.kind === Kind.Append && torn.payloadOffset !== undefined && torn.payloadOffset < torn.end) torn.captured = true
  }

  /** Appends records (each its pieces) in one write at the end of the log, pending blobs first; returns where each starts. */
  private async append(records: readonly (readonly Uint8Array[])[]): Promise<Place[]> {
    const pending = this.pending
    this.pending = []
    const active = await this.prepare()
    const all: (readonly Uint8Array[])[] = []
    const heads = this.blobHeads(pending, all)
    all.push(...records)
    let total = 0
    for (const pieces of all) for (const piece of pieces) total += piece.length
    const buffer = new Uint8Array(total)
    const places: Place[] = []
    let at = 0
    for (const pieces of all) {
      places.push({ segment: active.number, offset: active.size + at })
      for (const piece of pieces) {
        buffer.set(piece, at)
        at += piece.length
      }
    }
    const start = active.size
    try {
      writeFully(active.handle!, buffer, start)
    } catch (error) {
      // Nothing of it counts: cut back, and the blobs it carried are put again by the next commit.
      this.pendingIds.clear()
      try {
        active.handle!.truncate(start)
      } catch {
        // The next open finds what is there: a torn tail at worst.
      }
      throw translate(error, 'write', segmentName(active.number))
    }
    active.size = start + total
    this.windows.delete(active.number)
    this.dirty.add(active.number)
    this.counters.writes++
    this.counters.appendedBytes += total
    pending.forEach((blob, i) => {
      this.index.set(blob.id, { ...places[i], idLength: blob.name.length, length: blob.bytes.length, checksum: heads[i] })
      this.pendingIds.delete(blob.id)
    })
    return places.slice(pending.length)
  }

  /** The pending blobs' records (their headers in one buffer, the payloads as they are) pushed on `into`; returns their checksums. */
  private blobHeads(pending: readonly PendingBlob[], into: (readonly Uint8Array[])[]): number[] {
    let headBytes = 0
    for (const blob of pending) headBytes += RECORD_HEADER_BYTES + blob.name.length
    const heads = new Uint8Array(headBytes)
    const checksums: number[] = []
    let at = 0
    for (const blob of pending) {
      const checksum = recordChecksum(blob.name, blob.bytes)
      writeRecordHead(heads, at, Kind.Blob, blob.name, blob.bytes.length, checksum, this.salt!)
      into.push([heads.subarray(at, at + RECORD_HEADER_BYTES + blob.name.length), blob.bytes, RECORD_END])
      checksums.push(checksum)
      at += RECORD_HEADER_BYTES + blob.name.length
    }
    return checksums
  }

  /**
   * After a write failed (a full quota): the log as it was before it, so the same group commit can
   * go again once there is room. The active segment is cut back to its last whole record if the
   * failed write's cut did not take; blobs put and not written are dropped, those of an append
   * whose segment could not be readied too (the engine puts them again with what it sends). A
   * failed flush stays final (EIO), a follower EROFS.
   */
  async recover(): Promise<void> {
    this.check()
    this.pending = []
    this.pendingIds.clear()
    const active = this.active()
    if (!active?.handle || this.torn?.segment === active.number) return // a torn tail is cut by the next append
    try {
      if (active.handle.getSize() > active.size) {
        active.handle.truncate(active.size)
        active.handle.flush()
      }
    } catch (error) {
      throw translate(error, 'truncate', segmentName(active.number))
    }
    this.windows.delete(active.number)
  }

  private flush(segment: Segment): void {
    if (!this.dirty.has(segment.number)) return
    this.dirty.delete(segment.number)
    this.counters.flushes++
    try {
      segment.handle!.flush()
    } catch (error) {
      // What the browser failed to write may be gone: acknowledge nothing more.
      this.failure = error as Error
      throw translate(error, 'fsync', segmentName(segment.number))
    }
  }

  /** Writes what is pending and makes everything written durable. */
  async sync(): Promise<void> {
    this.check()
    if (this.pending.length > 0) await this.append([])
    for (const number of [...this.dirty]) this.flush(this.segments.get(number)!)
  }

  /** Takes blobs the log does not hold yet; they are written with the next group commit (or sync). */
  putBlobs(blobs: readonly (readonly [string, Uint8Array])[]): void {
    this.check()
    for (const [id, bytes] of blobs) {
      if (this.index.has(id) || this.pendingIds.has(id)) continue
      // A copy: the caller may reuse its bytes before the commit writes them.
      const blob = { id, name: encoder.encode(id), bytes: new Uint8Array(bytes) }
      this.pending.push(blob)
      this.pendingIds.set(id, blob)
    }
  }

  /** Appends one group commit's journal text after its blobs, and makes them durable: one write, one flush. */
  async appendJournal(text: string): Promise<void> {
    this.check()
    if (text !== '') {
      const payload = encoder.encode(text)
      const checksum = crc32(payload)
      await this.prepare() // the salt exists before the record is made
      const [place] = await this.append([[recordHead(Kind.Append, new Uint8Array(0), payload.length, checksum, this.salt!), payload, RECORD_END]])
      this.journal.push({ ...place, idLength: 0, length: payload.length, checksum, kind: 'text' })
    }
    await this.sync()
  }

  /** Replaces the journal: one reset record holding all of it, durable when this resolves. */
  async replaceJournal(text: string): Promise<void> {
    this.check()
    const payload = encoder.encode(text)
    const checksum = crc32(payload)
    await this.prepare() // the salt exists before the record is made
    const [place] = await this.append([[recordHead(Kind.Reset, new Uint8Array(0), payload.length, checksum, this.salt!), payload, RECORD_END]])
    this.journal = [{ ...place, idLength: 0, length: payload.length, checksum, kind: 'text' }]
    await this.sync()
    await this.collect()
  }

  /** Every place a blob (or damage listed as one) is stored at. */
  private placesOf(id: string): Place[] {
    const location = this.index.get(id) ?? this.unreadable.get(id)
    return location ? [location, ...(this.copies.get(id) ?? [])] : []
  }

  /** Forgets blobs durably (one record naming their places); missing ids are ignored. */
  async forget(ids: readonly string[]): Promise<void> {
    this.check()
    // A pending blob is dropped before it is ever written.
    for (const id of ids) {
      if (!this.pendingIds.has(id)) continue
      this.pendingIds.delete(id)
      this.pending = this.pending.filter((blob) => blob.id !== id)
    }
    const places = ids.flatMap((id) => this.placesOf(id))
    if (places.length === 0) return
    await this.appendForget(places)
    for (const id of ids) {
      this.index.delete(id)
      this.copies.delete(id)
      this.unreadable.delete(id)
    }
    const gone = new Set(places.map(placeKey))
    this.journal = this.journal.filter((piece) => piece.kind !== 'damage' || !gone.has(placeKey(piece)))
    await this.sync()
    await this.collect()
  }

  /**
   * Forgets blobs, then overwrites their records' ids and contents with zeros wherever they are
   * stored, a collection's copies included (a purge: a leaked secret must not wait in a dead record
   * until its segment is collected). The forget is durable first; a record whose header fails its
   * checksum is left as it is (nothing says how long it is).
   */
  async erase(ids: readonly string[]): Promise<void> {
    const places = ids.flatMap((id) => this.placesOf(id))
    await this.forget(ids)
    const zeros = new Uint8Array(WINDOW)
    const flushed = new Set<SyncAccessHandle>()
    for (const { segment, offset } of places) {
      const handle = this.segments.get(segment)?.handle
      if (!handle) continue // collected meanwhile: its file is gone
      this.windows.delete(segment)
      const header = readRecordHeader(readFully(handle, RECORD_HEADER_BYTES, offset), 0, RECORD_HEADER_BYTES, this.salt ?? 0)
      if (typeof header !== 'object') continue
      const start = offset + RECORD_HEADER_BYTES
      const end = start + header.idLength + header.length
      for (let at = start; at < end; at += zeros.length) writeFully(handle, zeros.subarray(0, Math.min(zeros.length, end - at)), at)
      flushed.add(handle)
    }
    for (const handle of flushed) handle.flush()
  }

  /** Appends a record forgetting `places` (not yet durable). */
  private async appendForget(places: readonly Place[]): Promise<void> {
    const payload = encodePlaces(places)
    await this.prepare()
    const [place] = await this.append([[recordHead(Kind.Forget, new Uint8Array(0), payload.length, crc32(payload), this.salt!), payload, RECORD_END]])
    this.forgets.set(place.segment, [...(this.forgets.get(place.segment) ?? []), ...places])
  }

  // ---- collection ----------------------------------------------------------------------------

  /** The sealed segment with the smallest live share under half, holding no journal text that counts; undefined when none. */
  private victim(): number | undefined {
    const live = new Map<number, number>()
    const add = (segment: number, bytes: number) => live.set(segment, (live.get(segment) ?? 0) + bytes)
    for (const location of this.index.values()) add(location.segment, recordBytes(location.idLength, location.length))
    for (const [segment, places] of this.forgets) add(segment, RECORD_HEADER_BYTES + 12 * places.length)
    const keep = new Set(this.journal.map((piece) => piece.segment))
    for (const damage of this.unreadable.values()) keep.add(damage.segment)
    const active = this.active()?.number
    let best: number | undefined
    let bestShare = LIVE_FRACTION
    for (const [number, segment] of this.segments) {
      if (number === active || keep.has(number) || this.torn?.segment === number) continue
      const share = (live.get(number) ?? 0) / Math.max(1, segment.size - SEGMENT_HEADER_BYTES)
      if (share < bestShare) {
        best = number
        bestShare = share
      }
    }
    return best
  }

  /**
   * Collects sealed segments that are mostly dead records, one after another: a victim's live blob
   * records are copied verbatim to the end of the log with the forget records it holds that still
   * name places elsewhere, made durable, and only then is the victim removed. A crash in between
   * leaves two copies of some blobs (forgetting one forgets both). Damage is never in a victim.
   */
  private async collect(): Promise<void> {
    for (let victim = this.victim(); victim !== undefined; victim = this.victim()) {
      const moving = [...this.index].filter(([, location]) => location.segment === victim).sort((a, b) => a[1].offset - b[1].offset)
      for (let start = 0; start < moving.length; ) {
        const batch: Uint8Array[][] = []
        let bytes = 0
        for (; start < moving.length && bytes < COLLECT_BYTES; start++) {
          const [, location] = moving[start]
          const length = recordBytes(location.idLength, location.length)
          batch.push([(await this.read(victim, location.offset, length)).slice()])
          bytes += length
        }
        const places = await this.append(batch)
        const from = start - batch.length
        places.forEach((place, i) => {
          const [id, location] = moving[from + i]
          this.index.set(id, { ...location, ...place })
          // Until the victim is gone, a crash leaves both copies: forgetting the blob forgets both.
          this.copies.set(id, [...(this.copies.get(id) ?? []), location])
        })
      }
      const stillForgotten = (this.forgets.get(victim) ?? []).filter((place) => place.segment !== victim && this.segments.has(place.segment))
      if (stillForgotten.length > 0) await this.appendForget(stillForgotten)
      await this.sync() // the copies are durable before the only other copy goes
      const segment = this.segments.get(victim)!
      segment.handle?.close()
      segment.handle = undefined
      this.segments.delete(victim)
      this.windows.delete(victim)
      await removeIfPresent(this.directory!, segmentName(victim))
      this.counters.collected++
      this.forgets.delete(victim)
      for (const [id, places] of this.copies) {
        const left = places.filter((place) => place.segment !== victim)
        if (left.length > 0) this.copies.set(id, left)
        else this.copies.delete(id)
      }
      for (const [number, places] of this.forgets) this.forgets.set(number, places.filter((place) => place.segment !== victim))
    }
  }

  /** Keeps a blob's stored bytes (or damage's) aside under a new name, then forgets it; undefined if absent. */
  async setAside(id: string, label: string, what: string): Promise<string | undefined> {
    this.check()
    const bytes = await this.stored(id)
    if (bytes === undefined) return undefined
    const name = await this.options.keep('blob', label, what, bytes)
    await this.forget([id])
    return name
  }

  /** What the log holds, and work counters since it was opened. */
  get stats(): LogStats {
    return { segments: this.segments.size, blobs: this.index.size, damaged: this.unreadable.size, torn: this.torn !== undefined, ...this.counters }
  }

  /** Writes what is pending, flushes, and lets go of the handles. */
  async close(): Promise<void> {
    try {
      if (this.writer && !this.failure) await this.sync()
    } finally {
      this.closeHandles()
    }
  }

  private closeHandles(): void {
    for (const segment of this.segments.values()) {
      try {
        segment.handle?.close()
      } catch {
        // Closed already.
      }
      segment.handle = undefined
    }
    this.windows.clear()
  }
}
