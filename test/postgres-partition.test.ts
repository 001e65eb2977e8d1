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
})
