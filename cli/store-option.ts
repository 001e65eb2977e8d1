/**
 * What --store names: a directory (a directoryStore), a PostgreSQL server (postgres://… or
 * postgresql://…: the session --session names in its shared tables, in the schema `?schema=`
 * names, default rewindfs) or a PGlite data directory (pglite:<dir>). Every command opens its store here, so they all take the three.
 */
import fs from 'node:fs'
import path from 'node:path'
import { directoryStore } from '../adapters/node-fs/store.js'
import { type Fleet, type PostgresStore, pgliteFleet, pgliteStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { redact } from '../adapters/postgres/errors.js'
import { FsError } from '../src/errors.js'
import type { Store, Workspace } from '../src/index.js'
import { UsageError } from './usage.js'

export type StoreLocation =
  | { readonly kind: 'directory'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema?: string }
  | { readonly kind: 'pglite'; readonly dataDir: string }

/** A postgres URL's own `schema` parameter (the schema of the fleet's tables) is ours, not the driver's. */
function splitSchema(value: string): { url: string; schema?: string } {
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    return { url: value } // postgresStore says what is wrong with it
  }
  const schema = parsed.searchParams.get('schema')
  if (schema === null) return { url: value }
  parsed.searchParams.delete('schema')
  return { url: parsed.toString(), schema }
}

export function storeLocation(value: string): StoreLocation {
  if (/^postgres(ql)?:\/\//.test(value)) return { kind: 'postgres', ...splitSchema(value) }
  if (value.startsWith('pglite:')) {
    const dataDir = value.slice('pglite:'.length)
    if (dataDir === '') throw new UsageError("--store pglite: needs a data directory (pglite:<dir>)")
    return { kind: 'pglite', dataDir }
  }
  return { kind: 'directory', path: value }
}

/** How the store is named in messages (a server's password left out). */
export function storeLabel(value: string): string {
  const location = storeLocation(value)
  return location.kind === 'postgres' ? redact(value) : value
}

/**
 * --store and --session as a command suggested next gives them, to act on the same session of the
 * same store: the store as given, but never its password (it would stay in the terminal and the
 * shell's history); a command without one reads it from PGPASSWORD, as pg does, and `note` says
 * so when one was left out. Directory and pglite: stores are as given.
 */
export function storeOptions(value: string, session: string | undefined): { readonly options: [name: string, value: string][]; readonly note?: string } {
  const location = storeLocation(value)
  const { text, passwordLeftOut } = location.kind === 'postgres' ? withoutPassword(value) : { text: value, passwordLeftOut: false }
  return {
    options: [['store', text], ...(session !== undefined ? [['session', session] as [string, string]] : [])],
    ...(passwordLeftOut ? { note: "the store's password is left out: the command reads it from PGPASSWORD" } : {}),
  }
}

/** A postgres URL without its password, in the user information or the query (?password=). */
function withoutPassword(value: string): { text: string; passwordLeftOut: boolean } {
  let text: string
  let passwordLeftOut = false
  try {
    const url = new URL(value)
    passwordLeftOut = url.password !== ''
    url.password = ''
    text = url.href
  } catch {
    // Not a URL (it would not have opened): shown as messages show it.
    return { text: redact(value), passwordLeftOut: true }
  }
  const query = text.replace(/([?&])password=[^&#]*(&|(?=#)|$)/gi, '$1').replace(/[?&](?=#|$)/, '')
  return { text: query, passwordLeftOut: passwordLeftOut || query !== text }
}

/**
 * Opens the store --store names for `session`. `existing`: the store must hold something already
 * (readers, restore, flush: a new one would hold nothing to act on), ENOENT otherwise, and nothing
 * is made to find that out: a store of sessions looks for the schema and the session read-only
 * before it takes the writer's lock (a misspelt --session or ?schema= made an empty session row,
 * or a whole schema of tables, on the way to its ENOENT).
 */
export async function openStore(value: string, options: { session?: string; readOnly?: boolean; existing?: boolean; project?: string }): Promise<Store> {
  const location = storeLocation(value)
  const session = options.session ?? 'main'
  const local = location.kind === 'directory' ? location.path : location.kind === 'pglite' ? location.dataDir : undefined
  if (local !== undefined && options.project !== undefined && within(options.project, local)) {
    throw new UsageError(
      `the store ${local} is inside the project ${options.project}: the agent's tools and commands would see it, could change or delete it, and a flush could write over it; put it outside the project (for example ${path.join(path.dirname(options.project), path.basename(options.project) + '.rewindfs')})`,
    )
  }
  switch (location.kind) {
    case 'directory':
      // A file there is the store constructor's ENOTDIR; nothing there, no store to act on.
      if (options.existing && !isDirectory(location.path) && !fs.existsSync(location.path)) {
        throw new FsError('ENOENT', 'open', location.path, undefined, 'no store in this directory (rewindfs mcp --store creates one)')
      }
      return directoryStore(location.path, { readOnly: options.readOnly === true })
    case 'postgres':
    case 'pglite': {
      let store: PostgresStore
      const create = options.existing !== true
      if (location.kind === 'postgres') {
        store = await postgresStore({ connectionString: location.url, session, readOnly: options.readOnly === true, create, ...(location.schema ? { schema: location.schema } : {}) })
      } else {
        // A directory without a database in it would become one.
        if (options.existing && !fs.existsSync(path.join(location.dataDir, 'PG_VERSION'))) {
          throw new FsError('ENOENT', 'open', location.dataDir, undefined, 'no PGlite database in this directory (rewindfs mcp --store pglite:<dir> creates one)')
        }
        store = await pgliteStore({ dataDir: location.dataDir, session, readOnly: options.readOnly === true, create })
      }
      if (options.existing && !options.readOnly && (await store.readJournal()).records.length === 0) {
        await store.close()
        throw new FsError('ENOENT', 'open', `${storeLabel(value)}#${session}`, undefined, `no session '${session}' in this store`)
      }
      return store
    }
  }
}

/**
 * A directory store holds one session: the one its history was written under. --session names
 * another (or, not given, 'main' does) and the workspace would print that name over the history
 * it holds and add its operations to it, an undo taking back the other's: EINVAL naming the one it
 * holds, unless its history is empty or names the session asked. The workspace is closed then.
 * (A store of sessions, postgres or PGlite, holds every one apart; a fork there starts from its
 * source's history, recorded under the source's name.)
 */
export async function checkDirectorySession(value: string, ws: Workspace): Promise<void> {
  if (storeLocation(value).kind !== 'directory') return
  let newest: string | undefined
  for (const operation of ws.history()) {
    if (operation.session === ws.session) return
    newest ??= operation.session
  }
  if (newest === undefined) return
  await ws.close()
  throw new FsError('EINVAL', 'open', undefined, undefined, `the directory store holds session '${newest}' (its history), not '${ws.session}': it holds one session; open it with --session ${newest}, or use a store that holds many (postgres://…, pglite:<dir>)`)
}

/**
 * The fleet in a postgres or PGlite store; a directory holds one session, so it has none. Listing
 * makes nothing: a misspelt ?schema= or directory is ENOENT, not a new schema or database there.
 */
export async function openFleet(value: string): Promise<Fleet> {
  const location = storeLocation(value)
  if (location.kind === 'postgres') return postgresFleet({ connectionString: location.url, create: false, ...(location.schema ? { schema: location.schema } : {}) })
  if (location.kind === 'pglite') {
    if (!fs.existsSync(path.join(location.dataDir, 'PG_VERSION'))) throw new FsError('ENOENT', 'open', location.dataDir, undefined, 'no PGlite database in this directory')
    return pgliteFleet({ dataDir: location.dataDir, create: false })
  }
  throw new UsageError(`sessions needs a store that holds sessions: --store postgres://… or --store pglite:<dir> (a directory store holds one)`)
}

/**
 * Whether `candidate` is `root` (a real path) or under it, links resolved: its nearest existing
 * ancestor's real path with the rest of it (a store not made yet is where it will be made).
 */
function within(root: string, candidate: string): boolean {
  let existing = path.resolve(candidate)
  const rest: string[] = []
  for (;;) {
    try {
      existing = fs.realpathSync.native(existing)
      break
    } catch {
      const parent = path.dirname(existing)
      if (parent === existing) break
      rest.unshift(path.basename(existing))
      existing = parent
    }
  }
  const full = path.join(existing, ...rest)
  return full === root || full.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
}

function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}
