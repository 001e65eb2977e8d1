/**
 * ws.export(): the view as a WebContainers FileSystemTree, or as a zip archive streamed in chunks.
 * It reads a fork taken when the export starts (O(1)), so writes made meanwhile are not in it and
 * the archive is one consistent state. Loaded on first use, and fflate only for zip, so the core
 * entry carries neither.
 */
import type { DirectoryNode, FileNode, FileSystemTree, SymlinkNode } from '../lower/file-system-tree.js'
import type { Workspace } from '../workspace.js'

interface CommonOptions {
  /** The directory to export (its contents become the top level); '/' by default. */
  path?: string
}

export interface FileSystemTreeExportOptions extends CommonOptions {
  format: 'file-system-tree'
}

export interface ZipExportOptions extends CommonOptions {
  format: 'zip'
  /** Deflate level 1–9, or 0 to store files uncompressed; 6 by default. */
  level?: number
}

export type ExportOptions = FileSystemTreeExportOptions | ZipExportOptions

/** Beyond these a zip needs zip64 records, which the writer (fflate) does not make. */
export const ZIP_MAX_ENTRIES = 0xffff
export const ZIP_MAX_BYTES = 0xffffffff

/** Contents are read and fed to the compressor this much at a time, so big files stream too. */
const SLICE = 1 << 20

const S_IFMT = 0o170000
const UNIX = 3
/** MS-DOS directory attribute, set beside the Unix mode as Info-ZIP does. */
const DOS_DIRECTORY = 0x10
/** Info-ZIP's extended timestamp field: flags (mtime present) then the mtime in seconds, UTC. */
const EXTENDED_TIMESTAMP = 0x5455

type Kind = 'file' | 'dir' | 'symlink'

interface Entry {
  /** Path relative to the exported directory, '/'-separated. */
  name: string
  path: string
  kind: Kind
  mode: number
  mtimeMs: number
  size: number
}

type FsLike = Workspace['fs']

let exports = 0

export function exportView(ws: Workspace, options: FileSystemTreeExportOptions): Promise<FileSystemTree>
export function exportView(ws: Workspace, options: ZipExportOptions): Promise<AsyncIterable<Uint8Array>>
export function exportView(ws: Workspace, options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>>
export async function exportView(ws: Workspace, options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>> {
  const format = (options as { format?: unknown } | null)?.format
  if (format !== 'zip' && format !== 'file-system-tree') {
    throw Object.assign(new TypeError(`rewindfs: export needs { format: 'file-system-tree' | 'zip' }; got format ${JSON.stringify(format)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const level = format === 'zip' ? ((options as ZipExportOptions).level ?? 6) : 0
  if (!Number.isInteger(level) || level < 0 || level > 9) {
    throw Object.assign(new RangeError(`rewindfs: export's zip level must be an integer from 0 to 9; got ${String(level)}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  const given = options.path ?? '/'
  if (typeof given !== 'string') throw Object.assign(new TypeError('rewindfs: export path must be a string'), { code: 'ERR_INVALID_ARG_TYPE' })
  const view = await ws.fork(`${ws.session}-export-${++exports}`)
  let handedOver = false
  try {
    // The fork keeps the cwd: relative paths resolve as fs calls do, and readdir's errors are Node's.
    const entries = walk(view.fs, given)
    if (format === 'file-system-tree') return await tree(view.fs, entries)
    checkZipLimits(entries, given)
    handedOver = true
    return zip(view, entries, level)
  } finally {
    // The zip's iterator closes the fork when it ends or is returned.
    if (!handedOver) await view.close()
  }
}

/** Every entry under `root`, parents before children, names sorted: metadata only, read synchronously from the frozen fork. */
function walk(fs: FsLike, root: string): Entry[] {
  const entries: Entry[] = []
  const visit = (dir: string, prefix: string) => {
    for (const name of (fs.readdirSync(dir) as string[]).sort()) {
      const path = dir.endsWith('/') ? dir + name : `${dir}/${name}`
      const stat = fs.lstatSync(path)
      const kind: Kind = stat.isDirectory() ? 'dir' : stat.isSymbolicLink() ? 'symlink' : 'file'
      const entry: Entry = { name: prefix + name, path, kind, mode: stat.mode, mtimeMs: stat.mtimeMs, size: stat.size }
      entries.push(entry)
      if (kind === 'dir') visit(path, `${entry.name}/`)
    }
  }
  visit(root, '')
  return entries
}

async function tree(fs: FsLike, entries: readonly Entry[]): Promise<FileSystemTree> {
  type Mutable = Record<string, DirectoryNode | FileNode | SymlinkNode>
  const top: Mutable = {}
  const dirs = new Map<string, Mutable>([['', top]])
  for (const entry of entries) {
    const slash = entry.name.lastIndexOf('/')
    const parent = dirs.get(slash < 0 ? '' : entry.name.slice(0, slash))!
    const base = entry.name.slice(slash + 1)
    if (entry.kind === 'dir') {
      const children: Mutable = {}
      dirs.set(entry.name, children)
      parent[base] = { directory: children }
    } else if (entry.kind === 'symlink') {
      parent[base] = { file: { symlink: fs.readlinkSync(entry.path) as string } }
    } else {
      // The promise form loads contents an asynchronous lower source has not loaded yet.
      parent[base] = { file: { contents: (await fs.promises.readFile(entry.path)) as Uint8Array } }
    }
  }
  return top
}

function checkZipLimits(entries: readonly Entry[], given: string): void {
  let bytes = 22
  for (const entry of entries) bytes += entry.size + 2 * (46 + entry.name.length * 3 + 9) + 16
  if (entries.length > ZIP_MAX_ENTRIES || bytes > ZIP_MAX_BYTES) {
    throw Object.assign(
      new RangeError(
        `rewindfs: '${given}' holds ${entries.length} entries and about ${bytes} bytes; a zip without zip64 records holds at most ${ZIP_MAX_ENTRIES} entries and 4 GiB. Export a subdirectory, or flush to a directory.`,
      ),
      { code: 'ERR_REWINDFS_EXPORT_TOO_LARGE' },
    )
  }
}

/** Info-ZIP's extended timestamp: mtime in UTC seconds, so an unzip anywhere restores the same time. */
function timestamp(mtimeMs: number): Record<number, Uint8Array> {
  const field = new Uint8Array(5)
  field[0] = 1
  new DataView(field.buffer).setUint32(1, Math.max(0, Math.min(0xffffffff, Math.floor(mtimeMs / 1000))), true)
  return { [EXTENDED_TIMESTAMP]: field }
}

/** DOS times cannot hold dates before 1980: clamp as zip tools do. */
const DOS_EPOCH = new Date(1980, 0, 1, 0, 0, 2).getTime()

/** One pass only: the fork it reads is closed when the pass ends (or is abandoned through return()). */
function zip(view: Workspace, entries: readonly Entry[], level: number): AsyncIterable<Uint8Array> {
  const encoder = new TextEncoder()
  let started = false
  return {
    async *[Symbol.asyncIterator]() {
      if (started) throw Object.assign(new Error('rewindfs: an export is read once; call ws.export() again for another pass'), { code: 'ERR_REWINDFS_EXPORT_CONSUMED' })
      started = true
      try {
        const { Zip, ZipDeflate, ZipPassThrough } = await import('fflate')
        const chunks: Uint8Array[] = []
        let failure: Error | undefined
        const archive = new Zip((error, chunk) => {
          if (error) failure = error
          else chunks.push(chunk)
        })
        const drain = function* (): Generator<Uint8Array> {
          if (failure) throw failure
          while (chunks.length > 0) yield chunks.shift()!
        }
        for (const entry of entries) {
          const type = entry.mode & S_IFMT
          const stored = entry.kind !== 'file' || level === 0
          const name = entry.kind === 'dir' ? `${entry.name}/` : entry.name
          const file = stored ? new ZipPassThrough(name) : new ZipDeflate(name, { level: level as 1 })
          file.os = UNIX
          file.attrs = (((type | (entry.mode & 0o7777)) << 16) | (entry.kind === 'dir' ? DOS_DIRECTORY : 0)) >>> 0
          file.mtime = Math.max(entry.mtimeMs, DOS_EPOCH)
          file.extra = timestamp(entry.mtimeMs)
          archive.add(file)
          if (entry.kind === 'dir') file.push(new Uint8Array(0), true)
          else if (entry.kind === 'symlink') file.push(encoder.encode(view.fs.readlinkSync(entry.path) as string), true)
          else {
            const contents = (await view.fs.promises.readFile(entry.path)) as Uint8Array
            if (contents.byteLength === 0) file.push(contents, true)
            for (let at = 0; at < contents.byteLength; at += SLICE) {
              file.push(contents.subarray(at, at + SLICE), at + SLICE >= contents.byteLength)
              yield* drain()
            }
          }
          yield* drain()
        }
        archive.end()
        yield* drain()
      } finally {
        await view.close()
      }
    },
  }
}
