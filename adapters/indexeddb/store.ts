/**
 * The durable Store in IndexedDB: one database, one object store, a key prefix
 * per record kind (`j:<seq>` journal records, `b:<blobId>` blobs, `m:<key>` metadata, `k:<name>`
 * what was set aside), so every call is one transaction and a group commit is one atomic `setMany`:
 * an append never tears, so every record that cannot be read is damage.
 *
 * Two tabs on one store (the kit's TabRole): the first takes a Web Lock held for the store's life
 * and writes; the others open read-only (every mutating call rejects with EROFS), hear over a
 * BroadcastChannel when the writer committed, and wait in the lock's queue: when the writer goes
 * away, the next one becomes the writer (`onChange` tells it `{ kind: 'writer' }`).
 */
import { del, delMany, get, promisifyRequest, set, setMany } from 'idb-keyval'
import * as z from 'zod/mini'
import { type BlobId, type JournalRead, type JsonValue, type Store, type StoreChange, type StoreItem, TabRole, durableJournal, keptName } from 'rewindfs/adapter-kit'
import { Database, prefixRange, prefixRangeFrom, tight } from './database.js'
import { corruptError, indexedDbError, readOnlyError } from './errors.js'

const JOURNAL = 'j:'
const BLOB = 'b:'
const META = 'm:'
const KEPT = 'k:'
/** Fixed width so string order is append order (16 digits hold any safe integer). */
const SEQ_DIGITS = 16

/**
 * Blobs a getBlob miss reads along with the one asked for, in key order. Opening a workspace reads
 * every blob in blobIds order, so this makes it one transaction per READ_AHEAD blobs instead of one
 * each (5000 files took 5.8 s to reopen in Chromium at one each).
 */
const READ_AHEAD = 64

const journalKey = (seq: number) => JOURNAL + String(seq).padStart(SEQ_DIGITS, '0')

const blobSchema = z.optional(z.custom<Uint8Array>((value) => value instanceof Uint8Array))
const metaSchema = z.optional(z.json())

export interface IndexedDbStoreOptions {
  /**
   * true: only read (no lock is taken; never promoted). false: must be the writer (EBUSY when
   * another tab is). Omitted: the writer when the lock is free, else read-only and next in line.
   */
  readOnly?: boolean
}

export interface IndexedDbStore extends Store {
  readonly kind: 'indexeddb'
  readonly name: string
  /** Resolves once the database is open and the role is settled; every method waits for it. */
  readonly ready: Promise<void>
  /** Whether this instance only reads: the option until `ready` resolves, then the role it has (a promotion makes it false). */
  readonly readOnly: boolean
  /**
   * Read-only instances: `listener` is told `{ kind: 'commit' }` each time the writer commits to the
   * journal or metadata, and `{ kind: 'writer' }` once this instance became the writer (the writer
   * went away). Returns the unsubscribe.
   */
  onChange(listener: (change: StoreChange) => void): () => void
  close(): Promise<void>
}

function checkBlob(id: BlobId, value: unknown): Uint8Array | undefined {
  const parsed = blobSchema.safeParse(value)
  if (!parsed.success) throw corruptError('getBlob', BLOB + id, 'a blob is not a Uint8Array')
  return parsed.data
}

class IndexedDbJournalStore implements IndexedDbStore {
  readonly kind = 'indexeddb'
  readonly durability = durableJournal
  readonly ready: Promise<void>
  private readonly database: Database
  private role: TabRole | undefined
  private readonly listeners = new Set<(change: StoreChange) => void>()
  private nextSeq = 1
  /** Calls run one after another, so appends keep their order and reads see every earlier write. */
  private tail: Promise<unknown> = Promise.resolve()
  /** Values read ahead by getBlob, unchecked until asked for; dropped on any blob change. */
  private readAhead = new Map<BlobId, unknown>()
  private closed = false

  constructor(readonly name: string, private readonly options: IndexedDbStoreOptions) {
    this.database = new Database(name)
    this.ready = this.start().catch((error: unknown) => {
      this.role?.close() // a store that failed to open must not keep other tabs from writing
      throw error
    })
    // Callers see the failure from `ready` or from the first call; this only avoids an unhandled rejection.
    this.ready.catch(() => undefined)
  }

  get readOnly(): boolean {
    return this.role ? !this.role.writer : this.options.readOnly === true
  }

  private async start(): Promise<void> {
    this.role = await TabRole.open(`rewindfs-store:${this.name}`, {
      readOnly: this.options.readOnly,
      // Promoted: in turn with the calls queued so far, read where the last writer's journal ends.
      promote: () => this.queue('open', () => this.readNextSeq(), false),
      busy: () => indexedDbError('EBUSY', 'open', this.name, 'another tab holds the writer lock of this IndexedDB store; open it with readOnly: true to follow its commits'),
    })
    this.role.onChange((change) => {
      this.readAhead.clear()
      for (const listener of [...this.listeners]) listener(change)
    })
    await this.database.open()
    if (this.role.writer) await this.database.run('open', () => this.readNextSeq())
  }

  private async readNextSeq(): Promise<void> {
    const last = await this.database.use('readonly', (store) => promisifyRequest(store.openKeyCursor(prefixRange(JOURNAL), 'prev')))
    this.nextSeq = last ? Number(String(last.key).slice(JOURNAL.length)) + 1 : 1
  }

  onChange(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Queues a call after every earlier one, once the role is known. */
  private queue<T>(operation: string, body: () => Promise<T>, afterReady = true): Promise<T> {
    const result = this.tail.then(async () => {
      if (afterReady) await this.ready
      if (this.closed) throw indexedDbError('EBADF', operation, this.name, 'the IndexedDB store is closed')
      return this.database.run(operation, body)
    })
    this.tail = result.catch(() => undefined)
    return result
  }

  /**
   * A mutating call, refused on a read-only instance. Readers hear of journal and metadata commits;
   * blob writes alone change nothing they can see (the journal append that uses them follows).
   */
  private write(operation: string, body: () => Promise<void>, notify = true): Promise<void> {
    return this.queue(operation, async () => {
      if (this.readOnly) throw readOnlyError(operation, this.name)
      await body()
      if (notify) this.role?.announce()
    })
  }

  appendJournal(records: readonly string[]): Promise<void> {
    return this.write('appendJournal', async () => {
      if (records.some((record) => typeof record !== 'string')) {
        throw Object.assign(new TypeError('rewindfs: journal records must be strings'), { code: 'ERR_INVALID_ARG_TYPE' })
      }
      if (records.length === 0) return
      const first = this.nextSeq
      await setMany(records.map((record, i) => [journalKey(first + i), record]), this.database.use)
      this.nextSeq = first + records.length
    })
  }

  readJournal(): Promise<JournalRead> {
    return this.queue('readJournal', async () => {
      const records: unknown[] = await this.database.use('readonly', (store) => promisifyRequest(store.getAll(prefixRange(JOURNAL))))
      // A value that is not a string is a damaged record: it stays one record (that no decoder
      // accepts), so the engine reports its position instead of failing the whole read.
      return { records: records.map((record) => (typeof record === 'string' ? record : `(not a string: ${typeof record})`)) }
    })
  }

  replaceJournal(records: readonly string[]): Promise<void> {
    return this.write('replaceJournal', async () => {
      // One transaction: readers of the database see the old journal or the new one, never a mix.
      await this.database.use('readwrite', (store) => {
        store.delete(prefixRange(JOURNAL))
        records.forEach((record, i) => store.put(record, journalKey(i + 1)))
        return promisifyRequest(store.transaction)
      })
      this.nextSeq = records.length + 1
    })
  }

  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    return this.write('putBlobs', async () => {
      this.readAhead.clear()
      if (blobs.length > 0) await setMany(blobs.map(([id, bytes]) => [BLOB + id, tight(bytes)]), this.database.use)
    }, false)
  }

  getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.queue('getBlob', async () => {
      if (this.readAhead.has(id)) {
        const value = this.readAhead.get(id)
        this.readAhead.delete(id)
        return checkBlob(id, value)
      }
      const from = prefixRangeFrom(BLOB, BLOB + id)
      const [keys, values] = await this.database.use('readonly', (store) =>
        Promise.all([promisifyRequest(store.getAllKeys(from, READ_AHEAD)), promisifyRequest(store.getAll(from, READ_AHEAD))]),
      )
      this.readAhead = new Map(keys.map((key, i) => [String(key).slice(BLOB.length), values[i]]))
      const value = this.readAhead.get(id)
      this.readAhead.delete(id)
      return checkBlob(id, value)
    })
  }

  deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('deleteBlobs', async () => {
      this.readAhead.clear()
      if (ids.length > 0) await delMany(ids.map((id) => BLOB + id), this.database.use)
    }, false)
  }

  blobIds(): Promise<BlobId[]> {
    return this.queue('blobIds', async () => {
      const keys = await this.database.use('readonly', (store) => promisifyRequest(store.getAllKeys(prefixRange(BLOB))))
      return keys.map((key) => String(key).slice(BLOB.length))
    })
  }

  getMeta(key: string): Promise<JsonValue | undefined> {
    return this.queue('getMeta', async () => {
      const parsed = metaSchema.safeParse(await get(META + key, this.database.use))
      if (!parsed.success) throw corruptError('getMeta', META + key, 'a metadata value is not JSON')
      return parsed.data as JsonValue | undefined
    })
  }

  putMeta(key: string, value: JsonValue): Promise<void> {
    return this.write('putMeta', () => set(META + key, value, this.database.use))
  }

  deleteMeta(key: string): Promise<void> {
    return this.write('deleteMeta', () => del(META + key, this.database.use))
  }

  setAside(item: StoreItem, label: string): Promise<string> {
    let name = ''
    return this.write('setAside', async () => {
      this.readAhead.clear()
      await this.database.use('readwrite', async (store) => {
        const taken = new Set((await promisifyRequest(store.getAllKeys(prefixRange(KEPT)))).map((key) => String(key).slice(KEPT.length)))
        if ('journal' in item) {
          name = keptName('journal', label, undefined, (n) => taken.has(n))
          store.put(await promisifyRequest(store.getAll(prefixRange(JOURNAL))), KEPT + name)
        } else {
          const [kind, key, what] = 'blob' in item ? (['blob', BLOB + item.blob, item.blob] as const) : (['meta', META + item.meta, item.meta] as const)
          const value: unknown = await promisifyRequest(store.get(key))
          if (value === undefined) throw indexedDbError('ENOENT', 'setAside', this.name, `no ${kind === 'blob' ? 'blob' : 'metadata'} '${what}' to set aside`)
          name = keptName(kind, label, what, (n) => taken.has(n))
          store.put(value, KEPT + name)
          store.delete(key)
        }
        return promisifyRequest(store.transaction)
      })
    }, false).then(() => name)
  }

  keptAside(): Promise<string[]> {
    return this.queue('keptAside', async () => {
      const keys = await this.database.use('readonly', (store) => promisifyRequest(store.getAllKeys(prefixRange(KEPT))))
      return keys.map((key) => String(key).slice(KEPT.length)).sort()
    })
  }

  removeKept(names: readonly string[]): Promise<void> {
    return this.write('removeKept', async () => {
      if (names.length > 0) await delMany(names.map((name) => KEPT + name), this.database.use)
    }, false)
  }

  /** Waits for queued calls, then gives up the writer lock and the connection. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.tail
    this.closed = true
    this.listeners.clear()
    this.role?.close()
    this.database.close()
  }
}

export function indexedDbStore(name: string, options: IndexedDbStoreOptions = {}): IndexedDbStore {
  if (typeof name !== 'string' || name === '') {
    throw Object.assign(new TypeError(`rewindfs: indexedDbStore needs a database name (a non-empty string); got ${String(name)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  return new IndexedDbJournalStore(name, options)
}
