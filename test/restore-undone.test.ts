/**
 * Restore to an operation or a time, and bisect's probes, after undo, redo and undoRestore: the
 * state just after an operation is the kept, not-undone operations up to it, whatever checkpoints
 * were made meanwhile. The trap: a checkpoint's tree holds the operations undone or not as they
 * were when it was made, so replaying forward from it after a later undo or redo of an operation
 * before it brought an undone write back (or left a redone one out), live, after a reopen and
 * after a compaction. And undoRestore's re-apply stops, as redo does, once a new operation is
 * recorded: it overwrote the later write silently.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-restore-undone-test-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const read = (ws: Workspace, path: string) => (ws.fs.existsSync(path) ? (ws.fs.readFileSync(path, 'utf8') as string) : undefined)

/** The workspace over the store's image as it stands: what a reopen after a crash or a close sees. */
async function reopened(store: MemoryStore): Promise<Workspace> {
  return Workspace.open({ lower: {}, store: MemoryStore.from(store.image()), autoCheckpoint: false })
}

/**
 * /a = 1, /a = 2, checkpoint 'c' (it holds /a = 2), undo (/a is 1 again), then /b = x and /b = y.
 * Returns the id of the write of /b = x: just after it, /a is 1 and /b is x.
 */
async function undoneAfterCheckpoint(ws: Workspace): Promise<string> {
  ws.fs.writeFileSync('/a', '1')
  ws.fs.writeFileSync('/a', '2')
  await ws.checkpoint({ name: 'c' })
  await ws.undo()
  ws.fs.writeFileSync('/b', 'x')
  const id = ws.history()[0].id
  ws.fs.writeFileSync('/b', 'y')
  return id
}

/**
 * /a = 1, /a = 2, undo (/a is 1), checkpoint 'd' (it holds /a = 1), redo (/a is 2), then /b = x and
 * /b = y. Returns the id of the write of /b = x: just after it, /a is 2 and /b is x.
 */
async function redoneAfterCheckpoint(ws: Workspace): Promise<string> {
  ws.fs.writeFileSync('/a', '1')
  ws.fs.writeFileSync('/a', '2')
  await ws.undo()
  await ws.checkpoint({ name: 'd' })
  expect((await ws.redo()).redone).toHaveLength(1)
  ws.fs.writeFileSync('/b', 'x')
  const id = ws.history()[0].id
  ws.fs.writeFileSync('/b', 'y')
  return id
}

describe('restore to an operation after an undo or redo of one before a checkpoint', () => {
  afterEach(() => vi.useRealTimers())

  it('leaves an operation undone after the checkpoint out of the state (in memory)', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    const id = await undoneAfterCheckpoint(ws)
    await ws.restore({ operation: id })
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['1', 'x'])
    // The checkpoint itself is its own tree, as it was made.
    await ws.restore('c')
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['2', undefined])
    await ws.close()
  })

  it('and by time', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.UTC(2026, 0, 1)
    vi.setSystemTime(start)
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    let tick = 0
    const at = () => vi.setSystemTime(start + ++tick * 1000)
    at()
    ws.fs.writeFileSync('/a', '1')
    at()
    ws.fs.writeFileSync('/a', '2')
    await ws.checkpoint({ name: 'c' })
    await ws.undo()
    at()
    ws.fs.writeFileSync('/b', 'x')
    const time = Date.now() + 500
    at()
    ws.fs.writeFileSync('/b', 'y')
    await ws.restore({ time })
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['1', 'x'])
    await ws.close()
  })

  it('after a reopen: the journal replays the undo after the checkpoint and marks it as the live undo did', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    const id = await undoneAfterCheckpoint(ws)
    await ws.sync()
    await ws.close()
    const again = await reopened(store)
    await again.restore({ operation: id })
    expect([read(again, '/a'), read(again, '/b')]).toEqual(['1', 'x'])
    await again.close()
  })

  it('after a compaction and a reopen: the snapshot carries the mark', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    const id = await undoneAfterCheckpoint(ws)
    await ws.compact()
    const image = store.image()
    // The whole history in the snapshot: no 'undo' record after it to mark the checkpoint again.
    expect(image.journal).toContain('"replayBase":false')
    expect(image.journal).not.toContain('"t":"undo"')
    await ws.close()
    const again = await reopened(store)
    await again.restore({ operation: id })
    expect([read(again, '/a'), read(again, '/b')]).toEqual(['1', 'x'])
    await again.restore('c')
    expect(read(again, '/a')).toBe('2')
    await again.close()
  })

  it('keeps an operation redone after a checkpoint made while it was undone (live, reopened, compacted)', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    const id = await redoneAfterCheckpoint(ws)
    await ws.sync()
    const journaled = await reopened(store)
    await journaled.restore({ operation: id })
    expect([read(journaled, '/a'), read(journaled, '/b')]).toEqual(['2', 'x'])
    await journaled.close()
    await ws.compact()
    const compacted = await reopened(store)
    await compacted.restore({ operation: id })
    expect([read(compacted, '/a'), read(compacted, '/b')]).toEqual(['2', 'x'])
    await compacted.close()
    await ws.restore({ operation: id })
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['2', 'x'])
    await ws.close()
  })

  it("keeps a restore undoRestore re-applied after a checkpoint made while it was undone (live and reopened)", async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', '1')
    await ws.checkpoint({ name: 'c1' })
    ws.fs.writeFileSync('/a', '2')
    await ws.restore('c1')
    await ws.undoRestore()
    await ws.checkpoint({ name: 'd' }) // holds /a = 2, the restore undone
    expect(await ws.undoRestore()).toHaveProperty('redone')
    ws.fs.writeFileSync('/b', 'x')
    const id = ws.history()[0].id
    ws.fs.writeFileSync('/b', 'y')
    await ws.sync()
    const again = await reopened(store)
    await again.restore({ operation: id })
    expect([read(again, '/a'), read(again, '/b')]).toEqual(['1', 'x'])
    await again.close()
    await ws.restore({ operation: id })
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['1', 'x'])
    await ws.close()
  })

  it('still replays from a checkpoint made after the undo (its tree is the history as it reads now)', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', '1')
    ws.fs.writeFileSync('/a', '2')
    await ws.undo()
    await ws.checkpoint({ name: 'after-undo' })
    ws.fs.writeFileSync('/b', 'x')
    const id = ws.history()[0].id
    ws.fs.writeFileSync('/b', 'y')
    await ws.restore({ operation: id })
    expect([read(ws, '/a'), read(ws, '/b')]).toEqual(['1', 'x'])
    // A checkpoint after the point is superseded by the restore, one before it is not (base or not).
    expect(ws.checkpoints().find((c) => c.name === 'after-undo')?.superseded).toBeUndefined()
    await ws.close()
  })

  it('supersedes the same checkpoints whether the one before the point is a replay base or not', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    const id = await undoneAfterCheckpoint(ws)
    await ws.checkpoint({ name: 'later' })
    await ws.restore({ operation: id })
    const superseded = Object.fromEntries(ws.checkpoints().map((c) => [c.name, c.superseded ?? false]))
    expect(superseded).toMatchObject({ c: false, later: true })
    await ws.close()
  })
})

describe('bisect over a history with an operation undone after a checkpoint', () => {
  it('blames the operation that broke it, not one whose probe replayed the undone write', async () => {
    const root = `${scratch}/bisect`
    fs.mkdirSync(root)
    fs.writeFileSync(`${root}/ok`, 'good\n')
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    ws.fs.writeFileSync('/bad', 'x') // breaks it…
    await ws.checkpoint({ name: 'c1' }) // …and the checkpoint holds it
    await ws.undo() // not a state of the history any more
    for (const n of [2, 3, 4]) ws.fs.writeFileSync(`/f${n}`, String(n))
    ws.fs.writeFileSync('/bad', 'y') // breaks it for real
    const breaking = ws.history()[0].id
    const result = await ws.bisect('test ! -e bad')
    expect(result.suspects.map((op) => op.id)).toEqual([breaking])
    for (const probe of result.probes) {
      if (probe.state.kind !== 'operation') continue
      expect(probe.verdict, probe.state.label).toBe(probe.state.operation!.id === breaking ? 'bad' : 'good')
    }
    await ws.close()
  })
})

describe("undoRestore's re-apply", () => {
  /** /a = v1, checkpoint c1, /a = v2, restore c1, undoRestore (/a = v2), then the user's /a = v3-important. */
  async function laterWrite(ws: Workspace): Promise<string> {
    ws.fs.writeFileSync('/a', 'v1')
    await ws.checkpoint({ name: 'c1' })
    ws.fs.writeFileSync('/a', 'v2')
    await ws.restore('c1')
    expect(read(ws, '/a')).toBe('v1')
    expect(await ws.undoRestore()).toHaveProperty('undone')
    expect(read(ws, '/a')).toBe('v2')
    ws.fs.writeFileSync('/a', 'v3-important')
    return ws.history()[0].id
  }

  it('is refused once an operation was recorded after the undo (EDEPENDENT), and overwrites nothing', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    const later = await laterWrite(ws)
    await expect(ws.undoRestore()).rejects.toMatchObject({
      code: 'EDEPENDENT',
      message: expect.stringMatching(/cannot re-apply .*restore c1.*operations were recorded after undoRestore took it back/),
      blocking: [expect.objectContaining({ id: later })],
    })
    expect(read(ws, '/a')).toBe('v3-important')
    expect(ws.history().find((op) => op.type === 'restore')?.undone).toBe(true)
    // Asked again, the same answer: the last restore stays taken back.
    await expect(ws.undoRestore()).rejects.toMatchObject({ code: 'EDEPENDENT' })
    await ws.sync()
    const again = await reopened(store)
    expect(read(again, '/a')).toBe('v3-important')
    expect(again.history().map((op) => [op.type, op.undone ?? false])).toEqual([
      ['file_edit', false],
      ['restore', true],
      ['file_edit', false],
      ['file_create', false],
    ])
    await again.close()
    // The way back to it: restore its target again.
    await ws.restore('c1')
    expect(read(ws, '/a')).toBe('v1')
    await ws.close()
  })

  it('still re-applies when nothing was recorded since (a checkpoint is no operation)', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'v1')
    await ws.checkpoint({ name: 'c1' })
    ws.fs.writeFileSync('/a', 'v2')
    await ws.restore('c1')
    await ws.undoRestore()
    await ws.checkpoint({ name: 'between' })
    expect(await ws.undoRestore()).toHaveProperty('redone')
    expect(read(ws, '/a')).toBe('v1')
    await ws.close()
  })
})

describe("a fork's history starts from its source's state", () => {
  it('restore({ operation }) with no checkpoint replays onto the tree and state the fork began with', async () => {
    const ws = await Workspace.open({ lower: { '/lower.txt': 'l' }, autoCheckpoint: false })
    ws.fs.writeFileSync('/inherited.txt', 'from the source')
    await ws.state.set('phase', 'planning')
    const fork = await ws.fork('try')
    fork.fs.writeFileSync('/a.txt', 'a')
    fork.fs.writeFileSync('/b.txt', 'b')
    const [first] = fork.history({ path: '/a.txt' })
    await fork.restore({ operation: first.id })
    expect(fork.fs.readdirSync('/').sort()).toEqual(['a.txt', 'inherited.txt', 'lower.txt'])
    expect(await fork.state.get('phase')).toBe('planning')
    await fork.close()
    await ws.close()
  })
})

describe('restore({ time }) arguments', () => {
  it('refuses a time that is no Date (NaN, infinite, past ±8.64e15 ms) with EINVAL, and changes nothing', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', '1')
    for (const time of [Number.NaN, Number.POSITIVE_INFINITY, 9e15, -9e15]) await expect(ws.restore({ time })).rejects.toMatchObject({ code: 'EINVAL', syscall: 'restore' })
    expect(ws.history()).toHaveLength(1)
    expect(ws.checkpoints()).toEqual([])
    await ws.close()
  })
})

