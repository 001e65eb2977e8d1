/**
 * Content-addressed blob store: file contents keyed by hash, so identical content is stored once
 * across files, sessions and checkpoints. Blobs are immutable once stored; the store owns the bytes
 * it is given. Unreachable blobs are removed by the collector (collector.ts), never by the store.
 */
import { bytesEqual } from '../bytes.js'
import { hashBytes } from './hash.js'

export type BlobId = string

export interface BlobCounters {
  /** Blobs looked up or stored since creation; complexity tests read this. */
  touched: number
}

export class BlobStore {
  private readonly blobs = new Map<BlobId, Uint8Array>()
  private storedBytes = 0
  /** Ids stored or re-referenced while a collection is marking: never swept by that cycle. */
  private protectedIds: Set<BlobId> | undefined
  readonly counters: BlobCounters = { touched: 0 }
  /** Bytes stored since the last collection, to decide when another one is worth it. */
  allocatedSinceCollection = 0

  /** Stores `bytes` (taking ownership) and returns their id. */
  put(bytes: Uint8Array): BlobId {
    this.counters.touched++
    const base = hashBytes(bytes)
    let id = base
    // A hash match is confirmed byte by byte; a true collision gets a suffixed id.
    for (let n = 1; ; n++) {
      const existing = this.blobs.get(id)
      if (existing === undefined) {
        this.blobs.set(id, bytes)
        this.storedBytes += bytes.byteLength
        this.allocatedSinceCollection += bytes.byteLength
        break
      }
      if (bytesEqual(existing, bytes)) break
      id = `${base}~${n}`
    }
    this.protectedIds?.add(id)
    return id
  }

  /** The stored bytes: callers must not modify them (copy before handing them out). */
  get(id: BlobId): Uint8Array {
    this.counters.touched++
    const bytes = this.blobs.get(id)
    if (bytes === undefined) throw new Error(`rewindfs: blob ${id} is missing from the store`)
    return bytes
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
    const bytes = this.blobs.get(id)
    if (bytes === undefined) return false
    bytes.fill(0)
    this.storedBytes -= bytes.byteLength
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
      const bytes = this.blobs.get(id)
      if (bytes !== undefined) this.storedBytes -= bytes.byteLength
      this.blobs.delete(id)
    }
    return false
  }
}
