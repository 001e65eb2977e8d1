/**
 * Staging for new contents over a durable store that reads synchronously (BlobStore.readOnDemand).
 * There a content has to stay in memory only until it is durable; after that the store reads it
 * back when needed. A copy of its own for every small content written (an ArrayBuffer the garbage
 * collector tracks, and fresh memory: a page fault per 4 KiB, 13-15 µs each in the VMs we measure
 * on) was most of what a 1 KiB writeFile cost a durable workspace. Small contents are copied into a
 * few chunks instead, used in turn: a chunk is used again once every content still staged in it is
 * durable, and those contents then leave memory (BlobStore decides, through `release`). A chunk
 * whose contents are not all durable yet is never reused: a later one is, or another is made, and
 * the extra ones are let go once released.
 *
 * Staged bytes are the BlobStore's alone: it lends them only to the durable store's putBlobs,
 * their chunk waiting until that resolves (a store copies what it keeps: Store.putBlobs), and
 * copies them out before handing them to anyone else (BlobStore.get).
 */
import type { BlobId } from './store.js'

/**
 * Bytes of one chunk. Small, so the ring stays in the CPU's caches and a workspace touches little
 * new memory: measured against 1 MiB chunks, 1 KiB writeFiles at a sync every 100 took about 2 µs
 * less each and the process 1.5k fewer page faults per 20k of them.
 */
export const CHUNK_BYTES = 256 * 1024

/** Chunks kept for reuse: the newest contents written stay in memory for CHUNKS × CHUNK_BYTES of writes after them. */
export const CHUNKS = 4

/** The largest content staged; larger ones get an allocation of their own (their copy costs more than its bookkeeping). */
export const STAGED_LIMIT = 64 * 1024

/** A content staged: its id and the bytes it was given (a view into its chunk). */
export type StagedEntry = readonly [BlobId, Uint8Array]

interface Chunk {
  readonly bytes: Uint8Array
  used: number
  entries: StagedEntry[]
}

export class Staging {
  /** Oldest first; the last one is being filled. */
  private readonly chunks: Chunk[] = []
  private readonly buffers = new Set<ArrayBufferLike>()

  /**
   * `release`: asked before a chunk is used again, with the contents staged in it; returns whether
   * they may go (it drops the ones still held), false while one of them is not durable.
   */
  constructor(
    private readonly release: (entries: readonly StagedEntry[]) => boolean,
    private readonly chunkBytes = CHUNK_BYTES,
    private readonly keep = CHUNKS,
  ) {}

  /** A staged copy of `bytes` under `id`, or undefined when they are too large to stage. */
  place(id: BlobId, bytes: Uint8Array): Uint8Array | undefined {
    const size = bytes.byteLength
    if (size > STAGED_LIMIT || size > this.chunkBytes) return undefined
    let chunk = this.chunks[this.chunks.length - 1]
    if (chunk === undefined || chunk.used + size > this.chunkBytes) chunk = this.next()
    const view = chunk.bytes.subarray(chunk.used, chunk.used + size)
    view.set(bytes)
    // Aligned, so a view can be read as words (same-content.ts compares that way).
    chunk.used += (size + 7) & ~7
    chunk.entries.push([id, view])
    return view
  }

  /** Whether `bytes` are a staged view (they must be copied before they leave the BlobStore). */
  holds(bytes: Uint8Array): boolean {
    return this.buffers.has(bytes.buffer)
  }

  /**
   * The chunk to fill next: the oldest one that can be released, else a new one. Released ones
   * beyond `keep` (made while contents were not durable) are let go on the way.
   */
  private next(): Chunk {
    for (let i = 0; i < this.chunks.length && this.chunks.length >= this.keep; ) {
      const chunk = this.chunks[i]
      if (!this.release(chunk.entries)) {
        i++
        continue
      }
      this.chunks.splice(i, 1)
      if (this.chunks.length < this.keep) {
        chunk.used = 0
        chunk.entries = []
        this.chunks.push(chunk)
        return chunk
      }
      this.buffers.delete(chunk.bytes.buffer)
    }
    const chunk: Chunk = { bytes: new Uint8Array(this.chunkBytes), used: 0, entries: [] }
    this.chunks.push(chunk)
    this.buffers.add(chunk.bytes.buffer)
    return chunk
  }
}
