/**
 * Blob garbage collection across the sessions of a fleet, and the lock that makes it safe.
 *
 * Blobs are shared: a row in `blobs` may be referred to by any number of sessions (`blob_refs`). A
 * session adds references when it stores blobs (putBlobs) or is forked, and removes its own when
 * its compaction finds them unreachable (deleteBlobs) or the session is dropped. A blob may go
 * once no session refers to it, and never while a writer on another machine is about to.
 *
 * The argument. One advisory lock, GC_LOCK, taken per transaction:
 *  - every transaction that adds references takes it SHARED, before it reads or writes any blob
 *    row, and holds it until it commits (putBlobs takes a transaction-scoped lock with its BEGIN,
 *    which ends only then; a fork, whose repeatable-read snapshot is taken by its first statement, takes it before
 *    it begins and gives it up after it commits);
 *  - a blob row is deleted only by a statement that runs while its transaction holds it
 *    EXCLUSIVE, and that checks there is no reference in a snapshot taken after it got the lock
 *    (READ COMMITTED takes a new snapshot per statement; the lock is taken by an earlier one).
 * When the deleting statement's snapshot is taken, every transaction that could add a reference
 * has therefore either committed (its references are in the snapshot, so its blobs are kept) or
 * not yet got its shared lock (it gets it after the deletion committed, finds the row gone and
 * inserts it again: putBlobs always carries the bytes; a fork's snapshot, taken after its lock,
 * no longer shows the reference it would have copied). Removing references can only make a blob collectable, so it
 * needs no lock. Hence no blob that any committed or committing session refers to is deleted.
 * The foreign key from blob_refs to blobs is the backstop: were the argument wrong, a write would
 * fail loudly rather than leave a reference to nothing.
 *
 * Collection itself is two-phase: a pass marks blobs found unreferenced (`orphaned_at`, no lock),
 * and only blobs marked at least `graceMs` earlier are swept, under the exclusive lock, in small
 * batches, so writers wait at most one batch. A compaction's deleteBlobs sweeps the blobs it just
 * dereferenced at once (same lock, same check), or at its next chance when writers hold the lock,
 * so a fleet that only compacts does not grow. A deletion never waits long for the lock (see
 * LOCK_WAIT_MS): a waiting exclusive request holds up every writer's shared one behind it.
 */
import type { Sql } from './connection.js'
import type { Tables } from './schema.js'

/** The key of the advisory lock (shared: referencing blobs; exclusive: deleting them). */
export const GC_LOCK = "hashtextextended('rewindfs:blob-gc', 0)"

/**
 * How long a deletion waits for the exclusive lock at a time. Postgres queues a request behind a
 * waiting one it conflicts with, so while a deletion waits for EXCLUSIVE every writer's SHARED
 * request waits behind it: one session putting a large file (its transaction holds SHARED
 * throughout) and another's compaction sweeping would stall the commits of the whole fleet until
 * the large put ended. So a deletion waits this long at most (lock_timeout), gives way, and tries
 * again later: writers wait at most this long for it.
 */
export const LOCK_WAIT_MS = 100

/**
 * Deletes those of `ids` no session refers to, in one transaction holding the lock exclusively;
 * the NOT EXISTS is evaluated by a statement after the lock was granted. Resolves to the ids
 * deleted, or undefined when the lock was not had within `patienceMs` (attempts of LOCK_WAIT_MS,
 * writers getting their turn between them): nothing was deleted then.
 */
export async function sweep(sql: Sql, t: Tables, ids: readonly string[], patienceMs = 0): Promise<string[] | undefined> {
  if (ids.length === 0) return []
  const deadline = Date.now() + patienceMs
  for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
    try {
      const rows = await sql.transaction(
        (tx) =>
          tx.query<{ id: string }>(
            `DELETE FROM ${t.blobs} b WHERE b.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.blob = b.id) RETURNING b.id`,
            [ids],
          ),
        { prelude: `SET LOCAL lock_timeout = ${LOCK_WAIT_MS}; SELECT pg_advisory_xact_lock(${GC_LOCK})` },
      )
      return rows.map((row) => row.id)
    } catch (error) {
      // 55P03: lock_timeout ran out waiting for the lock (the transaction was rolled back).
      if ((error as { sqlState?: unknown }).sqlState !== '55P03') throw error
    }
    if (Date.now() + pause > deadline) return undefined
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
}

export interface CollectOptions {
  /** Sweep only blobs found unreferenced at least this long ago (default 60 000 ms; 0 sweeps what this pass marks). */
  graceMs?: number
  /** Blobs deleted per exclusive-lock transaction (default 500). */
  batch?: number
  /**
   * How long a batch keeps trying for the exclusive lock while writers hold it shared (default
   * 60 000 ms); past it the pass stops and reports the rest as `deferred`, for the next pass.
   */
  patienceMs?: number
}

export interface CollectReport {
  /** Blobs found unreferenced in this pass (newly marked). */
  marked: number
  /** Blobs marked earlier that had been referenced again (unmarked). */
  revived: number
  /** Blobs deleted, and their bytes. */
  deleted: number
  bytes: number
  /** Candidates left for a later pass: writers held the lock longer than `patienceMs`. */
  deferred: number
}

/** One collection pass over the whole fleet: mark, then sweep what stayed unreferenced for `graceMs`. */
export async function collect(sql: Sql, t: Tables, options: CollectOptions = {}): Promise<CollectReport> {
  const graceMs = options.graceMs ?? 60_000
  const batch = options.batch ?? 500
  const patienceMs = options.patienceMs ?? 60_000
  if (!(graceMs >= 0) || !Number.isInteger(batch) || batch < 1 || !(patienceMs >= 0)) {
    throw Object.assign(new RangeError(`rewindfs: collectGarbage needs graceMs ≥ 0, batch ≥ 1 and patienceMs ≥ 0; got ${graceMs}, ${batch}, ${patienceMs}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  // Phase one: marks (no advisory lock; a mark only makes a blob a candidate, the sweep checks
  // again). Rows a writer has locked (putBlobs storing them again) are skipped, never waited for:
  // the marks locked rows in the table's order and writers lock theirs in id order, so the two could
  // each wait for a row the other held (a deadlock, one of them failing: a writer's commit, EAGAIN).
  // A row skipped is being written, so referenced; the next pass looks at it again.
  const revived = await sql.query(
    `UPDATE ${t.blobs} b SET orphaned_at = NULL WHERE b.id IN (
       SELECT id FROM ${t.blobs} c WHERE c.orphaned_at IS NOT NULL AND EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.blob = c.id) FOR UPDATE SKIP LOCKED
     ) RETURNING 1`,
  )
  const marked = await sql.query(
    `UPDATE ${t.blobs} b SET orphaned_at = now() WHERE b.id IN (
       SELECT id FROM ${t.blobs} c WHERE c.orphaned_at IS NULL AND NOT EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.blob = c.id) FOR UPDATE SKIP LOCKED
     ) RETURNING 1`,
  )
  // Phase two: sweeps candidates old enough, a batch per exclusive transaction.
  const report: CollectReport = { marked: marked.length, revived: revived.length, deleted: 0, bytes: 0, deferred: 0 }
  let after = ''
  for (;;) {
    const candidates = await sql.query<{ id: string; size: string }>(
      `SELECT id, size FROM ${t.blobs} WHERE orphaned_at <= now() - make_interval(secs => $1::double precision / 1000) AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3`,
      [graceMs, after, batch],
    )
    if (candidates.length === 0) break
    after = candidates[candidates.length - 1].id
    const sizes = new Map(candidates.map((c) => [c.id, Number(c.size)]))
    const deleted = await sweep(sql, t, [...sizes.keys()], patienceMs)
    if (deleted === undefined) {
      const [rest] = await sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${t.blobs} WHERE orphaned_at <= now() - make_interval(secs => $1::double precision / 1000) AND id COLLATE "C" >= $2`,
        [graceMs, candidates[0].id],
      )
      report.deferred = Number(rest.n)
      break
    }
    report.deleted += deleted.length
    for (const id of deleted) report.bytes += sizes.get(id) ?? 0
    if (candidates.length < batch) break
  }
  return report
}
