/**
 * The volume as an index: the tar the Engine API sends for /v becomes IndexedSource entries, with
 * contents kept up to a byte budget. Versions are in the terms both the tar and a path stat can give
 * (the archive has whole-second mtimes), so an index version and a later `versions()` compare equal
 * while nothing changed.
 */
import type { Readable } from 'node:stream'
import tar from 'tar-stream'
import { type EntryType, type IndexedEntry, isWithin } from 'rewindfs/adapter-kit'
import type { PathStat } from './helper.js'

/** The staging folder of flushes, under the volume root; never part of the lower view. */
export const STAGING = '/.rewindfs-flush'

/** The archive's and the tar header's precision: whole seconds (negative times clamp to the epoch). */
export const wholeSeconds = (ms: number) => Math.floor(Math.max(0, ms) / 1000)

/**
 * Files: size, whole-second mtime and permissions. Directories: permissions only (their mtime moves
 * with every entry added or removed, which their children's own versions already show). Symlinks:
 * target length and mtime (a path stat resolves the target, so the text itself is not comparable).
 */
export function versionOf(type: EntryType, mode: number, size: number, mtimeSeconds: number): string {
  const permissions = (mode & 0o7777).toString(8)
  if (type === 'dir') return `d:${permissions}`
  if (type === 'symlink') return `l:${size}:${mtimeSeconds}`
  return `f:${size}:${mtimeSeconds}:${permissions}`
}

// Go's os.FileMode bits, as the path stat header carries them.
const GO_DIR = 2 ** 31
const GO_SYMLINK = 2 ** 27
const GO_OTHER = 2 ** 26 | 2 ** 25 | 2 ** 24 | 2 ** 21 | 2 ** 19 // device, pipe, socket, char device, irregular
const GO_SETUID = 2 ** 23
const GO_SETGID = 2 ** 22
const GO_STICKY = 2 ** 20

export function versionOfStat(stat: PathStat): string {
  const mode = stat.mode
  const permissions = (mode & 0o777) | (mode & GO_SETUID ? 0o4000 : 0) | (mode & GO_SETGID ? 0o2000 : 0) | (mode & GO_STICKY ? 0o1000 : 0)
  const seconds = Math.floor(Date.parse(stat.mtime) / 1000)
  if (mode & GO_DIR) return versionOf('dir', permissions, 0, seconds)
  if (mode & GO_SYMLINK) return versionOf('symlink', permissions, stat.size, seconds)
  // Devices, pipes and sockets are not in the index (the lower layer has no such entries).
  if (mode & GO_OTHER) return `other:${mode}`
  return versionOf('file', permissions, stat.size, seconds)
}

/** 'v/a/b' (or 'v/a/b/'): the path inside the volume, '/a/b'. */
function volumePath(name: string): string {
  const parts = name.split('/').filter((part) => part !== '' && part !== '.')
  return '/' + parts.slice(1).join('/')
}

async function drain(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** An index entry for one tar header, without contents; undefined for devices, pipes, sockets and hard links. */
function entryOf(header: tar.Header): IndexedEntry | undefined {
  const mode = (header.mode ?? 0) & 0o7777
  const seconds = wholeSeconds(header.mtime?.getTime() ?? 0)
  const mtimeMs = seconds * 1000
  if (header.type === 'directory') return { type: 'dir', mode, size: 0, mtimeMs, version: versionOf('dir', mode, 0, seconds) }
  if (header.type === 'symlink') {
    const target = header.linkname ?? ''
    const size = Buffer.byteLength(target)
    return { type: 'symlink', mode: 0o777, size, mtimeMs, target, version: versionOf('symlink', 0o777, size, seconds) }
  }
  if (header.type === 'file' || header.type === 'contiguous-file') {
    const size = header.size ?? 0
    return { type: 'file', mode, size, mtimeMs, version: versionOf('file', mode, size, seconds) }
  }
  return undefined
}

/**
 * Reads the archive of the volume root into index entries. Files' contents are kept while the total
 * stays within `budget` bytes; the rest load on demand. Hard links share their first name's entry;
 * devices, pipes and sockets cannot be files of an overlay and are left out.
 */
export async function readIndex(archive: Readable, budget: number): Promise<Map<string, IndexedEntry>> {
  const entries = new Map<string, IndexedEntry>()
  let kept = 0
  await parse(archive, async (extract) => {
    for await (const item of extract) {
      const path = volumePath(item.header.name)
      const entry = isWithin(path, STAGING) ? undefined : entryOf(item.header)
      if (entry?.type === 'file' && kept + entry.size <= budget) {
        entry.content = new Uint8Array(await drain(item))
        kept += entry.size
      } else item.resume()
      if (entry) entries.set(path, entry)
      else if (item.header.type === 'link') {
        // A hard link: the same inode, so the same size, content and version as the first name.
        const first = entries.get(volumePath(item.header.linkname ?? ''))
        if (first?.type === 'file') entries.set(path, { ...first, mode: (item.header.mode ?? 0) & 0o7777 })
      }
    }
  })
  return entries
}

/**
 * The version of the entry named `name` in an archive of its parent directory, or undefined. For the
 * paths a path stat cannot answer: it resolves a symlink's target, and fails on a loop.
 */
export function versionIn(archive: Readable, name: string): Promise<string | undefined> {
  return parse(archive, async (extract) => {
    for await (const item of extract) {
      item.resume()
      if (item.header.name.replace(/\/$/, '') === name) return entryOf(item.header)?.version ?? `other:${item.header.type}`
    }
    return undefined
  })
}

/** The contents of the one file an archive of a single path holds, or undefined if it is not a file. */
export function readSingleFile(archive: Readable): Promise<Uint8Array | undefined> {
  return parse(archive, async (extract) => {
    let content: Uint8Array | undefined
    for await (const item of extract) {
      if (content === undefined && (item.header.type === 'file' || item.header.type === 'contiguous-file')) content = new Uint8Array(await drain(item))
      else item.resume()
    }
    return content
  })
}

/** Runs `consume` over the archive's entries; an answer left unread (an early return, an error) is closed. */
async function parse<T>(archive: Readable, consume: (extract: tar.Extract) => Promise<T>): Promise<T> {
  const extract = tar.extract()
  archive.on('error', (error) => extract.destroy(error))
  archive.pipe(extract)
  try {
    return await consume(extract)
  } finally {
    if (!archive.readableEnded) archive.destroy()
  }
}
