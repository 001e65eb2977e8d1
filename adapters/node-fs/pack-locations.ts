/**
 * Where each blob of a pack is: id → segment, offset, lengths, checksum. A store of a hundred
 * thousand blobs builds this on every open, so it holds no object and no string per blob: the
 * ids' UTF-8 bytes are copied into one arena straight from the index files, and an open-addressed
 * hash table (linear probing over an Int32Array) finds them by those bytes; the fields live in
 * typed arrays. A Map of strings would cost open a string and an entry per blob, and the garbage
 * collector's copying of them, for a table read one entry at a time.
 */
import type { Place } from './pack-format.js'

/** Where a blob's record is, and what its payload must check against. */
export interface BlobLocation extends Place {
  readonly idLength: number
  /** Payload bytes. */
  readonly length: number
  /** CRC-32 of the id and the payload. */
  readonly checksum: number
}

const encoder = new TextEncoder()

/**
 * An id's hash: FNV-1a a 32-bit word at a time, then murmur3's finalizer so the low bits the table
 * uses are mixed. A saved state (pack-state.ts) holds tables made with it: another hash needs
 * another state magic.
 */
function hashOf(bytes: Uint8Array, at: number, length: number): number {
  let hash = 0x811c9dc5 ^ length
  const end = at + length
  let i = at
  for (; i + 4 <= end; i += 4) hash = Math.imul(hash ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)), 0x01000193)
  for (; i < end; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193)
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b)
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35)
  return (hash ^ (hash >>> 16)) >>> 0
}

/** A BlobLocations as its columns: what pack-state.ts writes whole and takes back without inserting a blob. */
export interface LocationColumns {
  readonly table: Int32Array
  readonly segment: Uint32Array
  readonly offset: Float64Array
  readonly length: Float64Array
  readonly checksum: Uint32Array
  readonly idLength: Uint16Array
  readonly idAt: Uint32Array
  readonly hash: Uint32Array
  readonly live: Uint8Array
  /** Free slots (below the columns' length). */
  readonly free: Uint32Array
  readonly arena: Uint8Array
  readonly arenaDead: number
  readonly count: number
  readonly bytes: number
}

export class BlobLocations {
  /** Slot + 1 of each blob, at its hash's place or after it (0: empty). Never more than half full. */
  private table: Int32Array
  private mask: number
  /** Per slot: the blob's fields, where its id's bytes are in the arena, its hash, whether it is in use. */
  private segment: Uint32Array
  private offset: Float64Array
  private length: Float64Array
  private checksum: Uint32Array
  private idLength: Uint16Array
  private idAt: Uint32Array
  private hash: Uint32Array
  private live: Uint8Array
  /** Slots given out; a deleted blob's slot is reused by the next one. */
  private used = 0
  private readonly free: number[] = []
  private count = 0
  /** The ids' UTF-8 bytes, back to back; a deleted blob's bytes stay until the arena is compacted. */
  private arena: Buffer
  private arenaUsed = 0
  private arenaDead = 0
  /** An id looked up, encoded. */
  private scratch = new Uint8Array(256)
  /** Payload bytes of every blob listed (the store's totals). */
  bytes = 0

  /** Made for `blobs` blobs whose ids take `idBytes` bytes at first (open knows both from the index files): nothing grows while it fills. */
  constructor(blobs = 0, idBytes = 0) {
    const slots = Math.max(1024, blobs)
    let table = 2048
    while (table < 2 * slots) table *= 2
    this.table = new Int32Array(table)
    this.mask = table - 1
    this.segment = new Uint32Array(slots)
    this.offset = new Float64Array(slots)
    this.length = new Float64Array(slots)
    this.checksum = new Uint32Array(slots)
    this.idLength = new Uint16Array(slots)
    this.idAt = new Uint32Array(slots)
    this.hash = new Uint32Array(slots)
    this.live = new Uint8Array(slots)
    this.arena = Buffer.allocUnsafe(Math.max(64 * 1024, idBytes))
  }

  get size(): number {
    return this.count
  }

  /** Its columns, as long as the slots given out (views: valid until the next change). */
  columns(): LocationColumns {
    const used = this.used
    return {
      table: this.table,
      segment: this.segment.subarray(0, used),
      offset: this.offset.subarray(0, used),
      length: this.length.subarray(0, used),
      checksum: this.checksum.subarray(0, used),
      idLength: this.idLength.subarray(0, used),
      idAt: this.idAt.subarray(0, used),
      hash: this.hash.subarray(0, used),
      live: this.live.subarray(0, used),
      free: Uint32Array.from(this.free),
      arena: this.arena.subarray(0, this.arenaUsed),
      arenaDead: this.arenaDead,
      count: this.count,
      bytes: this.bytes,
    }
  }

  /** Locations taken back from their columns as they are (the arrays are used, not copied; a later insert grows them). */
  static from(columns: LocationColumns): BlobLocations {
    const locations = new BlobLocations(0, 0)
    const { table } = columns
    if (table.length < 2 || (table.length & (table.length - 1)) !== 0) throw new RangeError('rewindfs: a location table is a power of two long')
    locations.table = table
    locations.mask = table.length - 1
    locations.segment = columns.segment
    locations.offset = columns.offset
    locations.length = columns.length
    locations.checksum = columns.checksum
    locations.idLength = columns.idLength
    locations.idAt = columns.idAt
    locations.hash = columns.hash
    locations.live = columns.live
    locations.used = columns.segment.length
    for (const slot of columns.free) locations.free.push(slot)
    locations.count = columns.count
    locations.bytes = columns.bytes
    locations.arena = Buffer.from(columns.arena.buffer, columns.arena.byteOffset, columns.arena.byteLength)
    locations.arenaUsed = columns.arena.byteLength
    locations.arenaDead = columns.arenaDead
    return locations
  }

  has(id: string): boolean {
    return this.slotOf(id) >= 0
  }

  get(id: string): BlobLocation | undefined {
    const slot = this.slotOf(id)
    return slot < 0 ? undefined : this.at(slot)
  }

  /** A blob's payload length, without making its location. */
  lengthOf(id: string): number | undefined {
    const slot = this.slotOf(id)
    return slot < 0 ? undefined : this.length[slot]
  }

  set(id: string, location: BlobLocation): void {
    this.place(id, location.segment, location.offset, location.length, location.checksum)
  }

  /**
   * Adds a blob not listed yet whose id is `bytes[idAt, idAt + idLength)` (an index file's entry:
   * no string is made); false when it is listed already.
   */
  addFrom(bytes: Uint8Array, idAt: number, idLength: number, segment: number, offset: number, length: number, checksum: number): boolean {
    const hash = hashOf(bytes, idAt, idLength)
    const at = this.find(bytes, idAt, idLength, hash)
    if (at >= 0) return false
    this.fill(this.insert(bytes, idAt, idLength, hash, ~at), segment, offset, length, checksum)
    return true
  }

  /** Adds a blob not listed yet, from its fields; false when it is listed already. */
  add(id: string, segment: number, offset: number, length: number, checksum: number): boolean {
    return this.addFrom(this.scratch, 0, this.encode(id), segment, offset, length, checksum)
  }

  /** Sets a blob's place from its fields (its id's length is its UTF-8's). */
  place(id: string, segment: number, offset: number, length: number, checksum: number): void {
    const size = this.encode(id)
    const hash = hashOf(this.scratch, 0, size)
    const at = this.find(this.scratch, 0, size, hash)
    let slot: number
    if (at >= 0) {
      slot = this.table[at] - 1
      this.bytes -= this.length[slot]
    } else slot = this.insert(this.scratch, 0, size, hash, ~at)
    this.fill(slot, segment, offset, length, checksum)
  }

  delete(id: string): void {
    const size = this.encode(id)
    const at = this.find(this.scratch, 0, size, hashOf(this.scratch, 0, size))
    if (at < 0) return
    const slot = this.table[at] - 1
    this.unlink(at)
    this.live[slot] = 0
    this.count--
    this.bytes -= this.length[slot]
    this.arenaDead += this.idLength[slot]
    this.free.push(slot)
    if (this.arenaDead > 1024 * 1024 && this.arenaDead > this.arenaUsed / 2) this.compactArena()
  }

  *keys(): IterableIterator<string> {
    for (let slot = 0; slot < this.used; slot++) if (this.live[slot]) yield this.idOf(slot)
  }

  *entries(): IterableIterator<[string, BlobLocation]> {
    for (let slot = 0; slot < this.used; slot++) if (this.live[slot]) yield [this.idOf(slot), this.at(slot)]
  }

  /** Every blob's id and payload length. */
  sizes(): [string, number][] {
    const out: [string, number][] = []
    for (let slot = 0; slot < this.used; slot++) if (this.live[slot]) out.push([this.idOf(slot), this.length[slot]])
    return out
  }

  /** Bytes of live records in each segment (collection picks its victim by them). */
  liveBytes(recordBytes: (idLength: number, length: number) => number): Map<number, number> {
    const live = new Map<number, number>()
    for (let slot = 0; slot < this.used; slot++) {
      if (this.live[slot]) live.set(this.segment[slot], (live.get(this.segment[slot]) ?? 0) + recordBytes(this.idLength[slot], this.length[slot]))
    }
    return live
  }

  // ---- the table ------------------------------------------------------------------------------

  /** The slot of a listed id, or -1. */
  private slotOf(id: string): number {
    const size = this.encode(id)
    const at = this.find(this.scratch, 0, size, hashOf(this.scratch, 0, size))
    return at < 0 ? -1 : this.table[at] - 1
  }

  /** Where in the table the id is, or ~(the empty place where it would go). */
  private find(bytes: Uint8Array, idAt: number, idLength: number, hash: number): number {
    const { table, mask } = this
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = table[at]
      if (entry === 0) return ~at
      const slot = entry - 1
      if (this.hash[slot] === hash && this.idLength[slot] === idLength && this.sameId(slot, bytes, idAt, idLength)) return at
    }
  }

  private sameId(slot: number, bytes: Uint8Array, idAt: number, idLength: number): boolean {
    const { arena } = this
    const from = this.idAt[slot]
    for (let i = 0; i < idLength; i++) if (arena[from + i] !== bytes[idAt + i]) return false
    return true
  }

  /** A new slot for the id at table place `at` (empty); its bytes copied into the arena. */
  private insert(bytes: Uint8Array, idAt: number, idLength: number, hash: number, at: number): number {
    const slot = this.free.pop() ?? this.grow()
    if (this.arenaUsed + idLength > this.arena.length) this.growArena(idLength)
    const { arena } = this
    const to = this.arenaUsed
    for (let i = 0; i < idLength; i++) arena[to + i] = bytes[idAt + i]
    this.arenaUsed += idLength
    this.idAt[slot] = to
    this.idLength[slot] = idLength
    this.hash[slot] = hash
    this.live[slot] = 1
    this.count++
    this.table[at] = slot + 1
    if (this.count * 2 > this.table.length) this.rehash(this.table.length * 2)
    return slot
  }

  private fill(slot: number, segment: number, offset: number, length: number, checksum: number): void {
    this.segment[slot] = segment
    this.offset[slot] = offset
    this.length[slot] = length
    this.checksum[slot] = checksum
    this.bytes += length
  }

  /** Empties table place `at`, moving later entries of the same run back so every one stays reachable from its hash's place. */
  private unlink(at: number): void {
    const { table, mask } = this
    let hole = at
    for (let next = (at + 1) & mask; table[next] !== 0; next = (next + 1) & mask) {
      const home = this.hash[table[next] - 1] & mask
      // It may move to the hole when the hole lies between its home and where it is.
      if (((next - home) & mask) >= ((next - hole) & mask)) {
        table[hole] = table[next]
        hole = next
      }
    }
    table[hole] = 0
  }

  private rehash(size: number): void {
    const table = new Int32Array(size)
    const mask = size - 1
    for (let slot = 0; slot < this.used; slot++) {
      if (!this.live[slot]) continue
      let at = this.hash[slot] & mask
      while (table[at] !== 0) at = (at + 1) & mask
      table[at] = slot + 1
    }
    this.table = table
    this.mask = mask
  }

  // ---- slots and the arena ------------------------------------------------------------------

  /** The id's UTF-8 bytes in `scratch`; returns how many. */
  private encode(id: string): number {
    if (this.scratch.length < id.length * 3) this.scratch = new Uint8Array(id.length * 3)
    const { scratch } = this
    for (let i = 0; i < id.length; i++) {
      const code = id.charCodeAt(i)
      // Ids are mostly base64 (ASCII); anything else goes through the encoder.
      if (code >= 0x80) return encoder.encodeInto(id, scratch).written
      scratch[i] = code
    }
    return id.length
  }

  private idOf(slot: number): string {
    const from = this.idAt[slot]
    return this.arena.toString('utf8', from, from + this.idLength[slot])
  }

  private at(slot: number): BlobLocation {
    return { segment: this.segment[slot], offset: this.offset[slot], idLength: this.idLength[slot], length: this.length[slot], checksum: this.checksum[slot] }
  }

  private growArena(more: number): void {
    const arena = Buffer.allocUnsafe(Math.max(64 * 1024, 2 * this.arena.length, this.arenaUsed + more))
    arena.set(this.arena.subarray(0, this.arenaUsed))
    this.arena = arena
  }

  /** Copies the live ids into a new arena, leaving out the bytes of deleted ones. */
  private compactArena(): void {
    const arena = Buffer.allocUnsafe(Math.max(64 * 1024, 2 * (this.arenaUsed - this.arenaDead)))
    let to = 0
    for (let slot = 0; slot < this.used; slot++) {
      if (!this.live[slot]) continue
      const from = this.idAt[slot]
      arena.set(this.arena.subarray(from, from + this.idLength[slot]), to)
      this.idAt[slot] = to
      to += this.idLength[slot]
    }
    this.arena = arena
    this.arenaUsed = to
    this.arenaDead = 0
  }

  private grow(): number {
    if (this.used === this.segment.length) {
      const size = Math.max(1024, this.used * 2)
      const grown = <T extends Uint32Array | Float64Array | Uint16Array | Uint8Array>(old: T, make: (n: number) => T): T => {
        const next = make(size)
        next.set(old)
        return next
      }
      this.segment = grown(this.segment, (n) => new Uint32Array(n))
      this.offset = grown(this.offset, (n) => new Float64Array(n))
      this.length = grown(this.length, (n) => new Float64Array(n))
      this.checksum = grown(this.checksum, (n) => new Uint32Array(n))
      this.idLength = grown(this.idLength, (n) => new Uint16Array(n))
      this.idAt = grown(this.idAt, (n) => new Uint32Array(n))
      this.hash = grown(this.hash, (n) => new Uint32Array(n))
      this.live = grown(this.live, (n) => new Uint8Array(n))
    }
    return this.used++
  }
}
