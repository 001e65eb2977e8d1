/**
 * Files that grow by appends (appendFile: a log written a line at a time). Each append is a new
 * version of the whole file, kept for undo: concatenated and hashed whole, 12 000 appends of 100
 * bytes took 23 s and 7 GB. Here the newest version's bytes sit in a buffer with room to grow, the
 * next version is that buffer with the tail written after them, and the older versions are
 * shorter views of the same buffer (never written below their end), so a run of appends costs
 * O(bytes) in time and memory; with the host's native hash its state goes on from the last version.
 */
import { type GrowingHash, growingHash, hashBytes } from './hash.js'

/** Growing files followed at once: the newest first to go when another starts. */
const FOLLOWED = 8

interface Growing {
  buffer: Uint8Array
  length: number
  readonly hash: GrowingHash | undefined
}

export class GrowingFiles {
  /** By the id of each one's newest version (what the next append names as its base). */
  private readonly byNewest = new Map<string, Growing>()
  /** Buffers whose prefixes are blobs' bytes: written only past the newest version's end, and copied out before one is erased. */
  private readonly shared = new WeakSet<ArrayBufferLike>()

  /**
   * The bytes and hash of `current` (the content of blob `base`, when it has one) followed by
   * `tail`, and how many bytes were hashed for them. `follow(id)` is called with the id the store
   * gave them, so the next append to that id goes on from here.
   */
  append(base: string | undefined, current: Uint8Array, tail: Uint8Array): { bytes: Uint8Array; id: string; hashed: number; follow(id: string): void } {
    let growing = base === undefined ? undefined : this.byNewest.get(base)
    if (base !== undefined) this.byNewest.delete(base)
    const fresh = growing === undefined || growing.length !== current.byteLength
    if (growing === undefined || growing.length !== current.byteLength) {
      const hash = growingHash()
      hash?.update(current)
      growing = { buffer: new Uint8Array(room(current.byteLength + tail.byteLength)), length: current.byteLength, hash }
      growing.buffer.set(current)
      this.shared.add(growing.buffer.buffer)
    } else if (growing.buffer.byteLength < growing.length + tail.byteLength) {
      const grown = new Uint8Array(room(growing.length + tail.byteLength))
      grown.set(growing.buffer.subarray(0, growing.length))
      growing.buffer = grown
      this.shared.add(grown.buffer)
    }
    growing.buffer.set(tail, growing.length)
    growing.length += tail.byteLength
    growing.hash?.update(tail)
    const bytes = growing.buffer.subarray(0, growing.length)
    const followed = growing
    return {
      bytes,
      id: followed.hash ? followed.hash.id() : hashBytes(bytes),
      hashed: followed.hash && !fresh ? tail.byteLength : bytes.byteLength,
      follow: (id) => {
        if (this.byNewest.size >= FOLLOWED) this.byNewest.delete(this.byNewest.keys().next().value!)
        this.byNewest.set(id, followed)
      },
    }
  }

  /** Whether `bytes` share a buffer with other versions of a growing file. */
  isShared(bytes: Uint8Array): boolean {
    return this.shared.has(bytes.buffer)
  }

  /** Blob `id` left memory (collected, or durable and evicted): its buffer is not kept for a next append. */
  release(id: string): void {
    this.byNewest.delete(id)
  }

  /** A buffer's versions are about to be overwritten (an erase): no append goes on in it. */
  forget(buffer: ArrayBufferLike): void {
    for (const [id, growing] of this.byNewest) if (growing.buffer.buffer === buffer) this.byNewest.delete(id)
  }
}

/** Room for `size` bytes and as many again, up to 64 MiB more (doubling: O(bytes) copies in all while it grows). */
function room(size: number): number {
  return size + Math.max(64, Math.min(size, 64 * 1024 * 1024))
}
