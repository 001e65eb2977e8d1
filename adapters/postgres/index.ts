/**
 * rewindfs/adapters/postgres: sessions in PostgreSQL, for fleets of agents on many machines.
 * `postgresStore` (a server, through `pg`) and `pgliteStore` (PGlite, Postgres in WASM, in this
 * process) are one Store over one schema and one set of statements; `postgresFleet` and
 * `pgliteFleet` list, fork, drop and collect the sessions of that schema.
 */
import { type Connection, type PGliteLike, type PgPoolLike, checkConnectionString, checkTimeout, connectPGlite, connectPool, connectUrl } from './connection.js'
import { FleetView, type Fleet } from './fleet.js'
import { tables } from './schema.js'
import { type PostgresStore, type SessionStoreOptions, SessionStore, checkSession } from './store.js'

export type { PostgresStore, SessionStoreOptions } from './store.js'
export type { CheckpointInfo, Fleet, FleetStorage, FlushRecord, SessionInfo } from './fleet.js'
export type { CollectOptions, CollectReport } from './gc.js'
export type { PGliteLike, PgClientLike, PgPoolLike } from './connection.js'

const DEFAULT_SCHEMA = 'rewindfs'

/** Where a server is: a pool of the caller's, or a connection string (postgres://user:password@host/db, ?host=/dir for a unix socket). */
export type ServerOptions = { pool: PgPoolLike; connectionString?: undefined } | { connectionString: string; pool?: undefined }

export type PostgresStoreOptions = SessionStoreOptions &
  ServerOptions & {
    /** How long to wait for the server to accept the connection (default 10 000 ms). */
    connectTimeoutMs?: number
    /**
     * How long a statement in flight may go without a byte from the server before the connection
     * is given up as lost (a network cut): the workspace goes degraded and reconnects (default
     * 60 000 ms; 0: as long as the kernel keeps retransmitting, about 15 minutes).
     */
    replyTimeoutMs?: number
  }

export type PgliteStoreOptions = SessionStoreOptions & {
  /** The caller's PGlite instance (sessions in one process share it), or… */
  db?: PGliteLike
  /** …a directory for a PGlite of the store's own (closed with it); neither: in memory. */
  dataDir?: string
}

function checkOptions(options: unknown, what: string): asserts options is Record<string, unknown> {
  if (typeof options !== 'object' || options === null) {
    throw Object.assign(new TypeError(`rewindfs: ${what} needs an options object`), { code: 'ERR_INVALID_ARG_TYPE' })
  }
}

function serverConnector(options: ServerOptions & { connectTimeoutMs?: number; replyTimeoutMs?: number }, what: string): () => Promise<Connection> {
  if (options.pool !== undefined && options.connectionString !== undefined) {
    throw Object.assign(new TypeError(`rewindfs: ${what} takes a pool or a connectionString, not both`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const replyTimeoutMs = options.replyTimeoutMs === undefined ? undefined : checkTimeout('replyTimeoutMs', options.replyTimeoutMs, 0)
  if (options.pool !== undefined) {
    const pool = options.pool
    return () => connectPool(pool, 'the pool', replyTimeoutMs)
  }
  const url = checkConnectionString(options.connectionString)
  return () => connectUrl(url, { connectTimeoutMs: options.connectTimeoutMs, replyTimeoutMs })
}

/**
 * Codes that mean "not there yet, try again" for a reopen: the server is down, starting or short of
 * connections (EAGAIN), or the old writer's lock not yet gone (EBUSY: a reopen is the writer coming
 * back, and the server frees a lost connection's lock when it notices; within `timeoutMs`).
 */
const TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EAGAIN', 'EBUSY'])

/** Opens `open` again and again until it succeeds or `timeoutMs` has passed (a server coming back from a restart). */
async function retrying<T>(open: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await open()
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code !== 'string' || !TRANSIENT.has(code) || Date.now() + wait > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }
}

/**
 * The durable store of one session on a PostgreSQL server. Resolves once connected, with the
 * tables made if needed (unless `create: false`: then ENOENT, nothing made, when the session is not
 * there) and, unless `readOnly`, the session's writer lock taken (EBUSY when another connection writes it). A bad connection string is a TypeError before anything is tried; a server
 * that refuses is ECONNREFUSED, a refused login or a missing privilege EACCES, a missing database ENOENT.
 */
export async function postgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  checkOptions(options, 'postgresStore')
  const session = checkSession(options.session)
  const schema = options.schema ?? DEFAULT_SCHEMA
  const t = tables(schema)
  // A store's statements are bounded (16 MiB a statement at most): a minute of silence is a cut network.
  const connect = serverConnector({ ...options, replyTimeoutMs: options.replyTimeoutMs ?? 60_000 }, 'postgresStore')
  const open = async (): Promise<PostgresStore> =>
    SessionStore.open({
      connection: await connect(),
      connect,
      tables: t,
      schemaName: schema,
      options: { session, schema, readOnly: options.readOnly, create: options.create },
      again: (timeoutMs) => retrying(open, timeoutMs),
    })
  return open()
}

/** The durable store of one session in PGlite: the same tables and statements as on a server. */
export async function pgliteStore(options: PgliteStoreOptions): Promise<PostgresStore> {
  checkOptions(options, 'pgliteStore')
  const session = checkSession(options.session)
  const schema = options.schema ?? DEFAULT_SCHEMA
  const t = tables(schema)
  if (options.db !== undefined && options.dataDir !== undefined) {
    throw Object.assign(new TypeError('rewindfs: pgliteStore takes a db or a dataDir, not both'), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  if (options.dataDir !== undefined && (typeof options.dataDir !== 'string' || options.dataDir === '')) {
    throw Object.assign(new TypeError('rewindfs: pgliteStore `dataDir` must be a directory path'), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const open = async (): Promise<PostgresStore> =>
    SessionStore.open({
      connection: await connectPGlite({ db: options.db, dataDir: options.dataDir }),
      connect: () => connectPGlite({ db: options.db, dataDir: options.dataDir }),
      tables: t,
      schemaName: schema,
      options: { session, schema, readOnly: options.readOnly, create: options.create },
      again: (timeoutMs) => retrying(open, timeoutMs),
    })
  return open()
}

/**
 * Every session of a schema on a server: list, fork, drop, collect garbage, read the flush ledgers.
 * The tables are made if needed, unless `create: false` (then ENOENT, nothing made, when they are not there).
 */
export async function postgresFleet(options: ServerOptions & { schema?: string; connectTimeoutMs?: number; create?: boolean }): Promise<Fleet> {
  checkOptions(options, 'postgresFleet')
  const schema = options.schema ?? DEFAULT_SCHEMA
  const t = tables(schema)
  return FleetView.open(await serverConnector(options, 'postgresFleet')(), t, schema, options.create !== false)
}

/** Every session of a schema in PGlite. */
export async function pgliteFleet(options: { db?: PGliteLike; dataDir?: string; schema?: string; create?: boolean } = {}): Promise<Fleet> {
  checkOptions(options, 'pgliteFleet')
  const schema = options.schema ?? DEFAULT_SCHEMA
  return FleetView.open(await connectPGlite({ db: options.db, dataDir: options.dataDir }), tables(schema), schema, options.create !== false)
}
