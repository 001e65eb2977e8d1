/**
 * The fleet: every session in one schema, seen and managed together. Lists sessions with their
 * last activity, checkpoints and size; forks a session (on any machine: a fork copies the journal,
 * metadata and blob references in one snapshot, never the blobs, which stay shared); drops one;
 * collects blobs no session refers to (gc.ts); and answers who flushed what where, from the
 * sessions' flush ledgers.
 */
import { type Connection, serialized } from './connection.js'
import { storeError } from './errors.js'
import { GC_LOCK, type CollectOptions, type CollectReport, collect, sweep } from './gc.js'
import { checkLayout, ensureSchema, type Tables } from './schema.js'
import { checkSession, pgliteWriting, sessionLock } from './store.js'

export interface SessionInfo {
  readonly session: string
  readonly createdAt: Date
  /** The last commit to its journal or metadata. */
  readonly lastActivity: Date
  readonly forkedFrom?: string
  /** The checkpoint it was forked at, when one was named. */
  readonly forkCheckpoint?: string
  /** Journal records and their bytes. */
  readonly records: number
  readonly journalBytes: number
  /** Blobs it refers to and their bytes (a blob shared with other sessions counts for each). */
  readonly blobs: number
  readonly blobBytes: number
  /** Its checkpoints (guards, the ones a restore makes for undoing it, not counted) and the newest one's name. */
  readonly checkpoints: number
  readonly lastCheckpoint?: string
  /** Whether a writer holds it now. */
  readonly writing: boolean
}

export interface CheckpointInfo {
  readonly id: string
  readonly name: string
  readonly kind: string
  readonly createdAt: Date
}

/** One path of a flush target as one session's ledger has it. */
export interface FlushRecord {
  readonly session: string
  readonly target: string
  readonly path: string
  /** What was written ('absent' for a deletion), the version the target reported, who wrote it and when. */
  readonly sig: string
  readonly version: string | null
  readonly by: string | null
  readonly at: Date | null
}

export interface FleetStorage {
  readonly sessions: number
  /** Distinct blobs stored and their bytes, and what the sessions' references add up to without sharing. */
  readonly blobs: number
  readonly blobBytes: number
  readonly referencedBytes: number
  readonly journalBytes: number
  /** What the tables take on disk, indexes and TOAST included. */
  readonly diskBytes: number
}

export interface Fleet {
  /** Every session, most recently active first. */
  sessions(): Promise<SessionInfo[]>
  /** A session's checkpoints, oldest first; ENOENT if there is no such session. */
  checkpoints(session: string): Promise<CheckpointInfo[]>
  /**
   * Makes session `to` a copy of `from` as it is committed now: its journal, metadata, checkpoints
   * and flush ledgers, and references to its blobs (no bytes are copied). `checkpoint` (a name or
   * id) is checked to exist and recorded: open the fork and `ws.restore(checkpoint)` to stand on it.
   * EEXIST if `to` exists, ENOENT if `from` or the checkpoint does not.
   */
  fork(options: { from: string; to: string; checkpoint?: string }): Promise<void>
  /** Deletes a session and every row of it; the blobs only it referred to go with it. EBUSY while it is written. */
  drop(session: string): Promise<void>
  collectGarbage(options?: CollectOptions): Promise<CollectReport>
  /** The flush ledgers of every session, optionally for one target or path, newest first. */
  flushes(options?: { target?: string; path?: string }): Promise<FlushRecord[]>
  storage(): Promise<FleetStorage>
  /**
   * Runs `body` while holding the fleet-wide lock `name`: one holder at a time across every machine
   * (e.g. one flush into a shared directory at a time, so a conflict check and the write it guards
   * are not interleaved with another machine's). Waits up to `timeoutMs` (default 60 000) for it,
   * then EBUSY. The lock dies with this fleet's connection: a machine that crashes frees it.
   */
  exclusive<T>(name: string, body: () => Promise<T>, options?: { timeoutMs?: number }): Promise<T>
  close(): Promise<void>
}

/** In this process, holders of each named lock per connection object (a connection's advisory locks are re-entrant). */
const holders = new WeakMap<object, Map<string, Promise<unknown>>>()

export class FleetView implements Fleet {
  private constructor(
    private readonly connection: Connection,
    private readonly t: Tables,
    private readonly schemaName: string,
  ) {}

  /** `create: false`: the tables must be there already (ENOENT, nothing made, when they are not). */
  static async open(connection: Connection, t: Tables, schemaName: string, create = true): Promise<FleetView> {
    try {
      if (create) await ensureSchema(connection, t, connection.where)
      else if ((await checkLayout(connection, t, connection.where)) === undefined) {
        throw storeError('ENOENT', 'open', connection.where, `there are no rewindfs tables in ${connection.where} (schema ${schemaName}): nothing was stored there yet, and nothing was made`)
      }
    } catch (error) {
      await connection.close()
      throw error
    }
    // Its calls may be made at once: each statement and transaction takes its turn on the one connection.
    return new FleetView(serialized(connection), t, schemaName)
  }

  /** Whether an advisory lock on this session's key is held by any connection to this database (pg_locks lists every database's). */
  private writing(session: string): string {
    return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    AND ((l.classid::bigint << 32) | l.objid::bigint) = ${this.lockOf(session)})`
  }

  /** The SQL of a session's writer lock key, `session` an SQL expression (store.ts: sessionLock). */
  private lockOf(session: string): string {
    const { prefix, seed } = sessionLock(this.schemaName)
    return `hashtextextended('${prefix.replaceAll("'", "''")}' || ${session}, ${seed})`
  }

  async sessions(): Promise<SessionInfo[]> {
    const { t } = this
    const rows = await this.connection.query<{
      id: string
      created_at: Date
      updated_at: Date
      forked_from: string | null
      fork_checkpoint: string | null
      records: string
      journal_bytes: string
      blobs: string
      blob_bytes: string
      checkpoints: string
      last_checkpoint: string | null
      writing: boolean
    }>(
      `SELECT s.id, s.created_at, s.updated_at, s.forked_from, s.fork_checkpoint, s.records, s.journal_bytes,
              (SELECT count(*) FROM ${t.refs} r WHERE r.session = s.id) AS blobs,
              (SELECT coalesce(sum(b.size), 0) FROM ${t.refs} r JOIN ${t.blobs} b ON b.id = r.blob WHERE r.session = s.id) AS blob_bytes,
              (SELECT count(*) FROM ${t.checkpoints} c WHERE c.session = s.id AND c.kind <> 'guard') AS checkpoints,
              (SELECT c.name FROM ${t.checkpoints} c WHERE c.session = s.id AND c.kind <> 'guard' ORDER BY c.created_at DESC LIMIT 1) AS last_checkpoint,
              ${this.writing('s.id')} AS writing
         FROM ${t.sessions} s
        ORDER BY s.updated_at DESC, s.id`,
    )
    return rows.map((row) => ({
      session: row.id,
      createdAt: new Date(row.created_at),
      lastActivity: new Date(row.updated_at),
      ...(row.forked_from !== null ? { forkedFrom: row.forked_from } : {}),
      ...(row.fork_checkpoint !== null ? { forkCheckpoint: row.fork_checkpoint } : {}),
      records: Number(row.records),
      journalBytes: Number(row.journal_bytes),
      blobs: Number(row.blobs),
      blobBytes: Number(row.blob_bytes),
      checkpoints: Number(row.checkpoints),
      ...(row.last_checkpoint !== null ? { lastCheckpoint: row.last_checkpoint } : {}),
      writing: row.writing,
    }))
  }

  async checkpoints(session: string): Promise<CheckpointInfo[]> {
    checkSession(session)
    // One statement: the session's row (a name that is not a session is ENOENT, not an empty list) and its checkpoints.
    const rows = await this.connection.query<{ id: string | null; name: string; kind: string; created_at: Date }>(
      `SELECT c.id, c.name, c.kind, c.created_at FROM ${this.t.sessions} s LEFT JOIN ${this.t.checkpoints} c ON c.session = s.id
        WHERE s.id = $1 ORDER BY c.created_at, c.id`,
      [session],
    )
    if (rows.length === 0) throw storeError('ENOENT', 'checkpoints', session, `there is no session '${session}'`)
    return rows.flatMap((row) => (row.id === null ? [] : [{ id: row.id, name: row.name, kind: row.kind, createdAt: new Date(row.created_at) }]))
  }

  async fork(options: { from: string; to: string; checkpoint?: string }): Promise<void> {
    const { t, connection } = this
    const from = checkSession(options?.from)
    const to = checkSession(options?.to)
    const checkpoint = options.checkpoint
    if (checkpoint !== undefined && (typeof checkpoint !== 'string' || checkpoint === '')) {
      throw Object.assign(new TypeError('rewindfs: fork `checkpoint` must be a checkpoint name or id'), { code: 'ERR_INVALID_ARG_VALUE' })
    }
    // The lock (shared, as every writer that adds blob references takes it: gc.ts) is taken before
    // the transaction, so the snapshot the copy reads is taken after it was granted.
    await connection.query(`SELECT pg_advisory_lock_shared(${GC_LOCK})`)
    try {
      await connection.transaction(
        async (tx) => {
          const source = await tx.query(`SELECT 1 FROM ${t.sessions} WHERE id = $1`, [from])
          if (source.length === 0) throw storeError('ENOENT', 'fork', from, `there is no session '${from}' to fork`)
          if ((await tx.query(`SELECT 1 FROM ${t.sessions} WHERE id = $1`, [to])).length > 0) {
            throw storeError('EEXIST', 'fork', to, `the session '${to}' exists already; fork to a new name`)
          }
          let named: string | undefined
          if (checkpoint !== undefined) {
            const [found] = await tx.query<{ name: string }>(
              `SELECT name FROM ${t.checkpoints} WHERE session = $1 AND (name = $2 OR id = $2) ORDER BY (name = $2) DESC LIMIT 1`,
              [from, checkpoint],
            )
            if (!found) throw storeError('ENOENT', 'fork', from, `the session '${from}' has no checkpoint '${checkpoint}'`)
            named = found.name
          }
          await tx.query(
            `INSERT INTO ${t.sessions} (id, forked_from, fork_checkpoint, next_seq, records, journal_bytes)
             SELECT $2, id, $3, next_seq, records, journal_bytes FROM ${t.sessions} WHERE id = $1`,
            [from, to, named ?? null],
          )
          await tx.query(`INSERT INTO ${t.journal} (session, seq, record) SELECT $2, seq, record FROM ${t.journal} WHERE session = $1`, [from, to])
          await tx.query(`INSERT INTO ${t.meta} (session, key, value) SELECT $2, key, value FROM ${t.meta} WHERE session = $1`, [from, to])
          await tx.query(`INSERT INTO ${t.refs} (session, blob) SELECT $2, blob FROM ${t.refs} WHERE session = $1`, [from, to])
          await tx.query(`INSERT INTO ${t.checkpoints} (session, id, name, kind, created_at) SELECT $2, id, name, kind, created_at FROM ${t.checkpoints} WHERE session = $1`, [from, to])
          await tx.query(
            `INSERT INTO ${t.flushes} (session, target, path, sig, version, flushed_by, flushed_at)
             SELECT $2, target, path, sig, version, flushed_by, flushed_at FROM ${t.flushes} WHERE session = $1`,
            [from, to],
          )
        },
        { isolation: 'repeatable read' },
      )
    } catch (error) {
      // Made meanwhile by another fork or a writer's open: its snapshot did not show it, its insert did.
      if ((error as { sqlState?: unknown }).sqlState === '23505') {
        throw storeError('EEXIST', 'fork', to, `the session '${to}' exists already (made while this fork ran); fork to a new name`, error)
      }
      throw error
    } finally {
      if (!connection.lost) await connection.query(`SELECT pg_advisory_unlock_shared(${GC_LOCK})`).catch(() => undefined)
    }
  }

  async drop(session: string): Promise<void> {
    const { t, connection } = this
    checkSession(session)
    // PGlite: one backend for every store on the instance, where the advisory lock is re-entrant and would be granted.
    if (connection.backend === 'pglite' && pgliteWriting(connection.instance, sessionLock(this.schemaName).prefix + session)) {
      throw storeError('EBUSY', 'drop', session, `the session '${session}' is being written; close its workspace first`)
    }
    const [lock] = await connection.query<{ taken: boolean }>(`SELECT pg_try_advisory_lock(${this.lockOf('$1')}) AS taken`, [session])
    if (!lock.taken) throw storeError('EBUSY', 'drop', session, `the session '${session}' is being written; close its workspace first`)
    try {
      const blobs = await connection.transaction(async (tx) => {
        const gone = await tx.query<{ blob: string }>(`DELETE FROM ${t.refs} WHERE session = $1 RETURNING blob`, [session])
        const rows = await tx.query(`DELETE FROM ${t.sessions} WHERE id = $1 RETURNING 1`, [session])
        if (rows.length === 0) throw storeError('ENOENT', 'drop', session, `there is no session '${session}'`)
        return gone.map((row) => row.blob)
      })
      // The session is gone; its blobs no one else refers to go too, unless writers hold the lock
      // past the patience (collectGarbage finds them then): never a failed drop for that.
      await sweep(connection, t, blobs, 10_000).catch(() => undefined)
    } finally {
      if (!connection.lost) await connection.query(`SELECT pg_advisory_unlock(${this.lockOf('$1')})`, [session]).catch(() => undefined)
    }
  }

  collectGarbage(options?: CollectOptions): Promise<CollectReport> {
    return collect(this.connection, this.t, options)
  }

  async flushes(options: { target?: string; path?: string } = {}): Promise<FlushRecord[]> {
    const rows = await this.connection.query<{ session: string; target: string; path: string; sig: string; version: string | null; flushed_by: string | null; flushed_at: Date | null }>(
      `SELECT session, target, path, sig, version, flushed_by, flushed_at FROM ${this.t.flushes}
        WHERE ($1::text IS NULL OR target = $1) AND ($2::text IS NULL OR path = $2)
        ORDER BY flushed_at DESC NULLS LAST, session, target, path`,
      [options.target ?? null, options.path ?? null],
    )
    return rows.map((row) => ({
      session: row.session,
      target: row.target,
      path: row.path,
      sig: row.sig,
      version: row.version,
      by: row.flushed_by,
      at: row.flushed_at === null ? null : new Date(row.flushed_at),
    }))
  }

  async storage(): Promise<FleetStorage> {
    const { t } = this
    const [row] = await this.connection.query<{ sessions: string; blobs: string; blob_bytes: string; referenced: string; journal: string; disk: string }>(
      `SELECT (SELECT count(*) FROM ${t.sessions}) AS sessions,
              (SELECT count(*) FROM ${t.blobs}) AS blobs,
              (SELECT coalesce(sum(size), 0) FROM ${t.blobs}) AS blob_bytes,
              (SELECT coalesce(sum(b.size), 0) FROM ${t.refs} r JOIN ${t.blobs} b ON b.id = r.blob) AS referenced,
              (SELECT coalesce(sum(journal_bytes), 0) FROM ${t.sessions}) AS journal,
              (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relkind = 'r') AS disk`,
      [this.schemaName],
    )
    return {
      sessions: Number(row.sessions),
      blobs: Number(row.blobs),
      blobBytes: Number(row.blob_bytes),
      referencedBytes: Number(row.referenced),
      journalBytes: Number(row.journal),
      diskBytes: Number(row.disk),
    }
  }

  async exclusive<T>(name: string, body: () => Promise<T>, options: { timeoutMs?: number } = {}): Promise<T> {
    if (typeof name !== 'string' || name === '') throw Object.assign(new TypeError('rewindfs: a lock name is a non-empty string'), { code: 'ERR_INVALID_ARG_VALUE' })
    if (typeof body !== 'function') throw Object.assign(new TypeError('rewindfs: exclusive(name, body) needs a function'), { code: 'ERR_INVALID_ARG_TYPE' })
    const timeoutMs = options.timeoutMs ?? 60_000
    const key = `rewindfs:lock:${this.schemaName}/${name}`
    // First in line in this process (the server's lock cannot tell two callers on one connection apart)…
    let local = holders.get(this.connection.instance)
    if (!local) holders.set(this.connection.instance, (local = new Map()))
    const before = local.get(key) ?? Promise.resolve()
    let done!: () => void
    const mine = new Promise<void>((resolve) => (done = resolve))
    const chain = before.then(() => mine)
    local.set(key, chain)
    try {
      await before
      // …then across the fleet: polled, so the connection is never blocked and the wait can end.
      const deadline = Date.now() + timeoutMs
      for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
        const [lock] = await this.connection.query<{ taken: boolean }>(`SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS taken`, [key])
        if (lock.taken) break
        if (Date.now() + wait > deadline) throw storeError('EBUSY', 'lock', name, `the fleet lock '${name}' is still held by another machine after ${timeoutMs} ms`)
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
      try {
        return await body()
      } finally {
        if (!this.connection.lost) await this.connection.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [key]).catch(() => undefined)
      }
    } finally {
      done()
      if (local.get(key) === chain) local.delete(key)
    }
  }

  close(): Promise<void> {
    return this.connection.close()
  }
}
