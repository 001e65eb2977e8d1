/**
 * `rewindfs/export`: the view as a WebContainers FileSystemTree, or as a zip archive streamed in
 * chunks, written against the Workspace's public API (a fork, its fs). An entry of its own, so the
 * core entry carries neither it nor the zip writer (./zip.ts, loaded for the first zip). It reads a
 * fork taken when the export starts (O(1)), so writes made meanwhile are not in it and the archive
 * is one consistent state.
 */
import type { DirectoryNode, FileNode, FileSystemTree, SymlinkNode } from './lower/file-system-tree.js'
import type { Workspace } from './workspace.js'
import type { Deflate, ZipEntry } from './zip.js'

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

/** Contents are read and fed to the compressor this much at a time, so big files stream too. */
const SLICE = 1 << 20

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

/** A workspace whose engine runs elsewhere (a worker's): it exports there, and streams the zip here. */
export interface ExportsRemotely {
  export(options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>>
}

let exports = 0

/**
 * The view (or the directory `options.path`) as a FileSystemTree, or as a zip: an async iterable of
 * chunks, read once. `ws` is a Workspace, or a worker's workspace, which exports in the worker.
 */
export function exportView(ws: Workspace | ExportsRemotely, options: FileSystemTreeExportOptions): Promise<FileSystemTree>
export function exportView(ws: Workspace | ExportsRemotely, options: ZipExportOptions): Promise<AsyncIterable<Uint8Array>>
export function exportView(ws: Workspace | ExportsRemotely, options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>>
export async function exportView(ws: Workspace | ExportsRemotely, options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>> {
  if ('export' in ws && typeof ws.export === 'function') return ws.export(options)
  return exportHere(ws as Workspace, options)
}

async function exportHere(ws: Workspace, options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>> {
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
  const writer = format === 'zip' ? await import('./zip.js') : undefined
  const deflate = writer && level > 0 ? writer.nativeDeflate(level) : undefined
  if (writer && level > 0 && !deflate) {
    throw Object.assign(new Error('rewindfs: this host has neither node:zlib nor CompressionStream to deflate with; export with level 0 to store files'), { code: 'ERR_REWINDFS_NO_DEFLATE' })
  }
  const view = await ws.fork(`${ws.session}-export-${++exports}`)
  let handedOver = false
  try {
    // The fork keeps the cwd: relative paths resolve as fs calls do, and readdir's errors are Node's.
    const entries = walk(view.fs, given)
    if (!writer) return await tree(view.fs, entries)
    handedOver = true
    return zip(view, entries, writer.writeZip, deflate)
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

/** One pass only: the fork it reads is closed when the pass ends (or is abandoned through return()). */
function zip(view: Workspace, entries: readonly Entry[], writeZip: typeof import('./zip.js').writeZip, deflate: Deflate | undefined): AsyncIterable<Uint8Array> {
  let started = false
  return {
    async *[Symbol.asyncIterator]() {
      if (started) throw Object.assign(new Error('rewindfs: an export is read once; call exportView() again for another pass'), { code: 'ERR_REWINDFS_EXPORT_CONSUMED' })
      started = true
      try {
        yield* writeZip(entries.map((entry) => zipEntry(view.fs, entry)), deflate)
      } finally {
        await view.close()
      }
    },
  }
}

function zipEntry(fs: FsLike, entry: Entry): ZipEntry {
  const { name, kind, mode, mtimeMs, size } = entry
  if (kind === 'dir') return { name, kind: 'directory', mode, mtimeMs }
  if (kind === 'symlink') return { name, kind, mode, mtimeMs, contents: () => [new TextEncoder().encode(fs.readlinkSync(entry.path) as string)] }
  return { name, kind, mode, mtimeMs, size, contents: () => slices(fs, entry) }
}

/** A file's contents a slice at a time through a FileHandle, so a big file is never whole in memory here. */
async function* slices(fs: FsLike, entry: Entry): AsyncGenerator<Uint8Array> {
  // The promise forms load contents an asynchronous lower source has not loaded yet.
  if (entry.size <= SLICE) {
    yield (await fs.promises.readFile(entry.path)) as Uint8Array
    return
  }
  const handle = await fs.promises.open(entry.path, 'r')
  try {
    for (let position = 0; ; ) {
      const { bytesRead, buffer } = await handle.read(new Uint8Array(SLICE), 0, SLICE, position)
      if (bytesRead === 0) return
      position += bytesRead
      yield bytesRead === SLICE ? buffer : buffer.subarray(0, bytesRead)
    }
  } finally {
    await handle.close()
  }
}
