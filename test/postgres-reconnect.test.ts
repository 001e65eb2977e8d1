/**
 * Reconnecting in place on the real server: the store's backend is terminated mid-session
 * (pg_terminate_backend, as an administrator or a failover does), the workspace goes degraded, keeps
 * working in memory, reconnects by itself (the session's lock taken again, the journal's head checked)
 * and sends what it kept back: every write is durable after a reopen, none twice. Another writer that
 * took the session over meanwhile is final: the workspace stays degraded, says why, and writes nothing
 * over the other's. A commit whose reply was lost (it landed) and a compaction whose outcome is unknown
 * are driven through a store that fails a call after the server did it.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { type PostgresStore, postgresStore } from '../adapters/postgres/index.js'
import { IndexedSource } from '../src/adapter-kit.js'
import { type Store, Workspace } from '../src/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const schema = scratchSchema('reconnect')

afterAll(async () => {
  if (url) await dropSchema(url, schema)
})

const encode = (text: string) => new TextEncoder().encode(text)

function lower(): IndexedSource {
  const content = encode('base\n')
  return new IndexedSource('test', 'rewindfs-reconnect-test', [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd1' }],
    ['/app/base.txt', { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'v1', content }],
  ], async () => new Map())
}

const open = (session: string, store: Store, onAlert?: (message: string) => void) =>
  Workspace.open({ lower: lower(), store, session, autoCheckpoint: false, ...(onAlert ? { onAlert: (alert) => onAlert(alert.message) } : {}) })

/** Terminates the backend holding the session's writer lock; resolves once it is gone. */
async function terminateWriter(session: string): Promise<void> {
  const client = await rawClient(url!)
  try {
    const key = `${schema}/${session}`
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`,
      [key],
    )
    expect(rows).toHaveLength(1)
    await client.query(`SELECT pg_terminate_backend($1, 5000)`, [rows[0].pid])
  } finally {
    await client.end()
  }
}

/**
 * Writes, syncing after each, until a sync succeeds with the store reconnected; returns every file
 * written, in order, and how many syncs failed (EDEGRADED) meanwhile.
 */
async function writeThrough(ws: Workspace, prefix: string): Promise<{ written: string[]; failures: number }> {
  const written: string[] = []
  let failures = 0
  for (let i = 0; i < 400; i++) {
    const path = `/app/${prefix}-${i}.txt`
    ws.fs.writeFileSync(path, `${prefix} ${i}`)
    written.push(path)
    try {
      await ws.sync()
      if (ws.status.reconnect?.state === 'reconnected') return { written, failures }
    } catch (error) {
      expect((error as { code?: string }).code).toBe('EDEGRADED')
      failures++
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`no reconnection after ${written.length} writes: ${ws.status.degraded}`)
}

const STORE_METHODS = ['appendJournal', 'readJournal', 'replaceJournal', 'putBlobs', 'getBlob', 'deleteBlobs', 'blobIds', 'getMeta', 'putMeta', 'deleteMeta', 'setAside', 'keptAside', 'removeKept', 'reconnect', 'close'] as const

/** The store, but one call of `method` fails after the server did it (its reply lost) or before, once armed. */
function failingOnce(store: PostgresStore, method: 'appendJournal' | 'replaceJournal', when: 'after' | 'before'): Store & { arm(): void } {
  let armed = false
  const wrapped: Record<string, unknown> = { kind: store.kind, durability: store.durability, readOnly: false, arm: () => (armed = true) }
  for (const name of STORE_METHODS) wrapped[name] = (...args: unknown[]) => (store[name] as (...args: unknown[]) => unknown)(...args)
  wrapped[method] = async (records: readonly string[]) => {
    if (!armed) return store[method](records)
    armed = false
    const lost = Object.assign(new Error('Connection terminated unexpectedly (simulated: the reply was lost)'), { code: 'ECONNRESET' })
    if (when === 'before') throw lost
    await store[method](records)
    throw lost
  }
  return wrapped as unknown as Store & { arm(): void }
}

describe.skipIf(url === undefined)('a workspace on postgres reconnects in place', () => {
  it('goes degraded when its backend is terminated, reconnects by itself, and every write is durable', async () => {
    const store = await postgresStore({ connectionString: url!, schema, session: 'kept' })
    const ws = await open('kept', store)
    ws.fs.writeFileSync('/app/before.txt', 'acknowledged')
    await ws.checkpoint({ name: 'before' })
    await ws.sync()

    await terminateWriter('kept')
    const { written, failures } = await writeThrough(ws, 'during')
    expect(failures).toBeGreaterThan(0)
    expect(ws.status.degraded).toBeUndefined()
    expect(ws.status.reconnect).toMatchObject({ state: 'reconnected', landed: false })
    expect(ws.status.reconnect!.attempts).toBeGreaterThanOrEqual(1)
    expect(ws.status.reconnect!.resent).toBeGreaterThan(0)
    expect(ws.status.warnings.some((w) => /unavailable .* is back/.test(w))).toBe(true)
    // Working as before: a checkpoint and a restore after the reconnection are durable too.
    await ws.checkpoint({ name: 'after' })
    ws.fs.writeFileSync('/app/last.txt', 'last')
    await ws.sync()
    await ws.close()

    const again = await open('kept', await postgresStore({ connectionString: url!, schema, session: 'kept' }))
    expect(again.status.degraded).toBeUndefined()
    expect(again.status.corrupt).toBeUndefined()
    expect(again.fs.readFileSync('/app/before.txt', 'utf8')).toBe('acknowledged')
    for (const path of written) expect(again.fs.readFileSync(path, 'utf8'), path).toBe(path.slice('/app/'.length, -'.txt'.length).replace('-', ' '))
    expect(again.fs.readFileSync('/app/last.txt', 'utf8')).toBe('last')
    expect(again.checkpoints().map((c) => c.name)).toEqual(['before', 'after'])
    // Every write once in the history: the commit that failed was sent once more, not twice.
    const writes = again.history().filter((op) => op.paths.some((p) => p.startsWith('/app/during-')))
    expect(writes).toHaveLength(written.length)
    await again.restore('before')
    expect(again.fs.existsSync(written[0])).toBe(false)
    await again.close()
  }, 60_000)

  it('does not send again a commit that landed before its reply was lost', async () => {
    const store = failingOnce(await postgresStore({ connectionString: url!, schema, session: 'landed' }), 'appendJournal', 'after')
    const ws = await open('landed', store)
    ws.fs.writeFileSync('/app/one.txt', '1')
    await ws.sync()
    store.arm()
    ws.fs.writeFileSync('/app/two.txt', '2')
    await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
    ws.fs.writeFileSync('/app/three.txt', '3')
    await writeThrough(ws, 'more')
    expect(ws.status.reconnect).toMatchObject({ state: 'reconnected', landed: true })
    await ws.close()
    const again = await open('landed', await postgresStore({ connectionString: url!, schema, session: 'landed' }))
    expect(again.status.corrupt).toBeUndefined()
    expect(again.status.warnings).toEqual([])
    expect(['/app/one.txt', '/app/two.txt', '/app/three.txt'].map((p) => again.fs.readFileSync(p, 'utf8'))).toEqual(['1', '2', '3'])
    expect(again.history().filter((op) => op.paths.includes('/app/two.txt'))).toHaveLength(1)
    await again.close()
  }, 60_000)

  it('replaces the journal with a snapshot when a compaction failed without saying whether it landed', async () => {
    for (const when of ['after', 'before'] as const) {
      const session = `compacted-${when}`
      const store = failingOnce(await postgresStore({ connectionString: url!, schema, session }), 'replaceJournal', when)
      const ws = await open(session, store)
      ws.fs.writeFileSync('/app/one.txt', '1')
      await ws.checkpoint({ name: 'one' })
      ws.fs.writeFileSync('/app/two.txt', '2')
      await ws.sync()
      store.arm()
      await expect(ws.compact()).rejects.toMatchObject({ code: 'ECONNRESET' })
      ws.fs.writeFileSync('/app/three.txt', '3')
      await writeThrough(ws, 'more')
      expect(ws.status.reconnect, when).toMatchObject({ state: 'reconnected' })
      await ws.close()
      const again = await open(session, await postgresStore({ connectionString: url!, schema, session }))
      expect(again.status.corrupt, when).toBeUndefined()
      expect(['/app/one.txt', '/app/two.txt', '/app/three.txt'].map((p) => again.fs.readFileSync(p, 'utf8')), when).toEqual(['1', '2', '3'])
      expect(again.checkpoints().map((c) => c.name), when).toEqual(['one'])
      await again.restore('one')
      expect(again.fs.existsSync('/app/two.txt'), when).toBe(false)
      await again.close()
    }
  }, 60_000)

  for (const other of ['still writing', 'gone again'] as const) {
    it(`stays degraded, and writes nothing, when another writer took the session over meanwhile (${other})`, async () => {
      const session = `taken-${other.replace(' ', '-')}`
      const alerts: string[] = []
      const store = await postgresStore({ connectionString: url!, schema, session })
      const ws = await open(session, store, (message) => alerts.push(message))
      ws.fs.writeFileSync('/app/mine.txt', 'acknowledged')
      await ws.sync()

      await terminateWriter(session)
      // Another machine takes the session over (its lock went with the terminated backend) and writes.
      let theirs: PostgresStore | undefined
      for (let attempt = 0; theirs === undefined; attempt++) {
        theirs = await postgresStore({ connectionString: url!, schema, session }).catch((error: { code?: string }) => {
          if (error.code !== 'EBUSY' || attempt > 50) throw error
          return new Promise<undefined>((resolve) => setTimeout(resolve, 100))
        })
      }
      const taker = await open(session, theirs)
      taker.fs.writeFileSync('/app/theirs.txt', 'taken over')
      await taker.sync()
      if (other === 'gone again') await taker.close()

      ws.fs.writeFileSync('/app/lost.txt', 'in memory only')
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
      for (let i = 0; i < 200 && ws.status.reconnect?.state !== 'refused'; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(ws.status.reconnect).toMatchObject({ state: 'refused', error: expect.stringMatching(/another writer/) })
      expect(ws.status.degraded).toMatch(/cannot be resumed: .*another writer/)
      expect(alerts.some((message) => /cannot be resumed/.test(message))).toBe(true)
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED', message: expect.stringMatching(/cannot be resumed/) })
      // Still working in memory.
      expect(ws.fs.readFileSync('/app/lost.txt', 'utf8')).toBe('in memory only')
      await ws.close()

      if (other === 'still writing') await taker.close()
      const after = await open(session, await postgresStore({ connectionString: url!, schema, session }))
      expect(after.status.corrupt).toBeUndefined()
      expect(after.fs.readFileSync('/app/theirs.txt', 'utf8')).toBe('taken over')
      expect(after.fs.readFileSync('/app/mine.txt', 'utf8')).toBe('acknowledged')
      expect(after.fs.existsSync('/app/lost.txt')).toBe(false)
      await after.close()
    }, 60_000)
  }

  it('a commit cut short by lock_timeout while a collection holds the blob lock is retried once the lock is free, not refused for good', async () => {
    // The role's lock_timeout, as an administrator sets it; the store's put waits on the GC lock a sweep holds.
    const limited = `${url!}&options=${encodeURIComponent('-c lock_timeout=100')}`
    const ws = await open('lock-timeout', await postgresStore({ connectionString: limited, schema, session: 'lock-timeout' }))
    ws.fs.writeFileSync('/app/before.txt', 'before')
    await ws.sync()
    const sweeper = await rawClient(url!)
    try {
      await sweeper.query(`BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('rewindfs:blob-gc', 0))`)
      ws.fs.writeFileSync('/app/during.txt', 'during')
      const failed = await ws.sync().catch((error: unknown) => error as Error)
      expect(failed).toMatchObject({ code: 'EDEGRADED' })
      expect(ws.status.degraded).toMatch(/EAGAIN.*lock_timeout/)
      await sweeper.query('COMMIT')
    } finally {
      await sweeper.end()
    }
    await expect.poll(() => ws.status.reconnect?.state, { timeout: 15_000 }).toBe('reconnected')
    ws.fs.writeFileSync('/app/after.txt', 'after')
    await ws.sync()
    await ws.close()
    const again = await open('lock-timeout', await postgresStore({ connectionString: url!, schema, session: 'lock-timeout' }))
    expect(['before', 'during', 'after'].map((name) => again.fs.readFileSync(`/app/${name}.txt`, 'utf8'))).toEqual(['before', 'during', 'after'])
    await again.close()
  }, 60_000)
})
