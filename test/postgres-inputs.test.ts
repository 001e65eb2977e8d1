/**
 * Odd inputs to the postgres store, each a clear error that loses nothing: names the server would
 * change (a lone surrogate arrives as U+FFFD, an identifier is cut to 63 bytes) and so would make
 * two sessions or schemas one, a password holding '@' (it stays out of every message), and a host
 * that accepts the connection but never answers (ETIMEDOUT after connectTimeoutMs, not a "lost
 * connection" as if a session had been cut off), and the server's statement_timeout and
 * lock_timeout cutting a write short (ETIMEDOUT, EAGAIN; the store goes on).
 */
import net from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { pgliteStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { translate } from '../adapters/postgres/errors.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()

describe('names the server would change are refused before anything is written', () => {
  it('a session name with a lone surrogate is ERR_INVALID_ARG_VALUE (a pair is fine)', async () => {
    for (const session of ['a\uD800', 'a\uDC00', '\uDFFFb']) {
      await expect(pgliteStore({ session })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', name: 'TypeError' })
    }
    const store = await pgliteStore({ session: 'a\uD83D\uDE00' })
    expect(store.session).toBe('a😀')
    await store.close()
  }, 60_000)

  it('a schema name of more than 63 bytes, or with NUL or a lone surrogate, is ERR_INVALID_ARG_VALUE', async () => {
    for (const schema of ['é'.repeat(32), 'a\0b', 'x\uD800']) {
      await expect(pgliteStore({ session: 's', schema })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    }
  }, 60_000)
})

describe.skipIf(url === undefined)('names on a server', () => {
  const schema = scratchSchema('pginputs')
  afterAll(async () => {
    await dropSchema(url!, schema)
    await dropSchema(url!, 'é'.repeat(31))
  })

  it('two session names differing only in a lone surrogate are not one session', async () => {
    await expect(postgresStore({ connectionString: url!, schema, session: 'x\uD800' })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    const fleet = await postgresFleet({ connectionString: url!, schema })
    expect(await fleet.sessions()).toEqual([])
    await fleet.close()
  })

  it('create: false opens only a session that is there, and makes nothing when it is not (no schema, no session row)', async () => {
    const absent = scratchSchema('absent')
    try {
      await expect(postgresStore({ connectionString: url!, schema: absent, session: 's', create: false })).rejects.toMatchObject({ code: 'ENOENT', syscall: 'open', message: expect.stringMatching(/no session 's'.*nothing was made/) })
      const client = await rawClient(url!)
      try {
        expect((await client.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [absent])).rows).toEqual([])
        const made = await postgresStore({ connectionString: url!, schema, session: 'there' })
        await made.appendJournal(['one'])
        await made.close()
        await expect(postgresStore({ connectionString: url!, schema, session: 'not-there', create: false })).rejects.toMatchObject({ code: 'ENOENT' })
        expect((await client.query(`SELECT id FROM "${schema}".sessions WHERE id = 'not-there'`)).rows).toEqual([])
        // One that is there is its writer's, as ever: the lock taken, a second writer EBUSY.
        const there = await postgresStore({ connectionString: url!, schema, session: 'there', create: false })
        expect((await there.readJournal()).records).toEqual(['one'])
        await expect(postgresStore({ connectionString: url!, schema, session: 'there', create: false })).rejects.toMatchObject({ code: 'EBUSY' })
        await there.appendJournal(['two'])
        await there.close()
      } finally {
        await client.end()
      }
    } finally {
      await dropSchema(url!, absent)
    }
  })

  it('a session name is up to 200 characters, not 200 UTF-16 units: 200 emoji are a session, 201 characters are refused', async () => {
    const emoji = '😀'.repeat(200)
    const store = await postgresStore({ connectionString: url!, schema, session: emoji })
    await store.appendJournal(['one'])
    await store.close()
    const fleet = await postgresFleet({ connectionString: url!, schema })
    try {
      expect((await fleet.sessions()).map((s) => s.session)).toContain(emoji)
      expect(await fleet.checkpoints(emoji)).toEqual([])
      await fleet.drop(emoji)
    } finally {
      await fleet.close()
    }
    for (const session of ['😀'.repeat(201), 'a'.repeat(201), 'é'.repeat(100) + '😀'.repeat(101)]) {
      await expect(postgresStore({ connectionString: url!, schema, session })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    }
    const ascii = await postgresStore({ connectionString: url!, schema, session: 'a'.repeat(200) })
    await ascii.close()
  })

  it("the server's statement_timeout cutting a write is ETIMEDOUT (sqlState 57014), lock_timeout EAGAIN (55P03: it passes if tried again, and EBUSY is another writer's); the store goes on after either", async () => {
    const sweeper = await rawClient(url!)
    try {
      for (const [setting, expected] of [['statement_timeout', { code: 'ETIMEDOUT', errno: -110, sqlState: '57014' }], ['lock_timeout', { code: 'EAGAIN', sqlState: '55P03' }]] as const) {
        const store = await postgresStore({ connectionString: `${url!}&options=${encodeURIComponent(`-c ${setting}=100`)}`, schema, session: setting })
        await sweeper.query(`BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('rewindfs:blob-gc', 0))`)
        const error = await store.putBlobs([['blob', new Uint8Array([1])]]).catch((caught: unknown) => caught as Error)
        await sweeper.query('COMMIT')
        expect(error).toMatchObject(expected)
        expect((error as Error).message).toContain(setting)
        await store.putBlobs([['blob', new Uint8Array([1])]])
        expect(await store.blobIds()).toEqual(['blob'])
        await store.close()
      }
    } finally {
      await sweeper.end()
    }
  })

  it('eight stores making a new schema at once all open (its tables are made once, by one of them)', async () => {
    for (let round = 0; round < 3; round++) {
      const fresh = scratchSchema('fresh')
      try {
        const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => postgresStore({ connectionString: url!, schema: fresh, session: `s${i}` })))
        for (const result of results) if (result.status === 'fulfilled') await result.value.close()
        expect(results.map((result) => (result.status === 'fulfilled' ? 'ok' : String((result.reason as Error).message)))).toEqual(Array(8).fill('ok'))
      } finally {
        await dropSchema(url!, fresh)
      }
    }
  })

  it("a schema holding tables of the same names that rewindfs did not make is refused (EEXIST), and nothing in it changes", async () => {
    const theirs = scratchSchema('theirs')
    const sweeper = await rawClient(url!)
    try {
      await sweeper.query(`CREATE SCHEMA "${theirs}"; CREATE TABLE "${theirs}".sessions (id text PRIMARY KEY, email text NOT NULL, writer text)`)
      await sweeper.query(`INSERT INTO "${theirs}".sessions VALUES ('alice', 'alice@example.com', NULL)`)
      for (const open of [() => postgresStore({ connectionString: url!, schema: theirs, session: 'alice' }), () => postgresFleet({ connectionString: url!, schema: theirs })]) {
        const error = await open().then(
          (opened) => opened.close().then(() => undefined),
          (caught: unknown) => caught as Error,
        )
        expect(error).toMatchObject({ code: 'EEXIST', syscall: 'open' })
        expect((error as Error).message).toContain(`"${theirs}".sessions`)
      }
      expect((await sweeper.query(`SELECT * FROM "${theirs}".sessions`)).rows).toEqual([{ id: 'alice', email: 'alice@example.com', writer: null }])
      expect((await sweeper.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [theirs])).rows).toEqual([{ table_name: 'sessions' }])
    } finally {
      await sweeper.query(`DROP SCHEMA IF EXISTS "${theirs}" CASCADE`)
      await sweeper.end()
    }
  })

  it('a layout made by a newer rewindfs is refused to readers as to writers (EIO naming it), and left as it is', async () => {
    const newer = scratchSchema('newer')
    const raw = await rawClient(url!)
    try {
      await (await postgresStore({ connectionString: url!, schema: newer, session: 's' })).close()
      await raw.query(`UPDATE "${newer}".format SET version = 99`)
      for (const readOnly of [false, true]) {
        await expect(postgresStore({ connectionString: url!, schema: newer, session: 's', readOnly })).rejects.toMatchObject({ code: 'EIO', message: expect.stringContaining('newer rewindfs (layout 99') })
      }
      expect((await raw.query(`SELECT version FROM "${newer}".format`)).rows).toEqual([{ version: 99 }])
    } finally {
      await raw.query(`DROP SCHEMA IF EXISTS "${newer}" CASCADE`)
      await raw.end()
    }
  })

  it('a schema of 62 bytes of two-byte characters is used whole (listed, its disk counted)', async () => {
    const long = 'é'.repeat(31)
    const store = await postgresStore({ connectionString: url!, schema: long, session: 's' })
    await store.appendJournal(['one'])
    await store.close()
    const fleet = await postgresFleet({ connectionString: url!, schema: long })
    expect((await fleet.sessions()).map((s) => s.session)).toEqual(['s'])
    expect((await fleet.storage()).diskBytes).toBeGreaterThan(0)
    await fleet.close()
  })
})

describe('connection errors', () => {
  it("a password holding '@' stays out of the message", async () => {
    const error = await postgresStore({ connectionString: 'postgresql://agent:s3cr@t-p4ss@localhost/rewindfs?host=/nonexistent-socket-dir', session: 's' }).catch((caught: unknown) => caught as Error)
    expect(error).toMatchObject({ code: 'ECONNREFUSED' })
    expect((error as Error).message).not.toMatch(/s3cr|p4ss/)
    expect((error as { address?: string }).address).not.toMatch(/s3cr|p4ss/)
    expect((error as Error).message).toContain('postgresql://agent:***@localhost/rewindfs')
  })

  it('a host that accepts but never answers is ETIMEDOUT after connectTimeoutMs', async () => {
    const sockets: net.Socket[] = []
    const silent = net.createServer((socket) => sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as net.AddressInfo).port
    try {
      const started = Date.now()
      const error = await postgresStore({ connectionString: `postgres://agent:pw@127.0.0.1:${port}/rewindfs`, session: 's', connectTimeoutMs: 500 }).catch((caught: unknown) => caught as Error)
      expect(error).toMatchObject({ code: 'ETIMEDOUT', errno: -110, syscall: 'connect' })
      expect((error as Error).message).toContain('500 ms')
      expect(Date.now() - started).toBeLessThan(5000)
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
  })

  it("a unix socket this user may not open is EACCES (as a non-root process sees it), not EIO", () => {
    const denied = Object.assign(new Error('connect EACCES /run/postgresql/.s.PGSQL.5432'), { code: 'EACCES', errno: -13, syscall: 'connect' })
    expect(translate(denied, 'connect', 'postgres://u:***@localhost/db')).toMatchObject({ code: 'EACCES', syscall: 'connect', path: 'postgres://u:***@localhost/db' })
  })

  it('connectTimeoutMs and replyTimeoutMs must be numbers of milliseconds', async () => {
    for (const ms of [-1, Number.NaN, '100' as unknown as number]) {
      await expect(postgresStore({ connectionString: 'postgres://u@localhost/db', session: 's', connectTimeoutMs: ms })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
      await expect(postgresStore({ connectionString: 'postgres://u@localhost/db', session: 's', replyTimeoutMs: ms })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    }
  })
})
