/**
 * A durable Store in a directory:
 *   journal            records, one per line, appended and fsynced per group commit
 *   blobs/ab/<hex>     content-addressed files (the blob id's UTF-8 bytes in hex), temp+fsync+rename
 *   meta/<hex>.json    one file per key, replaced atomically
 *   lock               the writer's pid: one writer at a time, readers may open read-only
 *   journal.<label>-<time>, blob.<label>-<time>.<hex>, meta.<label>-<time>.<hex>.json
 *                      what was set aside (a torn or damaged journal, a damaged blob or metadata);
 *                      never read or deleted by rewindfs, only by the user
 */
import { hostFs as fs } from './host-fs.js'
import * as z from 'zod/mini'
import { type BlobId, FsError, type JournalRead, type JsonValue, keptName, type Store, type StoreItem } from 'rewindfs/adapter-kit'
import { checkPath, codeOf } from './confine.js'
import { inParallel, isTempName, removeIfPresent, syncDirectory, tempName, writeAtomically, writeDurably } from './files.js'
import { LockFile } from './lock.js'

export interface DirectoryStoreOptions {
  /** Open without taking the lock; every mutating method then rejects with EROFS. */
  readonly readOnly?: boolean
}

const jsonSchema: z.ZodMiniType<JsonValue> = z.union([
  z.null(),
  z.boolean(),
  z.number(),
  z.string(),
  z.array(z.lazy(() => jsonSchema)),
  z.record(z.string(), z.lazy(() => jsonSchema)),
])

const PARALLEL = 16

function hex(text: string): string {
  return Buffer.from(text, 'utf8').toString('hex')
}

function unhex(name: string): string | undefined {
  return /^(?:[0-9a-f]{2})+$/.test(name) ? Buffer.from(name, 'hex').toString('utf8') : undefined
}

function storeError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(`rewindfs: ${message}`), { code })
}

export class DirectoryStore implements Store {
  readonly kind = 'directory'
  readonly readOnly: boolean
  /** The real path of the store's directory. */
  readonly root: string
  private readonly lock: LockFile | undefined
  private journalFd: number | undefined
  private closed = false
  /** Journal writes in order: a group commit never overtakes a compaction or another commit. */
  private queue: Promise<unknown> = Promise.resolve()
  private readonly buckets = new Set<string>()

  constructor(path: string, options: DirectoryStoreOptions = {}) {
    checkPath(path)
    if (typeof options !== 'object' || options === null) throw new TypeError('rewindfs: directoryStore options must be an object')
    let readOnly = options.readOnly === true
    if (!readOnly) fs.mkdirSync(path, { recursive: true })
    this.root = fs.realpathSync.native(path)
    if (!fs.statSync(this.root).isDirectory()) throw new FsError('ENOTDIR', 'open', path, undefined, 'the store path is not a directory')
    let lock: LockFile | undefined
    if (!readOnly) {
      lock = LockFile.acquire(this.file('lock'), `the store '${this.root}'`)
      try {
        for (const folder of ['blobs', 'meta']) fs.mkdirSync(this.file(folder), { recursive: true })
        syncDirectory(this.root)
        this.journalFd = fs.openSync(this.file('journal'), 'a', 0o644)
      } catch (error) {
        lock.release()
        throw error
      }
    }
    this.readOnly = readOnly
    this.lock = lock
  }

  private file(name: string): string {
    return `${this.root}/${name}`
  }

  private blobFile(id: BlobId): string {
    const name = hex(id)
    return `${this.root}/blobs/${name.slice(0, 2)}/${name}`
  }

  private metaFile(key: string): string {
    return `${this.root}/meta/${hex(key)}.json`
  }

  /** Mutations: serialised, and refused when read-only or closed. */
  private write<T>(method: string, work: () => Promise<T> | T): Promise<T> {
    if (this.closed) return Promise.reject(storeError('ERR_REWINDFS_STORE_CLOSED', `the directory store '${this.root}' is closed (${method})`))
    if (this.readOnly) return Promise.reject(new FsError('EROFS', method, this.root, undefined, 'the store was opened read-only'))
    const run = this.queue.then(work)
    this.queue = run.catch(() => undefined)
    return run
  }

  private read<T>(method: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeError('ERR_REWINDFS_STORE_CLOSED', `the directory store '${this.root}' is closed (${method})`))
    return work()
  }

  appendJournal(records: readonly string[]): Promise<void> {
    return this.write('appendJournal', async () => {
      const text = lines(records)
      if (text === '') return
      const fd = this.journalFd!
      const size = fs.fstatSync(fd).size
      try {
        fs.writeFileSync(fd, text) // loops until every byte is written; the fsync is the slow part
      } catch (error) {
        // A part-written group (ENOSPC, EIO) is cut off, so a later append can never follow a torn line.
        fs.ftruncateSync(fd, size)
        throw error
      }
      await new Promise<void>((resolve, reject) => fs.fdatasync(this.journalFd!, (error) => (error ? reject(error) : resolve())))
    })
  }

  readJournal(): Promise<JournalRead> {
    return this.read('readJournal', async () => {
      let text: string
      try {
        text = await fs.promises.readFile(this.file('journal'), 'utf8')
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return { records: [] }
        throw error
      }
      if (text === '') return { records: [] }
      const records = text.split('\n')
      // A whole journal ends with a line end; what follows the last one is an append a crash cut short.
      const torn = records.pop()!
      return torn === '' ? { records } : { records, torn }
    })
  }

  replaceJournal(records: readonly string[]): Promise<void> {
    return this.write('replaceJournal', async () => {
      writeAtomically(this.file('journal'), lines(records))
      // The old descriptor points at the replaced file: appends go to the new one.
      fs.closeSync(this.journalFd!)
      this.journalFd = fs.openSync(this.file('journal'), 'a', 0o644)
    })
  }

  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    return this.write('putBlobs', async () => {
      const buckets = new Set<string>()
      await inParallel(blobs, PARALLEL, async ([id, bytes]) => {
        if (typeof id !== 'string' || id === '') throw new TypeError(`rewindfs: a blob id must be a non-empty string, got ${JSON.stringify(id)}`)
        if (!(bytes instanceof Uint8Array)) throw new TypeError(`rewindfs: blob '${id}' must be a Uint8Array`)
        const host = this.blobFile(id)
        const bucket = host.slice(0, host.lastIndexOf('/'))
        if (!this.buckets.has(bucket)) {
          await fs.promises.mkdir(bucket, { recursive: true })
          this.buckets.add(bucket)
        }
        // Content-addressed and only ever renamed into place whole: one that exists is this blob.
        if (fs.existsSync(host)) return
        await writeDurably(host, bytes)
        buckets.add(bucket)
      })
      for (const bucket of buckets) syncDirectory(bucket)
      if (buckets.size > 0) syncDirectory(this.file('blobs'))
    })
  }

  getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.read('getBlob', async () => {
      try {
        const data = await fs.promises.readFile(this.blobFile(id))
        return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return undefined
        throw error
      }
    })
  }

  deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('deleteBlobs', async () => {
      const buckets = new Set<string>()
      for (const id of ids) {
        const host = this.blobFile(id)
        removeIfPresent(host)
        buckets.add(host.slice(0, host.lastIndexOf('/')))
      }
      for (const bucket of buckets) if (fs.existsSync(bucket)) syncDirectory(bucket)
    })
  }

  blobIds(): Promise<BlobId[]> {
    return this.read('blobIds', async () => {
      const ids: BlobId[] = []
      const folder = this.file('blobs')
      let buckets: string[]
      try {
        buckets = await fs.promises.readdir(folder)
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return ids
        throw error
      }
      // Several buckets listed at once: one after another, each waits its turn in the thread pool.
      await inParallel(buckets, PARALLEL, async (bucket) => {
        for (const name of await fs.promises.readdir(`${folder}/${bucket}`)) {
          const id = isTempName(name) ? undefined : unhex(name)
          if (id !== undefined) ids.push(id)
        }
      })
      return ids
    })
  }

  getMeta(key: string): Promise<JsonValue | undefined> {
    return this.read('getMeta', async () => {
      let text: string
      try {
        text = await fs.promises.readFile(this.metaFile(key), 'utf8')
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return undefined
        throw error
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        throw storeError('ERR_REWINDFS_STORE_META', `metadata '${key}' in '${this.root}' is not JSON`)
      }
      const result = jsonSchema.safeParse(parsed)
      if (!result.success) throw storeError('ERR_REWINDFS_STORE_META', `metadata '${key}' in '${this.root}' is not a JSON value`)
      return result.data
    })
  }

  putMeta(key: string, value: JsonValue): Promise<void> {
    return this.write('putMeta', () => {
      const text = JSON.stringify(value)
      if (text === undefined) throw new TypeError(`rewindfs: metadata '${key}' must be a JSON value`)
      writeAtomically(this.metaFile(key), text)
    })
  }

  deleteMeta(key: string): Promise<void> {
    return this.write('deleteMeta', () => {
      removeIfPresent(this.metaFile(key))
      syncDirectory(this.file('meta'))
    })
  }

  setAside(item: StoreItem, label: string): Promise<string> {
    return this.write('setAside', async () => {
      const taken = (name: string) => fs.existsSync(this.file(name))
      let name: string
      if ('journal' in item) {
        // A copy, byte for byte (the caller replaces the journal next, atomically).
        name = keptName('journal', label, undefined, taken)
        const temp = tempName(this.file(name))
        try {
          fs.copyFileSync(this.file('journal'), temp)
        } catch (error) {
          if (codeOf(error) !== 'ENOENT') throw error
          fs.writeFileSync(temp, '')
        }
        const fd = fs.openSync(temp, 'r')
        try {
          fs.fsyncSync(fd)
        } finally {
          fs.closeSync(fd)
        }
        fs.renameSync(temp, this.file(name))
      } else if ('blob' in item) {
        name = keptName('blob', label, hex(item.blob), taken)
        moveOrFail(this.blobFile(item.blob), this.file(name), `no blob '${item.blob}' to set aside`)
        syncDirectory(this.blobFile(item.blob).slice(0, this.blobFile(item.blob).lastIndexOf('/')))
      } else {
        name = keptName('meta', label, `${hex(item.meta)}.json`, taken)
        moveOrFail(this.metaFile(item.meta), this.file(name), `no metadata '${item.meta}' to set aside`)
        syncDirectory(this.file('meta'))
      }
      syncDirectory(this.root)
      return name
    })
  }

  keptAside(): Promise<string[]> {
    return this.read('keptAside', async () => (await fs.promises.readdir(this.root)).filter(isKeptName).sort())
  }

  removeKept(names: readonly string[]): Promise<void> {
    return this.write('removeKept', () => {
      for (const name of names) if (isKeptName(name)) removeIfPresent(this.file(name))
      syncDirectory(this.root)
    })
  }

  /** Waits for writes in flight, closes the journal and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.queue
    if (this.journalFd !== undefined) fs.closeSync(this.journalFd)
    this.journalFd = undefined
    this.lock?.release()
  }
}

/** A name setAside made (and nothing else in the store's directory). */
function isKeptName(name: string): boolean {
  return /^(journal|blob|meta)\.[a-z][a-z0-9-]*-\d{8}T\d{9}Z(-\d+)?(\.[0-9a-f]+(\.json)?)?$/.test(name) && !isTempName(name)
}

function moveOrFail(from: string, to: string, missing: string): void {
  try {
    fs.renameSync(from, to)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') throw storeError('ENOENT', missing)
    throw error
  }
}

function lines(records: readonly string[]): string {
  let text = ''
  for (const record of records) {
    if (typeof record !== 'string') throw new TypeError(`rewindfs: a journal record must be a string, got ${typeof record}`)
    if (record.includes('\n')) throw new TypeError('rewindfs: a journal record must be a single line')
    text += record + '\n'
  }
  return text
}

/**
 * A durable store in the directory at `path` (made if missing). One writer at a time: a second
 * opener gets EBUSY, unless it asks for `{ readOnly: true }`. A lock left by a dead process is
 * taken over.
 */
export function directoryStore(path: string, options?: DirectoryStoreOptions): DirectoryStore {
  return new DirectoryStore(path, options)
}
