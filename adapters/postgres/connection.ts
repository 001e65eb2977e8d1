/**
 * One database connection as the store's SQL sees it, whichever Postgres is behind it: a server
 * reached with `pg` (a client of the caller's pool, or one of our own from a connection string) or
 * PGlite in this process. The SQL module (sql.ts) is written once against this interface, so both
 * backends run the same statements. A store holds one connection for its whole life: its writer
 * lock is a session-level advisory lock, which lives and dies with that connection.
 */
import { lockDataDir, type DataDirLock } from './data-lock.js'
import { connectionError, isConnectionLoss, redact, storeError, translate } from './errors.js'

/** Runs statements; inside `transaction` they are one transaction. */
export interface Sql {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>
  /** Statements without parameters, sent at once (one round trip on a server). */
  batch(text: string): Promise<void>
  /**
   * Runs `body` in one transaction. `prelude`: statements without parameters run first, sent with
   * BEGIN in one round trip (a lock the transaction takes before anything else).
   */
  transaction<T>(body: (sql: Sql) => Promise<T>, options?: TransactionOptions): Promise<T>
}

export interface TransactionOptions {
  readonly isolation?: 'repeatable read'
  readonly prelude?: string
}

export interface Connection extends Sql {
  readonly backend: 'postgres' | 'pglite'
  /** The driver's object (a pg client, a PGlite instance): stores on one PGlite instance share its backend. */
  readonly instance: object
  /** Where it leads, for messages (no password). */
  readonly where: string
  /** Calls `listener` with each payload NOTIFY sends on `channel`; resolves to the unlisten. */
  listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>>
  /** Calls `listener` once if the connection is lost (the server went away, a network failure). */
  onLost(listener: (error: Error) => void): void
  /** Why the connection is gone, once it is. */
  readonly lost: Error | undefined
  /** PGlite on a directory: throws ENOSPC, before anything is sent, when a write of `bytes` may not fit (see PGliteConnection.room). */
  room?(bytes: number, operation: string): void
  close(): Promise<void>
}

/**
 * The connection for callers that may make several calls at once (a fleet: `Promise.all` of forks).
 * pg runs one statement at a time per client, but a transaction is several: without turns, one
 * call's ROLLBACK ended another's transaction halfway, and a fork reported done was not there. Each
 * statement and each whole transaction takes its turn; a transaction's body runs on the connection
 * itself, within its turn.
 */
export function serialized(connection: Connection): Connection {
  let tail: Promise<unknown> = Promise.resolve()
  const turn = <T>(body: () => Promise<T>): Promise<T> => {
    const result = tail.then(body)
    tail = result.catch(() => undefined)
    return result
  }
  return {
    backend: connection.backend,
    instance: connection.instance,
    where: connection.where,
    get lost() {
      return connection.lost
    },
    query: (text, params) => turn(() => connection.query(text, params)),
    batch: (text) => turn(() => connection.batch(text)),
    transaction: (body, options) => turn(() => connection.transaction(body, options)),
    listen: (channel, listener) => turn(() => connection.listen(channel, listener)),
    onLost: (listener) => connection.onLost(listener),
    close: () => turn(() => connection.close()),
  }
}

// ---- pg ------------------------------------------------------------------------------------------

/** The part of a `pg` client the store uses (a `pg.Client`, or a `PoolClient` from `pool.connect()`). */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown
  on(event: 'end', listener: () => void): unknown
  removeListener(event: string, listener: (...args: never[]) => void): unknown
}

/** A `pg.Pool` (or anything with its `connect`): the store checks one client out for its life. */
export interface PgPoolLike {
  connect(): Promise<PgClientLike & { release(error?: Error | boolean): void }>
}

type PgModule = {
  Client: new (config: { connectionString: string; application_name?: string; connectionTimeoutMillis?: number; keepAlive?: boolean; keepAliveInitialDelayMillis?: number }) => PgClientLike & {
    connect(): Promise<void>
    end(): Promise<void>
  }
}

async function loadPg(): Promise<PgModule> {
  try {
    const module = (await import('pg')) as unknown as { default?: PgModule } & PgModule
    return module.default ?? module
  } catch (error) {
    throw Object.assign(new Error("rewindfs: the postgres store needs the 'pg' package (npm install pg)"), { code: 'ERR_MODULE_NOT_FOUND', cause: error })
  }
}

/** Accepts postgres:// and postgresql:// URLs; anything else is refused before connecting. */
export function checkConnectionString(value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw Object.assign(new TypeError(`rewindfs: postgresStore needs a connection string (postgres://user:password@host/database) or a pool; got ${typeof value === 'string' ? 'an empty string' : typeof value}`), { code: 'ERR_INVALID_ARG_TYPE' })
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw Object.assign(new TypeError(`rewindfs: '${redact(value)}' is not a PostgreSQL connection string (postgres://user:password@host/database, or ?host=/socket/dir for a unix socket)`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw Object.assign(new TypeError(`rewindfs: '${redact(value)}' is not a PostgreSQL connection string: its scheme is '${url.protocol}', not postgres: or postgresql:`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  if (url.pathname === '' || url.pathname === '/') {
    throw Object.assign(new TypeError(`rewindfs: the connection string '${redact(value)}' names no database (postgres://user@host/DATABASE)`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  return value
}

class PgConnection implements Connection {
  readonly backend = 'postgres'
  readonly instance: object
  lost: Error | undefined
  private readonly lostListeners: ((error: Error) => void)[] = []
  private readonly channels = new Map<string, Set<(payload: string) => void>>()
  private closed = false

  /** Statements sent and not answered yet. */
  private pending = 0

  constructor(
    private readonly client: PgClientLike,
    readonly where: string,
    private readonly finish: (error?: Error) => Promise<void>,
    replyTimeoutMs?: number,
  ) {
    this.instance = client
    if (replyTimeoutMs !== undefined && replyTimeoutMs > 0) this.watchReplies(replyTimeoutMs)
    // A client without an 'error' listener takes the process down when the server goes away.
    client.on('error', (error) => this.loseWith(error))
    client.on('end', () => {
      if (!this.closed) this.loseWith(new Error('Connection terminated'))
    })
    client.on('notification', (message) => {
      for (const listener of this.channels.get(message.channel) ?? []) listener(message.payload ?? '')
    })
  }

  /**
   * A network cut leaves a statement in flight unanswered for as long as the kernel retransmits
   * (about 15 minutes), the workspace waiting on it all that time instead of going degraded. So a
   * socket silent for `ms` while a statement is in flight is given up on: the connection is lost.
   */
  private watchReplies(ms: number): void {
    const socket = (this.client as { connection?: { stream?: Partial<NodeSocketLike> } }).connection?.stream
    if (typeof socket?.setTimeout !== 'function' || typeof socket.on !== 'function' || typeof socket.destroy !== 'function') return
    const { destroy } = socket as NodeSocketLike
    socket.setTimeout(ms)
    socket.on('timeout', () => {
      if (this.pending > 0) destroy.call(socket, new Error(`no reply from PostgreSQL for ${ms} ms (replyTimeoutMs) with a statement in flight`))
    })
  }

  private loseWith(error: Error): void {
    if (this.lost || this.closed) return
    this.lost = connectionError('ECONNRESET', 'query', this.where, `the connection was lost (${error.message})`, error)
    for (const listener of this.lostListeners.splice(0)) listener(this.lost)
  }

  onLost(listener: (error: Error) => void): void {
    if (this.lost) listener(this.lost)
    else this.lostListeners.push(listener)
  }

  async query<Row>(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    if (this.lost) throw this.lost
    this.pending++
    try {
      return (await this.client.query(text, params as unknown[])).rows as Row[]
    } catch (error) {
      if (isConnectionLoss(error)) this.loseWith(error as Error)
      throw translate(this.lost ?? error, 'query', this.where)
    } finally {
      this.pending--
    }
  }

  async batch(text: string): Promise<void> {
    await this.query(text)
  }

  async transaction<T>(body: (sql: Sql) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const begin = options.isolation ? `BEGIN ISOLATION LEVEL ${options.isolation.toUpperCase()}` : 'BEGIN'
    try {
      // One simple-protocol query: BEGIN and the prelude in one round trip. A prelude that fails (a
      // lock wait cut by lock_timeout or statement_timeout) leaves the transaction open and
      // aborted: the ROLLBACK below ends it, or every later statement on the connection fails.
      await this.query(options.prelude ? `${begin}; ${options.prelude}` : begin)
      const result = await body(this)
      await this.query('COMMIT')
      return result
    } catch (error) {
      if (!this.lost) await this.query('ROLLBACK').catch(() => undefined)
      throw error
    }
  }

  async listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>> {
    let listeners = this.channels.get(channel)
    if (!listeners) {
      this.channels.set(channel, (listeners = new Set()))
      await this.query(`LISTEN ${quoteIdentifier(channel)}`)
    }
    listeners.add(listener)
    return async () => {
      listeners.delete(listener)
      if (listeners.size > 0 || this.channels.get(channel) !== listeners) return
      this.channels.delete(channel)
      if (!this.lost && !this.closed) await this.query(`UNLISTEN ${quoteIdentifier(channel)}`).catch(() => undefined)
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    // A lost connection goes back to a pool destroyed, never to be handed out again.
    await this.finish(this.lost).catch(() => undefined)
  }
}

/**
 * How soon the server notices that the machine at the other end is gone. A session's writer lock
 * dies with its backend, and a backend whose client vanished without closing its socket (power
 * lost, network cut) lives on as long as its TCP connection seems open: two hours by the kernel's
 * default keepalive, and the session stays EBUSY to every other machine all that time. So the
 * server probes an idle connection after 10 s, every 5 s, and drops it after 3 unanswered probes
 * (about 25 s), and gives up on data the client has not acknowledged for 30 s (tcp_user_timeout,
 * PostgreSQL 12 and later). Unix sockets ignore these.
 */
const SERVER_KEEPALIVE = 'SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3'
const SERVER_USER_TIMEOUT = 'SET tcp_user_timeout = 30000'

async function probeDeadPeers(client: PgClientLike): Promise<void> {
  await client.query(SERVER_KEEPALIVE)
  // An older server does not know it: the keepalives above are the most it can do.
  await client.query(SERVER_USER_TIMEOUT).catch(() => undefined)
}

/** The part of a net.Socket the reply watch uses. */
interface NodeSocketLike {
  setTimeout(ms: number): unknown
  on(event: 'timeout', listener: () => void): unknown
  destroy(error?: Error): unknown
}

/** Checks a timeout option: a finite number of milliseconds, 0 or more (0: no limit). */
export function checkTimeout(name: string, value: unknown, fallback: number): number {
  const ms = value ?? fallback
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw Object.assign(new RangeError(`rewindfs: ${name} must be a finite number of milliseconds, 0 or more (0: no limit); got ${String(ms)}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  return ms
}

/** A connection of our own, from a connection string. */
export async function connectUrl(connectionString: string, options: { connectTimeoutMs?: number; replyTimeoutMs?: number } = {}): Promise<Connection> {
  const timeoutMs = checkTimeout('connectTimeoutMs', options.connectTimeoutMs, 10_000)
  const replyTimeoutMs = checkTimeout('replyTimeoutMs', options.replyTimeoutMs, 0)
  const { Client } = await loadPg()
  const where = redact(connectionString)
  // keepAlive: this side notices a server that vanished, too (the kernel's probe intervals).
  const client = new Client({ connectionString, application_name: 'rewindfs', connectionTimeoutMillis: timeoutMs, keepAlive: true, keepAliveInitialDelayMillis: 10_000 })
  // Errors before connect resolves are connect's rejection; a listener keeps them from being thrown.
  const early = (): void => undefined
  client.on('error', early)
  // pg ends a connect that ran out of time with 'Connection terminated unexpectedly', which reads as a lost session.
  let expired = false
  const timer = timeoutMs > 0 ? setTimeout(() => (expired = true), timeoutMs) : undefined
  try {
    await client.connect()
    await probeDeadPeers(client)
  } catch (error) {
    await client.end().catch(() => undefined)
    if (expired) throw connectionError('ETIMEDOUT', 'connect', where, `PostgreSQL at ${where} did not accept the connection within ${timeoutMs} ms (${(error as Error)?.message}); is the host reachable?`, error)
    throw translate(error, 'connect', where)
  } finally {
    clearTimeout(timer)
    client.removeListener('error', early)
  }
  return new PgConnection(client, where, () => client.end(), replyTimeoutMs)
}

/** A client checked out of the caller's pool for the store's life, released (destroyed if broken) on close. */
export async function connectPool(pool: PgPoolLike, where = 'the pool', replyTimeoutMs?: number): Promise<Connection> {
  if (typeof pool?.connect !== 'function') {
    throw Object.assign(new TypeError('rewindfs: postgresStore `pool` must be a pg.Pool (something with connect())'), { code: 'ERR_INVALID_ARG_TYPE' })
  }
  let client: Awaited<ReturnType<PgPoolLike['connect']>>
  try {
    client = await pool.connect()
  } catch (error) {
    throw translate(error, 'connect', where)
  }
  try {
    await probeDeadPeers(client)
  } catch (error) {
    client.release(error as Error)
    throw translate(error, 'connect', where)
  }
  return new PgConnection(client, where, async (lost) => client.release(lost ?? undefined), replyTimeoutMs)
}

// ---- PGlite -------------------------------------------------------------------------------------

/** The part of a PGlite instance the store uses. */
export interface PGliteLike {
  query<T>(query: string, params?: unknown[]): Promise<{ rows: T[] }>
  exec(query: string): Promise<unknown>
  transaction<T>(callback: (tx: PGliteTransactionLike) => Promise<T>): Promise<T>
  listen(channel: string, callback: (payload: string) => void): Promise<(tx?: never) => Promise<void>>
  close(): Promise<void>
  readonly closed: boolean
  readonly dataDir?: string
}

export interface PGliteTransactionLike {
  query<T>(query: string, params?: unknown[]): Promise<{ rows: T[] }>
  exec(query: string): Promise<unknown>
}

class PGliteConnection implements Connection {
  readonly backend = 'pglite'
  readonly instance: object
  readonly lost = undefined

  constructor(
    private readonly db: PGliteLike,
    readonly where: string,
    private readonly owned: boolean,
    private readonly lock?: DataDirLock,
  ) {
    this.instance = db
  }

  /**
   * PGlite that cannot make its next WAL segment (16 MiB) on a full disk does not fail the commit:
   * it spins in WebAssembly for ever, this process's event loop with it (sync() never settles, no
   * timer fires). So a write is refused with ENOSPC, before it is sent, while the directory's file
   * system has less free than a segment, the write twice over (WAL and table) and a margin; the
   * workspace goes degraded and takes it once space is freed, as for any full disk.
   */
  room(bytes: number, operation: string): void {
    const free = this.lock?.free()
    if (free === undefined) return
    const needed = WAL_SEGMENT + 2 * bytes + ROOM_MARGIN
    if (free < needed) {
      throw storeError('ENOSPC', operation, this.where, `PostgreSQL's disk is full: ${free} bytes free, and PGlite needs ${needed} to be sure of this write (a new WAL segment of 16 MiB and the write itself; without room for a segment it hangs instead of failing); nothing of this call was written, the last committed state is intact`)
    }
  }

  private runner(tx?: PGliteTransactionLike): Sql {
    const target = tx ?? this.db
    return {
      query: async <Row>(text: string, params: readonly unknown[] = []) => {
        try {
          return (await target.query<Row>(text, params as unknown[])).rows
        } catch (error) {
          throw translate(error, 'query', this.where)
        }
      },
      batch: async (text: string) => {
        try {
          await target.exec(text)
        } catch (error) {
          throw translate(error, 'query', this.where)
        }
      },
      transaction: (body, options) => {
        // Nested: the statements join the transaction already open.
        if (tx) return body(this.runner(tx))
        return this.db.transaction(async (inner) => {
          if (options?.isolation) await inner.exec(`SET TRANSACTION ISOLATION LEVEL ${options.isolation.toUpperCase()}`)
          if (options?.prelude) await inner.exec(options.prelude)
          return body(this.runner(inner))
        })
      },
    }
  }

  query<Row>(text: string, params?: readonly unknown[]): Promise<Row[]> {
    return this.runner().query<Row>(text, params)
  }

  batch(text: string): Promise<void> {
    return this.runner().batch(text)
  }

  transaction<T>(body: (sql: Sql) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.runner().transaction(body, options)
  }

  async listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>> {
    const stop = await this.db.listen(channel, listener)
    return async () => {
      if (!this.db.closed) await stop()
    }
  }

  onLost(): void {
    // In this process: it goes only when it is closed.
  }

  async close(): Promise<void> {
    try {
      if (this.owned && !this.db.closed) await this.db.close()
    } finally {
      // Only once its files are shut: the next opener may start on them at once.
      this.lock?.release()
    }
  }
}

/** PostgreSQL's WAL segment size (PGlite's too), and room kept besides a write's own bytes. */
const WAL_SEGMENT = 16 * 1024 * 1024
const ROOM_MARGIN = 1024 * 1024

type PGliteModule = { PGlite: { create(dataDir?: string): Promise<PGliteLike> } }

/** PGlite in this process: the caller's instance, or one of our own (in memory, or in `dataDir`). */
export async function connectPGlite(options: { db?: PGliteLike; dataDir?: string }): Promise<Connection> {
  if (options.db) {
    if (typeof options.db.query !== 'function' || typeof options.db.transaction !== 'function') {
      throw Object.assign(new TypeError('rewindfs: pgliteStore `db` must be a PGlite instance'), { code: 'ERR_INVALID_ARG_TYPE' })
    }
    return new PGliteConnection(options.db, `pglite:${options.db.dataDir ?? 'memory'}`, false)
  }
  let module: PGliteModule
  try {
    module = (await import('@electric-sql/pglite')) as unknown as PGliteModule
  } catch (error) {
    throw Object.assign(new Error("rewindfs: pgliteStore needs the '@electric-sql/pglite' package (npm install @electric-sql/pglite)"), { code: 'ERR_MODULE_NOT_FOUND', cause: error })
  }
  const where = `pglite:${options.dataDir ?? 'memory'}`
  // Before PGlite touches the directory: a second instance on its files loses commits.
  const lock = options.dataDir === undefined ? undefined : await lockDataDir(options.dataDir)
  try {
    return new PGliteConnection(await module.PGlite.create(options.dataDir), where, true, lock)
  } catch (error) {
    lock?.release()
    throw translate(error, 'open', where)
  }
}

/** A double-quoted SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
