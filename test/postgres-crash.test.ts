/**
 * SIGKILL at random moments on the PostgreSQL stores (PGlite on a directory, and a real server): a
 * child process runs a seeded session (files, mkdir, rename, unlink, checkpoints, transactions,
 * undo, restore, 2 MiB files on the chunked blob path, compactions by hand and every 12 records)
 * and prints ACK after each acknowledged sync; the parent kills it while it opens, at random, during
 * a large blob's write and during a compaction, then starts the next child on what it left. The
 * oracle is the same session replayed on a MemoryStore: every reopen must be exactly the last
 * acknowledged state, or the one after it (committed, its ACK not yet printed), with no damage
 * reported; and that state, once seen, must survive every later kill.
 * The kill points are random within each round (seeded choice of mode and delay; the seed is in
 * every failure's message; replay with REWINDFS_SEED).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pgliteStore, postgresStore } from '../adapters/postgres/index.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'
import { bundleChild } from './support/child-bundle.js'
import { COMPACT_EVERY, digest, runStep, stepKind } from './support/postgres-crash-script.js'
import { capability } from './support/require.js'
import { randomSeed } from './support/seed.js'

const REPO = path.resolve(import.meta.dirname, '..')
const OUT = path.join(REPO, 'node_modules/.cache/rewindfs-postgres-crash', String(process.pid))
const ENTRY = path.join(OUT, 'child.mjs')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-postgres-crash-'))
/** Steps of the script: more than any run gets through in its time. */
const STEPS = 600
/** Rounds start until this much time has passed (each store): the whole test stays near a minute. */
const BUDGET_MS = 30_000
const SEED = randomSeed
const url = await serverUrl()

const FULL_DISK = path.join(OUT, 'full-disk.mjs')

beforeAll(async () => {
  fs.mkdirSync(OUT, { recursive: true })
  await bundleChild('test/support/postgres-crash-child.ts', ENTRY)
  await bundleChild('test/support/postgres-crash-full-disk.ts', FULL_DISK)
}, 60_000)
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
  fs.rmSync(OUT, { recursive: true, force: true })
})

/** mulberry32 for the kill schedule. */
function generator(seed: number) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * The digest of the state after each step: the session on a MemoryStore, no kills. Advanced only
 * as far as a check needs (each store's run reaches a different step).
 */
const memory = Workspace.open({ store: new MemoryStore(), autoCheckpoint: false, compactEvery: COMPACT_EVERY })
const digests: string[] = []
async function stateAfter(n: number): Promise<string> {
  const ws = await memory
  if (digests.length === 0) digests.push(await digest(ws))
  while (digests.length <= n) {
    await runStep(ws, SEED, digests.length)
    await ws.sync()
    digests.push(await digest(ws))
  }
  return digests[n]
}

type Mode = 'open' | 'random' | 'big' | 'compact'
interface Round {
  mode: Mode
  opened?: { digest: string; damage: string }
  acks: number[]
  begun: string[]
  done: boolean
  exit: { code: number | null; signal: NodeJS.Signals | null }
  stderr: string
}

/** One child from `last` (the state it should find), killed as `mode` says after a delay of `fraction` of the mode's window. */
async function round(kind: 'pglite' | 'postgres', where: string, schema: string, last: number, mode: Mode, fraction: number, openMs: number): Promise<Round> {
  const child: ChildProcess = spawn(process.execPath, [ENTRY, kind, where, schema, String(SEED), String(last), await stateAfter(last + 1), String(STEPS)], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const result: Round = { mode, acks: [], begun: [], done: false, exit: { code: null, signal: null }, stderr: '' }
  child.stderr!.on('data', (chunk: Buffer) => (result.stderr += chunk.toString()))
  let timer: ReturnType<typeof setTimeout> | undefined
  const killAfter = (ms: number) => {
    if (timer === undefined) timer = setTimeout(() => child.kill('SIGKILL'), ms)
  }
  // Never more than a few seconds a round, whatever the mode waits for.
  const cap = setTimeout(() => child.kill('SIGKILL'), openMs + 4000)
  if (mode === 'open') killAfter(fraction * openMs * 1.2)
  const lines = readline.createInterface({ input: child.stdout! })
  lines.on('line', (line) => {
    const [word, a, b] = line.split(' ')
    if (word === 'OPEN') {
      result.opened = { digest: a, damage: line.slice(`OPEN ${a} `.length) }
      if (mode === 'random') killAfter(fraction * 1500)
    } else if (word === 'BEGIN') {
      result.begun.push(`${a} ${b}`)
      // A 2 MiB blob's write, or a compaction, is under way: somewhere inside it.
      if (mode === 'big' && b === 'big') killAfter(fraction * 250)
      if (mode === 'compact' && b === 'compact') killAfter(fraction * 80)
    } else if (word === 'ACK') result.acks.push(Number(a))
    else if (word === 'DONE') result.done = true
  })
  // 'close': every line the child wrote before it died is read.
  await new Promise<void>((resolve) => child.on('close', (code, signal) => {
    result.exit = { code, signal }
    resolve()
  }))
  clearTimeout(timer)
  clearTimeout(cap)
  return result
}

async function crashLoop(kind: 'pglite' | 'postgres', where: string, schema: string, reopen: () => Promise<Workspace>): Promise<void> {
  const random = generator(SEED ^ (kind === 'pglite' ? 0x1234 : 0x5678))
  const modes: Mode[] = ['random', 'big', 'compact', 'open']
  const started = Date.now()
  let last = 0
  let openMs = 3000
  const log: string[] = []
  /** Kills that landed while a step of this kind was under way (begun, not acknowledged). */
  const inside: Record<string, number> = {}
  const context = () => `seed ${SEED} (replay with REWINDFS_SEED=${SEED}); rounds:\n${log.join('\n')}`
  for (let n = 0; Date.now() - started < BUDGET_MS; n++) {
    const mode = n === 0 ? 'random' : modes[n % modes.length]
    const spawned = Date.now()
    const result = await round(kind, where, schema, last, mode, random(), openMs)
    log.push(`  ${mode}: from ${last}, opened ${result.opened?.digest ?? '-'}, acks ${result.acks[0] ?? '-'}..${result.acks.at(-1) ?? '-'}, last begun ${result.begun.at(-1) ?? '-'}, exit ${result.exit.signal ?? result.exit.code}`)
    const [begun, stepKindBegun] = (result.begun.at(-1) ?? '').split(' ')
    if (result.exit.signal === 'SIGKILL') {
      const where = result.opened === undefined ? 'open' : begun !== undefined && Number(begun) !== result.acks.at(-1) ? stepKindBegun : 'between steps'
      inside[where] = (inside[where] ?? 0) + 1
    }
    if (result.exit.signal !== 'SIGKILL' && !result.done) throw new Error(`the child failed (${result.exit.code}): ${result.stderr}\n${context()}`)
    if (result.opened) {
      if (n === 0) openMs = Math.max(500, Date.now() - spawned)
      // What it found: the last acknowledged state, or the next one (committed, not yet acknowledged).
      expect([await stateAfter(last), await stateAfter(last + 1)], `reopened after step ${last}: ${context()}`).toContain(result.opened.digest)
      expect(result.opened.damage, context()).toBe('{"corrupt":null,"warnings":[],"verify":[]}')
      // Seen once, it is durable: a later kill must not take it back.
      if (result.opened.digest === (await stateAfter(last + 1))) last++
    }
    if (result.acks.length > 0) {
      expect(result.acks[0], context()).toBe(last + 1)
      last = result.acks.at(-1)!
    }
    if (result.done) break
  }
  const ws = await reopen()
  try {
    expect([await stateAfter(last), await stateAfter(last + 1)], `final reopen after step ${last}: ${context()}`).toContain(await digest(ws))
    expect(ws.status.corrupt, context()).toBeUndefined()
    expect((await ws.verify()).corrupt, context()).toEqual([])
  } finally {
    await ws.close()
  }
  // Enough happened to mean something: kills in every mode, big writes and compactions acknowledged.
  expect(last, context()).toBeGreaterThan(2 * 9)
  console.log(`[rewindfs] ${kind} crash loop: ${log.length} rounds, ${last} steps acknowledged, killed during ${JSON.stringify(inside)} (seed ${SEED})`)
}

describe('SIGKILL at random moments: every acknowledged state survives, nothing never written appears', () => {
  it('PGlite on a directory', async () => {
    const dataDir = path.join(tmp, 'pglite')
    // PGlite's first open makes its database (initdb, many seconds): once, before the kills.
    await (await pgliteStore({ dataDir, session: 'crash' })).close()
    await crashLoop('pglite', dataDir, 'rewindfs', async () => Workspace.open({ store: await pgliteStore({ dataDir, session: 'crash' }), autoCheckpoint: false }))
  }, 120_000)

  it.skipIf(url === undefined)('a PostgreSQL server', async () => {
    const schema = scratchSchema('crash')
    try {
      await crashLoop('postgres', url!, schema, async () => Workspace.open({ store: await postgresStore({ connectionString: url!, session: 'crash', schema }), autoCheckpoint: false }))
    } finally {
      await dropSchema(url!, schema)
    }
  }, 120_000)
})

const unshare = spawnSync('unshare', ['-m', 'true']).status === 0
const smallDisk = capability('small-disk', process.getuid?.() !== 0 ? 'not root (a tmpfs is mounted in a private mount namespace)' : unshare ? undefined : 'unshare -m does not work here')

describe.skipIf(!smallDisk)('PGlite on a full disk', () => {
  it('fails the commit that does not fit with ENOSPC (never hangs), loses none before it, and takes what was kept back once space is freed', async () => {
    // A fresh data directory (its WAL segment nearly empty), copied onto a tmpfs with 20 MiB free
    // besides a ballast file: the tables fill before the disk, and the WAL's next 16 MiB segment
    // cannot be made, where PGlite spun for ever.
    const template = path.join(tmp, 'full-template')
    await (await pgliteStore({ dataDir: template, session: 'full' })).close()
    const mount = fs.mkdtempSync(path.join(tmp, 'disk-'))
    const size = Math.ceil(Number(execDu(template)) / (1024 * 1024)) + 24
    const script = [
      'set -e',
      `mount -t tmpfs -o size=${size}m tmpfs "$1"`,
      'cp -r "$2" "$1/data"',
      'free=$(df -B1 --output=avail "$1" | tail -1)',
      'fallocate -l $((free - 20 * 1024 * 1024)) "$1/ballast"',
      // The child itself is killed on a hang (killing the shell would leave it spinning).
      'timeout -s KILL 45 "$3" "$4" "$1/data" run',
      '"$3" "$4" "$1/data" check',
    ].join('\n')
    const result = spawnSync('unshare', ['-m', 'sh', '-c', script, 'sh', mount, template, process.execPath, FULL_DISK], { encoding: 'utf8', timeout: 90_000, killSignal: 'SIGKILL' })
    const lines = result.stdout.trim().split('\n')
    expect(result.status, `the child hung or failed (${result.status ?? result.signal}; last lines: ${lines.slice(-2).join(' | ')}): ${result.stderr}`).toBe(0)
    const run = JSON.parse(lines.at(-2)!) as { acknowledged: number; failure: string; reconnect: { state: string } | null; after: string }
    const check = JSON.parse(lines.at(-1)!) as { files: number; others: string[]; intact: number; corrupt: unknown; degraded: unknown; verify: string[] }
    expect(run.failure).toMatch(/^EDEGRADED: .*ENOSPC/)
    expect(run.acknowledged).toBeGreaterThan(10)
    expect(run.reconnect?.state).toBe('reconnected')
    expect(run.after).toBe('committed')
    // Every acknowledged file, the one that failed (sent again once there was room), and those made meanwhile.
    expect(check).toEqual({ files: run.acknowledged + 1, others: ['after.txt', 'while-full.txt'], intact: run.acknowledged + 1, corrupt: null, degraded: null, verify: [] })
  }, 120_000)
})

/** Bytes a directory takes on disk. */
function execDu(directory: string): string {
  return spawnSync('du', ['-sb', directory], { encoding: 'utf8' }).stdout.split('\t')[0]
}

describe.skipIf(url === undefined)("a PostgreSQL server that drops the store's connection at random moments", () => {
  it('the workspace reconnects in place each time, and a reopen is exactly its state: nothing acknowledged lost, nothing unacknowledged made up', async () => {
    const schema = scratchSchema('crash_drop')
    const random = generator(SEED ^ 0x9abc)
    const killer = await rawClient(url!)
    const store = await postgresStore({ connectionString: url!, session: 'dropped', schema })
    const ws = await Workspace.open({ store, autoCheckpoint: false, compactEvery: COMPACT_EVERY })
    let drops = 0
    let stop = false
    // The backend that holds this session's writer lock (no other test's connection).
    const terminate = async () => {
      const rows = await killer.query(
        `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted
            AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`,
        [`${schema}/dropped`],
      )
      drops += rows.rowCount ?? 0
    }
    const dropping = (async () => {
      while (!stop) {
        await new Promise((resolve) => setTimeout(resolve, 20 + random() * 300))
        if (!stop) await terminate()
      }
    })()
    const settled = async (what: string) => {
      for (let tries = 0; ; tries++) {
        try {
          return await ws.sync()
        } catch (error) {
          if (!['EDEGRADED', 'ECONNRESET'].includes((error as { code?: string }).code ?? '') || tries > 200 || ws.status.reconnect?.state === 'refused') throw new Error(`${what} (seed ${SEED}): ${(error as Error).message}`)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
    }
    try {
      for (let n = 1; n <= 150; n++) {
        try {
          await runStep(ws, SEED, n)
        } catch (error) {
          // The call in flight when the connection drops (ECONNRESET), or one while degraded, rejects: not
          // acknowledged; the workspace may hold it in memory and send it once back.
          if (!['EDEGRADED', 'ECONNRESET'].includes((error as { code?: string }).code ?? '')) throw error
        }
        await settled(`sync after step ${n}`)
      }
    } finally {
      stop = true
      await dropping
    }
    await settled('the last sync')
    const live = await digest(ws)
    await ws.close()
    const again = await Workspace.open({ store: await postgresStore({ connectionString: url!, session: 'dropped', schema }), autoCheckpoint: false })
    try {
      expect(again.status.corrupt, `seed ${SEED}`).toBeUndefined()
      expect(await digest(again), `seed ${SEED}, ${drops} drops`).toBe(live)
      expect((await again.verify()).corrupt).toEqual([])
    } finally {
      await again.close()
      await killer.end()
      await dropSchema(url!, schema)
    }
    expect(drops, `seed ${SEED}`).toBeGreaterThan(5)
    console.log(`[rewindfs] server connection dropped ${drops} times (seed ${SEED})`)
  }, 120_000)
})
