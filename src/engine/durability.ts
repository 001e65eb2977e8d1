/**
 * Write-ahead durability: every operation and checkpoint event is encoded (persistence.ts) the
 * moment it happens and made durable by a group commit — blobs first, then one journal append —
 * within a tick, or when `sync()` is awaited. Opening replays the journal: the reopened workspace
 * is exactly the last acknowledged state, never a torn one. A crash loses at most what was never
 * acknowledged; damage is reported and kept, never deleted: a torn tail is dropped only after the
 * journal is kept aside, and a damaged store is replayed up to the damage and written no more.
 * Over a store that reads synchronously, open lists its blobs without reading them: contents are
 * read when needed (BlobStore's cache) and checked against their ids then.
 */
import { type BlobId, type BlobStore, DEFAULT_CACHE_BYTES } from '../blob/store.js'
import { type BlobIndex, IndexedBlobs } from '../blob/durable-blobs.js'
import { hashBytes, madeHere } from '../blob/hash.js'
import { FsError } from '../errors.js'
import type { FlushBook } from '../flush/book.js'
import type { PinnedLower } from '../flush/pinned-lower.js'
import { FLUSH_STATE_KEY, decodeFlushState, encodeFlushState } from '../flush/state.js'
import type { DirNode, UpperNode } from '../layer/nodes.js'
import { type MapRoot, mapEntries } from '../layer/persistent-map.js'
import { Overlay } from '../overlay.js'
import type { Journal, OperationRecord, SlotChange, StateChange } from './journal.js'
import { IntegrityWatch, pathsHolding } from './integrity.js'
import { type EncodedSnapshot, LazyHistory, type SnapshotInput, runThrough } from './lazy-history.js'
import { changesPending, rootPending } from './pending-history.js'
import {
  type Group,
  type RecordBody,
  type SerialChange,
  bodyText,
  commitRecord,
  decodeJournal,
  decodeLine,
  effectMembers,
  frameRecord,
  framing,
  journalOffset,
  metaText,
  nodeText,
  numberText,
} from './persistence.js'
import { type ReconnectSink, Reconnection } from './reconnect.js'
import { PartLedger, snapshotElsewhere } from './compaction-elsewhere.js'
import type { ElsewhereSnapshot, SnapshotEncoder } from './snapshot-elsewhere.js'
import type { StoreEvent } from './events.js'
import { Replay } from './replay.js'
import { type JsonValue, SessionState } from './state.js'
import { LOWER_KEY, type Store } from './store.js'

/** What a checkpoint is, as the workspace keeps it. */
export interface CheckpointRecord {
  readonly id: string
  name: string
  readonly kind: 'manual' | 'auto' | 'turn' | 'compact' | 'guard'
  readonly seq: number
  readonly createdAt: number
  readonly description?: string
  superseded: boolean
  /** Some content it needs is missing from the store: kept, not restorable. */
  broken?: boolean
  readonly root: DirNode
  readonly state: MapRoot<JsonValue>
  /** Journal position when it was made: operations after it are "since the checkpoint". */
  readonly opSeq: number
  /**
   * false once an operation at or before it was undone or redone after it was made: its tree
   * holds an undone state that no longer is, so restore's replay no longer starts from it
   * (restoring the checkpoint itself still brings its own tree back). Never set back.
   */
  replayBase?: false
}

export interface DurableHost {
  readonly overlay: Overlay
  readonly state: SessionState
  readonly journal: Journal
  readonly blobs: BlobStore
  readonly checkpoints: CheckpointRecord[]
  setResume(point: JsonValue | undefined): void
  getResume(): JsonValue | undefined
  checkpointSeq(): number
  /** Raises the checkpoint sequence after replay so new ones do not reuse numbers. */
  seenCheckpointSeq(seq: number): void
  /** Where a store that reconnects (reconnect.ts) shows what happened: the workspace's status. */
  readonly status?: ReconnectSink
  /** Tells the user when the store cannot be resumed (WorkspaceOptions.onAlert). */
  alert?(message: string): void
  /** Told when the store fails and when a reconnection ends (ws.events 'store'). */
  storeChanged?(event: StoreEvent): void
}

export interface IntegrityReport {
  /** Blobs whose bytes were checked against their ids. */
  verified: number
  /**
   * Blobs whose bytes did not match: dropped from memory (reads fail with EIO), kept in the store;
   * and damaged bytes the store lists as blobs (`pack-damage:<segment>:<offset>`), found by open or
   * by the store's scrub (Store.scrub: records nothing reads any more included).
   */
  corrupt: string[]
  /** Checkpoints marked broken because of them. */
  broken: string[]
  /** Paths of the live tree whose content is among them (reads fail with EIO), sorted. */
  damagedPaths: string[]
}

/** Damage found on open: the store is then open read-only at the last state it can prove. */
export type StoreDamage = {
  /** The journal, or one metadata entry. */
  readonly part: 'journal' | 'meta'
  /** Journal: the first record that cannot be read or applied (0-based) and its byte offset. */
  readonly record?: number
  readonly offset?: number
  /** Meta: the key. */
  readonly key?: string
  readonly reason: string
  /** Journal: records after the damage that are intact on their own and were not replayed. */
  readonly unreplayed?: number
}

export interface LoadReport {
  operations: number
  checkpoints: number
  /** Records dropped from the end of the journal: an append a crash cut short (never acknowledged). */
  droppedTail: number
  /** Where the journal was kept aside before its torn tail was dropped. */
  keptAside?: string
  broken: string[]
  warnings: string[]
  /** Damage found: the store was not modified and is written no more until repaired. */
  damage?: StoreDamage[]
}

/** Bytes of dropped history parts (partsDropped) that make deleting stale blobs worth it whatever the store holds. */
const STALE_PART_BYTES = 64 * 1024 * 1024

/** Tree entries the background check looks over per slice for contents missing from a store read on demand (findMissing). */
const MISSING_SLICE = 5_000

/** Blob reads in flight while a store is opened. */
const BLOB_READS = 16

/** Milliseconds a slice of a background compaction's encoding runs before it lets other work in. */
const SLICE_MS = 1

/**
 * Steps of encoding (each up to PAUSE_WORK entries or operations, lazy-history.ts) a group commit
 * adds to a compaction that fell behind, per quarter of `every` records in its tail
 * (compactWhenDue): it catches up over a few commits, faster the further behind it is, instead of
 * pausing one commit for the whole snapshot. Counted in work, not time: the same on any machine.
 */
const CATCH_UP_STEPS = 8

/**
 * A compaction: the host's state at one moment (captured), its snapshot encoded — in slices in
 * the background, or at once — then written with the group commits made after that moment.
 */
interface Compaction {
  /** Encodes the snapshot, then frames its record, pausing (yielding) between slices; none for one encoded elsewhere. */
  readonly steps?: Generator<void, Encoded, void>
  /** A snapshot encoded elsewhere (snapshot-elsewhere.ts): settles once it is here, as `result`, or failed. */
  elsewhere?: Promise<void>
  /** Once encoded: the snapshot's record, as pieces (framing), and what it needs. */
  result?: Encoded | MadeElsewhere
  /**
   * Records pending at that moment (their changes are in the snapshot) and not committed yet: the
   * first ones the group commits after it take, which its tail leaves out.
   */
  skip: number
  /** The record texts of each group commit made after that moment: written after the snapshot, numbered anew. */
  readonly tail: string[][]
  tailLines: number
  /** Blobs the records recorded since that moment name: kept by the deletion that follows. */
  readonly named: Set<BlobId>
  /** The history parts encoded so far: garbage-collection roots until the snapshot is written. */
  readonly parts: Set<BlobId>
  /** What is reachable when the compaction is written (the blobs it then deletes are the rest). */
  readonly reachable: () => Set<BlobId>
  /** Blobs a purge took out of every reference: erased from the store once it is written (Store.eraseBlobs). */
  erase?: ReadonlySet<BlobId>
  abandoned: boolean
}

/** A snapshot encoded here: its record and what the history takes on once it is written. */
type Encoded = { readonly record: readonly string[]; readonly encoded: EncodedSnapshot }

/** A snapshot encoded elsewhere: its record and what its replica says it needs. */
type MadeElsewhere = { readonly record: readonly string[]; readonly made: ElsewhereSnapshot }

/** Every blob a compaction's snapshot needs in the store. */
function neededBy(result: Encoded | MadeElsewhere): Iterable<BlobId> {
  return 'made' in result ? [...result.made.needs, ...result.made.partIds] : result.encoded.blobs
}

/** Quarters of `every` records a compaction elsewhere may fall behind (its tail) before it is dropped for one made here. */
const ELSEWHERE_BEHIND = 16

/** Runs a generator for `count` steps at most: what it returns if it ended, else undefined (it goes on from there next time). */
function runSteps<T>(steps: Generator<void, T, void>, count: number): T | undefined {
  for (let i = 0; i < count; i++) {
    const step = steps.next()
    if (step.done) return step.value
  }
  return undefined
}

/** Runs a generator for about `ms` milliseconds: what it returns if it ended, else undefined (it goes on from there next time). */
function runFor<T>(steps: Generator<void, T, void>, ms: number): T | undefined {
  const until = performance.now() + ms
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
    if (performance.now() >= until) return undefined
  }
}

/**
 * Runs `work` after the I/O callbacks due now (Node's setImmediate; a timer where there is none),
 * without keeping a process alive for it.
 */
function later(work: () => void): void {
  if (typeof setImmediate === 'function') setImmediate(work).unref?.()
  else setTimeout(work, 0)
}

export interface DurabilityOptions {
  /** Durable contents kept in memory when the store reads synchronously (the rest is read when needed; default DEFAULT_CACHE_BYTES). */
  readonly cacheBytes?: number
  /** Where large compactions are encoded instead of in slices on the calling thread (a store passes it: snapshot-elsewhere.ts). */
  readonly snapshots?: SnapshotEncoder
}

export class Durability {
  /** Record texts (bodyText) waiting for the next group commit; numbered when it frames them. */
  private lines: string[] = []
  /** Whole records in the store's journal: the number the next one gets. */
  private position = 0
  /** Damage found on open: nothing is written to the store while there is any. */
  readonly damage: StoreDamage[] = []
  /** Blobs whose stored bytes are damaged (or unreadable): kept in the store, never deleted by compaction. */
  readonly corrupt = new Set<BlobId>()
  private blobIds = new Set<BlobId>()
  /** The blobs the store holds, as the blob store counts them (listed on open, or asked of the store's index when first looked up). */
  private readonly durableBlobs = {
    has: (id: BlobId) => this.host.blobs.isDurable(id),
    add: (id: BlobId) => this.host.blobs.markDurable(id),
    delete: (id: BlobId) => this.host.blobs.notDurable(id),
  }
  private flushing: Promise<void> = Promise.resolve()
  private scheduled = false
  /** Set when the store failed: the workspace keeps working in memory, flagged, never silently. */
  failure: string | undefined
  /**
   * The group commit in flight when the store failed: it may or may not have landed. Kept, with
   * everything recorded since, for a store that reconnects (resume).
   */
  private unsent: { readonly lines: string[]; readonly ids: BlobId[] } | undefined
  /** A journal replacement (compaction) failed: the store holds either journal, so resume writes a snapshot. */
  private journalUnknown = false
  private reconnection: Reconnection | undefined

  /** The blob checks and what they found, said once (integrity.ts). */
  readonly integrity: IntegrityWatch = new IntegrityWatch(this)

  /** The history of the last snapshot: checkpoint trees and operations' changes decoded when first needed (lazy-history.ts). */
  readonly history = new LazyHistory((id) => this.readPart(id))

  /** How the journal's records become the host's state again (replay.ts). */
  private readonly replayer: Replay

  constructor(
    private readonly host: DurableHost,
    readonly store: Store,
    private readonly options: DurabilityOptions = { cacheBytes: DEFAULT_CACHE_BYTES },
  ) {
    this.openedReadOnly = store.readOnly === true
    this.replayer = new Replay(host, this.history, (root) => this.treeIntact(root))
    // A read (on demand, or the first of an adopted blob) or a check that finds a blob's bytes damaged lands here.
    host.blobs.onCorrupt = (id) => {
      this.found.push(id)
      this.durableBlobs.delete(id)
      this.corrupt.add(id)
      // On demand a read finds it, not a check whose report follows: said at once.
      if (this.onDemand) this.onDamagedBlob?.(id)
    }
    // A content that is not there and was never found damaged is missing from the store (findMissing
    // lists it, or will): a read of it says so (overlay.ts), not that it failed its checksum.
    host.blobs.missing = (id) => this.missing.has(id) || !this.corrupt.has(id)
    // Its good bytes written again (a file rewritten with the same content changes nothing, so no
    // record names them): the next group commit stores them, the damaged copy set aside (putBlobs).
    host.blobs.onRestored = (id) => {
      if (!this.corrupt.has(id)) return
      this.blobIds.add(id)
      this.schedule()
    }
  }

  /**
   * Opened read-only (a follower tab, rewindfs status): so for good. A store promoted later holds
   * the journal of the writer that went away, newer than this state, which must never be written
   * over it (a compaction's snapshot, a deletion); the tab reopens on it to write (the worker does).
   */
  private readonly openedReadOnly: boolean

  /** Whether nothing may be written to the store. */
  get readOnly(): boolean {
    return this.openedReadOnly || this.store.readOnly === true
  }

  /** Blobs found damaged since the last verify() report. */
  private found: BlobId[] = []
  /** Told when a blob is found damaged (the workspace warns and alerts). */
  onDamagedBlob: ((id: BlobId) => void) | undefined

  /** Whether blob contents are read from the store when needed rather than all on open. */
  get onDemand(): boolean {
    return this.host.blobs.onDemand
  }

  // ---- writing ---------------------------------------------------------------------------------

  private holds = 0

  /** Keeps everything recorded while `body` runs in one group commit (a restore is one step). */
  async atomically<T>(body: () => Promise<T>): Promise<T> {
    this.holds++
    try {
      return await body()
    } finally {
      this.holds--
      for (const waiter of this.idle.splice(0)) if (!waiter()) this.idle.push(waiter)
      this.schedule()
    }
  }

  /** Callers waiting for holds to end (sync) or drop to their own (compaction); each returns whether it is done. */
  private readonly idle: (() => boolean)[] = []

  /** Resolves once at most `own` holds remain (0: none; 1: only the caller's own). */
  private holdsAtMost(own: number): Promise<void> {
    if (this.holds <= own) return Promise.resolve()
    return new Promise((resolve) => this.idle.push(() => (this.holds <= own ? (resolve(), true) : false)))
  }

  record(body: RecordBody, blobs: Iterable<BlobId> = []): void {
    this.lines.push(bodyText(body))
    for (const id of blobs) this.needed.add(id)
    if (DROPS_REFERENCES.has(body.t)) this.mayBeStale = true
    this.schedule()
  }

  /**
   * Whether a blob in the store may have lost its last reference since the last deletion of stale
   * blobs (deleteStale): an operation that replaced or removed an entry or moved a tree, an undo or
   * redo, a checkpoint deleted, metadata (the flush state's pins) written, history parts dropped,
   * a compaction that failed. Writes that only add (a session creating files) leave none, and a
   * compaction then skips listing the store's blobs and marking what is reachable.
   */
  private mayBeStale = true

  private schedule(): void {
    if (this.holds > 0 || (this.lines.length === 0 && this.blobIds.size === 0)) return
    if (!this.scheduled) {
      this.scheduled = true
      queueMicrotask(() => {
        this.scheduled = false
        void this.commit()
      })
    }
  }

  /**
   * Takes the blobs a record being encoded names: those the store does not hold yet go with the
   * next commit; while a compaction runs, it keeps them all.
   */
  private readonly needed = {
    add: (id: BlobId) => {
      this.compaction?.named.add(id)
      if (!this.durableBlobs.has(id)) this.blobIds.add(id)
    },
  }

  recordOperation(record: OperationRecord): void {
    if (!this.mayBeStale) for (const change of record.changes) if (change.kind === 'root' || (change.kind === 'slot' && change.before !== undefined)) this.mayBeStale = true
    this.lines.push(`${OP_PREFIX}${identityText(record)},"changes":[${this.changesText(record, this.needed)}]}`)
    this.schedule()
  }

  /** An operation's changes as the members of its record's `changes` (SerialChange[] without brackets); the blobs they name go to `blobs`. */
  private changesText(record: OperationRecord, blobs: { add(id: BlobId): unknown }): string {
    // Built without an array or closures per record: most records hold one or two changes.
    let out = ''
    for (const change of record.changes) {
      let item: string
      if (change.kind === 'slot' || change.kind === 'meta' || change.kind === 'state') item = changeText(change, blobs, record)
      else if (change.kind === 'effect') item = JSON.stringify(effectMembers(change.effect))
      else {
        // A checkpoint whose tree is still in the snapshot's parts is not the one just moved to (that one was decoded).
        const checkpoint = this.host.checkpoints.find((c) => !rootPending(c) && c.root === change.after && (!change.stateAfter || c.state === change.stateAfter))
        if (checkpoint) item = JSON.stringify({ k: 'root', checkpoint: checkpoint.id } satisfies SerialChange)
        else if (isEmptyRoot(change.after) && !change.stateAfter) item = '{"k":"root","empty":true}'
        else {
          // A move to a tree no checkpoint names: written out as the slots that differ.
          const items: string[] = []
          for (const c of this.host.journal.slots({ ...record, changes: [change] })) items.push(changeText(c, blobs))
          if (items.length === 0) continue
          item = items.join(',')
        }
      }
      out = out === '' ? item : `${out},${item}`
    }
    return out
  }

  /**
   * One group commit: the blobs the pending records need, then the records in one append; then a
   * compaction that is due starts, or one encoded is written (compactWhenDue).
   */
  private commit(evenIfHeld = false): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      await this.commitPending(evenIfHeld)
      if (this.auto !== undefined || this.compaction !== undefined) await this.compactWhenDue()
    })
    return this.flushing
  }

  private async commitPending(evenIfHeld: boolean): Promise<void> {
    const held = this.holds > 0 && !evenIfHeld
    const { unrecorded: seen, unrecordedBases: bases, unrecordedShown: shown, rebasing } = this.host.overlay
    // Reads of a damaged store's workspace record nothing (its lower sightings wait for the repair's
    // snapshot), nor a read-only store's (rewindfs status, diff, flush --dry-run; a follower tab):
    // they wait in memory for a writer's commit, if this one is promoted.
    if (((seen && seen.length > 0) || (bases && bases.length > 0) || (shown && shown.length > 0)) && !this.failure && !held && this.damage.length === 0 && !this.readOnly) {
      // `bases` is in every record a store that records bases writes, so open tells such a store from an older one.
      const reads = rebasing && shown && shown.length > 0 ? { shown: shown.splice(0) } : {}
      this.lines.push(bodyText({ t: 'seen', entries: seen?.splice(0) ?? [], ...(rebasing ? { bases: bases?.splice(0) ?? [] } : {}), ...reads }))
    }
    // Contents open found missing, written again since (the same bytes change no file: no record names them).
    if (this.missing.size > 0) for (const id of this.missing) if (this.host.blobs.resident(id) && !this.durableBlobs.has(id)) this.blobIds.add(id)
    // A group commit of blobs alone (a damaged copy's good bytes) is its commit marker after them.
    if ((this.lines.length === 0 && this.blobIds.size === 0) || this.failure || held) return
    if (this.damage.length > 0) {
      this.failure = `the ${this.store.kind} store is damaged (${describeDamage(this.damage[0])}) and open read-only: nothing is written to it until it is repaired (ws.repair())`
      return
    }
    const lines = this.lines
    const ids = this.blobIds
    this.lines = []
    this.blobIds = new Set()
    try {
      // A compaction may have made some durable since they were recorded.
      const blobs = this.unstored(ids)
      if (blobs.length > 0) await this.putBlobs(blobs)
      const first = this.position
      const records = new Array<string>(lines.length + 1)
      let chars = 0
      for (let i = 0; i < lines.length; i++) {
        records[i] = frameRecord(lines[i], first + i)
        chars += records[i].length
      }
      records[lines.length] = commitRecord(first + lines.length)
      await this.store.appendJournal(records)
      this.position = first + lines.length + 1
      this.lastRecord = lines.length > 0 ? records[lines.length - 1] : undefined
      this.sinceCompaction += lines.length
      this.sinceChars += chars
      for (const id of ids) this.markDurable(id)
      this.committed(lines)
    } catch (error) {
      this.unsent = { lines, ids: [...ids] }
      this.failed(error)
    }
  }

  /** The store failed: degraded, and a store that can reconnect is retried (reconnect.ts). */
  private failed(error: unknown): void {
    this.failure = `the ${this.store.kind} store failed: ${(error as Error)?.message ?? String(error)}`
    this.abandonCompaction()
    this.host.storeChanged?.({ state: 'failed', message: this.failure })
    if (typeof this.store.reconnect !== 'function' || this.readOnly) return
    this.reconnection ??= new Reconnection(
      this as Durability & { store: Store & { reconnect(): Promise<{ readonly records: number }> } },
      this.host.status,
      (message) => this.host.alert?.(message),
      (event) => this.host.storeChanged?.(event),
    )
    this.reconnection.failed(error)
  }

  /**
   * After the store reconnected as this session's writer, its journal holding `records` records:
   * sends what the failure kept back and leaves degraded mode. The commit in flight when it failed
   * landed if the journal is that much longer than what was acknowledged (then it is not sent
   * again), and did not if it is as long (then it is sent first, before everything recorded since);
   * any other length is not this writer's journal any more, and nothing is written. After a failed
   * compaction the store holds either journal: a snapshot of the live state replaces both.
   */
  async resume(records: number): Promise<{ resent: number; landed: boolean }> {
    return this.atomically(async () => {
      // Another hold (a restore) must end first: its records commit as one group.
      await this.holdsAtMost(1)
      await this.flushing
      const unsent = this.unsent
      const landed = !this.journalUnknown && unsent !== undefined && records === this.position + unsent.lines.length + 1
      if (!this.journalUnknown && !landed && records !== this.position) {
        const expected = unsent ? `${this.position} (or ${this.position + unsent.lines.length + 1} with the commit in flight)` : `${this.position}`
        throw Object.assign(new Error(`the store's journal holds ${records} records where this writer left ${expected}: it was written by someone else, and nothing is written over it`), { code: 'EBUSY' })
      }
      this.unsent = undefined
      this.failure = undefined
      if (this.journalUnknown) {
        // The snapshot is the whole live state: what was kept back is in it.
        const resent = this.lines.length + (unsent?.lines.length ?? 0)
        this.lines = []
        this.blobIds = new Set()
        this.host.overlay.unrecorded?.splice(0)
        this.host.overlay.unrecordedBases?.splice(0)
        this.host.overlay.unrecordedShown?.splice(0)
        await this.writeSnapshot()
        this.journalUnknown = false
        this.sinceCompaction = 0
        return { resent, landed: false }
      }
      if (landed) {
        this.position = records
        this.sinceCompaction += unsent.lines.length
        for (const id of unsent.ids) this.durableBlobs.add(id)
      } else if (unsent) {
        this.lines = [...unsent.lines, ...this.lines]
        for (const id of unsent.ids) this.blobIds.add(id)
      }
      const resent = this.lines.length
      await this.commit(true)
      if (this.failure) throw Object.assign(new Error(this.failure), { code: 'ECONNRESET' })
      return { resent, landed }
    })
  }

  /**
   * Puts blobs in the store. A blob whose stored copy is damaged is set aside first (the store
   * keeps what it has under an id): the good bytes replace it, the bad ones stay for inspection.
   */
  private async putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    try {
      for (const [id] of blobs) {
        if (!this.corrupt.has(id)) continue
        if ((await this.store.blobIds()).includes(id)) await this.store.setAside({ blob: id }, 'damaged')
        this.corrupt.delete(id)
      }
      await this.store.putBlobs(blobs)
    } finally {
      // Staged bytes lent to the store (BlobStore.forStore): its copy is made, or it failed.
      this.host.blobs.returned(blobs)
    }
  }

  /** Records committed since the journal was last compacted, and their characters. */
  sinceCompaction = 0
  private sinceChars = 0
  /** Characters of the journal's last snapshot record (0 before any). */
  private snapshotChars = 0
  /** Automatic compaction (autoCompact): how many records it waits for at least, and what is reachable. */
  private auto: { readonly every: number; readonly reachable: () => Set<BlobId> } | undefined
  /** The compaction under way, if one is. */
  private compaction: Compaction | undefined

  /**
   * Compacts by itself from now on: once the journal holds `every` records and at least as many
   * characters as its last snapshot since that snapshot, a compaction starts in the background.
   * Each one costs about the snapshot, and as much journal came before it: compaction costs O(1)
   * per record however large the live state grows, and open replays at most about a snapshot's
   * worth of journal after the snapshot (O(live state)). Its snapshot is of the moment it starts,
   * encoded in slices of SLICE_MS between other work; commits go on meanwhile, and what they commit
   * is kept after the snapshot when it is written. A journal left that long by a process that ended
   * before compacting is compacted this way after open.
   */
  autoCompact(every: number, reachable: () => Set<BlobId>): void {
    this.auto = { every, reachable }
    if (this.due()) void this.commit()
  }

  private due(): boolean {
    return this.auto !== undefined && this.sinceCompaction >= this.auto.every && this.sinceChars >= this.snapshotChars
  }

  /**
   * After a group commit: a compaction that is due starts (its moment is now, between two commits
   * and outside any hold); one encoded is written once the records pending at its moment are
   * committed. One whose tail reached a quarter of `every` records before its slices finished (the
   * event loop was not free for them long enough) is encoded by the commits too, each for
   * CATCH_UP_STEPS per quarter of `every` in its tail, and at once when the tail reaches `every`: the
   * tail it writes again, and the journal, stay bounded, and no commit waits for a whole snapshot
   * unless writes outrun the encoding four times over.
   */
  private async compactWhenDue(): Promise<void> {
    const compaction = this.compaction
    if (compaction === undefined) {
      if (this.holds === 0 && !this.failure && this.damage.length === 0 && !this.readOnly && this.due()) this.compactInBackground()
      return
    }
    const behind = compaction.tailLines / ((this.auto?.every ?? Number.POSITIVE_INFINITY) / 4)
    // Elsewhere too slow (a worker stuck, or starved): its tail, kept here and written again after it, stops growing. The next one is made here.
    if (compaction.result === undefined && compaction.elsewhere !== undefined && behind >= ELSEWHERE_BEHIND) {
      this.elsewhereBehind = true
      this.compactionFailed(compaction)
      return
    }
    if (compaction.result === undefined && compaction.steps !== undefined && behind >= 1) {
      try {
        compaction.result = behind >= 4 ? runThrough(compaction.steps) : runSteps(compaction.steps, Math.ceil(CATCH_UP_STEPS * behind))
      } catch {
        this.compactionFailed(compaction)
        return
      }
    }
    if (compaction.result === undefined || compaction.skip > 0) return
    try {
      await this.writeCompaction(compaction)
    } catch {
      // The journal is as it was, or the store failed (failed() said so): an automatic compaction tries again later.
      this.compactionFailed(compaction)
    }
  }

  /**
   * Starts a compaction of the state as it is now, encoded in slices in the background, or
   * elsewhere when it is large and the store offers that; written by a commit once encoded.
   */
  private compactInBackground(): void {
    const encoder = this.options.snapshots
    const here = this.elsewhereBehind
    this.elsewhereBehind = false
    if (encoder !== undefined && !here && this.elsewhereFailure === undefined && this.snapshotChars + this.sinceChars >= encoder.fromChars) return this.compactElsewhere(encoder)
    const compaction = this.capture(this.auto!.reachable)
    this.compaction = compaction
    const steps = compaction.steps!
    const slice = () => {
      if (compaction.abandoned || compaction.result !== undefined) return
      try {
        compaction.result = runFor(steps, SLICE_MS)
      } catch {
        this.compactionFailed(compaction)
        return
      }
      if (compaction.result !== undefined) void this.commit()
      else later(slice)
    }
    later(slice)
  }

  /** Compactions written, by where their snapshot was encoded (tests and the bench read them). */
  readonly compactions = { here: 0, elsewhere: 0 }

  /** Why encoding elsewhere failed (compactions are then encoded here for good), if it did. */
  elsewhereFailure: string | undefined

  /**
   * The journal's record before its last commit marker, as framed (undefined when that is a
   * snapshot, or not known): a replica checks it reads the journal the workspace wrote.
   */
  private lastRecord: string | undefined

  /** The last compaction elsewhere fell ELSEWHERE_BEHIND quarters of `every` behind: the next one is made here. */
  private elsewhereBehind = false

  /** Lower directories replicas asked for: their stats go with every request after. */
  private readonly lowerDirs = new Set<string>()

  /** The parts the last snapshot encoded elsewhere lists (the history here knows only its own): deleting stale blobs keeps them. */
  private readonly ledger = new PartLedger()

  /**
   * A compaction of the journal as the store holds it now, encoded elsewhere from the store alone;
   * the records pending here and every commit made meanwhile are its tail. (The blobs only those
   * records name are not in `named`: what deleting stale blobs keeps beside them is what is
   * reachable when it runs, and a replay reads no content of a record it applies.)
   */
  private compactElsewhere(encoder: SnapshotEncoder): void {
    const records = this.position
    const last = this.lastRecord
    const compaction: Compaction = { skip: 0, tail: [], tailLines: 0, named: new Set(), parts: new Set(), reachable: this.auto!.reachable, abandoned: false }
    this.compaction = compaction
    const request = { records, last, session: this.host.journal.session, keep: this.host.journal.limit }
    compaction.elsewhere = snapshotElsewhere(encoder, request, this.host.overlay.lower, this.lowerDirs).then(
      (made) => {
        if (compaction.abandoned) return
        // Its parts become contents here (their ids are the same hash of the same bytes), kept by the collector until written.
        for (const [id, bytes] of made.parts) {
          if (this.host.blobs.put(bytes) !== id) throw new Error(`rewindfs: a history part made elsewhere does not hash to its id ${id}`)
          compaction.parts.add(id)
        }
        compaction.result = { record: made.record, made }
        void this.commit()
      },
    ).catch((error: unknown) => {
      // One dropped meanwhile may have read a journal replaced since: no sign that elsewhere fails.
      if (compaction.abandoned) return
      this.elsewhereFailure = (error as Error)?.message ?? String(error)
      this.compactionFailed(compaction)
    })
  }

  /**
   * A replica's snapshot (snapshot-elsewhere.ts) for the workspace that writes it: the record, the
   * parts it wrote with their bytes, and what deleting stale blobs must keep.
   */
  encodeForWriter(): Omit<ElsewhereSnapshot, 'kind'> {
    const compaction = this.capture(() => new Set())
    const { record, encoded } = runThrough(compaction.steps!)
    const { staged } = encoded
    const listed = new Set(staged.parts.map((info) => info.n))
    const parts: [BlobId, Uint8Array][] = []
    for (const id of compaction.parts) {
      if (!encoded.blobs.has(id)) continue
      const bytes = this.host.blobs.forStore(id)
      // A view of a larger buffer would send all of it.
      parts.push([id, bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()])
    }
    const lists: [BlobId, BlobId[]][] = staged.written.filter(({ info }) => listed.has(info.n)).map(({ info, blobs }) => [info.id, [...blobs]])
    const dropped = this.history.commit(staged).map((info) => info.id)
    return { record: [...record], parts, needs: [...encoded.blobs], partIds: staged.parts.map((info) => info.id), lists, dropped }
  }

  /** A compaction that failed is dropped; an automatic one is tried again after `every` more records. */
  private compactionFailed(compaction: Compaction): void {
    // What it stored (its parts) is left to the next deletion.
    this.mayBeStale = true
    if (this.compaction !== compaction) return
    this.abandonCompaction()
    this.sinceCompaction = 0
  }

  /** Drops the compaction under way, if any (nothing of it was written: the journal stays as it is). */
  private abandonCompaction(): void {
    if (this.compaction) this.compaction.abandoned = true
    this.compaction = undefined
  }

  /** Tells the compaction under way about a group commit: what it took after the compaction's moment is its tail. */
  private committed(lines: readonly string[]): void {
    const compaction = this.compaction
    if (compaction === undefined) return
    const skipped = Math.min(compaction.skip, lines.length)
    compaction.skip -= skipped
    if (skipped === lines.length) return
    const tail = skipped === 0 ? lines.slice() : lines.slice(skipped)
    compaction.tail.push(tail)
    compaction.tailLines += tail.length
  }

  /**
   * The host's state as it is now, to be snapshotted (its trees frozen, so later changes copy), and
   * the steps that encode it. The records pending now are in it: `skip` leaves them out of its tail.
   */
  private capture(reachable: () => Set<BlobId>): Compaction {
    const { overlay, state, journal, checkpoints } = this.host
    const input: SnapshotInput = {
      root: overlay.freeze(),
      state: [...mapEntries(state.freeze())],
      seq: journal.lastSeq,
      checkpointSeq: this.host.checkpointSeq(),
      resume: this.host.getResume(),
      seen: [...overlay.observed],
      bases: overlay.rebasing ? [...overlay.bases] : undefined,
      shown: overlay.rebasing ? overlay.shownEntries() : [],
      ino: overlay.inodes.next,
      checkpoints: checkpoints.map((record) => ({ record, name: record.name, superseded: record.superseded })),
      operations: journal.records.map((record) => ({ record, undone: record.undone })),
      identity: identityText,
    }
    const parts = new Set<BlobId>()
    const put = (bytes: Uint8Array) => {
      const id = this.host.blobs.put(bytes)
      parts.add(id)
      return id
    }
    const history = this.history
    function* steps() {
      const encoded = yield* history.encoding(input, put)
      const record = yield* framing(encoded.body, 0)
      return { record, encoded }
    }
    return { steps: steps(), skip: this.lines.length, tail: [], tailLines: 0, named: new Set(), parts, reachable, abandoned: false }
  }

  /**
   * Replaces the journal with one snapshot of the live state and kept history (so open time stays
   * bounded as history grows), then removes blobs nothing refers to any more from the store. A blob
   * known damaged, or not verified yet, is never removed: damage is kept until the user repairs.
   * A compaction under way in the background is dropped for it.
   */
  async compact(reachable: () => Set<BlobId>, erase?: ReadonlySet<BlobId>): Promise<void> {
    this.abandonCompaction()
    // Asked for (ws.compact(), purge): what is stale is looked for whatever was recorded.
    this.mayBeStale = true
    await this.atomically(async () => {
      // Another hold (a restore that triggered this compaction) must end first: its records commit as one group.
      await this.holdsAtMost(1)
      await this.drain()
      if (this.failure || this.damage.length > 0 || this.readOnly) return
      this.abandonCompaction()
      const compaction = this.capture(reachable)
      compaction.erase = erase
      compaction.result = runThrough(compaction.steps!)
      this.compaction = compaction
      let failure: { error: unknown } | undefined
      // In the commit chain: no group commit lands between the snapshot and the journal it replaces.
      this.flushing = this.flushing.then(() =>
        this.writeCompaction(compaction).catch((error: unknown) => {
          failure = { error }
          if (this.compaction === compaction) this.compaction = undefined
        }),
      )
      await this.flushing
      if (failure) throw failure.error
    })
  }

  /**
   * Writes a compaction whose snapshot is encoded: the blobs it needs, then the journal replaced
   * by the snapshot and the group commits made after its moment (numbered anew), then deletes the
   * blobs nothing needs any more. Records still pending from its moment (a compaction written
   * within a hold) are in the snapshot: durable with it, they are not sent again.
   */
  private async writeCompaction(compaction: Compaction): Promise<void> {
    if (compaction.abandoned || this.compaction !== compaction) return
    if (this.failure || this.damage.length > 0 || this.readOnly) {
      this.abandonCompaction()
      return
    }
    await this.replaceWith(compaction)
    if (this.compaction === compaction) this.compaction = undefined
    await this.deleteStale(compaction)
  }

  /** Replaces the journal with a compaction's snapshot, its commit marker and its tail. */
  private async replaceWith(compaction: Compaction): Promise<void> {
    const result = compaction.result!
    const { record } = result
    await this.putDurable(neededBy(result))
    const records: (readonly string[])[] = [record, [commitRecord(1)]]
    let chars = 0
    for (const lines of compaction.tail) {
      for (const line of lines) {
        const framed = frameRecord(line, records.length)
        records.push([framed])
        chars += framed.length
      }
      records.push([commitRecord(records.length)])
    }
    try {
      if (this.store.replaceJournalPieces) await this.store.replaceJournalPieces(records)
      else await this.store.replaceJournal(records.map((pieces) => (pieces.length === 1 ? pieces[0] : pieces.join(''))))
    } catch (error) {
      // The store may hold the old journal or this one: a store that reconnects is resumed with a snapshot.
      this.journalUnknown = true
      this.failed(error)
      throw error
    }
    if (compaction.skip > 0) this.lines.splice(0, compaction.skip)
    compaction.skip = 0
    if ('made' in result) {
      const { made } = result
      this.compactions.elsewhere++
      this.ledger.written(made)
      this.partsDropped(made.dropped)
    } else {
      this.compactions.here++
      this.ledger.clear()
      this.partsDropped(this.history.commit(result.encoded.staged).map((info) => info.id))
    }
    this.position = records.length
    const lastTail = records.at(-2)
    this.lastRecord = compaction.tail.length > 0 && lastTail?.length === 1 ? lastTail[0] : undefined
    this.sinceCompaction = compaction.tailLines
    this.sinceChars = chars
    let snapshotChars = 0
    for (const piece of record) snapshotChars += piece.length
    this.snapshotChars = snapshotChars
  }

  /** Bytes of history parts the snapshot no longer needs, left in the store since stale blobs were last deleted. */
  private droppedPartBytes = 0

  /**
   * History parts a compaction no longer needs (their operations left the kept history) are stale
   * in the store, with whatever only they named. Finding those marks all that is reachable and
   * lists the store (deleteStale): the live tree's cost. A history that keeps its newest operations
   * drops parts at every compaction, so, as git's `gc --auto` waits for loose objects, they are
   * deleted once they are a quarter of what the store holds (or STALE_PART_BYTES), not each time.
   */
  private partsDropped(parts: readonly BlobId[]): void {
    if (parts.length === 0) return
    for (const id of parts) {
      const size = this.host.blobs.durableSize(id)
      // A part of unknown size counts as full (a part is sealed at about a MiB of text).
      this.droppedPartBytes += size === undefined || Number.isNaN(size) ? 1024 * 1024 : size
    }
    if (this.droppedPartBytes >= Math.min(STALE_PART_BYTES, this.host.blobs.occupancy.durable.bytes / 4)) this.mayBeStale = true
  }

  /**
   * Removes from the store the blobs nothing needs after a compaction: not reachable now, not in
   * its snapshot or the history's parts, not named by a record since its moment (its tail).
   */
  private async deleteStale(compaction: Compaction): Promise<void> {
    if (!this.mayBeStale) return
    const stored = await this.store.blobIds()
    // What is reachable now, with no wait before the stale ones stop counting as durable: a write
    // from here on that needs one of them again stores it again (after the deletion, in order).
    const keep = compaction.reachable()
    for (const id of neededBy(compaction.result!)) keep.add(id)
    for (const id of compaction.named) keep.add(id)
    // A purge's blobs nothing refers to any more (it scrubbed history too) are erased, damaged or
    // not, whether the history's parts are all listed yet or not.
    const erase = compaction.erase
    if (erase !== undefined && erase.size > 0) {
      const erasing = stored.filter((id) => erase.has(id) && !keep.has(id))
      if (erasing.length > 0) {
        for (const id of erasing) {
          this.durableBlobs.delete(id)
          this.host.blobs.notDurable(id)
          this.corrupt.delete(id)
        }
        this.unverified = this.unverified.filter((id) => !erase.has(id))
        await (this.store.eraseBlobs ? this.store.eraseBlobs(erasing) : this.store.deleteBlobs(erasing))
      }
    }
    // The history's parts, and what they refer to. Until every part's blobs are known (read in
    // the background, never here) nothing is deleted: a part not listed may need any blob.
    const history = this.history.blobs()
    if (!history.complete) return
    for (const id of history.ids) keep.add(id)
    const ledger = this.ledger.blobs((id) => this.history.listOf(id))
    if (!ledger.complete) return
    for (const id of ledger.ids) keep.add(id)
    const pending = new Set(this.unverified)
    const stale = stored.filter((id) => !keep.has(id) && !this.corrupt.has(id) && !pending.has(id) && !erase?.has(id))
    for (const id of stale) {
      this.durableBlobs.delete(id)
      this.host.blobs.notDurable(id)
    }
    // Those recorded meanwhile (since the store listed its blobs) count for the next one.
    this.mayBeStale = false
    this.droppedPartBytes = 0
    if (stale.length > 0) await this.store.deleteBlobs(stale)
  }

  /** Replaces the journal with a snapshot of the host and its commit marker (no records are pending). */
  private async writeSnapshot(): Promise<void> {
    this.abandonCompaction()
    const compaction = this.capture(() => new Set())
    compaction.result = runThrough(compaction.steps!)
    await this.replaceWith(compaction)
  }

  /**
   * Before the store closes: a compaction under way is finished now (its remaining slices at once),
   * so a process that opens, writes and closes still compacts.
   */
  async finishCompaction(): Promise<void> {
    const compaction = this.compaction
    if (compaction === undefined) return
    if (compaction.result === undefined && compaction.elsewhere !== undefined) {
      await compaction.elsewhere
      if (this.compaction !== compaction || compaction.result === undefined) return
    } else if (compaction.result === undefined) {
      try {
        compaction.result = runThrough(compaction.steps!)
      } catch {
        this.compactionFailed(compaction)
        return
      }
    }
    await this.commit()
  }

  /**
   * Repair's last step: keeps the journal aside under `label`, then replaces it atomically with a
   * snapshot of the host as rebuilt (repair.ts). The damage is then behind: writing resumes.
   */
  async rewrite(label: string): Promise<string> {
    return this.atomically(async () => {
      await this.flushing
      this.abandonCompaction()
      const kept = await this.store.setAside({ journal: true }, label)
      this.damage.splice(0)
      this.failure = undefined
      this.lines = []
      this.blobIds = new Set()
      await this.writeSnapshot()
      this.sinceCompaction = 0
      return kept
    })
  }

  /** Damage that repair dealt with without rewriting the journal (metadata only): writing resumes. */
  clearDamage(): void {
    this.damage.splice(0)
    this.failure = undefined
  }

  describe(damage: StoreDamage): string {
    return describeDamage(damage)
  }

  /** Record texts recorded but not in the store (a damaged store takes none). */
  get pending(): number {
    return this.lines.length
  }

  /** Waits for the commit in flight, then commits what is pending even while held (by the caller alone). */
  private async drain(): Promise<void> {
    await this.flushing
    await this.commit(true)
  }

  /**
   * A part of the snapshot's history read back: through the store's synchronous read and checked
   * against its id (not counted as a content read), or from memory where the store's blobs were
   * loaded on open. EIO when it cannot be read.
   */
  private readPart(id: BlobId): Uint8Array {
    const { store } = this
    if (!this.onDemand || !store.readBlobSync) return this.host.blobs.get(id)
    const bytes = store.readBlobSync(id)
    if (bytes === undefined) throw new FsError('EIO', 'read', undefined, undefined, `blob ${id} is missing from the ${store.kind} store`)
    if (madeHere(id) && hashBytes(bytes) !== id) throw new FsError('EIO', 'read', undefined, undefined, `blob ${id} in the ${store.kind} store does not match its checksum`)
    return bytes
  }

  /** Garbage-collection roots the history's parts hold (the collector keeps them, and what they refer to). */
  historyRoots(): Iterable<BlobId> {
    const { ids, complete } = this.history.blobs()
    const ledger = this.ledger.blobs((id) => this.history.listOf(id))
    // The parts a compaction under way has encoded: in memory only until it is written.
    const encoding = this.compaction?.parts ?? []
    // Until every part's blobs are known, every durable blob is kept.
    return complete && ledger.complete ? [...ids, ...ledger.ids, ...encoding] : [...ids, ...ledger.ids, ...encoding, ...this.host.blobs.residentDurable()]
  }

  /** Writes the blobs the store does not have yet (and remembers that it has them). */
  private async putDurable(ids: Iterable<BlobId>): Promise<void> {
    const missing = this.unstored(ids)
    if (missing.length > 0) await this.putBlobs(missing)
    for (const [id] of missing) this.markDurable(id)
  }

  /**
   * The blobs of `ids` the store may not hold yet, with their bytes. Only a content in memory can
   * be missing (one the store alone holds is durable), so memory is asked first: a snapshot names
   * every live file's blob, most of them durable and out of memory, and each spares the store's index a lookup.
   */
  private unstored(ids: Iterable<BlobId>): (readonly [BlobId, Uint8Array])[] {
    const blobs: (readonly [BlobId, Uint8Array])[] = []
    for (const id of ids) if (this.host.blobs.resident(id) && !this.durableBlobs.has(id)) blobs.push([id, this.host.blobs.forStore(id)])
    return blobs
  }

  /** The store holds the blob: its contents may leave memory (read on demand). */
  private markDurable(id: BlobId): void {
    this.durableBlobs.add(id)
  }

  /**
   * Metadata written beside the journal (the flush state), after everything recorded so far and
   * the blobs it refers to are durable.
   */
  async saveMeta(key: string, value: JsonValue, blobs: readonly BlobId[]): Promise<void> {
    if (this.damage.length > 0) throw damagedError(this.store.kind, this.damage[0])
    await this.sync()
    await this.putDurable(blobs)
    await this.store.putMeta(key, value)
    this.mayBeStale = true
  }

  /** Persists the flush state (pins, ledgers, flushes not yet confirmed) with the blobs it names. */
  async saveFlushState(lower: PinnedLower, book: FlushBook, blobs: readonly BlobId[]): Promise<void> {
    await this.saveMeta(FLUSH_STATE_KEY, encodeFlushState(lower, book), blobs)
  }

  /** On open: loads the flush state into `lower` and `book`; true when there was one it could read. */
  async loadFlushState(lower: PinnedLower, book: FlushBook): Promise<boolean> {
    const loaded = await this.readMeta(FLUSH_STATE_KEY, (value) => {
      decodeFlushState(value, lower, book)
      return true
    })
    return loaded === true
  }

  /**
   * Resolves when everything recorded so far is durable; rejects if the store failed. While a hold
   * is on (a compaction or a restore commits as one), it waits for the hold to end: resolving
   * earlier would acknowledge records no store has. `insideHold` is for callers running within the
   * hold (a compensator during a restore), which would otherwise wait for themselves.
   */
  async sync(options: { insideHold?: boolean } = {}): Promise<void> {
    if (!options.insideHold) await this.holdsAtMost(0)
    await this.commit()
    if (this.failure) throw Object.assign(new Error(`rewindfs: ${this.failure}; the workspace is running in memory (degraded)`), { code: 'EDEGRADED' })
  }

  // ---- reading ---------------------------------------------------------------------------------

  /**
   * Loads blobs and replays the journal into the (empty) host. A torn tail (a crash in the middle
   * of the last group commit) is dropped after the journal is kept aside; damage is reported in
   * `damage` and nothing is modified: the host holds the last state the journal proves.
   */
  async load(): Promise<LoadReport> {
    const warnings: string[] = [...(this.store.notices ?? [])]
    const read = await this.store.readJournal()
    // A last record whole but for its line end counts (it was written out); the line end is restored below.
    const unterminated = read.torn !== undefined && decodeLine(read.torn).ok
    const records = unterminated ? [...read.records, read.torn!] : read.records
    const decoded = decodeJournal(unterminated ? { records } : read)
    const droppedTail = decoded.damage ? 0 : decoded.tail + (decoded.torn ? 1 : 0)
    let keptAside: string | undefined
    if (decoded.damage) {
      this.damage.push({ part: 'journal', record: decoded.damage.record, offset: decoded.damage.offset, reason: decoded.damage.reason, unreplayed: decoded.damage.intactAfter })
    } else if (droppedTail > 0 || unterminated) {
      // Read-only: a reader may just have seen an append in flight; a store already found damaged
      // (its metadata) is not modified at all: repair drops the tail with the rest.
      if (this.readOnly || this.damage.length > 0) {
        if (droppedTail > 0) warnings.push(`ignored ${droppedTail} torn record(s) at the end of the journal (an append in flight, or a crash the writer recovers from)`)
      } else {
        // Never cut in place: the journal as it was is kept aside first, then replaced by its whole group commits.
        keptAside = await this.store.setAside({ journal: true }, 'torn')
        await this.store.replaceJournal(records.slice(0, decoded.proven))
        warnings.push(
          droppedTail > 0
            ? `dropped ${droppedTail} torn record(s) at the end of the journal (a group commit a crash cut short, never acknowledged); the journal as it was is kept aside as '${keptAside}'`
            : `the journal's last record lacked its line end (a crash); it was rewritten whole, and kept aside as it was as '${keptAside}'`,
        )
      }
    }
    this.position = decoded.proven
    this.measureTail(records, decoded.groups)
    await this.loadBlobs(warnings)
    let { operations, failed } = this.replay(decoded.groups)
    if (failed) {
      // An intact record that cannot be applied (it refers to what is not there): damage too. The
      // host is rebuilt without its group, so it holds exactly the state before it.
      const group = decoded.groups[failed.group]
      const record = group.start + failed.body
      const applying: StoreDamage = {
        part: 'journal',
        record,
        offset: journalOffset(records, record),
        reason: `it cannot be applied: ${failed.error.replace(/^rewindfs: /, '')}`,
        unreplayed: records.length - group.start,
      }
      // It comes before any damage the decoding found (its group was whole): the first is what counts.
      this.damage.splice(0, this.damage.length, applying, ...this.damage.filter((d) => d.part !== 'journal'))
      this.resetHost()
      operations = this.replay(decoded.groups.slice(0, failed.group)).operations
    }
    const broken = this.checkIntegrity()
    for (const id of broken) warnings.push(`checkpoint ${id} refers to content missing from the store; it is kept but cannot be restored`)
    this.journalRead = { length: read.records.length, first: read.records[0], last: read.records.at(-1), torn: read.torn }
    if (!this.onDemand) await this.findMissing()
    return {
      operations,
      checkpoints: this.host.checkpoints.length,
      droppedTail,
      ...(keptAside !== undefined ? { keptAside } : {}),
      broken,
      warnings,
      ...(this.damage.length > 0 ? { damage: [...this.damage] } : {}),
    }
  }

  /** How long the journal read on open is past its snapshot: what automatic compaction weighs (autoCompact). */
  private measureTail(records: readonly string[], groups: readonly Group[]): void {
    const snapshot = groups[0]?.start === 0 && groups[0].bodies[0]?.t === 'snapshot'
    this.snapshotChars = snapshot ? records[0].length : 0
    this.sinceCompaction = 0
    this.sinceChars = 0
    for (let g = snapshot ? 1 : 0; g < groups.length; g++) {
      this.sinceCompaction += groups[g].bodies.length
      for (let i = groups[g].start; i <= groups[g].end; i++) this.sinceChars += records[i].length
    }
  }

  /**
   * Adopts the store's blobs, several reads in flight (a disk answers each from a thread pool; in
   * order they would wait on each other). One that cannot be read is damage of that blob alone,
   * kept in the store.
   */
  private async loadBlobs(warnings: string[]): Promise<void> {
    const { blobs } = this.host
    const { store } = this
    const unreadable = (id: BlobId, error: unknown) => {
      this.corrupt.add(id)
      this.unreadable.push(id)
      this.unreadableOnOpen.push(id)
      warnings.push(`blob ${id} cannot be read (${(error as Error)?.message ?? String(error)}); it is kept in the store, and what needs it reads as EIO`)
    }
    if (store.readBlobSync && store.blobSize && store.blobTotals) {
      // On demand over a store that answers lookups: nothing is listed, a blob is asked of the
      // store's index when first looked up. What it lists as damage is read now, so open reports it.
      // A store that holds blobs may hold stale ones (a process that ended before deleting them).
      this.mayBeStale = store.blobTotals().blobs > 0
      blobs.readOnDemand((id) => store.readBlobSync!(id), this.options.cacheBytes ?? DEFAULT_CACHE_BYTES, new IndexedBlobs(store as Store & BlobIndex))
      for (const id of store.blobTotals().unreadable) {
        try {
          store.readBlobSync(id)
        } catch (error) {
          unreadable(id, error)
        }
      }
      return
    }
    const ids = await this.store.blobIds()
    this.mayBeStale = ids.length > 0
    if (store.readBlobSync) {
      // On demand: known by id and size, read when first needed and checked against its id then.
      // One the store lists without a size (damage it cannot read) is read now, so open reports it.
      const sizes = store.blobSizes ? await store.blobSizes() : undefined
      blobs.readOnDemand((id) => store.readBlobSync!(id), this.options.cacheBytes ?? DEFAULT_CACHE_BYTES)
      // Each blob listed with its size, without a lookup per blob; the ones listed without (damage) then.
      let unsized: readonly BlobId[] = ids
      if (sizes) {
        for (const [id, size] of sizes) blobs.known(id, size)
        const sized = sizes.length < ids.length ? new Set(sizes.map(([id]) => id)) : undefined
        unsized = sized ? ids.filter((id) => !sized.has(id)) : []
      }
      for (const id of unsized) {
        let size: number | undefined
        if (sizes) {
          try {
            size = store.readBlobSync(id)?.byteLength
          } catch (error) {
            unreadable(id, error)
            continue
          }
          if (size === undefined) continue
        }
        blobs.known(id, size)
      }
      return
    }
    let next = 0
    const lane = async () => {
      while (next < ids.length) {
        const id = ids[next++]
        let bytes: Uint8Array | undefined
        try {
          bytes = await this.store.getBlob(id)
        } catch (error) {
          unreadable(id, error)
          continue
        }
        if (bytes) {
          const checkable = madeHere(id)
          blobs.adopt(id, bytes, checkable)
          this.markDurable(id)
          if (checkable) this.unverified.push(id)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(BLOB_READS, ids.length) }, lane))
  }

  /**
   * Contents the live tree or the kept history (checkpoints' trees, operations' changes, as far as
   * they are decoded) refers to that the store does not hold: removed from it outside rewindfs, or
   * never written. Each is a lookup of what open listed (or of the store's index), no blob is read.
   * Damage of those contents, as a blob whose bytes do not match: kept in `corrupt`, listed by
   * verify() with the live paths that read as EIO, said once (integrity.ts); the journal proves its
   * state, so nothing is frozen (writing the content again stores it).
   *
   * A store loaded on open is looked over then, at once (lookups in memory, beside reading every
   * blob). One read on demand, whose open costs its index and not an entry per file, is looked over
   * by the background check instead, `budget` entries per slice with the event loop free between:
   * what it finds while the workspace changes is confirmed at the end against the trees as they are then.
   * A reader (another tab writes) may hold a journal from before a compaction that deleted what
   * the newer one no longer needs: one whose store moved on since it read the journal is not called
   * damaged (it reopens on the writer's commit).
   */
  private async findMissing(budget = Infinity): Promise<void> {
    const { blobs } = this.host
    this.lookedOver = true
    const absent = (id: BlobId) => !blobs.has(id) && !this.corrupt.has(id)
    const found = this.referenced(absent, budget)
    let next = found.next()
    while (!next.done) {
      await new Promise((resolve) => setTimeout(resolve, 0))
      next = found.next()
    }
    let ids = next.value
    if (ids.size === 0) return
    if (budget !== Infinity) {
      // Slices saw the trees change: only what the trees of now still refer to, and is still absent.
      const candidates = ids
      ids = runThrough(this.referenced((id) => candidates.has(id) && absent(id), Infinity))
      if (ids.size === 0) return
    }
    if (this.readOnly && !(await this.journalUnchanged())) return
    for (const id of ids) {
      this.missing.add(id)
      this.corrupt.add(id)
    }
  }

  /**
   * The blob ids the live tree and the kept history refer to for which `pick` holds; yields after
   * each `budget` entries walked (a directory several trees share is walked once).
   */
  private *referenced(pick: (id: BlobId) => boolean, budget: number): Generator<void, Set<BlobId>, void> {
    const { overlay, checkpoints, journal } = this.host
    const found = new Set<BlobId>()
    const content = (id: BlobId) => {
      if (pick(id)) found.add(id)
    }
    const dirs: DirNode[] = [overlay.root]
    for (const record of checkpoints) if (!rootPending(record)) dirs.push(record.root)
    for (const record of journal.records) {
      if (changesPending(record)) continue
      for (const change of record.changes) {
        if (change.kind === 'root') dirs.push(change.before, change.after)
        else if (change.kind === 'slot') {
          for (const node of [change.before, change.after]) {
            if (node?.type === 'file') content(node.blob)
            else if (node?.type === 'dir') dirs.push(node)
          }
        }
      }
    }
    const seen = new Set<DirNode>()
    let spent = 0
    while (dirs.length > 0) {
      if (spent >= budget) {
        yield
        spent = 0
      }
      const dir = dirs.pop()!
      if (seen.has(dir)) continue
      seen.add(dir)
      for (const [, node] of mapEntries<UpperNode>(dir.children)) {
        spent++
        if (node.type === 'file') content(node.blob)
        else if (node.type === 'dir' && !seen.has(node)) dirs.push(node)
      }
    }
    return found
  }

  /** What open read of the journal: its length, first and last records (a reader compares them with the store's now). */
  private journalRead: { readonly length: number; readonly first?: string; readonly last?: string; readonly torn?: string } = { length: 0 }

  private async journalUnchanged(): Promise<boolean> {
    const { records, torn } = await this.store.readJournal()
    const read = this.journalRead
    return records.length === read.length && records[0] === read.first && records.at(-1) === read.last && torn === read.torn
  }

  /** Whether the referenced contents were looked over (findMissing): on open, or by the background check. */
  private lookedOver = false

  /** Contents something refers to that the store did not hold on open (findMissing). */
  private readonly missing = new Set<BlobId>()

  /** Those of them still missing (not written again since): what verify() and the open report list. */
  missingContents(): BlobId[] {
    const { blobs } = this.host
    return [...this.missing].filter((id) => !blobs.has(id))
  }

  /** A report's `corrupt` as of now: contents found missing on open are listed while they still are, and no longer once written again. */
  currentCorrupt(corrupt: readonly string[]): string[] {
    if (this.missing.size === 0) return [...corrupt]
    return [...new Set([...corrupt.filter((id) => !this.missing.has(id)), ...this.missingContents()])]
  }

  /**
   * Metadata read back: undefined when absent; unreadable metadata (the store cannot read it, or
   * `check` refuses it) is damage, reported and left as it is. Returns 'damaged' then.
   */
  async readMeta<T>(key: string, check: (value: JsonValue) => T): Promise<T | undefined | 'damaged'> {
    let value: JsonValue | undefined
    try {
      value = await this.store.getMeta(key)
      return value === undefined ? undefined : check(value)
    } catch (error) {
      const code = (error as { code?: unknown })?.code
      // An unavailable store is not damage: the caller runs degraded, as for the journal.
      if (value === undefined && code !== 'ERR_REWINDFS_STORE_META' && code !== 'EIO') throw error
      this.damage.push({ part: 'meta', key, reason: ((error as Error)?.message ?? String(error)).replace(/^rewindfs: /, '') })
      return 'damaged'
    }
  }

  /**
   * Before any replay: refuses a store made over another lower source (ELOWERMISMATCH: its journal
   * must not be replayed over this one); remembers this one's identity in a new store.
   */
  async checkLower(lowerId: string | undefined): Promise<void> {
    if (lowerId === undefined) return
    const known = await this.readMeta(LOWER_KEY, (value) => {
      if (typeof value !== 'string') throw new Error('it is not the name of a lower source')
      return value
    })
    if (known === 'damaged') return
    if (known !== undefined && known !== lowerId) {
      throw Object.assign(new Error(`rewindfs: this ${this.store.kind} store belongs to the lower source '${String(known)}', not '${lowerId}'; open it over the same source or use a new store`), { code: 'ELOWERMISMATCH' })
    }
    if (known === undefined && !this.readOnly) await this.store.putMeta(LOWER_KEY, lowerId)
  }

  /** Replays whole group commits in order; stops at the first record that cannot be applied (replay.ts). */
  replay(groups: readonly Group[]): { operations: number; failed?: { group: number; body: number; error: string } } {
    return this.replayer.replay(groups)
  }

  /** Empties the host, so a replay can start over (a group that failed half-way, a repair). */
  resetHost(): void {
    this.replayer.resetHost()
  }

  /** Blobs loaded from the store whose bytes have not been checked against their ids yet. */
  private unverified: BlobId[] = []
  /** Blobs the store could not read on open (its own checksum failed, say): verify() reports them as corrupt too. */
  private unreadable: BlobId[] = []
  /** The same, as open said them in its warnings (integrity.ts says them no more). */
  readonly unreadableOnOpen: BlobId[] = []

  /**
   * Re-hashes the blobs loaded from the store, about `budget` bytes per slice with the event loop
   * free in between, so open never waits for it. A blob whose bytes no longer match its id is
   * dropped from memory (what needs it reads as EIO) and the checkpoints that need it are marked
   * broken; its bytes stay in the store (`corrupt`), for the user to inspect. On demand nothing
   * was loaded (every read back is checked): `stored` reads every blob the store holds and checks
   * it, keeping none in memory — what an explicit `ws.verify()` asks for.
   */
  async verify(budget = 4 * 1024 * 1024, options: { stored?: boolean } = {}): Promise<IntegrityReport> {
    const { blobs } = this.host
    const report: IntegrityReport = { verified: 0, corrupt: [], broken: [], damagedPaths: [] }
    // On demand, what the trees refer to is looked over here, in slices, once (loaded stores: on open).
    if (!this.lookedOver) await this.findMissing(MISSING_SLICE)
    const pending = options.stored && this.onDemand ? (await this.store.blobIds()).filter((id) => blobs.isDurable(id)) : this.unverified
    while (pending.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 0))
      for (let spent = 0; spent < budget && pending.length > 0; ) {
        const id = pending.pop()!
        if (!blobs.has(id)) continue // collected meanwhile, or found corrupt by a read
        spent += (options.stored ? blobs.checkStored(id) : (blobs.check(id), blobs.has(id) ? blobs.size(id) : 0)) + 64
        report.verified++
      }
    }
    report.corrupt = [...new Set([...this.unreadable.splice(0), ...this.found.splice(0), ...this.missingContents()])]
    if (report.corrupt.length > 0) report.broken = this.checkIntegrity()
    report.damagedPaths = this.pathsHolding(new Set(report.corrupt))
    return report
  }

  /**
   * Marks checkpoints whose content is missing from the store as broken; returns their ids. One
   * whose tree is still in the snapshot's parts is checked when it is decoded.
   */
  checkIntegrity(): string[] {
    const { checkpoints } = this.host
    const verdict = new Map<DirNode, boolean>()
    const broken: string[] = []
    for (const record of checkpoints) {
      if (rootPending(record)) continue
      if (!this.treeIntact(record.root, verdict)) {
        record.broken = true
        broken.push(record.id)
      }
    }
    return broken
  }

  /** The live tree's paths whose content is one of `ids` (integrity.ts). */
  pathsHolding(ids: ReadonlySet<BlobId>): string[] {
    return pathsHolding(this.host.overlay.root, ids)
  }

  /** Whether every content a tree needs is there (`verdict` remembers directories already seen). */
  private treeIntact(root: DirNode, verdict = new Map<DirNode, boolean>()): boolean {
    const { blobs } = this.host
    const intact = (dir: DirNode): boolean => {
      const known = verdict.get(dir)
      if (known !== undefined) return known
      let ok = true
      for (const [, node] of mapEntries<UpperNode>(dir.children)) {
        if ((node.type === 'file' && !blobs.has(node.blob)) || (node.type === 'dir' && !intact(node))) {
          ok = false
          break
        }
      }
      verdict.set(dir, ok)
      return ok
    }
    return intact(root)
  }
}

/** A damage in a sentence: where it is and why. */
export function describeDamage(damage: StoreDamage): string {
  if (damage.part === 'meta') return `metadata '${damage.key}' cannot be read: ${damage.reason}`
  return `journal record ${damage.record} at byte ${damage.offset} cannot be read: ${damage.reason}`
}

/** The error for a write to a store that is open read-only because it is damaged. */
export function damagedError(kind: string, damage: StoreDamage): Error {
  return Object.assign(new Error(`rewindfs: the ${kind} store is damaged (${describeDamage(damage)}); it is open read-only until repaired (ws.repair(), rewindfs repair)`), { code: 'EROFS' })
}

/** Records that may drop the last reference to a blob (see mayBeStale). */
const DROPS_REFERENCES = new Set<string>(['checkpoint-delete', 'undo', 'redo'])

/** A slot, meta or state change's record text (SerialChange); `record`: see slotText. */
function changeText(change: SlotChange | StateChange, blobs: { add(id: BlobId): unknown }, record?: OperationRecord): string {
  if (change.kind === 'slot') return slotText(change.path, change.after, blobs, record, change.inPlace)
  if (change.kind === 'meta') return `{"k":"meta","p":${JSON.stringify(change.path)},"a":${metaText(change.after)}}`
  return JSON.stringify({ k: 'state', key: change.key, a: change.after ?? null } satisfies SerialChange)
}

/**
 * A slot change's record text; a directory that an earlier slot of the same operation (`record`)
 * held was moved, and is referred to by that path.
 */
function slotText(path: string, after: UpperNode | undefined, blobs: { add(id: BlobId): unknown }, record?: OperationRecord, inPlace?: true): string {
  const from = record !== undefined && after?.type === 'dir' ? movedFrom(record, after) : undefined
  const a = after === undefined ? 'null' : after.type === 'whiteout' ? '"W"' : from !== undefined ? `{"t":"moved","p":${JSON.stringify(from)}}` : nodeText(after, blobs)
  // `"i":1`: changed in place, its directory not touched (a replay leaves the directory's times).
  return `{"k":"slot","p":${JSON.stringify(path)},"a":${a}${inPlace ? ',"i":1' : ''}}`
}

function movedFrom(record: OperationRecord, dir: DirNode): string | undefined {
  for (const c of record.changes) if (c.kind === 'slot' && c.before === dir) return c.path
  return undefined
}

/** How an operation's record text (RecordBody 'op', as bodyText writes it) begins: its identity's members follow, then its changes. */
const OP_PREFIX = '{"t":"op",'

/**
 * The persisted identity of an operation (everything but its changes) as JSON members, in the
 * order JSON.stringify writes the record's (RecordBody 'op'), written directly (numberText says why).
 */
function identityText(record: OperationRecord): string {
  return (
    `"id":${JSON.stringify(record.id)},"seq":${numberText(record.seq)},"type":${quotedOnce(record.type)},"paths":${JSON.stringify(record.paths)},"time":${numberText(record.time)},"session":${quotedOnce(record.session)}` +
    (record.turn !== undefined ? `,"turn":${numberText(record.turn)}` : '') +
    (record.group !== undefined ? `,"group":${JSON.stringify(record.group)}` : '') +
    (record.description !== undefined ? `,"description":${JSON.stringify(record.description)}` : '') +
    `,"strategy":${strategyText(record.strategy)}`
  )
}

/** JSON strings of operation types and session ids: a few of each, written with every record. */
const quoted = new Map<string, string>()

function quotedOnce(text: string): string {
  let json = quoted.get(text)
  if (json === undefined) {
    // Bounded: a long-lived process of many sessions must not keep every id it saw.
    if (quoted.size >= 256) quoted.clear()
    quoted.set(text, (json = JSON.stringify(text)))
  }
  return json
}

/** The last strategy written and its JSON: nearly every operation has the same one. */
let lastStrategy = { kind: '', reason: '', text: '' }

function strategyText({ kind, reason }: OperationRecord['strategy']): string {
  if (kind !== lastStrategy.kind || reason !== lastStrategy.reason) lastStrategy = { kind, reason, text: JSON.stringify({ kind, reason }) }
  return lastStrategy.text
}

function isEmptyRoot(root: DirNode): boolean {
  return root.lower === '/' && root.children.size === 0
}
