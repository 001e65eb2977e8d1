/**
 * The file descriptor table. A descriptor writing to a file keeps a private working buffer so a
 * stream of small writes costs O(bytes written), not a re-hash of the file per write; the buffer is
 * settled into the tree (one blob) before any other fs call can observe the file, and on close.
 */
import { FsError } from '../errors.js'
import type { Meta } from '../layer/nodes.js'
import type { Entry } from '../overlay.js'

export interface OpenFile {
  readonly fd: number
  /** Canonical path of its file (renames move it along), and the inode it named at open: writes settle only onto that inode. */
  path: string
  readonly ino: number
  readonly flags: number
  readonly readable: boolean
  readonly writable: boolean
  readonly append: boolean
  readonly directory: boolean
  position: number
  /** Working copy of the contents while writing; `length` bytes of it are the file. */
  buffer: Uint8Array | undefined
  length: number
  dirty: boolean
  /** Bytes written since it was last settled (watchers: markDirty). */
  written: number
  /** The version of the large lower file it reads a part at a time (operations.ts readPart). */
  partsOf: string | undefined
  /**
   * The file's bytes as last read, while the tree is unchanged (`version`): a stream's reads do not
   * resolve the path per chunk. Once the tree changed, they are still the file's while it names the
   * same content (`content`: its blob, or its lower file's version), so a write elsewhere between
   * two reads (a copy's) does not read the whole file again.
   */
  lastRead: { version: number; readonly content: string | undefined; readonly bytes: Uint8Array } | undefined
  /**
   * Its inode once the file has no name left (unlinked, removed, renamed over): as on Linux it lives
   * on for the descriptor alone, its contents in `buffer`, never settled into the tree.
   */
  orphan: Orphan | undefined
}

/** An open file's inode without a name: the entry it was, and its metadata since. */
export interface Orphan {
  readonly entry: Entry
  meta: Meta
}

// Far above real descriptor numbers, so one of ours is never mistaken for the process's own.
const FIRST_FD = 1 << 30

const NONE: readonly OpenFile[] = Object.freeze([])

export class DescriptorTable {
  private readonly open = new Map<number, OpenFile>()
  private readonly dirty = new Set<OpenFile>()
  private next = FIRST_FD
  /** Numbers closed and free again, largest first: open takes the lowest free number, as Linux does. */
  private readonly free: number[] = []

  add(file: Omit<OpenFile, 'fd' | 'position' | 'buffer' | 'length' | 'dirty' | 'written' | 'partsOf' | 'lastRead' | 'orphan'>): OpenFile {
    const fd = this.free.pop() ?? this.next++
    const entry: OpenFile = { ...file, fd, position: 0, buffer: undefined, length: 0, dirty: false, written: 0, partsOf: undefined, lastRead: undefined, orphan: undefined }
    this.open.set(entry.fd, entry)
    return entry
  }

  get(fd: number, syscall: string): OpenFile {
    const file = this.open.get(fd)
    if (!file) throw new FsError('EBADF', syscall)
    return file
  }

  find(fd: number): OpenFile | undefined {
    return this.open.get(fd)
  }

  delete(fd: number): void {
    const file = this.open.get(fd)
    if (!file) return
    this.dirty.delete(file)
    this.open.delete(fd)
    // Kept in descending order (a binary search for its place), so the lowest is last.
    let low = 0
    let high = this.free.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.free[middle] > fd) low = middle + 1
      else high = middle
    }
    this.free.splice(low, 0, fd)
  }

  markDirty(file: OpenFile): void {
    file.dirty = true
    this.dirty.add(file)
  }

  /** Descriptors with unsettled writes, except `keep` (the one being written to right now). */
  pending(keep?: OpenFile): readonly OpenFile[] {
    // Asked before every call: nothing pending answers without an allocation.
    if (this.dirty.size === 0 || (this.dirty.size === 1 && keep?.dirty)) return NONE
    return [...this.dirty].filter((file) => file !== keep)
  }

  /** Descriptors with unsettled writes to `file`'s inode, other than `file`. */
  pendingOn(file: OpenFile): readonly OpenFile[] {
    if (this.dirty.size === 0 || (this.dirty.size === 1 && file.dirty)) return NONE
    return [...this.dirty].filter((other) => other !== file && other.ino === file.ino)
  }

  settled(file: OpenFile): void {
    file.dirty = false
    file.written = 0
    file.buffer = undefined
    this.dirty.delete(file)
  }

  get size(): number {
    return this.open.size
  }

  /** A rename moved `from` (and what is under it) to `to`: descriptors follow their files, as inodes do. */
  moved(from: string, to: string): void {
    for (const file of this.open.values()) {
      if (file.path === from) file.path = to
      else if (file.path.startsWith(from + '/')) file.path = to + file.path.slice(from.length)
    }
  }

  all(): IterableIterator<OpenFile> {
    return this.open.values()
  }
}
