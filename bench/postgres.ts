/**
 * Section 10 of bench/run.ts: sessions on PostgreSQL (rewindfs/adapters/postgres), side by side
 * with the directory store, PGlite and the server's own rate for the same bytes.
 *   10.1 group commits per second for 1 KiB writes, `await ws.sync()` every 1, 10, 100 writes:
 *        postgresStore on the server, pgliteStore (in a data directory) and directoryStore, and
 *        right after each server cell, raw INSERT transactions of the same bytes at the same interval;
 *   10.2 storage for 20 sessions forked from one session holding a 10k-file base, against 20
 *        directory stores that each hold it;
 *   10.3 open/resume latency of a session in another process (a new machine taking it over): the
 *        server, PGlite and a directory store, median of several opens.
 * The server is the one scripts/provision-postgres.sh starts (REWINDFS_POSTGRES_URL, or the URL it
 * wrote); without one the section says so and measures nothing. Every measure checks what it
 * timed (a reopen sees every write; a fork reads back the base).
 */
import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store, Workspace } from '../src/index.js'
import { Content, dirBytes, fmtBytes, fmtCount, fmtMs, fmtOps, fmtRatio, fullGc, median, progress, table } from './lib.js'

export interface PostgresBenchOptions {
  quick: boolean
  emit(markdown: string): void
}

const FULL = { opsPerCell: 5_000, capMs: 5_000, baseFiles: 10_000, forks: 20, opens: 7, resumeFiles: 2_000 }
const QUICK = { opsPerCell: 300, capMs: 1_000, baseFiles: 500, forks: 4, opens: 3, resumeFiles: 200 }
type Config = typeof FULL

const GROUPS = [1, 10, 100]
const DIST = (path: string) => new URL(`../dist/${path}`, import.meta.url).href

type Core = typeof import('../src/index.js')
type Postgres = typeof import('../adapters/postgres/index.js')
type NodeFsAdapter = typeof import('../adapters/node-fs/index.js')

function serverUrl(): string | undefined {
  if (process.env.REWINDFS_POSTGRES_URL) return process.env.REWINDFS_POSTGRES_URL
  try {
    return nodeFs.readFileSync('/tmp/rewindfs-postgres/url', 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

function failed(what: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  progress(`postgres: ${what} FAILED: ${error instanceof Error ? (error.stack ?? message) : message}`)
  return `FAILED: \`${message.split('\n')[0]!.replace(/`/g, "'").replace(/\|/g, '\\|').slice(0, 160)}\``
}

interface Loaded {
  core: Core
  pg: Postgres
  nodeFs: NodeFsAdapter
  url: string
  schema: string
}

// ---- 10.1 group commits ------------------------------------------------------------------------

interface Cell {
  ops: number
  commits: number
  opsPerSecond: number
  commitsPerSecond: number
}

/** 1 KiB writes into /t, `await ws.sync()` every `group`; checks a reopen lists every file. */
async function commits(loaded: Loaded, config: Config, make: () => Promise<Store>, again: () => Promise<Store>, group: number): Promise<Cell> {
  const content = new Content(7)
  const ws: Workspace = await loaded.core.Workspace.open({ store: await make(), autoCheckpoint: false })
  ws.fs.mkdirSync('/t')
  await ws.sync()
  let ops = 0
  let groups = 0
  const start = performance.now()
  let now = start
  while (ops < config.opsPerCell && now - start < config.capMs) {
    for (let k = 0; k < group; k++, ops++) ws.fs.writeFileSync(`/t/f${ops}`, content.stamp(ops))
    await ws.sync()
    groups++
    now = performance.now()
  }
  await ws.close()
  const reopened = await loaded.core.Workspace.open({ store: await again(), autoCheckpoint: false })
  const listed = (reopened.fs.readdirSync('/t') as string[]).length
  await reopened.close()
  if (listed !== ops) throw new Error(`reopened: ${listed} files in /t, expected ${ops}`)
  const seconds = (now - start) / 1000
  return { ops, commits: groups, opsPerSecond: ops / seconds, commitsPerSecond: groups / seconds }
}

/**
 * The server's own rate for the same work: per group commit one transaction inserting `group`
 * rows of `bytesPerOp` (what the store wrote per write: blob, journal record, references), through
 * the same driver and socket.
 */
async function rawInserts(url: string, config: Config, bytesPerOp: number, group: number): Promise<Cell> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const table = `rewindfs_bench_raw_${process.pid}`
  await client.query(`CREATE TABLE ${table} (n bigint PRIMARY KEY, bytes bytea NOT NULL)`)
  const payload = Buffer.alloc(Math.max(1, Math.round(bytesPerOp)), 0x61)
  let ops = 0
  let groups = 0
  const start = performance.now()
  let now = start
  try {
    while (ops < config.opsPerCell && now - start < config.capMs) {
      const rows = Array.from({ length: group }, (_, k) => ops + k)
      await client.query('BEGIN')
      await client.query(`INSERT INTO ${table} (n, bytes) SELECT n, $2 FROM unnest($1::bigint[]) AS n`, [rows, payload])
      await client.query('COMMIT')
      ops += group
      groups++
      now = performance.now()
    }
  } finally {
    await client.query(`DROP TABLE ${table}`).catch(() => undefined)
    await client.end()
  }
  const seconds = (now - start) / 1000
  return { ops, commits: groups, opsPerSecond: ops / seconds, commitsPerSecond: groups / seconds }
}

async function benchCommits(loaded: Loaded, config: Config, root: string): Promise<string> {
  const { pg, nodeFs: adapter, url, schema } = loaded
  const rows: string[][] = []
  let session = 0
  // One PGlite data directory for every cell (made once: PGlite's initdb is the slow part), a session each.
  const pgliteDir = join(root, 'pglite-commits')
  let pgliteSession = ''
  let directoryDir = ''
  const subjects: { name: string; make: () => Promise<Store>; again: () => Promise<Store>; bytesPerOp?: () => Promise<number> }[] = []
  let current = ''
  subjects.push({
    name: 'postgresStore (server, unix socket)',
    make: () => pg.postgresStore({ connectionString: url, schema, session: (current = `commits-${session++}`) }),
    again: () => pg.postgresStore({ connectionString: url, schema, session: current }),
    // What one write cost the server: the session's journal bytes and blob bytes, over its writes.
    bytesPerOp: async () => {
      const fleet = await pg.postgresFleet({ connectionString: url, schema })
      const info = (await fleet.sessions()).find((s) => s.session === current)!
      await fleet.close()
      return (info.journalBytes + info.blobBytes) / Math.max(1, info.blobs)
    },
  })
  subjects.push({
    name: 'pgliteStore (PGlite in a data directory)',
    make: () => pg.pgliteStore({ dataDir: pgliteDir, session: (pgliteSession = `commits-${session++}`) }),
    again: () => pg.pgliteStore({ dataDir: pgliteDir, session: pgliteSession }),
  })
  subjects.push({
    name: `directoryStore (node-fs, ${tmpdir()})`,
    make: async () => adapter.directoryStore((directoryDir = join(root, `directory-${session++}`))),
    again: async () => adapter.directoryStore(directoryDir),
  })
  for (const subject of subjects) {
    const cells: string[] = []
    const raw: string[] = []
    const ratio: string[] = []
    for (const group of GROUPS) {
      fullGc()
      try {
        const cell = await commits(loaded, config, subject.make, subject.again, group)
        cells.push(`${fmtOps(cell.commitsPerSecond)} (${fmtOps(cell.opsPerSecond)} writes)`)
        progress(`postgres: ${subject.name}, sync every ${group}: ${fmtOps(cell.commitsPerSecond)} commits, ${fmtOps(cell.opsPerSecond)} writes over ${cell.ops}`)
        if (subject.bytesPerOp) {
          const bytesPerOp = await subject.bytesPerOp()
          const server = await rawInserts(url, config, bytesPerOp, group)
          raw.push(`${fmtOps(server.commitsPerSecond)} (${Math.round(bytesPerOp)} B/write)`)
          ratio.push(`${Math.round((100 * cell.opsPerSecond) / server.opsPerSecond)} %`)
        }
      } catch (error) {
        cells.push(failed(`${subject.name} every ${group}`, error))
      }
    }
    rows.push([subject.name, ...cells])
    if (raw.length === GROUPS.length) {
      rows.push(['↳ raw INSERT transactions of the same bytes, same interval', ...raw])
      rows.push(['↳ postgresStore ÷ raw', ...ratio])
    }
  }
  return (
    '### 11.1 Group commits per second, 1 KiB writes\n\n' +
    table(['store', ...GROUPS.map((g) => `\`await ws.sync()\` every ${g}`)], rows) +
    `\n\nEach cell writes up to ${fmtCount(config.opsPerCell)} files of 1 KiB into /t (fewer where ${fmtMs(config.capMs)} ran out), one group commit per \`await ws.sync()\`, and shows group commits per second (writes per second). ` +
    'A postgres group commit is one transaction for the new blobs (with their references) and one statement for the journal records. ' +
    'The raw row runs, right after each server cell, one transaction per group inserting as many rows of the bytes that cell wrote per write (journal and blob bytes over writes) through the same driver and socket: ' +
    'what the server gives for the same durable bytes; the ÷ row is the store\'s share of it. After each run the session is reopened and must list every file.'
  )
}

// ---- 10.2 storage of forked sessions -----------------------------------------------------------

async function benchStorage(loaded: Loaded, config: Config, root: string): Promise<string> {
  const { core, pg, nodeFs: adapter, url, schema } = loaded
  const forkSchema = `${schema}_forks`
  const content = new Content(11)
  const fill = async (store: Store) => {
    const ws = await core.Workspace.open({ store, autoCheckpoint: false })
    for (let d = 0; d < config.baseFiles / 100; d++) {
      ws.fs.mkdirSync(`/base/d${d}`, { recursive: true })
      for (let f = 0; f < 100; f++) ws.fs.writeFileSync(`/base/d${d}/f${f}`, content.stamp(d * 100 + f))
    }
    await ws.checkpoint({ name: 'base' })
    await ws.close()
  }
  // The server: one session holds the base; 20 sessions are forked from its checkpoint.
  await fill(await pg.postgresStore({ connectionString: url, schema: forkSchema, session: 'base' }))
  const fleet = await pg.postgresFleet({ connectionString: url, schema: forkSchema })
  const before = await fleet.storage()
  const forkStart = performance.now()
  for (let i = 0; i < config.forks; i++) await fleet.fork({ from: 'base', to: `fork-${i}`, checkpoint: 'base' })
  const forkMs = (performance.now() - forkStart) / config.forks
  const after = await fleet.storage()
  // A fork reads the base back.
  const check = await core.Workspace.open({ store: await pg.postgresStore({ connectionString: url, schema: forkSchema, session: `fork-${config.forks - 1}` }), autoCheckpoint: false })
  const files = (check.fs.readdirSync('/base/d0') as string[]).length
  await check.close()
  if (files !== 100) throw new Error(`a fork lists ${files} files in /base/d0, expected 100`)
  await fleet.close()
  // Directory stores: each session holds the base itself (one written, the others copies of it).
  const first = join(root, 'forks-directory-0')
  await fill(adapter.directoryStore(first))
  for (let i = 1; i < config.forks; i++) nodeFs.cpSync(first, join(root, `forks-directory-${i}`), { recursive: true })
  let directoryDisk = 0
  let directoryApparent = 0
  for (let i = 0; i < config.forks; i++) {
    const { disk, apparent } = dirBytes(join(root, `forks-directory-${i}`))
    directoryDisk += disk
    directoryApparent += apparent
  }
  const rows = [
    ['postgres: 1 base session + forks', fmtBytes(after.blobBytes), fmtBytes(after.referencedBytes), fmtBytes(after.diskBytes), `+${fmtBytes(after.diskBytes - before.diskBytes)}`, fmtMs(forkMs)],
    [`${config.forks} directory stores`, fmtBytes(directoryApparent), fmtBytes(directoryApparent), fmtBytes(directoryDisk), '', ''],
    ['directory ÷ postgres (on disk)', '', '', fmtRatio(directoryDisk / after.diskBytes), '', ''],
  ]
  return (
    `### 11.2 Storage: ${config.forks} sessions forked from one ${fmtCount(config.baseFiles)}-file base\n\n` +
    table(['', 'bytes stored', 'bytes the sessions refer to', 'on disk', 'the forks added', 'one fork'], rows) +
    `\n\nOne session writes ${fmtCount(config.baseFiles)} files of 1 KiB and checkpoints; ${config.forks} sessions are forked from that checkpoint (\`fleet.fork\`: its journal, metadata and blob references are copied in one transaction, never the blobs). ` +
    "On disk is what the schema's tables take (pg_total_relation_size: heap, TOAST, indexes). " +
    `The directory stores each hold the base: one written through a workspace, the others copies of it (what ${config.forks} sessions that each wrote it hold).`
  )
}

// ---- 10.3 open/resume in another process ---------------------------------------------------------

/** Opens a workspace on the store a child process is given, and prints how long open took. */
const CHILD = `
const [kind, where, session] = process.argv.slice(1)
const started = performance.now()
const { Workspace } = await import(${JSON.stringify(DIST('src/index.js'))})
const imported = performance.now()
let store
if (kind === 'postgres') store = await (await import(${JSON.stringify(DIST('adapters/postgres/index.js'))})).postgresStore({ connectionString: where, schema: session.split('/')[0], session: session.split('/')[1] })
else if (kind === 'pglite') store = await (await import(${JSON.stringify(DIST('adapters/postgres/index.js'))})).pgliteStore({ dataDir: where, session })
else store = (await import(${JSON.stringify(DIST('adapters/node-fs/index.js'))})).directoryStore(where)
const ws = await Workspace.open({ store, autoCheckpoint: false })
const opened = performance.now()
const files = ws.fs.readdirSync('/r').length
ws.fs.writeFileSync('/r/resumed', 'yes')
await ws.sync()
const resumed = performance.now()
await ws.close()
console.log(JSON.stringify({ files, importMs: imported - started, openMs: opened - imported, firstCommitMs: resumed - opened }))
`

async function benchResume(loaded: Loaded, config: Config, root: string): Promise<string> {
  const { core, pg, nodeFs: adapter, url, schema } = loaded
  const content = new Content(13)
  const fill = async (store: Store) => {
    const ws = await core.Workspace.open({ store, autoCheckpoint: false })
    ws.fs.mkdirSync('/r')
    for (let i = 0; i < config.resumeFiles; i++) {
      ws.fs.writeFileSync(`/r/f${i}`, content.stamp(i))
      if (i % 100 === 99) await ws.checkpoint({ name: `cp-${i}` })
    }
    await ws.close()
  }
  const pgliteDir = join(root, 'resume-pglite')
  const directoryDir = join(root, 'resume-directory')
  await fill(await pg.postgresStore({ connectionString: url, schema, session: 'resume' }))
  await fill(await pg.pgliteStore({ dataDir: pgliteDir, session: 'resume' }))
  await fill(adapter.directoryStore(directoryDir))
  const subjects: [string, string[]][] = [
    ['postgresStore (server)', ['postgres', url, `${schema}/resume`]],
    ['pgliteStore (data directory)', ['pglite', pgliteDir, 'resume']],
    ['directoryStore', ['directory', directoryDir, 'resume']],
  ]
  const rows: string[][] = []
  for (const [name, args] of subjects) {
    try {
      const runs: { importMs: number; openMs: number; firstCommitMs: number; wallMs: number }[] = []
      for (let i = 0; i < config.opens; i++) {
        const start = performance.now()
        const out = execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, ...args], { encoding: 'utf8' })
        const wallMs = performance.now() - start
        const result = JSON.parse(out.trim().split('\n').pop()!) as { files: number; importMs: number; openMs: number; firstCommitMs: number }
        if (result.files < config.resumeFiles) throw new Error(`the other process saw ${result.files} files, expected ${config.resumeFiles}`)
        runs.push({ ...result, wallMs })
      }
      const m = (key: keyof (typeof runs)[number]) => fmtMs(median(runs.map((r) => r[key])))
      rows.push([name, m('openMs'), m('firstCommitMs'), m('importMs'), m('wallMs')])
      progress(`postgres: resume ${name}: open ${m('openMs')}`)
    } catch (error) {
      rows.push([name, failed(`resume ${name}`, error), '', '', ''])
    }
  }
  return (
    `### 11.3 Open/resume in another process (${fmtCount(config.resumeFiles)} files of 1 KiB, a checkpoint every 100)\n\n` +
    table(['store', 'open (connect, replay, load blobs)', 'first commit after', 'import', 'whole process'], rows) +
    `\n\nMedian of ${config.opens} runs, each a new Node process that opens the session (as a machine taking it over would), lists it, writes one file and syncs. ` +
    'A network store cannot answer a synchronous read, so opening preloads every blob the session refers to (in batches of 256); PGlite pays for starting its WASM Postgres in "open".'
  )
}

// ---- the section -------------------------------------------------------------------------------

export async function benchPostgres(options: PostgresBenchOptions): Promise<void> {
  const config = options.quick ? QUICK : FULL
  const url = serverUrl()
  if (url === undefined) {
    options.emit('### 11. Postgres\n\nSkipped: no PostgreSQL server (run `scripts/provision-postgres.sh`, or set REWINDFS_POSTGRES_URL).')
    return
  }
  const loaded: Loaded = {
    core: (await import(DIST('src/index.js'))) as Core,
    pg: (await import(DIST('adapters/postgres/index.js'))) as Postgres,
    nodeFs: (await import(DIST('adapters/node-fs/index.js'))) as NodeFsAdapter,
    url,
    schema: `bench_${process.pid}`,
  }
  const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-postgres-'))
  const parts: string[] = []
  try {
    for (const [name, part] of [
      ['10.1 group commits', () => benchCommits(loaded, config, root)],
      ['10.2 storage', () => benchStorage(loaded, config, root)],
      ['10.3 resume', () => benchResume(loaded, config, root)],
    ] as const) {
      progress(`postgres: ${name}`)
      try {
        parts.push(await part())
      } catch (error) {
        parts.push(`### ${name}\n\n${failed(name, error)}`)
      }
    }
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    for (const schema of [loaded.schema, `${loaded.schema}_forks`]) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.end()
  }
  options.emit('### 11. Postgres (`rewindfs/adapters/postgres`)\n\n' + parts.join('\n\n'))
}

// Run alone: node --import tsx bench/postgres.ts [--quick]
if (import.meta.url === `file://${process.argv[1]}`) {
  await benchPostgres({ quick: process.argv.includes('--quick'), emit: (markdown) => process.stdout.write(markdown + '\n\n') })
}
