/**
 * The PostgreSQL server the postgres tests run against: the one scripts/provision-postgres.sh
 * started (its URL in REWINDFS_POSTGRES_URL, or in /tmp/rewindfs-postgres/url). Without one the
 * suites skip with the reason, and fail when REWINDFS_REQUIRE names 'postgres' (CI). Also: a
 * private server of a test's own (to restart it), a scratch schema per test file, raw SQL.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { capability } from './support/require.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const PROVISION = path.join(ROOT, 'scripts', 'provision-postgres.sh')
const DEFAULT_DIR = '/tmp/rewindfs-postgres'

function configuredUrl(): string | undefined {
  const fromEnv = process.env.REWINDFS_POSTGRES_URL
  if (fromEnv) return fromEnv
  try {
    return fs.readFileSync(path.join(DEFAULT_DIR, 'url'), 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

async function probe(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('SELECT 1')
    return undefined
  } catch (error) {
    return `cannot connect to ${url.replace(/:[^:@/]*@/, ':***@')}: ${(error as Error).message}`
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** The server's URL, or undefined (and the suite skips) when there is none. */
export async function serverUrl(): Promise<string | undefined> {
  const url = configuredUrl()
  const problem = url === undefined ? 'no server: run scripts/provision-postgres.sh (or set REWINDFS_POSTGRES_URL)' : await probe(url)
  return capability('postgres', problem) ? url : undefined
}

/** A client for raw SQL (the tests' window below the Store interface). */
export async function rawClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => undefined)
  await client.connect()
  return client
}

/** A schema name no other test file or run uses. */
export function scratchSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = await rawClient(url)
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await client.end()
  }
}

/** The same URL with another user, password or database. */
export function withUrl(url: string, change: { user?: string; password?: string; database?: string }): string {
  const parsed = new URL(url)
  if (change.user !== undefined) parsed.username = change.user
  if (change.password !== undefined) parsed.password = change.password
  if (change.database !== undefined) parsed.pathname = `/${change.database}`
  return parsed.toString()
}

/** A server of a test's own in a temp directory, which the test may stop and restart. */
export interface PrivateServer {
  readonly url: string
  readonly dir: string
  restart(): void
  stop(): void
  start(): void
}

/**
 * `tcpPort`: the server also listens on 127.0.0.1 at that port (its socket too), and takes
 * password logins there; `url` is then the TCP one and `socketUrl` the unix socket's.
 */
export function privateServer(options: { tcpPort?: number } = {}): (PrivateServer & { socketUrl: string }) | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pg-'))
  let url: string
  try {
    url = execFileSync('bash', [PROVISION, dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim().split('\n').pop()!
  } catch (error) {
    capability('postgres', `the private server did not start: ${(error as { stderr?: string }).stderr ?? (error as Error).message}`)
    return undefined
  }
  const env = Object.fromEntries(
    fs
      .readFileSync(path.join(dir, 'env'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('=') as [string, string]),
  )
  const ctl = (...args: string[]) => {
    const command = [path.join(env.PGBIN, 'pg_ctl'), '-D', env.PGDATA, ...args]
    if (process.getuid?.() === 0) execFileSync('runuser', ['-u', env.PGUSER_OS, '--', ...command], { stdio: 'ignore' })
    else execFileSync(command[0], command.slice(1), { stdio: 'ignore' })
  }
  const logfile = path.join(dir, 'server.log')
  let listen = `-k ${dir} -c listen_addresses=''`
  let socketUrl = url
  if (options.tcpPort !== undefined) {
    fs.appendFileSync(path.join(env.PGDATA, 'pg_hba.conf'), 'host all all 127.0.0.1/32 scram-sha-256\n')
    listen = `-k ${dir} -c listen_addresses=127.0.0.1 -p ${options.tcpPort}`
    const parsed = new URL(url)
    parsed.port = String(options.tcpPort)
    socketUrl = parsed.toString()
    parsed.hostname = '127.0.0.1'
    parsed.searchParams.delete('host')
    url = parsed.toString()
    ctl('-m', 'fast', '-w', '-l', logfile, '-o', listen, 'restart')
  }
  return {
    url,
    socketUrl,
    dir,
    restart: () => ctl('-m', 'fast', '-w', '-l', logfile, '-o', listen, 'restart'),
    stop: () => ctl('-m', 'fast', '-w', 'stop'),
    start: () => ctl('-w', '-l', logfile, '-o', listen, 'start'),
  }
}

/** Stops a private server and removes its directory. */
export function removeServer(server: PrivateServer): void {
  try {
    server.stop()
  } catch {
    // Already stopped.
  }
  fs.rmSync(server.dir, { recursive: true, force: true })
}
