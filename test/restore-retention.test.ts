/**
 * Restoring to an operation or a time after retention dropped operations: the tree must be the one
 * the writes made at that point (checked against a model of the writes), or the restore is refused
 * (ENOENT: no longer restorable, as git's pruned reflog), never a wrong tree. The trap: the nearest
 * older checkpoint is from before the dropped operations, so replaying forward from it skips them.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MemoryStore } from '../src/adapter-kit.js'
import { type Store, Workspace } from '../src/index.js'

const START = Date.UTC(2026, 0, 1)
const WRITES = 30

/** The files under /w as the workspace shows them. */
function tree(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of (ws.fs.readdirSync('/w') as string[]).sort()) out[`/w/${name}`] = ws.fs.readFileSync(`/w/${name}`, 'utf8') as string
  return out
}

interface Scenario {
  ws: Workspace
  /** The tree after each operation, by operation id, and the operation's time. */
  after: Map<string, { files: Record<string, string>; time: number }>
  ids: string[]
}

/**
 * Retention of 5 operations, a checkpoint after operation 2, then 30 writes in all, each creating a
 * file or changing one, one millisecond apart.
 */
async function scenario(store?: Store): Promise<Scenario> {
  vi.setSystemTime(START)
  const ws = await Workspace.open({ lower: { '/w/base.txt': 'base' }, retention: { operations: 5 }, autoCheckpoint: false, ...(store ? { store } : {}) })
  const model: Record<string, string> = { '/w/base.txt': 'base' }
  const after = new Map<string, { files: Record<string, string>; time: number }>()
  const ids: string[] = []
  for (let n = 1; n <= WRITES; n++) {
    vi.setSystemTime(START + n * 1000)
    // New files at n % 3 == 1, changes of an earlier one otherwise.
    const path = n % 3 === 1 ? `/w/f${n}.txt` : `/w/f${n - (n % 3)}.txt`.replace('/w/f0.txt', '/w/base.txt')
    ws.fs.writeFileSync(path, `write ${n}`)
    model[path] = `write ${n}`
    const op = ws.history()[0]
    ids.push(op.id)
    after.set(op.id, { files: { ...model }, time: op.time })
    if (n === 2) await ws.checkpoint({ name: 'early' })
  }
  return { ws, after, ids }
}

describe('restore after retention dropped operations', () => {
  afterEach(() => vi.useRealTimers())

  it('rebuilds the exact tree at every kept operation, or refuses one it dropped', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const probe = await scenario()
    const kept = new Set(probe.ws.history().map((op) => probe.ids.indexOf(op.id)))
    await probe.ws.close()
    // Retention dropped operations after the checkpoint (the case that went wrong) and kept op 19.
    expect(kept.has(2)).toBe(false)
    expect(kept.has(18)).toBe(true)
    for (let index = 0; index < WRITES; index++) {
      const { ws, after, ids } = await scenario()
      const id = ids[index]
      if (kept.has(index)) {
        await ws.restore({ operation: id }, { force: true })
        expect(tree(ws), `after operation ${index + 1}`).toEqual(after.get(id)!.files)
      } else {
        await expect(ws.restore({ operation: id })).rejects.toMatchObject({ code: 'ENOENT' })
        expect(tree(ws), 'a refused restore changes nothing').toEqual(after.get(ids.at(-1)!)!.files)
      }
      await ws.close()
    }
  })

  it('rebuilds the exact tree at a time within the kept operations, and refuses a time before them', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { ws, after, ids } = await scenario()
    const op19 = after.get(ids[18])!
    // Half a second after op 19: the state op 19 left.
    await ws.restore({ time: op19.time + 500 })
    expect(tree(ws)).toEqual(op19.files)
    await ws.undoRestore()
    // A time whose last operation retention dropped.
    await expect(ws.restore({ time: after.get(ids[9])!.time })).rejects.toMatchObject({ code: 'ENOENT', message: expect.stringMatching(/no longer restorable/) })
    expect(tree(ws)).toEqual(after.get(ids.at(-1)!)!.files)
    // The checkpoint itself is still exact.
    await ws.restore('early')
    expect(tree(ws)).toEqual(after.get(ids[1])!.files)
    await ws.close()
  })

  it('takes back a restore, an undone write and session state on the way back from the live tree', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { ws, after, ids } = await scenario()
    await ws.state.set('plan', 'after 30 writes')
    // A restore (a whole-tree move) and writes after it, one of them undone.
    await ws.restore('early')
    ws.fs.writeFileSync('/w/late.txt', 'late')
    ws.fs.writeFileSync('/w/undone.txt', 'undone')
    await ws.undo()
    expect(ws.fs.existsSync('/w/undone.txt')).toBe(false)
    await ws.restore({ operation: ids[24] })
    expect(tree(ws)).toEqual(after.get(ids[24])!.files)
    expect(await ws.state.get('plan')).toBeUndefined()
    await ws.close()
  })

  it('rebuilds the same tree after the store is reopened', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const store = new MemoryStore()
    const { ws, after, ids } = await scenario(store)
    await ws.close()
    const again = await Workspace.open({ lower: { '/w/base.txt': 'base' }, store, retention: { operations: 5 }, autoCheckpoint: false })
    await again.restore({ operation: ids[18] })
    expect(tree(again)).toEqual(after.get(ids[18])!.files)
    await again.close()
  })
})
