/**
 * The fleet test: 8 machines (processes) share one base directory and one PostgreSQL database,
 * 4 sessions each, doing random writes, checkpoints, undos, restores, forks and flushes for a fixed
 * time (test/fleet-machine.ts) while this process SIGKILLs random machines mid-commit and starts
 * replacements that take their sessions over. Checked:
 *  - a session reopened on another machine is exactly its last acknowledged state, or the state
 *    of the group commit in flight when its machine died (never anything else);
 *  - every session at the end reopens to the state it closed with;
 *  - flush conflicts between sessions writing the same base happen, and each one is explained by
 *    the shared ledgers: another session's ledger records the version the base has now;
 *  - each shared base file holds what the last flush recorded in the ledgers;
 *  - the base's bytes copied by many sessions are stored once.
 * REWINDFS_FLEET_SEED replays a run (the seed is printed).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { hashBytes } from '../src/blob/hash.js'
import { Workspace } from '../src/index.js'
import { digest, sessionDigest } from './fleet-digest.js'
import { bundleChild } from './support/child-bundle.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const MACHINES = 8
const SESSIONS_PER_MACHINE = 4
/** How long the machines work, once all have started (a minute at most on 2 cores, as the issue asks). */
const WORK_MS = 25_000
/** No kills in the last stretch, so replacements have time to take over before the end. */
const QUIET_END_MS = 6000
const EMPTY = sessionDigest([], [])

const url = await serverUrl()
const REPO = path.resolve(import.meta.dirname, '..')
const OUT = path.join(REPO, 'node_modules/.cache/rewindfs-fleet', String(process.pid))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-fleet-'))
const schema = scratchSchema('fleet')

afterAll(async () => {
  fs.rmSync(tmp, { recursive: true, force: true })
  fs.rmSync(OUT, { recursive: true, force: true })
  if (url) await dropSchema(url, schema)
})

interface SessionTrack {
  /** The last state a group commit made durable, and the one in flight. */
  durable?: string
  pending?: string
  owner: string
  final?: string
  /** Created by its machine, which has reported nothing of it yet: it may not be in the database yet. */
  fresh?: boolean
}

interface Machine {
  readonly name: string
  readonly child: ChildProcess
  readonly closed: Promise<void>
  alive: boolean
  flushing: boolean
  /** Its sessions are open: from now on it is working, so a kill lands mid-work. */
  ready: boolean
}

describe.skipIf(url === undefined)('a fleet of machines on one database and one base directory', () => {
  it('survives SIGKILLs mid-commit, detects flush conflicts through the shared ledgers, and stores the base once', async () => {
    const seed = Number(process.env.REWINDFS_FLEET_SEED ?? Math.floor(Math.random() * 2 ** 31))
    console.log(`[fleet] seed ${seed} (REWINDFS_FLEET_SEED=${seed} replays it)`)
    let next = seed >>> 0
    const random = () => {
      next = (Math.imul(next, 1103515245) + 12345) >>> 0
      return next / 2 ** 32
    }

    // The base: a project of 200 files and 4 files every session may change and flush.
    const base = path.join(tmp, 'base')
    const baseFiles: string[] = []
    for (let d = 0; d < 10; d++) {
      fs.mkdirSync(path.join(base, 'src', `d${d}`), { recursive: true })
      for (let f = 0; f < 20; f++) {
        const file = `src/d${d}/file${f}.txt`
        fs.writeFileSync(path.join(base, file), `base file ${d}/${f}\n`.repeat(20 + f * 10))
        baseFiles.push(file)
      }
    }
    const shared = Array.from({ length: 4 }, (_, i) => `shared/f${i}.txt`)
    fs.mkdirSync(path.join(base, 'shared'))
    for (const file of shared) fs.writeFileSync(path.join(base, file), 'original\n')
    // What a ledger records for a file flushed back to its original: the version it had.
    const originalVersions = await directory(base).versions(shared.map((file) => `/${file}`))
    const originals = new Map(shared.map((file, i) => [`/${file}`, originalVersions[i]]))
    fs.mkdirSync(path.join(base, 'work'))

    const entry = path.join(OUT, 'machine.mjs')
    await bundleChild('test/fleet-machine.ts', entry)

    const sessions = new Map<string, SessionTrack>()
    const machines = new Map<string, Machine>()
    const violations: string[] = []
    const conflicts: { session: string; paths: string[] }[] = []
    const counts = new Map<string, number>()
    let kills = 0
    let adoptions = 0
    /** Set once every first machine is ready: the work runs for WORK_MS from then, whatever the start-up took. */
    let endAt = 0

    const track = (session: string, owner: string) => {
      let known = sessions.get(session)
      if (!known) sessions.set(session, (known = { owner }))
      return known
    }

    const launch = (name: string, create: string[], adopt: string[]): Machine => {
      for (const session of [...create, ...adopt]) track(session, name).owner = name
      // A new session is in the database, empty, as soon as its machine opens it.
      for (const session of create) Object.assign(sessions.get(session)!, { durable: EMPTY, fresh: true })
      const config = { url, schema, base, machine: name, seed: Math.floor(random() * 2 ** 31), endAt, create, adopt, shared, baseFiles }
      const child = spawn(process.execPath, [entry, JSON.stringify(config)], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] })
      const machine: Machine = { name, child, alive: true, flushing: false, ready: false, closed: new Promise((resolve) => child.on('close', () => resolve())) }
      machines.set(name, machine)
      child.stdin!.on('error', () => undefined) // writing 'go' to a machine just killed
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        let message: { t: string; session?: string; digest?: string; absent?: boolean; paths?: string[]; explained?: boolean[]; message?: string }
        try {
          message = JSON.parse(line)
        } catch {
          violations.push(`${name} wrote a line that is not JSON: ${line}`)
          return
        }
        counts.set(message.t, (counts.get(message.t) ?? 0) + 1)
        const session = message.session === undefined ? undefined : track(message.session, name)
        switch (message.t) {
          case 'ready':
            machine.ready = true
            break
          case 'pending':
            session!.owner = name
            session!.pending = message.digest
            session!.fresh = false
            break
          case 'durable':
            session!.durable = message.digest
            session!.pending = undefined
            session!.fresh = false
            break
          case 'adopted': {
            adoptions++
            const { durable, pending } = session!
            if (message.absent) {
              if (durable !== undefined && !session!.fresh) violations.push(`${message.session} was acknowledged (${durable}) but is gone after its machine died`)
            } else if (message.digest !== durable && message.digest !== pending) {
              violations.push(`${message.session} reopened as ${message.digest}; its last acknowledged state was ${durable}, the one in flight ${pending}`)
            }
            session!.durable = message.digest
            session!.pending = undefined
            break
          }
          case 'flush-request':
            if (machine.alive) {
              machine.flushing = true
              child.stdin!.write('go\n')
            }
            break
          case 'flush-end':
            machine.flushing = false
            break
          case 'conflict':
            conflicts.push({ session: message.session!, paths: message.paths! })
            message.explained!.forEach((explained, i) => {
              if (!explained) violations.push(`${message.session}'s flush conflict on ${message.paths![i]} is not explained by any other session's ledger`)
            })
            break
          case 'final':
            session!.final = message.digest
            break
          case 'error':
            violations.push(`${name} failed: ${message.message}`)
            break
        }
      })
      return machine
    }

    for (let m = 0; m < MACHINES; m++) launch(`m${m}`, Array.from({ length: SESSIONS_PER_MACHINE }, (_, s) => `m${m}-s${s}`), [])
    const startedAt = Date.now()
    while (![...machines.values()].every((m) => m.ready || !m.alive)) {
      if (Date.now() - startedAt > 60_000) throw new Error(`the machines did not start in a minute: ${violations.join('; ')}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    endAt = Date.now() + WORK_MS
    for (const machine of machines.values()) machine.child.stdin!.write(`start ${endAt}\n`)

    // Kill a random machine every second or two and a half, never in the middle of a flush; a replacement
    // takes over its sessions once everything it wrote has been read.
    let replacements = 0
    while (Date.now() < endAt - QUIET_END_MS) {
      await new Promise((resolve) => setTimeout(resolve, 1000 + random() * 1500))
      const candidates = [...machines.values()].filter((m) => m.alive && m.ready && !m.flushing)
      if (candidates.length === 0) continue
      const victim = candidates[Math.floor(random() * candidates.length)]
      victim.alive = false
      victim.child.kill('SIGKILL')
      kills++
      await victim.closed
      const orphans = [...sessions].filter(([, s]) => s.owner === victim.name).map(([name]) => name)
      launch(`r${replacements++}`, [], orphans)
    }
    await Promise.all([...machines.values()].map((m) => m.closed))
    for (const machine of machines.values()) {
      if (machine.alive && machine.child.exitCode !== 0) violations.push(`${machine.name} exited with ${machine.child.exitCode}`)
    }

    console.log(`[fleet] ${sessions.size} sessions, ${kills} kills, ${adoptions} adoptions, ${conflicts.length} flush conflicts; messages ${JSON.stringify(Object.fromEntries(counts))}`)
    expect(violations).toEqual([])
    expect(kills).toBeGreaterThanOrEqual(3)
    expect(adoptions).toBeGreaterThan(0)

    // Every session reopens, here, to the state its machine closed it with.
    const lower = directory(base)
    for (const [name, session] of sessions) {
      // A fork its machine died before making, a session its machine died before opening.
      if (session.final === undefined && (session.durable === undefined || session.fresh)) continue
      expect(session.final, `${name} was closed by its machine`).toBeDefined()
      const store = await postgresStore({ connectionString: url!, schema, session: name, readOnly: true })
      const ws = await Workspace.open({ lower, store, session: name, autoCheckpoint: false })
      expect(ws.status.corrupt, name).toBeUndefined()
      expect(digest(ws, name), name).toBe(session.final)
      await ws.close()
    }

    const fleet = await postgresFleet({ connectionString: url!, schema })
    const client = await rawClient(url!)
    try {
      // Conflicts happened between sessions writing the same base, each explained by a ledger.
      expect(conflicts.length).toBeGreaterThan(0)
      // Each shared base file holds what the ledger of its last flush records (or its original).
      // A ledger's signature of a file is f:<mode>:<blob id>, or lower:<mode>:<path>:<version> when
      // the session flushed the base's own file back (an undo or restore to what it had read): the
      // content the base had at that version, the original's or what the flush that wrote it recorded.
      const flushed = await fleet.flushes({ target: lower.id })
      const contentOf = async (sig: string, depth = 0): Promise<string | undefined> => {
        if (sig.startsWith('f:')) {
          const blob = sig.slice(sig.indexOf(':', 2) + 1)
          const { rows: stored } = await client.query<{ bytes: Buffer }>(`SELECT bytes FROM "${schema}".blobs WHERE id = $1`, [blob])
          return stored[0]?.bytes.toString()
        }
        expect(sig.startsWith('lower:'), sig).toBe(true)
        const [, , lowerPath, ...rest] = sig.split(':')
        const version = rest.join(':')
        if (originals.get(lowerPath) === version) return 'original\n'
        const writer = flushed.find((row) => row.path === lowerPath && row.version === version)
        // The flush that wrote that version may be gone from every ledger since (its session flushed the path again).
        return writer && depth < 20 ? contentOf(writer.sig, depth + 1) : undefined
      }
      for (const file of shared) {
        const [now] = await lower.versions([`/${file}`])
        const rows = flushed.filter((row) => row.path === `/${file}` && (row.version ?? undefined) === now)
        const content = fs.readFileSync(path.join(base, file))
        if (rows.length === 0) {
          expect(content.toString(), `${file} was never flushed, so it is the original`).toBe('original\n')
          continue
        }
        const expected = await contentOf(rows[0].sig)
        if (expected === undefined) console.log(`[fleet] ${file}: its last flush wrote back the base as another flush had left it, which no ledger records any more (${rows[0].sig})`)
        else expect(content.toString(), `${file} holds what its last flush recorded (${rows[0].sig})`).toBe(expected)
      }
      // The base's bytes, copied by many sessions, are one blob row each.
      const baseIds = baseFiles.map((file) => hashBytes(fs.readFileSync(path.join(base, file))))
      const { rows } = await client.query<{ id: string; refs: string; rows: string }>(
        `SELECT b.id, (SELECT count(*) FROM "${schema}".blob_refs r WHERE r.blob = b.id) AS refs, count(*) OVER (PARTITION BY b.id) AS rows
           FROM "${schema}".blobs b WHERE b.id = ANY($1::text[])`,
        [baseIds],
      )
      expect(rows.length).toBeGreaterThan(0)
      for (const row of rows) expect(Number(row.rows)).toBe(1)
      expect(rows.some((row) => Number(row.refs) >= 2)).toBe(true)
      const storage = await fleet.storage()
      expect(storage.referencedBytes).toBeGreaterThan(storage.blobBytes)
      console.log(`[fleet] ${storage.blobs} blobs (${storage.blobBytes} bytes) stored for ${storage.referencedBytes} bytes referenced`)
    } finally {
      await client.end()
      await fleet.close()
    }
  }, 180_000)
})
