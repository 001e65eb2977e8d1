/**
 * `ws.storage`: where file contents are — in memory (resident) or only in the durable store — and
 * why, so the memory budget can be watched: on demand, resident bytes stay within `cacheBytes`
 * plus contents not durable yet.
 */
import { type BlobStore, DEFAULT_CACHE_BYTES } from '../blob/store.js'
import type { Store } from './store.js'

/** The `cacheBytes` option, checked: a number of bytes ≥ 0 (Infinity keeps every content read), 256 MiB by default. */
export function cacheBytesOf(value: unknown): number {
  if (value === undefined) return DEFAULT_CACHE_BYTES
  if (typeof value !== 'number' || !(value >= 0)) {
    throw Object.assign(new RangeError(`rewindfs: cacheBytes must be a number ≥ 0; got ${String(value)}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  return value
}

export interface StorageReport {
  /** Blobs the workspace knows: in memory, or only in the durable store. */
  blobs: number
  /** Bytes of contents in memory (the same as `resident.bytes`). */
  bytes: number
  /** Contents in memory now: durable ones the cache holds, and those not durable yet. */
  resident: { blobs: number; bytes: number }
  /** Contents the durable store holds (none without one). */
  durable: { blobs: number; bytes: number }
  /**
   * 'on-demand': the store reads synchronously, so contents are read from it when needed, at
   * most `cache.limit` bytes of durable ones stay in memory, and new ones leave memory once durable
   * and about a MiB of newer writes followed (staging.ts) unless read; 'preloaded': the store has no
   * synchronous reads (IndexedDB on a page's main thread), so every content was read on open and
   * stays; 'memory': no durable store.
   */
  contents: 'on-demand' | 'preloaded' | 'memory'
  /** Durable contents held in memory, and the most that may be (`cacheBytes`). */
  cache: { bytes: number; limit: number }
}

export function storageReport(blobs: BlobStore, store: Store | undefined): StorageReport {
  const { resident, durable, cache } = blobs.occupancy
  return {
    blobs: blobs.count,
    bytes: resident.bytes,
    resident,
    durable,
    contents: blobs.onDemand ? 'on-demand' : store ? 'preloaded' : 'memory',
    cache: blobs.onDemand ? cache : { bytes: 0, limit: 0 },
  }
}
