/**
 * The durable Store on the Origin Private File System, for the engine in a dedicated Web Worker
 * (sync access handles exist only there). The store's directory is `rewindfs/<name>/`:
 *   format             the layout and the salt of its pack record headers
 *   <n>.pack           blobs and journal as pack records, one write and one flush() per group commit (log.ts)
 *   meta/<hex>.json    one file per metadata key, replaced atomically
 *   kept/<name>        what was set aside (a torn or damaged journal, a damaged blob or metadata, a
 *                      segment's torn tail); never read or deleted by rewindfs, only by the user
 *
 * Tabs (the kit's TabRole): the first store of a name takes a Web Lock and writes; the others open
 * read-only, read without holding any file, hear over a BroadcastChannel when the writer committed
 * (they look at the log again on the next readJournal), and wait in the lock's queue: when the
 * writer's tab goes away, the next one takes the handles and writes.
 */
import { type BlobId, type BlobTotals, type JournalRead, type JsonValue, type Store, type StoreChange, type StoreItem, TabRole, durableJournal, keptName } from 'rewindfs/adapter-kit'
import { fileNames, isTempName, opfsError, readWhole, removeIfPresent, removeStoreDirectory, storeDirectory, subdirectory, translate, writeAtomically } from './files.js'
import { DEFAULT_SEGMENT_BYTES, type LogStats, SegmentLog } from './log.js'

export interface OpfsStoreOptions {
  /**
   * true: only read (no lock is taken; never promoted). false: must be the writer (EBUSY when
   * another tab is). Omitted: the writer when the lock is free, else read-only and next in line.
   */
  readonly readOnly?: boolean
  /** A pack segment takes no new group commit once it holds this many bytes (default 32 MiB). */
  readonly segmentBytes?: number
}

export interface OpfsStore extends Store {
  readonly kind: 'opfs'
  readonly name: string
  /** Resolves once the role is settled and the log is read; every method waits for it. */
  readonly ready: Promise<void>
  /** Whether this instance only reads: the option until `ready` resolves, then the role it has (a promotion makes it false). */
  readonly readOnly: boolean
  /**
   * Read-only instances: `listener` is told `{ kind: 'commit' }` each time the writer commits to the
   * journal or metadata, and `{ kind: 'writer' }` once this instance became the writer. Returns the unsubscribe.
   */
  onChange(listener: (change: StoreChange) => void): () => void
  /** What the log holds and its work counters (writes, flushes, bytes appended) since it was opened. */
  readonly stats: LogStats | undefined
  /**
   * The writer's synchronous blob read, through its sync access handles (a workspace then reads
   * history on demand); absent on a follower, which holds no handle, and until `ready`.
   */
  readonly readBlobSync?: (id: BlobId) => Uint8Array | undefined
  /** Beside readBlobSync: every blob's id and size, without reading contents. */
  readonly blobSizes?: () => Promise<[BlobId, number][]>
  /** Beside readBlobSync: one blob's size from the log's index (a workspace then lists nothing on open); answered after close too, from what the log held. */
  readonly blobSize?: (id: BlobId) => number | undefined
  /** Beside blobSize: how many blobs and bytes the log holds, and the damage it lists as blobs. */
  readonly blobTotals?: () => BlobTotals
  /**
   * The workspace's retry after a failed write (engine/reconnect.ts): a write that fails (a full
   * quota: ENOSPC) is cut back with nothing half-written, so once there is room the same group
   * commit goes again. Resolves with how many records the journal holds; EIO after a failed
   * flush() (for good: what the browser failed to write may be gone), EROFS on a follower.
   */
  reconnect(): Promise<{ readonly records: number }>
  close(): Promise<void>
}

const META = 'meta'
const KEPT = 'kept'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function hex(text: string): string {
  let out = ''
  for (const byte of encoder.encode(text)) out += byte.toString(16).padStart(2, '0')
  return out
}

function lines(records: readonly string[]): string {
  let text = ''
  for (const record of records) {
    if (typeof record !== 'string') throw Object.assign(new TypeError(`rewindfs: a journal record must be a string, got ${typeof record}`), { code: 'ERR_INVALID_ARG_TYPE' })
    if (record.includes('\n')) throw Object.assign(new TypeError('rewindfs: a journal record must be a single line'), { code: 'ERR_INVALID_ARG_VALUE' })
    text += record + '\n'
  }
  return text
}

/** The Web Lock the writer of a store holds. */
function lockName(name: string): string {
  return `rewindfs-opfs:${name}`
}

function metaError(key: string, name: string, problem: string): Error {
  return Object.assign(new Error(`rewindfs: metadata '${key}' in the OPFS store '${name}' ${problem}`), { code: 'ERR_REWINDFS_STORE_META' })
}

class OpfsJournalStore implements OpfsStore {
  readonly kind = 'opfs'
  readonly durability = durableJournal
  readonly ready: Promise<void>
  private role: TabRole | undefined
  private log: SegmentLog | undefined
  private readonly listeners = new Set<(change: StoreChange) => void>()
  /** Calls run one after another, so appends keep their order and reads see every earlier write. */
  private tail: Promise<unknown> = Promise.resolve()
  /** A follower heard a commit: it reads the log again before the next readJournal. */
  private stale = false
  readBlobSync?: (id: BlobId) => Uint8Array | undefined
  blobSizes?: () => Promise<[BlobId, number][]>
  blobSize?: (id: BlobId) => number | undefined
  blobTotals?: () => BlobTotals
  private closed = false

  constructor(
    readonly name: string,
    private readonly options: OpfsStoreOptions,
  ) {
    this.ready = this.start().catch(async (error: unknown) => {
      this.role?.close() // a store that failed to open must not keep other tabs from writing
      throw error
    })
    // Callers see the failure from `ready` or from the first call; this only avoids an unhandled rejection.
    this.ready.catch(() => undefined)
  }

  get readOnly(): boolean {
    return this.role ? !this.role.writer : this.options.readOnly === true
  }

  /** What open found wrong and mended with nothing lost (Store.notices): a damaged or missing format file. */
  get notices(): readonly string[] {
    return this.log?.notice ? [this.log.notice] : []
  }

  get stats(): LogStats | undefined {
    return this.log?.stats
  }

  private async start(): Promise<void> {
    this.role = await TabRole.open(lockName(this.name), {
      readOnly: this.options.readOnly,
      // Promoted: in turn with the calls queued so far, take the handles and read what the last writer left.
      promote: () => this.queue('open', async () => {
        await this.log!.becomeWriter()
        this.offerSyncReads()
      }),
      busy: () => opfsError('EBUSY', 'open', this.name, 'another tab holds the writer lock of this OPFS store; open it with readOnly: true to follow its commits'),
    })
    this.role.onChange((change) => {
      if (change.kind === 'commit') this.stale = true
      for (const listener of [...this.listeners]) listener(change)
    })
    this.log = await SegmentLog.open(
      { name: this.name, segmentBytes: this.options.segmentBytes ?? DEFAULT_SEGMENT_BYTES, keep: (kind, label, what, bytes) => this.keep(kind, label, what, bytes) },
      this.role.writer,
    ).catch((error: unknown) => {
      throw translate(error, 'open', this.name)
    })
    if (this.role.writer) this.offerSyncReads()
  }

  /** The writer holds a handle on every segment, so it reads blobs synchronously. */
  private offerSyncReads(): void {
    this.readBlobSync = (id) => {
      if (this.closed) throw opfsError('EBADF', 'readBlobSync', this.name, 'the OPFS store is closed')
      try {
        return this.log!.readBlobSync(id)
      } catch (error) {
        throw translate(error, 'readBlobSync', this.name)
      }
    }
    this.blobSizes = () => this.queue('blobSizes', async () => this.log!.sizes())
    this.blobSize = (id) => this.log!.sizeOf(id)
    this.blobTotals = () => this.log!.totals()
  }

  onChange(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Queues a call after every earlier one, once the store is open. */
  private queue<T>(operation: string, body: () => Promise<T>): Promise<T> {
    const result = this.tail.then(async () => {
      await this.ready
      if (this.closed) throw opfsError('EBADF', operation, this.name, 'the OPFS store is closed')
      try {
        return await body()
      } catch (error) {
        throw translate(error, operation, this.name)
      }
    })
    this.tail = result.catch(() => undefined)
    return result
  }

  /** A mutating call, refused on a read-only instance; `notify`: followers hear of it (journal and metadata commits). */
  private write<T>(operation: string, body: () => Promise<T>, notify = false): Promise<T> {
    return this.queue(operation, async () => {
      if (this.readOnly) throw opfsError('EROFS', operation, this.name, 'the OPFS store is open read-only (another tab holds the writer lock, or readOnly was asked for)')
      const result = await body()
      if (notify) this.role?.announce()
      return result
    })
  }

  /** The store's directory and its folders, found once (each lookup is a call into the browser). */
  private readonly folders = new Map<string, FileSystemDirectoryHandle>()

  private async folder(name: string, create: boolean): Promise<FileSystemDirectoryHandle | undefined> {
    const known = this.folders.get(name)
    if (known) return known
    let directory = this.folders.get('')
    if (!directory) {
      directory = await storeDirectory(this.name, create)
      if (!directory) return undefined
      this.folders.set('', directory)
    }
    const folder = await subdirectory(directory, name, create)
    if (folder) this.folders.set(name, folder)
    return folder
  }

  /** Writes bytes kept aside under a new name in kept/ (temp, flush, move); returns the name. */
  private async keep(kind: 'journal' | 'blob' | 'meta' | 'pack' | 'format', label: string, what: string | undefined, bytes: Uint8Array): Promise<string> {
    const kept = (await this.folder(KEPT, true))!
    const taken = new Set(await fileNames(kept))
    // keptName's stamp and numbering, under the pack's own prefix for a segment's torn tail (the format file's for a damaged one).
    const own = kind === 'pack' || kind === 'format'
    const name = own ? keptName('journal', label, what, (n) => taken.has(n.replace(/^journal\./, `${kind}.`))).replace(/^journal\./, `${kind}.`) : keptName(kind, label, what, (n) => taken.has(n))
    await writeAtomically(kept, name, bytes)
    return name
  }

  appendJournal(records: readonly string[]): Promise<void> {
    return this.write('appendJournal', () => this.log!.appendJournal(lines(records)), true)
  }

  readJournal(): Promise<JournalRead> {
    return this.queue('readJournal', async () => {
      const log = this.log!
      // A follower looks at the log again once the writer committed since it last did.
      if (this.readOnly && this.stale) {
        this.stale = false
        await log.scan()
      }
      const text = await log.journalText()
      if (text === '') return { records: [] }
      const records = text.split('\n')
      // A whole journal ends with a line end; what follows the last one is an append a crash cut short.
      const torn = records.pop()!
      return torn === '' ? { records } : { records, torn }
    })
  }

  reconnect(): Promise<{ readonly records: number }> {
    return this.write('reconnect', async () => {
      const log = this.log!
      await log.recover()
      const text = await log.journalText()
      return { records: text === '' ? 0 : text.split('\n').length - 1 }
    })
  }

  replaceJournal(records: readonly string[]): Promise<void> {
    return this.write('replaceJournal', () => this.log!.replaceJournal(lines(records)), true)
  }

  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    return this.write('putBlobs', async () => {
      for (const [id, bytes] of blobs) {
        if (typeof id !== 'string' || id === '') throw Object.assign(new TypeError(`rewindfs: a blob id must be a non-empty string, got ${JSON.stringify(id)}`), { code: 'ERR_INVALID_ARG_VALUE' })
        if (decoder.decode(encoder.encode(id)) !== id) throw Object.assign(new TypeError(`rewindfs: a blob id must be well-formed Unicode, got ${JSON.stringify(id)}`), { code: 'ERR_INVALID_ARG_VALUE' })
        if (!(bytes instanceof Uint8Array)) throw Object.assign(new TypeError(`rewindfs: blob '${id}' must be a Uint8Array`), { code: 'ERR_INVALID_ARG_TYPE' })
      }
      this.log!.putBlobs(blobs)
    })
  }

  getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.queue('getBlob', () => this.log!.readBlob(id))
  }

  deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('deleteBlobs', () => this.log!.forget(ids))
  }

  /** Forgets the blobs and overwrites their pack records with zeros (a purge). */
  eraseBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('eraseBlobs', () => this.log!.erase(ids))
  }

  blobIds(): Promise<BlobId[]> {
    return this.queue('blobIds', async () => this.log!.ids())
  }

  getMeta(key: string): Promise<JsonValue | undefined> {
    return this.queue('getMeta', async () => {
      const folder = await this.folder(META, false)
      const bytes = folder && (await readWhole(folder, `${hex(key)}.json`))
      if (bytes === undefined) return undefined
      try {
        return JSON.parse(decoder.decode(bytes)) as JsonValue
      } catch {
        throw metaError(key, this.name, 'is not JSON')
      }
    })
  }

  putMeta(key: string, value: JsonValue): Promise<void> {
    return this.write(
      'putMeta',
      async () => {
        const text = JSON.stringify(value)
        if (text === undefined) throw Object.assign(new TypeError(`rewindfs: metadata '${key}' must be a JSON value`), { code: 'ERR_INVALID_ARG_TYPE' })
        // Metadata may name blobs put just before (the flush state): they are durable first.
        await this.log!.sync()
        await writeAtomically((await this.folder(META, true))!, `${hex(key)}.json`, encoder.encode(text))
      },
      true,
    )
  }

  deleteMeta(key: string): Promise<void> {
    return this.write(
      'deleteMeta',
      async () => {
        const folder = await this.folder(META, false)
        if (folder) await removeIfPresent(folder, `${hex(key)}.json`)
      },
      true,
    )
  }

  setAside(item: StoreItem, label: string): Promise<string> {
    return this.write('setAside', async () => {
      const log = this.log!
      if ('journal' in item) {
        // A copy of the journal as text, a torn tail's included (the caller replaces the journal next).
        const name = await this.keep('journal', label, undefined, encoder.encode(await log.journalText()))
        log.journalKeptAside()
        return name
      }
      if ('blob' in item) {
        const kept = await log.setAside(item.blob, label, hex(item.blob))
        if (kept === undefined) throw opfsError('ENOENT', 'setAside', item.blob, `no blob '${item.blob}' to set aside`)
        return kept
      }
      const file = `${hex(item.meta)}.json`
      const folder = await this.folder(META, false)
      const bytes = folder && (await readWhole(folder, file))
      if (bytes === undefined) throw opfsError('ENOENT', 'setAside', item.meta, `no metadata '${item.meta}' to set aside`)
      const name = await this.keep('meta', label, file, bytes)
      await removeIfPresent(folder!, file)
      return name
    })
  }

  keptAside(): Promise<string[]> {
    return this.queue('keptAside', async () => {
      const folder = await this.folder(KEPT, false)
      return folder ? (await fileNames(folder)).filter((name) => !isTempName(name)).sort() : []
    })
  }

  removeKept(names: readonly string[]): Promise<void> {
    return this.write('removeKept', async () => {
      const folder = await this.folder(KEPT, false)
      if (!folder) return
      const kept = new Set(await fileNames(folder))
      for (const name of names) if (typeof name === 'string' && kept.has(name) && !isTempName(name)) await removeIfPresent(folder, name)
    })
  }

  /** Waits for queued calls, writes what is pending, then lets go of the handles, the writer lock and the channel. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.tail
    this.closed = true
    this.listeners.clear()
    this.readBlobSync = undefined
    this.blobSizes = undefined
    try {
      await this.log?.close()
    } finally {
      this.role?.close()
    }
  }
}

/**
 * A durable store in the origin private file system, under `name`. Runs in a dedicated Web Worker
 * (where sync access handles exist): the engine in rewindfs/worker with the store descriptor
 * `{ kind: 'opfs', name }`, or a worker of yours.
 */
export function opfsStore(name: string, options: OpfsStoreOptions = {}): OpfsStore {
  if (typeof name !== 'string' || name === '') {
    throw Object.assign(new TypeError(`rewindfs: opfsStore needs a store name (a non-empty string); got ${String(name)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  // The name becomes a directory's (encodeURIComponent): a lone surrogate has no UTF-8 to encode.
  if (/\p{Surrogate}/u.test(name)) throw Object.assign(new TypeError(`rewindfs: an opfsStore name must be well-formed Unicode; got ${JSON.stringify(name)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  if (typeof options !== 'object' || options === null) throw Object.assign(new TypeError('rewindfs: opfsStore options must be an object'), { code: 'ERR_INVALID_ARG_TYPE' })
  const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES
  if (!Number.isSafeInteger(segmentBytes) || segmentBytes < 1) {
    throw Object.assign(new RangeError(`rewindfs: opfsStore segmentBytes must be a positive integer, got ${String(options.segmentBytes)}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  return new OpfsJournalStore(name, options)
}

/**
 * Deletes the OPFS store `name` and everything it holds (an app's "start over"); false when there
 * was none. Refused with EBUSY while a store of that name is open for writing in any tab.
 */
export async function removeOpfsStore(name: string): Promise<boolean> {
  if (typeof name !== 'string' || name === '') {
    throw Object.assign(new TypeError(`rewindfs: removeOpfsStore needs a store name (a non-empty string); got ${String(name)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const locks = (globalThis as { navigator?: { locks?: { request<T>(name: string, options: { ifAvailable: boolean }, callback: (lock: unknown) => Promise<T>): Promise<T> } } }).navigator?.locks
  const remove = () => removeStoreDirectory(name)
  if (!locks) return remove()
  // Holding the writer's lock, so no tab starts writing it meanwhile.
  return locks.request(lockName(name), { ifAvailable: true }, async (lock) => {
    if (lock === null) throw opfsError('EBUSY', 'rm', name, 'a tab has this OPFS store open for writing; close it first')
    return remove()
  })
}
