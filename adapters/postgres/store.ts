/**
 * The durable Store of one session in PostgreSQL (a server through `pg`, or PGlite), over the
 * fleet's shared tables (schema.ts). Every call is one statement or one transaction on the store's
 * own connection, in the order made: a group commit's append is a single statement, so it is all
 * there or not at all and an append never tears.
 *
 * One writer per session across machines: the writer holds a session-level advisory lock on the
 * session (it dies with the connection, so a crashed machine frees its sessions at once) and
 * stamps the session row with a fencing token that every write checks, so a writer that lost its
 * connection can never write over one that took the session over since. A second opener gets
 * EBUSY, or opens read-only when asked (`readOnly: true`) and hears the writer's commits through
 * LISTEN/NOTIFY (`onChange`).
 *
 * History is preloaded: a network store cannot answer a synchronous read, so opening a workspace
 * reads every blob the session refers to (in batches: getBlob reads ahead in blobIds' order).
 *
 * A lost connection (the server restarted, the network failed) fails the call in flight and every
 * later one with ECONNRESET: the workspace goes degraded (ws.status.degraded) and keeps working in
 * memory, and reconnects in place (`reconnect()`, engine/reconnect.ts): a new connection, the
 * session's lock taken again and its fencing token checked, so a writer that took the session over
 * meanwhile is never written over. `reopen()` gives a new store on a new connection instead (waiting
 * for the server to come back), for a workspace opened anew.
 */
import { type BlobId, FsError, type JournalRead, type JsonValue, type Store, type StoreChange, type StoreItem, durableJournal, keptName } from 'rewindfs/adapter-kit'
import * as z from 'zod/mini'
import type { Connection, Sql } from './connection.js'
import { storeError } from './errors.js'
import { GC_LOCK, sweep } from './gc.js'
import { FLUSH_STATE_KEY, checkpointChanges, flushLedgers, type CheckpointChanges, type CheckpointRow } from './records.js'
import { CHUNK, type Tables, checkLayout, ensureSchema } from './schema.js'

export interface SessionStoreOptions {
  /** The session's name (any non-empty text up to 200 characters). */
  readonly session: string
  /** The schema holding the fleet's tables (default 'rewindfs'). */
  readonly schema?: string
  /**
   * true: open only to read (no lock; every mutating call rejects with EROFS). Otherwise the
   * session's writer, or EBUSY when another connection holds it.
   */
  readonly readOnly?: boolean
  /**
   * false: the session must be there already (a command that acts on what it holds). It is looked
   * for first, read-only, and when it or the schema is missing the open fails with ENOENT having
   * made nothing: no schema, no tables, no session row. Default true: whatever is missing is made.
   */
  readonly create?: boolean
}

export interface PostgresStore extends Store {
  readonly kind: 'postgres' | 'pglite'
  readonly session: string
  readonly schema: string
  readonly readOnly: boolean
  /** Why the connection is gone, once it is (every call then rejects with it). */
  readonly lost: Error | undefined
  /** Read-only instances: `listener` runs each time the writer commits to the journal or metadata. Returns the unsubscribe. */
  onChange(listener: (change: StoreChange) => void): () => void
  /** `listener` runs once if the connection is lost. Returns the unsubscribe. */
  onLost(listener: (error: Error) => void): () => void
  /** A new store on a new connection with the same options (the server may be restarting: it retries for `timeoutMs`, default 30 s). */
  reopen(options?: { timeoutMs?: number }): Promise<PostgresStore>
  /**
   * This store, its connection lost (or a write failed), made the session's writer again: a new
   * connection, the session's lock taken again, the fencing token checked to be still this
   * writer's. Resolves with the number of records in the session's journal. Rejects with EBUSY when
   * another writer took the session over (it holds the lock, or stamped its token since), ENOENT
   * when the session was dropped, EAGAIN while the server still holds the lock for this writer's
   * lost connection, and with the connection's error while the server is away. The workspace calls
   * it by itself (engine/reconnect.ts). A reader reconnects by itself (no lock to take: a new
   * connection that LISTENs again, then one `commit` change for what it may have missed meanwhile).
   */
  reconnect(): Promise<{ readonly records: number }>
  close(): Promise<void>
}

const MAX_SESSION = 200
/** Blobs getBlob reads along with the one asked for, in blobIds' order, and at most this many bytes of them. */
const READ_AHEAD = 256
const READ_AHEAD_BYTES = 16 * 1024 * 1024
/** A chunked blob is read this many chunks (of 1 MiB) per query: its peak is its size and this much more. */
export const CHUNKS_PER_READ = 4
/** The time stamp in a kept name, as keptName makes it: `20250101T120000123Z`. */
const keptStamp = () => new Date().toISOString().replace(/[-:.]/g, '')
/** Rows per multi-row insert, and bytes per statement. */
const ROWS_PER_INSERT = 500
const BYTES_PER_INSERT = 16 * 1024 * 1024

const jsonSchema: z.ZodMiniType<JsonValue> = z.union([
  z.null(),
  z.boolean(),
  z.number(),
  z.string(),
  z.array(z.lazy(() => jsonSchema)),
  z.record(z.string(), z.lazy(() => jsonSchema)),
])

/** A UTF-16 surrogate not in a pair: the server stores it as U+FFFD, so two such names would be one session. */
const LONE_SURROGATE = /\p{Cs}/u

/** Characters (code points) in `text`: an emoji is one, though two UTF-16 units. A text of more than twice `most` units is over it without counting. */
function characters(text: string, most: number): number {
  if (text.length > 2 * most) return text.length
  let count = 0
  for (const _ of text) count++
  return count
}

export function checkSession(session: unknown): string {
  if (typeof session !== 'string' || session === '' || characters(session, MAX_SESSION) > MAX_SESSION || session.includes('\0') || LONE_SURROGATE.test(session)) {
    throw Object.assign(new TypeError(`rewindfs: a session name is 1 to ${MAX_SESSION} characters of well-formed Unicode without NUL; got ${JSON.stringify(session)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  return session
}

/**
 * What a session's writer lock is hashed from: `schema/session`, hashed with seed 0, as ever;
 * but a schema holding '/' would make 'a' + 'b/c' and 'a/b' + 'c' one lock (a false EBUSY), so
 * then the schema's length leads and the seed is 1, a space of keys no other schema uses.
 */
export function sessionLock(schema: string): { readonly prefix: string; readonly seed: number } {
  return schema.includes('/') ? { prefix: `${schema.length}:${schema}/`, seed: 1 } : { prefix: `${schema}/`, seed: 0 }
}

/** Writers of sessions in PGlite instances of this process: one backend serves them all, so its advisory locks cannot tell them apart. */
const pgliteWriters = new WeakMap<object, Set<string>>()

/** Whether a store of this process writes `key` (schema/session) on this PGlite instance. */
export function pgliteWriting(instance: object, key: string): boolean {
  return pgliteWriters.get(instance)?.has(key) === true
}

/** A plain Uint8Array over a driver's value (pg gives Buffers, PGlite Uint8Arrays). */
function plain(bytes: Uint8Array): Uint8Array {
  return bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

function checkRecords(records: readonly string[]): void {
  for (const record of records) {
    if (typeof record !== 'string') throw Object.assign(new TypeError(`rewindfs: a journal record must be a string, got ${typeof record}`), { code: 'ERR_INVALID_ARG_TYPE' })
    if (record.includes('\n')) throw Object.assign(new TypeError('rewindfs: a journal record must be a single line'), { code: 'ERR_INVALID_ARG_VALUE' })
    // Postgres text cannot hold NUL.
    if (record.includes('\0')) throw Object.assign(new TypeError('rewindfs: a journal record cannot contain NUL'), { code: 'ERR_INVALID_ARG_VALUE' })
  }
}

type Cached = { bytes: Uint8Array } | { chunks: number; size: number }

export interface OpenContext {
  readonly connection: Connection
  /** A new connection to the same place (reconnect). */
  readonly connect: () => Promise<Connection>
  readonly tables: Tables
  readonly schemaName: string
  readonly options: SessionStoreOptions
  /** Opens the same session again on a new connection. */
  readonly again: (timeoutMs: number) => Promise<PostgresStore>
}

export class SessionStore implements PostgresStore {
  readonly kind: 'postgres' | 'pglite'
  readonly durability = durableJournal
  readonly session: string
  readonly schema: string
  readonly readOnly: boolean
  private connection: Connection
  private readonly connect: () => Promise<Connection>
  private readonly t: Tables
  /** The fencing token this writer stamped on the session row. */
  private token: string | undefined
  private lockKey = ''
  private channel = ''
  /** The advisory lock a following reader holds shared (see `told`). */
  private followersKey = ''
  private tail: Promise<unknown> = Promise.resolve()
  private closed = false
  private readAhead = new Map<BlobId, Cached>()
  private readonly changeListeners = new Set<(change: StoreChange) => void>()
  private unlisten: (() => Promise<void>) | undefined
  /** The connection a reader's LISTEN was sent on: a new connection listens on nothing until told to. */
  private subscribed: Connection | undefined
  /** A reader's reconnection loop is running. */
  private recovering = false
  private readonly lostListeners = new Set<(error: Error) => void>()
  private readonly again: OpenContext['again']
  /** false: the session must be there already; nothing is made (SessionStoreOptions.create). */
  private readonly create: boolean

  private constructor(context: OpenContext) {
    this.connection = context.connection
    this.connect = context.connect
    this.kind = context.connection.backend
    this.t = context.tables
    this.schema = context.schemaName
    this.session = context.options.session
    this.readOnly = context.options.readOnly === true
    this.again = context.again
    this.create = context.options.create !== false
    this.watch(this.connection)
  }

  private watch(connection: Connection): void {
    connection.onLost((error) => {
      if (connection !== this.connection) return
      for (const listener of [...this.lostListeners]) listener(error)
      // A reader holds nothing a new connection could lose, so it comes back by itself: a follower
      // would otherwise stop hearing commits for good (the worker keeps one store for its life).
      if (this.readOnly) void this.recoverReader()
    })
  }

  /** Reconnects a reader, retrying every 0.1 s at first and every 5 s at most, until it is back or closed. */
  private async recoverReader(): Promise<void> {
    if (this.recovering) return
    this.recovering = true
    try {
      for (let wait = 100; !this.closed; wait = Math.min(wait * 2, 5000)) {
        // unref: a reader left open on a server that is gone does not keep the process alive.
        await new Promise((resolve) => setTimeout(resolve, wait).unref?.())
        if (this.closed) return
        try {
          await this.reconnect()
          return
        } catch (error) {
          if ((error as { code?: unknown }).code === 'EBADF') return
        }
      }
    } finally {
      this.recovering = false
    }
  }

  /** Connects the session: the tables made if needed, then the writer's lock and token, or a reader's check that the session exists. */
  static async open(context: OpenContext): Promise<SessionStore> {
    const store = new SessionStore(context)
    try {
      await store.start()
    } catch (error) {
      await context.connection.close()
      throw error
    }
    return store
  }

  private get where(): string {
    return `${this.connection.where}#${this.session}`
  }

  private async start(): Promise<void> {
    const { connection, t } = this
    const { prefix, seed } = sessionLock(this.schema)
    const key = prefix + this.session
    // The followers' key: the writer's key hashed with another seed (2, 3), a space no other lock uses.
    const [names] = await connection.query<{ lock: string; channel: string; followers: string }>(
      `SELECT hashtextextended($1, $2::bigint)::text AS lock, 'rewindfs_' || md5($1) AS channel, hashtextextended($1, $2::bigint + 2)::text AS followers`,
      [key, seed],
    )
    this.lockKey = names.lock
    this.channel = names.channel
    this.followersKey = names.followers
    if (this.readOnly || !this.create) {
      // A newer layout is refused as a writer refuses it: its rows may mean something else now.
      await checkLayout(connection, t, connection.where)
      const [exists] = await connection.query<{ table: string | null }>(`SELECT to_regclass($1)::text AS table`, [t.sessions])
      const found = exists?.table != null && (await connection.query(`SELECT 1 FROM ${t.sessions} WHERE id = $1`, [this.session])).length > 0
      if (!found) throw this.missing()
      if (this.readOnly) return
    } else await ensureSchema(connection, t, connection.where)
    if (connection.backend === 'pglite') this.claimInProcess(key)
    const [lock] = await connection.query<{ taken: boolean }>(`SELECT pg_try_advisory_lock($1::bigint) AS taken`, [this.lockKey])
    if (!lock.taken) {
      throw storeError('EBUSY', 'open', this.where, `another connection is writing the session '${this.session}' (it holds the session's lock); open it with readOnly: true to follow its commits, or wait until that writer closes or its machine dies`)
    }
    try {
      this.token = globalThis.crypto.randomUUID()
      if (this.create) {
        await connection.query(
          `INSERT INTO ${t.sessions} (id, writer) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET writer = EXCLUDED.writer`,
          [this.session, this.token],
        )
      } else {
        // Dropped since it was found: still nothing made.
        const stamped = await connection.query(`UPDATE ${t.sessions} SET writer = $2 WHERE id = $1 RETURNING 1`, [this.session, this.token])
        if (stamped.length === 0) throw this.missing()
      }
    } catch (error) {
      await this.releaseLock()
      throw error
    }
  }

  /** The session is not there to read, or (create: false) to write: nothing was made. */
  private missing(): FsError {
    const what = this.readOnly ? 'to read' : 'to write; nothing was made'
    return storeError('ENOENT', 'open', this.where, `there is no session '${this.session}' in ${this.connection.where} (schema ${this.schema}) ${what}`)
  }

  /** PGlite: one backend for every store on the instance, so the lock's holder is tracked here too. */
  private claimInProcess(key: string): void {
    const db = this.connection.instance
    let writers = pgliteWriters.get(db)
    if (!writers) pgliteWriters.set(db, (writers = new Set()))
    if (writers.has(key)) {
      throw storeError('EBUSY', 'open', this.where, `the session '${this.session}' is already open for writing on this PGlite instance; open it with readOnly: true to follow its commits`)
    }
    writers.add(key)
    this.releaseInProcess = () => writers.delete(key)
  }

  private releaseInProcess: () => void = () => undefined

  private async releaseLock(): Promise<void> {
    this.releaseInProcess()
    // Before the connection goes back to a pool: a session lock would stay with it.
    if (!this.connection.lost) await this.connection.query(`SELECT pg_advisory_unlock($1::bigint)`, [this.lockKey]).catch(() => undefined)
  }

  get lost(): Error | undefined {
    return this.connection.lost
  }

  onLost(listener: (error: Error) => void): () => void {
    if (this.connection.lost) listener(this.connection.lost)
    else this.lostListeners.add(listener)
    return () => this.lostListeners.delete(listener)
  }

  onChange(listener: (change: StoreChange) => void): () => void {
    this.changeListeners.add(listener)
    if (this.readOnly && this.subscribed === undefined) {
      const connection = this.connection
      this.follow(connection).catch(() => {
        // Not heard yet: the reconnection loop (a lost connection's, or this one) tries again.
        if (connection === this.connection && this.subscribed === connection) this.subscribed = undefined
        if (!this.closed) void this.recoverReader()
      })
    }
    return () => this.changeListeners.delete(listener)
  }

  /**
   * A reader: LISTENs on the session's channel on `connection`, once anything listens to the store,
   * then registers as a follower (the followers' lock, shared: see `told`). Both are sent at once,
   * before any read made after this call (pg sends a client's statements in order), so a commit
   * that did not notify is one those reads see.
   */
  private async follow(connection: Connection): Promise<void> {
    this.subscribed = connection
    const subscribing = connection.listen(this.channel, this.heard)
    // PGlite: one backend for writer and readers, where the writer always notifies.
    const registering = connection.backend === 'pglite' ? Promise.resolve() : connection.query(`SELECT pg_advisory_lock_shared($1::bigint)`, [this.followersKey])
    this.unlisten = async () => {
      await (await subscribing)()
      // Before the connection goes back to a pool: a lock left on it would keep its writer notifying.
      const registered = await registering.then(() => true, () => false)
      if (registered && connection.backend !== 'pglite' && !connection.lost) {
        await connection.query(`SELECT pg_advisory_unlock_shared($1::bigint)`, [this.followersKey]).catch(() => undefined)
      }
    }
    await Promise.all([subscribing, registering])
  }

  private readonly heard = (): void => {
    this.readAhead.clear()
    for (const each of [...this.changeListeners]) each({ kind: 'commit' })
  }

  reopen(options: { timeoutMs?: number } = {}): Promise<PostgresStore> {
    return this.again(options.timeoutMs ?? 30_000)
  }

  reconnect(): Promise<{ readonly records: number }> {
    return this.queue('reconnect', async () => {
      if (this.readOnly) return this.reconnectReader()
      const lost = this.connection.lost !== undefined
      const connection = lost ? await this.connect() : this.connection
      try {
        // A new connection holds nothing yet: the lock first, then the token, in that order (a
        // writer that takes the session over takes the lock, then stamps its token).
        if (lost) {
          const [lock] = await connection.query<{ taken: boolean }>(`SELECT pg_try_advisory_lock($1::bigint) AS taken`, [this.lockKey])
          if (!lock.taken) {
            const writer = await this.writerOf(connection)
            if (writer === this.token) {
              throw storeError('EAGAIN', 'reconnect', this.where, "the server still holds the session's lock for this writer's lost connection")
            }
            throw this.takenOver(writer)
          }
        }
        const [row] = await connection.query<{ writer: string | null; records: string }>(`SELECT writer, records FROM ${this.t.sessions} WHERE id = $1`, [this.session])
        if (row === undefined || row.writer !== this.token) {
          if (lost) await connection.query(`SELECT pg_advisory_unlock($1::bigint)`, [this.lockKey]).catch(() => undefined)
          throw row === undefined ? storeError('ENOENT', 'reconnect', this.where, `the session '${this.session}' was dropped while this writer was away`) : this.takenOver(row.writer)
        }
        if (lost) {
          const old = this.connection
          this.connection = connection
          this.watch(connection)
          // Not waited for: ending a client whose socket is gone must not hold up the session's calls.
          void old.close().catch(() => undefined)
        }
        return { records: Number(row.records) }
      } catch (error) {
        if (lost) await connection.close().catch(() => undefined)
        throw error
      }
    })
  }

  /** A reader on a new connection (if its own was lost), LISTENing again if anything listens to it. */
  private async reconnectReader(): Promise<{ readonly records: number }> {
    const lost = this.connection.lost !== undefined
    const connection = lost ? await this.connect() : this.connection
    const following = this.changeListeners.size > 0 || this.subscribed !== undefined
    try {
      // LISTEN before reading: a commit after this read is heard, one before it is read.
      if (following && this.subscribed !== connection) {
        await this.follow(connection).catch((error: unknown) => {
          this.subscribed = undefined
          throw error
        })
      }
      const [row] = await connection.query<{ records: string }>(`SELECT records FROM ${this.t.sessions} WHERE id = $1`, [this.session])
      if (row === undefined) throw storeError('ENOENT', 'reconnect', this.where, `the session '${this.session}' was dropped while this reader was away`)
      if (lost) {
        const old = this.connection
        this.connection = connection
        this.watch(connection)
        void old.close().catch(() => undefined)
        // What the writer committed while this reader heard nothing: its followers read it anew.
        this.heard()
      }
      return { records: Number(row.records) }
    } catch (error) {
      if (lost) {
        if (this.subscribed === connection) this.subscribed = undefined
        await connection.close().catch(() => undefined)
      }
      throw error
    }
  }

  private async writerOf(connection: Connection): Promise<string | null | undefined> {
    const [row] = await connection.query<{ writer: string | null }>(`SELECT writer FROM ${this.t.sessions} WHERE id = $1`, [this.session])
    return row?.writer
  }

  private takenOver(writer: string | null | undefined): FsError {
    return writer === undefined
      ? storeError('ENOENT', 'reconnect', this.where, `the session '${this.session}' was dropped while this writer was away`)
      : storeError('EBUSY', 'reconnect', this.where, `another writer took the session '${this.session}' over while this one was away; nothing of this writer was written after its connection was lost (reopen the session to see what it holds)`)
  }

  /** Calls run one after another on the one connection, so appends keep their order and reads see every earlier write. */
  private queue<T>(operation: string, body: () => Promise<T>): Promise<T> {
    const result = this.tail.then(async () => {
      if (this.closed) throw storeError('EBADF', operation, this.where, 'the postgres store is closed')
      return body()
    })
    this.tail = result.catch(() => undefined)
    return result
  }

  private write<T>(operation: string, body: () => Promise<T>): Promise<T> {
    return this.queue(operation, async () => {
      if (this.readOnly) throw storeError('EROFS', operation, this.where, 'the session is open read-only (another connection writes it, or readOnly was asked for)')
      return body()
    })
  }

  /** Inside a write transaction: the session is still ours (holds the row against a takeover until commit). */
  private async fence(sql: Sql, operation: string): Promise<void> {
    const rows = await sql.query(`SELECT 1 FROM ${this.t.sessions} WHERE id = $1 AND writer = $2 FOR SHARE`, [this.session, this.token])
    if (rows.length === 0) throw this.fenced(operation)
  }

  private fenced(operation: string): FsError {
    return storeError('EBUSY', operation, this.where, `another writer took the session '${this.session}' over (its lock was lost with this connection); nothing of this call was written`)
  }

  /**
   * SQL that is true when a reader follows the session, `key` the parameter of the followers' key.
   * NOTIFY takes a lock every notifying commit of the database queues for (their WAL flushes one
   * after another), so a writer notifies only when a reader follows: one that LISTENs and holds
   * the followers' lock shared. The writer's try for it exclusive fails while one does; when it
   * succeeds it is held until the commit, so a reader registering meanwhile waits for that commit
   * and then reads it (a reader registers before it reads). A reader's lock dies with its
   * connection: a crashed follower costs nothing. PGlite: one backend for all, always true.
   */
  private told(key: string): string {
    return this.kind === 'pglite' ? `${key}::bigint IS NOT NULL` : `NOT pg_try_advisory_xact_lock(${key}::bigint)`
  }

  private notify(sql: Sql, what: string): Promise<unknown> {
    return sql.query(`SELECT CASE WHEN ${this.told('$3')} THEN pg_notify($1, $2) END`, [this.channel, what, this.followersKey])
  }

  // ---- the journal ---------------------------------------------------------------------------

  appendJournal(records: readonly string[]): Promise<void> {
    return this.write('appendJournal', async () => {
      checkRecords(records)
      if (records.length === 0) return
      const bytes = records.reduce((sum, record) => sum + utf8Length(record) + 1, 0)
      this.connection.room?.(bytes, 'appendJournal')
      const changes = checkpointChanges(records)
      const append = async (sql: Sql) => {
        // One statement: the fence, the numbers, the rows and the notification commit together.
        const rows = await sql.query(
          `WITH s AS (
             UPDATE ${this.t.sessions}
                SET next_seq = next_seq + cardinality($3::text[]), records = records + cardinality($3::text[]),
                    journal_bytes = journal_bytes + $4, updated_at = now()
              WHERE id = $1 AND writer = $2
              RETURNING next_seq - cardinality($3::text[]) AS first
           ), j AS (
             INSERT INTO ${this.t.journal} (session, seq, record)
             SELECT $1, s.first + r.n - 1, r.record FROM s, unnest($3::text[]) WITH ORDINALITY AS r(record, n)
           )
           SELECT CASE WHEN ${this.told('$6')} THEN pg_notify($5, 'journal') END FROM s`,
          [this.session, this.token, records, bytes, this.channel, this.followersKey],
        )
        if (rows.length === 0) throw this.fenced('appendJournal')
      }
      if (!touches(changes)) return append(this.connection)
      await this.connection.transaction(async (tx) => {
        await append(tx)
        await this.applyCheckpoints(tx, changes, false)
      })
    })
  }

  readJournal(): Promise<JournalRead> {
    return this.queue('readJournal', async () => {
      // The session row counts the records every commit wrote (in the same transaction). Records
      // are numbered, so one missing in the middle shows; rows missing at the end (deleted, a
      // table file cut short, a partial restore) would read as an older journal: a silent rewind.
      // One statement, one snapshot: a writer's commit meanwhile cannot make the two disagree.
      const rows = await this.connection.query<{ records: string; next: string; seq: string | null; record: string | null }>(
        `SELECT s.records::text AS records, s.next_seq::text AS next, j.seq::text AS seq, j.record
           FROM ${this.t.sessions} s LEFT JOIN ${this.t.journal} j ON j.session = s.id
          WHERE s.id = $1 ORDER BY j.seq`,
        [this.session],
      )
      const records = rows.filter((row) => row.record !== null).map((row) => row.record!)
      if (rows.length === 0) return { records }
      const counted = Number(rows[0].records)
      const last = records.length === 0 ? undefined : Number(rows.at(-1)!.seq)
      if (records.length < counted || (last !== undefined && last < Number(rows[0].next) - 1)) {
        // Not a record (the engine reports damage here, opens at the state before it, and keeps
        // the journal aside before any repair): the missing records are never silently cut away.
        records.push(`rewindfs: ${Math.max(counted - records.length, Number(rows[0].next) - 1 - (last ?? 0))} journal record(s) the session row counts are missing from ${this.t.journal} (up to number ${Number(rows[0].next) - 1})`)
      }
      return { records }
    })
  }

  replaceJournal(records: readonly string[]): Promise<void> {
    return this.write('replaceJournal', async () => {
      checkRecords(records)
      const bytes = records.reduce((sum, record) => sum + utf8Length(record) + 1, 0)
      this.connection.room?.(bytes, 'replaceJournal')
      const changes = checkpointChanges(records)
      await this.connection.transaction(async (tx) => {
        const fenced = await tx.query(
          `UPDATE ${this.t.sessions} SET next_seq = $3, records = $4, journal_bytes = $5, updated_at = now() WHERE id = $1 AND writer = $2 RETURNING 1`,
          [this.session, this.token, records.length + 1, records.length, bytes],
        )
        if (fenced.length === 0) throw this.fenced('replaceJournal')
        await tx.query(`DELETE FROM ${this.t.journal} WHERE session = $1`, [this.session])
        await tx.query(
          `INSERT INTO ${this.t.journal} (session, seq, record) SELECT $1, r.n, r.record FROM unnest($2::text[]) WITH ORDINALITY AS r(record, n)`,
          [this.session, records],
        )
        await this.applyCheckpoints(tx, changes, true)
        await this.notify(tx, 'journal')
      })
    })
  }

  /**
   * Keeps the checkpoints listing in step with records just written. `whole`: they are the whole
   * journal now (replaceJournal), so the listing becomes theirs; a snapshot among them lists all.
   */
  private async applyCheckpoints(sql: Sql, changes: CheckpointChanges & { snapshot?: CheckpointRow[] }, whole: boolean): Promise<void> {
    const { renamed, deleted } = changes
    const made = [...(changes.snapshot ?? []), ...changes.made]
    if (whole || changes.snapshot) await sql.query(`DELETE FROM ${this.t.checkpoints} WHERE session = $1`, [this.session])
    if (made.length > 0) {
      await sql.query(
        `INSERT INTO ${this.t.checkpoints} (session, id, name, kind, created_at)
         SELECT $1, c.id, c.name, c.kind, to_timestamp(c.at / 1000.0)
           FROM unnest($2::text[], $3::text[], $4::text[], $5::double precision[]) AS c(id, name, kind, at)
         ON CONFLICT (session, id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind, created_at = EXCLUDED.created_at`,
        [this.session, ...columns(made)],
      )
    }
    for (const { id, name } of renamed) await sql.query(`UPDATE ${this.t.checkpoints} SET name = $3 WHERE session = $1 AND id = $2`, [this.session, id, name])
    if (deleted.length > 0) await sql.query(`DELETE FROM ${this.t.checkpoints} WHERE session = $1 AND id = ANY($2::text[])`, [this.session, deleted])
  }

  // ---- blobs ---------------------------------------------------------------------------------

  putBlobs(blobs: readonly (readonly [BlobId, Uint8Array])[]): Promise<void> {
    return this.write('putBlobs', async () => {
      this.readAhead.clear()
      const unique = new Map<BlobId, Uint8Array>()
      for (const [id, bytes] of blobs) {
        if (typeof id !== 'string' || id === '' || id.includes('\0')) throw Object.assign(new TypeError(`rewindfs: a blob id must be a non-empty string without NUL, got ${JSON.stringify(id)}`), { code: 'ERR_INVALID_ARG_VALUE' })
        if (!(bytes instanceof Uint8Array)) throw Object.assign(new TypeError(`rewindfs: blob '${id}' must be a Uint8Array`), { code: 'ERR_INVALID_ARG_TYPE' })
        if (!unique.has(id)) unique.set(id, bytes)
      }
      if (unique.size === 0) return
      this.connection.room?.([...unique.values()].reduce((sum, bytes) => sum + bytes.byteLength, 0), 'putBlobs')
      // In id order: two sessions putting the same new blobs in other orders each locked a row the
      // other wanted next (a deadlock, one commit failing); in one order the second waits instead.
      const ordered = [...unique].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      const large = ordered.filter(([, bytes]) => bytes.byteLength > CHUNK)
      const stamp = keptStamp()
      await this.connection.transaction(
        async (tx) => {
          // Large blobs a session already set aside as damaged: their chunks are replaced without keeping them again.
          const suspect = new Set(
            large.length === 0
              ? []
              : (await tx.query<{ id: string }>(`SELECT id FROM ${this.t.blobs} WHERE id = ANY($1::text[]) AND suspect`, [large.map(([id]) => id)])).map((row) => row.id),
          )
          for (const batch of batches(ordered, ([, bytes]) => (bytes.byteLength > CHUNK ? 64 : bytes.byteLength))) {
            const params: unknown[] = [this.session, stamp, this.token]
            const values = batch.map(([id, bytes]) => {
              const chunked = bytes.byteLength > CHUNK
              params.push(id, bytes.byteLength, chunked ? Math.ceil(bytes.byteLength / CHUNK) : 0, chunked ? null : bytes)
              const n = params.length
              return `($${n - 3}, $${n - 2}::bigint, $${n - 1}::integer, $${n}::bytea)`
            })
            // One statement: the fence (the session is still ours; its row held against a takeover
            // until commit), the blobs and this session's references to them. Content-addressed, so
            // a blob already stored is shared, once its bytes are checked to be these: a stored copy
            // that differs is damage (kept aside in this session, as the engine keeps damage) and is
            // replaced, so an acknowledged write is never one whose durable copy is rotten. A copy a
            // session set aside as damaged already (suspect) is just replaced.
            const [fence] = await tx.query<{ ours: string }>(
              `WITH fence AS (SELECT 1 FROM ${this.t.sessions} WHERE id = $1 AND writer = $3 FOR SHARE),
               input (id, size, chunks, bytes) AS (VALUES ${values.join(', ')}),
               damaged AS (
                 SELECT b.id, b.bytes FROM ${this.t.blobs} b JOIN input i ON i.id = b.id
                  WHERE EXISTS (SELECT 1 FROM fence) AND NOT b.suspect AND b.chunks = 0 AND i.chunks = 0 AND b.bytes IS DISTINCT FROM i.bytes
               ),
               kept AS (
                 INSERT INTO ${this.t.kept} (session, name, bytes)
                 SELECT $1, 'blob.damaged-' || $2 || '.' || d.id, d.bytes FROM damaged d
                 ON CONFLICT DO NOTHING
               ),
               stored AS (
                 INSERT INTO ${this.t.blobs} AS b (id, size, chunks, bytes) SELECT id, size, chunks, bytes FROM input WHERE EXISTS (SELECT 1 FROM fence)
                 ON CONFLICT (id) DO UPDATE SET size = EXCLUDED.size, chunks = EXCLUDED.chunks, bytes = EXCLUDED.bytes, suspect = false, orphaned_at = NULL
                 WHERE b.suspect OR b.chunks <> EXCLUDED.chunks OR b.id IN (SELECT id FROM damaged)
               ),
               refs AS (
                 INSERT INTO ${this.t.refs} (session, blob) SELECT $1, id FROM input WHERE EXISTS (SELECT 1 FROM fence) ON CONFLICT DO NOTHING
               )
               SELECT count(*) AS ours FROM fence`,
              params,
            )
            if (Number(fence.ours) === 0) throw this.fenced('putBlobs')
          }
          // A large blob's chunks are sent and checked in the same way, one statement per chunk.
          for (const [id, bytes] of large) {
            const count = Math.ceil(bytes.byteLength / CHUNK)
            for (let n = 0; n < count; n++) {
              await tx.query(
                `WITH damaged AS (
                   SELECT c.bytes FROM ${this.t.chunks} c WHERE c.blob = $3 AND c.n = $4 AND c.bytes IS DISTINCT FROM $5::bytea AND NOT $6::boolean
                 ), kept AS (
                   INSERT INTO ${this.t.kept} (session, name, bytes) SELECT $1, 'blob.damaged-' || $2 || '.' || $3 || '.chunk-' || $4, bytes FROM damaged
                   ON CONFLICT DO NOTHING
                 )
                 INSERT INTO ${this.t.chunks} AS c (blob, n, bytes) VALUES ($3, $4, $5)
                 ON CONFLICT (blob, n) DO UPDATE SET bytes = EXCLUDED.bytes WHERE c.bytes IS DISTINCT FROM EXCLUDED.bytes`,
                [this.session, stamp, id, n, bytes.subarray(n * CHUNK, (n + 1) * CHUNK), suspect.has(id)],
              )
            }
            await tx.query(`DELETE FROM ${this.t.chunks} WHERE blob = $1 AND n >= $2`, [id, count])
          }
        },
        // Before any blob row is read or written: see gc.ts for why this keeps them from collection.
        { prelude: `SELECT pg_advisory_xact_lock_shared(${GC_LOCK})` },
      )
    })
  }

  getBlob(id: BlobId): Promise<Uint8Array | undefined> {
    return this.queue('getBlob', async () => {
      let cached = this.readAhead.get(id)
      if (cached === undefined) {
        this.readAhead = await this.readFrom(id)
        cached = this.readAhead.get(id)
        if (cached === undefined) return undefined
      }
      this.readAhead.delete(id)
      if ('bytes' in cached) return cached.bytes
      return this.readChunks(this.connection, id, cached)
    })
  }

  /** The session's blobs from `id` on in blobIds' order, up to READ_AHEAD of them and READ_AHEAD_BYTES of inline bytes. */
  private async readFrom(id: BlobId): Promise<Map<BlobId, Cached>> {
    const rows = await this.connection.query<{ id: string; size: string; chunks: number; bytes: Uint8Array | null }>(
      `SELECT id, size, chunks, bytes FROM (
         SELECT b.id, b.size, b.chunks, b.bytes,
                sum(CASE WHEN b.chunks = 0 THEN b.size ELSE 0 END) OVER (ORDER BY r.blob COLLATE "C") AS running
           FROM ${this.t.refs} r JOIN ${this.t.blobs} b ON b.id = r.blob
          WHERE r.session = $1 AND r.blob COLLATE "C" >= $2
          ORDER BY r.blob COLLATE "C" LIMIT $3
       ) x WHERE x.id = $2 OR x.running <= $4`,
      [this.session, id, READ_AHEAD, READ_AHEAD_BYTES],
    )
    const read = new Map<BlobId, Cached>()
    for (const row of rows) {
      const size = Number(row.size)
      if (row.chunks > 0) read.set(row.id, { chunks: row.chunks, size })
      else if (row.bytes === null) throw storeError('EIO', 'getBlob', `${this.where}:${row.id}`, 'the blob row has neither bytes nor chunks')
      else read.set(row.id, { bytes: plain(row.bytes) })
    }
    return read
  }

  /**
   * A chunked blob's bytes, read CHUNKS_PER_READ chunks at a time into one buffer of its size: all
   * its chunk rows at once were held alongside the whole (about twice its size at the peak).
   */
  private async readChunks(sql: Sql, id: BlobId, { chunks, size }: { chunks: number; size: number }): Promise<Uint8Array> {
    const broken = (read: number, bytes: number) =>
      storeError('EIO', 'getBlob', `${this.where}:${id}`, `the blob's chunks do not add up (${read} of ${chunks} chunks, ${bytes} of ${size} bytes)`)
    // Only a size its chunks can hold is allocated: a damaged row must not ask for gigabytes.
    if (!Number.isSafeInteger(size) || size < 0 || size > chunks * CHUNK) throw broken(0, 0)
    const whole = new Uint8Array(size)
    let at = 0
    let read = 0
    for (let from = 0; from < chunks; from += CHUNKS_PER_READ) {
      // The last group asks for one chunk more: one beyond the count is damage too.
      const to = from + CHUNKS_PER_READ < chunks ? from + CHUNKS_PER_READ : chunks + 1
      const rows = await sql.query<{ n: number; bytes: Uint8Array }>(
        `SELECT n, bytes FROM ${this.t.chunks} WHERE blob = $1 AND n >= $2 AND n < $3 ORDER BY n`,
        [id, from, to],
      )
      for (const row of rows) {
        if (row.n !== read || at + row.bytes.byteLength > size) throw broken(row.n === read ? read + 1 : read, at + row.bytes.byteLength)
        whole.set(row.bytes, at)
        at += row.bytes.byteLength
        read++
      }
      if (read !== Math.min(from + CHUNKS_PER_READ, chunks)) throw broken(read, at)
    }
    if (at !== size) throw broken(read, at)
    return whole
  }

  deleteBlobs(ids: readonly BlobId[]): Promise<void> {
    return this.write('deleteBlobs', async () => {
      this.readAhead.clear()
      if (ids.length === 0) return
      const dropped = await this.connection.transaction(async (tx) => {
        await this.fence(tx, 'deleteBlobs')
        return tx.query<{ blob: string }>(`DELETE FROM ${this.t.refs} WHERE session = $1 AND blob = ANY($2::text[]) RETURNING blob`, [this.session, [...ids]])
      })
      // The blobs no other session refers to go now, or at the next chance while writers hold the
      // lock (one short try: this session's calls wait behind it); collectGarbage finds any left.
      const candidates = [...new Set([...this.unswept, ...dropped.map((row) => row.blob)])]
      const swept = await sweep(this.connection, this.t, candidates).catch(() => undefined)
      this.unswept = swept === undefined ? new Set(candidates) : new Set()
    })
  }

  /** Blobs this session dereferenced whose sweep did not get the lock yet. */
  private unswept = new Set<BlobId>()

  blobIds(): Promise<BlobId[]> {
    return this.queue('blobIds', async () => {
      const rows = await this.connection.query<{ blob: string }>(`SELECT blob FROM ${this.t.refs} WHERE session = $1 ORDER BY blob COLLATE "C"`, [this.session])
      return rows.map((row) => row.blob)
    })
  }

  // ---- metadata ------------------------------------------------------------------------------

  getMeta(key: string): Promise<JsonValue | undefined> {
    return this.queue('getMeta', async () => {
      const [row] = await this.connection.query<{ value: string }>(`SELECT value FROM ${this.t.meta} WHERE session = $1 AND key = $2`, [this.session, key])
      if (row === undefined) return undefined
      let parsed: unknown
      try {
        parsed = JSON.parse(row.value)
      } catch {
        throw storeError('EIO', 'getMeta', `${this.where}:${key}`, `metadata '${key}' is not JSON`)
      }
      const checked = jsonSchema.safeParse(parsed)
      if (!checked.success) throw storeError('EIO', 'getMeta', `${this.where}:${key}`, `metadata '${key}' is not a JSON value`)
      return checked.data
    })
  }

  putMeta(key: string, value: JsonValue): Promise<void> {
    return this.write('putMeta', async () => {
      const text = JSON.stringify(value)
      if (typeof key !== 'string' || key === '') throw Object.assign(new TypeError('rewindfs: a metadata key must be a non-empty string'), { code: 'ERR_INVALID_ARG_VALUE' })
      if (text === undefined) throw Object.assign(new TypeError(`rewindfs: metadata '${key}' must be a JSON value`), { code: 'ERR_INVALID_ARG_TYPE' })
      this.connection.room?.(utf8Length(text), 'putMeta')
      if (key !== FLUSH_STATE_KEY) {
        // One statement: the fence, the value, the session's activity and the readers' notification.
        const [row] = await this.connection.query<{ ours: string }>(
          `WITH fence AS (SELECT 1 FROM ${this.t.sessions} WHERE id = $1 AND writer = $2 FOR SHARE),
           stored AS (
             INSERT INTO ${this.t.meta} (session, key, value) SELECT $1, $3, $4 WHERE EXISTS (SELECT 1 FROM fence)
             ON CONFLICT (session, key) DO UPDATE SET value = EXCLUDED.value
           ),
           touched AS (UPDATE ${this.t.sessions} SET updated_at = now() WHERE id = $1 AND EXISTS (SELECT 1 FROM fence)),
           told AS (SELECT CASE WHEN ${this.told('$6')} THEN pg_notify($5, 'meta') END FROM fence)
           SELECT (SELECT count(*) FROM fence) AS ours, (SELECT count(*) FROM told) AS told`,
          [this.session, this.token, key, text, this.channel, this.followersKey],
        )
        if (Number(row.ours) === 0) throw this.fenced('putMeta')
        return
      }
      // The flush state also refreshes this session's rows of the shared flush ledgers.
      await this.connection.transaction(async (tx) => {
        await this.fence(tx, 'putMeta')
        await tx.query(
          `INSERT INTO ${this.t.meta} (session, key, value) VALUES ($1, $2, $3) ON CONFLICT (session, key) DO UPDATE SET value = EXCLUDED.value`,
          [this.session, key, text],
        )
        await this.recordLedgers(tx, value)
        await tx.query(`UPDATE ${this.t.sessions} SET updated_at = now() WHERE id = $1`, [this.session])
        await this.notify(tx, 'meta')
      })
    })
  }

  /** The flush ledgers, as rows every session can query (whose flush wrote a path, and when). */
  private async recordLedgers(sql: Sql, value: JsonValue): Promise<void> {
    const rows = flushLedgers(value)
    if (rows === undefined) return
    await sql.query(`DELETE FROM ${this.t.flushes} WHERE session = $1`, [this.session])
    if (rows.length === 0) return
    await sql.query(
      `INSERT INTO ${this.t.flushes} (session, target, path, sig, version, flushed_by, flushed_at)
       SELECT $1, l.target, l.path, l.sig, l.version, l.by, to_timestamp(l.at / 1000.0)
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::double precision[]) AS l(target, path, sig, version, by, at)`,
      [this.session, rows.map((r) => r.target), rows.map((r) => r.path), rows.map((r) => r.sig), rows.map((r) => r.version), rows.map((r) => r.by), rows.map((r) => r.at)],
    )
  }

  deleteMeta(key: string): Promise<void> {
    return this.write('deleteMeta', async () => {
      await this.connection.transaction(async (tx) => {
        await this.fence(tx, 'deleteMeta')
        await tx.query(`DELETE FROM ${this.t.meta} WHERE session = $1 AND key = $2`, [this.session, key])
        if (key === FLUSH_STATE_KEY) await tx.query(`DELETE FROM ${this.t.flushes} WHERE session = $1`, [this.session])
        await this.notify(tx, 'meta')
      })
    })
  }

  // ---- what is set aside ---------------------------------------------------------------------

  setAside(item: StoreItem, label: string): Promise<string> {
    return this.write('setAside', async () => {
      this.readAhead.clear()
      return this.connection.transaction(async (tx) => {
        await this.fence(tx, 'setAside')
        const taken = new Set((await tx.query<{ name: string }>(`SELECT name FROM ${this.t.kept} WHERE session = $1`, [this.session])).map((row) => row.name))
        const isTaken = (name: string) => taken.has(name)
        if ('journal' in item) {
          const name = keptName('journal', label, undefined, isTaken)
          await tx.query(
            `INSERT INTO ${this.t.kept} (session, name, records)
             SELECT $1, $2, coalesce((SELECT array_agg(record ORDER BY seq) FROM ${this.t.journal} WHERE session = $1), '{}'::text[])`,
            [this.session, name],
          )
          return name
        }
        if ('blob' in item) {
          const [row] = await tx.query<{ size: string; chunks: number; bytes: Uint8Array | null }>(
            `SELECT b.size, b.chunks, b.bytes FROM ${this.t.refs} r JOIN ${this.t.blobs} b ON b.id = r.blob WHERE r.session = $1 AND r.blob = $2`,
            [this.session, item.blob],
          )
          if (row === undefined) throw storeError('ENOENT', 'setAside', `${this.where}:${item.blob}`, `no blob '${item.blob}' to set aside`)
          const name = keptName('blob', label, item.blob, isTaken)
          const bytes = row.chunks > 0 ? await this.readChunks(tx, item.blob, { chunks: row.chunks, size: Number(row.size) }) : row.bytes
          await tx.query(`INSERT INTO ${this.t.kept} (session, name, bytes) VALUES ($1, $2, $3)`, [this.session, name, bytes])
          await tx.query(`DELETE FROM ${this.t.refs} WHERE session = $1 AND blob = $2`, [this.session, item.blob])
          // Its bytes were found damaged here: the next put of this id replaces them for every session.
          await tx.query(`UPDATE ${this.t.blobs} SET suspect = true WHERE id = $1`, [item.blob])
          return name
        }
        const [row] = await tx.query<{ value: string }>(`DELETE FROM ${this.t.meta} WHERE session = $1 AND key = $2 RETURNING value`, [this.session, item.meta])
        if (row === undefined) throw storeError('ENOENT', 'setAside', `${this.where}:${item.meta}`, `no metadata '${item.meta}' to set aside`)
        const name = keptName('meta', label, item.meta, isTaken)
        await tx.query(`INSERT INTO ${this.t.kept} (session, name, value) VALUES ($1, $2, $3)`, [this.session, name, row.value])
        return name
      })
    })
  }

  keptAside(): Promise<string[]> {
    return this.queue('keptAside', async () => {
      const rows = await this.connection.query<{ name: string }>(`SELECT name FROM ${this.t.kept} WHERE session = $1`, [this.session])
      return rows.map((row) => row.name).sort()
    })
  }

  removeKept(names: readonly string[]): Promise<void> {
    return this.write('removeKept', async () => {
      if (names.length === 0) return
      await this.connection.query(`DELETE FROM ${this.t.kept} WHERE session = $1 AND name = ANY($2::text[])`, [this.session, [...names]])
    })
  }

  /** Waits for calls in flight, then gives up the session's lock and the connection. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.tail
    this.closed = true
    this.changeListeners.clear()
    this.lostListeners.clear()
    await this.unlisten?.().catch(() => undefined)
    if (this.unswept.size > 0 && !this.connection.lost) await sweep(this.connection, this.t, [...this.unswept], 1000).catch(() => undefined)
    if (!this.readOnly) await this.releaseLock()
    await this.connection.close()
  }
}

function touches(changes: CheckpointChanges & { snapshot?: CheckpointRow[] }): boolean {
  return changes.made.length > 0 || changes.renamed.length > 0 || changes.deleted.length > 0 || changes.snapshot !== undefined
}

function columns(rows: readonly CheckpointRow[]): [string[], string[], string[], number[]] {
  return [rows.map((r) => r.id), rows.map((r) => r.name), rows.map((r) => r.kind), rows.map((r) => r.createdAt)]
}

/** Splits items into inserts of at most ROWS_PER_INSERT rows and about BYTES_PER_INSERT bytes. */
function* batches<T>(items: readonly T[], size: (item: T) => number): Iterable<T[]> {
  let batch: T[] = []
  let bytes = 0
  for (const item of items) {
    const n = size(item)
    if (batch.length > 0 && (batch.length >= ROWS_PER_INSERT || bytes + n > BYTES_PER_INSERT)) {
      yield batch
      batch = []
      bytes = 0
    }
    batch.push(item)
    bytes += n
  }
  if (batch.length > 0) yield batch
}

