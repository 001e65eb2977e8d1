/**
 * What passes if tried again is EAGAIN, and a reconnecting workspace keeps trying: the server out
 * of connection slots while the writer comes back (SQLSTATE 53300, as a role's or database's
 * CONNECTION LIMIT or max_connections gives it) was EBUSY, which the reconnection takes for another
 * writer's takeover and gives up on after one attempt, leaving the workspace degraded for good once
 * slots were free again. EBUSY stays for a takeover alone (test/postgres-reconnect.test.ts). The
 * limit is set on a private server of this file's own: the shared one serves other files meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../adapters/postgres/index.js'
import { translate } from '../adapters/postgres/errors.js'
import { IndexedSource } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { type PrivateServer, privateServer, rawClient, removeServer, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const encode = (text: string) => new TextEncoder().encode(text)

function lower(): IndexedSource {
  const content = encode('base\n')
  return new IndexedSource('test', 'rewindfs-transient-test', [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd1' }],
    ['/app/base.txt', { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'v1', content }],
  ], async () => new Map())
}

describe.skipIf(url === undefined)('transient server refusals', () => {
  it("the server's resource, conflict and start-up refusals are EAGAIN, with their SQLSTATE; none is EBUSY", async () => {
    const client = await rawClient(url!)
    try {
      const states = { '53300': /no connection to spare/, '53400': /no connection to spare/, '53200': /short of resources/, '40001': /concurrent transaction/, '40P01': /concurrent transaction/, '55P03': /waiting for a lock/, '57P03': /accepts no connection yet/ }
      for (const [state, message] of Object.entries(states)) {
        // The server's own error with that SQLSTATE, as pg hands it over.
        const raised = await client.query(`DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '${state}'; END $$`).catch((error: unknown) => error)
        expect(raised, state).toMatchObject({ code: state })
        expect(translate(raised, 'connect', 'the server'), state).toMatchObject({ code: 'EAGAIN', errno: -11, syscall: 'connect', sqlState: state, message: expect.stringMatching(message) })
      }
    } finally {
      await client.end()
    }
  })

  describe('a server out of connection slots while the writer reconnects', () => {
    let server: PrivateServer | undefined
    beforeAll(() => {
      server = privateServer()
    }, 120_000)
    afterAll(() => {
      if (server) removeServer(server)
    })

    it('is retried until a slot is free, then the workspace reconnects and loses nothing', async () => {
      const store = await postgresStore({ connectionString: server!.url, session: 'limited' })
      const ws = await Workspace.open({ lower: lower(), store, session: 'limited', autoCheckpoint: false })
      ws.fs.writeFileSync('/app/before.txt', 'acknowledged')
      await ws.sync()
      // The database's owner (the test role) limits it to one connection: this one, from now on.
      const admin = await rawClient(server!.url)
      try {
        await admin.query('ALTER DATABASE rewindfs CONNECTION LIMIT 1')
        await admin.query(`SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = 'rewindfs' AND datname = 'rewindfs'`)
        ws.fs.writeFileSync('/app/during.txt', 'in memory until a slot is free')
        await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
        // Refused for want of a slot, again and again, and never for good.
        await expect.poll(() => ws.status.reconnect?.attempts ?? 0, { timeout: 15_000 }).toBeGreaterThanOrEqual(3)
        expect(ws.status.reconnect).toMatchObject({ state: 'reconnecting', error: expect.stringMatching(/^EAGAIN: PostgreSQL has no connection to spare/) })
        await admin.query('ALTER DATABASE rewindfs CONNECTION LIMIT -1')
      } finally {
        await admin.end()
      }
      await expect.poll(() => ws.status.reconnect?.state, { timeout: 15_000 }).toBe('reconnected')
      expect(ws.status.degraded).toBeUndefined()
      ws.fs.writeFileSync('/app/after.txt', 'after')
      await ws.sync()
      await ws.close()
      const again = await Workspace.open({ lower: lower(), store: await postgresStore({ connectionString: server!.url, session: 'limited' }), session: 'limited', autoCheckpoint: false })
      expect(['before', 'during', 'after'].map((name) => again.fs.readFileSync(`/app/${name}.txt`, 'utf8'))).toEqual(['acknowledged', 'in memory until a slot is free', 'after'])
      await again.close()
    }, 120_000)
  })
})
