/**
 * A lower source over an index loaded up front, for places that can only be read asynchronously
 * (IndexedDB, a Docker volume). Stats, listings and symlinks answer synchronously from the index;
 * file contents are kept when the adapter loaded them (below its preload limit) and otherwise load on
 * `prefetch`, so the sync API works on everything loaded and says clearly what is not.
 */
import { dirname, basename } from '../path.js'
import type { EntryType, LowerSource, LowerStat } from './source.js'
import { NotLoadedError } from './source.js'

/** Contents an adapter preloads on open unless told otherwise: above this, files load on demand. */
export const PRELOAD_BYTES = 64 * 1024 * 1024

export interface IndexedEntry {
  readonly type: EntryType
  readonly mode: number
  readonly size: number
  readonly mtimeMs: number
  readonly version: string
  /** Symlinks: the target. */
  readonly target?: string
  /** Files: the contents, when loaded. */
  content?: Uint8Array
}

export type ContentLoader = (paths: readonly string[]) => Promise<Map<string, Uint8Array>>

export class IndexedSource implements LowerSource {
  private readonly entries = new Map<string, IndexedEntry>()
  private readonly children = new Map<string, Set<string>>()

  constructor(
    readonly kind: string,
    readonly id: string,
    entries: Iterable<readonly [string, IndexedEntry]>,
    private readonly load: ContentLoader,
  ) {
    // A root even when the place is empty; the index's own '/' entry replaces it.
    this.set('/', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'root' })
    for (const [path, entry] of entries) this.set(path, entry)
  }

  stat(path: string): LowerStat | undefined {
    const entry = this.entries.get(path)
    if (!entry) return undefined
    return { type: entry.type, mode: entry.mode, size: entry.size, mtimeMs: entry.mtimeMs, version: entry.version }
  }

  readdir(path: string): string[] {
    return [...(this.children.get(path) ?? [])]
  }

  readFile(path: string): Uint8Array {
    const content = this.entries.get(path)?.content
    if (content === undefined) throw new NotLoadedError(path, this.kind)
    return content
  }

  readlink(path: string): string {
    return this.entries.get(path)?.target ?? ''
  }

  /** Whether the contents of `path` are in memory. */
  loaded(path: string): boolean {
    return this.entries.get(path)?.content !== undefined
  }

  async prefetch(paths: readonly string[]): Promise<void> {
    const missing = paths.filter((path) => this.entries.get(path)?.type === 'file' && !this.loaded(path))
    if (missing.length === 0) return
    for (const [path, content] of await this.load(missing)) {
      const entry = this.entries.get(path)
      if (entry) entry.content = content
    }
  }

  /** Puts or replaces one entry (parents must exist): adapters call it after a flush into the source. */
  set(path: string, entry: IndexedEntry): void {
    this.entries.set(path, entry)
    if (path !== '/') {
      const parent = dirname(path)
      let names = this.children.get(parent)
      if (!names) this.children.set(parent, (names = new Set()))
      names.add(basename(path))
    }
    if (entry.type === 'dir' && !this.children.has(path)) this.children.set(path, new Set())
  }

  /** Removes an entry and everything under it. */
  delete(path: string): void {
    const entry = this.entries.get(path)
    if (!entry) return
    if (entry.type === 'dir') for (const name of this.readdir(path)) this.delete(path === '/' ? `/${name}` : `${path}/${name}`)
    this.entries.delete(path)
    this.children.delete(path)
    this.children.get(dirname(path))?.delete(basename(path))
  }
}
