/** Opening the workspace a command works on: the project directory as lower layer, the store --store names. */
import { type DirectorySource, directory } from '../adapters/node-fs/directory.js'
import { type Store, Workspace } from '../src/index.js'
import type { Options } from './arguments.js'
import { checkDirectorySession, openStore, storeLabel } from './store-option.js'
import { UsageError } from './usage.js'

export interface Project {
  readonly ws: Workspace
  readonly lower: DirectorySource
  readonly store?: Store
  /** How the store is named in messages (a server's password left out). */
  readonly label: string
  readonly dir: string
}

/** The project directory, or ENOENT / ENOTDIR naming it. */
export function projectDirectory(command: string, dir: string | undefined, allowLinksOutside = false): DirectorySource {
  if (dir === undefined) throw new UsageError(`${command} needs --dir <project>`)
  return directory(dir, { allowLinksOutside })
}

/**
 * The workspace over --dir with the store in --store. Readers open the store read-only (no lock,
 * so they work beside a running MCP server) and never compact it; a store must already exist for
 * them and for restore and flush, since a new one would hold nothing to act on.
 */
export async function openProject(command: string, options: Options, access: 'read' | 'write'): Promise<Project> {
  const lower = projectDirectory(command, options.dir, options.allowLinksOutside)
  if (options.store === undefined) throw new UsageError(`${command} needs --store <dir> (or postgres://…, pglite:<dir>: the store an MCP server or a program wrote)`)
  const { ws, store } = await openWorkspace(lower, options, { readOnly: access === 'read', existing: true })
  // A store that failed to load leaves a workspace in memory that may hold part of the session:
  // only status (which reports it) may look at that; nothing may restore or flush from it.
  if (ws.status.degraded !== undefined && command !== 'status') {
    await ws.close()
    throw Object.assign(new Error(`${ws.status.degraded}; nothing was done (rewindfs status shows the store's health)`), { code: 'ESTOREUNAVAILABLE' })
  }
  return { ws, lower, store, label: storeLabel(options.store), dir: lower.root }
}

/**
 * The workspace over `lower`, durable in the store --store names when given (never one inside the
 * project; a directory store under its own session): the store closed again, its lock given back,
 * when the workspace cannot open. Readers never compact.
 */
export async function openWorkspace(lower: DirectorySource, options: Options, access: { readOnly?: boolean; existing?: boolean } = {}): Promise<{ ws: Workspace; store: Store | undefined }> {
  const store = options.store === undefined ? undefined : await openStore(options.store, { session: options.session, project: lower.root, ...access })
  let ws: Workspace
  try {
    ws = await Workspace.open({
      lower,
      ...(store ? { store } : {}),
      ...(options.session !== undefined ? { session: options.session } : {}),
      ...(access.readOnly ? { compactEvery: Number.POSITIVE_INFINITY } : {}),
    })
  } catch (error) {
    await store?.close?.()
    throw error
  }
  if (options.store !== undefined) await checkDirectorySession(options.store, ws)
  return { ws, store }
}
