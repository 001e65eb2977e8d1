/**
 * The directory adapter as a lower source and flush target, against real temp directories: what
 * Linux says is on disk is the oracle.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { Confinement } from '../../adapters/node-fs/confine.js'
import { readManifest, rollForward } from '../../adapters/node-fs/flush.js'
import { DirectorySource, directory } from '../../adapters/node-fs/index.js'
import type { FlushEntry } from '../../src/flush/target.js'
import { Workspace } from '../../src/index.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-node-fs-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
afterEach(() => vi.restoreAllMocks())

let serial = 0
function tempDirectory(files: Record<string, string> = {}): string {
  const root = `${scratch}/d${serial++}`
  fs.mkdirSync(root)
  for (const [path, content] of Object.entries(files)) {
    fs.mkdirSync(`${root}${path.slice(0, path.lastIndexOf('/'))}`, { recursive: true })
    if (path.endsWith('/')) continue
    fs.writeFileSync(root + path, content)
  }
  return root
}

/**
 * Everything under `root` as Linux sees it: type, mode, contents or link target. The flush's
 * staging folder, which stays once made, is left out only while it is empty.
 */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const host = `${dir}/${name}`
      if (dir === root && name === '.rewindfs-flush' && fs.readdirSync(host).length === 0) continue
      const stats = fs.lstatSync(host)
      const mode = (stats.mode & 0o7777).toString(8)
      if (stats.isDirectory()) {
        out[`${prefix}/${name}/`] = mode
        walk(host, `${prefix}/${name}`)
      } else if (stats.isSymbolicLink()) out[`${prefix}/${name}`] = '-> ' + fs.readlinkSync(host)
      else out[`${prefix}/${name}`] = `${mode} ${fs.readFileSync(host, 'utf8')}`
    }
  }
  walk(root, '')
  return out
}

const bytes = (text: string) => new TextEncoder().encode(text)
const file = (path: string, text: string, mode = 0o644, mtimeMs = 1_700_000_000_000): FlushEntry => ({ path, kind: 'file', mode, mtimeMs, content: bytes(text) })

/** Calls to node:fs's functions that touch the disk, while `body` runs. */
function countFsCalls(body: () => void): number {
  const names = ['lstatSync', 'statSync', 'readdirSync', 'opendirSync', 'readFileSync', 'openSync', 'readlinkSync', 'existsSync', 'accessSync'] as const
  const spies = names.map((name) => vi.spyOn(fs, name))
  const native = vi.spyOn(fs.realpathSync, 'native')
  body()
  return spies.reduce((sum, spy) => sum + spy.mock.calls.length, native.mock.calls.length)
}

describe('directory(): a lazily read lower source', () => {
  it('opens a directory of 10k files without looking at them, and reads only what is asked', async () => {
    const root = tempDirectory()
    for (let d = 0; d < 10; d++) {
      fs.mkdirSync(`${root}/d${d}`)
      for (let f = 0; f < 1000; f++) fs.writeFileSync(`${root}/d${d}/f${f}.txt`, `${d}/${f}`)
    }
    let source: DirectorySource | undefined
    const opening = countFsCalls(() => {
      source = directory(root)
    })
    expect(opening).toBeLessThan(10)
    expect(source!.id).toBe('directory:' + fs.realpathSync(root))
    expect(source!.kind).toBe('directory')
    const ws = await Workspace.open({ lower: source! })
    let text = ''
    const reading = countFsCalls(() => {
      text = ws.fs.readFileSync('/d3/f500.txt', 'utf8') as string
    })
    expect(text).toBe('3/500')
    expect(reading).toBeGreaterThan(0) // the spies do see the adapter's calls
    expect(reading).toBeLessThan(30)
    await ws.close()
  })

  it('reports stats in Linux terms, with a version from size, mtime, inode and ctime that changes with the file', () => {
    const root = tempDirectory({ '/a.txt': 'one', '/sub/b.txt': 'b' })
    fs.symlinkSync('sub/b.txt', `${root}/link`)
    const source = directory(root)
    const host = fs.lstatSync(`${root}/a.txt`)
    const before = source.stat('/a.txt')!
    expect(before).toMatchObject({ type: 'file', mode: host.mode & 0o7777, size: 3, mtimeMs: host.mtimeMs, ino: host.ino })
    expect(before.version).toBe(`${host.size}:${host.mtimeMs}:${host.ino}:${host.ctimeMs}`)
    expect(source.stat('/sub')?.type).toBe('dir')
    expect(source.stat('/link')?.type).toBe('symlink')
    expect(source.readlink('/link')).toBe('sub/b.txt')
    expect(source.stat('/missing')).toBeUndefined()
    expect(source.stat('/a.txt/below')).toBeUndefined()
    expect(source.readdir('/').sort()).toEqual(['a.txt', 'link', 'sub'])

    fs.writeFileSync(`${root}/a.txt`, 'three')
    const after = source.stat('/a.txt')!
    expect(after.version).not.toBe(before.version)
    fs.utimesSync(`${root}/a.txt`, 1000, 1000)
    expect(source.stat('/a.txt')!.version).not.toBe(after.version)
    expect(new TextDecoder().decode(source.readFile('/a.txt'))).toBe('three')
  })

  it('shows a workspace the files on disk, and a change on disk to a path it never read', async () => {
    const root = tempDirectory({ '/app/config.json': '{"port":1}' })
    const ws = await Workspace.open({ lower: directory(root) })
    expect(ws.fs.readdirSync('/app')).toEqual(['config.json'])
    fs.writeFileSync(`${root}/app/late.txt`, 'late')
    expect(ws.fs.readFileSync('/app/late.txt', 'utf8')).toBe('late')
    ws.fs.writeFileSync('/app/config.json', '{"port":2}')
    expect(fs.readFileSync(`${root}/app/config.json`, 'utf8')).toBe('{"port":1}')
    await ws.close()
  })
})

describe('confinement to the root', () => {
  const outside = tempDirectory({ '/secret.txt': 'do not read', '/dir/inner.txt': 'nor this' })

  function confined() {
    const root = tempDirectory({ '/a.txt': 'inside', '/sub/b.txt': 'b' })
    fs.symlinkSync(outside, `${root}/absolute`)
    fs.symlinkSync(`../${outside.slice(outside.lastIndexOf('/') + 1)}`, `${root}/relative`)
    fs.symlinkSync(`${outside}/secret.txt`, `${root}/secret-link`)
    fs.symlinkSync('sub', `${root}/inner`)
    fs.symlinkSync('inner/../../x', `${root}/sneaky`)
    fs.symlinkSync(`${fs.realpathSync(root)}/sub`, `${root}/absolute-inside`)
    fs.symlinkSync('loop', `${root}/loop`)
    return { root, source: directory(root) }
  }

  it("folds '..' at the root: nothing above it is reachable by path", () => {
    const { source } = confined()
    expect(new TextDecoder().decode(source.readFile('/../../a.txt'))).toBe('inside')
    expect(source.stat(`/../..${outside}/secret.txt`)).toBeUndefined()
    expect(source.readdir('/sub/../..').sort()).toEqual(['a.txt', 'absolute', 'absolute-inside', 'inner', 'loop', 'relative', 'secret-link', 'sneaky', 'sub'])
  })

  it('reports links as links, follows them inside the root, and refuses with EACCES to follow one that leaves', () => {
    const { source } = confined()
    expect(source.stat('/absolute')?.type).toBe('symlink')
    expect(source.readlink('/absolute')).toBe(outside)
    expect(source.readdir('/inner')).toEqual(['b.txt'])
    expect(source.readdir('/absolute-inside')).toEqual(['b.txt'])
    expect(() => source.stat('/loop/x')).toThrow(expect.objectContaining({ code: 'ELOOP' }))
    expect(new TextDecoder().decode(source.readFile('/inner/b.txt'))).toBe('b')
    const escapes: [string, () => unknown][] = [
      ['stat through an absolute link', () => source.stat('/absolute/secret.txt')],
      ['readFile through an absolute link', () => source.readFile('/absolute/secret.txt')],
      ['readdir of an absolute link', () => source.readdir('/absolute')],
      ['readdir through a relative link', () => source.readdir('/relative/dir')],
      ['readFile of a link to an outside file', () => source.readFile('/secret-link')],
      ['stat through a link that climbs out via another', () => source.stat('/sneaky/y')],
    ]
    for (const [what, call] of escapes) {
      expect(call, what).toThrow(expect.objectContaining({ code: 'EACCES', errno: -13, message: expect.stringMatching(/leads outside the directory root/) }))
    }
  })

  it('gives a workspace chroot semantics on top: an escaping link resolves inside the root, never to the outside file', async () => {
    const { source } = confined()
    const ws = await Workspace.open({ lower: source })
    expect(() => ws.fs.readFileSync('/absolute/secret.txt')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(() => ws.fs.readFileSync('/secret-link')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(ws.fs.readFileSync('/inner/b.txt', 'utf8')).toBe('b')
    await ws.close()
  })

  it('rejects NUL bytes as Node does (ERR_INVALID_ARG_VALUE)', () => {
    const { source } = confined()
    for (const call of [() => source.stat('/a\0b'), () => source.readFile('/a.txt\0'), () => source.readdir('/\0'), () => directory(`${scratch}\0`)]) {
      expect(call).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(/without null bytes/) }))
    }
  })

  it('refuses to flush a symlink that is absolute or leaves the root, with nothing written', async () => {
    const { root, source } = confined()
    const before = tree(root)
    for (const target of ['/etc/passwd', '../../x', 'a/../../../x', `${root}/a.txt`]) {
      await expect(source.apply([file('/new.txt', 'new'), { path: '/sub/link', kind: 'symlink', target }]), target).rejects.toThrow(
        expect.objectContaining({ code: 'EACCES', message: expect.stringMatching(/refusing to flush the symlink \/sub\/link: its target leaves the directory root/) }),
      )
      expect(tree(root)).toEqual(before)
    }
    // Inside the root is fine, '..' included.
    await source.apply([{ path: '/sub/up', kind: 'symlink', target: '../a.txt' }])
    expect(fs.readFileSync(`${root}/sub/up`, 'utf8')).toBe('inside')
  })

  it('refuses to write through an on-disk link, even one that stays inside, with nothing written', async () => {
    const { root, source } = confined()
    const before = tree(root)
    await expect(source.apply([file('/a.txt', 'changed'), file('/inner/new.txt', 'x')])).rejects.toThrow(expect.objectContaining({ code: 'ENOENT', message: expect.stringMatching(/'\/inner' is not a directory inside the root/) }))
    await expect(source.apply([file('/absolute/new.txt', 'x')])).rejects.toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(tree(root)).toEqual(before)
    expect(tree(outside)).toEqual({ '/dir/': '755', '/dir/inner.txt': '644 nor this', '/secret.txt': '644 do not read' })
  })
})

describe('apply: all or nothing', () => {
  it('applies files, directories, symlinks and deletes with their modes and times, and answers versions as stat does', async () => {
    const root = tempDirectory({ '/keep.txt': 'keep', '/old/a.txt': 'a', '/old/deep/b.txt': 'b', '/swap/c.txt': 'c', '/f': 'was a file' })
    const source = directory(root)
    const progress: number[] = []
    const entries: FlushEntry[] = [
      { path: '/old', kind: 'delete' },
      { path: '/new', kind: 'dir', mode: 0o750, mtimeMs: 1_600_000_000_000 },
      { path: '/new/deep', kind: 'dir', mode: 0o755, mtimeMs: 1_600_000_000_000 },
      file('/new/deep/x.sh', '#!/bin/sh\n', 0o755, 1_650_000_000_000),
      file('/swap', 'now a file'),
      { path: '/f', kind: 'dir', mode: 0o700, mtimeMs: 1_600_000_000_000 },
      file('/f/inside.txt', 'in the new dir'),
      { path: '/new/link', kind: 'symlink', target: 'deep/x.sh' },
      file('/keep.txt', 'kept, changed', 0o600),
    ]
    const versions = await source.apply(entries, (p) => progress.push(p.done))
    expect(tree(root)).toEqual({
      '/f/': '700',
      '/f/inside.txt': '644 in the new dir',
      '/keep.txt': '600 kept, changed',
      '/new/': '750',
      '/new/deep/': '755',
      '/new/deep/x.sh': '755 #!/bin/sh\n',
      '/new/link': '-> deep/x.sh',
      '/swap': '644 now a file',
    })
    expect(fs.statSync(`${root}/new/deep/x.sh`).mtimeMs).toBe(1_650_000_000_000)
    expect(fs.statSync(`${root}/new`).mtimeMs).toBe(1_600_000_000_000)
    expect(versions).toEqual(entries.map((e) => (e.kind === 'delete' ? undefined : source.stat(e.path)!.version)))
    expect(await source.versions(['/keep.txt', '/old', '/new/link'])).toEqual([source.stat('/keep.txt')!.version, undefined, source.stat('/new/link')!.version])
    expect(progress.at(-1)).toBe(entries.length)
    // The directory's own reads show the new generation.
    expect(new TextDecoder().decode(source.readFile('/f/inside.txt'))).toBe('in the new dir')
  })

  it('applies a large change set (made durable per file system rather than file by file) whole', async () => {
    const root = tempDirectory({ '/d0/stale.txt': 'stale' })
    const source = directory(root)
    const entries: FlushEntry[] = [{ path: '/d0/stale.txt', kind: 'delete' }]
    for (let d = 1; d < 4; d++) entries.push({ path: `/d${d}`, kind: 'dir', mode: 0o755, mtimeMs: 1_600_000_000_000 })
    for (let i = 0; i < 300; i++) entries.push(file(`/d${i % 4}/f${i}.txt`, `file ${i}`))
    const versions = await source.apply(entries)
    const expected: Record<string, string> = {}
    for (let d = 0; d < 4; d++) expected[`/d${d}/`] = '755'
    for (let i = 0; i < 300; i++) expected[`/d${i % 4}/f${i}.txt`] = `644 file ${i}`
    expect(tree(root)).toEqual(expected)
    expect(versions.slice(1).every((version) => typeof version === 'string')).toBe(true)
  })

  it('refuses an inconsistent change set before writing anything', async () => {
    const root = tempDirectory({ '/a/x.txt': 'x', '/b.txt': 'b' })
    const source = directory(root)
    const before = tree(root)
    const bad: [FlushEntry[], RegExp][] = [
      [[file('/b.txt', 'ok'), { path: '/a', kind: 'delete' }, file('/a/y.txt', 'y')], /ancestor '\/a' is deleted/],
      [[file('/b.txt', 'ok'), file('/n/y.txt', 'y'), { path: '/n', kind: 'dir', mode: 0o755, mtimeMs: 0 }], /parent '\/n' comes after it/],
      [[file('/b.txt', 'ok'), file('/missing/y.txt', 'y')], /parent '\/missing' is not a directory/],
      [[file('/b.txt', 'ok'), file('/b.txt', 'twice')], /names this path twice/],
      [[file('/b.txt', 'ok'), file('/.rewindfs-flush/manifest.json', '{}')], /reserved/],
      [[file('/b.txt', 'ok'), { path: '/', kind: 'delete' }], /root/],
      [[file('/b.txt', 'ok'), file('/a/../b.txt', 'not normal')], /normalised/],
      [[file('/b.txt', 'ok'), file('/b.txt/under', 'file parent')], /ancestor '\/b.txt' is replaced by a file/],
      [[file('/a/x.txt/under', 'file parent')], /parent '\/a\/x.txt' is not a directory/],
    ]
    const rootVersion = source.stat('/')!.version
    for (const [entries, message] of bad) {
      await expect(source.apply(entries), String(message)).rejects.toThrow(message)
      expect(tree(root)).toEqual(before)
    }
    // Not even the root's time moved: a workspace that read '/' sees no change there.
    expect(source.stat('/')!.version).toBe(rootVersion)
  })

  it('rolls an apply stopped after staging back, and one stopped after its commit point forward, on the next open', async () => {
    const root = tempDirectory({ '/gen.txt': '1', '/dir/a.txt': '1', '/gone/x.txt': '1' })
    const entries: FlushEntry[] = [file('/gen.txt', '2'), file('/dir/a.txt', '2'), file('/dir/new.txt', '2'), { path: '/gone', kind: 'delete' }]
    const generation1 = tree(root)

    const staged = directory(root)
    staged.stopAfter = 'staged'
    await staged.apply(entries)
    // Mid-flush the lower view hides the staging area and the temps; the host has them.
    expect(fs.readdirSync(root)).toContain('.rewindfs-flush')
    expect(fs.readdirSync(`${root}/dir`).some((name) => name.startsWith('.rewindfs-flush.'))).toBe(true)
    expect(staged.readdir('/').sort()).toEqual(['dir', 'gen.txt', 'gone'])
    expect(staged.readdir('/dir')).toEqual(['a.txt'])
    expect(staged.stat('/.rewindfs-flush')).toBeUndefined()
    expect(() => staged.readFile('/.rewindfs-flush/manifest.json')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    expect(() => staged.readdir('/.rewindfs-flush')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    directory(root) // recover on open: never committed, so the old generation stays
    expect(tree(root)).toEqual(generation1)

    const committed = directory(root)
    committed.stopAfter = 'committed'
    await committed.apply(entries)
    expect(fs.readFileSync(`${root}/gen.txt`, 'utf8')).toBe('1')
    await directory(root).recover()
    const generation2 = { '/dir/': '755', '/dir/a.txt': '644 2', '/dir/new.txt': '644 2', '/gen.txt': '644 2' }
    expect(tree(root)).toEqual(generation2)
    // Recovering again changes nothing.
    directory(root)
    expect(tree(root)).toEqual(generation2)
  })

  it("changes a path's type when the set deletes it and then names it anew", async () => {
    const root = tempDirectory({ '/x/old.txt': 'old', '/f': 'a file', '/l': 'a file too' })
    const source = directory(root)
    await source.apply([
      { path: '/x', kind: 'delete' },
      file('/x', 'x is a file now'),
      { path: '/f', kind: 'delete' },
      { path: '/f', kind: 'dir', mode: 0o755, mtimeMs: 1_600_000_000_000 },
      file('/f/inside.txt', 'inside'),
      { path: '/l', kind: 'delete' },
      { path: '/l', kind: 'symlink', target: 'f/inside.txt' },
    ])
    expect(tree(root)).toEqual({ '/f/': '755', '/f/inside.txt': '644 inside', '/l': '-> f/inside.txt', '/x': '644 x is a file now' })
  })

  it('can repeat a committed manifest from the start, as recovery does after a crash, to the same result', async () => {
    const root = tempDirectory({ '/x/old.txt': 'old', '/keep/a.txt': 'a', '/gone.txt': 'gone' })
    const source = directory(root)
    source.stopAfter = 'committed'
    await source.apply([
      { path: '/x', kind: 'delete' },
      { path: '/x', kind: 'dir', mode: 0o700, mtimeMs: 1_600_000_000_000 },
      file('/x/new.txt', 'new'),
      { path: '/gone.txt', kind: 'delete' },
      { path: '/never-there', kind: 'delete' },
      file('/never-there', 'made'),
      file('/keep/a.txt', 'A'),
    ])
    const confinement = new Confinement(source.root)
    const manifest = readManifest(confinement)!
    expect(manifest.state).toBe('committed')
    const expected = { '/keep/': '755', '/keep/a.txt': '644 A', '/never-there': '644 made', '/x/': '700', '/x/new.txt': '644 new' }
    // A crash after every step, before the manifest said so: recovery runs the steps again.
    rollForward(confinement, manifest, undefined, true)
    expect(readManifest(confinement)?.state).toBe('committed')
    rollForward(confinement, manifest)
    expect(tree(root)).toEqual(expected)
    // A crash while the trash was being removed: the rest of it, nothing else.
    rollForward(confinement, { ...manifest, state: 'done' })
    expect(tree(root)).toEqual(expected)
  })

  it('refuses a second flush into the same directory while one holds its lock', async () => {
    const root = tempDirectory({ '/a.txt': 'a' })
    const first = directory(root)
    first.stopAfter = 'staged'
    await first.apply([file('/a.txt', 'b')])
    // Another live process holds it (this process's own pid would be a predecessor's lock, taken over).
    fs.writeFileSync(`${root}/.rewindfs-flush/lock`, `${process.ppid}\n`)
    await expect(directory(root).apply([file('/a.txt', 'c')])).rejects.toThrow(expect.objectContaining({ code: 'EBUSY' }))
    fs.rmSync(`${root}/.rewindfs-flush/lock`)
    expect(fs.readFileSync(`${root}/a.txt`, 'utf8')).toBe('a')
    await directory(root).apply([file('/a.txt', 'c')])
    expect(tree(root)).toEqual({ '/a.txt': '644 c' })
  })
})
