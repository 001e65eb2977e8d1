/**
 * A machine that vanishes without closing its connection (power lost, network cut) must free its
 * sessions soon, not after the kernel's two-hour keepalive: until the server drops the backend,
 * the session's writer lock stays held and every other machine gets EBUSY. The cut is made with
 * iptables on loopback (dropping the writer's packets both ways, as a dead machine answers
 * nothing), so this needs root and iptables, and a private server listening on TCP; it skips
 * otherwise.
 */
import { execFileSync } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../adapters/postgres/index.js'
import { Workspace } from '../src/index.js'
import { type PrivateServer, privateServer, rawClient, removeServer, serverUrl } from './postgres-server.js'

function iptablesWorks(): boolean {
  if (process.getuid?.() !== 0) return false
  try {
    execFileSync('iptables', ['-L', 'INPUT', '-n'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

const usable = (await serverUrl()) !== undefined && iptablesWorks()
const port = 20_000 + Math.floor(Math.random() * 20_000)
const server: (PrivateServer & { socketUrl: string }) | undefined = usable ? privateServer({ tcpPort: port }) : undefined
const rules: string[][] = []

afterAll(() => {
  for (const rule of rules) {
    try {
      execFileSync('iptables', ['-D', ...rule], { stdio: 'ignore' })
    } catch {
      // Already gone.
    }
  }
  if (server) removeServer(server)
})

describe.skipIf(server === undefined)('a writer whose machine vanished', () => {
  it('frees its session within about half a minute, and what it acknowledged is there', async () => {
    const ws = await Workspace.open({ store: await postgresStore({ connectionString: server!.url, session: 'vanishing' }), autoCheckpoint: false })
    ws.fs.writeFileSync('/acknowledged.txt', 'yes')
    await ws.sync()

    const admin = await rawClient(server!.socketUrl)
    const { rows } = await admin.query<{ client_port: number }>(`SELECT client_port FROM pg_stat_activity WHERE application_name = 'rewindfs' AND client_addr IS NOT NULL`)
    expect(rows).toHaveLength(1)
    const clientPort = String(rows[0].client_port)
    // Its packets go nowhere, either way: the machine is gone as far as the server can tell.
    for (const rule of [
      ['INPUT', '-p', 'tcp', '-s', '127.0.0.1', '--sport', clientPort, '--dport', String(port), '-j', 'DROP'],
      ['INPUT', '-p', 'tcp', '-s', '127.0.0.1', '--sport', String(port), '--dport', clientPort, '-j', 'DROP'],
    ]) {
      execFileSync('iptables', ['-I', ...rule])
      rules.push(rule)
    }

    const started = Date.now()
    let taken: Awaited<ReturnType<typeof postgresStore>> | undefined
    while (taken === undefined && Date.now() - started < 60_000) {
      try {
        taken = await postgresStore({ connectionString: server!.socketUrl, session: 'vanishing' })
      } catch (error) {
        expect((error as { code?: string }).code).toBe('EBUSY')
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
    expect(taken, 'the session was still locked by the vanished writer after 60 s').toBeDefined()
    expect(Date.now() - started).toBeLessThan(45_000)
    const resumed = await Workspace.open({ store: taken!, autoCheckpoint: false })
    expect(resumed.fs.readFileSync('/acknowledged.txt', 'utf8')).toBe('yes')
    await resumed.close()
    await admin.end()
    // The vanished writer: its connection is dead; let it go without waiting on it.
    void ws.close().catch(() => undefined)
  }, 120_000)

  it("a writer cut off with a commit in flight goes degraded within replyTimeoutMs, and reconnects once the network is back", async () => {
    const ws = await Workspace.open({ store: await postgresStore({ connectionString: server!.url, session: 'cut-off', replyTimeoutMs: 3000 }), autoCheckpoint: false })
    ws.fs.writeFileSync('/before.txt', 'before')
    await ws.sync()
    const admin = await rawClient(server!.socketUrl)
    const { rows } = await admin.query<{ client_port: number }>(`SELECT client_port FROM pg_stat_activity WHERE application_name = 'rewindfs' AND client_addr IS NOT NULL`)
    expect(rows).toHaveLength(1)
    const cut = [
      ['INPUT', '-p', 'tcp', '-s', '127.0.0.1', '--sport', String(rows[0].client_port), '--dport', String(port), '-j', 'DROP'],
      ['INPUT', '-p', 'tcp', '-s', '127.0.0.1', '--sport', String(port), '--dport', String(rows[0].client_port), '-j', 'DROP'],
    ]
    for (const rule of cut) {
      execFileSync('iptables', ['-I', ...rule])
      rules.push(rule)
    }
    const started = Date.now()
    ws.fs.writeFileSync('/during.txt', 'during')
    const failed = await ws.sync().then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    expect(failed).toMatchObject({ code: 'EDEGRADED' })
    expect(Date.now() - started).toBeLessThan(10_000)
    // The network comes back: the workspace reconnects by itself (once the server let the old backend go) and sends what it kept.
    for (const rule of cut) execFileSync('iptables', ['-D', ...rule])
    await expect.poll(() => ws.status.reconnect?.state, { timeout: 60_000, interval: 500 }).toBe('reconnected')
    await ws.close()
    const again = await Workspace.open({ store: await postgresStore({ connectionString: server!.socketUrl, session: 'cut-off' }), autoCheckpoint: false })
    expect(again.fs.readFileSync('/during.txt', 'utf8')).toBe('during')
    await again.close()
    await admin.end()
  }, 120_000)
})
