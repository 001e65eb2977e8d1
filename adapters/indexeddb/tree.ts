/**
 * A plain path-keyed tree in IndexedDB that is both a lower source and a flush target: `i:<path>`
 * holds a path's metadata ({ type, mode, mtimeMs, size, target?, version }) and `c:<path>` a file's
 * contents, apart so the index loads without the contents. Opening loads the index, and the contents
 * too when they total at most `preloadBytes`; above that they load on `prefetch` and a sync read of
 * one not loaded yet throws NotLoadedError. A flush is one transaction: all of it or none.
 */
import { getMany, promisifyRequest } from 'idb-keyval'
import * as z from 'zod/mini'
import { type FlushEntry, type FlushProgress, type FlushTarget, type IndexedEntry, IndexedSource, PRELOAD_BYTES, dirname, flushEngine } from 'rewindfs/adapter-kit'
import { Database, prefixRange, tight } from './database.js'
import { corruptError, indexedDbError } from './errors.js'

const INDEX = 'i:'
const CONTENT = 'c:'
/** The tree's generation, bumped by every flush: a written path's version is the generation that wrote it. */
const GENERATION = 'g:generation'
const ROOT_VERSION = 'root'

const indexRecord = z.object({
  type: z.enum(['file', 'dir', 'symlink']),
  mode: z.number(),
  mtimeMs: z.number(),
  size: z.number(),
  version: z.string(),
  target: z.optional(z.string()),
})
type IndexRecord = z.infer<typeof indexRecord>
const contentRecord = z.custom<Uint8Array>((value) => value instanceof Uint8Array)
const generationRecord = z.optional(z.number())

export interface IndexedDbTreeOptions {
  /** Load every file's contents on open when they total at most this many bytes (default PRELOAD_BYTES). */
  preloadBytes?: number
}

/** Keys strictly under `path` (a directory): '/a' covers '/a/…', never '/ab'. */
function subtree(prefix: string, path: string): IDBKeyRange {
  return prefixRange(prefix + (path === '/' ? '/' : `${path}/`))
}

function isAbsolute(path: string): boolean {
  return path.startsWith('/') && (path === '/' || !path.endsWith('/')) && !path.split('/').some((part) => part === '.' || part === '..')
}

export class IndexedDbTree extends IndexedSource implements FlushTarget {
  readonly flusher = flushEngine
  constructor(
    readonly name: string,
    private readonly database: Database,
    entries: Iterable<readonly [string, IndexedEntry]>,
  ) {
    super('indexeddb-tree', `indexeddb-tree:${name}`, entries, (paths) => this.loadContents(paths))
  }

  private async loadContents(paths: readonly string[]): Promise<Map<string, Uint8Array>> {
    const values = await this.database.run('read', () => getMany(paths.map((path) => CONTENT + path), this.database.use))
    const contents = new Map<string, Uint8Array>()
    paths.forEach((path, i) => {
      const parsed = contentRecord.safeParse(values[i])
      // Index and content are written in one transaction, so a file without its content is damage.
      if (!parsed.success) throw corruptError('read', path, 'the file has no content record in the IndexedDB tree')
      contents.set(path, parsed.data)
    })
    return contents
  }

  /** Versions as they are in the database now (another tab may have flushed since this one loaded). */
  async versions(paths: readonly string[]): Promise<(string | undefined)[]> {
    const records = await this.database.run('versions', () => getMany(paths.map((path) => INDEX + path), this.database.use))
    return records.map((record, i) => {
      if (record === undefined) return paths[i] === '/' ? ROOT_VERSION : undefined
      return parseIndexRecord(paths[i], record).version
    })
  }

  async apply(entries: readonly FlushEntry[], onProgress?: (progress: FlushProgress) => void): Promise<(string | undefined)[]> {
    this.check(entries)
    if (entries.length === 0) return []
    const now = Date.now()
    const written = await this.database.run('flush', () =>
      this.database.use('readwrite', async (store) => {
        const generation = generationRecord.safeParse(await promisifyRequest(store.get(GENERATION)))
        if (!generation.success) throw corruptError('flush', GENERATION, 'the generation is not a number')
        const version = `g${(generation.data ?? 0) + 1}`
        store.put((generation.data ?? 0) + 1, GENERATION)
        const records = entries.map((entry, i) => {
          const record = this.write(store, entry, version, now)
          onProgress?.({ done: i + 1, total: entries.length, path: entry.path })
          return record
        })
        await promisifyRequest(store.transaction)
        return records
      }),
    )
    // Committed: the in-memory index follows.
    entries.forEach((entry, i) => {
      const record = written[i]
      if (entry.kind !== 'dir') this.delete(entry.path)
      // A copy: the caller's bytes may be reused after the flush.
      if (record !== undefined) this.set(entry.path, { ...record, ...(entry.kind === 'file' ? { content: entry.content.slice() } : {}) })
    })
    return written.map((record) => record?.version)
  }

  /** Queues one entry's writes (no awaits: the transaction must stay active). */
  private write(store: IDBObjectStore, entry: FlushEntry, version: string, now: number): IndexRecord | undefined {
    // Anything but a directory takes the tree under its path (empty unless it replaces a directory).
    if (entry.kind !== 'dir') {
      store.delete(subtree(INDEX, entry.path))
      store.delete(subtree(CONTENT, entry.path))
    }
    if (entry.kind === 'delete') {
      store.delete(INDEX + entry.path)
      store.delete(CONTENT + entry.path)
      return undefined
    }
    const record: IndexRecord =
      entry.kind === 'file'
        ? { type: 'file', mode: entry.mode & 0o7777, mtimeMs: entry.mtimeMs, size: entry.content.byteLength, version }
        : entry.kind === 'dir'
          ? { type: 'dir', mode: entry.mode & 0o7777, mtimeMs: entry.mtimeMs, size: 4096, version }
          : { type: 'symlink', mode: 0o777, mtimeMs: now, size: new TextEncoder().encode(entry.target).byteLength, version, target: entry.target }
    store.put(record, INDEX + entry.path)
    if (entry.kind === 'file') store.put(tight(entry.content), CONTENT + entry.path)
    else store.delete(CONTENT + entry.path)
    return record
  }

  /**
   * Refuses a bad change set before anything is written: absolute paths, known kinds, and every
   * parent a directory once the entries before it are applied.
   */
  private check(entries: readonly FlushEntry[]): void {
    const planned = new Map<string, 'dir' | 'other' | 'gone'>()
    /** Paths whose old trees the plan removed: what the index holds under them is gone. */
    const wiped: string[] = []
    const typeOf = (path: string) => {
      const plan = planned.get(path)
      if (plan !== undefined) return plan
      if (wiped.some((top) => path.startsWith(top === '/' ? '/' : `${top}/`))) return 'gone'
      const type = this.stat(path)?.type
      return type === undefined ? 'gone' : type === 'dir' ? 'dir' : 'other'
    }
    for (const entry of entries) {
      const path: unknown = entry?.path
      if (typeof path !== 'string' || !isAbsolute(path)) {
        throw indexedDbError('EINVAL', 'flush', String(path), 'a flush entry needs an absolute, normalised path')
      }
      if (!['file', 'dir', 'symlink', 'delete'].includes(entry.kind)) {
        throw indexedDbError('EINVAL', 'flush', path, `unknown flush entry kind '${String(entry.kind)}'`)
      }
      if (path === '/' && entry.kind !== 'dir') throw indexedDbError('EINVAL', 'flush', path, 'the root can only be a directory')
      if (entry.kind === 'file' && !(entry.content instanceof Uint8Array)) {
        throw indexedDbError('EINVAL', 'flush', path, 'a file entry needs its content as a Uint8Array')
      }
      if (entry.kind === 'symlink' && typeof entry.target !== 'string') {
        throw indexedDbError('EINVAL', 'flush', path, 'a symlink entry needs its target as a string')
      }
      if (path !== '/' && entry.kind !== 'delete' && typeOf(dirname(path)) !== 'dir') {
        throw indexedDbError('ENOENT', 'flush', path, 'its parent is not a directory in the tree or earlier in the flush')
      }
      if (entry.kind === 'dir') {
        planned.set(path, 'dir')
        continue
      }
      for (const key of planned.keys()) if (key.startsWith(`${path}/`)) planned.delete(key)
      wiped.push(path)
      planned.set(path, entry.kind === 'delete' ? 'gone' : 'other')
    }
  }

  close(): void {
    this.database.close()
  }
}

function parseIndexRecord(path: string, value: unknown): IndexRecord {
  const parsed = indexRecord.safeParse(value)
  if (!parsed.success) throw corruptError('open', path, 'an index record is not { type, mode, mtimeMs, size, version }')
  return parsed.data
}

export async function indexedDbTree(name: string, options: IndexedDbTreeOptions = {}): Promise<IndexedDbTree> {
  if (typeof name !== 'string' || name === '') {
    throw Object.assign(new TypeError(`rewindfs: indexedDbTree needs a database name (a non-empty string); got ${String(name)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const preloadBytes = options.preloadBytes ?? PRELOAD_BYTES
  if (typeof preloadBytes !== 'number' || !(preloadBytes >= 0)) {
    throw Object.assign(new RangeError(`rewindfs: preloadBytes must be a number ≥ 0; got ${String(preloadBytes)}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  const database = new Database(name)
  const [keys, values] = await database.run('open', () =>
    database.use('readonly', (store) =>
      Promise.all([promisifyRequest(store.getAllKeys(prefixRange(INDEX))), promisifyRequest(store.getAll(prefixRange(INDEX)))]),
    ),
  )
  const entries = keys.map((key, i): [string, IndexedEntry] => {
    const path = String(key).slice(INDEX.length)
    return [path, parseIndexRecord(path, values[i])]
  })
  const total = entries.reduce((sum, [, entry]) => sum + (entry.type === 'file' ? entry.size : 0), 0)
  const tree = new IndexedDbTree(name, database, entries)
  if (total <= preloadBytes) await tree.prefetch(entries.filter(([, entry]) => entry.type === 'file').map(([path]) => path))
  return tree
}
