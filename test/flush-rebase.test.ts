/**
 * The base a flush compares the project with, when a human edits the project while the agent works
 * on it: the version the workspace showed when it first changed a path, as an editor's "changed on
 * disk" check compares with the file it loaded. An edit the agent read again before changing the
 * path is no conflict (its change rests on it); one made after is. And after a flush, an edit of a
 * flushed file on disk is reported, never written back over. Real directories on disk are the
 * oracle: the human's edits are made with node:fs, between the agent's operations.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick, tree as treeOf } from './support/human-project.js'
import { watching } from '../src/watch.js'

const project = humanProjects('flush-rebase')
/** Every file under `root` with its text. */
const tree = (root: string) => treeOf(root, { dirs: false })

/** The human saves `text` in the project's `name`, a tick after what came before. */
async function humanSaves(root: string, name: string, text: string): Promise<void> {
  await tick()
  fs.writeFileSync(path.join(root, name), text)
}

/**
 * The agent reads /a.txt (v1), the human saves it (v2), the agent reads it again and sees v2:
 * `change` then makes the agent's change on what it read.
 */
async function rereadThen(change: (ws: Workspace) => unknown): Promise<{ ws: Workspace; root: string; store: string }> {
  const { root, store } = project({ 'a.txt': 'one\n', 'keep.txt': 'k\n' })
  const ws = await open(root, store)
  expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\n')
  await humanSaves(root, 'a.txt', 'HUMAN two\n')
  expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
  await change(ws)
  return { ws, root, store }
}

const changes = [
  ['an edit', (ws: Workspace) => ws.fs.writeFileSync('/a.txt', ws.fs.readFileSync('/a.txt', 'utf8') + 'agent\n'), { '/a.txt': 'HUMAN two\nagent\n', '/keep.txt': 'k\n' }],
  ['a delete', (ws: Workspace) => ws.fs.rmSync('/a.txt'), { '/keep.txt': 'k\n' }],
  ['a rename', (ws: Workspace) => ws.fs.renameSync('/a.txt', '/b.txt'), { '/b.txt': 'HUMAN two\n', '/keep.txt': 'k\n' }],
  [
    'a transaction’s edit',
    (ws: Workspace) => ws.transaction((staged) => staged.writeFileSync('/a.txt', staged.readFileSync('/a.txt', 'utf8') + 'agent\n')),
    { '/a.txt': 'HUMAN two\nagent\n', '/keep.txt': 'k\n' },
  ],
] as const

describe('a path the human changed on disk and the agent read again before changing it', () => {
  it.each(changes)('%s is flushed without a conflict', async (_what, change, after) => {
    const { ws, root } = await rereadThen(change)
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual(after)
    await ws.close()
  })

  it.each(changes)('%s is still a conflict when the human saves again after it', async (_what, change) => {
    const { ws, root } = await rereadThen(change)
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    await humanSaves(root, 'a.txt', 'HUMAN three\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
  })

  it.each(changes)('%s behaves the same after a reopen: flushed, or refused after a later save', async (_what, change, after) => {
    const first = await rereadThen(change)
    await first.ws.close()
    let ws = await open(first.root, first.store)
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    await ws.close()
    await humanSaves(first.root, 'a.txt', 'HUMAN three\n')
    ws = await open(first.root, first.store)
    await refused(ws, first.root, ['/a.txt'])
    await ws.close()
    // The same again, flushed before the later save.
    const second = await rereadThen(change)
    await second.ws.close()
    ws = await open(second.root, second.store)
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(second.root)).toEqual(after)
    await ws.close()
  })
})

describe('a change not made on the human’s save', () => {
  // Each beside /read.txt, which the agent read again after the human's save and then changed: no conflict.
  async function beside(files: Record<string, string>): Promise<{ ws: Workspace; root: string }> {
    const { root, store } = project({ 'read.txt': 'one\n', ...files })
    const ws = await open(root, store)
    expect(ws.fs.readFileSync('/read.txt', 'utf8')).toBe('one\n')
    return { ws, root }
  }
  async function rereadAndChange(ws: Workspace, root: string): Promise<void> {
    await humanSaves(root, 'read.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/read.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.appendFileSync('/read.txt', 'agent\n')
  }

  it('made before the save is a conflict: the human’s save is kept', async () => {
    const { ws, root } = await beside({ 'a.txt': 'one\n' })
    ws.fs.writeFileSync('/a.txt', ws.fs.readFileSync('/a.txt', 'utf8') + 'agent\n')
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    await rereadAndChange(ws, root)
    // Reading it now shows the agent's copy; the save stays a conflict.
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\nagent\n')
    await refused(ws, root, ['/a.txt'])
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN two\n')
    await ws.close()
  })

  it('made after the save without reading it is a conflict (the write looks at the disk, the agent did not)', async () => {
    const { ws, root } = await beside({ 'a.txt': 'one\n', 'b.txt': 'one\n', 'c.txt': 'one\n' })
    for (const name of ['/a.txt', '/b.txt', '/c.txt']) expect(ws.fs.readFileSync(name, 'utf8')).toBe('one\n')
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await humanSaves(root, name, 'HUMAN two\n')
    await rereadAndChange(ws, root)
    // Looked up (exists, stat) but not read: the agent did not see the save.
    expect(ws.fs.existsSync('/a.txt')).toBe(true)
    ws.fs.writeFileSync('/a.txt', 'agent, from one\n')
    ws.fs.rmSync('/b.txt')
    // A transaction's staging looks at the disk as it writes: that is no read of the agent's either.
    await ws.transaction((staged) => staged.writeFileSync('/c.txt', 'agent, from one\n'))
    await refused(ws, root, ['/a.txt', '/b.txt', '/c.txt'])
    await ws.close()
  })

  it('made after the engine, not the agent, read the save is a conflict: a checkpoint’s sizes, a diff, events and a status show the agent nothing', async () => {
    const { root, store } = project({ 'read.txt': 'one\n', 'a.txt': 'one\n', 'd/x.txt': 'one\n' })
    const ws = await Workspace.open({ lower: directory(root), store: directoryStore(store), watch: watching })
    for (const name of ['/read.txt', '/a.txt']) expect(ws.fs.readFileSync(name, 'utf8')).toBe('one\n')
    expect(ws.fs.readdirSync('/d')).toEqual(['x.txt'])
    const before = await ws.checkpoint({ name: 'before' })
    const changed: string[] = []
    const stop = ws.events.on('change', (event) => changed.push(...event.changes.map((c) => c.path)))
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    fs.writeFileSync(path.join(root, 'd/human.txt'), 'HUMAN\n')
    await rereadAndChange(ws, root)
    // Reads of the engine's own, between the save and the agent's blind changes.
    ws.fs.writeFileSync('/other.txt', 'x\n')
    await ws.checkpoint({ name: 'after' })
    expect((await ws.checkpointInfo('after')).files).toBeGreaterThan(0)
    expect(ws.diff(before.id).map((c) => c.path)).toContain('/other.txt')
    expect(ws.changes().length).toBeGreaterThan(0)
    ws.fs.writeFileSync('/a.txt', 'agent, from one\n')
    ws.fs.rmSync('/d', { recursive: true })
    await ws.sync()
    await new Promise((resolve) => setTimeout(resolve, 10))
    stop()
    expect(changed).toEqual(expect.arrayContaining(['/a.txt', '/d/human.txt']))
    await refused(ws, root, ['/a.txt', '/d'])
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN two\n')
    await ws.close()
  })

  it('made after an undo took the path back to the disk, on a later read, rests on that read: no conflict (test/flush-bases.test.ts has the rest)', async () => {
    const { ws, root } = await beside({ 'a.txt': 'one\n' })
    ws.fs.writeFileSync('/a.txt', ws.fs.readFileSync('/a.txt', 'utf8') + 'agent\n')
    await ws.undo()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    await rereadAndChange(ws, root)
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/a.txt': 'HUMAN two\nagent\n', '/read.txt': 'HUMAN two\nagent\n' })
    await ws.close()
  })
})

describe('a restore over a path the human changed on disk', () => {
  it('is refused as before, though the flush takes the agent’s change', async () => {
    const { root, store } = project({ 'a.txt': 'one\n' })
    const ws = await open(root, store)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\n')
    const start = await ws.checkpoint({ name: 'start' })
    ws.fs.writeFileSync('/other.txt', 'x\n')
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    // Back to the start, /a.txt would show the disk's newer version, not the one first read.
    await expect(ws.restore(start.id)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: ['/a.txt'] })
    await ws.close()
  })
})

describe('a flushed file the human edits on disk afterwards', () => {
  it('is reported as changed in the project, not planned, and a new change of it is a conflict', async () => {
    const { root, store } = project({ 'a.txt': 'one\n', 'b.txt': 'b\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    ws.fs.rmSync('/b.txt')
    expect((await ws.flush()).applied).toBe(true)
    await humanSaves(root, 'a.txt', 'HUMAN after the flush\n')
    await humanSaves(root, 'b.txt', 'HUMAN made it again\n')
    const status = await ws.flush(undefined, { dryRun: true })
    expect(status.changes).toEqual([])
    expect(status.conflicts).toEqual([])
    expect(status.changedInTarget?.map((c) => c.path)).toEqual(['/a.txt', '/b.txt'])
    // A flush of something else leaves the human's edits as they are.
    ws.fs.writeFileSync('/c.txt', 'agent\n')
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/a.txt': 'HUMAN after the flush\n', '/b.txt': 'HUMAN made it again\n', '/c.txt': 'agent\n' })
    // Still reported after a reopen; a change the agent makes on its own copy is refused.
    await ws.close()
    const again = await open(root, store)
    expect((await again.flush(undefined, { dryRun: true })).changedInTarget?.map((c) => c.path)).toEqual(['/a.txt', '/b.txt'])
    again.fs.writeFileSync('/a.txt', 'agent again\n')
    await refused(again, root, ['/a.txt'])
    await again.close()
  })
})
