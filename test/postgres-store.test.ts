/**
 * rewindfs/adapters/postgres on a real PostgreSQL 15 server and on PGlite: the Store contract
 * (testing/store-contract.ts) on both, with raw SQL below the Store interface to damage what a
 * session holds; then what a shared store adds: one writer per session (EBUSY, read-only readers
 * that follow commits over LISTEN/NOTIFY, fencing), blobs stored once for the whole fleet (chunked
 * when large) and collected only when no session refers to them, checkpoints and sizes listed per
 * session, forks across connections, and clear errors for a bad connection string, a refused
 * connection, a refused login, a missing database and a role without the privileges.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresStore, pgliteFleet, pgliteStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { directory } from '../adapters/node-fs/index.js'
import { IndexedSource } from '../src/adapter-kit.js'
import { hashBytes } from '../src/blob/hash.js'
import { Workspace } from '../src/index.js'
import { type RawStore, type StoreSubject, type StoreUnderTest, storeContract } from '../testing/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl, withUrl } from './postgres-server.js'

const encode = (text: string) => new TextEncoder().encode(text)

/** Raw SQL on whichever backend: a pg client's or PGlite's query. */
type Query = <Row = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<Row[]>

/** What a session holds, reached with SQL below the Store interface. */
function rawStore(query: Query, schema: string, session: string): RawStore {
  const s = `"${schema}"`
  return {
    journal: async () => ({ records: (await query<{ record: string }>(`SELECT record FROM ${s}.journal WHERE session = $1 ORDER BY seq`, [session])).map((r) => r.record) }),
    setJournal: async (journal) => {
      await query(`DELETE FROM ${s}.journal WHERE session = $1`, [session])
      await query(`INSERT INTO ${s}.journal (session, seq, record) SELECT $1, n, r FROM unnest($2::text[]) WITH ORDINALITY AS t(r, n)`, [session, journal.records])
      await query(`UPDATE ${s}.sessions SET next_seq = $2 WHERE id = $1`, [session, journal.records.length + 1])
    },
    keptJournal: async (name) => {
      const [row] = await query<{ records: string[] | null }>(`SELECT records FROM ${s}.kept WHERE session = $1 AND name = $2`, [session, name])
      return row?.records ? { records: row.records } : undefined
    },
    blob: async (id) => {
      const [row] = await query<{ bytes: Uint8Array }>(`SELECT b.bytes FROM ${s}.blobs b JOIN ${s}.blob_refs r ON r.blob = b.id WHERE r.session = $1 AND b.id = $2`, [session, id])
      return row ? new Uint8Array(row.bytes) : undefined
    },
    setBlob: async (id, bytes) => {
      await query(`UPDATE ${s}.blobs SET bytes = $2 WHERE id = $1`, [id, bytes])
    },
    keptBlob: async (name) => {
      const [row] = await query<{ bytes: Uint8Array | null }>(`SELECT bytes FROM ${s}.kept WHERE session = $1 AND name = $2`, [session, name])
      return row?.bytes ? new Uint8Array(row.bytes) : undefined
    },
    spoilMeta: async (key) => {
      await query(`UPDATE ${s}.meta SET value = '{"half-writ' WHERE session = $1 AND key = $2`, [session, key])
    },
    fingerprint: async () => {
      // One after another: a pg client runs one query at a time.
      const parts = [
        await query(`SELECT seq, record FROM ${s}.journal WHERE session = $1 ORDER BY seq`, [session]),
        await query(`SELECT r.blob, encode(b.bytes, 'hex') AS bytes FROM ${s}.blob_refs r JOIN ${s}.blobs b ON b.id = r.blob WHERE r.session = $1 ORDER BY r.blob COLLATE "C"`, [session]),
        await query(`SELECT key, value FROM ${s}.meta WHERE session = $1 ORDER BY key COLLATE "C"`, [session]),
        await query(`SELECT name, records, encode(bytes, 'hex') AS bytes, value FROM ${s}.kept WHERE session = $1 ORDER BY name COLLATE "C"`, [session]),
      ]
      return createHash('sha256').update(JSON.stringify(parts)).digest('hex')
    },
  }
}

let sessions = 0

function subject(name: string, query: Query, schema: string, open: (session: string) => Promise<PostgresStore>): StoreSubject<PostgresStore> {
  const handle = (session: string, store: PostgresStore): StoreUnderTest<PostgresStore> => ({
    store,
    raw: rawStore(query, schema, session),
    reopen: async () => {
      await store.close()
      return handle(session, await open(session))
    },
  })
  return {
    name,
    tears: false,
    create: async () => {
      const session = `contract-${++sessions}`
      return handle(session, await open(session))
    },
  }
}

/** A lower source with an identity (sessions over it record it). */
function lower(files: Record<string, string> = {}): IndexedSource {
  const entries: [string, { type: 'dir' | 'file'; mode: number; size: number; mtimeMs: number; version: string; content?: Uint8Array }][] = [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd1' }],
  ]
  for (const [file, text] of Object.entries(files)) {
    const content = encode(text)
    entries.push([file, { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'v1', content }])
  }
  return new IndexedSource('test', 'rewindfs-postgres-test', entries, async () => new Map())
}

/** What `promise` rejected with (it must reject). */
async function failure(promise: Promise<unknown>): Promise<Error & { code?: string; syscall?: string }> {
  try {
    await promise
  } catch (error) {
    return error as Error & { code?: string; syscall?: string }
  }
  throw new Error('expected a rejection')
}

const code = async (promise: Promise<unknown>): Promise<string | undefined> => {
  try {
    await promise
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

const url = await serverUrl()

describe.skipIf(url === undefined)('postgres store on a server', () => {
  const schema = scratchSchema('pgstore')
  let client: Awaited<ReturnType<typeof rawClient>>
  const query: Query = async (text, params) => (await client.query(text, params)).rows
  const open = (session: string, extra: { readOnly?: boolean } = {}) => postgresStore({ connectionString: url!, session, schema, ...extra })

  beforeAll(async () => {
    client = await rawClient(url!)
  })
  afterAll(async () => {
    await client?.end()
    await dropSchema(url!, schema)
  })

  describe('the store contract', () => {
    for (const check of storeContract(subject('postgres', query, schema, (session) => open(session)))) it(check.name, check.run, 120_000)
  })

  it('one writer per session: a second opener gets EBUSY; a reader follows commits and cannot write; the lock goes with the writer', async () => {
    const writer = await open('one-writer')
    expect(await code(open('one-writer'))).toBe('EBUSY')
    const reader = await open('one-writer', { readOnly: true })
    expect(reader.readOnly).toBe(true)
    let heard = 0
    reader.onChange(() => heard++)
    await new Promise((resolve) => setTimeout(resolve, 50)) // LISTEN is sent
    await writer.appendJournal(['one'])
    await writer.putMeta('k', { v: 1 })
    await expect.poll(() => heard, { timeout: 5000 }).toBeGreaterThanOrEqual(2)
    expect((await reader.readJournal()).records).toEqual(['one'])
    expect(await code(reader.appendJournal(['two']))).toBe('EROFS')
    expect(await code(reader.putBlobs([['x', encode('x')]]))).toBe('EROFS')
    await writer.close()
    const next = await open('one-writer')
    await next.appendJournal(['two'])
    expect((await reader.readJournal()).records).toEqual(['one', 'two'])
    await next.close()
    await reader.close()
    expect(await code(open('never-written', { readOnly: true }))).toBe('ENOENT')
  })

  it('a writer whose session was taken over is fenced off: its writes fail with EBUSY and change nothing', async () => {
    const writer = await open('fenced')
    await writer.appendJournal(['mine'])
    // What a takeover after a lost connection leaves: another writer's token on the row.
    await query(`UPDATE "${schema}".sessions SET writer = 'someone-else' WHERE id = 'fenced'`)
    expect(await code(writer.appendJournal(['stale']))).toBe('EBUSY')
    expect(await code(writer.putMeta('k', 1))).toBe('EBUSY')
    expect(await code(writer.putBlobs([['b', encode('b')]]))).toBe('EBUSY')
    expect(await code(writer.replaceJournal(['x']))).toBe('EBUSY')
    expect((await writer.readJournal()).records).toEqual(['mine'])
    expect(await writer.blobIds()).toEqual([])
    await writer.close()
  })

  it('the lock dies with its connection: a terminated backend frees the session at once', async () => {
    const writer = await open('dies')
    await writer.appendJournal(['acknowledged'])
    // What a machine's death is to the server: the backend holding the session's lock goes.
    await query(
      `SELECT pg_terminate_backend(l.pid) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)`,
      [`${schema}/dies`],
    )
    await expect.poll(async () => code(open('dies').then((s) => s.close())), { timeout: 10_000 }).toBeUndefined()
    expect(await code(writer.appendJournal(['after']))).toBe('ECONNRESET')
    expect(writer.lost?.message).toMatch(/ECONNRESET/)
    await writer.close()
    const next = await open('dies')
    expect((await next.readJournal()).records).toEqual(['acknowledged'])
    await next.close()
  })

  it('blobs are stored once for the whole fleet and collected only when no session refers to them', async () => {
    const fleet = await postgresFleet({ connectionString: url!, schema })
    const a = await open('dedup-a')
    const b = await open('dedup-b')
    const shared = encode('the same bytes in two sessions')
    const id = hashBytes(shared)
    const before = (await fleet.storage()).blobs
    await a.putBlobs([[id, shared]])
    await b.putBlobs([[id, shared]])
    expect((await fleet.storage()).blobs).toBe(before + 1)
    expect(await a.getBlob(id)).toEqual(shared)
    await a.deleteBlobs([id])
    expect(await a.getBlob(id)).toBeUndefined()
    expect(await b.getBlob(id)).toEqual(shared) // b still refers to it
    expect((await fleet.storage()).blobs).toBe(before + 1)
    await b.deleteBlobs([id])
    expect((await fleet.storage()).blobs).toBe(before) // the last reference went: swept at once
    // A shared copy that rotted is not trusted by the next session storing the same content: it
    // is replaced by that session's bytes, and the damaged bytes are kept aside in that session.
    const rotten = encode('rotten copy')
    await a.putBlobs([[id, shared]])
    await query(`UPDATE "${schema}".blobs SET bytes = $2 WHERE id = $1`, [id, rotten])
    await b.putBlobs([[id, shared]])
    expect(await a.getBlob(id)).toEqual(shared)
    const kept = (await b.keptAside()).filter((name) => name.startsWith('blob.damaged-'))
    expect(kept).toHaveLength(1)
    expect(kept[0].endsWith(`.${id}`)).toBe(true)
    expect(await a.keptAside()).toEqual([])
    await a.deleteBlobs([id])
    await b.deleteBlobs([id])
    // A large blob is chunked, read back whole, and checked chunk by chunk when stored again.
    const large = new Uint8Array(2.5 * 1024 * 1024).map((_, i) => (i * 7) % 251)
    const largeId = hashBytes(large)
    await a.putBlobs([[largeId, large]])
    const [{ chunks }] = await query<{ chunks: number }>(`SELECT chunks FROM "${schema}".blobs WHERE id = $1`, [largeId])
    expect(chunks).toBe(3)
    expect(await query(`SELECT n FROM "${schema}".blob_chunks WHERE blob = $1 ORDER BY n`, [largeId])).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }])
    await b.putBlobs([[largeId, large]])
    // Compared as one buffer: vitest compares typed arrays element by element, slowly.
    expect(Buffer.from((await b.getBlob(largeId))!).equals(large)).toBe(true)
    // A dropped session's blobs go with the next collection; those another session holds stay.
    await a.close()
    await b.close()
    const stored = (await fleet.storage()).blobs
    await fleet.drop('dedup-b')
    expect((await fleet.storage()).blobs).toBe(stored) // dedup-a still holds the large blob
    await fleet.drop('dedup-a')
    expect((await fleet.storage()).blobs).toBe(stored - 1)
    await fleet.close()
  })

  it('garbage collection racing writers never deletes a blob a session refers to', async () => {
    const fleet = await postgresFleet({ connectionString: url!, schema })
    const writers = await Promise.all([0, 1, 2].map((i) => open(`race-${i}`)))
    const blobs = Array.from({ length: 12 }, (_, i) => encode(`racing blob ${i}`))
    const ids = blobs.map((bytes) => hashBytes(bytes))
    let stop = false
    const failures: unknown[] = []
    const collector = (async () => {
      while (!stop) await fleet.collectGarbage({ graceMs: 0 }).catch((error) => failures.push(error))
    })()
    // Each writer puts and drops the same blobs over and over, interleaved with the others and the collector.
    await Promise.all(
      writers.map(async (store, w) => {
        for (let round = 0; round < 30; round++) {
          const mine = ids.map((id, i) => [id, blobs[i]] as const).filter((_, i) => (i + round + w) % 3 !== 0)
          await store.putBlobs(mine).catch((error) => failures.push(error))
          for (const [id, bytes] of mine) expect(await store.getBlob(id)).toEqual(bytes)
          await store.deleteBlobs(mine.filter((_, i) => i % 2 === round % 2).map(([id]) => id)).catch((error) => failures.push(error))
        }
      }),
    )
    stop = true
    await collector
    expect(failures).toEqual([])
    for (const store of writers) {
      for (const id of await store.blobIds()) expect(await store.getBlob(id)).toEqual(blobs[ids.indexOf(id)])
      await store.close()
    }
    await fleet.close()
  })

  it('lists sessions with last activity, checkpoints and size, kept in step through compaction; forks across connections share blobs', async () => {
    const fleet = await postgresFleet({ connectionString: url!, schema })
    const store = await open('listed')
    const ws = await Workspace.open({ lower: lower({ '/app/base.txt': 'base' }), store, autoCheckpoint: false })
    ws.fs.writeFileSync('/app/a.txt', 'one')
    await ws.checkpoint({ name: 'first' })
    ws.fs.writeFileSync('/app/b.txt', 'two')
    await ws.checkpoint({ name: 'second' })
    await ws.renameCheckpoint('second', 'renamed')
    ws.fs.writeFileSync('/app/a.txt', 'three')
    await ws.sync()
    let info = (await fleet.sessions()).find((s) => s.session === 'listed')!
    expect(info.checkpoints).toBe(2)
    expect(info.writing).toBe(true)
    expect(info.blobs).toBe(3)
    expect(info.records).toBeGreaterThan(0)
    expect(Date.now() - info.lastActivity.getTime()).toBeLessThan(60_000)
    await ws.compact()
    info = (await fleet.sessions()).find((s) => s.session === 'listed')!
    expect(info.checkpoints).toBe(2)
    expect((await fleet.checkpoints('listed')).map((c) => c.name)).toEqual(ws.checkpoints().filter((c) => c.kind !== 'guard').map((c) => c.name))
    await ws.close()
    expect((await fleet.sessions()).find((s) => s.session === 'listed')!.writing).toBe(false)

    // Another "machine" (another connection) forks at the first checkpoint: no blob is copied.
    const blobsBefore = (await fleet.storage()).blobs
    await fleet.fork({ from: 'listed', to: 'listed-fork', checkpoint: 'first' })
    expect((await fleet.storage()).blobs).toBe(blobsBefore)
    expect(await code(fleet.fork({ from: 'listed', to: 'listed-fork' }))).toBe('EEXIST')
    expect(await code(fleet.fork({ from: 'absent', to: 'x' }))).toBe('ENOENT')
    expect(await code(fleet.fork({ from: 'listed', to: 'y', checkpoint: 'no-such' }))).toBe('ENOENT')
    const forked = await Workspace.open({ lower: lower({ '/app/base.txt': 'base' }), store: await open('listed-fork'), autoCheckpoint: false })
    await forked.restore('first')
    expect(forked.fs.readFileSync('/app/a.txt', 'utf8')).toBe('one')
    expect(forked.fs.existsSync('/app/b.txt')).toBe(false)
    forked.fs.writeFileSync('/app/fork-only.txt', 'mine')
    await forked.sync()
    await forked.close()
    const again = await Workspace.open({ lower: lower({ '/app/base.txt': 'base' }), store: await open('listed'), autoCheckpoint: false })
    expect(again.fs.existsSync('/app/fork-only.txt')).toBe(false)
    expect(again.fs.readFileSync('/app/a.txt', 'utf8')).toBe('three')
    await again.close()
    const forkInfo = (await fleet.sessions()).find((s) => s.session === 'listed-fork')!
    expect({ from: forkInfo.forkedFrom, at: forkInfo.forkCheckpoint }).toEqual({ from: 'listed', at: 'first' })
    await fleet.close()
  })

  it('flush ledgers are shared: a conflict between two sessions writing the same base names the session that flushed', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pg-base-'))
    fs.writeFileSync(path.join(base, 'shared.txt'), 'original\n')
    const fleet = await postgresFleet({ connectionString: url!, schema })
    // A workspace's session name is what its flush ledger records: the same as the store's.
    const first = await Workspace.open({ lower: directory(base), session: 'ledger-1', store: await open('ledger-1'), autoCheckpoint: false })
    const second = await Workspace.open({ lower: directory(base), session: 'ledger-2', store: await open('ledger-2'), autoCheckpoint: false })
    expect(second.fs.readFileSync('/shared.txt', 'utf8')).toBe('original\n')
    await second.sync()
    first.fs.writeFileSync('/shared.txt', 'from the first session\n')
    await first.flush()
    second.fs.writeFileSync('/shared.txt', 'from the second session\n')
    const refused = await second.flush().catch((error: unknown) => error as { code?: string; conflicts?: { path: string }[] })
    expect(refused).toMatchObject({ code: 'ECONFLICT' })
    const flushed = await fleet.flushes({ path: '/shared.txt' })
    expect(flushed.map((f) => [f.session, f.by])).toEqual([['ledger-1', 'ledger-1']])
    expect(fs.readFileSync(path.join(base, 'shared.txt'), 'utf8')).toBe('from the first session\n')
    await first.close()
    await second.close()
    await fleet.close()
    fs.rmSync(base, { recursive: true, force: true })
  })

  it("a workspace takes the session its store was opened for, and refuses another one with EINVAL naming both", async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pg-named-'))
    fs.writeFileSync(path.join(base, 'a.txt'), 'original\n')
    const store = await open('named-y')
    const refused = await Workspace.open({ lower: directory(base), session: 'named-x', store, autoCheckpoint: false }).catch((error: unknown) => error as Error & { code?: string })
    expect(refused).toMatchObject({ code: 'EINVAL', syscall: 'open', message: expect.stringMatching(/'named-x'.*'named-y'/) })
    // Refused before anything was read or written: the store serves the right session afterwards.
    expect((await store.readJournal()).records).toEqual([])
    const ws = await Workspace.open({ lower: directory(base), store, autoCheckpoint: false })
    expect(ws.session).toBe('named-y')
    ws.fs.writeFileSync('/a.txt', 'flushed by y\n')
    await ws.flush()
    expect(ws.history()[0].session).toBe('named-y')
    await ws.close()
    const fleet = await postgresFleet({ connectionString: url!, schema })
    expect((await fleet.flushes({ target: directory(base).id, path: '/a.txt' })).map((f) => [f.session, f.by])).toEqual([['named-y', 'named-y']])
    await fleet.close()
    // The same name given explicitly is fine.
    const again = await Workspace.open({ lower: directory(base), session: 'named-y', store: await open('named-y'), autoCheckpoint: false })
    expect(again.fs.readFileSync('/a.txt', 'utf8')).toBe('flushed by y\n')
    await again.close()
    fs.rmSync(base, { recursive: true, force: true })
  })

  it('clear errors: a bad connection string, a refused connection, a refused login, a missing database, a role without privileges', async () => {
    const session = 'errors'
    await expect(postgresStore({ connectionString: 'not a url', session })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(postgresStore({ connectionString: 'mysql://u:secret@h/db', session })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.not.stringContaining('secret') })
    await expect(postgresStore({ connectionString: 'postgres://u@h', session })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(postgresStore({ connectionString: url!, session: '' })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    const nowhere = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pg-none-'))
    const refused = await failure(postgresStore({ connectionString: `postgresql://rewindfs:secret@localhost/rewindfs?host=${nowhere}`, session }))
    expect(refused).toMatchObject({ code: 'ECONNREFUSED', syscall: 'connect' })
    expect(refused.message).not.toContain('secret')
    fs.rmSync(nowhere, { recursive: true })
    const login = await failure(postgresStore({ connectionString: withUrl(url!, { password: 'wrong-password' }), session }))
    expect(login).toMatchObject({ code: 'EACCES' })
    expect(login.message).not.toContain('wrong-password')
    expect(login.message).toMatch(/password authentication failed/)
    await expect(postgresStore({ connectionString: withUrl(url!, { database: 'no_such_database' }), session })).rejects.toMatchObject({ code: 'ENOENT', message: expect.stringMatching(/no_such_database/) })
    const limited = withUrl(url!, { user: 'rewindfs_limited' })
    const denied = await failure(postgresStore({ connectionString: limited, session, schema: scratchSchema('denied') }))
    expect(denied).toMatchObject({ code: 'EACCES' })
    expect(denied.message).toMatch(/permission denied/)
  })
})

describe('postgres store on PGlite', () => {
  let db: PGlite
  const schema = 'rewindfs'
  const query: Query = async (text, params) => (await db.query(text, params)).rows as never[]

  beforeAll(async () => {
    db = await PGlite.create()
  }, 180_000)
  afterAll(async () => {
    await db?.close()
  })

  describe('the store contract', () => {
    for (const check of storeContract(subject('pglite', query, schema, (session) => pgliteStore({ db, session })))) it(check.name, check.run, 120_000)
  })

  it('one writer per session in the process; a reader hears commits; fleet listing', async () => {
    const writer = await pgliteStore({ db, session: 'lite' })
    expect(await code(pgliteStore({ db, session: 'lite' }))).toBe('EBUSY')
    const reader = await pgliteStore({ db, session: 'lite', readOnly: true })
    let heard = 0
    reader.onChange(() => heard++)
    await new Promise((resolve) => setTimeout(resolve, 50))
    await writer.appendJournal(['one'])
    await expect.poll(() => heard, { timeout: 5000 }).toBeGreaterThanOrEqual(1)
    await writer.close()
    const next = await pgliteStore({ db, session: 'lite' })
    await next.close()
    await reader.close()
    const fleet = await pgliteFleet({ db })
    expect((await fleet.sessions()).find((s) => s.session === 'lite')).toMatchObject({ records: 1, writing: false })
    await fleet.close()
    expect(db.closed).toBe(false) // the caller's instance stays open
  })

  it('a store of its own in a data directory persists across instances', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pglite-'))
    const store = await pgliteStore({ dataDir, session: 'on-disk' })
    const ws = await Workspace.open({ lower: lower(), store, autoCheckpoint: false })
    ws.fs.writeFileSync('/app/kept.txt', 'durable')
    await ws.checkpoint({ name: 'cp' })
    await ws.close()
    const reopened = await Workspace.open({ lower: lower(), store: await pgliteStore({ dataDir, session: 'on-disk' }), autoCheckpoint: false })
    expect(reopened.fs.readFileSync('/app/kept.txt', 'utf8')).toBe('durable')
    expect(reopened.checkpoints().map((c) => c.name)).toContain('cp')
    await reopened.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }, 180_000)
})
