/**
 * The durable store contract, Promise-based so disk and IndexedDB can implement it, and the
 * in-memory store. The journal is a sequence of text records (framed, numbered and checksummed by
 * persistence.ts); a group commit is one `appendJournal`. A crash may leave a torn last record,
 * never a torn middle: stores must append in order. What is damaged is kept, never deleted: the
 * set-aside members give every store one place for it.
 */
import type { BlobId } from '../blob/store.js'
import type { JsonValue } from './state.js'

/** Store metadata naming the lower source the store was made over (a store refuses another one). */
export const LOWER_KEY = 'lower'

/** What `readJournal` returns. */
export interface JournalRead {
  /** Every whole record, in append order. */
  records: string[]
  /**
   * What follows the last whole record when an append was cut short (a crash in the middle of a
   * write), as text. Only a store whose appends can tear sets it (a file); a store whose appends
   * are atomic (IndexedDB transactions) never does. It is never acknowledged: the engine drops it,
   * after keeping the journal aside.
   */
  torn?: string
}

/** Something a store holds that can be set aside: its journal, one blob, one metadata entry. */
export type StoreItem = { readonly journal: true } | { readonly blob: BlobId } | { readonly meta: string }

/** What a store shared by several tabs or processes tells its listeners (`Store.onChange`). */
export type StoreChange = { readonly kind: 'commit' } | { readonly kind: 'writer' }

/**
 * The durable store. The engine never deletes what it cannot read: a torn tail, a damaged journal,
 * a blob that fails its checksum and unreadable metadata are set aside (`setAside`) or left in
 * place, and only the user removes them (`removeKept`). test/store-contract.ts (exported from
 * `rewindfs/testing`) checks an implementation against this contract.
 */
export interface Store {
  readonly kind: string
  /** Opened for reading only (another process or tab holds the writer's lock): the workspace freezes. */
  readonly readOnly?: boolean
  /** Appends records in order; resolves once they are durable (the acknowledgement of a group commit). */
  appendJournal(records: readonly string[]): Promise<void>
  /** The whole records appended so far, in order, and the torn bytes of an append a crash cut short. */
  readJournal(): Promise<JournalRead>
  /** Atomically replaces the whole journal (compaction, dropping a torn tail, repair). */
  replaceJournal(records: readonly string[]): Promise<void>
  /**
   * Stores blobs under their ids. Ids are content addresses: a store may keep the bytes it already
   * has under an id (the engine sets a damaged blob aside before putting its good bytes again).
   */
  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void>
  getBlob(id: BlobId): Promise<Uint8Array | undefined>
  deleteBlobs(ids: readonly BlobId[]): Promise<void>
  blobIds(): Promise<BlobId[]>
  getMeta(key: string): Promise<JsonValue | undefined>
  putMeta(key: string, value: JsonValue): Promise<void>
  deleteMeta(key: string): Promise<void>
  /**
   * Keeps `item` aside, exactly as stored, under a new name made from `label` (a word such as
   * 'torn' or 'damaged') and the time, and returns that name. The journal is copied (the caller
   * replaces it next); a blob or a metadata entry is moved out of its place, so it is no longer
   * listed, read or replaced. Kept items are never read or deleted by the engine.
   */
  setAside(item: StoreItem, label: string): Promise<string>
  /** The names of everything kept aside, sorted. */
  keptAside(): Promise<string[]>
  /** Deletes kept-aside items by name (names that are not kept items are ignored). */
  removeKept(names: readonly string[]): Promise<void>
  /**
   * A store shared by several tabs (or processes), one writer at a time: a read-only instance is
   * told `{ kind: 'commit' }` when the writer committed (its journal or metadata), and
   * `{ kind: 'writer' }` once it became the writer itself (the writer went away; `readOnly` is then
   * false). A workspace does not follow by itself: reopen it on the store (the worker does).
   * Returns the unsubscribe.
   */
  onChange?(listener: (change: StoreChange) => void): () => void
  close?(): Promise<void>
}

/** A store's whole content, for crash tests: what a process would find on disk after dying. */
export interface StoreImage {
  journal: string
  blobs: [BlobId, Uint8Array][]
  meta: [string, JsonValue][]
  kept?: [string, KeptValue][]
}

/** What a MemoryStore keeps aside under a name. */
export type KeptValue = { journal: string } | { blob: Uint8Array } | { meta: JsonValue }

/** A name for something set aside: `<kind>.<label>-<time>` plus `.<what>`, unique among `taken`. */
export function keptName(kind: 'journal' | 'blob' | 'meta', label: string, what: string | undefined, taken: (name: string) => boolean): string {
  if (!/^[a-z][a-z0-9-]*$/.test(label)) throw new TypeError(`rewindfs: a set-aside label is a lowercase word, got ${JSON.stringify(label)}`)
  const stamp = new Date().toISOString().replace(/[-:.]/g, '')
  for (let n = 1; ; n++) {
    const name = `${kind}.${label}-${stamp}${n > 1 ? `-${n}` : ''}${what !== undefined ? `.${what}` : ''}`
    if (!taken(name)) return name
  }
}

const SEPARATOR = '\n'

/** A copy that shares no memory (a Buffer's slice is a view: the engine zeroes erased bytes). */
function copy(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes)
}

/**
 * The in-memory Store: the journal is one string, as a file would be, so tests can cut it at any
 * byte to simulate a crash mid-append.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  private journal = ''
  private readonly blobs = new Map<BlobId, Uint8Array>()
  private readonly meta = new Map<string, JsonValue>()
  private readonly kept = new Map<string, KeptValue>()
  /** Appends acknowledged so far (tests crash "after append k"). */
  appends = 0

  static from(image: StoreImage): MemoryStore {
    const store = new MemoryStore()
    store.journal = image.journal
    for (const [id, bytes] of image.blobs) store.blobs.set(id, copy(bytes))
    for (const [key, value] of image.meta) store.meta.set(key, structuredClone(value))
    for (const [name, value] of image.kept ?? []) store.kept.set(name, structuredClone(value))
    return store
  }

  /** A copy of everything, optionally with the journal cut to its first `journalBytes` characters. */
  image(journalBytes?: number): StoreImage {
    return {
      journal: journalBytes === undefined ? this.journal : this.journal.slice(0, journalBytes),
      blobs: [...this.blobs].map(([id, bytes]) => [id, copy(bytes)]),
      meta: [...this.meta].map(([key, value]) => [key, structuredClone(value)]),
      kept: [...this.kept].map(([name, value]) => [name, structuredClone(value)]),
    }
  }

  get journalLength(): number {
    return this.journal.length
  }

  async appendJournal(records: readonly string[]): Promise<void> {
    for (const record of records) if (record.includes(SEPARATOR)) throw new Error('rewindfs: a journal record must be a single line')
    for (const record of records) this.journal += record + SEPARATOR
    this.appends++
  }

  async readJournal(): Promise<JournalRead> {
    if (this.journal === '') return { records: [] }
    const records = this.journal.split(SEPARATOR)
    // A whole journal ends with a separator; anything after the last one is a torn record.
    const torn = records.pop()!
    return torn === '' ? { records } : { records, torn }
  }

  async replaceJournal(records: readonly string[]): Promise<void> {
    for (const record of records) if (record.includes(SEPARATOR)) throw new Error('rewindfs: a journal record must be a single line')
    this.journal = records.map((r) => r + SEPARATOR).join('')
  }

  async putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    // Content-addressed: a blob already stored is kept as it is (a damaged one is set aside first).
    for (const [id, bytes] of blobs) if (!this.blobs.has(id)) this.blobs.set(id, copy(bytes))
  }

  async getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    const bytes = this.blobs.get(id)
    return bytes === undefined ? undefined : copy(bytes)
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

  async setAside(item: StoreItem, label: string): Promise<string> {
    const taken = (name: string) => this.kept.has(name)
    if ('journal' in item) {
      const name = keptName('journal', label, undefined, taken)
      this.kept.set(name, { journal: this.journal })
      return name
    }
    if ('blob' in item) {
      const bytes = this.blobs.get(item.blob)
      if (bytes === undefined) throw Object.assign(new Error(`rewindfs: no blob '${item.blob}' to set aside`), { code: 'ENOENT' })
      const name = keptName('blob', label, item.blob, taken)
      this.kept.set(name, { blob: bytes })
      this.blobs.delete(item.blob)
      return name
    }
    const value = this.meta.get(item.meta)
    if (value === undefined) throw Object.assign(new Error(`rewindfs: no metadata '${item.meta}' to set aside`), { code: 'ENOENT' })
    const name = keptName('meta', label, item.meta, taken)
    this.kept.set(name, { meta: value })
    this.meta.delete(item.meta)
    return name
  }

  async keptAside(): Promise<string[]> {
    return [...this.kept.keys()].sort()
  }

  async removeKept(names: readonly string[]): Promise<void> {
    for (const name of names) this.kept.delete(name)
  }

  /** What a kept-aside item holds (tests inspect it). */
  keptItem(name: string): KeptValue | undefined {
    const value = this.kept.get(name)
    return value === undefined ? undefined : structuredClone(value)
  }
}
