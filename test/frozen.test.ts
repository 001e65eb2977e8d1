/**
 * A frozen workspace (a safe stop, a store open read-only or found damaged) refuses every recording
 * call as it refuses fs writes: EROFS naming the reason, nothing changed, nothing recorded.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true })
})

/** Every recording call of the engine, each against a workspace with a checkpoint named 'c'. */
const calls: Record<string, (ws: Workspace) => Promise<unknown>> = {
  checkpoint: (ws) => ws.checkpoint({ name: 'd' }),
  restore: (ws) => ws.restore('c'),
  undo: (ws) => ws.undo(),
  redo: (ws) => ws.redo(),
  undoRestore: (ws) => ws.undoRestore(),
  reset: (ws) => ws.reset(),
  transaction: (ws) => ws.transaction((staged) => staged.writeFileSync('/t', 'x')),
  setResume: (ws) => ws.setResume({ phase: 'plan', turn: 1 }),
  recordSideEffect: (ws) => ws.recordSideEffect({ description: 'mail', compensate: () => undefined }),
  renameCheckpoint: (ws) => ws.renameCheckpoint('c', 'e'),
  deleteCheckpoint: (ws) => ws.deleteCheckpoint('c'),
  beginTurn: (ws) => ws.beginTurn(3),
  purge: (ws) => ws.purge('/b'),
  'state.set': (ws) => ws.state.set('k', 1),
  'state.delete': (ws) => ws.state.delete('k'),
}

describe('a frozen workspace', () => {
  it('refuses every recording call with EROFS naming the reason, and changes nothing', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'lower' } })
    ws.fs.writeFileSync('/b', 'one')
    await ws.checkpoint({ name: 'c' })
    ws.fs.writeFileSync('/b', 'two')
    await ws.state.set('k', 0)
    ws.freeze('a test stop')
    const history = ws.history().length
    for (const [name, call] of Object.entries(calls)) {
      await expect(call(ws), name).rejects.toMatchObject({ code: 'EROFS', message: expect.stringContaining('a test stop') })
    }
    expect(ws.history()).toHaveLength(history)
    expect(ws.checkpoints().map((c) => c.name)).toEqual(['c'])
    expect(ws.fs.readFileSync('/b', 'utf8')).toBe('two')
    expect(ws.state.read('k')).toBe(0)
    // Dry runs record nothing: they are answered, and change nothing either.
    expect(await ws.restore('c', { dryRun: true })).toMatchObject({ applied: false, changes: [{ path: '/b' }] })
    expect((await ws.undo({ dryRun: true })).undone).toHaveLength(1)
    expect(ws.history()).toHaveLength(history)
    expect(ws.fs.readFileSync('/b', 'utf8')).toBe('two')
    // Unfrozen, the same calls work again.
    ws.unfreeze()
    await ws.checkpoint({ name: 'd' })
    await ws.restore('c')
    expect(ws.fs.readFileSync('/b', 'utf8')).toBe('one')
    await ws.close()
  })

  it('on a store another writer holds, refuses a transaction before its body runs (nothing staged, nothing to fail later)', async () => {
    const root = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-frozen-`)
    roots.push(root)
    const writer = await Workspace.open({ store: directoryStore(root) })
    writer.fs.writeFileSync('/shared.txt', 'by the writer')
    await writer.sync()
    const reader = await Workspace.open({ store: directoryStore(root, { readOnly: true }) })
    let ran = false
    await expect(
      reader.transaction((staged) => {
        ran = true
        staged.writeFileSync('/x', 'y')
      }),
    ).rejects.toMatchObject({ code: 'EROFS' })
    expect(ran).toBe(false)
    await expect(reader.checkpoint({ name: 'nope' })).rejects.toMatchObject({ code: 'EROFS' })
    expect(reader.fs.readFileSync('/shared.txt', 'utf8')).toBe('by the writer')
    // The reader's sync has nothing to fail on: nothing was committed in its memory.
    await reader.sync()
    await reader.close()
    await writer.close()
  })

  it('opened on a read-only store it stays read-only when the store is promoted: unfreeze is EROFS, and compact writes nothing over the newer journal', async () => {
    // A store shared by tabs: read-only while another holds it, writable once that one went away (then a tab reopens on it).
    class SharedStore extends MemoryStore {
      writer = false
      get readOnly(): boolean {
        return !this.writer
      }
    }
    const store = new SharedStore()
    store.writer = true
    const first = await Workspace.open({ store })
    first.fs.writeFileSync('/a.txt', 'one')
    await first.close()
    store.writer = false
    const follower = await Workspace.open({ store })
    expect(follower.frozen).toContain('open read-only (opened with readOnly: true, or another writer holds it')
    expect(() => follower.unfreeze()).toThrow(expect.objectContaining({ code: 'EROFS', syscall: 'unfreeze' }))
    // The writer that went away committed more before the follower heard of it; then the follower's store is promoted.
    store.writer = true
    const writer = await Workspace.open({ store })
    writer.fs.writeFileSync('/b.txt', 'two')
    await writer.close()
    const journal = store.image().journal
    await follower.compact()
    await follower.sync()
    expect(store.image().journal).toBe(journal)
    expect(() => follower.unfreeze()).toThrow(expect.objectContaining({ code: 'EROFS' }))
    await follower.close()
    const reopened = await Workspace.open({ store })
    expect(reopened.fs.readFileSync('/b.txt', 'utf8')).toBe('two')
    await reopened.close()
  })
})
