/**
 * The durable store contract, Promise-based so disk and IndexedDB can implement it, and the
 * in-memory store. The journal is a sequence of text records (framed and checksummed by
 * persistence.ts); a group commit is one `appendJournal`. A crash may leave a torn last record,
 * never a torn middle: stores must append in order.
 */
import type { BlobId } from '../blob/store.js'
import type { JsonValue } from './state.js'

export interface Store {
  readonly kind: string
  /** Opened for reading only (another process or tab holds the writer's lock): the workspace freezes. */
  readonly readOnly?: boolean
  /** Appends records in order; resolves once they are durable (the acknowledgement of a group commit). */
  appendJournal(records: readonly string[]): Promise<void>
  /** Every record appended so far, in order; the last one may be torn after a crash. */
  readJournal(): Promise<string[]>
  /** Atomically replaces the whole journal (compaction). */
  replaceJournal(records: readonly string[]): Promise<void>
  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void>
  getBlob(id: BlobId): Promise<Uint8Array | undefined>
  deleteBlobs(ids: readonly BlobId[]): Promise<void>
  blobIds(): Promise<BlobId[]>
  getMeta(key: string): Promise<JsonValue | undefined>
  putMeta(key: string, value: JsonValue): Promise<void>
  deleteMeta(key: string): Promise<void>
  close?(): Promise<void>
}

/** A store's whole content, for crash tests: what a process would find on disk after dying. */
export interface StoreImage {
  journal: string
  blobs: [BlobId, Uint8Array][]
  meta: [string, JsonValue][]
}

const SEPARATOR = '\n'

/**
 * The in-memory Store: the journal is one string, as a file would be, so tests can cut it at any
 * byte to simulate a crash mid-append.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  private journal = ''
  private readonly blobs = new Map<BlobId, Uint8Array>()
  private readonly meta = new Map<string, JsonValue>()
  /** Appends acknowledged so far (tests crash "after append k"). */
  appends = 0

  static from(image: StoreImage): MemoryStore {
    const store = new MemoryStore()
    store.journal = image.journal
    for (const [id, bytes] of image.blobs) store.blobs.set(id, bytes.slice())
    for (const [key, value] of image.meta) store.meta.set(key, structuredClone(value))
    return store
  }

  /** A copy of everything, optionally with the journal cut to its first `journalBytes` characters. */
  image(journalBytes?: number): StoreImage {
    return {
      journal: journalBytes === undefined ? this.journal : this.journal.slice(0, journalBytes),
      blobs: [...this.blobs].map(([id, bytes]) => [id, bytes.slice()]),
      meta: [...this.meta].map(([key, value]) => [key, structuredClone(value)]),
    }
  }

  get journalLength(): number {
    return this.journal.length
  }

  async appendJournal(records: readonly string[]): Promise<void> {
    for (const record of records) {
      if (record.includes(SEPARATOR)) throw new Error('rewindfs: a journal record must be a single line')
      this.journal += record + SEPARATOR
    }
    this.appends++
  }

  async readJournal(): Promise<string[]> {
    if (this.journal === '') return []
    const records = this.journal.split(SEPARATOR)
    // A complete journal ends with a separator; anything after the last one is a torn record.
    return records[records.length - 1] === '' ? records.slice(0, -1) : records
  }

  async replaceJournal(records: readonly string[]): Promise<void> {
    this.journal = records.map((r) => r + SEPARATOR).join('')
  }

  async putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    for (const [id, bytes] of blobs) this.blobs.set(id, bytes.slice())
  }

  async getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.blobs.get(id)?.slice()
  }

  async deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    for (const id of ids) this.blobs.delete(id)
  }

  async blobIds(): Promise<BlobId[]> {
    return [...this.blobs.keys()]
  }

  async getMeta(key: string): Promise<JsonValue | undefined> {
    const value = this.meta.get(key)
    return value === undefined ? undefined : structuredClone(value)
  }

  async putMeta(key: string, value: JsonValue): Promise<void> {
    this.meta.set(key, structuredClone(value))
  }

  async deleteMeta(key: string): Promise<void> {
    this.meta.delete(key)
  }
}
