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

/** A durable store whose journal appends fail once `full` is set (a disk or a quota that ran out). */
class FillingStore extends MemoryStore {
  full = false
  override async appendJournal(records: readonly string[]): Promise<void> {
    if (this.full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
    return super.appendJournal(records)
  }
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
