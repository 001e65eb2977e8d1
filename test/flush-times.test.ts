/**
 * A file's modification time is part of what a flush writes: make, ninja and tsc --incremental
 * decide by it, so a `touch` (utimes, `touch -d`, `cp -p` onto an unchanged file) in the workspace
 * is a change the status lists and the flush applies, and undoing it puts the old time back. A
 * store that flushed before times were recorded keeps working: its files are not all changed, and
 * a human's later edit is still a conflict. Real directories on disk are the oracle (fs.statSync).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import type { FlushBook } from '../src/flush/book.js'
import { type ExecMode, Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick, tree } from './support/human-project.js'
import { capability } from './support/require.js'

const project = humanProjects('flush-times')

/** 2001-02-03T04:05:06.5Z, in seconds as utimes takes it. */
const TOUCHED = Date.UTC(2001, 1, 3, 4, 5, 6, 500) / 1000

const stat = (root: string, name: string) => fs.statSync(path.join(root, name))

/** The time on disk matches `ms` to the millisecond (the kernel keeps nanoseconds; utimes takes a double). */
function expectTime(actual: number, ms: number): void {
  expect(Math.abs(actual - ms)).toBeLessThan(1)
}

describe('a times-only change of a project file', () => {
  it('is listed by changes(), flushed with its content as it was, and undone by the next flush after an undo', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' })
    const before = stat(root, 'a.txt')
    const ws = await open(root, store)
    ws.fs.utimesSync('/a.txt', TOUCHED, TOUCHED)
    expect(ws.changes().map(({ path, type, entry }) => ({ path, type, entry }))).toEqual([{ path: '/a.txt', type: 'modified', entry: 'file' }])
    const report = await ws.flush()
    expect(report.applied).toBe(true)
    expect(report.changes.map((c) => c.path)).toEqual(['/a.txt'])
    expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
    // Set in place: the same file, its content not rewritten.
    expect(stat(root, 'a.txt').ino).toBe(before.ino)
    expect(tree(root)).toEqual({ '/a.txt': 'alpha\n', '/b.txt': 'beta\n' })
    expect(ws.changes()).toEqual([])
    // Undone, the workspace shows the file as the project had it; the next flush puts its time back.
    await ws.undo()
    expect(ws.changes().map((c) => c.path)).toEqual(['/a.txt'])
    expect((await ws.flush()).applied).toBe(true)
    expectTime(stat(root, 'a.txt').mtimeMs, before.mtimeMs)
    expect(tree(root)).toEqual({ '/a.txt': 'alpha\n', '/b.txt': 'beta\n' })
    expect(ws.changes()).toEqual([])
    await ws.close()
  })

  it('of a file the workspace flushed before is flushed again; a human’s edit on disk since is a conflict', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n' })
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    await ws.flush()
    ws.fs.utimesSync('/a.txt', TOUCHED, TOUCHED)
    expect(ws.changes().map((c) => c.path)).toEqual(['/a.txt'])
    await ws.flush()
    expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
    await tick()
    fs.writeFileSync(path.join(root, 'a.txt'), 'HUMAN\n')
    ws.fs.utimesSync('/a.txt', TOUCHED + 60, TOUCHED + 60)
    await refused(ws, root, ['/a.txt'])
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('HUMAN\n')
    await ws.close()
  })

  it('of a file with another name on disk is written anew with its time (the workspace shows it apart)', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n' })
    fs.linkSync(path.join(root, 'a.txt'), path.join(root, 'other.txt'))
    const ws = await open(root, store)
    ws.fs.utimesSync('/a.txt', TOUCHED, TOUCHED)
    await ws.flush()
    expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
    expect(stat(root, 'a.txt').ino).not.toBe(stat(root, 'other.txt').ino)
    expect(stat(root, 'other.txt').mtimeMs).not.toBe(stat(root, 'a.txt').mtimeMs)
    expect(tree(root)).toEqual({ '/a.txt': 'alpha\n', '/other.txt': 'alpha\n' })
    await ws.close()
  })

  for (const stop of ['staged', 'committed'] as const) {
    it(`in a flush that died ${stop === 'staged' ? 'before' : 'after'} the directory's commit point: the next flush ends with the time on disk`, async () => {
      const { root, store } = project({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' })
      const before = stat(root, 'a.txt')
      const lower = directory(root)
      let ws = await Workspace.open({ lower, store: directoryStore(store) })
      ws.fs.utimesSync('/a.txt', TOUCHED, TOUCHED)
      ws.fs.writeFileSync('/b.txt', 'agent\n')
      const crashing = Object.create(lower) as typeof lower
      crashing.apply = async (entries) => {
        lower.stopAfter = stop
        await lower.apply(entries)
        throw new Error('killed')
      }
      await expect(ws.flush(crashing)).rejects.toThrow('killed')
      await ws.close()
      // Nothing set yet: the steps past the commit point run when the directory recovers (on open).
      expectTime(stat(root, 'a.txt').mtimeMs, before.mtimeMs)
      const reopened = directory(root)
      expectTime(stat(root, 'a.txt').mtimeMs, stop === 'staged' ? before.mtimeMs : TOUCHED * 1000)
      ws = await Workspace.open({ lower: reopened, store: directoryStore(store) })
      await ws.flush()
      expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
      expect(stat(root, 'a.txt').ino).toBe(before.ino)
      expect(tree(root)).toEqual({ '/a.txt': 'alpha\n', '/b.txt': 'agent\n' })
      expect(ws.changes()).toEqual([])
      await ws.close()
    })
  }

  it('survives a reopen of the store: the flushed time is what the ledger holds', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n' })
    let ws = await open(root, store)
    ws.fs.utimesSync('/a.txt', TOUCHED, TOUCHED)
    await ws.flush()
    await ws.close()
    ws = await open(root, store)
    expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
    expect(ws.changes()).toEqual([])
    expect((await ws.flush(undefined, { dryRun: true })).changes).toEqual([])
    await ws.close()
  })
})

const host = await support()
const modes: ExecMode[] = capability('exec-overlay', host.overlay) ? ['overlay', 'copy'] : ['copy']

describe.each(modes)('a command’s touch -d (%s mode)', (mode) => {
  it('is read back as the file’s new time and flushed', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' })
    const ws = await open(root, store)
    const result = await ws.exec(`touch -d @${TOUCHED} a.txt`, { mode })
    expect(result.exitCode).toBe(0)
    expectTime(ws.fs.statSync('/a.txt').mtimeMs, TOUCHED * 1000)
    expect(ws.changes().map((c) => c.path)).toEqual(['/a.txt'])
    expect((await ws.flush()).applied).toBe(true)
    expectTime(stat(root, 'a.txt').mtimeMs, TOUCHED * 1000)
    expect(tree(root)).toEqual({ '/a.txt': 'alpha\n', '/b.txt': 'beta\n' })
    await ws.close()
  })
})

/** The workspace's flush ledgers (shared by its sessions). */
const bookOf = (ws: Workspace) => (ws as unknown as { shared: { book: FlushBook } }).shared.book

describe('a store whose ledger was written before times were recorded', () => {
  /**
   * A project flushed by a workspace whose ledger then holds signatures as the code before kept
   * them (`f:<mode>:<blob>`, no time), saved in the store with a flush of another file and reopened.
   */
  async function flushedBefore(): Promise<{ root: string; store: string; ws: Workspace }> {
    const { root, store } = project({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n', 'c.txt': 'gamma\n' })
    let ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent a\n')
    ws.fs.writeFileSync('/b.txt', 'agent b\n')
    ws.fs.utimesSync('/b.txt', TOUCHED, TOUCHED)
    await ws.flush()
    for (const ledger of bookOf(ws).ledgers.values()) {
      for (const [at, recorded] of ledger) if (recorded.sig.startsWith('f:')) ledger.set(at, { ...recorded, sig: recorded.sig.replace(/@.*$/, '') })
    }
    // Another flush saves the book as it now is.
    ws.fs.writeFileSync('/c.txt', 'agent c\n')
    await ws.flush()
    const old = [...bookOf(ws).ledgers.values()].flatMap((ledger) => [...ledger].filter(([at]) => at === '/a.txt' || at === '/b.txt').map(([, r]) => r.sig))
    expect(old.length).toBe(2)
    for (const sig of old) expect(sig).not.toContain('@')
    await ws.close()
    ws = await open(root, store)
    return { root, store, ws }
  }

  it('does not see the files it flushed as changed', async () => {
    const { root, ws } = await flushedBefore()
    expect(ws.changes()).toEqual([])
    const dry = await ws.flush(undefined, { dryRun: true })
    expect(dry.changes).toEqual([])
    expect(dry.conflicts).toEqual([])
    const before = fs.statSync(path.join(root, 'a.txt'))
    expect((await ws.flush()).changes).toEqual([])
    expect(fs.statSync(path.join(root, 'a.txt')).ino).toBe(before.ino)
    await ws.close()
  })

  it('still takes a human’s later edit of such a file for a conflict', async () => {
    const { root, ws } = await flushedBefore()
    await tick()
    fs.writeFileSync(path.join(root, 'a.txt'), 'HUMAN\n')
    ws.fs.writeFileSync('/a.txt', 'agent again\n')
    await refused(ws, root, ['/a.txt'])
    await ws.close()
  })

  it('flushes a times-only change of such a file, and records its time from then on', async () => {
    const { root, ws } = await flushedBefore()
    ws.fs.utimesSync('/b.txt', TOUCHED + 3600, TOUCHED + 3600)
    expect(ws.changes().map((c) => c.path)).toEqual(['/b.txt'])
    await ws.flush()
    expectTime(stat(root, 'b.txt').mtimeMs, (TOUCHED + 3600) * 1000)
    expect(ws.changes()).toEqual([])
    await ws.close()
  })
})
