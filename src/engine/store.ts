/**
 * The durable store contract, Promise-based so disk and IndexedDB can implement it (the in-memory
 * store is memory-store.ts). The journal is a sequence of text records (framed, numbered and checksummed by
 * persistence.ts); a group commit is one `appendJournal`. A crash may leave a torn last record,
 * never a torn middle: stores must append in order. What is damaged is kept, never deleted: the
 * set-aside members give every store one place for it.
 */
import type { BlobId } from '../blob/store.js'
import { FsError } from '../errors.js'
import type { Durability, DurabilityOptions, DurableHost } from './durability.js'
import type { RepairOptions, RepairReport } from './repair.js'
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

/** Damaged bytes a store's scrub found: the id they are listed as (a blob that cannot be read), and where and why. */
export type ScrubFinding = {
  readonly id: string
  readonly reason: string
}

/** What `Store.blobTotals` returns. */
export interface BlobTotals {
  /** Blobs held (readable: not counting damage listed as a blob). */
  readonly blobs: number
  /** Their bytes. */
  readonly bytes: number
  /** Ids listed as blobs that cannot be read (damage found on open). */
  readonly unreadable: readonly BlobId[]
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
  /**
   * The durable journal the workspace runs over this store (write-ahead records, replay,
   * compaction, checks, repair): `durableJournal` from rewindfs/adapter-kit. A capability the store
   * carries, so a workspace without a store never loads it.
   */
  readonly durability: DurabilityEngine
  /**
   * The session a store holding one session of many was opened for (a database's: postgres). A
   * workspace opened over it takes that name, and refuses another (sessionOver).
   */
  readonly session?: string
  /** Opened for reading only (another process or tab holds the writer's lock): the workspace freezes. */
  readonly readOnly?: boolean
  /**
   * Optional: what the store found wrong when it opened and mended with nothing lost (a damaged
   * file whose content its checksummed copies agree on). The workspace reports each among its open
   * warnings (`ws.status.warnings`), so a disk that damages files does not go unnoticed.
   */
  readonly notices?: readonly string[]
  /** Appends records in order; resolves once they are durable (the acknowledgement of a group commit). */
  appendJournal(records: readonly string[]): Promise<void>
  /** The whole records appended so far, in order, and the torn bytes of an append a crash cut short. */
  readJournal(): Promise<JournalRead>
  /** Atomically replaces the whole journal (compaction, dropping a torn tail, repair). */
  replaceJournal(records: readonly string[]): Promise<void>
  /**
   * Optional: replaceJournal with each record given as pieces, its text their concatenation in
   * order. A compaction's snapshot is megabytes: joined into one string it would be a copy of them
   * in new memory, whose page faults cost more than the copy. A store that encodes text as it
   * writes (a file) takes the pieces as they are; without it, each record is joined first.
   */
  replaceJournalPieces?(records: readonly (readonly string[])[]): Promise<void>
  /**
   * Stores blobs under their ids. Ids are content addresses: a store may keep the bytes it already
   * has under an id (the engine sets a damaged blob aside before putting its good bytes again).
   * The arrays are lent: once this resolves, the engine may write over them (over a store that
   * reads synchronously it reuses the memory of contents that are durable), so a store copies
   * what it keeps.
   */
  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void>
  getBlob(id: BlobId): Promise<Uint8Array | undefined>
  /**
   * Optional: one blob's bytes read synchronously (a positional read of a file, an OPFS sync
   * access handle in a worker); undefined when the store does not hold it; throws (code `EIO`)
   * when its bytes cannot be read. A store that offers it is read on demand: opening lists its
   * blobs without reading them, a content is read when first needed (checked against its id) and
   * durable contents stay in memory up to the workspace's `cacheBytes`. A store without it is read
   * whole on open. Called on the thread of the sync fs calls, so it must be one quick read.
   */
  readBlobSync?(id: BlobId): Uint8Array | undefined
  /** Optional, beside readBlobSync: every blob's id and size in bytes, without reading contents (`ws.storage` counts durable bytes with it). */
  blobSizes?(): Promise<[BlobId, number][]>
  /**
   * Optional, beside readBlobSync and with blobTotals: the size in bytes of a blob the store holds,
   * answered from its index without reading the content; undefined when it holds none (or lists
   * the id only as damage). A store that offers both is not listed on open: the engine asks about
   * a blob when it is first looked up, so opening costs the store's index, not its number of
   * blobs. Called on the thread of the sync fs calls: one lookup in memory.
   */
  blobSize?(id: BlobId): number | undefined
  /**
   * Optional, with blobSize: how many blobs the store holds and their bytes (`ws.storage` reports
   * them), kept as it goes rather than summed per call, and the ids it lists that cannot be read
   * (damage its open found: the engine reports them on open).
   */
  blobTotals?(): BlobTotals
  /**
   * Optional: reads everything the store holds through its own framing, records nothing refers to
   * any more included (bytes open and blob reads never reach: the directory store's dead pack
   * records, its segment headers), and lists what fails its checks — each under the id the store
   * lists such damage as, with a sentence saying where and why. Changes nothing. `ws.verify()` and
   * `rewindfs verify` call it; a store whose open reads all it holds needs none.
   */
  scrub?(): Promise<ScrubFinding[]>
  deleteBlobs(ids: readonly BlobId[]): Promise<void>
  /**
   * Optional: deletes blobs and overwrites what the store kept of them (ws.purge removing a leaked
   * secret), where deleteBlobs may leave the bytes in a dead record until the store reuses the
   * space. A store without it has purged blobs deleted with deleteBlobs (the purge report says so).
   */
  eraseBlobs?(ids: readonly BlobId[]): Promise<void>
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
  /**
   * A store whose connection can drop (a database server), or whose writes can fail and be tried
   * again (a full disk): makes it this session's writer again after its connection was lost or a
   * write failed, and resolves with how many records its journal holds, so the workspace can tell
   * whether the commit in flight landed (engine/reconnect.ts retries it, then sends what was kept
   * back). Rejects with EBUSY when another writer took the session over meanwhile (the workspace then
   * stays degraded: nothing is written over the other's), ENOENT when the session is gone, EBADF
   * once closed, EIO when its disk failed in a way a retry cannot mend; any other rejection is retried.
   */
  reconnect?(): Promise<{ readonly records: number }>
  close?(): Promise<void>
}

/**
 * The session a workspace opened over `store` is: the one asked for, or the store's own when it was
 * opened for one (Store.session) and none was asked for. Asking for another than the store's is
 * EINVAL naming both: the workspace would record its history and flush ledgers under one name in
 * rows the store keeps under the other.
 */
export function sessionOver(store: Store | undefined, asked: string | undefined): string | undefined {
  const own = store?.session
  if (typeof own !== 'string' || asked === own) return asked ?? own
  if (asked === undefined) return own
  throw new FsError('EINVAL', 'open', undefined, undefined, `the workspace's session '${asked}' is not the session '${own}' the ${String(store!.kind)} store was opened for; open the store with session '${asked}', or the workspace with session '${own}' (or none)`)
}

/** The durable journal over a store, and its repair (engine/durable-journal.ts). */
export interface DurabilityEngine {
  /** `options.cacheBytes`: durable contents kept in memory when the store reads synchronously (contents on demand). */
  open(host: DurableHost, store: Store, options?: DurabilityOptions): Durability
  repair(durability: Durability, options: RepairOptions & { lowerId?: string }): Promise<RepairReport>
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
