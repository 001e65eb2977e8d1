/**
 * Listing a syncFsSource lower (node:fs, memfs, any node:fs-like object): a names-only or
 * withFileTypes readdir takes the types from the fs's own one listing (readdirTypes) instead of an
 * lstat per entry. The fs is wrapped to count its lookups; Node's readdir of the same real
 * directory is the oracle for what is listed.
 */
import { execFileSync } from 'node:child_process'
import fs, { type Dirent } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Volume } from 'memfs'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { type SyncReadableFs, syncFsSource } from '../src/lower/sync-fs.js'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lower-sync-fs-listing-'))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** Past the moment in which a change counts as after a listing (see src/lower/listing.ts). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 40))

/** `inner`'s read members, counting every lstat/stat and every listing. */
function counting(inner: SyncReadableFs, { namesOnly = false } = {}) {
  const counts = { stats: 0, listings: 0 }
  const wrapped: SyncReadableFs & { statSync(path: string): unknown } = {
    readFileSync: (p) => inner.readFileSync(p),
    readlinkSync: (p) => inner.readlinkSync(p),
    lstatSync: (p) => {
      counts.stats++
      return inner.lstatSync(p)
    },
    statSync: (p) => {
      counts.stats++
      return (inner as unknown as { statSync(path: string): unknown }).statSync(p)
    },
    readdirSync: (p, options) => {
      counts.listings++
      // An fs that ignores withFileTypes (the fallback) lists plain names.
      if (namesOnly) return (inner as unknown as { readdirSync(path: string): string[] }).readdirSync(p)
      return inner.readdirSync(p, options)
    },
  }
  return { fs: wrapped, counts }
}

function typeOf(entry: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): string {
  return entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : 'other'
}

const byName = (a: string[], b: string[]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)

describe('a listing of a syncFsSource lower', () => {
  it('over node:fs: 5k entries cost one listing and O(1) stats, and list what Node lists, with its types', async () => {
    const root = fs.mkdtempSync(path.join(scratch, 'node-'))
    const big = path.join(root, 'big')
    fs.mkdirSync(big)
    for (let i = 0; i < 5_000; i++) {
      if (i % 100 === 1) fs.mkdirSync(`${big}/d${i}`)
      else if (i % 100 === 2) fs.symlinkSync(`f${i - 2}`, `${big}/l${i}`)
      else fs.writeFileSync(`${big}/f${i}`, '')
    }
    execFileSync('mkfifo', [`${big}/pipe`]) // not representable: left out, as readdir and stat leave it out
    await settle()
    const { fs: counted, counts } = counting(fs as unknown as SyncReadableFs)
    const ws = await Workspace.open({ lower: syncFsSource(counted, root) })
    const before = { ...counts }
    const names = ws.fs.readdirSync('/big')
    expect(counts.listings - before.listings).toBe(1)
    expect(counts.stats - before.stats).toBeLessThanOrEqual(3)
    const middle = { ...counts }
    const dirents = ws.fs.readdirSync('/big', { withFileTypes: true }) as Dirent[]
    expect(counts.listings - middle.listings).toBe(1)
    expect(counts.stats - middle.stats).toBeLessThanOrEqual(3)

    const node = fs.readdirSync(big, { withFileTypes: true }).filter((entry) => !entry.isFIFO())
    expect(names).toEqual(node.map((entry) => entry.name).sort())
    expect(dirents.map((entry) => [entry.name, typeOf(entry)])).toEqual(node.map((entry) => [entry.name, typeOf(entry)]).sort(byName))
    // What was only listed still reads as the disk has it.
    expect(ws.fs.readlinkSync('/big/l2')).toBe('f0')
    expect(ws.fs.statSync('/big/d1').isDirectory()).toBe(true)
    await ws.close()
  })

  it('over memfs: the same, from the volume\'s dirents', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 5_000; i++) files[`/root/big/f${i}`] = String(i)
    const vol = Volume.fromJSON(files)
    vol.mkdirSync('/root/big/sub')
    vol.symlinkSync('f0', '/root/big/link')
    await settle()
    const { fs: counted, counts } = counting(vol as unknown as SyncReadableFs)
    const ws = await Workspace.open({ lower: syncFsSource(counted, '/root') })
    const before = { ...counts }
    const dirents = ws.fs.readdirSync('/big', { withFileTypes: true }) as Dirent[]
    expect(counts.listings - before.listings).toBe(1)
    expect(counts.stats - before.stats).toBeLessThanOrEqual(3)
    const own = (vol.readdirSync('/root/big', { withFileTypes: true }) as unknown as { name: string; isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }[])
    expect(dirents.map((entry) => [entry.name, typeOf(entry)])).toEqual(own.map((entry) => [String(entry.name), typeOf(entry)]).sort(byName))
    expect(ws.fs.readFileSync('/big/f4999', 'utf8')).toBe('4999')
    await ws.close()
  })

  it('over an fs that lists plain names only: each entry is looked up for its type, and the listing is still what Node lists', async () => {
    const root = fs.mkdtempSync(path.join(scratch, 'names-'))
    fs.writeFileSync(`${root}/a`, 'a')
    fs.mkdirSync(`${root}/dir`)
    fs.symlinkSync('a', `${root}/link`)
    execFileSync('mkfifo', [`${root}/pipe`])
    await settle()
    const { fs: counted } = counting(fs as unknown as SyncReadableFs, { namesOnly: true })
    const ws = await Workspace.open({ lower: syncFsSource(counted, root) })
    const dirents = ws.fs.readdirSync('/', { withFileTypes: true }) as Dirent[]
    expect(dirents.map((entry) => [entry.name, typeOf(entry)])).toEqual([
      ['a', 'file'],
      ['dir', 'dir'],
      ['link', 'symlink'],
    ])
    await ws.close()
  })
})
