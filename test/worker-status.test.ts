/**
 * The page mirrors the engine's status after each engine call (worker/client.ts): a call that
 * fails is one too. A store that fails degrades the workspace, and the rejected sync() is exactly
 * when the page looks at `ws.status.degraded` to know why.
 */
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/engine/memory-store.js'
import { registerAdapter } from '../worker/serve.js'
import { WorkspaceHost } from '../worker/host.js'
import type { EventsMessage, Opened, Outcome } from '../worker/protocol.js'

const noSpace = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })

/** A durable store whose journal appends fail once `full` is set (a disk or a quota that ran out). */
class FillingStore extends MemoryStore {
  full = false
  override async appendJournal(records: readonly string[]): Promise<void> {
    if (this.full) throw noSpace()
    return super.appendJournal(records)
  }
}

/** The same, taken back by the workspace's reconnection once there is room (as the directory and OPFS stores are). */
class RefillingStore extends FillingStore {
  async reconnect(): Promise<{ readonly records: number }> {
    if (this.full) throw noSpace()
    return { records: (await this.readJournal()).records.length }
  }
}

/** Every status and 'store' event the worker posted, in order. */
function told(posted: readonly EventsMessage[]): string[] {
  return posted
    .flatMap((message) => message.items)
    .flatMap((item) => ('status' in item ? [`status ${item.status.degraded === undefined ? 'ok' : 'degraded'}`] : 'event' in item && item.event.type === 'store' ? [`store ${item.event.state}`] : []))
}

describe('the status after a call that failed', () => {
  it('a sync() the store failed tells the page the workspace is degraded, before the rejection', async () => {
    const store = new FillingStore()
    registerAdapter('indexeddb', { indexedDbStore: () => Object.assign(store, { ready: Promise.resolve() }) })
    const posted: EventsMessage[] = []
    const host = new WorkspaceHost((message) => posted.push(message))
    const request = async (message: object) => {
      const outcome = (await host.request(message, undefined, undefined, [])) as Outcome
      host.flushEvents() // as serve() does before each answer
      return outcome
    }
    const opened = await request({ t: 'open', options: { store: { kind: 'indexeddb', name: 'filling' }, autoCheckpoint: false } })
    if (!opened.ok) throw new Error(opened.error.message)
    const { handle } = opened.value as Opened

    store.full = true
    await request({ t: 'fs', handle, op: 'writeFile', args: ['/a.txt', 'no room'] })
    const sync = await request({ t: 'call', handle, member: 'sync', args: [] })
    expect(sync.ok).toBe(false)
    const statuses = posted.flatMap((message) => message.items).flatMap((item) => ('status' in item ? [item.status] : []))
    expect(statuses.at(-1)?.degraded).toMatch(/ENOSPC/)
    await request({ t: 'close', handle })
  })
})

describe('the status between calls', () => {
  it('a store that fails in a commit no call waits for, then comes back by itself, is told to the page each time, with the status first', async () => {
    const store = new RefillingStore()
    registerAdapter('indexeddb', { indexedDbStore: () => Object.assign(store, { ready: Promise.resolve() }) })
    const posted: EventsMessage[] = []
    const host = new WorkspaceHost((message) => posted.push(message))
    const request = async (message: object) => {
      const outcome = (await host.request(message, undefined, undefined, [])) as Outcome
      host.flushEvents()
      return outcome
    }
    const opened = await request({ t: 'open', options: { store: { kind: 'indexeddb', name: 'refilling' }, autoCheckpoint: false } })
    if (!opened.ok) throw new Error(opened.error.message)
    const { handle } = opened.value as Opened
    expect((await request({ t: 'events', handle, types: ['store'] })).ok).toBe(true)

    const from = posted.length
    store.full = true
    // The write's answer carries no commit: the group commit fails in the background, and the page hears of it.
    await request({ t: 'fs', handle, op: 'writeFile', args: ['/a.txt', 'kept back while full'] })
    await expect.poll(() => told(posted.slice(from)), { timeout: 5_000 }).toEqual(['status degraded', 'store failed'])
    store.full = false
    await expect.poll(() => told(posted.slice(from)), { timeout: 5_000 }).toEqual(['status degraded', 'store failed', 'status ok', 'store reconnected'])
    // What the failed commit held reached the store.
    const journal = (await store.readJournal()).records.join('\n')
    expect(journal).toContain('/a.txt')
    await request({ t: 'close', handle })
  })

  it('a workspace with only store listeners makes no batch for each operation', async () => {
    const { Workspace } = await import('../src/index.js')
    const ws = await Workspace.open({ store: new MemoryStore(), autoCheckpoint: false })
    const feed = (ws as unknown as { ops: { changes: { queue: unknown[] } } }).ops.changes
    const off = ws.events.on('store', () => undefined)
    ws.fs.writeFileSync('/a.txt', 'a')
    expect(feed.queue).toHaveLength(0)
    off()
    await ws.close()
  })
})
