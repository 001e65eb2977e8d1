/**
 * Connection loss with a real server restart, on a private PostgreSQL of this file's own (the
 * shared one serves other test files meanwhile). The server restarts mid-session: the next commit
 * fails, the workspace goes degraded (ws.status.degraded, and sync rejects: never silent), keeps
 * working in memory and reconnects in place once the server is back, losing nothing; a store closed
 * meanwhile is opened again with `reopen` (waiting while the server is still down), and a workspace
 * on it continues from exactly what was acknowledged. (test/postgres-reconnect.test.ts: the
 * reconnection's cases on the shared server.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../adapters/postgres/index.js'
import { IndexedSource } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { type PrivateServer, privateServer, removeServer, serverUrl } from './postgres-server.js'

const encode = (text: string) => new TextEncoder().encode(text)

function lower(): IndexedSource {
  const content = encode('base\n')
  return new IndexedSource('test', 'rewindfs-restart-test', [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd1' }],
    ['/app/base.txt', { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'v1', content }],
  ], async () => new Map())
}

const available = (await serverUrl()) !== undefined

describe.skipIf(!available)('postgres store across a server restart', () => {
  let server: PrivateServer | undefined

  beforeAll(() => {
    server = privateServer()
  }, 120_000)
  afterAll(() => {
    if (server) removeServer(server)
  })

  it('goes degraded when the server restarts mid-session, reconnects in place, and continues with nothing lost', async () => {
    const store = await postgresStore({ connectionString: server!.url, session: 'agent-1' })
    const alerts: string[] = []
    const ws = await Workspace.open({ lower: lower(), store, session: 'agent-1', autoCheckpoint: false, onAlert: (alert) => alerts.push(alert.kind) })
    ws.fs.writeFileSync('/app/acknowledged.txt', 'safe')
    await ws.checkpoint({ name: 'before-restart' })
    ws.fs.appendFileSync('/app/acknowledged.txt', ' and sound')
    await ws.sync()
    let lost: Error | undefined
    store.onLost((error) => (lost = error))

    server!.restart()

    ws.fs.writeFileSync('/app/unacknowledged.txt', 'in memory only')
    const failed = await ws.sync().then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    )
    expect(failed?.code).toBe('EDEGRADED')
    expect(ws.status.degraded).toMatch(/postgres store failed: ECONNRESET/)
    expect(lost?.message).toMatch(/ECONNRESET/)
    expect(store.lost).toBeDefined()
    // Degraded is not dead: the workspace keeps working in memory, and reconnects by itself.
    expect(ws.fs.readFileSync('/app/unacknowledged.txt', 'utf8')).toBe('in memory only')
    ws.fs.writeFileSync('/app/also-memory.txt', 'x')
    for (let i = 0; i < 300 && ws.status.reconnect?.state !== 'reconnected'; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(ws.status.reconnect).toMatchObject({ state: 'reconnected' })
    await ws.sync()
    expect(ws.status.degraded).toBeUndefined()
    await ws.close()

    // Reopened: what was written while the server was away is there too, and writing goes on.
    const again = await store.reopen()
    const resumed = await Workspace.open({ lower: lower(), store: again, session: 'agent-1', autoCheckpoint: false })
    expect(resumed.status.degraded).toBeUndefined()
    expect(resumed.fs.readFileSync('/app/acknowledged.txt', 'utf8')).toBe('safe and sound')
    expect(resumed.fs.readFileSync('/app/unacknowledged.txt', 'utf8')).toBe('in memory only')
    expect(resumed.fs.readFileSync('/app/also-memory.txt', 'utf8')).toBe('x')
    expect(resumed.checkpoints().map((c) => c.name)).toEqual(['before-restart'])
    resumed.fs.writeFileSync('/app/after.txt', 'continued')
    await resumed.sync()
    await resumed.restore('before-restart')
    expect(resumed.fs.readFileSync('/app/acknowledged.txt', 'utf8')).toBe('safe')
    await resumed.close()
    const third = await Workspace.open({ lower: lower(), store: await postgresStore({ connectionString: server!.url, session: 'agent-1' }), session: 'agent-1', autoCheckpoint: false })
    expect(third.fs.existsSync('/app/after.txt')).toBe(false) // the restore was acknowledged too
    expect(third.history().some((op) => op.paths.includes('/app/after.txt'))).toBe(true)
    await third.close()
  }, 120_000)

  it('reopen waits for a server that is still down, up to its timeout', async () => {
    const store = await postgresStore({ connectionString: server!.url, session: 'agent-2' })
    await store.appendJournal(['kept'])
    server!.stop()
    await expect(store.appendJournal(['lost'])).rejects.toMatchObject({ code: 'ECONNRESET' })
    await store.close()
    await expect(store.reopen({ timeoutMs: 500 })).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    const reopening = store.reopen({ timeoutMs: 60_000 })
    await new Promise((resolve) => setTimeout(resolve, 1500))
    server!.start()
    const again = await reopening
    expect((await again.readJournal()).records).toEqual(['kept'])
    await again.close()
  }, 120_000)
})
