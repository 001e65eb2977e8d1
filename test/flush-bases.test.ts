/**
 * A flush's conflict base where the base rule used to give false conflicts: a read inside a
 * transaction's body, a read before the workspace was closed and reopened, and a change made after
 * an undo, a reset or a restore took the path back to the disk's version. In each, the base is what
 * the agent last saw of the disk before its change (as an editor compares with the file it loaded):
 * a human's save it read is no conflict, and one made after that read still is. Real directories
 * are the oracle; the human's saves are made with node:fs between the agent's operations.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { frameRecord } from '../src/engine/persistence.js'
import type { Store } from '../src/engine/store.js'
import { Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick, tree as treeOf } from './support/human-project.js'

const project = humanProjects('flush-bases')
const tree = (root: string) => treeOf(root, { dirs: false })

/** The human saves `text` in the project's `name`, a tick after what came before. */
async function humanSaves(root: string, name: string, text: string): Promise<void> {
  await tick()
  fs.writeFileSync(path.join(root, name), text)
}

/** The flush is allowed and writes the workspace: the project then holds `after`. */
async function flushed(ws: Workspace, root: string, after: Record<string, string>): Promise<void> {
  expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
  expect((await ws.flush()).applied).toBe(true)
  expect(tree(root)).toEqual(after)
}

/** A project with /a.txt ('one'), opened, /a.txt read once (the first sighting). */
async function started(): Promise<{ ws: Workspace; root: string; store: string }> {
  const { root, store } = project({ 'a.txt': 'one\n', 'keep.txt': 'k\n' })
  const ws = await open(root, store)
  expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\n')
  return { ws, root, store }
}

describe('a read inside a transaction’s body', () => {
  it('of the human’s save is what the transaction’s change rests on: no conflict', async () => {
    const { ws, root } = await started()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    await ws.transaction((tx) => tx.writeFileSync('/a.txt', tx.readFileSync('/a.txt', 'utf8') + 'agent\n'))
    await flushed(ws, root, { '/a.txt': 'HUMAN two\nagent\n', '/keep.txt': 'k\n' })
    await ws.close()
  })

  it('counts for a change made after the commit too, as a read outside one does', async () => {
    const { ws, root } = await started()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    const seen = await ws.transaction((tx) => tx.readFileSync('/a.txt', 'utf8'))
    expect(seen).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', seen + 'agent\n')
    await flushed(ws, root, { '/a.txt': 'HUMAN two\nagent\n', '/keep.txt': 'k\n' })
    await ws.close()
  })

  it('is still a conflict when the human saves again after the body read it, before or after the commit', async () => {
    for (const when of ['in the body', 'after the commit'] as const) {
      const { ws, root } = await started()
      await humanSaves(root, 'a.txt', 'HUMAN two\n')
      await ws.transaction(async (tx) => {
        const text = tx.readFileSync('/a.txt', 'utf8')
        if (when === 'in the body') await humanSaves(root, 'a.txt', 'HUMAN three\n')
        tx.writeFileSync('/a.txt', text + 'agent\n')
      })
      if (when === 'after the commit') await humanSaves(root, 'a.txt', 'HUMAN three\n')
      await refused(ws, root, ['/a.txt'])
      expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN three\n')
      await ws.close()
    }
  })

  it('of one file is no read of another: a blind write in the body is a conflict', async () => {
    const { root, store } = project({ 'a.txt': 'one\n', 'b.txt': 'one\n' })
    const ws = await open(root, store)
    for (const name of ['/a.txt', '/b.txt']) expect(ws.fs.readFileSync(name, 'utf8')).toBe('one\n')
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    await humanSaves(root, 'b.txt', 'HUMAN two\n')
    await ws.transaction((tx) => {
      tx.writeFileSync('/a.txt', tx.readFileSync('/a.txt', 'utf8') + 'agent\n')
      tx.writeFileSync('/b.txt', 'agent, from one\n')
    })
    await refused(ws, root, ['/b.txt'])
    await ws.close()
  })

  it('of a file the workspace had not seen is its first sighting: a save made after it, then a blind write, is a conflict', async () => {
    const { root, store } = project({ 'b.txt': 'one\n' })
    const ws = await open(root, store)
    expect(await ws.transaction((tx) => tx.readFileSync('/b.txt', 'utf8'))).toBe('one\n')
    await humanSaves(root, 'b.txt', 'HUMAN two\n')
    ws.fs.writeFileSync('/b.txt', 'agent, from one\n')
    await refused(ws, root, ['/b.txt'])
    await ws.close()
  })

  it('of a transaction that fails counts too: its first sightings stay, and what it read is what the agent saw', async () => {
    for (const how of ['throws', 'fails a validator'] as const) {
      const { root, store } = project({ 'a.txt': 'one\n', 'b.txt': 'one\n' })
      const ws = await open(root, store)
      expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\n')
      await humanSaves(root, 'a.txt', 'HUMAN two\n')
      const failing = ws.transaction(
        (tx) => {
          tx.readFileSync('/a.txt')
          tx.readFileSync('/b.txt')
          tx.writeFileSync('/x.txt', 'x\n')
          if (how === 'throws') throw new Error('the agent gave up')
        },
        { validators: [{ name: 'never', match: '**', validate: () => 'no' }] },
      )
      await expect(failing).rejects.toThrow()
      // b.txt first read in the body: a save after it, then a blind write, is a conflict.
      await humanSaves(root, 'b.txt', 'HUMAN two\n')
      ws.fs.writeFileSync('/b.txt', 'agent, from one\n')
      ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
      await refused(ws, root, ['/b.txt'])
      await ws.close()
    }
  })

  it('is kept across a reopen', async () => {
    const { ws, root, store } = await started()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    await ws.transaction((tx) => tx.writeFileSync('/a.txt', tx.readFileSync('/a.txt', 'utf8') + 'agent\n'))
    await ws.close()
    const again = await open(root, store)
    await flushed(again, root, { '/a.txt': 'HUMAN two\nagent\n', '/keep.txt': 'k\n' })
    await again.close()
  })
})

/** Ways to take /a.txt back to the disk's version after the agent changed it (the workspace's first change there took its base). */
const backs = [
  ['an undo', async (ws: Workspace) => void (await ws.undo())],
  ['a reset', async (ws: Workspace) => ws.reset()],
  ['a restore of a checkpoint made before the change', async (ws: Workspace) => void (await ws.restore('before'))],
  ['a restore to a time before the change', async (ws: Workspace, at: number) => void (await ws.restore({ time: at }))],
] as const

/** The agent changes /a.txt (read as 'one'), then `back` takes it back to the disk's version. */
async function changedAndTakenBack(back: (ws: Workspace, at: number) => Promise<void>): Promise<{ ws: Workspace; root: string; store: string }> {
  const started_ = await started()
  const { ws } = started_
  ws.fs.writeFileSync('/other.txt', 'x\n')
  await ws.checkpoint({ name: 'before' })
  await tick()
  const at = Date.now()
  await tick()
  ws.fs.writeFileSync('/a.txt', 'one\nagent\n')
  await back(ws, at)
  expect(ws.changes().map((c) => c.path)).not.toContain('/a.txt')
  return started_
}

describe('a change after the path was taken back to the disk’s version', () => {
  it.each(backs)('after %s, rests on the human’s save the agent read since: no conflict', async (_what, back) => {
    const { ws, root } = await changedAndTakenBack(back)
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    expect((await ws.flush()).applied).toBe(true)
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN two\nagent\n')
    await ws.close()
  })

  it.each(backs)('after %s, is a conflict when the human saves after the agent’s last read', async (_what, back) => {
    // Read again, then saved again before the change.
    let { ws, root } = await changedAndTakenBack(back)
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    await humanSaves(root, 'a.txt', 'HUMAN three\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
    // Never read again: the change rests on 'one', the first read.
    ;({ ws, root } = await changedAndTakenBack(back))
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.existsSync('/a.txt')).toBe(true)
    ws.fs.writeFileSync('/a.txt', 'one\nagent again\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
    // Read again and changed, then saved again after the change.
    ;({ ws, root } = await changedAndTakenBack(back))
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    await humanSaves(root, 'a.txt', 'HUMAN three\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
  })

  /**
   * The agent reads a human's save after the path went back to the disk, edits on it and closes
   * (`beforeClose` first): reopened, the edit flushes; a later save is a conflict.
   */
  async function rebasedAcrossReopen(taken: Awaited<ReturnType<typeof changedAndTakenBack>>, beforeClose: (ws: Workspace) => Promise<void> = async () => undefined): Promise<void> {
    const { ws, root, store } = taken
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    await beforeClose(ws)
    await ws.close()
    let again = await open(root, store)
    expect((await again.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    await again.close()
    await humanSaves(root, 'a.txt', 'HUMAN three\n')
    again = await open(root, store)
    await refused(again, root, ['/a.txt'])
    await again.close()
  }

  it.each(backs)('after %s, keeps its base across a reopen', async (_what, back) => {
    await rebasedAcrossReopen(await changedAndTakenBack(back))
  })

  it('keeps a base taken again across a compaction and a reopen (the snapshot holds the later one)', async () => {
    await rebasedAcrossReopen(await changedAndTakenBack(backs[0][1]), async (ws) => {
      await ws.compact()
      ws.fs.writeFileSync('/after.txt', 'x\n')
    })
  })

  it('a file the agent made where the disk had none, taken back by an undo, then made by the human and read: no conflict', async () => {
    const { ws, root } = await started()
    ws.fs.writeFileSync('/new.txt', 'agent\n')
    await ws.undo()
    await humanSaves(root, 'new.txt', 'HUMAN\n')
    expect(ws.fs.readFileSync('/new.txt', 'utf8')).toBe('HUMAN\n')
    ws.fs.appendFileSync('/new.txt', 'agent\n')
    await flushed(ws, root, { '/a.txt': 'one\n', '/keep.txt': 'k\n', '/new.txt': 'HUMAN\nagent\n' })
    await ws.close()
  })

  it('a redo brings back a change that rests on the first read: a save made after it is a conflict, even one the agent read since', async () => {
    const { ws, root } = await started()
    ws.fs.writeFileSync('/a.txt', 'one\nagent\n')
    await ws.undo()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    await ws.redo()
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\nagent\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
  })

  it('a forced restore of a change made before the human’s save keeps the conflict, though a later change was made on the save', async () => {
    const { ws, root } = await started()
    ws.fs.writeFileSync('/a.txt', 'one\nagent\n')
    await ws.checkpoint({ name: 'on one' })
    await ws.undo()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    // The restore itself compares with the first sighting.
    await expect(ws.restore('on one')).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: ['/a.txt'] })
    await ws.restore('on one', { force: true })
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one\nagent\n')
    await refused(ws, root, ['/a.txt'])
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN two\n')
    await ws.close()
  })
})

describe('a read before the workspace was closed and reopened from its store', () => {
  /** The agent reads /a.txt ('one'), the human saves it, the agent reads the save; then (`between`) the workspace closes. */
  async function readThenClosed(between?: (ws: Workspace) => Promise<void>): Promise<{ root: string; store: string }> {
    const { ws, root, store } = await started()
    await humanSaves(root, 'a.txt', 'HUMAN two\n')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    await between?.(ws)
    await ws.close()
    return { root, store }
  }
  const closes = [
    ['a close', undefined],
    ['a compaction and a close', async (ws: Workspace) => ws.compact()],
    ['an operation and a close', async (ws: Workspace) => ws.fs.writeFileSync('/other.txt', 'x\n')],
  ] as const

  it.each(closes)('is what a change after %s and a reopen rests on: no conflict', async (_what, between) => {
    const { root, store } = await readThenClosed(between)
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
    expect((await ws.flush()).applied).toBe(true)
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN two\nagent\n')
    await ws.close()
  })

  it.each(closes)('after %s, a save made after that read is still a conflict (closed or open)', async (_what, between) => {
    for (const when of ['closed', 'open'] as const) {
      const { root, store } = await readThenClosed(between)
      if (when === 'closed') await humanSaves(root, 'a.txt', 'HUMAN three\n')
      const ws = await open(root, store)
      if (when === 'open') await humanSaves(root, 'a.txt', 'HUMAN three\n')
      ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
      await refused(ws, root, ['/a.txt'])
      await ws.close()
    }
  })
})

describe('a store written before bases were recorded (2026-11-30)', () => {
  /** directoryStore as an older rewindfs wrote it: its 'seen' records carry first sightings only. */
  function olderStore(dir: string): Store {
    const store = directoryStore(dir)
    const strip = (line: string): string => {
      const framed = JSON.parse(line) as { b: { n: number; t: string; bases?: unknown; shown?: unknown } }
      if (framed.b.t !== 'seen') return line
      const { n, bases: _bases, shown: _shown, ...body } = framed.b
      return frameRecord(JSON.stringify(body), n)
    }
    return new Proxy(store, {
      get(target, key) {
        if (key === 'appendJournal') return (records: readonly string[]) => target.appendJournal(records.map(strip))
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }

  it('keeps comparing with first sightings, by design: a change on a save the agent read (outside, in a transaction, before a reopen, after an undo) is a conflict', async () => {
    const { root, store } = project({ 'a.txt': 'one\n', 'b.txt': 'one\n', 'c.txt': 'one\n', 'd.txt': 'one\n' })
    const older = await Workspace.open({ lower: directory(root), store: olderStore(store) })
    for (const name of ['/a.txt', '/b.txt', '/c.txt', '/d.txt']) expect(older.fs.readFileSync(name, 'utf8')).toBe('one\n')
    older.fs.writeFileSync('/d.txt', 'one\nagent\n')
    await older.close()
    for (const name of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) await humanSaves(root, name, 'HUMAN two\n')
    // Opened by this rewindfs, as it is.
    let ws = await open(root, store)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/a.txt', 'HUMAN two\nagent\n')
    await ws.transaction((tx) => tx.writeFileSync('/b.txt', tx.readFileSync('/b.txt', 'utf8') + 'agent\n'))
    expect(ws.fs.readFileSync('/c.txt', 'utf8')).toBe('HUMAN two\n')
    await ws.undo({ paths: ['/d.txt'] })
    expect(ws.fs.readFileSync('/d.txt', 'utf8')).toBe('HUMAN two\n')
    ws.fs.writeFileSync('/d.txt', 'HUMAN two\nagent\n')
    await ws.close()
    ws = await open(root, store)
    ws.fs.writeFileSync('/c.txt', 'HUMAN two\nagent\n')
    await refused(ws, root, ['/a.txt', '/b.txt', '/c.txt', '/d.txt'])
    await ws.close()
  })
})

describe('a directory an undo took back to the disk’s version', () => {
  /** /d holds x.txt; the agent lists and reads it, changes it (`change`), and undoes that; the human adds d/h.txt. */
  async function undoneThenAdded(change: (ws: Workspace) => void): Promise<{ ws: Workspace; root: string }> {
    const { root, store } = project({ 'd/x.txt': 'x\n' })
    const ws = await open(root, store)
    expect(ws.fs.readdirSync('/d')).toEqual(['x.txt'])
    expect(ws.fs.readFileSync('/d/x.txt', 'utf8')).toBe('x\n')
    change(ws)
    await ws.undo()
    await humanSaves(root, 'd/h.txt', 'HUMAN\n')
    return { ws, root }
  }
  const changes = [
    ['an edit inside it', (ws: Workspace) => ws.fs.writeFileSync('/d/x.txt', 'agent\n')],
    ['a chmod', (ws: Workspace) => ws.fs.chmodSync('/d', 0o700)],
  ] as const

  it.each(changes)('after %s: a chmod or a delete made on a listing that shows the human’s file is no conflict', async (_what, change) => {
    for (const then of ['chmod', 'rm'] as const) {
      const { ws, root } = await undoneThenAdded(change)
      expect(ws.fs.readdirSync('/d')).toEqual(['h.txt', 'x.txt'])
      expect(ws.fs.readFileSync('/d/h.txt', 'utf8')).toBe('HUMAN\n')
      if (then === 'chmod') ws.fs.chmodSync('/d', 0o700)
      else ws.fs.rmSync('/d', { recursive: true })
      expect((await ws.flush(undefined, { dryRun: true })).conflicts).toEqual([])
      expect((await ws.flush()).applied).toBe(true)
      if (then === 'chmod') expect(fs.statSync(path.join(root, 'd')).mode & 0o777).toBe(0o700)
      else expect(fs.existsSync(path.join(root, 'd'))).toBe(false)
      await ws.close()
    }
  })

  it.each(changes)('after %s: without that listing, or with a file added after it, is a conflict', async (_what, change) => {
    for (const then of ['chmod', 'rm'] as const) {
      for (const listed of [false, true]) {
        const { ws, root } = await undoneThenAdded(change)
        if (listed) {
          expect(ws.fs.readdirSync('/d')).toEqual(['h.txt', 'x.txt'])
          await humanSaves(root, 'd/later.txt', 'HUMAN\n')
        }
        if (then === 'chmod') ws.fs.chmodSync('/d', 0o700)
        else ws.fs.rmSync('/d', { recursive: true })
        await refused(ws, root, ['/d'])
        await ws.close()
      }
    }
  })
})
