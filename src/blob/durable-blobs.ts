/**
 * What the durable store holds, as the blob store counts it: a blob's size by id, and the totals
 * `ws.storage` reports. Either listed (every blob registered on open: stores that cannot answer
 * a lookup, and every store without synchronous reads) or asked of the store when a blob is first
 * looked up (Store.blobSize), so that opening a store costs its index, not its number of blobs.
 */
import type { BlobId } from './store.js'

export interface DurableBlobs {
  /** Size of a blob the store holds (NaN: held, size not known); undefined when it holds none, or is no longer counted. */
  size(id: BlobId): number | undefined
  /** The store holds the blob now (a commit put it). */
  add(id: BlobId, size: number): void
  /** The blob is no longer counted: the store deletes it, or its bytes were found damaged (kept, never read). */
  remove(id: BlobId): void
  /** How many blobs are counted, and their bytes. */
  totals(): { blobs: number; bytes: number }
}

/** Every blob listed: registered on open and as commits make them durable. */
export class ListedBlobs implements DurableBlobs {
  private readonly sizes = new Map<BlobId, number>()
  private bytes = 0

  size(id: BlobId): number | undefined {
    return this.sizes.get(id)
  }

  add(id: BlobId, size: number): void {
    if (this.sizes.has(id)) return
    this.sizes.set(id, size)
    if (size > 0) this.bytes += size
  }

  remove(id: BlobId): void {
    const size = this.sizes.get(id)
    if (size === undefined) return
    this.sizes.delete(id)
    if (size > 0) this.bytes -= size
  }

  totals(): { blobs: number; bytes: number } {
    return { blobs: this.sizes.size, bytes: this.bytes }
  }
}

/** What a store that answers lookups (Store.blobSize, Store.blobTotals) tells about its blobs. */
export interface BlobIndex {
  blobSize(id: BlobId): number | undefined
  blobTotals(): { readonly blobs: number; readonly bytes: number }
}

/**
 * Blobs asked of the store's own index when first looked up; nothing is registered on open. Only
 * what the engine stopped counting while the store still holds it is remembered (a blob whose
 * deletion is in flight, or whose bytes are damaged): dropped once the store no longer lists it.
 */
export class IndexedBlobs implements DurableBlobs {
  /** Blobs the store may still list that are not counted. */
  private readonly uncounted = new Set<BlobId>()
  /** The set is looked over once it grows past this: what the store no longer lists leaves it. */
  private pruneAt = 1024

  constructor(private readonly index: BlobIndex) {}

  private held(id: BlobId): number | undefined {
    return this.index.blobSize(id)
  }

  size(id: BlobId): number | undefined {
    if (this.uncounted.size > 0 && this.uncounted.has(id)) {
      if (this.held(id) === undefined) this.uncounted.delete(id)
      return undefined
    }
    return this.held(id)
  }

  add(id: BlobId): void {
    this.uncounted.delete(id)
  }

  remove(id: BlobId): void {
    if (this.held(id) === undefined) return
    this.uncounted.add(id)
    // Deleted ones leave once the store's deletion is done: looked over when the set doubled, so it stays within twice what the store still lists.
    if (this.uncounted.size >= this.pruneAt) {
      this.totals()
      this.pruneAt = 2 * Math.max(1024, this.uncounted.size)
    }
  }

  totals(): { blobs: number; bytes: number } {
    let { blobs, bytes } = this.index.blobTotals()
    for (const id of this.uncounted) {
      const size = this.held(id)
      if (size === undefined) this.uncounted.delete(id)
      else {
        blobs--
        bytes -= size
      }
    }
    return { blobs, bytes }
  }
}
