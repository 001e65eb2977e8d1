/**
 * Listing a directory(path) lower: what a listing costs (the source's own work counters: paths
 * looked up, directories listed) and what it still records. Node's readdir of the same directory is
 * the oracle for what is listed; a flush's ECONFLICT for what a listing showed the agent (its first
 * sightings, settled by each entry's first lookup: src/lower/listing.ts).
 */
import { execFileSync } from 'node:child_process'
import fs, { type Dirent } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick, tree } from './support/human-project.js'

const project = humanProjects('lower-listing')

/**
 * Past the moment in which a change counts as after a listing (a clock tick and some): a listing of
 * a directory changed in it looks its entries up, as before (listing.ts's changedSince).
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, 40))

function typeOf(entry: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean; isFIFO(): boolean }): string {
  return entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : entry.isFIFO() ? 'fifo' : 'other'
}

describe('a names-only or withFileTypes listing of a lower directory', () => {
  it('looks up no entry: 20k entries cost one listing and O(1) stats, and list what Node lists, with the types Node gives', async () => {
    const { root } = project({ 'big/': '' })
    const big = path.join(root, 'big')
    for (let i = 0; i < 20_000; i++) {
      if (i % 100 === 1) fs.mkdirSync(`${big}/d${i}`)
      else if (i % 100 === 2) fs.symlinkSync(`f${i - 2}`, `${big}/l${i}`)
      else fs.writeFileSync(`${big}/f${i}`, '')
    }
    await settle()
    const source = directory(root)
    const ws = await Workspace.open({ lower: source })
    const before = { ...source.counters }
    const names = ws.fs.readdirSync('/big')
    const dirents = ws.fs.readdirSync('/big', { withFileTypes: true }) as Dirent[]
    expect(source.counters.listings - before.listings).toBe(2)
    // The path looked up once per call, the directory's own stat: none per entry.
    expect(source.counters.stats - before.stats).toBeLessThanOrEqual(6)
    const node = fs.readdirSync(big, { withFileTypes: true })
    expect(names).toEqual(node.map((entry) => entry.name).sort())
    expect(dirents.map((entry) => [entry.name, typeOf(entry)])).toEqual(node.map((entry) => [entry.name, typeOf(entry)]).sort((a, b) => (a[0] < b[0] ? -1 : 1)))
    await ws.close()
  })

  it("shows what the source shows: no FIFO, no name that is not UTF-8, the staging area's names hidden; links as links", async () => {
    const { root } = project({ 'd/a.txt': 'a', 'd/sub/': '' })
    const d = path.join(root, 'd')
    execFileSync('mkfifo', [d + '/pipe'])
    fs.symlinkSync('/etc', d + '/out')
    fs.writeFileSync(Buffer.concat([Buffer.from(d + '/bad-'), Buffer.from([0xff])]), '')
    fs.writeFileSync(d + '/.rewindfs-flush.tmp', '')
    await settle()
    const source = directory(root)
    const ws = await Workspace.open({ lower: source })
    const listed = (ws.fs.readdirSync('/d', { withFileTypes: true }) as Dirent[]).map((entry) => [entry.name, typeOf(entry)])
    expect(listed).toEqual([
      ['a.txt', 'file'],
      ['out', 'symlink'],
      ['sub', 'dir'],
    ])
    expect(ws.fs.readdirSync('/d')).toEqual(source.readdir('/d').sort())
    // The link leads out of the root: listed as a link, never followed there.
    expect(() => ws.fs.readdirSync('/d/out')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    await ws.close()
  })
})

describe('what a listing showed is still the first sighting', () => {
  it('a file only listed, edited by a human after the listing, then deleted blind: the flush is a conflict', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n', 'd/b.txt': 'b\n' })
    await settle()
    const ws = await open(root, store)
    expect(ws.fs.readdirSync('/d')).toEqual(['a.txt', 'b.txt'])
    fs.writeFileSync(path.join(root, 'd/a.txt'), 'HUMAN\n')
    ws.fs.unlinkSync('/d/a.txt')
    await refused(ws, root, ['/d/a.txt'])
    await ws.close()
  })

  it('the same after the workspace is reopened between the listing and the delete', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n' })
    await settle()
    let ws = await open(root, store)
    ws.fs.readdirSync('/d', { withFileTypes: true })
    await ws.close()
    fs.writeFileSync(path.join(root, 'd/a.txt'), 'HUMAN\n')
    ws = await open(root, store)
    ws.fs.rmSync('/d/a.txt')
    await refused(ws, root, ['/d/a.txt'])
    await ws.close()
  })

  it('a listed file a human replaced by moving an older file onto it, or whose directory was swapped for another, deleted blind: a conflict', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n', 'e/a.txt': 'a\n', 'f/a.txt': 'older\n', 'other/a.txt': 'other\n' })
    await settle()
    const ws = await open(root, store)
    ws.fs.readdirSync('/d')
    ws.fs.readdirSync('/e')
    fs.renameSync(path.join(root, 'f/a.txt'), path.join(root, 'd/a.txt'))
    fs.renameSync(path.join(root, 'e'), path.join(root, 'e.old'))
    fs.renameSync(path.join(root, 'other'), path.join(root, 'e'))
    ws.fs.unlinkSync('/d/a.txt')
    ws.fs.unlinkSync('/e/a.txt')
    await refused(ws, root, ['/d/a.txt', '/e/a.txt'])
    await ws.close()
  })

  it('a listed file a human deleted after the listing, written blind: a conflict', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n' })
    await settle()
    const ws = await open(root, store)
    ws.fs.readdirSync('/d')
    fs.unlinkSync(path.join(root, 'd/a.txt'))
    ws.fs.writeFileSync('/d/a.txt', 'agent\n')
    await refused(ws, root, ['/d/a.txt'])
    await ws.close()
  })

  it('a file only listed and never touched, edited by a human since: not flushed, no conflict', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n', 'd/b.txt': 'b\n' })
    await settle()
    const ws = await open(root, store)
    ws.fs.readdirSync('/d', { recursive: true })
    await tick()
    fs.writeFileSync(path.join(root, 'd/a.txt'), 'HUMAN\n')
    ws.fs.writeFileSync('/d/c.txt', 'agent\n')
    const report = await ws.flush()
    expect(report.conflicts).toEqual([])
    expect(report.changes.map((change) => change.path)).toEqual(['/d/c.txt'])
    expect(tree(root)).toEqual({ '/d/': '', '/d/a.txt': 'HUMAN\n', '/d/b.txt': 'b\n', '/d/c.txt': 'agent\n' })
    await ws.close()
  })

  it('a listed file nobody changed since, deleted or overwritten blind: flushed, no conflict', async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n', 'd/b.txt': 'b\n' })
    await settle()
    const ws = await open(root, store)
    ws.fs.readdirSync('/d')
    ws.fs.unlinkSync('/d/a.txt')
    ws.fs.writeFileSync('/d/b.txt', 'agent\n')
    expect((await ws.flush()).applied).toBe(true)
    expect(tree(root)).toEqual({ '/d/': '', '/d/b.txt': 'agent\n' })
    await ws.close()
  })

  it("an entry's first lookup after the listing is what a reopened workspace remembers, not the listing's mark: a restore sees no conflict", async () => {
    const { root, store } = project({ 'd/a.txt': 'a\n' })
    await settle()
    let ws = await open(root, store)
    ws.fs.readdirSync('/d')
    ws.fs.writeFileSync('/d/a.txt', 'one\n')
    const before = await ws.checkpoint()
    // Written in both trees: the restore's diff looks nothing up on disk there.
    ws.fs.writeFileSync('/d/a.txt', 'two\n')
    await ws.close()
    ws = await Workspace.open({ lower: directory(root), store: directoryStore(store) })
    expect((await ws.restore(before.id, { dryRun: true })).conflicts).toEqual([])
    await ws.close()
  })
})

describe('a recursive listing of a lower tree', () => {
  it('400 directories deep looks each directory up once: stats linear in the entries, not in the square of the depth', async () => {
    const { root } = project({})
    let at = root
    for (let depth = 0; depth < 400; depth++) {
      at = path.join(at, 'd')
      fs.mkdirSync(at)
      fs.writeFileSync(path.join(at, 'f'), '')
    }
    await settle()
    const source = directory(root)
    const ws = await Workspace.open({ lower: source })
    for (const withFileTypes of [false, true]) {
      const before = { ...source.counters }
      const listed = withFileTypes ? ws.fs.readdirSync('/', { recursive: true, withFileTypes: true }) : ws.fs.readdirSync('/', { recursive: true })
      const node = withFileTypes ? fs.readdirSync(root, { recursive: true, withFileTypes: true }) : fs.readdirSync(root, { recursive: true })
      if (withFileTypes) {
        const shown = (list: readonly Dirent[], from: string) => list.map((entry) => `${path.join(entry.parentPath, entry.name).slice(from.length)}:${typeOf(entry)}`).sort()
        expect(shown(listed as Dirent[], '')).toEqual(shown(node as unknown as Dirent[], root))
      } else expect([...(listed as string[])].sort()).toEqual([...(node as string[])].sort())
      expect(node.length).toBe(800)
      // Before: every directory resolved from the root again, 80k stats.
      expect(source.counters.stats - before.stats).toBeLessThanOrEqual(4 * 800)
      expect(source.counters.listings - before.listings).toBe(401)
    }
    await ws.close()
  })
})
