/**
 * The in-memory Store: everything a durable store holds, in memory, for tests and for a workspace
 * that wants the durable journal's checks without a disk. It comes with rewindfs/adapter-kit, not
 * the core: it carries the durable journal, which an in-memory workspace does without.
 */
import type { BlobId } from '../blob/store.js'
import { durableJournal } from './durable-journal.js'
import type { JsonValue } from './state.js'
import { type JournalRead, type KeptValue, type Store, type StoreImage, type StoreItem, keptName } from './store.js'

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
  readonly durability = durableJournal
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
