/**
 * A durable Store in a directory:
 *   format             the layout's name and version (2: packs)
 *   packs/<n>.pack     blobs and journal appended to segments, one fdatasync per group commit (pack.ts)
 *   packs/<n>.idx      a segment's records, so open need not read it (pack-index.ts; rebuilt when missing)
 *   packs/state        what open found, saved by a clean close after appends (pack-state.ts; ignored unless it matches)
 *   meta/<hex>.json    one file per key, replaced atomically
 *   lock               the writer's pid: one writer at a time, readers may open read-only
 *   journal.<label>-<time>, blob.<label>-<time>.<hex>, meta.<label>-<time>.<hex>.json,
 *   pack.torn-<time>.<segment>-<offset>
 *                      what was set aside (a torn or damaged journal, a damaged blob or metadata, the
 *                      torn tail of a segment); never read or deleted by rewindfs, only by the user
 * A store in the first layout (a `journal` file, one file per blob) is migrated when opened for
 * writing and read as it is when opened read-only (pack-migrate.ts).
 */
import { hostFs as fs } from './host-fs.js'
import * as z from 'zod/mini'
import { type BlobId, type BlobTotals, type DurabilityEngine, FsError, type JournalRead, type JsonValue, durableJournal, keptName, type ScrubFinding, type Store, type StoreItem } from 'rewindfs/adapter-kit'
import { LockFile } from 'rewindfs/adapter-kit/node'
import { checkPath, codeOf } from './confine.js'
import { isTempName, removeIfPresent, syncDirectory, writeAtomically } from './files.js'
import { DEFAULT_SEGMENT_BYTES, PackLog, type PackStats, formatError } from './pack.js'
import { FirstLayout, isFirstLayout, migrate, removeFirstLayout } from './pack-migrate.js'
import { DEFAULT_BLOCKING_SYNC_MS } from './pack-sync.js'
import { DEFAULT_FROM_CHARS, SnapshotWorker } from './snapshots.js'
import { SEGMENT_HEADER_BYTES, readSegmentHeader } from './pack-format.js'

export interface DirectoryStoreOptions {
  /** Open without taking the lock; every mutating method then rejects with EROFS. */
  readonly readOnly?: boolean
  /** Pack segment size: a segment is sealed and the next one started past this many bytes (default 64 MiB). */
  readonly segmentBytes?: number
  /**
   * A group commit's fdatasync is waited for on the calling thread while the disk answers within
   * this many milliseconds (default 2; what SQLite does, without two thread hand-offs per commit);
   * one that took longer sends the next ones to libuv's thread pool for a while, as do commits of
   * more than a MiB. 0: always in the pool, never blocking the event loop.
   */
  readonly blockingSyncMs?: number
  /**
   * Compactions whose snapshot and journal since reach `fromChars` characters (default 1 Mi) are
   * encoded on a worker thread from the store itself (snapshots.ts), the workspace committing
   * meanwhile; smaller ones in slices on the calling thread. false: always on the calling thread.
   */
  readonly compactionWorker?: false | { readonly fromChars?: number }
}

const jsonSchema: z.ZodMiniType<JsonValue> = z.union([
  z.null(),
  z.boolean(),
  z.number(),
  z.string(),
  z.array(z.lazy(() => jsonSchema)),
  z.record(z.string(), z.lazy(() => jsonSchema)),
])

/** The layout this rewindfs writes; `format` names it. Layout 1 (no format file) is migrated. */
const LAYOUT = 2
const FORMAT_FILE = 'format'
const formatSchema = z.object({ store: z.literal('rewindfs-directory'), layout: z.number(), salt: z.optional(z.number()) })

/** What the format file says: the layout, and the salt of its pack record headers. */
interface Format {
  readonly layout: number
  readonly salt: number
  /** The format file was damaged and its content taken from the packs' segment headers (formatOf): why. */
  readonly mended?: string
}

/** A UTF-16 code unit no well-formed string has on its own (what a round trip through UTF-8 would change). */
const LONE_SURROGATE = /\p{Surrogate}/u

function hex(text: string): string {
  return Buffer.from(text, 'utf8').toString('hex')
}

function storeError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(`rewindfs: ${message}`), { code })
}

/**
 * The layout the directory holds: 2 (the format file says so, with the salt of its packs), 1 (the
 * first layout's files and no format file; a pack beside them is a migration a crash cut short), 0
 * (nothing yet). Anything else — a format file that does not read, a pack without one — is
 * refused, and nothing is changed.
 */
function formatOf(root: string): Format {
  let text: string
  try {
    text = fs.readFileSync(`${root}/${FORMAT_FILE}`, 'utf8')
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
    if (isFirstLayout(root)) return { layout: 1, salt: newSalt() }
    const packs = fs.existsSync(`${root}/packs`) && fs.readdirSync(`${root}/packs`).some((name) => name.endsWith('.pack'))
    if (!packs) return { layout: 0, salt: newSalt() }
    const salts = new Set(segmentSalts(root))
    if (salts.size !== 1) throw formatError(`the store '${root}' holds pack segments but no '${FORMAT_FILE}' file; nothing was changed`)
    const [salt] = salts
    return { layout: LAYOUT, salt, mended: `the store's '${FORMAT_FILE}' file was missing (every pack segment's checksummed header names salt ${salt}): it is read as the headers say` }
  }
  let parsed: ReturnType<typeof formatSchema.safeParse> | undefined
  try {
    parsed = formatSchema.safeParse(JSON.parse(text))
  } catch {
    parsed = undefined
  }
  const data = parsed?.success ? parsed.data : undefined
  if (data && Number.isSafeInteger(data.layout) && data.layout > LAYOUT) throw formatError(`the store '${root}' has layout ${data.layout}; this rewindfs reads layouts up to ${LAYOUT}. Open it with a matching rewindfs version.`)
  const valid = data && data.layout === LAYOUT && data.salt !== undefined && Number.isInteger(data.salt) && data.salt >= 0 && data.salt < 2 ** 32
  // The format file is the one small file of a store with no checksum of its own; its salt is also
  // in every segment's header, which has one. A flipped bit in it would make every record fail its
  // check (a store read as empty, and a repair keeping nothing): what the headers agree on wins.
  const salts = new Set(segmentSalts(root))
  const [headers] = salts
  if (valid && (salts.size === 0 || salts.has(data.salt!))) return { layout: LAYOUT, salt: data.salt! }
  if (salts.size === 1) {
    const said = valid ? `salt ${data.salt}` : 'no readable layout'
    return { layout: LAYOUT, salt: headers, mended: `the store's '${FORMAT_FILE}' file was damaged (it named ${said}; every pack segment's checksummed header names salt ${headers}): it is read as the headers say` }
  }
  if (!valid) throw formatError(`'${root}/${FORMAT_FILE}' does not name a directory store layout (damaged?); nothing was changed`)
  throw formatError(`'${root}/${FORMAT_FILE}' names salt ${data.salt}, which no pack segment's header names (they name ${[...salts].join(', ')}): damaged or mixed with another store's packs; nothing was changed`)
}

/** The salts the pack segments' headers name (a header that fails its checksum names none). */
function segmentSalts(root: string): number[] {
  let names: string[]
  try {
    names = fs.readdirSync(`${root}/packs`).filter((name) => name.endsWith('.pack'))
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return []
    throw error
  }
  const salts: number[] = []
  for (const name of names) {
    let fd: number
    try {
      fd = fs.openSync(`${root}/packs/${name}`, 'r')
    } catch (error) {
      // Collected by a writer since it was listed (a reader beside it): the other segments name the salt.
      if (codeOf(error) === 'ENOENT') continue
      throw error
    }
    try {
      const bytes = new Uint8Array(SEGMENT_HEADER_BYTES)
      const header = fs.readSync(fd, bytes, 0, bytes.length, 0) === bytes.length ? readSegmentHeader(bytes) : undefined
      if (header) salts.push(header.salt)
    } finally {
      fs.closeSync(fd)
    }
  }
  return salts
}

function newSalt(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]
}

export class DirectoryStore implements Store {
  readonly kind = 'directory'
  /** The durable journal, given the worker its large compactions are encoded on (none read-only). */
  readonly durability: DurabilityEngine
  private readonly snapshots: SnapshotWorker | undefined
  readonly readOnly: boolean
  /** What open found wrong and mended with nothing lost (Store.notices). */
  readonly notices: readonly string[]
  /** The real path of the store's directory. */
  readonly root: string
  private readonly lock: LockFile | undefined
  /** Blobs and journal: the pack, or a first-layout store opened read-only. */
  private readonly packs: PackLog | undefined
  private readonly firstLayout: FirstLayout | undefined
  private closed = false
  /** Mutations in order: a group commit never overtakes a compaction or another commit; collection steps run between them. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(path: string, options: DirectoryStoreOptions = {}) {
    checkPath(path)
    if (typeof options !== 'object' || options === null) throw new TypeError('rewindfs: directoryStore options must be an object')
    const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES
    if (!Number.isSafeInteger(segmentBytes) || segmentBytes < 1) throw new TypeError(`rewindfs: directoryStore segmentBytes must be a positive integer, got ${String(options.segmentBytes)}`)
    const blockingSyncMs = options.blockingSyncMs ?? DEFAULT_BLOCKING_SYNC_MS
    if (typeof blockingSyncMs !== 'number' || !Number.isFinite(blockingSyncMs) || blockingSyncMs < 0) throw new TypeError(`rewindfs: directoryStore blockingSyncMs must be a finite number of milliseconds, 0 or more, got ${String(options.blockingSyncMs)}`)
    const readOnly = options.readOnly === true
    const worker = options.compactionWorker
    if (worker !== undefined && worker !== false && (typeof worker !== 'object' || worker === null)) throw new TypeError(`rewindfs: directoryStore compactionWorker must be false or { fromChars }, got ${String(worker)}`)
    const fromChars = worker ? (worker.fromChars ?? DEFAULT_FROM_CHARS) : DEFAULT_FROM_CHARS
    if (typeof fromChars !== 'number' || !(fromChars >= 0)) throw new TypeError(`rewindfs: directoryStore compactionWorker.fromChars must be a number of characters, 0 or more, got ${String(fromChars)}`)
    // A file in the way is named as such (mkdir alone says EEXIST, which reads as "already made").
    if (fs.statSync(path, { throwIfNoEntry: false })?.isDirectory() === false) throw new FsError('ENOTDIR', 'open', path, undefined, 'the store path is not a directory')
    if (!readOnly) fs.mkdirSync(path, { recursive: true })
    this.root = fs.realpathSync.native(path)
    const snapshots = readOnly || worker === false ? undefined : new SnapshotWorker(this.root, fromChars)
    this.snapshots = snapshots
    this.durability = snapshots === undefined ? durableJournal : { open: (host, store, options) => durableJournal.open(host, store, { ...options, snapshots }), repair: durableJournal.repair }
    const packOptions = (salt: number) => ({
      readOnly,
      salt,
      segmentBytes,
      blockingSyncMs,
      keep: (kind: 'pack' | 'blob', label: string, what: string, bytes: Uint8Array) => this.keep(kind, label, what, bytes),
      background: (step: () => Promise<void>) => {
        this.queue = this.queue.then(step)
      },
    })
    if (readOnly) {
      const format = formatOf(this.root)
      this.firstLayout = format.layout === 1 ? new FirstLayout(this.root) : undefined
      this.packs = format.layout === 1 ? undefined : new PackLog(this.root, packOptions(format.salt))
      this.readOnly = true
      this.notices = format.mended ? [`${format.mended}; opened read-only, the file was left as it is (a writer rewrites it)`] : []
      return
    }
    const taken = LockFile.tryAcquire(this.file('lock'), { fs, predecessors: true })
    if ('owner' in taken) {
      const owner = taken.owner.pid === process.pid ? 'this process' : `process ${taken.owner.pid}`
      throw new FsError('EBUSY', 'open', this.file('lock'), undefined, `the store '${this.root}' is locked by ${owner} (lock file)`)
    }
    const lock = taken.lock
    let notices: string[] = []
    try {
      const format = formatOf(this.root)
      fs.mkdirSync(this.file('meta'), { recursive: true })
      if (format.layout !== LAYOUT) {
        // Layout 1, or a new store. A pack without a format file is a migration a crash cut short: made again.
        fs.rmSync(this.file('packs'), { recursive: true, force: true })
        fs.mkdirSync(this.file('packs'))
        syncDirectory(this.root)
      }
      this.packs = new PackLog(this.root, packOptions(format.salt))
      const commit = () => writeAtomically(this.file(FORMAT_FILE), JSON.stringify({ store: 'rewindfs-directory', layout: LAYOUT, salt: format.salt }) + '\n')
      if (format.layout === 1) migrate(this.root, this.packs, commit)
      else if (format.layout === 0) commit()
      else if (isFirstLayout(this.root)) removeFirstLayout(this.root)
      if (format.mended) {
        // The damaged file is kept aside as it was (never cut away), then written again.
        const damaged = fs.existsSync(this.file(FORMAT_FILE)) ? this.keep('format', 'damaged', undefined, fs.readFileSync(this.file(FORMAT_FILE))) : undefined
        commit()
        notices = [`${format.mended}; the file was written again from them${damaged ? `, the damaged one kept aside as '${damaged}'` : ''}`]
      }
    } catch (error) {
      lock.release()
      throw error
    }
    this.firstLayout = undefined
    this.readOnly = false
    this.notices = notices
    this.lock = lock
  }

  private file(name: string): string {
    return `${this.root}/${name}`
  }

  private metaFile(key: string): string {
    return `${this.root}/meta/${hex(key)}.json`
  }

  /** Writes bytes kept aside under a new name (temp, fsync, rename, directory fsync); returns the name. */
  private keep(kind: 'journal' | 'blob' | 'pack' | 'format', label: string, what: string | undefined, bytes: Uint8Array | string): string {
    const taken = (name: string) => fs.existsSync(this.file(name))
    // keptName's stamp and numbering, under the pack's or the format file's own prefix.
    const own = kind === 'pack' || kind === 'format'
    const name = own ? keptName('journal', label, what, (n) => taken(n.replace(/^journal\./, `${kind}.`))).replace(/^journal\./, `${kind}.`) : keptName(kind, label, what, taken)
    writeAtomically(this.file(name), bytes)
    return name
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
    return this.write('appendJournal', () => this.packs!.appendJournal(journalLines(records)))
  }

  readJournal(): Promise<JournalRead> {
    return this.read('readJournal', async () => {
      // A reader looks at the pack again: the writer may have committed since.
      if (this.readOnly) this.packs?.refresh()
      const text = this.packs ? await this.packs.journalText() : await this.firstLayout!.journalText()
      if (text === '') return { records: [] }
      const records = text.split('\n')
      // A whole journal ends with a line end; what follows the last one is an append a crash cut short.
      const torn = records.pop()!
      return torn === '' ? { records } : { records, torn }
    })
  }

  /**
   * The workspace's retry after a failed write (engine/reconnect.ts). A write that fails (a full
   * disk: ENOSPC) is cut back with nothing half-written, so once there is room the same commit can
   * go again, as SQLite takes the next transaction after SQLITE_FULL: resolves with how many records
   * the journal holds (the failed commit's are not among them). After a failed fdatasync it rejects
   * with EIO, for good: what the kernel failed to write may be gone from its cache too, so nothing
   * more is acknowledged until the store is reopened and read from the disk (PostgreSQL stops for
   * the same reason).
   */
  reconnect(): Promise<{ readonly records: number }> {
    // EBADF once closed, as the Store contract says: the workspace's retries end there (another code is retried).
    if (this.closed) return Promise.reject(new FsError('EBADF', 'reconnect', this.root, undefined, 'the directory store is closed'))
    return this.write('reconnect', async () => {
      const packs = this.packs!
      packs.check()
      const text = await packs.journalText()
      return { records: text === '' ? 0 : text.split('\n').length - 1 }
    })
  }

  replaceJournal(records: readonly string[]): Promise<void> {
    return this.replaceJournalPieces(records.map((record) => [record]))
  }

  /** The pack encodes text a slice at a time as it writes: a record in pieces is never joined. */
  replaceJournalPieces(records: readonly (readonly string[])[]): Promise<void> {
    return this.write('replaceJournal', () => this.packs!.replaceJournal(lines(records)))
  }

  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    return this.write('putBlobs', () => {
      for (const [id, bytes] of blobs) {
        if (typeof id !== 'string' || id === '') throw new TypeError(`rewindfs: a blob id must be a non-empty string, got ${JSON.stringify(id)}`)
        if (LONE_SURROGATE.test(id)) throw new TypeError(`rewindfs: a blob id must be well-formed Unicode, got ${JSON.stringify(id)}`)
        if (!(bytes instanceof Uint8Array)) throw new TypeError(`rewindfs: blob '${id}' must be a Uint8Array`)
      }
      this.packs!.putBlobs(blobs)
    })
  }

  getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.read('getBlob', () => (this.packs ? this.packs.read(id) : this.firstLayout!.read(id)))
  }

  /** One positional read of the pack: the engine reads contents on demand through it. */
  readBlobSync(id: BlobId): Uint8Array | undefined {
    if (this.closed) throw storeError('ERR_REWINDFS_STORE_CLOSED', `the directory store '${this.root}' is closed (readBlobSync)`)
    return this.packs ? this.packs.readSync(id) : this.firstLayout!.readSync(id)
  }

  blobSizes(): Promise<[BlobId, number][]> {
    return this.read('blobSizes', async () => (this.packs ? this.packs.sizes() : this.firstLayout!.sizes()))
  }

  /** From the pack's index in memory, answered after close too (what the store held); a first-layout store read as it is stats its blob file. */
  blobSize(id: BlobId): number | undefined {
    return this.packs ? this.packs.sizeOf(id) : this.firstLayout!.sizeOf(id)
  }

  blobTotals(): BlobTotals {
    return this.packs ? this.packs.totals() : this.firstLayout!.totals()
  }

  /** Every pack segment read record by record, dead records too (pack-scrub.ts); a layout-1 store read as it is has no records to scrub. */
  scrub(): Promise<ScrubFinding[]> {
    return this.read('scrub', async () => (this.packs ? this.packs.scrub() : []))
  }

  deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('deleteBlobs', () => this.packs!.forget(ids))
  }

  /** Forgets the blobs and overwrites their pack records with zeros (a purge). */
  eraseBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('eraseBlobs', () => this.packs!.erase(ids))
  }

  blobIds(): Promise<BlobId[]> {
    return this.read('blobIds', async () => (this.packs ? this.packs.ids() : this.firstLayout!.ids()))
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
    return this.write('putMeta', async () => {
      const text = JSON.stringify(value)
      if (text === undefined) throw new TypeError(`rewindfs: metadata '${key}' must be a JSON value`)
      // Metadata may name blobs put just before (the flush state): the pack is durable first.
      await this.packs!.sync()
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
      const packs = this.packs!
      if ('journal' in item) {
        // A copy of the journal as text, a torn tail's included (the caller replaces the journal next).
        const name = this.keep('journal', label, undefined, await packs.journalText())
        packs.journalKeptAside()
        return name
      }
      if ('blob' in item) {
        const kept = await packs.setAside(item.blob, label, hex(item.blob))
        if (kept === undefined) throw storeError('ENOENT', `no blob '${item.blob}' to set aside`)
        return kept
      }
      const name = keptName('meta', label, `${hex(item.meta)}.json`, (taken) => fs.existsSync(this.file(taken)))
      try {
        fs.renameSync(this.metaFile(item.meta), this.file(name))
      } catch (error) {
        if (codeOf(error) === 'ENOENT') throw storeError('ENOENT', `no metadata '${item.meta}' to set aside`)
        throw error
      }
      syncDirectory(this.file('meta'))
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

  /** Resolves once the background work earlier calls started (garbage collection of pack segments) is done. */
  async idle(): Promise<void> {
    while (this.packs?.stats.collecting) await this.queue
    await this.queue
  }

  /** What the pack holds, for tests and the bench. */
  get packStats(): PackStats | undefined {
    return this.packs?.stats
  }

  /** Waits for writes in flight (a collection step finishes, no new one starts), closes the pack and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.snapshots?.close()
    this.packs?.stop()
    try {
      await this.queue
      await this.packs?.close()
    } finally {
      // Released even when the pack's close failed: the store is closed either way, and a lock kept would refuse every later open in this process (EBUSY).
      this.lock?.release()
    }
  }
}

/** A name setAside made (and nothing else in the store's directory). */
function isKeptName(name: string): boolean {
  return /^(journal|blob|meta|pack|format)\.[a-z][a-z0-9-]*-\d{8}T\d{9}Z(-\d+)?(\.([0-9a-f]+(\.json)?|\d{8,}-\d+))?$/.test(name) && !isTempName(name)
}

/** The records, each checked to be one line. */
function journalLines(records: readonly string[]): readonly string[] {
  for (const record of records) {
    if (typeof record !== 'string') throw new TypeError(`rewindfs: a journal record must be a string, got ${typeof record}`)
    if (record.includes('\n')) throw new TypeError('rewindfs: a journal record must be a single line')
  }
  return records
}

/** The journal's text as pieces (each record's, then a line end), each record checked to be one line: the pack encodes them a slice at a time. */
function lines(records: readonly (readonly string[])[]): string[] {
  const text: string[] = []
  for (const pieces of records) {
    if (!Array.isArray(pieces)) throw new TypeError(`rewindfs: a journal record's pieces must be an array, got ${typeof pieces}`)
    for (const piece of journalLines(pieces)) text.push(piece)
    text.push('\n')
  }
  return text
}

/**
 * A durable store in the directory at `path` (made if missing). One writer at a time: a second
 * opener gets EBUSY, unless it asks for `{ readOnly: true }`. A lock left by a dead process is
 * taken over. A store in the first layout (one file per blob) is migrated to packs when opened
 * for writing.
 */
export function directoryStore(path: string, options?: DirectoryStoreOptions): DirectoryStore {
  return new DirectoryStore(path, options)
}
