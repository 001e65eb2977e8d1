/**
 * More fs paths run on a real Linux directory with node:fs and on a workspace, beside
 * fs-parity.test.ts: the outcome (result, or the error's class, code, errno, syscall, path, dest
 * and message, the real directory's name taken out) must be the same. Each case was a divergence a
 * probe found. Where the workspace differs by design (names that are not UTF-8), the test shows
 * what Linux does and what the workspace does instead.
 */
import * as nodeFs from 'node:fs'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { watching } from '../src/watch.js'
import { type At, type Fs, fsOracle, outcome } from './support/fs-oracle.js'

/** The same small tree on both sides: files, a directory, links. */
function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/d/sub'), { recursive: true })
  fs.writeFileSync(at('/f'), 'abcdefghij')
  fs.writeFileSync(at('/d/g'), 'gee')
  fs.symlinkSync('f', at('/lf'))
  fs.symlinkSync('d', at('/ld'))
}

const { same, realDirectory } = fsOracle('rewindfs-parity-2-', seed)

/** A callback-form call's outcome: what it threw at once, or what it called back with. */
function called(run: (callback: (error: Error | null, ...results: unknown[]) => void) => void): Promise<unknown> {
  return new Promise((resolve) => {
    try {
      run((error, ...results) => resolve(error ?? ['called back', ...results]))
    } catch (error) {
      resolve(['thrown', error])
    }
  })
}

/** A path of bytes under `root`: the bytes given are its last name. */
const bytesPath = (root: string, name: number[]) => Buffer.concat([Buffer.from(root + '/'), Buffer.from(name)])

describe('names that are not UTF-8 (a workspace name is a string)', () => {
  it('two Buffer paths that differ in bytes that are not UTF-8 are two files on Linux; the workspace refuses both (EINVAL) rather than make them one', async () => {
    const real = realDirectory()
    nodeFs.writeFileSync(bytesPath(real, [0x61, 0xff]), 'first')
    nodeFs.writeFileSync(bytesPath(real, [0x61, 0xfe]), 'second')
    expect(nodeFs.readdirSync(real, 'buffer').map((name) => name.toString('hex')).sort()).toEqual(['61fe', '61ff'])
    expect(nodeFs.readFileSync(bytesPath(real, [0x61, 0xff]), 'utf8')).toBe('first')
    expect(nodeFs.existsSync(bytesPath(real, [0x61, 0xfd]))).toBe(false)

    const ws = await Workspace.open()
    ws.fs.mkdirSync('/d')
    // It was: one entry 'a\uFFFD', reading 'a\xff' gave "second", and 'a\xfd' existed.
    expect(() => ws.fs.writeFileSync(bytesPath('/d', [0x61, 0xff]), 'first')).toThrow(
      expect.objectContaining({ code: 'EINVAL', errno: -22, syscall: 'open', path: '/d/a\uFFFD', message: "EINVAL: invalid argument: a workspace name must be UTF-8, open '/d/a\uFFFD'" }),
    )
    expect(() => ws.fs.writeFileSync(bytesPath('/d', [0x61, 0xfe]), 'second')).toThrow(expect.objectContaining({ code: 'EINVAL' }))
    expect(ws.fs.readdirSync('/d')).toEqual([])
    expect(() => ws.fs.readFileSync(bytesPath('/d', [0x61, 0xff]))).toThrow(expect.objectContaining({ code: 'EINVAL', syscall: 'open' }))
    expect(ws.fs.existsSync(bytesPath('/d', [0x61, 0xfd]))).toBe(false)
    // UTF-8 bytes are a name as ever, a real U+FFFD and a leading BOM included.
    ws.fs.writeFileSync(Buffer.from('/d/a\uFFFD'), 'replacement character')
    ws.fs.writeFileSync(Buffer.from('\uFEFFbom'), 'bom') // relative to '/': the BOM is part of the name
    expect(ws.fs.readFileSync('/d/a\uFFFD', 'utf8')).toBe('replacement character')
    expect(ws.fs.readdirSync('/')).toContain('\uFEFFbom')
    await ws.close()
  })

  it('every call that takes a path refuses bytes that are not UTF-8 before anything happens, naming its syscall; callback forms call back, promises reject', async () => {
    const ws = await Workspace.open({ watch: watching })
    const fs = ws.fs as unknown as Fs
    fs.mkdirSync('/d')
    fs.writeFileSync('/f', 'x')
    const bad = bytesPath('', [0x62, 0xff]) // '/b\xff'
    const before = JSON.stringify(fs.readdirSync('/', { recursive: true }))
    const history = ws.history().length
    const sync: [string, () => unknown, string][] = [
      ['readFileSync', () => fs.readFileSync(bad), 'open'],
      ['writeFileSync', () => fs.writeFileSync(bad, 'x'), 'open'],
      ['appendFileSync', () => fs.appendFileSync(bad, 'x'), 'open'],
      ['readdirSync', () => fs.readdirSync(bad), 'scandir'],
      ['opendirSync', () => fs.opendirSync(bad), 'opendir'],
      ['mkdirSync', () => fs.mkdirSync(bad), 'mkdir'],
      ['mkdirSync recursive', () => fs.mkdirSync(Buffer.concat([bad, Buffer.from('/x')]), { recursive: true }), 'mkdir'],
      ['mkdtempSync', () => fs.mkdtempSync(bad as never), 'mkdtemp'],
      ['rmSync', () => fs.rmSync(bad, { force: true }), 'lstat'],
      ['rmdirSync', () => fs.rmdirSync(bad), 'rmdir'],
      ['unlinkSync', () => fs.unlinkSync(bad), 'unlink'],
      ['renameSync from', () => fs.renameSync(bad, '/g'), 'rename'],
      ['renameSync to', () => fs.renameSync('/f', bad), 'rename'],
      ['copyFileSync', () => fs.copyFileSync('/f', bad), 'copyfile'],
      ['cpSync', () => fs.cpSync('/d', bad as never, { recursive: true }), 'lstat'],
      ['cpSync dereference', () => fs.cpSync('/f', bad as never, { dereference: true }), 'stat'],
      ['symlinkSync target', () => fs.symlinkSync(bad as never, '/s'), 'symlink'],
      ['symlinkSync path', () => fs.symlinkSync('f', bad as never), 'symlink'],
      ['linkSync', () => fs.linkSync('/f', bad), 'link'],
      ['readlinkSync', () => fs.readlinkSync(bad), 'readlink'],
      ['realpathSync', () => fs.realpathSync(bad), 'lstat'],
      ['realpathSync.native', () => fs.realpathSync.native(bad), 'realpath'],
      ['statSync', () => fs.statSync(bad, { throwIfNoEntry: false }), 'stat'],
      ['lstatSync', () => fs.lstatSync(bad), 'lstat'],
      ['statfsSync', () => fs.statfsSync(bad), 'statfs'],
      ['accessSync', () => fs.accessSync(bad), 'access'],
      ['chmodSync', () => fs.chmodSync(bad, 0o644), 'chmod'],
      ['chownSync', () => fs.chownSync(bad, 0, 0), 'chown'],
      ['lchownSync', () => fs.lchownSync(bad, 0, 0), 'lchown'],
      ['utimesSync', () => fs.utimesSync(bad, 1, 1), 'utime'],
      ['lutimesSync', () => fs.lutimesSync(bad, 1, 1), 'lutime'],
      ['truncateSync', () => fs.truncateSync(bad), 'open'],
      ['openSync', () => fs.openSync(bad, 'w'), 'open'],
      ['openAsBlob', () => fs.openAsBlob(bad), 'open'],
      ['watch', () => fs.watch(bad), 'watch'],
    ]
    for (const [name, call, syscall] of sync) {
      expect(() => call(), name).toThrow(expect.objectContaining({ code: 'EINVAL', syscall, message: expect.stringContaining('a workspace name must be UTF-8') }))
    }
    expect(fs.existsSync(bad)).toBe(false)
    expect(await called((cb) => fs.stat(bad, cb))).toMatchObject({ code: 'EINVAL', syscall: 'stat' })
    expect(await called((cb) => fs.writeFile(bad, 'x', cb))).toMatchObject({ code: 'EINVAL', syscall: 'open' })
    expect(await called((cb) => fs.rm(bad, cb))).toMatchObject({ code: 'EINVAL', syscall: 'lstat' })
    expect(await called((cb) => fs.cp('/f', bad as never, { filter: () => true }, cb))).toMatchObject({ code: 'EINVAL', syscall: 'lstat' })
    for (const call of [
      () => fs.promises.readFile(bad),
      () => fs.promises.writeFile(bad, 'x'),
      () => fs.promises.truncate(bad),
      () => fs.promises.open(bad, 'w'),
      () => fs.promises.mkdir(bad),
      () => fs.promises.rm(bad, { force: true }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'EINVAL' })
    }
    await expect(fs.promises.watch(bad as never)[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'EINVAL', syscall: 'watch' })
    const stream = fs.createWriteStream(bad)
    expect(await new Promise((resolve) => stream.on('error', resolve))).toMatchObject({ code: 'EINVAL', syscall: 'open' })
    expect(JSON.stringify(fs.readdirSync('/', { recursive: true }))).toBe(before)
    expect(ws.history().length).toBe(history)
    await ws.close()
  })

  it('a file: URL whose escapes are not UTF-8 throws URIError as Node does, at once in the callback forms', async () => {
    const url = (at: At) => new URL('file://' + at('/a%FF'))
    await same((fs, at) => fs.statSync(url(at)))
    await same((fs, at) => fs.writeFileSync(url(at), 'x'))
    await same((fs, at) => called((cb) => fs.stat(url(at), cb)))
    await same((fs, at) => fs.promises.stat(url(at)))
    await same((fs, at) => fs.existsSync(url(at)))
  })

  it('a lower directory\'s names that are not UTF-8 are left out of its listings, so nothing reads, shows or flushes a garbled name', async () => {
    const real = realDirectory()
    nodeFs.writeFileSync(bytesPath(real, [0x61, 0xff]), 'lower-ff')
    nodeFs.writeFileSync(bytesPath(real, [0x61, 0xfe]), 'lower-fe')
    nodeFs.mkdirSync(bytesPath(real, [0x64, 0xff]))
    nodeFs.writeFileSync(Buffer.concat([bytesPath(real, [0x64, 0xff]), Buffer.from('/inside')]), 'inside')
    nodeFs.writeFileSync(join(real, 'b\uFFFD'), 'a real U+FFFD')
    nodeFs.writeFileSync(join(real, 'ok'), 'ok')
    const onDisk = () =>
      nodeFs
        .readdirSync(real, 'buffer')
        .filter((name) => !name.toString().startsWith('.rewindfs-flush'))
        .map((name) => name.toString('hex'))
        .sort()
    const disk = onDisk()

    const lower = directory(real)
    const ws = await Workspace.open({ lower })
    // It was: one entry 'a\uFFFD' for both files, whose read was ENOENT.
    expect(ws.fs.readdirSync('/').sort()).toEqual(['b\uFFFD', 'ok'])
    expect(ws.fs.readdirSync('/', 'buffer').map((name) => Buffer.from(name).toString('hex')).sort()).toEqual([Buffer.from('b\uFFFD').toString('hex'), Buffer.from('ok').toString('hex')])
    expect(ws.fs.readdirSync('/', { withFileTypes: true, recursive: true }).map((entry) => entry.name).sort()).toEqual(['b\uFFFD', 'ok'])
    expect(ws.fs.readFileSync('/b\uFFFD', 'utf8')).toBe('a real U+FFFD')
    expect(ws.fs.existsSync('/a\uFFFD')).toBe(false)
    expect(lower.walker().list('/').map((entry) => entry.name).sort()).toEqual(['b\uFFFD', 'ok'])
    // A write through the bytes is refused; the flush writes what the workspace changed, nothing else.
    expect(() => ws.fs.writeFileSync(bytesPath('', [0x61, 0xff]), 'ws-wrote-ff')).toThrow(expect.objectContaining({ code: 'EINVAL' }))
    ws.fs.writeFileSync('/ok', 'changed')
    await ws.flush()
    expect(onDisk()).toEqual(disk)
    expect(nodeFs.readFileSync(bytesPath(real, [0x61, 0xff]), 'utf8')).toBe('lower-ff')
    expect(nodeFs.readFileSync(bytesPath(real, [0x61, 0xfe]), 'utf8')).toBe('lower-fe')
    expect(nodeFs.readFileSync(join(real, 'ok'), 'utf8')).toBe('changed')
    await ws.close()
  })
})

describe('read with a null offset', () => {
  /** A read on a descriptor of '/f' ('abcdefghij') whose position is 1: its bytes read, and those bytes. */
  const handleRead = async (fs: Fs, at: At, ...args: unknown[]) => {
    const handle = await fs.promises.open(at('/f'), 'r')
    try {
      await handle.read(Buffer.alloc(1), 0, 1, null)
      const { bytesRead, buffer } = await (handle.read as (...args: unknown[]) => Promise<{ bytesRead: number; buffer: Buffer }>)(...args)
      return [bytesRead, Buffer.from(buffer.buffer, buffer.byteOffset, bytesRead).toString('latin1')]
    } finally {
      await handle.close()
    }
  }
  const callbackRead = (fs: Fs, at: At, ...args: unknown[]) => {
    const fd = fs.openSync(at('/f'), 'r')
    fs.readSync(fd, Buffer.alloc(1), 0, 1, null)
    const buffer = Buffer.alloc(4)
    return called((cb) => (fs.read as (...args: unknown[]) => void)(fd, buffer, ...args, cb)).then((result) => [result, buffer.toString('latin1')])
  }

  it('FileHandle.read takes a null offset as 0 and a null length as the rest of the buffer, and reads at the position given (it read at the file position)', async () => {
    expect(await same((fs, at) => handleRead(fs, at, Buffer.alloc(4), null, null, 3))).toEqual([4, 'defg'])
    expect(await same((fs, at) => handleRead(fs, at, Buffer.alloc(4), null, 2, 5))).toEqual([2, 'fg'])
    for (const args of [
      [Buffer.alloc(4), undefined, 4, 6],
      [Buffer.alloc(4), { offset: 1 }, 2, 5], // options: their own length and position
      [Buffer.alloc(4), { position: 2 }],
      [Buffer.alloc(4), 0, 4, 2n], // a position not a safe integer: the file position
      [Buffer.alloc(4), 0, 4, -3],
      [Buffer.alloc(4), 0, 2, '1'],
      [Buffer.alloc(4), 1],
      [{ buffer: Buffer.alloc(4), position: 1 }, 0, 1, 5], // options first: the rest is not read
      [null],
      [],
      [5],
      ['x'],
      [[1, 2]],
      [{ buffer: 5 }],
      [Buffer.alloc(4), '1'],
      [Buffer.alloc(4), 0, 5, 0],
      [Buffer.alloc(4), 0, -1, 0],
      [Buffer.alloc(0)],
    ]) {
      await same((fs, at) => handleRead(fs, at, ...args))
    }
  })

  it('the callback read given offset, length and position takes a null offset as 0 (it took null for options); readSync takes null for options, as Node 20 does', async () => {
    expect(await same((fs, at) => callbackRead(fs, at, null, 4, 6))).toEqual([['called back', 4, { bytes: 'ghij', buffer: true }], 'ghij'])
    for (const args of [
      [null, 2, 6],
      [undefined, 4, 6],
      [0, null, 6],
      [0, 4, 6n],
      [0, 4, -1],
      [null],
      [{ offset: 1 }, 2, 6],
      [0, 4, '3'],
    ]) {
      await same((fs, at) => callbackRead(fs, at, ...args))
    }
    await same((fs, at) => {
      const fd = fs.openSync(at('/f'), 'r')
      const buffer = Buffer.alloc(4)
      return [(fs.readSync as (...args: unknown[]) => number)(fd, buffer, null, 4, 3), buffer.toString('latin1'), fs.readSync(fd, buffer, 0, null as never, 3)]
    })
  })
})

describe('stat options', () => {
  it('throwIfNoEntry: false is statSync\'s and lstatSync\'s: the callback and promise stat and lstat fail with ENOENT (they gave undefined)', async () => {
    // Node's own types leave throwIfNoEntry out of the asynchronous forms' options.
    const options = { throwIfNoEntry: false } as never
    expect(await same((fs, at) => fs.statSync(at('/missing'), options))).toBeUndefined()
    await same((fs, at) => fs.lstatSync(at('/missing'), options))
    expect(await same((fs, at) => fs.promises.stat(at('/missing'), options))).toMatchObject({ code: 'ENOENT', syscall: 'stat' })
    await same((fs, at) => fs.promises.lstat(at('/missing'), options))
    expect(await same((fs, at) => called((cb) => fs.stat(at('/missing'), options, cb)))).toMatchObject({ code: 'ENOENT', syscall: 'stat' })
    await same((fs, at) => called((cb) => fs.lstat(at('/missing'), options, cb)))
    await same(async (fs, at) => (await fs.promises.stat(at('/f'), options)).size)
    await same((fs, at) => called((cb) => fs.lstat(at('/lf'), options, (error: Error | null, stats?: nodeFs.Stats) => cb(error, stats?.isSymbolicLink()))))
  })
})

describe('buffers made for the caller', () => {
  it('FileHandle.read without a buffer reads into a new Buffer, as every read Node allocates for (it was a Uint8Array: toString() gave "104,101,…")', async () => {
    const kinds = await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const whole = await handle.read()
      const at1 = await handle.read({ position: 1 })
      const given = await handle.read({ buffer: new Uint8Array(4), position: 2 })
      await handle.close()
      const fd = fs.openSync(at('/f'), 'r')
      const callback = await new Promise((resolve) => fs.read(fd, (error, n, buffer) => resolve(buffer.constructor.name)))
      return [whole.buffer.toString('utf8', 0, whole.bytesRead), whole.buffer.length, whole.buffer.constructor.name, at1.buffer.constructor.name, given.buffer.constructor.name, callback]
    })
    expect(kinds).toEqual(['abcdefghij', 16384, 'Buffer', 'Buffer', 'Uint8Array', 'Buffer'])
  })
})

describe('cp', () => {
  it('force: false and errorOnExist leave a symlink to Node\'s link handling, as they do a directory: an existing destination is not skipped (it was, silently)', async () => {
    /** '/s' with a file and a link to it, copied once to '/t', and links beside; then `call`, and what '/plain' and '/other-link' are after it. */
    const run = (fs: Fs, at: At, call: () => unknown) => {
      fs.mkdirSync(at('/s'))
      fs.writeFileSync(at('/s/f'), 'F')
      fs.symlinkSync('f', at('/s/lf'))
      fs.cpSync(at('/s'), at('/t'), { recursive: true })
      fs.writeFileSync(at('/plain'), 'P')
      fs.symlinkSync('plain', at('/other-link'))
      fs.symlinkSync('elsewhere', at('/dangling'))
      let result: unknown
      try {
        result = call()
      } catch (error) {
        result = error
      }
      return [result, fs.lstatSync(at('/plain')).isSymbolicLink(), fs.readlinkSync(at('/other-link'))]
    }
    expect(await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s'), at('/t'), { recursive: true, force: false })))).toMatchObject([{ code: 'ERR_FS_CP_EINVAL' }, false, 'plain'])
    expect(await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/lf'), at('/plain'), { force: false })))).toMatchObject([{ code: 'EEXIST', syscall: 'symlink' }, false, 'plain'])
    await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/lf'), at('/t/lf'), { force: false, errorOnExist: true })))
    // A link over another link is replaced, force or not (one that leads nowhere fails its stat).
    await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/lf'), at('/other-link'), { force: false })))
    await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/lf'), at('/dangling'), { force: false })))
    await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/lf'), at('/other-link'), { force: false, errorOnExist: true })))
    await same(async (fs, at) => run(fs, at, () => undefined).concat([await fs.promises.cp(at('/s/lf'), at('/plain'), { force: false }).catch((error: unknown) => error)]))
    await same(async (fs, at) => run(fs, at, () => undefined).concat([await called((cb) => fs.cp(at('/s'), at('/t'), { recursive: true, force: false }, cb))]))
    // A file is still skipped, or refused with errorOnExist.
    await same((fs, at) => run(fs, at, () => [fs.cpSync(at('/s/f'), at('/plain'), { force: false }), fs.readFileSync(at('/plain'), 'utf8')]))
    await same((fs, at) => run(fs, at, () => fs.cpSync(at('/s/f'), at('/plain'), { force: false, errorOnExist: true })))
  })
})

describe('cp into a parent named through the source', () => {
  it("takes the destination's parents lexically from the path as given, as Node does: '/d/..' is under '/d' (it was copied into the root)", async () => {
    /** Tries the copy, then lists the root: nothing may have been copied. */
    const run = (fs: Fs, at: At, dest: string) => {
      let result: unknown
      try {
        result = fs.cpSync(at('/d'), at(dest), { recursive: true })
      } catch (error) {
        result = error
      }
      return [result, fs.readdirSync(at('/')).sort(), fs.readdirSync(at('/d')).sort()]
    }
    expect(await same((fs, at) => run(fs, at, '/d/..'))).toMatchObject([{ code: 'ERR_FS_CP_EINVAL' }, ['d', 'f', 'ld', 'lf'], ['g', 'sub']])
    expect(((await same((fs, at) => run(fs, at, '/d/sub/../..'))) as unknown[])[0]).toMatchObject({ code: 'ERR_FS_CP_EINVAL' })
    // Through the link to '/d' as well; and a parent past the source's own is no refusal.
    expect(((await same((fs, at) => run(fs, at, '/ld/sub/../..'))) as unknown[])[0]).toMatchObject({ code: 'ERR_FS_CP_EINVAL' })
    expect(((await same((fs, at) => run(fs, at, '/d/../e'))) as unknown[])[1]).toEqual(['d', 'e', 'f', 'ld', 'lf'])
  })
})

describe('PATH_MAX', () => {
  it('is checked on the path as given, not joined to the working directory: a relative path under 4096 bytes is looked up from a deep one, and what lies deeper than PATH_MAX from the root is made, read and listed through relative paths', async () => {
    const cwdChain = Array.from({ length: 10 }, (_, i) => String(i).repeat(200)).join('/') // 2009 bytes
    const deepChain = Array.from({ length: 9 }, (_, i) => String.fromCharCode(97 + i).repeat(250)).join('/') // 2258 bytes
    const codeOf = (call: () => unknown) => {
      try {
        const result = call()
        return result === undefined ? 'ok' : result
      } catch (error) {
        return [(error as NodeJS.ErrnoException).code, (error as NodeJS.ErrnoException).syscall]
      }
    }
    const scenario = (fs: Fs, at: At, chdir: (path: string) => void) => {
      fs.mkdirSync(at('/' + cwdChain), { recursive: true })
      chdir('/' + cwdChain)
      fs.writeFileSync('f', 'x')
      const shallow = [4081, 4095, 4097].map((bytes) => codeOf(() => fs.statSync('./'.repeat((bytes - 1) / 2) + 'f').size))
      // From here the names go past PATH_MAX from the root (2009 + 2258 bytes and more), each call's path well under it.
      let made = ''
      for (const name of deepChain.split('/')) fs.mkdirSync((made = made ? made + '/' + name : name))
      const deep = [
        codeOf(() => fs.writeFileSync(deepChain + '/g', 'deep')),
        codeOf(() => fs.readFileSync(deepChain + '/g', 'utf8')),
        codeOf(() => fs.readdirSync(deepChain)),
        codeOf(() => fs.renameSync(deepChain + '/g', deepChain + '/h')),
        codeOf(() => fs.linkSync(deepChain + '/h', deepChain + '/i')),
        codeOf(() => fs.statSync(deepChain + '/i').nlink),
        codeOf(() => {
          const fd = fs.openSync(deepChain + '/h', 'r+')
          fs.writeSync(fd, 'D', 0)
          const size = fs.fstatSync(fd).size
          fs.closeSync(fd)
          return [size, fs.readFileSync(deepChain + '/i', 'utf8')]
        }),
        codeOf(() => fs.existsSync(deepChain + '/h')),
        codeOf(() => fs.statSync(at('/' + cwdChain + '/' + deepChain + '/h'))), // the absolute path: over PATH_MAX
        codeOf(() => fs.existsSync(at('/' + cwdChain + '/' + deepChain + '/h'))),
        codeOf(() => fs.symlinkSync('x'.repeat(4096), 'long-target')),
        // A call on two paths looks the first up before it takes the second (ENOENT first).
        codeOf(() => fs.linkSync('missing', './'.repeat(2048) + 'l')),
        codeOf(() => fs.linkSync('f', './'.repeat(2048) + 'l')),
        codeOf(() => fs.renameSync('missing/x', './'.repeat(2048) + 'r')),
        codeOf(() => fs.renameSync('f', './'.repeat(2048) + 'r')),
        codeOf(() => fs.renameSync('./'.repeat(2048) + 'f', 'missing/r')),
        codeOf(() => fs.copyFileSync('missing', './'.repeat(2048) + 'c')),
        codeOf(() => fs.copyFileSync('f', './'.repeat(2048) + 'c')),
        codeOf(() => fs.symlinkSync('f', './'.repeat(2048) + 's')),
        codeOf(() => fs.symlinkSync('./'.repeat(2048) + 'f', 'missing/s')),
        codeOf(() => fs.rmSync(deepChain.split('/')[0], { recursive: true })),
      ]
      return [shallow, deep]
    }
    const real = realDirectory()
    const cwd = process.cwd()
    let node: unknown
    try {
      node = outcome(scenario(nodeFs, (path) => real + path, (path) => process.chdir(real + path)), real)
    } finally {
      process.chdir(cwd)
    }
    const ws = await Workspace.open()
    const workspace = outcome(scenario(ws.fs as unknown as Fs, (path) => path, (path) => ws.chdir(path)), '')
    expect(inspect(workspace, { depth: 8 })).toBe(inspect(node, { depth: 8 }))
    expect(node).toEqual([
      [1, 1, ['ENAMETOOLONG', 'stat']],
      ['ok', 'deep', ['g'], 'ok', 'ok', 2, [4, 'Deep'], true, ['ENAMETOOLONG', 'stat'], false, ['ENAMETOOLONG', 'symlink'], ['ENOENT', 'link'], ['ENAMETOOLONG', 'link'], ['ENOENT', 'rename'], ['ENAMETOOLONG', 'rename'], ['ENAMETOOLONG', 'rename'], ['ENOENT', 'copyfile'], ['ENAMETOOLONG', 'copyfile'], ['ENAMETOOLONG', 'symlink'], ['ENAMETOOLONG', 'symlink'], 'ok'],
    ])
    // The engine's own lookups of such paths (undo, history) are not refused for their length either.
    ws.fs.mkdirSync(deepChain + '/again', { recursive: true })
    ws.fs.writeFileSync(deepChain + '/again/z', 'z')
    await ws.undo()
    expect(ws.fs.existsSync(deepChain + '/again/z')).toBe(false)
    await ws.close()
  })
})

describe('smaller shapes', () => {
  it('a closed FileHandle\'s utimes is EBADF from futimes; futimes names the time it refuses (atime, mtime), utimes and lutimes say time', async () => {
    expect(
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r')
        await handle.close()
        return handle.utimes(1, 1)
      }),
    ).toMatchObject({ code: 'EBADF', syscall: 'futimes', message: 'file closed' })
    for (const times of [[{}, 1], [1, {}]]) {
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r')
        try {
          return await handle.utimes(...(times as [never, never]))
        } finally {
          await handle.close()
        }
      })
      await same((fs, at) => fs.futimesSync(fs.openSync(at('/f'), 'r'), ...(times as [never, never])))
      await same((fs, at) => fs.utimesSync(at('/f'), ...(times as [never, never])))
      await same((fs, at) => fs.lutimesSync(at('/f'), ...(times as [never, never])))
      await same((fs, at) => fs.promises.utimes(at('/f'), ...(times as [never, never])))
    }
  })

  it('readdir takes any true withFileTypes as true (1 gave names)', async () => {
    const types = (list: unknown[]) => list.map((item) => typeof item)
    expect(await same((fs, at) => types(fs.readdirSync(at('/d'), { withFileTypes: 1 } as never)))).toEqual(['object', 'object'])
    await same((fs, at) => types(fs.readdirSync(at('/d'), { withFileTypes: 'yes', recursive: true } as never)))
    await same(async (fs, at) => types(await fs.promises.readdir(at('/d'), { withFileTypes: 1 } as never)))
    await same(async (fs, at) => types((await called((cb) => fs.readdir(at('/d'), { withFileTypes: 1 } as never, cb as never))) as unknown[]))
  })

  it('fs.watch refuses a listener that is there but not a function, once the watch started; watchFile and unwatchFile name their path "path"', async () => {
    // persistent: false, since Node's refused watch keeps running.
    const watch = (fs: Fs, path: string, listener: unknown, options: object = { persistent: false }) => {
      const watcher = (fs.watch as (...args: unknown[]) => nodeFs.FSWatcher)(path, options, listener)
      watcher.close()
      return 'watching'
    }
    expect(await same((fs, at) => watch(fs, at('/f'), 5))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('"listener"') })
    await same((fs, at) => watch(fs, at('/f'), 'x'))
    await same((fs, at) => watch(fs, at('/missing'), 5))
    await same((fs, at) => watch(fs, at('/f'), 0))
    await same((fs, at) => watch(fs, at('/f'), null))
    await same((fs, at) => watch(fs, at('/f'), 5, () => undefined))
    expect(await same((fs) => fs.watchFile(123 as never, () => undefined))).toMatchObject({ message: expect.stringContaining('"path"') })
    await same((fs) => fs.unwatchFile(123 as never))
  })

  it('mkdtemp with an empty prefix is EINVAL, as Node 20 makes it (it made a directory)', async () => {
    expect(await same((fs) => fs.mkdtempSync(''))).toMatchObject({ code: 'EINVAL', syscall: 'mkdtemp', path: 'XXXXX' })
    await same((fs) => called((cb) => fs.mkdtemp('', cb)))
    await same((fs) => fs.promises.mkdtemp(''))
    await same((fs) => fs.mkdtempSync(Buffer.from('') as never))
    await same((fs) => fs.mkdtempSync('', 'no-such-encoding' as never))
  })
})

describe("the 'buffer' encoding, which names no text encoding", () => {
  it("readFile with encoding 'buffer' fails ERR_UNKNOWN_ENCODING after the read, in all three forms (it returned the bytes); writeFile and appendFile refuse it for string data only", async () => {
    const unknown = { name: 'TypeError', code: 'ERR_UNKNOWN_ENCODING', message: 'Unknown encoding: buffer' }
    expect(await same((fs, at) => fs.readFileSync(at('/f'), { encoding: 'buffer' as never }))).toMatchObject(unknown)
    expect(await same((fs, at) => fs.readFileSync(at('/f'), 'buffer' as never))).toMatchObject(unknown)
    expect(await same((fs, at) => fs.promises.readFile(at('/f'), { encoding: 'buffer' as never }))).toMatchObject(unknown)
    expect(await same((fs, at) => called((cb) => fs.readFile(at('/f'), { encoding: 'buffer' as never }, cb)))).toMatchObject(unknown)
    // The read comes first: a missing file is ENOENT.
    expect(await same((fs, at) => fs.readFileSync(at('/missing'), 'buffer' as never))).toMatchObject({ code: 'ENOENT' })
    expect(await same((fs, at) => fs.writeFileSync(at('/w'), 'abc', { encoding: 'buffer' as never }))).toMatchObject(unknown)
    expect(await same((fs, at) => fs.appendFileSync(at('/f'), 'abc', 'buffer' as never))).toMatchObject(unknown)
    expect(await same((fs, at) => (fs.writeFileSync(at('/w'), Buffer.from('abc'), { encoding: 'buffer' as never }), fs.readFileSync(at('/w'), 'latin1')))).toBe('abc')
    // A refused write touches nothing: no file made, none appended to.
    const refusedThen = (fs: Fs, at: At) => {
      for (const write of [() => fs.writeFileSync(at('/w'), 'abc', 'buffer' as never), () => fs.appendFileSync(at('/f'), 'abc', 'buffer' as never)]) expect(write).toThrow()
      return [fs.existsSync(at('/w')), fs.readFileSync(at('/f'), 'latin1')]
    }
    expect(await same(refusedThen)).toEqual([false, 'abcdefghij'])
  })
})

describe('promise members given a FileHandle', () => {
  it('promises.readFile(handle) then an immediate close() fails EBADF from read (it was ERR_OUT_OF_RANGE); closed before the call, the -1 descriptor is out of range as in Node', async () => {
    expect(
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r')
        const read = fs.promises.readFile(handle, 'latin1')
        await handle.close()
        return read
      }),
    ).toMatchObject({ code: 'EBADF', syscall: 'read', message: 'EBADF: bad file descriptor, read' })
    expect(
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r')
        await handle.close()
        return fs.promises.readFile(handle, 'latin1')
      }),
    ).toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    expect(
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r')
        try {
          return await fs.promises.readFile(handle, 'latin1')
        } finally {
          await handle.close()
        }
      }),
    ).toBe('abcdefghij')
  })

  it('promises.writeFile and appendFile(handle) then an immediate close() write everything (writeFile failed EBADF); on a handle closed before, EBADF from write', async () => {
    for (const name of ['writeFile', 'appendFile'] as const) {
      expect(
        await same(async (fs, at) => {
          const handle = await fs.promises.open(at('/w'), 'a')
          const written = fs.promises[name](handle, 'data')
          await handle.close()
          await written
          return fs.readFileSync(at('/w'), 'latin1')
        }),
      ).toBe('data')
      expect(
        await same(async (fs, at) => {
          const handle = await fs.promises.open(at('/w'), 'w')
          await handle.close()
          return fs.promises[name](handle, 'data')
        }),
      ).toMatchObject({ code: 'EBADF', syscall: 'write', message: 'EBADF: bad file descriptor, write' })
    }
  })

  it('promises.truncate takes a path only, as Node 20: a FileHandle is ERR_INVALID_ARG_TYPE (it truncated the file)', async () => {
    expect(
      await same(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'r+')
        try {
          return await fs.promises.truncate(handle as never, 1)
        } finally {
          await handle.close()
        }
      }),
    ).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    expect(await same((fs, at) => fs.readFileSync(at('/f'), 'latin1'))).toBe('abcdefghij')
  })

  it('promises.lchmod rejects with a plain Error, as on Linux where Node has none (it was a TypeError)', async () => {
    expect(await same((fs, at) => fs.promises.lchmod(at('/lf'), 0o644))).toMatchObject({ name: 'Error', code: 'ERR_METHOD_NOT_IMPLEMENTED' })
  })
})
