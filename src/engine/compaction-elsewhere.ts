/**
 * The writer's side of a compaction encoded elsewhere (snapshot-elsewhere.ts is the replica's):
 * the request, given the stats of the lower directories a replay copies up and asked again with
 * those a replica names, and the ledger of the parts its snapshot lists, which the history here
 * does not know but deleting stale blobs must keep, as it keeps the history's.
 */
import type { BlobId } from '../blob/store.js'
import type { LowerSource, LowerStat } from '../lower/source.js'
import type { ElsewhereSnapshot, SnapshotEncoder, SnapshotRequest } from './snapshot-elsewhere.js'

/** Rounds of a replica asking for lower directories it was not given before the compaction is made here instead. */
const STAT_ROUNDS = 3

/**
 * The replica's snapshot for `request`, with the stats `lower` gives now (what a reopen now would
 * copy up) of '/' and each directory in `dirs`, which grows by those a replica names; at most
 * STAT_ROUNDS rounds.
 */
export async function snapshotElsewhere(encoder: SnapshotEncoder, request: Omit<SnapshotRequest, 'lower'>, lower: LowerSource, dirs: Set<string>): Promise<ElsewhereSnapshot> {
  for (let round = 0; round < STAT_ROUNDS; round++) {
    const stats: [string, LowerStat | null][] = []
    for (const path of ['/', ...dirs]) {
      try {
        stats.push([path, lower.stat(path) ?? null])
      } catch {
        // Left out: a replay that needs it asks for it again, and after STAT_ROUNDS the compaction is made here.
      }
    }
    const made = await encoder.encode({ ...request, lower: { kind: lower.kind, id: lower.id, stats } })
    if (made.kind === 'snapshot') return made
    for (const path of made.paths) dirs.add(path)
  }
  throw new Error(`rewindfs: a snapshot replica still needed lower directories after ${STAT_ROUNDS} rounds`)
}

/** The parts of the last snapshot made elsewhere that was written, and the blobs each refers to where known. */
export class PartLedger {
  private parts = new Map<BlobId, readonly BlobId[] | undefined>()

  /** A snapshot made elsewhere is written: its parts, with the lists it gave and those known from the one before. */
  written(made: ElsewhereSnapshot): void {
    const lists = new Map<BlobId, readonly BlobId[]>(made.lists)
    const parts = new Map<BlobId, readonly BlobId[] | undefined>()
    for (const id of made.partIds) parts.set(id, lists.get(id) ?? this.parts.get(id))
    this.parts = parts
  }

  /** A snapshot made here is written: its parts are the history's. */
  clear(): void {
    this.parts = new Map()
  }

  /**
   * The parts and what they refer to; not complete while a part's list is unknown, here and to
   * `listOf` (a part reused from a snapshot the history here decoded, listed in the background).
   */
  blobs(listOf: (id: BlobId) => readonly BlobId[] | undefined): { ids: BlobId[]; complete: boolean } {
    const ids: BlobId[] = []
    let complete = true
    for (const [id, list] of this.parts) {
      ids.push(id)
      const known = list ?? listOf(id)
      if (known === undefined) complete = false
      else for (const blob of known) ids.push(blob)
    }
    return { ids, complete }
  }

  /** Whether a snapshot made elsewhere is the last written. */
  get active(): boolean {
    return this.parts.size > 0
  }
}
