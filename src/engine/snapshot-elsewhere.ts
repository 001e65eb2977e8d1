/**
 * A compaction's snapshot encoded off the calling thread. The snapshot of a journal's first
 * records is what a reopen replays from them, so another thread can make it from the store alone:
 * it opens the store read-only, replays that prefix into a replica and encodes the replica, while
 * the workspace goes on committing; the workspace then writes it with what it committed since, as
 * it writes a compaction it encoded in its own slices. The calling thread pays the write, not the
 * encoding (the live state's CPU and fresh memory at every compaction), as PostgreSQL's
 * checkpointer runs beside its backends. A replay copies up the lower directories the journal's
 * writes went into (a write records its file, not the parents it copied up), so the replica's lower
 * source answers with the stats the workspace's lower source gives, and names the directories it
 * was not given: the workspace asks again with them (Durability's compaction does).
 */
import { type BlobId, BlobStore } from '../blob/store.js'
import { FIRST_UPPER_INO } from '../layer/inodes.js'
import type { LowerSource, LowerStat } from '../lower/source.js'
import { Overlay } from '../overlay.js'
import { type CheckpointRecord, Durability, type DurableHost } from './durability.js'
import { Journal } from './journal.js'
import { type JsonValue, SessionState } from './state.js'
import type { JournalRead, Store } from './store.js'

/** What a replica is made of: the journal's prefix, and what the workspace knows that the journal does not say. */
export interface SnapshotRequest {
  /** Whole records of the store's journal, ending with a commit marker: the state at the compaction's moment. */
  readonly records: number
  /** The record before the last commit marker among them, as the workspace framed it (when it knows it): the replica checks it read that journal. */
  readonly last?: string
  readonly session: string
  /** Operations the journal keeps (retention.operations): a replay drops older ones as the workspace did. */
  readonly keep: number
  /** The workspace's lower source: its kind, id, and the stat of each directory its replay may copy up ('/' included; null: not there). */
  readonly lower: { readonly kind: string; readonly id: string | undefined; readonly stats: readonly (readonly [string, LowerStat | null])[] }
}

/** A snapshot made elsewhere, as the workspace writes it. */
export interface ElsewhereSnapshot {
  readonly kind: 'snapshot'
  /** The snapshot's record (framed, numbered 0), in pieces. */
  readonly record: string[]
  /** The history parts it wrote: blobs the store does not hold yet. */
  readonly parts: [BlobId, Uint8Array][]
  /** Every blob it needs besides the parts it lists: the live tree's contents and what its new parts refer to. */
  readonly needs: BlobId[]
  /** The parts it lists (new and reused), and the blobs each new one refers to. */
  readonly partIds: BlobId[]
  readonly lists: [BlobId, BlobId[]][]
  /** Parts the snapshot before it listed and it does not: stale once it is written. */
  readonly dropped: BlobId[]
}

/** The answer of a replica that met lower directories it was given no stat for: asked again with them. */
export interface StatsWanted {
  readonly kind: 'stats'
  readonly paths: string[]
}

/** Encodes snapshots elsewhere (a Node worker: adapters/node-fs/snapshot-worker.ts); a store passes it to its durable journal. */
export interface SnapshotEncoder {
  /**
   * Characters of the last snapshot and the journal since it from which a compaction is encoded
   * elsewhere: a small one is encoded here in slices (a thread's round trip costs more).
   */
  readonly fromChars: number
  encode(request: SnapshotRequest): Promise<ElsewhereSnapshot | StatsWanted>
  close(): void
}

/** Durable contents a replica keeps in memory: it reads none but the history parts its replay decodes. */
const REPLICA_CACHE_BYTES = 16 * 1024 * 1024

/** Stands for a directory the replica was not given (its snapshot is not used: the workspace asks again). */
const UNKNOWN_DIR: LowerStat = { type: 'dir', mode: 0o40755, size: 0, mtimeMs: 0, version: '' }

function notHere(what: string): never {
  throw new Error(`rewindfs: a snapshot replica reads no lower ${what}`)
}

/**
 * The snapshot of the first `request.records` records of `store`'s journal (a store opened
 * read-only: the writer goes on appending after them), or the lower directories its replay needed
 * and was not given. Refuses a prefix that is not there or does not replay whole.
 */
export async function snapshotOfStore(store: Store, request: SnapshotRequest): Promise<ElsewhereSnapshot | StatsWanted> {
  const stats = new Map<string, LowerStat | null>(request.lower.stats)
  const unknown = new Set<string>()
  const lower: LowerSource = {
    kind: request.lower.kind,
    ...(request.lower.id !== undefined ? { id: request.lower.id } : {}),
    stat(path) {
      const stat = stats.get(path)
      if (stat !== undefined) return stat ?? undefined
      unknown.add(path)
      return UNKNOWN_DIR
    },
    readdir: () => notHere('listing'),
    readFile: () => notHere('content'),
    readlink: () => notHere('link'),
  }
  const blobs = new BlobStore()
  const overlay = new Overlay(lower, blobs, { next: FIRST_UPPER_INO })
  const state = new SessionState()
  const journal = new Journal(overlay, request.session, 'replica', request.keep, state)
  const checkpoints: CheckpointRecord[] = []
  let resume: JsonValue | undefined
  let seq = 0
  const host: DurableHost = {
    overlay,
    state,
    journal,
    blobs,
    checkpoints,
    setResume: (point) => {
      resume = point
    },
    getResume: () => resume,
    checkpointSeq: () => seq,
    seenCheckpointSeq: (next) => {
      seq = Math.max(seq, next)
    },
  }
  const prefix = new Proxy(store, {
    get(target, key) {
      if (key === 'readJournal') return () => prefixOf(target, request.records, request.last)
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  const durability = new Durability(host, prefix, { cacheBytes: REPLICA_CACHE_BYTES })
  const report = await durability.load()
  if (report.damage && report.damage.length > 0) throw new Error(`rewindfs: the journal's first ${request.records} records do not replay: ${durability.describe(report.damage[0])}`)
  if (unknown.size > 0) return { kind: 'stats', paths: [...unknown] }
  return { kind: 'snapshot', ...durability.encodeForWriter() }
}

/** The journal's first `records` records, refused unless they are the ones the workspace wrote (a journal replaced since is not). */
async function prefixOf(store: Store, records: number, last: string | undefined): Promise<JournalRead> {
  const read = await store.readJournal()
  if (read.records.length < records) throw new Error(`rewindfs: the store's journal holds ${read.records.length} records, not the ${records} a snapshot was asked of`)
  if (last !== undefined && read.records[records - 2] !== last) throw new Error(`rewindfs: the store's journal is not the one a snapshot was asked of (record ${records - 2} differs)`)
  return { records: read.records.slice(0, records) }
}
