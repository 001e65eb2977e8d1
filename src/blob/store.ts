/**
 * Content-addressed blob store: file contents keyed by hash, so identical content is stored once
 * across files, sessions and checkpoints. Blobs are immutable once stored; the store owns the bytes
 * it is given. Unreachable blobs are removed by the collector (collector.ts), never by the store.
 *
 * Over a durable store that reads synchronously (`Store.readBlobSync`), contents are held on
 * demand: memory holds only contents, and a blob the store holds (durable-blobs.ts: listed on
 * open, or asked of the store's index when first looked up) is read back when first needed;
 * durable contents stay in memory in a cache of at most `cacheBytes`, least recently used leaving
 * first, and small new ones are staged (staging.ts) until durable and about a MiB of newer writes
 * followed. Contents not durable yet are never dropped.
 */
import { FsError } from '../errors.js'
import { type Delta, MIN_DELTA_SIZE, applyDelta, makeDelta } from './delta.js'
import { type DurableBlobs, ListedBlobs } from './durable-blobs.js'
import { hashBytes, madeHere } from './hash.js'
import { sameContent } from './same-content.js'
import { type StagedEntry, Staging } from './staging.js'
import { GrowingFiles } from './growing.js'

export type BlobId = string

/** Deltas applied in a row before a read stores the rebuilt content whole. */
const MAX_CHAIN = 16

/** Durable contents kept in memory by default when they are read on demand. */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024

export interface BlobCounters {
  /** Blobs looked up or stored since creation; complexity tests read this. */
  touched: number
  /** Blob contents read back from the durable store (on demand). */
  read: number
  /** Bytes of them. */
  readBytes: number
  /** Durable contents dropped from memory (the cache was full, or their staging chunk was needed again). */
  evicted: number
  /** Bytes hashed as contents were stored (an appended file's: only what its hash had not seen). */
  stored: number
}

/** Reads a blob the durable store holds, synchronously (undefined when it does not hold it). */
export type BlobReader = (id: BlobId) => Uint8Array | undefined

type Stored = Uint8Array | Delta

/**
 * A plain copy of `bytes`. A subclass's slice (Node's Buffer) goes through its species
 * constructor: measured twice as slow for a 1 KiB write as copying into a Uint8Array.
 */
function copyOf(bytes: Uint8Array): Uint8Array {
  return bytes.constructor === Uint8Array ? bytes.slice() : new Uint8Array(bytes)
}

export class BlobStore {
  /** Appended files' versions, sharing one buffer each (growing.ts). */
  private readonly growing = new GrowingFiles()
  /** Contents in memory: full bytes, or a reverse delta against a newer blob (old versions of text files). */
  private readonly blobs = new Map<BlobId, Stored>()
  /** Old → new version pairs written since the last compaction: candidates for reverse deltas. */
  private readonly successors: [BlobId, BlobId][] = []
  /** Bytes held in memory. */
  private storedBytes = 0
  /** Ids stored or re-referenced while a collection is marking: never swept by that cycle. */
  private protectedIds: Set<BlobId> | undefined
  readonly counters: BlobCounters = { touched: 0, read: 0, readBytes: 0, evicted: 0, stored: 0 }
  /** Bytes stored since the last collection, to decide when another one is worth it. */
  allocatedSinceCollection = 0
  /** Where contents leave memory to and are read back from, when the durable store reads synchronously. */
  private reader: BlobReader | undefined
  private cacheLimit = DEFAULT_CACHE_BYTES
  /** Durable contents in memory, least recently used first (their sizes): what may leave. */
  private readonly cache = new Map<BlobId, number>()
  private cachedBytes = 0
  /** Blobs the durable store holds, and their sizes: listed, or asked of the store (durable-blobs.ts). */
  private durable: DurableBlobs = new ListedBlobs()
  /** On demand: where small new contents are held until durable (staging.ts). */
  private staging: Staging | undefined
  /** Staged bytes handed to the durable store's putBlobs that has not resolved yet: their chunk waits. */
  private readonly lent = new Set<Uint8Array>()

  /** Stores `bytes` (taking ownership) and returns their id. */
  put(bytes: Uint8Array): BlobId {
    return this.store(bytes, true)
  }

  /** Stores a copy of `bytes` (the caller keeps them), made only when the content is new. */
  putCopy(bytes: Uint8Array): BlobId {
    return this.store(bytes, false)
  }

  /**
   * Stores the content of blob `base` (`current`, its bytes; none for an empty file not stored
   * yet) followed by `tail`, and returns its id: an appended file's next version, in O(tail)
   * amortised (growing.ts).
   */
  append(base: BlobId | undefined, current: Uint8Array, tail: Uint8Array): BlobId {
    const next = this.growing.append(base, current, tail)
    const id = this.store(next.bytes, true, next.id, next.hashed)
    if (id === next.id) next.follow(id)
    return id
  }

  private store(bytes: Uint8Array, owned: boolean, hashed?: BlobId, added = bytes.byteLength): BlobId {
    this.counters.touched++
    this.counters.stored += added
    const base = hashed ?? hashBytes(bytes)
    let id = base
    // A hash match is confirmed byte by byte (why: same-content.ts); a true collision gets a suffixed id.
    for (let n = 1; ; n++) {
      let existing = this.blobs.get(id)
      // Adopted bytes not checked yet are checked now: damaged ones are replaced, not taken for a hash collision.
      if (existing !== undefined && this.unchecked.has(id) && !this.check(id)) existing = undefined
      // Only the durable store holds it: read back to compare; found damaged, it is no longer counted and the good bytes are stored.
      const held = existing === undefined && this.reader !== undefined && this.durable.size(id) !== undefined
      if (held) existing = this.readBackIfIntact(id)
      if (existing === undefined) {
        this.blobs.set(id, this.staging?.place(id, bytes) ?? (owned ? bytes : copyOf(bytes)))
        this.storedBytes += bytes.byteLength
        this.allocatedSinceCollection += added
        // Content the durable store still holds (its blob was collected from memory only): it may leave again.
        if (held && this.durable.size(id) !== undefined) this.cacheIn(id, bytes.byteLength)
        if (this.damagedIds.size > 0 && this.damagedIds.delete(id)) this.onRestored?.(id)
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

  // ---- contents on demand -------------------------------------------------------------------

  /**
   * From now on, contents the durable store holds may leave memory and are read back through
   * `reader` when needed, at most `cacheBytes` of them held in memory. Reverse deltas are no
   * longer made: an old version leaves memory whole instead. `durable`: what the store holds,
   * when it answers lookups (otherwise its blobs are listed with `known`).
   */
  readOnDemand(reader: BlobReader, cacheBytes: number, durable?: DurableBlobs): void {
    this.reader = reader
    this.cacheLimit = cacheBytes
    this.successors.length = 0
    if (durable) this.durable = durable
    this.staging = new Staging((entries) => this.release(entries))
  }

  /**
   * Staged contents whose chunk is needed again (staging.ts): false, dropping nothing, while one
   * still held is not durable or one is still being stored; otherwise the ones still held leave
   * memory (read back when needed).
   */
  private release(entries: readonly StagedEntry[]): boolean {
    for (const [id, bytes] of entries) if (this.lent.has(bytes) || (this.blobs.get(id) === bytes && !this.isDurable(id))) return false
    for (const [id, bytes] of entries) {
      if (this.blobs.get(id) !== bytes) continue
      this.drop(id)
      this.counters.evicted++
    }
    return true
  }

  /** Whether contents are read on demand (the durable store reads synchronously). */
  get onDemand(): boolean {
    return this.reader !== undefined
  }

  /** A blob the durable store holds, listed on open and not read (size unknown: read back when asked). */
  known(id: BlobId, size: number | undefined): void {
    this.durable.add(id, size ?? Number.NaN)
  }

  /** The durable store holds the blob now: on demand, its contents may leave memory. */
  markDurable(id: BlobId): void {
    const stored = this.blobs.get(id)
    if (stored === undefined) return
    this.durable.add(id, stored instanceof Uint8Array ? stored.byteLength : stored.size)
    if (stored instanceof Uint8Array) this.cacheIn(id, stored.byteLength)
  }

  /** The durable store no longer holds the blob, or its copy is damaged: only what memory holds is left. */
  notDurable(id: BlobId): void {
    this.durable.remove(id)
    this.cacheOut(id)
  }

  /** Whether the durable store holds the blob (as counted: not a damaged copy, nor one being deleted). */
  isDurable(id: BlobId): boolean {
    return this.durable.size(id) !== undefined
  }

  /** Whether only the durable store holds the blob: its contents are read back when needed. */
  private storeOnly(id: BlobId): boolean {
    return this.reader !== undefined && !this.blobs.has(id) && this.durable.size(id) !== undefined
  }

  /** Durable contents in memory may leave it, least recently used first, once the cache is full. */
  private cacheIn(id: BlobId, size: number): void {
    if (this.reader === undefined || this.cache.has(id)) return
    this.cache.set(id, size)
    this.cachedBytes += size
    if (this.cachedBytes > this.cacheLimit) this.trim()
  }

  private cacheOut(id: BlobId): void {
    const size = this.cache.get(id)
    if (size === undefined) return
    this.cache.delete(id)
    this.cachedBytes -= size
  }

  private trim(): void {
    for (const [id, size] of this.cache) {
      if (this.cachedBytes <= this.cacheLimit) break
      this.cache.delete(id)
      this.cachedBytes -= size
      const stored = this.blobs.get(id)
      if (stored instanceof Uint8Array) {
        this.blobs.delete(id)
        this.storedBytes -= stored.byteLength
        this.counters.evicted++
      }
    }
  }

  /** Reads a blob from the durable store and checks it against its id: its bytes, or why they cannot be had. */
  private readStored(id: BlobId): Uint8Array | string {
    let bytes: Uint8Array | undefined
    try {
      bytes = this.reader?.(id)
    } catch (error) {
      return (error as Error)?.message ?? String(error)
    }
    if (bytes === undefined) return 'it is missing from the store'
    this.counters.read++
    this.counters.readBytes += bytes.byteLength
    return madeHere(id) && hashBytes(bytes) !== id ? 'its bytes no longer match their id' : bytes
  }

  /** Damage of one blob: dropped from memory and no longer counted durable (the store keeps its bytes); what needs it reads as EIO. */
  private damaged(id: BlobId): void {
    this.drop(id)
    this.notDurable(id)
    this.reportDamage(id)
  }

  /** Reads back a blob only the durable store holds, checks it against its id, and keeps it in the cache. */
  private readBack(id: BlobId): Uint8Array {
    const bytes = this.readStored(id)
    if (typeof bytes === 'string') {
      this.damaged(id)
      throw new FsError('EIO', 'read', undefined, undefined, `i/o error: stored content ${id} cannot be read (${bytes})`)
    }
    this.blobs.set(id, bytes)
    this.storedBytes += bytes.byteLength
    this.cacheIn(id, bytes.byteLength)
    return bytes
  }

  /**
   * Reads a durable blob from the store and checks it (a full verify on demand), keeping nothing in
   * memory; returns the bytes read. Damage is handled as a read back finds it.
   */
  checkStored(id: BlobId): number {
    if (!this.isDurable(id)) return 0
    const bytes = this.readStored(id)
    if (typeof bytes !== 'string') return bytes.byteLength
    this.damaged(id)
    return 0
  }

  /** A blob only the durable store holds, read back; undefined when its bytes are damaged (then dropped, and reported). */
  private readBackIfIntact(id: BlobId): Uint8Array | undefined {
    try {
      return this.readBack(id)
    } catch {
      return undefined
    }
  }

  /** Drops a blob from memory (its entry and its place in the cache). */
  private drop(id: BlobId): void {
    const stored = this.blobs.get(id)
    if (stored === undefined) return
    this.storedBytes -= stored instanceof Uint8Array ? stored.byteLength : stored.cost
    this.cacheOut(id)
    this.blobs.delete(id)
    this.growing.release(id)
  }

  /** What is held in memory and what the durable store holds, in blobs and bytes. */
  get occupancy(): { resident: { blobs: number; bytes: number }; durable: { blobs: number; bytes: number }; cache: { bytes: number; limit: number } } {
    return {
      resident: { blobs: this.blobs.size, bytes: this.storedBytes },
      durable: this.durable.totals(),
      cache: { bytes: this.cachedBytes, limit: this.cacheLimit },
    }
  }

  // ---- reading --------------------------------------------------------------------------------

  /** Adopted blobs whose bytes have not been hashed against their ids. */
  private readonly unchecked = new Set<BlobId>()

  /** Told when a blob's bytes are found damaged (a check, or a read back from the store); the blob is dropped first. */
  onCorrupt: ((id: BlobId) => void) | undefined
  /**
   * Told when content whose stored copy was found damaged is written again (the same bytes, by
   * their id): the durable store can take the good copy, even if the write changed no file.
   */
  onRestored: ((id: BlobId) => void) | undefined
  /**
   * Set by the durable journal on open: whether a content something refers to is missing from the
   * store (never there, or removed from outside), so a read of it says so rather than a checksum failure.
   */
  missing: ((id: BlobId) => boolean) | undefined
  /** Blobs found damaged whose good bytes have not been written again. */
  private readonly damagedIds = new Set<BlobId>()

  private reportDamage(id: BlobId): void {
    this.damagedIds.add(id)
    this.onCorrupt?.(id)
  }

  /**
   * Hashes an adopted blob's bytes against its id if that has not been done: true when they match
   * (or were checked before), false when the blob is missing or corrupt (then dropped from memory).
   */
  check(id: BlobId): boolean {
    if (!this.unchecked.delete(id)) return this.has(id)
    const stored = this.blobs.get(id)
    if (stored === undefined) return false
    if (!(stored instanceof Uint8Array) || hashBytes(stored) === id) return true
    this.erase(id)
    this.notDurable(id)
    this.reportDamage(id)
    return false
  }

  /** Whether a blob can be read: present, and its bytes match its id (one only the store holds is checked when read back). */
  intact(id: BlobId): boolean {
    return this.unchecked.has(id) ? this.check(id) : this.has(id)
  }

  /** The stored bytes: callers must not modify them (copy before handing them out). */
  get(id: BlobId): Uint8Array {
    this.counters.touched++
    if (this.unchecked.size > 0 && this.unchecked.has(id) && !this.check(id)) {
      throw new FsError('EIO', 'read', undefined, undefined, `i/o error: stored content ${id} failed its checksum`)
    }
    const stored = this.blobs.get(id)
    if (stored === undefined) {
      if (this.storeOnly(id)) return this.readBack(id)
      throw new Error(`rewindfs: blob ${id} is missing from the store`)
    }
    if (stored instanceof Uint8Array) {
      // Recently used: the last to leave the cache.
      if (this.cache.has(id)) {
        this.cache.delete(id)
        this.cache.set(id, stored.byteLength)
      }
      return this.staging?.holds(stored) ? this.unstage(id, stored) : stored
    }
    // Walk the chain to full content, then apply the deltas back down; a long chain is squashed
    // (the rebuilt content stored whole) so reads of old versions stay bounded.
    const chain: Delta[] = [stored]
    let base = this.blobs.get(stored.base)
    let baseId = stored.base
    while (base !== undefined && !(base instanceof Uint8Array)) {
      chain.push(base)
      baseId = base.base
      base = this.blobs.get(baseId)
    }
    if (base === undefined && !this.storeOnly(baseId)) throw new Error(`rewindfs: the base of blob ${id} is missing from the store`)
    let bytes = base ?? this.readBack(baseId)
    for (let i = chain.length - 1; i >= 0; i--) bytes = applyDelta(bytes, chain[i])
    if (chain.length > MAX_CHAIN) this.replace(id, bytes)
    return bytes
  }

  /**
   * A staged content, used: copied out of its chunk (which is reused once it is durable), so what
   * is handed out never changes, and kept in memory like any content read.
   */
  private unstage(id: BlobId, staged: Uint8Array): Uint8Array {
    const bytes = staged.slice()
    this.blobs.set(id, bytes)
    return bytes
  }

  /**
   * The bytes to hand the durable store's putBlobs: a staged content's view itself, lent until
   * `returned` (the store copies what it keeps: Store.putBlobs), anything else as `get`.
   */
  forStore(id: BlobId): Uint8Array {
    const stored = this.blobs.get(id)
    if (!(stored instanceof Uint8Array) || !this.staging?.holds(stored)) return this.get(id)
    this.lent.add(stored)
    return stored
  }

  /** The durable store's putBlobs given these bytes (forStore) resolved or failed: their chunks may be reused. */
  returned(blobs: readonly (readonly [BlobId, Uint8Array])[]): void {
    if (this.lent.size > 0) for (const [, bytes] of blobs) this.lent.delete(bytes)
  }

  /** Size of a blob's content without rebuilding it (one only the store holds, of unknown size, is read back). */
  size(id: BlobId): number {
    const stored = this.blobs.get(id)
    if (stored !== undefined) return stored instanceof Uint8Array ? stored.byteLength : stored.size
    const size = this.reader !== undefined ? this.durable.size(id) : undefined
    if (size === undefined) throw new Error(`rewindfs: blob ${id} is missing from the store`)
    return Number.isNaN(size) ? this.get(id).byteLength : size
  }

  /** Size of a blob as the durable store counts it (undefined when it is not counted; NaN when not known). */
  durableSize(id: BlobId): number | undefined {
    return this.durable.size(id)
  }

  /** The blob a delta is made against, if `id` is stored as one. */
  baseOf(id: BlobId): BlobId | undefined {
    const stored = this.blobs.get(id)
    return stored instanceof Uint8Array || stored === undefined ? undefined : stored.base
  }

  private replace(id: BlobId, value: Uint8Array | Delta): void {
    const old = this.blobs.get(id)
    if (old !== undefined) this.storedBytes -= old instanceof Uint8Array ? old.byteLength : old.cost
    this.cacheOut(id)
    this.blobs.set(id, value)
    this.storedBytes += value instanceof Uint8Array ? value.byteLength : value.cost
    if (value instanceof Uint8Array && this.isDurable(id)) this.cacheIn(id, value.byteLength)
  }

  /** Notes that `next` replaced `previous` as a file's content: a candidate reverse delta. */
  succeeded(previous: BlobId, next: BlobId): void {
    // On demand, an old version leaves memory whole once durable: no delta to make.
    if (this.reader !== undefined || previous === next || this.size(next) < MIN_DELTA_SIZE) return
    // An appended file's older version is a view of the newer one's buffer: a delta saves nothing.
    const old = this.blobs.get(previous)
    if (old instanceof Uint8Array && this.growing.isShared(old) && old.buffer === (this.blobs.get(next) as Uint8Array | undefined)?.buffer) return
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

  /** Whether a blob can be had: in memory, or (on demand) in the durable store. */
  has(id: BlobId): boolean {
    return this.blobs.has(id) || this.storeOnly(id)
  }

  /** Whether a blob's content is in memory (not only in the durable store). */
  resident(id: BlobId): boolean {
    return this.blobs.has(id)
  }

  /** Marks an existing blob as referenced again (e.g. a node reused by restore or undo). */
  retain(id: BlobId): void {
    this.protectedIds?.add(id)
  }

  /** Blobs known: in memory, or (on demand) only in the durable store. */
  get count(): number {
    // On demand, the cache holds exactly the contents in memory that are durable too.
    return this.reader === undefined ? this.blobs.size : this.blobs.size - this.cache.size + this.durable.totals().blobs
  }

  /** Bytes of contents held in memory. */
  get bytes(): number {
    return this.storedBytes
  }

  /** The blobs in memory (a collection sweeps them; what only the durable store holds, compaction deletes). */
  ids(): IterableIterator<BlobId> {
    return this.blobs.keys()
  }

  /** Blobs in memory that the durable store holds too. */
  residentDurable(): BlobId[] {
    return [...this.blobs.keys()].filter((id) => this.isDurable(id))
  }

  /**
   * Overwrites a blob's bytes with zeros and drops it (purging leaked content); on demand, the
   * durable store's copy is no longer read (the compaction that follows deletes it).
   */
  erase(id: BlobId): boolean {
    const stored = this.blobs.get(id)
    const held = this.storeOnly(id)
    if (stored === undefined && !held) return false
    if (stored !== undefined) {
      // Blobs stored as deltas against this one are rebuilt whole first: they must not lose their base.
      for (const [other, value] of this.blobs) if (!(value instanceof Uint8Array) && value.base === id) this.replace(other, this.get(other))
      // Other versions of an appended file that share its buffer get their own copies first.
      if (stored instanceof Uint8Array && this.growing.isShared(stored)) {
        this.growing.forget(stored.buffer)
        for (const [other, value] of this.blobs) if (other !== id && value instanceof Uint8Array && value.buffer === stored.buffer) this.blobs.set(other, value.slice())
      }
      if (stored instanceof Uint8Array) stored.fill(0)
      this.drop(id)
    }
    if (this.reader !== undefined) this.notDurable(id)
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
      this.drop(id)
    }
    return false
  }
}
