/**
 * The directory's LowerWalker: reads for one walk over the tree (the agent tools' search over paths
 * the workspace has not changed), without DirectorySource's confinement walk per call. The walk
 * hands over only paths with no symlink along them and entries this walker listed, so paths map onto
 * the root lexically; files open with O_NOFOLLOW, so no link on disk is followed at the last step
 * either, and O_NONBLOCK, so a FIFO put where a file was listed is refused, not waited on. A
 * directory on the way swapped for a link in the middle of a walk is caught as DirectorySource
 * catches it (EACCES): a file is opened through the descriptor of its directory, checked to be
 * inside the root (or, without /proc, read only once its own descriptor is checked so), and a
 * listing, an lstat or a readlink goes through the descriptor of a directory checked so. A file's bytes go into one
 * buffer the walker reuses, so a walk over many small files allocates nothing per file. Each call
 * runs as host access (host-fs.ts) once, not once per fs call. Names that are not UTF-8 are left
 * out, as DirectorySource leaves them out (see utf8Entries).
 */
import fs from 'node:fs'
import type { EntryType, LowerWalker, WalkerEntry } from 'rewindfs/adapter-kit'
import { type Confinement, READ_FLAGS, isReserved, regularFile } from './confine.js'
import { onHostNow } from './host-fs.js'
import { readFully } from './pack-io.js'

/** The reused buffer grows to the largest file read so far, up to this. */
const SCRATCH_MAX = 8 * 1024 * 1024

export class DirectoryWalker implements LowerWalker {
  private scratch = Buffer.allocUnsafe(64 * 1024)
  /**
   * The directory of the last file read, open and checked inside the root (Confinement.
   * checkedDirectory): its next files open through its descriptor, with no check each (the check,
   * a readlink per file, cost a search as much as the opens). Closed when the event loop next turns,
   * so nothing holds it past the walk that read through it.
   */
  private directory: { readonly path: string; readonly at: string; readonly fd: number; rename<E>(error: E): E } | undefined

  constructor(private readonly confinement: Confinement) {}

  /** Files, directories and symlinks (what the directory source shows), without its reserved names. */
  list(path: string): WalkerEntry[] {
    return this.onHost(() => this.listNow(path))
  }

  read(path: string): Uint8Array {
    return this.onHost(() => this.readNow(path))
  }

  /** Parts read into the reused buffer; `visit` runs between reads, not as host access (it is the caller's code). */
  readParts(path: string, size: number, visit: (part: Uint8Array) => boolean): void {
    const fd = this.onHost(() => {
      const fd = this.open(path)
      try {
        regularFile(fs.fstatSync(fd), path) // as readNow: a FIFO or device put there since is not read
      } catch (error) {
        fs.closeSync(fd)
        throw error
      }
      return fd
    })
    try {
      if (this.scratch.length < size) this.scratch = Buffer.allocUnsafe(size)
      const buffer = this.scratch.subarray(0, size)
      for (let position = 0; ; ) {
        // Filled to `size` unless the file ends, so every part but the last is whole.
        const length = this.onHost(() => readFully(fd, buffer, size, position))
        if (length === 0 || !visit(buffer.subarray(0, length)) || length < size) return
        position += length
      }
    } finally {
      this.onHost(() => fs.closeSync(fd))
    }
  }

  stat(path: string): { size: number; mtimeMs: number } {
    const stats = this.onHost(() => this.confinement.inParent(this.confinement.lexical(path), 'lstat', path, (at) => fs.lstatSync(at)))
    return { size: stats.size, mtimeMs: stats.mtimeMs }
  }

  readlink(path: string): string {
    return this.onHost(() => this.confinement.shownTarget(this.confinement.inParent(this.confinement.lexical(path), 'readlink', path, (at) => fs.readlinkSync(at, 'utf8'))))
  }

  /** As host access; what it throws names workspace paths, as the source's own calls do (hostError). */
  private onHost<T>(read: () => T): T {
    try {
      return onHostNow(read)
    } catch (error) {
      throw this.confinement.hostError(error)
    }
  }

  private listNow(path: string): WalkerEntry[] {
    const host = this.confinement.lexical(path)
    return this.confinement.inDirectory(host, 'scandir', path, (at) => typedEntries(fs, at ?? host))
  }

  /** Opens a file for reading: through its directory's checked descriptor where there is /proc, else by its path, checked. */
  private open(path: string): number {
    const host = this.confinement.lexical(path)
    const slash = host.lastIndexOf('/')
    const dir = host.slice(0, slash) || '/'
    if (this.directory?.path !== dir) {
      this.closeDirectory()
      const checked = this.confinement.checkedDirectory(dir, 'open', path)
      if (checked === undefined) {
        const fd = fs.openSync(host, READ_FLAGS)
        try {
          this.confinement.checkDescriptor(fd, 'open', path)
        } catch (error) {
          fs.closeSync(fd)
          throw error
        }
        return fd
      }
      this.directory = { path: dir, ...checked }
      setImmediate(() => this.closeDirectory()).unref()
    }
    try {
      return fs.openSync(this.directory.at + host.slice(slash), READ_FLAGS)
    } catch (error) {
      throw this.directory.rename(error)
    }
  }

  private closeDirectory(): void {
    if (this.directory === undefined) return
    fs.closeSync(this.directory.fd)
    this.directory = undefined
  }

  /** Open, read, close for a file that fits the buffer; a bigger one is read into its own. */
  private readNow(path: string): Uint8Array {
    const fd = this.open(path)
    try {
      // Listed as a file a moment ago; a FIFO or device put there since is not read (it may never end).
      const stats = fs.fstatSync(fd)
      regularFile(stats, path)
      let length = fs.readSync(fd, this.scratch, 0, this.scratch.length, 0)
      if (length < this.scratch.length) return this.scratch.subarray(0, length)
      // Bigger than the buffer: read the rest into one of the file's size (it may still grow).
      let buffer = Buffer.allocUnsafe(Math.max(stats.size, length) + 1)
      this.scratch.copy(buffer, 0, 0, length)
      if (buffer.length <= SCRATCH_MAX) this.scratch = buffer
      for (;;) {
        if (length === buffer.length) {
          const grown = Buffer.allocUnsafe(buffer.length * 2)
          buffer.copy(grown)
          buffer = grown
        }
        const n = fs.readSync(fd, buffer, length, buffer.length - length, length)
        if (n === 0) return buffer.subarray(0, length)
        length += n
      }
    } finally {
      fs.closeSync(fd)
    }
  }
}

/**
 * What a listing of the directory at `at` shows: its files, directories and symlinks with their
 * types as the listing gives them (d_type: no stat per entry; Node stats only where the file system
 * gives none), without the reserved names or names that are not UTF-8. FIFOs, sockets and devices
 * are left out, as the source's stat says nothing is there.
 */
export function typedEntries(host: Pick<typeof fs, 'readdirSync'>, at: string): WalkerEntry[] {
  const out: WalkerEntry[] = []
  for (const { name, entry } of utf8Entries(host, at)) {
    const type: EntryType | undefined = entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : undefined
    if (type !== undefined && !isReserved(name)) out.push({ name, type })
  }
  return out
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * A directory's entries whose names are UTF-8, with those names. A workspace name is a string, so
 * the others are left out, as a command's read-back skips them: decoded with U+FFFD, 'a\xff' and
 * 'a\xfe' would show as one 'a\uFFFD' that nothing on disk is named (its read ENOENT), and a write
 * to it would flush a third file. Listed as strings (the usual case, fast); only a listing with a
 * U+FFFD in it is read again as bytes, to tell a real U+FFFD from bytes that did not decode.
 */
export function utf8Entries(host: Pick<typeof fs, 'readdirSync'>, path: string): { name: string; entry: fs.Dirent<string | Buffer> }[] {
  const listed = host.readdirSync(path, { withFileTypes: true })
  if (!listed.some((entry) => entry.name.includes('\uFFFD'))) return listed.map((entry) => ({ name: entry.name, entry }))
  const out: { name: string; entry: fs.Dirent<Buffer> }[] = []
  for (const entry of host.readdirSync(path, { withFileTypes: true, encoding: 'buffer' })) {
    try {
      out.push({ name: utf8.decode(entry.name), entry })
    } catch {
      // not UTF-8: left out
    }
  }
  return out
}
