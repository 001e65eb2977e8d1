/** The members that are not sync/callback/promise triples keep Node's shapes; node:fs is the oracle. */
import * as nodeFs from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { watching } from '../src/watch.js'

const real = mkdtempSync(join(tmpdir(), 'rewindfs-surface-'))
afterAll(() => rmSync(real, { recursive: true, force: true }))

async function both() {
  const ws = await Workspace.open({ watch: watching, lower: { '/a.txt': 'hello world' } })
  nodeFs.writeFileSync(join(real, 'a.txt'), 'hello world')
  return { ws, fs: ws.fs }
}

describe('fs surface beyond the triples', () => {
  it('generates callback and promise forms with Node semantics (async errors, sync argument errors)', async () => {
    const { fs } = await both()
    await expect(fs.promises.readFile('/nope')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'open' })
    const error = await new Promise((resolve) => fs.readFile('/nope', (err) => resolve(err)))
    expect(error).toMatchObject({ code: 'ENOENT' })
    expect(() => fs.readFile(undefined as never, () => undefined)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => nodeFs.readFile(undefined as never, () => undefined)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    await expect(fs.promises.readFile(undefined as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    const exists = await new Promise((resolve) => fs.exists('/a.txt', resolve))
    expect(exists).toBe(true)
    const [n, buffer] = await new Promise<[number, Uint8Array]>((resolve, reject) => {
      const fd = fs.openSync('/a.txt', 'r')
      const target = Buffer.alloc(5)
      fs.read(fd, target, 0, 5, 0, (err, bytes, buf) => (err ? reject(err) : resolve([bytes, buf])))
    })
    expect(n).toBe(5)
    expect(Buffer.from(buffer).toString()).toBe('hello')
  })

  it('has every function member node:fs has', async () => {
    const { fs } = await both()
    const ours = fs as unknown as Record<string, unknown>
    const missing = Object.keys(nodeFs).filter((key) => typeof (nodeFs as Record<string, unknown>)[key] === 'function' && typeof ours[key] !== 'function')
    // Node's own internals and classes we do not construct are not part of the API surface.
    expect(missing.filter((k) => !['_toUnixTimestamp', 'lchmod', 'lchmodSync'].includes(k))).toEqual([])
    const promiseMissing = Object.keys(nodeFs.promises).filter((k) => typeof (ours.promises as Record<string, unknown>)[k] === 'undefined')
    expect(promiseMissing).toEqual([])
  })

  it('promises.open returns a FileHandle that reads, writes, stats and closes like Node', async () => {
    const { fs } = await both()
    const handle = await fs.promises.open('/a.txt', 'r+')
    const theirs = await nodeFs.promises.open(join(real, 'a.txt'), 'r+')
    for (const h of [handle, theirs]) {
      const { bytesRead, buffer } = await h.read(Buffer.alloc(5), 0, 5, 6)
      expect([bytesRead, buffer.toString()]).toEqual([5, 'world'])
      await h.write('HELLO', 0)
      expect((await h.stat()).size).toBe(11)
      await h.truncate(5)
      await h.close()
      await h.close()
    }
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe(nodeFs.readFileSync(join(real, 'a.txt'), 'utf8'))
    await expect(handle.read(Buffer.alloc(1), 0, 1, 0)).rejects.toMatchObject({ code: 'EBADF' })
  })

  it('streams read and write through descriptors; pipeline works; a missing file is an error event', async () => {
    const { fs } = await both()
    const big = 'x'.repeat(200_000) + 'END'
    fs.writeFileSync('/big.txt', big)
    const chunks: string[] = []
    const reader = fs.createReadStream('/big.txt', { encoding: 'utf8', highWaterMark: 65536 })
    const opened = new Promise((resolve) => reader.once('open', resolve))
    for await (const chunk of reader) chunks.push(chunk as string)
    expect(typeof (await opened)).toBe('number')
    expect(chunks.join('')).toBe(big)
    expect(chunks.length).toBeGreaterThan(1)

    const ranged: Buffer[] = []
    for await (const chunk of fs.createReadStream('/a.txt', { start: 6, end: 8 })) ranged.push(chunk as Buffer)
    const oracle: Buffer[] = []
    for await (const chunk of nodeFs.createReadStream(join(real, 'a.txt'), { start: 6, end: 8 })) oracle.push(chunk as Buffer)
    expect(Buffer.concat(ranged).toString()).toBe(Buffer.concat(oracle).toString())

    await pipeline(fs.createReadStream('/big.txt'), fs.createWriteStream('/copy.txt'))
    expect(fs.readFileSync('/copy.txt', 'utf8')).toBe(big)

    const failure = await new Promise((resolve) => fs.createReadStream('/missing').on('error', (e) => resolve(e)))
    expect(failure).toMatchObject({ code: 'ENOENT', syscall: 'open' })
    const writer = fs.createWriteStream('/streamed.txt')
    writer.write('one ')
    writer.end('two')
    await new Promise((resolve) => writer.on('finish', () => resolve(undefined)))
    expect(fs.readFileSync('/streamed.txt', 'utf8')).toBe('one two')
  })

  it('watch reports changes made through the workspace, asynchronously, and stops on close', async () => {
    const { fs } = await both()
    fs.mkdirSync('/dir')
    const events: string[] = []
    const watcher = fs.watch('/dir', (type, name) => events.push(`${type}:${name}`))
    const deep: string[] = []
    const recursive = fs.watch('/', { recursive: true }, (type, name) => deep.push(`${type}:${name}`))
    fs.writeFileSync('/dir/a.txt', '1')
    expect(events).toEqual([]) // not inside the call
    await new Promise((resolve) => setTimeout(resolve, 5))
    fs.writeFileSync('/dir/a.txt', '2')
    fs.mkdirSync('/dir/sub')
    fs.writeFileSync('/dir/sub/deep.txt', 'x')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(events).toContain('rename:a.txt')
    expect(events).toContain('change:a.txt')
    expect(events).not.toContain('rename:sub/deep.txt')
    expect(deep).toContain('rename:dir/sub/deep.txt')
    watcher.close()
    recursive.close()
    fs.writeFileSync('/dir/after.txt', 'x')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(events.some((e) => e.includes('after'))).toBe(false)
    expect(() => fs.watch('/nope')).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'watch' }))

    const controller = new AbortController()
    const seen: string[] = []
    const iterating = (async () => {
      try {
        for await (const event of fs.promises.watch('/dir', { signal: controller.signal })) {
          seen.push(`${event.eventType}:${event.filename}`)
          if (seen.length === 4) controller.abort()
        }
      } catch (error) {
        return (error as Error).name
      }
    })()
    fs.writeFileSync('/dir/x', '1')
    fs.writeFileSync('/dir/y', '1')
    expect(await iterating).toBe('AbortError')
    expect(seen).toEqual(['rename:x', 'change:x', 'rename:y', 'change:y'])
  })

  it('returns Buffers on Node, always copies, and Stats/Dirent/Dir shaped like Node', async () => {
    const { fs } = await both()
    const data = fs.readFileSync('/a.txt')
    expect(Buffer.isBuffer(data)).toBe(true)
    data[0] = 0
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('hello world')
    const ours = fs.statSync('/a.txt')
    const theirs = nodeFs.statSync(join(real, 'a.txt'))
    for (const key of Object.keys(theirs)) expect(ours, key).toHaveProperty(key)
    expect(ours.isFile()).toBe(true)
    expect(ours.mtime).toBeInstanceOf(Date)
    expect(typeof fs.statSync('/a.txt', { bigint: true }).mtimeNs).toBe('bigint')
    expect(fs.statSync('/nope', { throwIfNoEntry: false })).toBeUndefined()
    const [dirent] = fs.readdirSync('/', { withFileTypes: true })
    expect(dirent).toMatchObject({ name: 'a.txt', parentPath: '/' })
    expect(dirent.isFile()).toBe(true)
    const dir = fs.opendirSync('/')
    const names: string[] = []
    for await (const entry of dir) names.push(entry.name)
    expect(names).toEqual(['a.txt'])
    expect(() => dir.closeSync()).toThrow(expect.objectContaining({ code: 'ERR_DIR_CLOSED' }))
  })
})

describe('promise forms and descriptors', () => {
  it('take paths and FileHandles, and refuse a numeric descriptor as Node does', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a.txt': 'alpha' } })
    const real = await import('node:fs')
    for (const [name, args] of [['readFile', [42]], ['writeFile', [42, 'x']], ['appendFile', [42, 'x']], ['truncate', [42]]] as const) {
      const ours = await (ws.fs.promises as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name](...args).catch((e: unknown) => e)
      const node = await (real.promises as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name](...args).catch((e: unknown) => e)
      expect(ours, name).toMatchObject({ code: (node as { code: string }).code, message: (node as Error).message })
    }
    const handle = await ws.fs.promises.open('/a.txt', 'r')
    expect(await ws.fs.promises.readFile(handle as never, 'utf8')).toBe('alpha')
    await handle.close()
    await ws.close()
  })
})

describe('the smaller parities, with node:fs as the oracle', () => {
  const oracle = mkdtempSync(join(tmpdir(), 'rewindfs-parity-'))
  afterAll(() => rmSync(oracle, { recursive: true, force: true }))

  const outcome = (call: () => unknown): unknown => {
    try {
      call()
      return 'no error'
    } catch (error) {
      const e = error as NodeJS.ErrnoException
      return `${e.name} ${e.code}: ${e.message}`
    }
  }

  it('a callback form without its callback names what is in the callback’s place, as Node does', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a.txt': 'a' } })
    const fs = ws.fs as unknown as Record<string, (...args: unknown[]) => unknown>
    const real = nodeFs as unknown as Record<string, (...args: unknown[]) => unknown>
    const fd = ws.fs.openSync('/a.txt', 'r')
    const realFd = nodeFs.openSync(oracle, 'r')
    const calls: [string, (path: string, descriptor: number) => unknown[]][] = [
      ['fstat', (_p, d) => [d]],
      ['fstat', (_p, d) => [d, {}]],
      ['fsync', (_p, d) => [d]],
      ['read', (_p, d) => [d, Buffer.alloc(1), 0, 1, 0]],
      ['stat', (p) => [p]],
      ['stat', (p) => [p, {}, 5]],
      ['readFile', (p) => [p, {}]],
      ['readFile', (p) => [p]],
      ['writeFile', (p) => [p, 'x', {}]],
      ['readdir', (p) => [p, {}]],
      ['access', (p) => [p, 0]],
      ['statfs', (p) => [p]],
    ]
    for (const [name, args] of calls) {
      const ours = outcome(() => fs[name](...args('/a.txt', fd)))
      const theirs = outcome(() => real[name](...args(join(oracle, 'a.txt'), realFd)))
      expect(ours, name).toBe(theirs)
    }
    expect(outcome(() => fs.close(fd))).toBe('no error') // Node's close takes no callback too
    nodeFs.closeSync(realFd)
  })

  it("'' is ENOENT in every form", async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a.txt': 'a' } })
    nodeFs.writeFileSync(join(oracle, 'a.txt'), 'a')
    const calls: [string, (at: (p: string) => string) => unknown[]][] = [
      ['statSync', () => ['']],
      ['readFileSync', () => ['']],
      ['mkdirSync', () => ['', { recursive: true }]],
      ['renameSync', (at) => [at('/a.txt'), '']],
      ['symlinkSync', (at) => ['', at('/l')]],
    ]
    for (const [name, args] of calls) {
      const ours = outcome(() => (ws.fs as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args((p) => p)))
      const theirs = outcome(() => (nodeFs as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args((p) => oracle + p)))
      expect(ours, name).toBe(String(theirs).replaceAll(oracle, ''))
    }
    await expect(ws.fs.promises.stat('')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'stat', message: "ENOENT: no such file or directory, stat ''" })
  })

  it('mkdir -p meets a non-directory where a parent should be: ENOTDIR while a longer path waits, EEXIST at the end (MKDirpSync)', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a/f': 'f' } })
    const root = join(oracle, 'mkdirp')
    for (const fs of [nodeFs, ws.fs] as (typeof nodeFs)[]) {
      const at = (p: string) => (fs === nodeFs ? root + p : p)
      fs.mkdirSync(at('/a'), { recursive: true })
      fs.writeFileSync(at('/a/f'), 'f')
      fs.symlinkSync('a/f', at('/l1'))
      fs.symlinkSync('l1', at('/l2'))
    }
    // '/b' does not exist: mkdirp makes it on the way to 'b/..', then meets the link to a file.
    for (const path of ['/b/../l2/', '/b/../l2', '/c/../a/f/', '/c/../a/f', '/d/../a/f/x']) {
      const theirs = outcome(() => nodeFs.mkdirSync(root + path, { recursive: true }))
      const ours = outcome(() => ws.fs.mkdirSync(path, { recursive: true }))
      expect(ours, path).toBe(String(theirs).replaceAll(root, ''))
    }
    expect(ws.fs.readdirSync('/').sort()).toEqual(nodeFs.readdirSync(root).sort())
  })

  it('readdir recursive walks as Node: sync breadth first, promises from a stack; Dirents carry the parent path as given', async () => {
    const root = join(oracle, 'walk')
    const make = (fs: typeof nodeFs, at: (p: string) => string) => {
      for (const dir of ['/x/y/z', '/w/v']) fs.mkdirSync(at(dir), { recursive: true })
      for (const file of ['/x/y/z/f', '/w/v/g', '/x/h', '/top']) fs.writeFileSync(at(file), '')
      fs.symlinkSync('x', at('/link'))
    }
    nodeFs.mkdirSync(root)
    make(nodeFs, (p) => root + p)
    const ws = await Workspace.open({ watch: watching })
    make(ws.fs as unknown as typeof nodeFs, (p) => '/walk' + p)
    // Within a directory the disk's order is its own: compare the depth of each entry in turn, and the sets.
    const depths = (names: string[]) => names.map((n) => n.split('/').length)
    const sync = [ws.fs.readdirSync('/walk', { recursive: true }) as string[], nodeFs.readdirSync(root, { recursive: true }) as string[]]
    expect(depths(sync[0])).toEqual(depths(sync[1]))
    expect([...sync[0]].sort()).toEqual([...sync[1]].sort())
    const promised = [(await ws.fs.promises.readdir('/walk', { recursive: true })) as string[], (await nodeFs.promises.readdir(root, { recursive: true })) as string[]]
    expect([...promised[0]].sort()).toEqual([...promised[1]].sort())
    expect(promised[0]).not.toEqual(sync[0]) // a stack, not a queue
    ws.chdir('/walk')
    process.chdir(oracle)
    try {
      const dirents = (fs: typeof nodeFs, path: string) =>
        fs
          .readdirSync(path, { recursive: true, withFileTypes: true })
          .map((d) => `${d.parentPath}|${d.path}|${d.name}`)
          .sort()
      expect(dirents(ws.fs as unknown as typeof nodeFs, './')).toEqual(dirents(nodeFs, './walk/').map((e) => e.replace(/(^|\|)\.\/walk\//g, '$1./').replace(/(^|\|)walk\//g, '$1')))
    } finally {
      process.chdir('/')
    }
  })

  it('reads update atime as Linux’s relatime does', async () => {
    const dir = join(oracle, 'atime')
    nodeFs.mkdirSync(dir)
    const ws = await Workspace.open({ watch: watching })
    const script = (fs: typeof nodeFs, at: (p: string) => string) => {
      const newer = (p: string, lstat = false) => {
        const s = lstat ? fs.lstatSync(at(p)) : fs.statSync(at(p))
        return s.atimeMs > s.mtimeMs
      }
      const out: boolean[] = []
      fs.writeFileSync(at('/f'), 'data')
      fs.mkdirSync(at('/d'))
      fs.symlinkSync('f', at('/l'))
      const old = () => {
        fs.utimesSync(at('/f'), 1000, 2000)
        fs.utimesSync(at('/d'), 1000, 2000)
        fs.lutimesSync(at('/l'), 1000, 2000)
      }
      old()
      fs.statSync(at('/f'))
      out.push(newer('/f'))
      fs.readFileSync(at('/f'))
      out.push(newer('/f'))
      fs.readdirSync(at('/d'))
      out.push(newer('/d'))
      fs.readlinkSync(at('/l'))
      out.push(newer('/l', true))
      old()
      const fd = fs.openSync(at('/f'), 'r')
      out.push(newer('/f'))
      fs.readSync(fd, Buffer.alloc(2), 0, 2, 0)
      fs.closeSync(fd)
      out.push(newer('/f'))
      old()
      fs.copyFileSync(at('/f'), at('/g'))
      out.push(newer('/f'))
      return out
    }
    expect(script(ws.fs as unknown as typeof nodeFs, (p) => p)).toEqual(script(nodeFs, (p) => dir + p))
  })

  it('statfs, openAsBlob and promises.lchmod have Node’s shapes', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a.txt': 'hello' } })
    const ours = ws.fs.statfsSync('/')
    const theirs = nodeFs.statfsSync(oracle)
    expect(ours.constructor.name).toBe(theirs.constructor.name)
    expect(Object.keys(ours)).toEqual(Object.keys(theirs))
    expect(typeof ws.fs.statfsSync('/', { bigint: true }).bsize).toBe('bigint')
    expect(await ws.fs.promises.statfs('/a.txt')).toMatchObject({ bsize: 4096 })
    expect(() => ws.fs.statfsSync('/nope')).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'statfs' }))
    const blob = await ws.fs.openAsBlob('/a.txt', { type: 'text/plain' })
    expect([blob.size, blob.type, await blob.text()]).toEqual([5, 'text/plain', 'hello'])
    expect(outcome(() => ws.fs.openAsBlob('/nope'))).toBe(outcome(() => nodeFs.openAsBlob(join(oracle, 'nope'))))
    const lchmod = (fs: typeof nodeFs) => fs.promises.lchmod('/a.txt', 0o600).catch((e: NodeJS.ErrnoException) => `${e.code}: ${e.message}`)
    expect(await lchmod(ws.fs as unknown as typeof nodeFs)).toBe(await lchmod(nodeFs))
  })
})
