/**
 * Following another tab's writer, in the worker's host (worker/follow.ts), over a shared store
 * whose timing the test holds: what a tab hears while its first workspace is still opening must
 * not be lost. A promotion heard then, above all: the tab holds the writer's lock, and a workspace
 * left frozen on it means no tab can write the store at all.
 */
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/engine/memory-store.js'
import { Workspace } from '../src/workspace.js'
import type { JsonValue } from '../src/engine/state.js'
import type { JournalRead, StoreChange } from '../src/engine/store.js'
import { registerAdapter } from '../worker/serve.js'
import { WorkspaceHost } from '../worker/host.js'
import type { Opened, Outcome, StatusRecord } from '../worker/protocol.js'

/** A store other tabs share: read-only until promoted; opening a workspace on it waits for `release` once it has settled its role. */
class SharedStore extends MemoryStore {
  readOnly = true
  readonly ready = Promise.resolve()
  private readonly listeners = new Set<(change: StoreChange) => void>()
  private gate: Promise<void> | undefined
  release: () => void = () => undefined
  /** Resolves once the first workspace has read the journal and waits. */
  readonly reading: Promise<void>
  started: () => void = () => undefined

  constructor() {
    super()
    this.gate = new Promise((resolve) => (this.release = resolve))
    this.reading = new Promise((resolve) => (this.started = resolve))
  }

  private journalRead = false

  /** Holds the next workspace opened on this store once it has read the journal (until `release`). */
  holdNext(): Promise<void> {
    this.journalRead = false
    this.gate = new Promise((resolve) => (this.release = resolve))
    return new Promise((resolve) => (this.started = resolve))
  }

  override async readJournal(): Promise<JournalRead> {
    this.journalRead = true
    return super.readJournal()
  }

  /** The first metadata read after the journal's (the workspace has settled its role by then) waits. */
  override async getMeta(key: string): Promise<JsonValue | undefined> {
    if (this.journalRead && this.gate) {
      const gate = this.gate
      this.gate = undefined
      this.started()
      await gate
    }
    return super.getMeta(key)
  }

  onChange(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  tell(change: StoreChange): void {
    if (change.kind === 'writer') this.readOnly = false
    for (const listener of [...this.listeners]) listener(change)
  }
}

describe('a follower hears what happens while its workspace opens', () => {
  it('a promotion heard while the first workspace opens reopens it for writing', async () => {
    const store = new SharedStore()
    registerAdapter('indexeddb', { indexedDbStore: () => store })
    const host = new WorkspaceHost(() => undefined)
    const request = (message: object) => host.request(message, undefined, undefined, []) as Promise<Outcome>

    const opening = request({ t: 'open', options: { store: { kind: 'indexeddb', name: 'shared' }, autoCheckpoint: false } })
    await store.reading
    // The writer's tab went away while this one was reading the store as a follower.
    store.tell({ kind: 'writer' })
    store.release()
    const opened = await opening
    if (!opened.ok) throw new Error(opened.error.message)
    const { handle } = opened.value as Opened
    await host.idle(handle)

    const sync = await request({ t: 'call', handle, member: 'sync', args: [] })
    if (!sync.ok) throw new Error(sync.error.message)
    expect((sync.value as { status: StatusRecord }).status).toMatchObject({ tab: 'writer' })
    expect((sync.value as { status: StatusRecord }).status.frozen).toBeUndefined()
    const written = await request({ t: 'fs', handle, op: 'writeFile', args: ['/a.txt', 'the writer now'] })
    expect(written.ok ? 'written' : written.error.code).toBe('written')
    await request({ t: 'close', handle })
  })

  it("the follower's workspace, until it is reopened for writing, changes nothing in the store: not even one the promotion made writable", async () => {
    const store = new SharedStore()
    store.release()
    registerAdapter('indexeddb', { indexedDbStore: () => store })
    const host = new WorkspaceHost(() => undefined)
    const request = (message: object) => host.request(message, undefined, undefined, []) as Promise<Outcome>
    const opened = await request({ t: 'open', options: { store: { kind: 'indexeddb', name: 'shared' }, autoCheckpoint: false } })
    if (!opened.ok) throw new Error(opened.error.message)
    const { handle } = opened.value as Opened

    // The writer's last commit, which this tab has not reloaded yet (its message still on the way).
    store.readOnly = false
    const writer = await Workspace.open({ store, autoCheckpoint: false })
    writer.fs.writeFileSync('/last.txt', "the writer's last commit")
    await writer.sync()
    await writer.close()
    store.readOnly = true

    // The writer's tab goes away; while this tab reopens for writing, the page calls on.
    const reopening = store.holdNext()
    store.tell({ kind: 'writer' })
    await reopening
    const calls: Record<string, string> = {}
    for (const [member, args] of [['compact', []], ['collectGarbage', []], ['unfreeze', []], ['repair', [{}]], ['repair', [{ dryRun: true }]]] as const) {
      const outcome = await request({ t: 'call', handle, member, args })
      calls[`${member}${args.length > 0 ? JSON.stringify(args[0]) : ''}`] = outcome.ok ? 'done' : String(outcome.error.code)
    }
    store.release()
    await host.idle(handle)
    const read = await request({ t: 'fs', handle, op: 'readFile', args: ['/last.txt', 'utf8'] })
    expect(read.ok ? read.value : read.error.message).toBe("the writer's last commit")
    await request({ t: 'close', handle })
    // What the store holds, as the next tab to open it reads it.
    const next = await Workspace.open({ store, autoCheckpoint: false })
    expect(next.fs.readFileSync('/last.txt', 'utf8')).toBe("the writer's last commit")
    await next.close()
    expect(calls).toEqual({ compact: 'EROFS', collectGarbage: 'EROFS', unfreeze: 'EROFS', 'repair{}': 'EROFS', 'repair{"dryRun":true}': 'done' })
  })
})
