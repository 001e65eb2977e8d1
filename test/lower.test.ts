import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Volume } from 'memfs'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  type FileSystemTree,
  type LowerInput,
  type LowerSource,
  type SyncReadableFs,
  emptySource,
  fileSystemTreeSource,
  fixtureSource,
  toLowerSource,
} from '../src/lower/index.js'
import { syncFsSource } from '../src/lower/sync-fs.js'
import { Workspace } from '../src/index.js'
import { directory } from '../adapters/node-fs/index.js'

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const sorted = (names: string[]) => [...names].sort()

/** Every name readdir lists must stat, and every source must have a directory root. */
function walk(source: LowerSource, path = '/', out: Record<string, string> = {}): Record<string, string> {
  const stat = source.stat(path)
  expect(stat, path).toBeDefined()
  out[path] = stat!.type
  if (stat!.type === 'dir') {
    for (const name of source.readdir(path)) walk(source, path === '/' ? `/${name}` : `${path}/${name}`, out)
  }
  return out
}

/** Only the four read members may be touched: anything else (a write, a promise API) throws. */
function readOnly<T extends object>(target: T): T & SyncReadableFs {
  const allowed = new Set(['readFileSync', 'readdirSync', 'lstatSync', 'readlinkSync'])
  const used = new Set<string>()
  const proxy = new Proxy(target, {
    get(object, key) {
      if (typeof key !== 'string' || !allowed.has(key)) throw new Error(`lower source touched ${String(key)}`)
      used.add(key)
      const member = Reflect.get(object, key) as (...args: unknown[]) => unknown
      return (...args: unknown[]) => member.apply(object, args)
    },
    set(_object, key) {
      throw new Error(`lower source assigned ${String(key)}`)
    },
  })
  return proxy as T & SyncReadableFs
}

describe('fixtureSource', () => {
  it('builds files, implied parents and empty directories', () => {
    const source = fixtureSource({
      '/app/a.txt': 'héllo',
      'b/c.bin': new Uint8Array([0, 1, 255]),
      'empty/': '',
      'x/../y.txt': 'folded',
    })
    expect(source.kind).toBe('fixture')
    expect(walk(source)).toEqual({
      '/': 'dir',
      '/app': 'dir',
      '/app/a.txt': 'file',
      '/b': 'dir',
      '/b/c.bin': 'file',
      '/empty': 'dir',
      '/y.txt': 'file',
    })
    expect(sorted(source.readdir('/'))).toEqual(['app', 'b', 'empty', 'y.txt'])
    expect(source.readdir('/empty')).toEqual([])
    expect(text(source.readFile('/app/a.txt'))).toBe('héllo')
    expect([...source.readFile('/b/c.bin')]).toEqual([0, 1, 255])
    const file = source.stat('/app/a.txt')!
    expect(file).toMatchObject({ type: 'file', mode: 0o644, size: 6 })
    expect(file.version).toMatch(/^6:[0-9a-f]{8}$/)
    expect(source.stat('/app')).toMatchObject({ type: 'dir', mode: 0o755 })
    expect(source.stat('/nope')).toBeUndefined()
    expect(source.stat('/app/a.txt/x')).toBeUndefined()
  })

  it('has stable versions and inodes, and the construction time as mtime', () => {
    const before = Date.now()
    const files = { 'a.txt': 'one', 'b/c.txt': 'two' }
    const a = fixtureSource(files)
    const b = fixtureSource(files)
    const after = Date.now()
    expect(a.stat('/a.txt')!.version).toBe(a.stat('/a.txt')!.version)
    expect(a.stat('/a.txt')!.version).toBe(b.stat('/a.txt')!.version)
    expect(a.stat('/b/c.txt')!.version).not.toBe(a.stat('/a.txt')!.version)
    expect(a.stat('/')!.ino).toBe(1)
    expect(a.stat('/b/c.txt')!.ino).toBe(b.stat('/b/c.txt')!.ino)
    const inodes = ['/', '/a.txt', '/b', '/b/c.txt'].map((path) => a.stat(path)!.ino)
    expect(new Set(inodes).size).toBe(4)
    expect(a.stat('/a.txt')!.mtimeMs).toBeGreaterThanOrEqual(before)
    expect(a.stat('/a.txt')!.mtimeMs).toBeLessThanOrEqual(after)
  })

  it('copies content in and out, so nothing can change it under its version', () => {
    const bytes = new Uint8Array([1, 2, 3])
    const source = fixtureSource({ '/f': bytes })
    bytes[0] = 9
    const read = source.readFile('/f')
    read[1] = 9
    expect([...source.readFile('/f')]).toEqual([1, 2, 3])
  })

  it('rejects bad input with a clear TypeError', () => {
    expect(() => fixtureSource({ '/a': 'x', '/a/b': 'y' })).toThrow(/'\/a' is a file but also the parent of '\/a\/b'/)
    expect(() => fixtureSource({ '/a/b': 'y', 'a': 'x' })).toThrow(/'\/a' is a file but also the parent of '\/a\/b'/)
    expect(() => fixtureSource({ 'a/': '', '/a': 'x' })).toThrow(TypeError)
    expect(() => fixtureSource({ '/a': 'x', 'a': 'y' })).toThrow(/given twice/)
    expect(() => fixtureSource({ 'a\0b': 'x' })).toThrow(/NUL/)
    expect(() => fixtureSource({ '../etc/passwd': 'x' })).toThrow(/escapes the root/)
    expect(() => fixtureSource({ '/a/../../b': 'x' })).toThrow(/escapes the root/)
    expect(() => fixtureSource({ '': 'x' })).toThrow(TypeError)
    expect(() => fixtureSource({ '.': 'x' })).toThrow(/the root '\/' must be a directory/)
    expect(() => fixtureSource({ '/': 'x' })).toThrow(/ends in '\/' \(a directory\) but has content/)
    expect(() => fixtureSource({ 'dir/': 'content' })).toThrow(/directory/)
    expect(() => fixtureSource({ a: 5 } as unknown as Record<string, string>)).toThrow(/'a' must be a string or a Uint8Array, got a number/)
  })

  it('reports misuse the way Node does', () => {
    const source = fixtureSource({ '/d/f': 'x' })
    expect(() => source.readFile('/d')).toThrow(expect.objectContaining({ code: 'EISDIR' }))
    expect(() => source.readdir('/d/f')).toThrow(expect.objectContaining({ code: 'ENOTDIR' }))
    expect(() => source.readlink('/d/f')).toThrow(expect.objectContaining({ code: 'EINVAL' }))
    expect(() => source.readFile('/missing')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
  })
})

describe('fileSystemTreeSource', () => {
  const tree: FileSystemTree = {
    app: {
      directory: {
        'a.txt': { file: { contents: 'text' } },
        'b.bin': { file: { contents: new Uint8Array([7, 8]) } },
        link: { file: { symlink: '../x' } },
        empty: { directory: {} },
      },
    },
    'top.txt': { file: { contents: '' } },
  }

  it('builds files, directories and symlinks', () => {
    const source = fileSystemTreeSource(tree)
    expect(source.kind).toBe('FileSystemTree')
    expect(walk(source)).toEqual({
      '/': 'dir',
      '/app': 'dir',
      '/app/a.txt': 'file',
      '/app/b.bin': 'file',
      '/app/link': 'symlink',
      '/app/empty': 'dir',
      '/top.txt': 'file',
    })
    expect(text(source.readFile('/app/a.txt'))).toBe('text')
    expect([...source.readFile('/app/b.bin')]).toEqual([7, 8])
    expect(source.readlink('/app/link')).toBe('../x')
    expect(source.stat('/app/link')).toMatchObject({ type: 'symlink', mode: 0o777, size: 4 })
    expect(source.stat('/app/a.txt')).toMatchObject({ type: 'file', mode: 0o644, size: 4 })
    expect(source.stat('/app/link/x')).toBeUndefined()
    expect(source.stat('/top.txt')!.version).toBe(fileSystemTreeSource(tree).stat('/top.txt')!.version)
  })

  it('names the bad path when the shape is wrong', () => {
    const bad = (value: unknown) => () => fileSystemTreeSource(value as FileSystemTree)
    expect(bad({ app: { directory: { x: { file: {} } } } })).toThrow(/'\/app\/x' must have exactly one of 'file.contents' and 'file.symlink'/)
    expect(bad({ app: { directory: { x: 'text' } } })).toThrow(/'\/app\/x' must be \{ directory \} or \{ file \}, got a string/)
    expect(bad({ x: { file: { contents: 5 } } })).toThrow(/'\/x' has contents that are a number/)
    expect(bad({ x: { file: { symlink: '' } } })).toThrow(/'\/x' has an empty symlink target/)
    expect(bad({ x: { directory: {}, file: { contents: '' } } })).toThrow(/exactly one of 'directory' and 'file'/)
    expect(bad({ app: { directory: [] } })).toThrow(/'\/app' must be an object of names to nodes, got an array/)
    expect(bad({ 'a/b': { file: { contents: '' } } })).toThrow(/"a\/b" in '\/' is not a valid file name/)
    expect(bad({ '..': { directory: {} } })).toThrow(/not a valid file name/)
    const cyclic: { directory: Record<string, unknown> } = { directory: {} }
    cyclic.directory.self = cyclic
    expect(bad({ loop: cyclic })).toThrow(/'\/loop\/self' contains itself/)
  })
})

describe('emptySource', () => {
  it('is only the root directory', () => {
    const source = emptySource()
    expect(source.kind).toBe('empty')
    expect(source.stat('/')).toMatchObject({ type: 'dir', mode: 0o755 })
    expect(source.readdir('/')).toEqual([])
    expect(source.stat('/a')).toBeUndefined()
  })
})

describe('syncFsSource over memfs', () => {
  function volume() {
    return Volume.fromJSON({ '/root/app/a.txt': 'aaa', '/root/app/sub/b.txt': 'bb', '/root/top.txt': 't', '/other.txt': 'o' })
  }

  it('reads files, directories and symlinks under the root', () => {
    const vol = volume()
    vol.symlinkSync('../top.txt', '/root/app/link')
    vol.mkdirSync('/root/empty')
    vol.chmodSync('/root/top.txt', 0o600)
    const source = syncFsSource(vol, '/root')
    expect(source.kind).toBe('sync-fs')
    expect(walk(source)).toEqual({
      '/': 'dir',
      '/app': 'dir',
      '/app/a.txt': 'file',
      '/app/sub': 'dir',
      '/app/sub/b.txt': 'file',
      '/app/link': 'symlink',
      '/empty': 'dir',
      '/top.txt': 'file',
    })
    expect(text(source.readFile('/app/sub/b.txt'))).toBe('bb')
    expect(source.readlink('/app/link')).toBe('../top.txt')
    expect(source.stat('/top.txt')).toMatchObject({ type: 'file', mode: 0o600, size: 1 })
    expect(source.stat('/other.txt')).toBeUndefined()
    expect(source.stat('/../other.txt')).toBeUndefined() // '..' folds at the root
    expect(source.stat('/top.txt/x')).toBeUndefined() // ENOTDIR
    expect(source.stat('/app/a.txt')!.version).toBe(source.stat('/app/a.txt')!.version)
  })

  it('changes the version when a file changes, and maps the root', () => {
    const vol = volume()
    const source = syncFsSource(vol, '/root/')
    const before = source.stat('/app/a.txt')!
    expect(before.version).toBe(`${before.size}:${before.mtimeMs}:${before.ino}:${before.ctimeMs}`)
    vol.writeFileSync('/root/app/a.txt', 'longer')
    vol.utimesSync('/root/app/a.txt', 1000, 1000)
    expect(source.stat('/app/a.txt')!.version).not.toBe(before.version)
    expect(syncFsSource(vol).stat('/root/app/a.txt')!.version).toBe(source.stat('/app/a.txt')!.version)
  })

  it('touches only the four read members', () => {
    const vol = volume()
    vol.symlinkSync('app', '/root/ln')
    const guarded = readOnly(vol)
    for (const source of [syncFsSource(guarded, '/root'), syncFsSource(readOnly(vol))]) {
      const all = walk(source)
      for (const [path, type] of Object.entries(all)) {
        if (type === 'file') source.readFile(path)
        if (type === 'symlink') source.readlink(path)
      }
    }
    expect(() => guarded.writeFileSync).toThrow(/touched writeFileSync/)
  })

  it('rethrows errors other than ENOENT/ENOTDIR', () => {
    const vol = volume()
    const source = syncFsSource(vol, '/root')
    const failing: SyncReadableFs = {
      readFileSync: (path) => vol.readFileSync(path) as Uint8Array,
      readdirSync: (path) => vol.readdirSync(path) as string[],
      readlinkSync: (path) => vol.readlinkSync(path),
      lstatSync: (path) => {
        if (path.endsWith('secret')) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' })
        return vol.lstatSync(path)
      },
    }
    expect(source.stat('/secret')).toBeUndefined()
    expect(() => syncFsSource(failing, '/root').stat('/secret')).toThrow(/EACCES/)
  })

  it('rejects a missing or non-directory root and a non-fs', () => {
    const vol = volume()
    expect(() => syncFsSource(vol, '/nope')).toThrow(/root '\/nope' is missing/)
    expect(() => syncFsSource(vol, '/other.txt')).toThrow(/is a file, not a directory/)
    expect(() => syncFsSource({ readFileSync() {} } as unknown as SyncReadableFs)).toThrow(/readdirSync is missing/)
  })
})

describe('syncFsSource over node:fs', () => {
  let dir: string
  beforeEach(() => {
    dir = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-lower-'))
  })
  afterEach(() => {
    nodeFs.rmSync(dir, { recursive: true, force: true })
  })

  it('reads a real directory with a nested dir and a symlink', () => {
    nodeFs.mkdirSync(join(dir, 'a/b'), { recursive: true })
    nodeFs.writeFileSync(join(dir, 'a/b/deep.txt'), 'deep')
    nodeFs.writeFileSync(join(dir, 'top.txt'), 'top')
    nodeFs.symlinkSync('a/b/deep.txt', join(dir, 'link'))
    nodeFs.chmodSync(join(dir, 'top.txt'), 0o640)
    const source = syncFsSource(nodeFs, dir)
    expect(walk(source)).toEqual({ '/': 'dir', '/a': 'dir', '/a/b': 'dir', '/a/b/deep.txt': 'file', '/top.txt': 'file', '/link': 'symlink' })
    expect(text(source.readFile('/a/b/deep.txt'))).toBe('deep')
    expect(source.readlink('/link')).toBe('a/b/deep.txt')
    expect(source.stat('/link')!.size).toBe('a/b/deep.txt'.length)
    expect(source.stat('/top.txt')).toMatchObject({ type: 'file', mode: 0o640, size: 3 })
    expect(source.stat('/missing')).toBeUndefined()
  })

  it('changes the version when a file is rewritten', () => {
    const file = join(dir, 'f.txt')
    nodeFs.writeFileSync(file, 'one')
    nodeFs.utimesSync(file, 1_000, 1_000)
    const source = syncFsSource(nodeFs, dir)
    const first = source.stat('/f.txt')!.version
    expect(source.stat('/f.txt')!.version).toBe(first)
    nodeFs.writeFileSync(file, 'a longer text')
    nodeFs.utimesSync(file, 2_000, 2_000)
    const second = source.stat('/f.txt')!.version
    expect(second).not.toBe(first)
    expect(second).toMatch(/^13:2000000:\d+:[\d.]+$/)
  })

  it('follows a root that is a symlink', () => {
    nodeFs.mkdirSync(join(dir, 'real'))
    nodeFs.writeFileSync(join(dir, 'real/x'), 'x')
    nodeFs.symlinkSync('real', join(dir, 'alias'))
    const source = syncFsSource(nodeFs, join(dir, 'alias'))
    expect(source.stat('/')!.type).toBe('dir')
    expect(source.readdir('/')).toEqual(['x'])
  })

  it('leaves out entries that are not files, directories or symlinks', async () => {
    const { createServer } = await import('node:net')
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(join(dir, 'sock'), resolve))
    try {
      nodeFs.writeFileSync(join(dir, 'f'), '')
      const source = syncFsSource(nodeFs, dir)
      expect(source.readdir('/')).toEqual(['f'])
      expect(source.stat('/sock')).toBeUndefined()
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('toLowerSource', () => {
  it('recognises every accepted shape', () => {
    expect(toLowerSource(undefined).kind).toBe('empty')
    const existing = fixtureSource({ a: 'x' })
    expect(toLowerSource(existing)).toBe(existing)
    expect(toLowerSource({ app: { directory: { 'a.txt': { file: { contents: 'x' } } } } }).kind).toBe('FileSystemTree')
    expect(toLowerSource({ '/a.txt': 'x', 'b.bin': new Uint8Array([1]) }).kind).toBe('fixture')
    const empty = toLowerSource({})
    expect(empty.readdir('/')).toEqual([])
  })

  it('reads what it recognised', () => {
    const tree = toLowerSource({ app: { directory: { 'a.txt': { file: { contents: 'x' } } } } })
    expect(text(tree.readFile('/app/a.txt'))).toBe('x')
  })

  it('takes a synchronous fs only as a source (syncFsSource), saying so', () => {
    for (const fs of [nodeFs, Volume.fromJSON({ '/a': 'x' })]) {
      expect(() => toLowerSource(fs as unknown as LowerInput)).toThrow(/syncFsSource\(fs, root\?\) from rewindfs\/adapter-kit/)
    }
    const vol = toLowerSource(syncFsSource(Volume.fromJSON({ '/d/a': 'memfs' }) as unknown as SyncReadableFs))
    expect(vol.kind).toBe('sync-fs')
    expect(text(vol.readFile('/d/a'))).toBe('memfs')
  })

  it('explains what it accepts when the input fits nothing', () => {
    const bad = (value: unknown) => () => toLowerSource(value as LowerInput)
    expect(bad(null)).toThrow(/cannot use null as a lower source; expected undefined \(empty\), a LowerSource/)
    expect(bad(42)).toThrow(/cannot use a number/)
    expect(bad('/some/dir')).toThrow(/cannot use a string/)
    expect(bad(new Map())).toThrow(/cannot use a Map/)
    expect(bad([])).toThrow(/cannot use an array/)
    expect(bad({ a: 5 })).toThrow(/'a' holds a number/)
    expect(bad({ 'a.txt': 'x', src: { directory: {} } })).toThrow(/'src' is a FileSystemTree node but 'a.txt' holds fixture content/)
    expect(bad({ src: { directory: {} }, 'a.txt': 'x' })).toThrow(/'a.txt' holds a string but 'src' is a FileSystemTree node/)
    expect(bad({ kind: 'x', stat() {} })).toThrow(TypeError)
    // A recognised format still validates in full.
    expect(bad({ app: { directory: { x: { file: {} } } } })).toThrow(/'\/app\/x'/)
    expect(bad({ '../x': 'y' })).toThrow(/escapes the root/)
  })
})

describe('inode numbers', () => {
  /** Every entry's [path, ino], the root included. */
  const inodes = (ws: Workspace): [string, number][] => {
    const out: [string, number][] = [['/', Number(ws.fs.lstatSync('/').ino)]]
    for (const name of ws.fs.readdirSync('/', { recursive: true }) as string[]) out.push(['/' + name, Number(ws.fs.lstatSync('/' + name).ino)])
    return out
  }
  const distinct = (entries: [string, number][]) => new Set(entries.map(([, ino]) => ino)).size

  it("a new entry never takes a lower entry's number (a fixture's are 1 to n; a young disk's are small too)", async () => {
    const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-inodes-'))
    try {
      nodeFs.mkdirSync(join(root, 'l'))
      nodeFs.writeFileSync(join(root, 'l', 'one'), 'L1')
      nodeFs.writeFileSync(join(root, 'a'), 'lower a')
      for (const lower of [{ '/l/one': 'L1', '/a': 'lower a' }, directory(root)]) {
        const ws = await Workspace.open({ lower, autoCheckpoint: false })
        for (let i = 0; i < 8; i++) ws.fs.writeFileSync(`/new${i}`, String(i))
        ws.fs.mkdirSync('/newdir')
        ws.fs.symlinkSync('a', '/newlink')
        const entries = inodes(ws)
        expect(entries).toHaveLength(14)
        expect(distinct(entries)).toBe(entries.length)
        await ws.close()
      }
    } finally {
      nodeFs.rmSync(root, { recursive: true, force: true })
    }
  })
})
