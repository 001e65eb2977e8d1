/**
 * Less common fs paths, each run on a real Linux directory with node:fs and on a workspace: the
 * outcome (result, or the error's class, code, errno, syscall, path, dest and message, the real
 * directory's name taken out) must be the same. Each case was a divergence once.
 */
import * as nodeFs from 'node:fs'
import { inspect, promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { type At, type Fs, fsOracle } from './support/fs-oracle.js'

/** The same small tree on both sides: files, a directory with a subdirectory, links (one dangling). */
function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/d/sub'), { recursive: true })
  fs.writeFileSync(at('/f'), 'hello')
  fs.writeFileSync(at('/d/g'), 'gee')
  fs.mkdirSync(at('/e'))
  fs.symlinkSync('f', at('/lf'))
  fs.symlinkSync('d', at('/ld'))
  fs.symlinkSync('missing', at('/dangle'))
}

const { same } = fsOracle('rewindfs-parity-', seed)

describe('less common paths match node:fs on a real directory', () => {
  it('a name over 255 bytes is ENAMETOOLONG wherever a directory is searched for it (after ENOENT/ENOTDIR of the path before it), 255 bytes is fine', async () => {
    const long = 'a'.repeat(256)
    const wide = 'é'.repeat(128) // 256 bytes in 128 characters
    expect(await same((fs, at) => fs.statSync(at('/' + long)))).toMatchObject({ code: 'ENAMETOOLONG', syscall: 'stat' })
    await same((fs, at) => fs.openSync(at('/' + wide), 'w'))
    await same((fs, at) => fs.mkdirSync(at('/d/' + long)))
    await same((fs, at) => fs.mkdirSync(at('/x/' + long + '/y'), { recursive: true }))
    await same((fs, at) => fs.writeFileSync(at('/d/' + long), 'x'))
    await same((fs, at) => fs.renameSync(at('/f'), at('/' + long)))
    await same((fs, at) => fs.linkSync(at('/f'), at('/' + long)))
    await same((fs, at) => fs.rmSync(at('/' + long), { force: true }))
    await same((fs, at) => fs.statSync(at('/missing/' + long)))
    await same((fs, at) => fs.statSync(at('/f/' + long)))
    await same((fs, at) => fs.existsSync(at('/' + long)))
    await same((fs, at) => fs.promises.readFile(at('/' + long)))
    await same((fs, at) => {
      fs.symlinkSync(long, at('/to-long'))
      return fs.statSync(at('/to-long'))
    })
    await same((fs, at) => {
      fs.writeFileSync(at('/d/' + 'b'.repeat(255)), 'x')
      return fs.readdirSync(at('/d'))
    })
  })

  it('chmod and fchmod need a mode (it was taken as 0: the file became mode 000)', async () => {
    expect(await same((fs, at) => fs.chmodSync(at('/f'), undefined as never))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await same((fs, at) => fs.fchmodSync(fs.openSync(at('/f'), 'r'), null as never))
    await same((fs, at) => fs.promises.chmod(at('/f'), undefined as never))
    await same((fs, at) => {
      fs.chmodSync(at('/f'), '640')
      return fs.statSync(at('/f')).mode.toString(8)
    })
  })

  it('chown drops set-user-ID (and set-group-ID with group execute) of anything but a directory, as Linux does for root too', async () => {
    const modes = (fs: Fs, at: At, path: string, mode: number) => {
      fs.chmodSync(at(path), mode)
      return mode.toString(8)
    }
    for (const mode of [0o6755, 0o6745, 0o4700, 0o2710, 0o2700, 0o1755]) {
      await same((fs, at) => {
        modes(fs, at, '/f', mode)
        fs.chownSync(at('/f'), 0, 0)
        const file = fs.statSync(at('/f')).mode.toString(8)
        modes(fs, at, '/e', mode)
        fs.chownSync(at('/e'), -1, -1)
        const fd = fs.openSync(at('/d/g'), 'r')
        modes(fs, at, '/d/g', mode)
        fs.fchownSync(fd, -1, 0)
        fs.closeSync(fd)
        return [file, fs.statSync(at('/e')).mode.toString(8), fs.statSync(at('/d/g')).mode.toString(8)]
      })
    }
  })

  it('a symlink whose target ends in "/" names a directory: followed to a file it is ENOTDIR', async () => {
    const link = (fs: Fs, at: At, target: string) => fs.symlinkSync(target, at('/slash'))
    expect(await same((fs, at) => (link(fs, at, 'f/'), fs.statSync(at('/slash'))))).toMatchObject({ code: 'ENOTDIR' })
    await same((fs, at) => (link(fs, at, 'f/'), fs.readFileSync(at('/slash'), 'utf8')))
    await same((fs, at) => (link(fs, at, 'f/'), fs.existsSync(at('/slash'))))
    await same((fs, at) => (link(fs, at, 'f/'), fs.realpathSync.native(at('/slash'))))
    await same((fs, at) => (link(fs, at, 'f/'), fs.accessSync(at('/slash'))))
    await same((fs, at) => (link(fs, at, 'lf/'), fs.statSync(at('/slash')).isFile()))
    await same((fs, at) => (link(fs, at, 'd/'), fs.readdirSync(at('/slash'))))
    await same((fs, at) => (link(fs, at, 'ld/'), fs.readdirSync(at('/slash/sub/..'))))
    await same((fs, at) => (link(fs, at, 'f/'), fs.lstatSync(at('/slash')).isSymbolicLink()))
  })

  it('cp of a directory onto "link/" (a link to a directory) copies into the directory it names, as lstat of "link/" follows it', async () => {
    await same((fs, at) => {
      fs.symlinkSync('e', at('/le'))
      fs.cpSync(at('/d'), at('/le/'), { recursive: true })
      return [fs.readdirSync(at('/e')), fs.lstatSync(at('/le')).isSymbolicLink()]
    })
    await same(async (fs, at) => {
      fs.symlinkSync('e', at('/le'))
      await fs.promises.cp(at('/d'), at('/le/'), { recursive: true })
      return fs.readdirSync(at('/e'))
    })
    await same((fs, at) => fs.cpSync(at('/d'), at('/lf/'), { recursive: true }))
  })

  it('readFile and writeFile open with their flag, then read or write: a descriptor not open for that is EBADF', async () => {
    expect(await same((fs, at) => fs.writeFileSync(at('/f'), 'x', { flag: 'r' }))).toMatchObject({ code: 'EBADF', syscall: 'write' })
    await same((fs, at) => fs.promises.writeFile(at('/f'), 'x', { flag: 'rs' }))
    // Nothing to write: no write, no error (a directory opens read-only).
    await same((fs, at) => [fs.writeFileSync(at('/d'), '', { flag: 'r' }), fs.readFileSync(at('/f'), 'utf8')])
    expect(await same((fs, at) => fs.readFileSync(at('/f'), { flag: 'a' }))).toMatchObject({ code: 'EBADF', syscall: 'read' })
    await same((fs, at) => fs.readFileSync(at('/f'), { flag: 'w', encoding: 'utf8' }))
    await same((fs, at) => fs.promises.readFile(at('/new'), { flag: 'wx' }))
    // The open itself did its part: created, truncated.
    await same((fs, at) => {
      for (const flag of ['w', 'ax']) {
        try {
          fs.readFileSync(at('/f' + flag), { flag })
        } catch {}
      }
      try {
        fs.readFileSync(at('/f'), { flag: 'w' })
      } catch {}
      return fs.readdirSync(at('/')).map((name) => [name, fs.lstatSync(at('/' + name)).size])
    })
  })

  it('truncate and ftruncate take a negative length as 0, as Node clamps it; null is not a length', async () => {
    expect(await same((fs, at) => [fs.truncateSync(at('/f'), -5), fs.readFileSync(at('/f'), 'utf8')])).toEqual([undefined, ''])
    await same((fs, at) => {
      const fd = fs.openSync(at('/f'), 'r+')
      fs.ftruncateSync(fd, -1)
      return fs.fstatSync(fd).size
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r+')
      await handle.truncate(-3)
      const size = (await handle.stat()).size
      await handle.close()
      return size
    })
    await same((fs, at) => fs.ftruncateSync(fs.openSync(at('/f'), 'r+'), null as never))
    await same((fs, at) => fs.ftruncateSync(fs.openSync(at('/f'), 'r+'), 1.5))
  })

  it('utimes takes times as Node does (numeric strings, finite numbers, Dates) and stores whole microseconds as libuv does', async () => {
    const times = (fs: Fs, at: At, atime: unknown, mtime: unknown) => {
      fs.utimesSync(at('/f'), atime as number, mtime as number)
      const stat = fs.statSync(at('/f'), { bigint: true })
      return [stat.atimeNs, stat.mtimeNs, fs.statSync(at('/f')).mtimeMs]
    }
    expect(await same((fs, at) => times(fs, at, 1.0000001, 1.123456789))).toEqual([1000000000n, 1123456000n, 1123.456])
    await same((fs, at) => times(fs, at, '', ' 12.5 '))
    await same((fs, at) => times(fs, at, '-1.5', new Date(2500)))
    await same((fs, at) => times(fs, at, Infinity, 1))
    await same((fs, at) => times(fs, at, 1, -Infinity))
    await same((fs, at) => times(fs, at, 'NaN', 1))
    await same((fs, at) => {
      fs.futimesSync(fs.openSync(at('/f'), 'r'), 7.0000019, 8.25)
      return [fs.statSync(at('/f')).atimeMs, fs.statSync(at('/f')).mtimeMs]
    })
  })

  it('cp names an entry below the top as Node does, path.join of the caller\'s paths: in its errors and to the filter', async () => {
    const filtered = await same((fs) => {
      const seen: string[] = []
      fs.cpSync('d/', './c', { recursive: true, filter: (source, destination) => (seen.push(`${source} > ${destination}`), true) })
      return seen
    })
    expect(filtered).toEqual(['d/ > ./c', 'd/g > c/g', 'd/sub > c/sub'])
    await same((fs, at) => {
      const seen: string[] = []
      fs.cpSync(at('/d'), at('/c'), { recursive: true, filter: (source, destination) => (seen.push(`${source} > ${destination}`), true) })
      return seen
    })
    const exists = await same((fs) => {
      fs.cpSync('d', 'e', { recursive: true })
      fs.cpSync('./d/', 'e//', { recursive: true, force: false, errorOnExist: true })
    })
    expect(exists).toMatchObject({ code: 'ERR_FS_CP_EEXIST', path: 'e/g' })
    await same((fs, at) => {
      fs.mkdirSync(at('/c'))
      fs.writeFileSync(at('/c/sub'), 'x')
      fs.cpSync('d', 'c', { recursive: true })
    })
    await same((fs, at) => {
      fs.mkdirSync(at('/c/g'), { recursive: true })
      fs.cpSync(at('/d'), at('/c'), { recursive: true })
    })
  })

  it('cp with preserveTimestamps gives the copy the source\'s access time after the copy read it, and its modification time, to the millisecond', async () => {
    const copied = (fs: Fs, at: At, from: string, to: string, options: nodeFs.CopySyncOptions) => {
      fs.utimesSync(at(from), 100, 200.0045)
      fs.cpSync(at('/' + from.split('/')[1]), at(to), { ...options, preserveTimestamps: true })
      const copy = fs.statSync(at(to + from.slice(from.indexOf('/', 1) === -1 ? from.length : from.indexOf('/', 1))))
      const source = fs.statSync(at(from))
      // The read set the source's access time to now (relatime: it was before its modification time).
      return [source.atimeMs > 1e12, Math.abs(source.atimeMs - copy.atimeMs) < 1, copy.mtimeMs, copy.mtime.getTime(), source.mtime.getTime()]
    }
    // Node's Date of 200004.5 ms is 200005; as seconds, 200.005, whose microseconds libuv cuts to 4999.
    expect(await same((fs, at) => copied(fs, at, '/f', '/n', {}))).toEqual([true, true, 200004.999, 200005, 200005])
    await same((fs, at) => copied(fs, at, '/d/g', '/n', { recursive: true }))
  })

  it('Dirents listed with encoding "buffer" have Buffer names (readdir, opendir)', async () => {
    const names = (entries: nodeFs.Dirent<Buffer | string>[]) => entries.map((entry) => [Buffer.isBuffer(entry.name), String(entry.name), entry.parentPath]).sort()
    expect(await same((fs, at) => names(fs.readdirSync(at('/d'), { encoding: 'buffer', withFileTypes: true })))).toEqual([
      [true, 'g', '/d'],
      [true, 'sub', '/d'],
    ])
    await same(async (fs, at) => names(await fs.promises.readdir(at('/d'), { encoding: 'buffer', withFileTypes: true })))
    await same((fs, at) => {
      const dir = fs.opendirSync(at('/d'), { encoding: 'buffer' as BufferEncoding })
      const entries: nodeFs.Dirent<Buffer | string>[] = []
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) entries.push(entry)
      dir.closeSync()
      return names(entries)
    })
  })

  it('opendir with recursive lists each directory when it is read, breadth first, names as Node joins them; options are checked as Node does', async () => {
    // Order within a directory is the file system's own (hash order on ext4): compared per parent.
    const drain = (dir: nodeFs.Dir) => {
      const entries: string[] = []
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) entries.push(`${entry.parentPath} ${entry.name}`)
      dir.closeSync()
      const parents = [...new Set(entries.map((entry) => entry.split(' ')[0]))]
      return [parents, entries.sort()]
    }
    const deeper = (fs: Fs, at: At) => {
      fs.mkdirSync(at('/d/sub/x/y'), { recursive: true })
      fs.writeFileSync(at('/d/sub/x/i'), '')
      fs.mkdirSync(at('/d/a'))
    }
    const listed = await same((fs, at) => {
      deeper(fs, at)
      return drain(fs.opendirSync(at('/d'), { recursive: true }))
    })
    expect(listed).toEqual([['/d', '/d/sub', '/d/sub/x'], ['/d a', '/d g', '/d sub', '/d/sub x', '/d/sub/x i', '/d/sub/x y']])
    await same((fs, at) => {
      deeper(fs, at)
      return drain(fs.opendirSync('./ld/', { recursive: true }))
    })
    // A directory is listed when it is read: what is made in it before then is seen.
    await same((fs, at) => {
      const dir = fs.opendirSync(at('/d'), { recursive: true })
      const first = dir.readSync()
      fs.writeFileSync(at('/d/sub/late'), '')
      return [first?.name, drain(dir)]
    })
    await same((fs, at) => fs.opendirSync(at('/d'), { bufferSize: 0 }))
    await same((fs, at) => fs.opendirSync(at('/d'), { bufferSize: '3' as never }))
    // A closed Dir's read throws at once, also in its promise and callback forms.
    await same((fs, at) => {
      const dir = fs.opendirSync(at('/d'))
      dir.closeSync()
      let thrown: unknown = 'nothing thrown'
      try {
        void dir.read()
      } catch (error) {
        thrown = error
      }
      return thrown
    })
  })

  it('mkdir, rm and cp check their options as Node does (flags are booleans, cp\'s filter a function)', async () => {
    expect(await same((fs, at) => fs.mkdirSync(at('/m'), { recursive: 'yes' as never }))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await same((fs, at) => fs.rmSync(at('/f'), { recursive: 1 as never }))
    await same((fs, at) => fs.rmSync(at('/f'), { force: 'yes' as never }))
    await same((fs, at) => fs.rmSync(at('/f'), { maxRetries: -1 }))
    await same((fs, at) => fs.rmSync(at('/f'), 'x' as never))
    await same((fs, at) => fs.promises.rm(at('/f'), { retryDelay: 1.5 }))
    await same((fs, at) => fs.cpSync(at('/f'), at('/n'), { filter: 5 as never }))
    await same((fs, at) => fs.cpSync(at('/f'), at('/n'), 5 as never))
    await same((fs, at) => fs.cpSync(at('/f'), at('/n'), { dereference: true, verbatimSymlinks: true }))
    await same((fs, at) => fs.cpSync(at('/d'), at('/n'), { recursive: 'yes' as never }))
    await same((fs, at) => [fs.rmSync(at('/nope'), { force: true }), fs.rmSync(at('/d'), { recursive: true, force: false }), fs.existsSync(at('/d'))])
    await same((fs, at) => fs.rmdirSync(at('/e'), { recursive: 'x' as never }))
    await same((fs, at) => fs.rmdirSync(at('/e'), { maxRetries: -1 }))
    await same((fs, at) => [fs.rmdirSync(at('/e'), { force: 'x' } as never), fs.existsSync(at('/e'))])
    await same((fs, at) => fs.readdirSync(at('/d'), { recursive: 'yes' as never }))
    await same((fs, at) => fs.readdirSync(at('/d'), { withFileTypes: 'yes' as never }).length)
    await same((fs, at) => fs.writeFileSync(at('/f'), 'x', { flush: 'yes' as never }))
    await same((fs, at) => fs.appendFileSync(at('/f'), 'x', { flush: 1 as never }))
    await same((fs, at) => fs.promises.writeFile(at('/f'), 'x', { flush: 1 as never }))
    await same((fs, at) => [fs.writeFileSync(at('/f'), 'x', { flush: true }), fs.readFileSync(at('/f'), 'utf8')])
  })

  it('cp asks the filter first, before it looks at the paths; cpSync refuses a promise from it, cp and promises.cp await it', async () => {
    await same((fs, at) => fs.cpSync(at('/missing'), at('/n'), { filter: () => false }))
    expect(await same((fs, at) => fs.cpSync(at('/f'), at('/n'), { filter: (async () => false) as never }))).toMatchObject({ code: 'ERR_INVALID_RETURN_VALUE' })
    await same((fs, at) => {
      const seen: string[] = []
      try {
        fs.cpSync(at('/d'), at('/n'), { filter: (source) => (seen.push(source), true) })
      } catch (error) {
        seen.push((error as { code: string }).code)
      }
      return seen
    })
    const kept = await same(async (fs, at) => {
      await fs.promises.cp(at('/d'), at('/n'), { recursive: true, filter: async (source) => !source.endsWith('g') })
      return fs.readdirSync(at('/n'))
    })
    expect(kept).toEqual(['sub'])
    await same(async (fs, at) => {
      await fs.promises.cp(at('/d'), at('/n'), { recursive: true, filter: async () => false })
      return fs.existsSync(at('/n'))
    })
    await same(async (fs, at) => fs.promises.cp(at('/missing'), at('/n'), { filter: () => Promise.resolve(false) }))
    await same(
      (fs, at) =>
        new Promise((resolve) =>
          fs.cp('d', 'n', { recursive: true, filter: async (source) => !source.endsWith('sub') }, (error) => resolve(error ?? fs.readdirSync(at('/n')))),
        ),
    )
    await same(async (fs, at) => {
      const seen: string[] = []
      await fs.promises.cp('./d', at('/n'), { recursive: true, filter: async (source, destination) => (seen.push(`${source} > ${destination}`), true) })
      return seen.sort()
    })
    // Argument errors stay synchronous in the callback form.
    await same((fs, at) => fs.cp(at('/d'), at('/n'), { filter: async () => true, recursive: 1 as never }, () => undefined))
  })

  it('symlink takes any type but refuses a string that is not "dir", "file" or "junction"', async () => {
    expect(await same((fs, at) => fs.symlinkSync('x', at('/n'), 'junk' as never))).toMatchObject({ code: 'ERR_FS_INVALID_SYMLINK_TYPE' })
    await same((fs, at) => [fs.symlinkSync('f', at('/n'), 5 as never), fs.readlinkSync(at('/n'))])
    await same((fs, at) => [fs.symlinkSync('d', at('/n'), 'junction'), fs.statSync(at('/n')).isDirectory()])
    await same((fs, at) => fs.promises.symlink('x', at('/n'), 'other'))
  })

  it('bigint stats keep Ns consistent with Ms (Ms is Ns / 1e6 cut toward zero), before 1970 too', async () => {
    const times = (fs: Fs, at: At, atime: string | number, mtime: string | number) => {
      fs.utimesSync(at('/f'), atime, mtime)
      const stat = fs.statSync(at('/f'), { bigint: true })
      return [stat.atimeMs, stat.atimeNs, stat.mtimeMs, stat.mtimeNs]
    }
    expect(await same((fs, at) => times(fs, at, '-1.50025', 1795983943.1234567))).toEqual([-1500n, -1500250000n, 1795983943123n, 1795983943123456000n])
    await same((fs, at) => times(fs, at, 1700000000.999999, '1795983943.000001'))
  })

  it('a symlink with a short target has no blocks (ext4 keeps it in the inode under 60 bytes, tmpfs under 128); a long one a block', async () => {
    const blocks = await same((fs, at) => {
      fs.symlinkSync('a'.repeat(59), at('/short'))
      fs.symlinkSync('a'.repeat(200), at('/long'))
      return [at('/lf'), at('/short'), at('/long')].map((path) => [fs.lstatSync(path).size, fs.lstatSync(path).blocks])
    })
    expect(blocks).toEqual([[1, 0], [59, 0], [200, 8]])
  })

  it('open takes the lowest descriptor number free, as Linux does: a closed one is used again', async () => {
    // Synchronous throughout: on the real side another part of the process may take a free number meanwhile.
    const reuse = await same((fs, at) => {
      const a = fs.openSync(at('/f'), 'r')
      const b = fs.openSync(at('/d/g'), 'r')
      fs.openSync(at('/f'), 'r')
      fs.closeSync(b)
      fs.closeSync(a)
      const first = fs.openSync(at('/d/g'), 'r') // a's number
      const second = fs.openSync(at('/f'), 'r') // b's
      // The number now names the new file: a read through it reads that.
      const bytes = Buffer.alloc(3)
      fs.readSync(first, bytes, 0, 3, 0)
      return [first === a, second === b, bytes.toString()]
    })
    expect(reuse).toEqual([true, true, 'gee'])
  })

  it('read and write take positions, lengths and offsets as Node 20 does', async () => {
    // After writing 'AB' at the start: a write at `position`, then one more at the file position.
    const write = (fs: Fs, at: At, ...args: unknown[]) => {
      const fd = fs.openSync(at('/f'), 'r+')
      fs.writeSync(fd, 'AB')
      const written = (fs.writeSync as (...args: unknown[]) => number)(fd, ...args)
      fs.writeSync(fd, 'Z')
      fs.closeSync(fd)
      return [written, fs.readFileSync(at('/f'), 'latin1')]
    }
    // A position that is not a safe integer from 0 up is the file position (it threw, or wrote before the file).
    expect(await same((fs, at) => write(fs, at, 'x', -1))).toEqual([1, 'ABxZo'])
    for (const position of [-5, 1.5, '3', 3n]) {
      await same((fs, at) => write(fs, at, 'x', position))
      await same((fs, at) => write(fs, at, Buffer.from('x'), 0, 1, position))
    }
    await same((fs, at) => write(fs, at, Buffer.from('xyz'), 1, '1')) // a length not a number: the rest
    await same((fs, at) => write(fs, at, Buffer.from('xyz'), 1, 5))
    await same((fs, at) => write(fs, at, Buffer.from('xyz'), 4))
    await same((fs, at) => write(fs, at, 'x', 0, 'no-such-encoding')) // UTF-8
    await same((fs, at) => write(fs, at, 'abc', 0, 'hex'))
    await same((fs, at) => write(fs, at, 5))
    await same((fs, at) => {
      const fd = fs.openSync(at('/f'), 'r+')
      return [fs.writevSync(fd, [Buffer.from('Q')], -1), fs.writevSync(fd, [Buffer.from('R')], 3.5), fs.readFileSync(at('/f'), 'latin1')]
    })
    // After reading one byte: a read with these arguments into a two-byte buffer.
    const read = (fs: Fs, at: At, ...args: unknown[]) => {
      const fd = fs.openSync(at('/f'), 'r')
      const buffer = Buffer.alloc(2)
      fs.readSync(fd, buffer, 0, 1, null)
      return [(fs.readSync as (...args: unknown[]) => number)(fd, buffer, ...args), buffer.toString('latin1')]
    }
    for (const position of [1.5, -2, 2 ** 53, 2n ** 63n, -2n, '1']) await same((fs, at) => read(fs, at, 0, 1, position))
    for (const length of [1.7, '1', -1, 3]) await same((fs, at) => read(fs, at, 0, length, 0))
    await same((fs, at) => read(fs, at, 3, 1, 0))
    await same((fs, at) => read(fs, at, null))
    await same((fs, at) => read(fs, at, 'x'))
    // A read of nothing is answered before the descriptor is looked at.
    await same((fs, at) => {
      const fd = fs.openSync(at('/f'), 'r')
      fs.closeSync(fd)
      return [fs.readSync(fd, Buffer.alloc(1), 0, 0, 0), fs.readSync(fd, Buffer.alloc(0))]
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r+')
      await handle.write('AB')
      const results = [(await handle.write('x', -1)).bytesWritten, (await handle.read(Buffer.alloc(3), 0, undefined, 1)).bytesRead]
      await handle.close()
      return [results, fs.readFileSync(at('/f'), 'latin1')]
    })
  })

  it('the promise API writes iterables and streams of chunks, as Node does; what came before a failure is written', async () => {
    const written = (write: (fs: Fs, at: At) => Promise<unknown>) => async (fs: Fs, at: At) => {
      let outcome: unknown
      try {
        outcome = await write(fs, at)
      } catch (error) {
        outcome = error
      }
      return [outcome, fs.readFileSync(at('/f'), 'latin1')]
    }
    expect(await same(written((fs, at) => fs.promises.writeFile(at('/f'), ['a', Buffer.from('b')])))).toEqual([undefined, 'ab'])
    await same(written((fs, at) => fs.promises.writeFile(at('/f'), ['6162', Buffer.from('c')], 'hex')))
    await same(
      written((fs, at) =>
        fs.promises.writeFile(
          at('/f'),
          (async function* () {
            yield 'a'
            yield new Uint8Array([98])
          })(),
        ),
      ),
    )
    await same(
      written(async (fs, at) => {
        const { Readable } = await import('node:stream')
        return fs.promises.writeFile(at('/f'), Readable.from(['x', 'y']))
      }),
    )
    await same(written((fs, at) => fs.promises.appendFile(at('/f'), new Set(['!', '?']) as never)))
    await same(
      written((fs, at) =>
        fs.promises.writeFile(
          at('/f'),
          (function* () {
            yield 'ab'
            throw new Error('the source failed')
          })(),
        ),
      ),
    )
    await same(written((fs, at) => fs.promises.writeFile(at('/f'), ['ab', 5 as never])))
    await same(written((fs, at) => fs.promises.writeFile(at('/f'), [[104, 105] as never, new Uint8Array([33]).buffer as never])))
    await same(
      written(async (fs, at) => {
        const handle = await fs.promises.open(at('/f'), 'a')
        await handle.appendFile(['A', 'B'] as never)
        await handle.writeFile(new Set(['C']) as never)
        await handle.close()
      }),
    )
    // The callback and sync forms take strings and bytes only.
    await same((fs, at) => fs.writeFileSync(at('/f'), ['a'] as never))
  })

  it('readFile and writeFile with an aborted signal reject with AbortError before anything is written; a signal aborted between chunks stops there', async () => {
    const aborted = () => {
      const controller = new AbortController()
      controller.abort()
      return controller.signal
    }
    const settled = async (fs: Fs, at: At, call: Promise<unknown>) => {
      try {
        return [await call, fs.readFileSync(at('/f'), 'latin1')]
      } catch (error) {
        const { name, code, message } = error as Error & { code: string }
        return [{ name, code, message }, fs.readFileSync(at('/f'), 'latin1')]
      }
    }
    expect(await same((fs, at) => settled(fs, at, fs.promises.readFile(at('/f'), { signal: aborted() })))).toEqual([
      { name: 'AbortError', code: 'ABORT_ERR', message: 'The operation was aborted' },
      'hello',
    ])
    await same((fs, at) => settled(fs, at, fs.promises.writeFile(at('/f'), 'x', { signal: aborted() })))
    await same((fs, at) => settled(fs, at, fs.promises.appendFile(at('/f'), 'x', { signal: aborted() } as never)))
    await same((fs, at) => settled(fs, at, new Promise((resolve, reject) => fs.readFile(at('/f'), { signal: aborted() }, (error, data) => (error ? reject(error) : resolve(data))))))
    await same((fs, at) => settled(fs, at, new Promise<void>((resolve, reject) => fs.writeFile(at('/f'), 'x', { signal: aborted() }, (error) => (error ? reject(error) : resolve())))))
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'))
      const outcome = await settled(fs, at, handle.readFile({ signal: aborted() }))
      await handle.close()
      return outcome
    })
    await same((fs, at) => {
      const controller = new AbortController()
      const chunks = (async function* () {
        yield 'ab'
        controller.abort()
        yield 'cd'
      })()
      return settled(fs, at, fs.promises.writeFile(at('/f'), chunks, { signal: controller.signal }))
    })
    await same((fs, at) => settled(fs, at, fs.promises.readFile(at('/f'), { signal: {} as never })))
  })

  it('watch resolves its path as the kernel does ("file/" is ENOTDIR); an empty path\'s error has no path; watchFile polls path.resolve of its path', async () => {
    const thrown = (call: () => { close(): void }) => {
      try {
        call().close()
        return 'watching'
      } catch (error) {
        return [error, (error as { filename?: unknown }).filename, 'path' in (error as object)]
      }
    }
    expect(await same((fs, at) => thrown(() => fs.watch(at('/f/'))))).toMatchObject([{ code: 'ENOTDIR', syscall: 'watch' }, '/f/', true])
    await same((fs, at) => thrown(() => fs.watch(at('/lf/'))))
    await same((fs) => thrown(() => fs.watch('')))
    await same((fs, at) => thrown(() => fs.watch(at('/d/sub/..'))))
    const polled = (path: string) => (fs: Fs, at: At) =>
      new Promise((resolve) => {
        const seen: number[][] = []
        const listener = (current: nodeFs.Stats, previous: nodeFs.Stats) => seen.push([current.size, previous.size])
        fs.watchFile(path.startsWith('/') ? at(path) : path, { interval: 20 }, listener)
        setTimeout(() => fs.writeFileSync(at('/f'), 'abc'), 60)
        setTimeout(() => {
          fs.unwatchFile(path.startsWith('/') ? at(path) : path, listener)
          resolve(seen)
        }, 250)
      })
    expect(await same(polled('/f/'))).toEqual([[3, 5]])
    await same(polled('./ld/sub/../../f'))
  })

  it('names and paths come back in the encoding asked for (hex, base64, latin1, buffer), as Node encodes them', async () => {
    expect(await same((fs, at) => fs.readdirSync(at('/d'), 'hex').sort())).toEqual(['67', '737562'])
    await same((fs, at) => fs.readdirSync(at('/d'), { encoding: 'base64', withFileTypes: true }).map((entry) => entry.name).sort())
    await same((fs, at) => fs.readlinkSync(at('/lf'), 'hex'))
    // The real side's paths hold its directory: compared decoded (that directory is then taken out).
    await same((fs) => {
      const resolved = fs.realpathSync('ld/../f', { encoding: 'base64' })
      return [resolved === Buffer.from(Buffer.from(resolved, 'base64').toString()).toString('base64'), Buffer.from(resolved, 'base64').toString()]
    })
    await same((fs) => Buffer.from(fs.realpathSync.native('lf', 'hex'), 'hex').toString())
    await same(async (fs) => fs.promises.readlink('lf', { encoding: 'buffer' }))
    await same((fs, at) => {
      const made = fs.mkdtempSync(at('/d/t'), { encoding: 'buffer' }) as unknown as Buffer
      return [Buffer.isBuffer(made), fs.statSync(made).isDirectory()]
    })
    await same(async (fs, at) => Buffer.isBuffer(await fs.promises.mkdtemp(at('/d/t'), 'buffer')))
  })

  it('open with O_TRUNC truncates a file even opened read-only, as Linux does', async () => {
    expect(
      await same((fs, at) => {
        fs.closeSync(fs.openSync(at('/f'), fs.constants.O_RDONLY | fs.constants.O_TRUNC))
        return fs.readFileSync(at('/f'), 'utf8')
      }),
    ).toBe('')
  })

  it('open with O_CREAT and O_DIRECTORY is EINVAL whatever the path (a file was made), and O_TRUNC on a directory EISDIR, as Linux does', async () => {
    const { O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_TRUNC } = nodeFs.constants
    const outcome = await same((fs, at) =>
      [
        [at('/new'), O_CREAT | O_DIRECTORY],
        [at('/new'), O_CREAT | O_EXCL | O_DIRECTORY],
        [at('/d'), O_CREAT | O_DIRECTORY],
        [at('/f'), O_CREAT | O_DIRECTORY],
        [at('/missing/x'), O_CREAT | O_DIRECTORY],
        [at('/d'), O_RDONLY | O_TRUNC | O_DIRECTORY],
        [at('/d'), O_RDONLY | O_TRUNC],
      ].map(([path, flags]) => {
        try {
          fs.closeSync(fs.openSync(path as string, flags as number))
          return 'opened'
        } catch (error) {
          return (error as NodeJS.ErrnoException).code
        }
      }).concat([fs.existsSync(at('/new')) ? 'made' : 'not made']),
    )
    expect(outcome).toEqual(['EINVAL', 'EINVAL', 'EINVAL', 'EINVAL', 'EINVAL', 'EISDIR', 'EISDIR', 'not made'])
  })

  it('rm\'s callback and promise forms are Node\'s async rimraf: a failed lstat with force is the lstat\'s error, "link/" is done at once', async () => {
    const tree = (fs: Fs, at: At) => (fs.readdirSync(at('/'), { recursive: true }) as string[]).sort()
    expect(await same((fs, at) => fs.promises.rm(at('/f/x'), { force: true, recursive: true }))).toMatchObject({ code: 'ENOTDIR', syscall: 'lstat' })
    await same((fs, at) => new Promise((resolve) => fs.rm(at('/f/x'), { force: true, recursive: true }, resolve)))
    await same((fs, at) => fs.rmSync(at('/f/x'), { force: true, recursive: true }))
    await same(async (fs, at) => [await fs.promises.rm(at('/ld/'), { recursive: true }), tree(fs, at)])
    await same((fs, at) => new Promise((resolve) => fs.rm('ld/', { recursive: true }, (error) => resolve(error ?? tree(fs, at)))))
    await same((fs, at) => fs.rmSync(at('/ld/'), { recursive: true }))
    // Argument errors stay synchronous.
    await same((fs, at) => fs.rm(at('/f'), { recursive: 1 as never }, () => undefined))
    await same(async (fs, at) => [await fs.promises.rm(at('/d'), { recursive: true }), tree(fs, at)])
  })

  it('a path with a NUL byte is refused naming the argument and the path as given; access and copyFile take their mode as Node 20 does', async () => {
    const nul = 'x\0y'
    expect(await same((fs, at) => fs.renameSync(at('/f'), nul))).toMatchObject({ message: expect.stringContaining("'newPath'") })
    await same((fs) => fs.writeFileSync(nul, 'x'))
    await same((fs, at) => fs.linkSync(at('/f'), nul))
    await same((fs) => fs.mkdtempSync(nul))
    await same((fs, at) => fs.copyFileSync(at('/f'), nul))
    await same((fs, at) => fs.symlinkSync('f', nul))
    for (const mode of [null, 1.5, -1, 8, 2 ** 31, '1', true]) {
      await same((fs, at) => fs.accessSync(at('/f'), mode as never))
      await same((fs, at) => [fs.copyFileSync(at('/f'), at('/n'), mode as never), fs.existsSync(at('/n'))])
    }
    await same((fs, at) => fs.promises.access(at('/f'), 8))
  })

  it('util.promisify of read, write, readv and exists resolves as Node\'s custom forms do; fs.read makes its own buffer when given none', async () => {
    const opened = (fs: Fs, at: At, flags = 'r') => fs.openSync(at('/f'), flags)
    const read = await same(async (fs, at) => {
      const { bytesRead, buffer } = await promisify(fs.read)(opened(fs, at), Buffer.alloc(3), 0, 3, 0)
      return [bytesRead, buffer.toString()]
    })
    expect(read).toEqual([3, 'hel'])
    await same(async (fs, at) => {
      const { bytesWritten, buffer } = await promisify(fs.write)(opened(fs, at, 'r+'), Buffer.from('ab'), 0, 2, 0)
      return [bytesWritten, buffer.toString(), fs.readFileSync(at('/f'), 'utf8')]
    })
    await same(async (fs, at) => {
      const { bytesRead, buffers } = await promisify(fs.readv)(opened(fs, at), [Buffer.alloc(2)])
      return [bytesRead, buffers.map(String)]
    })
    // Node names writev's buffers 'buffer'.
    await same(async (fs, at) => promisify(fs.writev)(opened(fs, at, 'r+'), [Buffer.from('Q')]))
    await same(async (fs, at) => [await promisify(fs.exists)(at('/f')), await promisify(fs.exists)(at('/missing'))])
    const callback = (resolve: (value: unknown) => void) => (error: Error | null, bytesRead: number, buffer: Buffer) =>
      resolve(error ?? [bytesRead, buffer.byteLength, buffer.subarray(0, bytesRead).toString()])
    await same((fs, at) => new Promise((resolve) => fs.read(opened(fs, at), callback(resolve))))
    await same((fs, at) => new Promise((resolve) => fs.read(opened(fs, at), { buffer: Buffer.alloc(4), position: 1 }, callback(resolve))))
    await same((fs, at) => new Promise((resolve) => fs.read(opened(fs, at), { position: 2 } as never, callback(resolve))))
    await same((fs, at) => new Promise((resolve) => fs.read(opened(fs, at), Buffer.alloc(4), callback(resolve))))
  })

  it('readFile and writeFile take an int32 as a descriptor, any other number as a path of the wrong type (it was EBADF)', async () => {
    for (const file of [1.5, 2 ** 31, Number.NaN, -1]) {
      await same((fs) => fs.readFileSync(file))
      await same((fs) => fs.writeFileSync(file, 'x'))
      await same((fs) => fs.appendFileSync(file, 'x'))
    }
    expect(await same((fs) => fs.readFileSync(1.5))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it('errors print as Node\'s: the code after the name in toString(), the first line of the stack and util.inspect', async () => {
    const printed = (run: () => unknown) => {
      try {
        run()
      } catch (error) {
        const e = error as Error
        return [String(e), e.name, e instanceof TypeError, Object.keys(e)]
      }
      return 'no error'
    }
    expect(await same((fs) => printed(() => fs.readFileSync(1.5)))).toContainEqual('TypeError [ERR_INVALID_ARG_TYPE]: The "path" argument must be of type string or an instance of Buffer or URL. Received type number (1.5)')
    await same((fs) => printed(() => fs.readSync(-1, Buffer.alloc(1))))
    expect(await same((fs, at) => printed(() => fs.rmSync(at('/d'))))).toContainEqual('SystemError [ERR_FS_EISDIR]: Path is a directory: rm returned EISDIR (is a directory) /d')
    expect(await same((fs, at) => printed(() => fs.readFileSync(at('/missing'))))).toContainEqual("Error: ENOENT: no such file or directory, open '/missing'")
    // Node writes the code into the stack's first line through its own prepareStackTrace, which the
    // test runner replaces: compared with what plain Node prints, not with node:fs here.
    const ws = await Workspace.open()
    const caught = (run: () => unknown) => {
      try {
        run()
      } catch (error) {
        return error as Error
      }
      throw new Error('no error')
    }
    const typeError = caught(() => ws.fs.readFileSync(1.5 as unknown as string))
    expect(typeError.stack!.split('\n')[0]).toBe(String(typeError))
    expect(inspect(typeError).split('\n')[0]).toBe(String(typeError))
    ws.fs.mkdirSync('/d')
    const systemError = caught(() => ws.fs.rmSync('/d'))
    expect(inspect(systemError).split('\n')[0]).toBe('SystemError [ERR_FS_EISDIR]: Path is a directory: rm returned EISDIR (is a directory) /d')
    expect(inspect(caught(() => ws.fs.readFileSync('/missing'))).split('\n')[0]).toBe("Error: ENOENT: no such file or directory, open '/missing'")
    await ws.close()
  })

  it('a path over PATH_MAX (4095 bytes) is ENAMETOOLONG before anything is looked up or made; 4095 bytes is looked up', async () => {
    /** `call`'s error as code and syscall (paths differ in length between the sides by design). */
    const codeOf = (call: () => unknown) => {
      try {
        call()
        return 'ok'
      } catch (error) {
        return [(error as NodeJS.ErrnoException).code, (error as NodeJS.ErrnoException).syscall]
      }
    }
    /** A path of exactly `bytes` UTF-8 bytes on either side: its root, then components of `unit` (each under NAME_MAX) up to the length. */
    const sized = (at: At, bytes: number, unit = 'x') => {
      let path = at('/')
      while (Buffer.byteLength(path) < bytes) {
        const left = bytes - Buffer.byteLength(path)
        const component = unit.repeat(Math.min(100, Math.floor(left / Buffer.byteLength(unit)))) || 'y'.repeat(left)
        path += Buffer.byteLength(component) + 1 < left ? `${component}/` : component
      }
      return path
    }
    const deep = (at: At) => at('/') + Array.from({ length: 20 }, () => 'a'.repeat(250)).join('/')
    expect(await same((fs, at) => [4095, 4096].map((bytes) => codeOf(() => fs.statSync(sized(at, bytes)))))).toEqual([['ENOENT', 'stat'], ['ENAMETOOLONG', 'stat']])
    await same((fs, at) => [4095, 4096].map((bytes) => codeOf(() => fs.readdirSync(at('/') + '/'.repeat(bytes - Buffer.byteLength(at('/')))))))
    // Two-byte characters: a path of fewer than 4096 characters and more bytes.
    await same((fs, at) => [4095, 4096].map((bytes) => codeOf(() => fs.statSync(sized(at, bytes, 'é')))))
    expect(await same((fs, at) => codeOf(() => fs.mkdirSync(deep(at), { recursive: true })))).toEqual(['ENAMETOOLONG', 'mkdir'])
    await same((fs, at) => codeOf(() => fs.writeFileSync(deep(at), 'x')))
    await same((fs, at) => codeOf(() => fs.renameSync(at('/f'), deep(at))))
    await same((fs, at) => fs.existsSync(at('/') + '/'.repeat(4096 - Buffer.byteLength(at('/')))))
    await same((fs, at) => fs.readdirSync(at('/')).sort())
  })

  it('a Dirent has Node\'s own keys (name, parentPath, path) and keeps its type under a symbol: JSON and util.inspect show the same', async () => {
    await same((fs, at) =>
      fs
        .readdirSync(at('/d'), { withFileTypes: true })
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((entry) => [Object.keys(entry), JSON.stringify(entry), inspect(entry, { breakLength: Number.POSITIVE_INFINITY }), entry.isFile(), entry.isDirectory(), entry.isSymbolicLink()]),
    )
    await same((fs, at) => fs.readdirSync(at('/'), { withFileTypes: true }).map((entry) => [entry.name, entry.isFile(), entry.isDirectory(), entry.isSymbolicLink()]).sort())
  })

  it('JSON.stringify of a Stats shows its Dates after the fields, as Node\'s does', async () => {
    const json = await same((fs, at) => {
      fs.utimesSync(at('/f'), 1000.0005, 2000.25)
      const shown = JSON.parse(JSON.stringify(fs.statSync(at('/f'))))
      return [Object.keys(shown).slice(-5), shown.atime, shown.mtime]
    })
    expect(json).toEqual([['birthtimeMs', 'atime', 'mtime', 'ctime', 'birthtime'], '1970-01-01T00:16:40.000Z', '1970-01-01T00:33:20.250Z'])
  })

  it('a Stats keeps its Dates through a spread, Object.keys and a structured clone (a worker\'s postMessage), as Node 20\'s own properties do', async () => {
    const kept = await same((fs, at) => {
      fs.utimesSync(at('/f'), 1000.0005, 2000.25)
      const stats = [fs.statSync(at('/f')), fs.statSync(at('/f'), { bigint: true })]
      return stats.map((stat) => {
        const spread = { ...stat }
        const cloned = structuredClone(stat)
        return [Object.keys(stat), spread.mtime instanceof Date && spread.mtime.toISOString(), cloned.atime instanceof Date && cloned.atime.toISOString(), typeof cloned.mtimeMs]
      })
    })
    expect((kept as unknown[][]).map((entry) => entry.slice(1))).toEqual([
      ['1970-01-01T00:33:20.250Z', '1970-01-01T00:16:40.000Z', 'number'],
      ['1970-01-01T00:33:20.250Z', '1970-01-01T00:16:40.000Z', 'bigint'],
    ])
  })
})
