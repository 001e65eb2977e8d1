/**
 * Where each blob of a pack is: id → segment, offset, lengths, checksum, held in typed arrays
 * beside one map of ids, not as an object per blob. A store of a hundred thousand blobs builds it
 * on every open; objects would cost open their allocation and the garbage collector's copying of
 * them, for a table that is only ever read one entry at a time.
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

export class BlobLocations {
  private readonly slots = new Map<string, number>()
  private segment = new Uint32Array(1024)
  private offset = new Float64Array(1024)
  private length = new Float64Array(1024)
  private checksum = new Uint32Array(1024)
  private idLength = new Uint16Array(1024)
  /** Slots given out; a deleted blob's slot is reused by the next one. */
  private used = 0
  private readonly free: number[] = []

  get size(): number {
    return this.slots.size
  }

  has(id: string): boolean {
    return this.slots.has(id)
  }

  get(id: string): BlobLocation | undefined {
    const slot = this.slots.get(id)
    return slot === undefined ? undefined : this.at(slot)
  }

  /** A blob's payload length, without making its location. */
  lengthOf(id: string): number | undefined {
    const slot = this.slots.get(id)
    return slot === undefined ? undefined : this.length[slot]
  }

  set(id: string, location: BlobLocation): void {
    this.place(id, location.segment, location.offset, location.idLength, location.length, location.checksum)
  }

  /** Adds a blob not listed yet, from its fields (open adds a hundred thousand); false when it is listed already. */
  add(id: string, segment: number, offset: number, idLength: number, length: number, checksum: number): boolean {
    if (this.slots.has(id)) return false
    const slot = this.free.pop() ?? this.grow()
    this.slots.set(id, slot)
    this.segment[slot] = segment
    this.offset[slot] = offset
    this.length[slot] = length
    this.checksum[slot] = checksum
    this.idLength[slot] = idLength
    return true
  }

  /** Sets a blob's place from its fields. */
  place(id: string, segment: number, offset: number, idLength: number, length: number, checksum: number): void {
    let slot = this.slots.get(id)
    if (slot === undefined) {
      slot = this.free.pop() ?? this.grow()
      this.slots.set(id, slot)
    }
    this.segment[slot] = segment
    this.offset[slot] = offset
    this.length[slot] = length
    this.checksum[slot] = checksum
    this.idLength[slot] = idLength
  }

  delete(id: string): void {
    const slot = this.slots.get(id)
    if (slot === undefined) return
    this.slots.delete(id)
    this.free.push(slot)
  }

  keys(): IterableIterator<string> {
    return this.slots.keys()
  }

  *entries(): IterableIterator<[string, BlobLocation]> {
    for (const [id, slot] of this.slots) yield [id, this.at(slot)]
  }

  /** Every blob's id and payload length. */
  sizes(): [string, number][] {
    const out: [string, number][] = []
    for (const [id, slot] of this.slots) out.push([id, this.length[slot]])
    return out
  }

  /** Bytes of live records in each segment (collection picks its victim by them). */
  liveBytes(recordBytes: (idLength: number, length: number) => number): Map<number, number> {
    const live = new Map<number, number>()
    for (const slot of this.slots.values()) live.set(this.segment[slot], (live.get(this.segment[slot]) ?? 0) + recordBytes(this.idLength[slot], this.length[slot]))
    return live
  }

  private at(slot: number): BlobLocation {
    return { segment: this.segment[slot], offset: this.offset[slot], idLength: this.idLength[slot], length: this.length[slot], checksum: this.checksum[slot] }
  }

  private grow(): number {
    if (this.used === this.segment.length) {
      const size = this.used * 2
      const grown = <T extends Uint32Array | Float64Array | Uint16Array>(old: T, make: (n: number) => T): T => {
        const next = make(size)
        next.set(old)
        return next
      }
      this.segment = grown(this.segment, (n) => new Uint32Array(n))
      this.offset = grown(this.offset, (n) => new Float64Array(n))
      this.length = grown(this.length, (n) => new Float64Array(n))
      this.checksum = grown(this.checksum, (n) => new Uint32Array(n))
      this.idLength = grown(this.idLength, (n) => new Uint16Array(n))
    }
    return this.used++
  }
}
