/**
 * The tables every session of a fleet shares, in one schema (default `rewindfs`), made on first use
 * and versioned. One layout for the server and PGlite:
 *
 *   sessions     one row per session: its writer's fencing token, the next journal number, sizes,
 *                last activity, what it was forked from
 *   journal      (session, seq) → record: a group commit is one transaction, so appends never tear
 *   blobs        content-addressed, shared by every session (a blob the fleet writes twice is stored
 *                once); up to CHUNK bytes inline, larger ones in blob_chunks
 *   blob_refs    which session holds which blob: a session sees only its own; garbage collection
 *                (gc.ts) deletes a blob no session refers to
 *   meta         (session, key) → JSON text
 *   kept         what a session set aside (a journal, a blob's bytes, a metadata value)
 *   checkpoints  every session's checkpoints, kept in step with its journal (for listings)
 *   flushes      every session's flush ledger: who wrote which path of which target, and when
 *
 * Making the tables needs CREATE on the database; once made, a role with USAGE on the schema and
 * SELECT/INSERT/UPDATE/DELETE on its tables is enough (the README lists the grants).
 */
import { quoteIdentifier, type Sql } from './connection.js'
import { storeError } from './errors.js'

export const SCHEMA_VERSION = 1
/** Blobs larger than this are stored in chunks of this size. */
export const CHUNK = 1024 * 1024

/** Fully qualified table names of one schema. */
export interface Tables {
  readonly schema: string
  readonly format: string
  readonly sessions: string
  readonly journal: string
  readonly blobs: string
  readonly chunks: string
  readonly refs: string
  readonly meta: string
  readonly kept: string
  readonly checkpoints: string
  readonly flushes: string
}

export function tables(schema: string): Tables {
  // The server cuts an identifier to 63 bytes, NUL cannot be sent and a lone surrogate arrives as
  // U+FFFD: each would make two names one schema.
  if (typeof schema !== 'string' || schema === '' || new TextEncoder().encode(schema).byteLength > 63 || schema.includes('\0') || /\p{Cs}/u.test(schema)) {
    throw Object.assign(new TypeError(`rewindfs: a schema name is 1 to 63 bytes of well-formed UTF-8 without NUL; got ${JSON.stringify(schema)}`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  const s = quoteIdentifier(schema)
  return {
    schema: s,
    format: `${s}.format`,
    sessions: `${s}.sessions`,
    journal: `${s}.journal`,
    blobs: `${s}.blobs`,
    chunks: `${s}.blob_chunks`,
    refs: `${s}.blob_refs`,
    meta: `${s}.meta`,
    kept: `${s}.kept`,
    checkpoints: `${s}.checkpoints`,
    flushes: `${s}.flushes`,
  }
}

function ddl(t: Tables): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${t.schema};
CREATE TABLE IF NOT EXISTS ${t.format} (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS ${t.sessions} (
  id text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  forked_from text,
  fork_checkpoint text,
  writer text,
  next_seq bigint NOT NULL DEFAULT 1,
  records bigint NOT NULL DEFAULT 0,
  journal_bytes bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ${t.journal} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  record text NOT NULL,
  PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS ${t.blobs} (
  id text PRIMARY KEY,
  size bigint NOT NULL,
  chunks integer NOT NULL DEFAULT 0,
  bytes bytea,
  suspect boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  orphaned_at timestamptz
);
CREATE TABLE IF NOT EXISTS ${t.chunks} (
  blob text NOT NULL REFERENCES ${t.blobs} (id) ON DELETE CASCADE,
  n integer NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (blob, n)
);
CREATE TABLE IF NOT EXISTS ${t.refs} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  blob text NOT NULL REFERENCES ${t.blobs} (id),
  PRIMARY KEY (session, blob)
);
CREATE INDEX IF NOT EXISTS blob_refs_blob ON ${t.refs} (blob);
CREATE TABLE IF NOT EXISTS ${t.meta} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  key text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (session, key)
);
CREATE TABLE IF NOT EXISTS ${t.kept} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  name text NOT NULL,
  records text[],
  bytes bytea,
  value text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session, name)
);
CREATE TABLE IF NOT EXISTS ${t.checkpoints} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  kind text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (session, id)
);
CREATE TABLE IF NOT EXISTS ${t.flushes} (
  session text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
  target text NOT NULL,
  path text NOT NULL,
  sig text NOT NULL,
  version text,
  flushed_by text,
  flushed_at timestamptz,
  PRIMARY KEY (session, target, path)
);
CREATE INDEX IF NOT EXISTS flushes_target_path ON ${t.flushes} (target, path);
`
}

/** The lock key that serialises making the tables (two stores opening a new database at once). */
const MIGRATION_LOCK = "hashtextextended('rewindfs:migrate', 0)"

/**
 * Makes the schema's tables if they are not there, and refuses a layout from a newer rewindfs. A
 * role without CREATE gets EACCES saying what to grant, unless the tables are there already.
 */
export async function ensureSchema(sql: Sql, t: Tables, where: string): Promise<void> {
  const version = await readVersion(sql, t)
  if (version === undefined) {
    // The lock is taken before the transaction begins: a transaction reads the catalog as its start
    // found it (a backend's caches catch up with other commits when it begins or locks a table), so
    // one begun before the lock was granted would not see the tables another store just made.
    await sql.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`)
    try {
      await makeTables(sql, t, where)
    } finally {
      await sql.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`).catch(() => undefined)
    }
    return
  }
  if (version > SCHEMA_VERSION) {
    throw storeError('EIO', 'open', where, `the schema ${t.schema} was made by a newer rewindfs (layout ${version}; this one reads ${SCHEMA_VERSION}): upgrade rewindfs`)
  }
}

/** Under the migration lock: the tables and the format row in one transaction, unless another store made them meanwhile. */
async function makeTables(sql: Sql, t: Tables, where: string): Promise<void> {
  await sql.transaction(async (tx) => {
    // Another store may have made them while we waited for the lock.
    if ((await readVersion(tx, t)) !== undefined) return
    // Tables of these names without a format table are someone else's (a `sessions` table is
    // common): CREATE TABLE IF NOT EXISTS would adopt them, and the store would write its rows
    // into them. Nothing is made then.
    const names = [t.sessions, t.journal, t.blobs, t.chunks, t.refs, t.meta, t.kept, t.checkpoints, t.flushes]
    const taken = await tx.query<{ name: string }>(`SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL`, [names])
    if (taken.length > 0) {
      throw storeError(
        'EEXIST',
        'open',
        where,
        `the schema ${t.schema} holds tables rewindfs did not make (${taken.map((row) => row.name).join(', ')}; it has no ${t.format} table): name a schema of rewindfs's own (the schema option, default "rewindfs")`,
      )
    }
    await tx.batch(ddl(t))
    await tx.query(`INSERT INTO ${t.format} (version) VALUES ($1)`, [SCHEMA_VERSION])
  })
}

/** A reader's check: the tables, if there, are of a layout this rewindfs reads (it makes nothing). Resolves with the layout, undefined when there are none. */
export async function checkLayout(sql: Sql, t: Tables, where: string): Promise<number | undefined> {
  const version = await readVersion(sql, t)
  if (version !== undefined && version > SCHEMA_VERSION) {
    throw storeError('EIO', 'open', where, `the schema ${t.schema} was made by a newer rewindfs (layout ${version}; this one reads ${SCHEMA_VERSION}): upgrade rewindfs`)
  }
  return version
}

async function readVersion(sql: Sql, t: Tables): Promise<number | undefined> {
  const [exists] = await sql.query<{ table: string | null }>(`SELECT to_regclass($1)::text AS table`, [t.format])
  if (exists?.table == null) return undefined
  const [row] = await sql.query<{ version: number }>(`SELECT max(version) AS version FROM ${t.format}`)
  return row?.version ?? undefined
}
