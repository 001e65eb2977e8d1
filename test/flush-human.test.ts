/**
 * A project a human edits while the agent works on it through a workspace: every flush into the
 * project either leaves the human's work as it is or refuses with ECONFLICT naming it (force
 * overwrites, as asked). Real directories on ext4 are the oracle: the human's edits are made with
 * node:fs straight on disk, between the agent's operations and during the flush itself.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick, tree } from './support/human-project.js'

const project = humanProjects('flush-human')

describe('a directory the workspace made where the human then made one too', () => {
  it('is a conflict: the human’s files in it are neither deleted nor overwritten', async () => {
    const { root, store } = project({ 'keep.txt': 'k\n' })
    const ws = await open(root, store)
    ws.fs.mkdirSync('/N')
    ws.fs.writeFileSync('/N/a.txt', 'agent\n')
    await ws.sync()
    fs.mkdirSync(path.join(root, 'N'))
    fs.writeFileSync(path.join(root, 'N/human.txt'), 'HUMAN\n')
    fs.writeFileSync(path.join(root, 'N/a.txt'), 'HUMAN a\n')
    await refused(ws, root, ['/N/a.txt', '/N/human.txt'])
    // Forced, the workspace's directory is what the project gets, as asked.
    expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
    expect(tree(path.join(root, 'N'))).toEqual({ '/a.txt': 'agent\n' })
    await ws.close()
  })

  it.each([
    ['edits', (root: string) => fs.writeFileSync(path.join(root, 'D/old.txt'), 'HUMAN EDIT\n'), ['/D/old.txt']],
    ['adds', (root: string) => fs.writeFileSync(path.join(root, 'D/human.txt'), 'HUMAN\n'), ['/D/human.txt']],
  ] as const)('after rm -r and mkdir of a project directory: a file the human then %s in it is a conflict', async (_what, change, paths) => {
    const { root, store } = project({ 'D/old.txt': 'old\n' })
    const ws = await open(root, store)
    ws.fs.rmSync('/D', { recursive: true })
    ws.fs.mkdirSync('/D')
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    await ws.sync()
    await tick()
    change(root)
    await refused(ws, root, [...paths])
    await ws.close()
  })
})

describe('a project directory the workspace deleted', () => {
  it('is deleted by the flush when nobody changed it on disk since', async () => {
    const { root, store } = project({ 'D/x.txt': 'x\n', 'D/sub/y.txt': 'y\n', 'keep.txt': 'k\n' })
    const ws = await open(root, store)
    ws.fs.rmSync('/D', { recursive: true })
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/keep.txt': 'k\n' })
    await ws.close()
  })

  it('replaced by rm -r and mkdir, and nobody changed it on disk since: flushed without a conflict with its own staging', async () => {
    const { root, store } = project({ 'D/old.txt': 'old\n', 'keep.txt': 'k\n' })
    const ws = await open(root, store)
    ws.fs.rmSync('/D', { recursive: true })
    ws.fs.mkdirSync('/D')
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/D/': '', '/D/a.txt': 'agent\n', '/keep.txt': 'k\n' })
    await ws.close()
  })

  it.each([
    ['an edit of a file it never read', (root: string) => fs.writeFileSync(path.join(root, 'D/x.txt'), 'HUMAN EDIT\n'), ['/D/x.txt']],
    ['a file added deeper down', (root: string) => fs.writeFileSync(path.join(root, 'D/sub/human.txt'), 'HUMAN\n'), ['/D/sub', '/D/sub/human.txt']],
    ['a chmod deeper down', (root: string) => fs.chmodSync(path.join(root, 'D/sub/y.txt'), 0o600), ['/D/sub/y.txt']],
  ] as const)('made on disk after the delete, %s is a conflict, also after a reopen', async (_what, change, paths) => {
    const { root, store } = project({ 'D/x.txt': 'x\n', 'D/sub/y.txt': 'y\n', 'keep.txt': 'k\n' })
    let ws = await open(root, store)
    ws.fs.rmSync('/D', { recursive: true })
    await ws.close()
    await tick()
    change(root)
    ws = await open(root, store)
    await refused(ws, root, [...paths])
    await ws.close()
  })

  it('an edit made between the agent’s rm -r and its mkdir of the same name is a conflict', async () => {
    const { root, store } = project({ 'D/old.txt': 'old\n' })
    const ws = await open(root, store)
    ws.fs.rmSync('/D', { recursive: true })
    await ws.sync()
    await tick()
    fs.writeFileSync(path.join(root, 'D/old.txt'), 'HUMAN EDIT\n')
    await tick()
    ws.fs.mkdirSync('/D')
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    await refused(ws, root, ['/D/old.txt'])
    await ws.close()
  })

  it('renamed by the agent: what the human changed under the old name moves to the new one, no conflict', async () => {
    const { root, store } = project({ 'D/x.txt': 'x\n' })
    const ws = await open(root, store)
    ws.fs.renameSync('/D', '/E')
    await ws.sync()
    await tick()
    fs.writeFileSync(path.join(root, 'D/x.txt'), 'HUMAN EDIT\n')
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/E/': '', '/E/x.txt': 'HUMAN EDIT\n' })
    await ws.close()
  })

  it('after the workspace flushed a file into it: deleted without a conflict when nobody else changed it', async () => {
    const { root, store } = project({ 'D/x.txt': 'x\n', 'keep.txt': 'k\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/D/new.txt', 'agent\n')
    expect((await ws.flush()).applied).toBe(true)
    ws.fs.rmSync('/D', { recursive: true })
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/keep.txt': 'k\n' })
    await ws.close()
  })
})

describe('metadata the human changed', () => {
  it('a chmod of a file the agent modified is a conflict, not reverted; of a directory it only wrote into, neither (the next describe)', async () => {
    const { root, store } = project({ 'a.txt': 'a\n', 'D/x.txt': 'x\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    ws.fs.writeFileSync('/D/new.txt', 'agent\n')
    await ws.sync()
    await tick()
    fs.chmodSync(path.join(root, 'a.txt'), 0o600)
    fs.chmodSync(path.join(root, 'D'), 0o700)
    await refused(ws, root, ['/a.txt'])
    expect(fs.statSync(path.join(root, 'a.txt')).mode & 0o777).toBe(0o600)
    expect(fs.statSync(path.join(root, 'D')).mode & 0o777).toBe(0o700)
    await ws.close()
  })

  it('a file put back with its old size and mtime (touch -r, cp -p) is a conflict', async () => {
    const { root, store } = project({ 'a.txt': 'orig\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    await ws.sync()
    await tick()
    const file = path.join(root, 'a.txt')
    // touch -r keeps the nanoseconds (a Date would round them, and so change the version anyway).
    const reference = path.join(path.dirname(root), 'reference')
    fs.writeFileSync(reference, '')
    execFileSync('touch', ['-r', file, reference])
    fs.writeFileSync(file, 'HUMN\n')
    execFileSync('touch', ['-r', reference, file])
    expect(fs.statSync(file, { bigint: true }).mtimeNs).toBe(fs.statSync(reference, { bigint: true }).mtimeNs)
    await refused(ws, root, ['/a.txt'])
    expect(fs.readFileSync(file, 'utf8')).toBe('HUMN\n')
    await ws.close()
  })
})

describe('a save made on disk while the flush writes', () => {
  it('is a conflict found just before the commit point: nothing is changed, and a later flush still sees it', async () => {
    const files: Record<string, string> = { 'a.txt': 'orig\n' }
    for (let i = 0; i < 50; i++) files[`f/${i}.txt`] = 'o\n'
    const { root, store } = project(files)
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    for (let i = 0; i < 50; i++) ws.fs.writeFileSync(`/f/${i}.txt`, 'agent\n')
    await ws.sync()
    let saved = false
    const error = await ws
      .flush(undefined, {
        // Called as the new contents are staged: after the first conflict check, before any rename.
        onProgress: () => {
          if (saved) return
          saved = true
          fs.writeFileSync(path.join(root, 'a.txt'), 'HUMAN SAVED DURING FLUSH\n')
        },
      })
      .then(
        () => undefined,
        (thrown: unknown) => thrown as { code?: string; conflicts?: { path: string }[] },
      )
    expect(saved).toBe(true)
    expect(error).toMatchObject({ code: 'ECONFLICT', conflicts: [{ path: '/a.txt' }] })
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN SAVED DURING FLUSH\n')
    expect(fs.readFileSync(path.join(root, 'f/0.txt'), 'utf8')).toBe('o\n')
    expect(fs.readdirSync(root).filter((name) => name.startsWith('.rewindfs-flush') && name !== '.rewindfs-flush')).toEqual([])
    // Reopened (recovery runs), the save is still a conflict, not taken for this flush's write.
    await ws.close()
    const again = await open(root, store)
    await refused(again, root, ['/a.txt'])
    await again.close()
  })
})

describe('what a flush wrote itself', () => {
  // A ctime keeps the fraction of the millisecond that Date.now() drops: a flush's last write in
  // the millisecond it records as its own time was taken for a later change (1-2 % of rounds here).
  it('is never a conflict when the next flush deletes it, however soon after', async () => {
    const { root, store } = project({})
    const ws = await open(root, store)
    const refusedRounds: number[] = []
    for (let round = 1; round <= 400; round++) {
      await ws.transaction((f) => {
        if (round > 1) f.rmSync(`/tree-${round - 1}`, { recursive: true })
        f.mkdirSync(`/tree-${round}/inner`, { recursive: true })
        f.writeFileSync(`/tree-${round}/inner/file.txt`, String(round))
      })
      await ws.flush().catch(async (error: unknown) => {
        refusedRounds.push(round)
        if ((error as { code?: string }).code !== 'ECONFLICT') throw error
        await ws.flush(undefined, { force: true })
      })
    }
    expect(refusedRounds).toEqual([])
    expect(tree(root)).toEqual({ '/tree-400/': '', '/tree-400/inner/': '', '/tree-400/inner/file.txt': '400' })
    await ws.close()
  }, 120_000)
})

describe('a project directory the human chmods after the agent wrote into it', () => {
  const mode = (root: string, at: string) => fs.statSync(path.join(root, at)).mode & 0o7777

  it.each([
    ['in the same session', async (ws: Workspace) => ws],
    ['after a compaction and a reopen', async (ws: Workspace, root: string, store: string) => (await ws.compact(), await ws.close(), open(root, store))],
  ] as const)('%s: the flush writes the agent’s file and leaves the human’s mode, no conflict (it was ECONFLICT, and force put the old mode back)', async (_when, reopen) => {
    const { root, store } = project({ 'D/old.txt': 'old\n' })
    fs.chmodSync(path.join(root, 'D'), 0o755)
    let ws = await open(root, store)
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    await ws.sync()
    ws = await reopen(ws, root, store)
    await tick()
    fs.chmodSync(path.join(root, 'D'), 0o700)
    const dry = await ws.flush(undefined, { dryRun: true })
    expect(dry.conflicts).toEqual([])
    expect(dry.changes).toEqual([{ path: '/D/a.txt', type: 'added', entry: 'file' }])
    expect((await ws.flush()).applied).toBe(true)
    expect(mode(root, 'D')).toBe(0o700)
    expect(tree(root)).toEqual({ '/D/': '', '/D/old.txt': 'old\n', '/D/a.txt': 'agent\n' })
    await ws.close()
  })

  it('force leaves the human’s mode too, where the agent never changed it', async () => {
    const { root, store } = project({ 'D/old.txt': 'old\n', 'E/e.txt': 'e\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    ws.fs.writeFileSync('/E/e.txt', 'agent e\n')
    await tick()
    fs.chmodSync(path.join(root, 'D'), 0o700)
    fs.writeFileSync(path.join(root, 'E/e.txt'), 'HUMAN e\n')
    await refused(ws, root, ['/E/e.txt'])
    expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
    expect(mode(root, 'D')).toBe(0o700)
    expect(fs.readFileSync(path.join(root, 'E/e.txt'), 'utf8')).toBe('agent e\n')
    await ws.close()
  })

  it('a mode the agent set is written, and is a conflict where the human changed it too', async () => {
    const { root, store } = project({ 'D/old.txt': 'old\n', 'F/f.txt': 'f\n' })
    fs.chmodSync(path.join(root, 'D'), 0o755)
    fs.chmodSync(path.join(root, 'F'), 0o755)
    let ws = await open(root, store)
    ws.fs.writeFileSync('/D/a.txt', 'agent\n')
    ws.fs.chmodSync('/D', 0o711)
    ws.fs.chmodSync('/F', 0o750)
    await ws.sync()
    // The agent's modes survive a reopen as changes of its own.
    await ws.close()
    ws = await open(root, store)
    await tick()
    fs.chmodSync(path.join(root, 'D'), 0o700)
    await refused(ws, root, ['/D'])
    fs.chmodSync(path.join(root, 'D'), 0o755)
    await refused(ws, root, ['/D'])
    expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
    expect([mode(root, 'D'), mode(root, 'F')]).toEqual([0o711, 0o750])
    await ws.close()
  })
})
