/**
 * Reading a directory lower straight from disk, for the tree walks of search_files, find_files and
 * list_directory over paths the workspace has not changed (there the view is the disk). Node only:
 * walk.ts loads this module only when the lower source is a directory, so the tools stay
 * browser-safe. Files are opened with O_NOFOLLOW and never followed through a link.
 */
import fs from 'node:fs'
import { isReserved } from '../adapters/node-fs/confine.js'

export type DiskType = 'file' | 'dir' | 'symlink'

const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0

/** A directory's files, directories and symlinks (what the directory source shows), unsorted. */
export function listDisk(host: string): { name: string; type: DiskType }[] {
  const out: { name: string; type: DiskType }[] = []
  for (const entry of fs.readdirSync(host, { withFileTypes: true })) {
    const type: DiskType | undefined = entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : undefined
    if (type !== undefined && !isReserved(entry.name)) out.push({ name: entry.name, type })
  }
  return out
}

/** Grows to the largest file read so far (up to SCRATCH_MAX); reused by every read. */
const scratch = { buffer: Buffer.allocUnsafe(64 * 1024) }
const SCRATCH_MAX = 8 * 1024 * 1024

/**
 * A file's bytes, read into a buffer this module reuses when they fit: valid until the next read, so
 * a walk over many small files allocates nothing per file (open, read, close for most of them).
 */
export function readDisk(host: string): Uint8Array {
  const fd = fs.openSync(host, fs.constants.O_RDONLY | O_NOFOLLOW)
  try {
    let length = fs.readSync(fd, scratch.buffer, 0, scratch.buffer.length, 0)
    if (length < scratch.buffer.length) return scratch.buffer.subarray(0, length)
    // Bigger than the scratch buffer: read the rest into one of the file's size (it may still grow).
    const size = fs.fstatSync(fd).size
    let buffer = Buffer.allocUnsafe(Math.max(size, length) + 1)
    scratch.buffer.copy(buffer, 0, 0, length)
    if (buffer.length <= SCRATCH_MAX) scratch.buffer = buffer
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

export function statDisk(host: string): { size: number; mtimeMs: number } {
  const stats = fs.lstatSync(host)
  return { size: stats.size, mtimeMs: stats.mtimeMs }
}

export function readlinkDisk(host: string): string {
  return fs.readlinkSync(host, 'utf8')
}
