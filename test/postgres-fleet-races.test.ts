/**
 * The fleet's calls racing each other and the sessions' writers, as machines of one fleet do: forks
 * to one new name at once (one wins, the rest get EEXIST, where they got EIO with a bare unique
 * violation), calls made at once on one fleet object (each takes its turn: one fork's ROLLBACK
 * ended another's transaction halfway, and a fork that resolved was not there), and a drop of a
 * session a PGlite store of the same instance is writing (EBUSY, as on a server, where the
 * instance's one backend granted the drop the writer's own advisory lock); and sessions putting
 * the same new contents at once (npm install in two forks), which deadlocked when their orders
 * differed.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Fleet, pgliteFleet, pgliteStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { Workspace } from '../src/index.js'
import { dropSchema, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()

/** What each promise settled to: 'ok', or its error's code. */
async function outcomes(promises: Promise<unknown>[]): Promise<string[]> {
  return (await Promise.allSettled(promises)).map((r) => (r.status === 'fulfilled' ? 'ok' : String((r.reason as { code?: unknown }).code)))
}

/** The provisioned server's superuser is reached as its OS user (peer login): root only. */
const asServer = process.getuid?.() === 0

describe.skipIf(url === undefined)('fleet races on a server', () => {
  const schema = scratchSchema('pgraces')
  const fleets: Fleet[] = []

  beforeAll(async () => {
    for (let i = 0; i < 4; i++) fleets.push(await postgresFleet({ connectionString: url!, schema }))
    const ws = await Workspace.open({ store: await postgresStore({ connectionString: url!, schema, session: 'source' }), autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', 'a')
    await ws.checkpoint({ name: 'start' })
    await ws.close()
  })
  afterAll(async () => {
    for (const fleet of fleets) await fleet.close()
    await dropSchema(url!, schema)
  })

  it("schema 'a' with session 'b/c' and schema 'a/b' with session 'c' are two sessions with two writer locks", async () => {
    const outer = scratchSchema('slash')
    const inner = `${outer}/b`
    const first = await postgresStore({ connectionString: url!, schema: outer, session: 'b/c' })
    const second = await postgresStore({ connectionString: url!, schema: inner, session: 'c' }).catch((error: unknown) => error as Error)
    try {
      expect(second).not.toBeInstanceOf(Error)
      const fleet = await postgresFleet({ connectionString: url!, schema: inner })
      expect(await fleet.sessions()).toMatchObject([{ session: 'c', writing: true }])
      await first.close()
      expect(await fleet.sessions()).toMatchObject([{ session: 'c', writing: true }])
      await (second as Awaited<ReturnType<typeof postgresStore>>).close()
      expect(await fleet.sessions()).toMatchObject([{ session: 'c', writing: false }])
      await fleet.drop('c')
      await fleet.close()
    } finally {
      await first.close()
      if (!(second instanceof Error)) await second.close()
      await dropSchema(url!, outer)
      await dropSchema(url!, inner)
    }
  })

  it('checkpoints() of a session that does not exist is ENOENT, of one without checkpoints an empty list', async () => {
    await expect(fleets[0].checkpoints('no-such-session')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'checkpoints', path: 'no-such-session' })
    await (await postgresStore({ connectionString: url!, schema, session: 'without-checkpoints' })).close()
    expect(await fleets[0].checkpoints('without-checkpoints')).toEqual([])
    expect((await fleets[0].checkpoints('source')).map((c) => c.name)).toEqual(['start'])
  })

  it('forks to one name from four machines at once: one is made, the others get EEXIST and nothing of theirs is written', async () => {
    for (let round = 0; round < 3; round++) {
      const to = `copy-${round}`
      const results = await outcomes(fleets.map((fleet) => fleet.fork({ from: 'source', to, checkpoint: 'start' })))
      expect(results.filter((r) => r === 'ok')).toHaveLength(1)
      expect(results.filter((r) => r !== 'ok')).toEqual(['EEXIST', 'EEXIST', 'EEXIST'])
      const copy = (await fleets[0].sessions()).find((s) => s.session === to)!
      expect(copy).toMatchObject({ forkedFrom: 'source', forkCheckpoint: 'start', checkpoints: 1 })
    }
  })

  it('calls made at once on one fleet object take turns: a fork that resolved is there whole, whatever a failing one beside it did', async () => {
    const fleet = fleets[0]
    const source = (await fleet.sessions()).find((s) => s.session === 'source')!
    await fleet.fork({ from: 'source', to: 'taken' })
    for (let delay = 0; delay < 8; delay++) {
      const made = fleet.fork({ from: 'source', to: `beside-${delay}` })
      await new Promise((resolve) => setTimeout(resolve, delay))
      const results = await outcomes([made, fleet.fork({ from: 'source', to: 'taken' }), fleet.fork({ from: 'missing', to: `never-${delay}` }), fleet.sessions()])
      expect(results).toEqual(['ok', 'EEXIST', 'ENOENT', 'ok'])
      const copy = (await fleet.sessions()).find((s) => s.session === `beside-${delay}`)
      expect(copy).toMatchObject({ records: source.records, blobs: source.blobs, checkpoints: 1 })
    }
  })

  it('two sessions putting the same new blobs in opposite orders at once both commit (no deadlock)', async () => {
    const a = await postgresStore({ connectionString: url!, schema, session: 'same-content-a' })
    const b = await postgresStore({ connectionString: url!, schema, session: 'same-content-b' })
    try {
      for (let round = 0; round < 10; round++) {
        const blobs = Array.from({ length: 300 }, (_, i) => [`round-${round}-${i}`, new Uint8Array(2000).fill(i % 256)] as const)
        expect(await outcomes([a.putBlobs(blobs), b.putBlobs([...blobs].reverse())])).toEqual(['ok', 'ok'])
      }
      expect((await a.blobIds()).length).toBe(3000)
      expect((await b.blobIds()).length).toBe(3000)
    } finally {
      await a.close()
      await b.close()
    }
  })

  it.skipIf(!asServer)("sessions() says a session is written only when a writer holds it in this database, not one of the same name in another database of the server", async () => {
    const env = Object.fromEntries(
      fs.readFileSync(path.join(new URL(url!).searchParams.get('host') ?? '/nonexistent', 'env'), 'utf8').trim().split('\n').map((line) => line.split('=') as [string, string]),
    )
    const psql = (sql: string) =>
      execFileSync('runuser', ['-u', env.PGUSER_OS, '--', path.join(env.PGBIN, 'psql'), '-h', env.PGSOCKET, '-U', 'postgres', '-d', 'postgres', '-qAtc', sql], { stdio: 'ignore' })
    const other = `rewindfs_other_${process.pid}`
    psql(`CREATE DATABASE ${other} OWNER rewindfs`)
    try {
      const elsewhere = new URL(url!)
      elsewhere.pathname = `/${other}`
      const writer = await postgresStore({ connectionString: elsewhere.toString(), schema, session: 'source' })
      const here = (await fleets[0].sessions()).find((s) => s.session === 'source')
      await writer.close()
      expect(here?.writing).toBe(false)
    } finally {
      psql(`DROP DATABASE ${other}`)
    }
  })
})

describe('fleet races on PGlite', () => {
  it('drop refuses a session a store of the same PGlite instance is writing (EBUSY), and its writer goes on', async () => {
    const db = await PGlite.create()
    const fleet = await pgliteFleet({ db })
    const ws = await Workspace.open({ store: await pgliteStore({ db, session: 'busy' }), autoCheckpoint: false })
    ws.fs.writeFileSync('/kept.txt', 'kept')
    await ws.sync()
    await expect(fleet.drop('busy')).rejects.toMatchObject({ code: 'EBUSY', syscall: 'drop', path: 'busy' })
    ws.fs.writeFileSync('/after.txt', 'after')
    await ws.sync()
    expect(ws.status.degraded).toBeFalsy()
    await ws.close()
    // Closed: the drop goes through.
    await fleet.drop('busy')
    expect(await fleet.sessions()).toEqual([])
    await fleet.close()
    await db.close()
  }, 60_000)
})
