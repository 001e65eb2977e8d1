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
import type { Workspace } from '../src/index.js'
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
