import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Volume } from 'memfs'
import { afterEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { type SyncReadableFs, syncFsSource } from '../src/adapter-kit.js'

const temps: string[] = []
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('Workspace API', () => {
  it('accepts a fixture, a FileSystemTree and a memfs Volume (through syncFsSource) as the lower layer', async () => {
    const fromFixture = await Workspace.open({ lower: { '/app/a.txt': 'fixture', 'app/bin': new Uint8Array([0, 255]) } })
    expect(fromFixture.fs.readFileSync('/app/a.txt', 'utf8')).toBe('fixture')
    expect([...fromFixture.fs.readFileSync('/app/bin')]).toEqual([0, 255])

    const fromTree = await Workspace.open({
      lower: { app: { directory: { 'a.txt': { file: { contents: 'tree' } }, link: { file: { symlink: 'a.txt' } } } } },
    })
    expect(fromTree.fs.readFileSync('/app/link', 'utf8')).toBe('tree')
    expect(fromTree.fs.readlinkSync('/app/link')).toBe('a.txt')

    const volume = Volume.fromJSON({ '/app/a.txt': 'memfs' })
    const fromVolume = await Workspace.open({ lower: syncFsSource(volume as unknown as SyncReadableFs) })
    fromVolume.fs.writeFileSync('/app/a.txt', 'changed')
    expect(fromVolume.fs.readFileSync('/app/a.txt', 'utf8')).toBe('changed')
    expect(volume.readFileSync('/app/a.txt', 'utf8')).toBe('memfs')
  })

  it('never writes to a real directory used as the lower layer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewindfs-lower-'))
    temps.push(dir)
    mkdirSync(join(dir, 'src'))
    writeFileSync(join(dir, 'src/index.js'), 'original')
    symlinkSync('src/index.js', join(dir, 'entry'))
    const ws = await Workspace.open({ lower: syncFsSource(nodeFs, dir) })
    ws.fs.writeFileSync('/src/index.js', 'rewritten')
    ws.fs.rmSync('/src', { recursive: true })
    ws.fs.renameSync('/entry', '/moved')
    ws.fs.mkdirSync('/src')
    ws.fs.writeFileSync('/new.txt', 'x')
    expect(readFileSync(join(dir, 'src/index.js'), 'utf8')).toBe('original')
    expect(readdirSync(dir).sort()).toEqual(['entry', 'src'])
    expect(ws.fs.readdirSync('/src')).toEqual([])
    expect(ws.fs.readdirSync('/').sort()).toEqual(['moved', 'new.txt', 'src'])
  })

  it('lists every path of a removed lower tree in changes()', async () => {
    const ws = await Workspace.open({ lower: { '/a/b/c.txt': '1', '/a/d.txt': '2', '/keep.txt': '3' } })
    ws.fs.rmSync('/a', { recursive: true })
    ws.fs.writeFileSync('/keep.txt', '4')
    ws.fs.writeFileSync('/new.txt', '5')
    const changes = ws.changes().map((c) => `${c.type} ${c.entry} ${c.path}`)
    expect(changes.sort()).toEqual(
      ['deleted dir /a', 'deleted dir /a/b', 'deleted file /a/b/c.txt', 'deleted file /a/d.txt', 'modified file /keep.txt', 'added file /new.txt'].sort(),
    )
    const patch = ws.changes().find((c) => c.path === '/keep.txt')?.patch
    expect(patch).toContain('-3')
    expect(patch).toContain('+4')
  })

  it('makes checkpoint names unique per session and finds checkpoints by id or name', async () => {
    const ws = await Workspace.open()
    const first = await ws.checkpoint({ name: 'first' })
    await expect(ws.checkpoint({ name: 'first' })).rejects.toMatchObject({ code: 'EEXIST' })
    const auto = await ws.checkpoint({ kind: 'turn' })
    expect(auto.kind).toBe('turn')
    expect(ws.checkpoints().map((c) => c.name)).toEqual(['first', auto.name])
    expect(first.seq).toBeLessThan(auto.seq)
    ws.fs.writeFileSync('/x', '1')
    expect((await ws.restore('first')).changes).toEqual([{ path: '/x', type: 'deleted', entry: 'file', patch: expect.any(String) }])
    await expect(ws.restore('nope')).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(ws.checkpoint({ kind: 'guard' as 'manual' })).rejects.toThrow(/guard/)
  })

  it('restores only included paths, and previews without changing anything', async () => {
    const ws = await Workspace.open({ lower: { '/src/a.ts': 'a1', '/src/b.ts': 'b1', '/docs/x.md': 'x1' } })
    const start = await ws.checkpoint({ name: 'start' })
    ws.fs.writeFileSync('/src/a.ts', 'a2')
    ws.fs.writeFileSync('/src/b.ts', 'b2')
    ws.fs.rmSync('/docs', { recursive: true })
    const preview = await ws.restore(start.id, { dryRun: true })
    expect(preview.applied).toBe(false)
    expect(preview.changes.map((c) => c.path).sort()).toEqual(['/docs', '/docs/x.md', '/src/a.ts', '/src/b.ts'])
    expect(ws.fs.readFileSync('/src/a.ts', 'utf8')).toBe('a2')
    await ws.restore(start.id, { include: ['src/**'], exclude: ['**/b.ts'] })
    expect(ws.fs.readFileSync('/src/a.ts', 'utf8')).toBe('a1')
    expect(ws.fs.readFileSync('/src/b.ts', 'utf8')).toBe('b2')
    expect(ws.fs.existsSync('/docs')).toBe(false)
    await ws.restore(start.id, { include: ['docs'] })
    expect(ws.fs.readFileSync('/docs/x.md', 'utf8')).toBe('x1')
  })

  it('chdir resolves relative paths and rejects files', async () => {
    const ws = await Workspace.open({ lower: { '/app/a.txt': 'a' } })
    ws.chdir('/app')
    expect(ws.fs.readFileSync('a.txt', 'utf8')).toBe('a')
    ws.fs.writeFileSync('b.txt', 'b')
    expect(ws.fs.readFileSync('/app/b.txt', 'utf8')).toBe('b')
    expect(() => ws.chdir('a.txt')).toThrow(expect.objectContaining({ code: 'ENOTDIR' }))
    expect(ws.cwd()).toBe('/app')
  })

  it('reset brings back the lower tree and keeps checkpoints restorable', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'lower' } })
    ws.fs.writeFileSync('/a', 'upper')
    const cp = await ws.checkpoint()
    await ws.reset()
    expect(ws.fs.readFileSync('/a', 'utf8')).toBe('lower')
    expect(ws.changes()).toEqual([])
    await ws.restore(cp.id)
    expect(ws.fs.readFileSync('/a', 'utf8')).toBe('upper')
  })
})

describe('checkpoint descriptions', () => {
  it('are kept with the checkpoint, also across a reopen from a store', async () => {
    const { MemoryStore } = await import('../src/adapter-kit.js')
    const store = new MemoryStore()
    const ws = await Workspace.open({ store })
    const c = await ws.checkpoint({ name: 'before-migration', description: 'schema v1, 3 tables' })
    expect(c.description).toBe('schema v1, 3 tables')
    await expect(ws.checkpoint({ description: 42 as unknown as string })).rejects.toThrow(/description must be a string/)
    await ws.close()
    const again = await Workspace.open({ store })
    expect(again.checkpoints().find((x) => x.name === 'before-migration')?.description).toBe('schema v1, 3 tables')
    await again.close()
  })
})
