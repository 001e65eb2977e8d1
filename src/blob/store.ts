/**
 * Content-addressed blob store: file contents keyed by hash, so identical content is stored once
 * across files, sessions and checkpoints. Blobs are immutable once stored; the store owns the bytes
 * it is given. Unreachable blobs are removed by the collector (collector.ts), never by the store.
 */
import { FsError } from '../errors.js'
import { type Delta, MIN_DELTA_SIZE, applyDelta, makeDelta } from './delta.js'
import { hashBytes } from './hash.js'
import { sameContent } from './same-content.js'

export type BlobId = string

/** Deltas applied in a row before a read stores the rebuilt content whole. */
const MAX_CHAIN = 16

export interface BlobCounters {
  /** Blobs looked up or stored since creation; complexity tests read this. */
  touched: number
}

export class BlobStore {
  /** Full bytes, or a reverse delta against a newer blob (old versions of text files). */
  private readonly blobs = new Map<BlobId, Uint8Array | Delta>()
  /** Old → new version pairs written since the last compaction: candidates for reverse deltas. */
  private readonly successors: [BlobId, BlobId][] = []
  private storedBytes = 0
  /** Ids stored or re-referenced while a collection is marking: never swept by that cycle. */
  private protectedIds: Set<BlobId> | undefined
  readonly counters: BlobCounters = { touched: 0 }
  /** Bytes stored since the last collection, to decide when another one is worth it. */
  allocatedSinceCollection = 0

  /** Stores `bytes` (taking ownership) and returns their id. */
  put(bytes: Uint8Array): BlobId {
    return this.store(bytes, true)
  }

  /** Stores a copy of `bytes` (the caller keeps them), made only when the content is new. */
  putCopy(bytes: Uint8Array): BlobId {
    return this.store(bytes, false)
  }

  private store(bytes: Uint8Array, owned: boolean): BlobId {
    this.counters.touched++
    const base = hashBytes(bytes)
    let id = base
    // A hash match is confirmed byte by byte (why: same-content.ts); a true collision gets a suffixed id.
    for (let n = 1; ; n++) {
      const existing = this.blobs.get(id)
      if (existing === undefined) {
        this.blobs.set(id, owned ? bytes : bytes.slice())
        this.storedBytes += bytes.byteLength
        this.allocatedSinceCollection += bytes.byteLength
        break
      }
      if (sameContent(existing instanceof Uint8Array ? existing : this.get(id), bytes)) break
      id = `${base}~${n}`
    }
    this.protectedIds?.add(id)
    return id
  }

  /**
   * Inserts content under the id a durable store knows it by (ids may come from another hash).
   * `unchecked`: the bytes have not been hashed against the id yet; the first read checks them, so
   * damaged content is never returned, whether the background check has reached it or not.
   */
  adopt(id: BlobId, bytes: Uint8Array, unchecked = false): void {
    if (this.blobs.has(id)) return
    this.blobs.set(id, bytes)
    this.storedBytes += bytes.byteLength
    if (unchecked) this.unchecked.add(id)
  }

  /** Adopted blobs whose bytes have not been hashed against their ids. */
  private readonly unchecked = new Set<BlobId>()

  /** Told when a check finds an adopted blob's bytes do not match its id (the blob is dropped first). */
  onCorrupt: ((id: BlobId) => void) | undefined

  /**
   * Hashes an adopted blob's bytes against its id if that has not been done: true when they match
   * (or were checked before), false when the blob is missing or corrupt (then dropped from memory).
   */
  check(id: BlobId): boolean {
    if (!this.unchecked.delete(id)) return this.blobs.has(id)
    const stored = this.blobs.get(id)
    if (stored === undefined) return false
    if (!(stored instanceof Uint8Array) || hashBytes(stored) === id) return true
    this.erase(id)
    this.onCorrupt?.(id)
    return false
  }

  /** Whether a blob can be read: present, and its bytes match its id. */
  intact(id: BlobId): boolean {
    return this.unchecked.has(id) ? this.check(id) : this.blobs.has(id)
  }

  /** The stored bytes: callers must not modify them (copy before handing them out). */
  get(id: BlobId): Uint8Array {
    this.counters.touched++
    if (this.unchecked.size > 0 && this.unchecked.has(id) && !this.check(id)) {
      throw new FsError('EIO', 'read', undefined, undefined, `i/o error: stored content ${id} failed its checksum`)
    }
    const stored = this.blobs.get(id)
    if (stored === undefined) throw new Error(`rewindfs: blob ${id} is missing from the store`)
    if (stored instanceof Uint8Array) return stored
    // Walk the chain to full content, then apply the deltas back down; a long chain is squashed
    // (the rebuilt content stored whole) so reads of old versions stay bounded.
    const chain: Delta[] = [stored]
    let base = this.blobs.get(stored.base)
    while (base !== undefined && !(base instanceof Uint8Array)) {
      chain.push(base)
      base = this.blobs.get(base.base)
    }
    if (base === undefined) throw new Error(`rewindfs: the base of blob ${id} is missing from the store`)
    let bytes = base
    for (let i = chain.length - 1; i >= 0; i--) bytes = applyDelta(bytes, chain[i])
    if (chain.length > MAX_CHAIN) this.replace(id, bytes)
    return bytes
  }

  /** Size of a blob's content without rebuilding it. */
  size(id: BlobId): number {
    const stored = this.blobs.get(id)
    if (stored === undefined) throw new Error(`rewindfs: blob ${id} is missing from the store`)
    return stored instanceof Uint8Array ? stored.byteLength : stored.size
  }

  /** The blob a delta is made against, if `id` is stored as one. */
  baseOf(id: BlobId): BlobId | undefined {
    const stored = this.blobs.get(id)
    return stored instanceof Uint8Array || stored === undefined ? undefined : stored.base
  }

  private replace(id: BlobId, value: Uint8Array | Delta): void {
    const old = this.blobs.get(id)
    if (old !== undefined) this.storedBytes -= old instanceof Uint8Array ? old.byteLength : old.cost
    this.blobs.set(id, value)
    this.storedBytes += value instanceof Uint8Array ? value.byteLength : value.cost
  }

  /** Notes that `next` replaced `previous` as a file's content: a candidate reverse delta. */
  succeeded(previous: BlobId, next: BlobId): void {
    if (previous === next || this.size(next) < MIN_DELTA_SIZE) return
    this.successors.push([previous, next])
    if (this.successors.length === 1) this.onWork?.()
  }

  /** Told when background work (compaction) becomes available; the collector schedules it. */
  onWork: (() => void) | undefined

  /** Turns up to `budget` old versions into reverse deltas; returns whether the queue is empty. */
  compact(budget: number): boolean {
    while (budget-- > 0 && this.successors.length > 0) {
      const [previous, next] = this.successors.shift()!
      const old = this.blobs.get(previous)
      if (!(old instanceof Uint8Array) || !this.blobs.has(next) || this.dependsOn(next, previous)) continue
      const delta = makeDelta(next, this.get(next), old)
      if (delta) this.replace(previous, delta)
    }
    return this.successors.length === 0
  }

  /** Whether `id`'s delta chain passes through `other` (a delta must never form a cycle). */
  private dependsOn(id: BlobId, other: BlobId): boolean {
    for (let base = this.baseOf(id); base !== undefined; base = this.baseOf(base)) if (base === other) return true
    return false
  }

  has(id: BlobId): boolean {
    return this.blobs.has(id)
  }

  /** Marks an existing blob as referenced again (e.g. a node reused by restore or undo). */
  retain(id: BlobId): void {
    this.protectedIds?.add(id)
  }

  get count(): number {
    return this.blobs.size
  }

  get bytes(): number {
    return this.storedBytes
  }

  ids(): IterableIterator<BlobId> {
    return this.blobs.keys()
  }

  /** Overwrites a blob's bytes with zeros and drops it (purging leaked content). */
  erase(id: BlobId): boolean {
    const stored = this.blobs.get(id)
    if (stored === undefined) return false
    // Blobs stored as deltas against this one are rebuilt whole first: they must not lose their base.
    for (const [other, value] of this.blobs) if (!(value instanceof Uint8Array) && value.base === id) this.replace(other, this.get(other))
    if (stored instanceof Uint8Array) {
      stored.fill(0)
      this.storedBytes -= stored.byteLength
    } else this.storedBytes -= stored.cost
    this.blobs.delete(id)
    return true
  }

  /** Called by the collector when it starts marking. */
  beginCollection(): void {
    this.protectedIds = new Set()
    this.allocatedSinceCollection = 0
  }

  /** Removes up to `budget` blobs that are neither marked nor protected; returns whether it finished. */
  sweep(marked: ReadonlySet<BlobId>, cursor: IterableIterator<BlobId>, budget: number): boolean {
    for (let i = 0; i < budget; i++) {
      const next = cursor.next()
      if (next.done) {
        this.protectedIds = undefined
        return true
      }
      const id = next.value
      if (marked.has(id) || this.protectedIds?.has(id)) continue
      const stored = this.blobs.get(id)
      if (stored !== undefined) this.storedBytes -= stored instanceof Uint8Array ? stored.byteLength : stored.cost
      this.blobs.delete(id)
    }
    return false
  }
}
