/**
 * Libraries that take an fs object or patch one, given `ws.fs` as users hand it to them, each run
 * beside the same calls on a real Linux directory through node:fs (the oracle of the parity tests).
 * Each case was a divergence once: what the library does with Node's fs must work with ours.
 */
import type * as nodeFs from 'node:fs'
import gracefulFs from 'graceful-fs'
import git from 'isomorphic-git'
import { describe, expect, it } from 'vitest'
import { type At, type Fs, fsOracle } from './support/fs-oracle.js'

function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/d/sub'), { recursive: true })
  fs.writeFileSync(at('/f'), 'hello\nworld\n')
  fs.writeFileSync(at('/d/g'), 'gee')
}

const { same } = fsOracle('rewindfs-consumers-', seed)

/** A stream's chunks as text, or the error it ended with. */
function drained(stream: NodeJS.ReadableStream): Promise<unknown> {
  const chunks: string[] = []
  return new Promise((resolve) => {
    stream.on('data', (chunk) => chunks.push(String(chunk)))
    stream.on('end', () => resolve(chunks))
    stream.on('error', resolve)
  })
}

function finished(stream: NodeJS.WritableStream): Promise<unknown> {
  return new Promise((resolve) => {
    stream.on('finish', () => resolve('finished'))
    stream.on('error', resolve)
  })
}

describe('libraries that take an fs object', () => {
  it('ReadStream and WriteStream are called without new and applied to an object a subclass made, as Node\'s are (they were ES classes: "cannot be invoked without \'new\'")', async () => {
    expect(
      await same(async (fs, at) => {
        const Read = fs.ReadStream as unknown as (path: string, options?: object) => NodeJS.ReadableStream
        const stream = Read(at('/f'), { start: 6 })
        return [stream instanceof fs.ReadStream, await drained(stream)]
      }),
    ).toEqual([true, ['world\n']])
    await same(async (fs, at) => {
      const Write = fs.WriteStream as unknown as (path: string) => NodeJS.WritableStream
      const stream = Write(at('/w'))
      stream.end('written')
      return [await finished(stream), fs.readFileSync(at('/w'), 'utf8')]
    })
    // The old way of subclassing a constructor function, which graceful-fs uses.
    await same(async (fs, at) => {
      function Legacy(this: object, path: string) {
        ;(fs.ReadStream as unknown as (this: object, path: string, options: object) => void).call(this, path, { end: 3 })
      }
      Legacy.prototype = Object.create(fs.ReadStream.prototype)
      const stream = new (Legacy as unknown as new (path: string) => NodeJS.ReadableStream)(at('/f'))
      return [stream instanceof fs.ReadStream, await drained(stream)]
    })
  })

  it('graceful-fs gracefulify(ws.fs) (what fs-extra does to the fs it uses): its streams, callbacks and promises work', async () => {
    expect(
      await same(async (fs, at) => {
        // A copy: gracefulify patches the object it is given, and node:fs is this process's.
        const g = gracefulFs.gracefulify({ ...fs } as typeof gracefulFs)
        const out: unknown[] = []
        const write = g.createWriteStream(at('/d/s'))
        write.end('streamed')
        out.push(await finished(write))
        out.push(await drained(g.createReadStream(at('/d/s'), { start: 1, end: 3 })))
        out.push(await drained(g.createReadStream(at('/missing'))))
        out.push(await new Promise((resolve) => g.readdir(at('/d'), (error, names) => resolve(error ?? names))))
        out.push(await new Promise((resolve) => g.readFile(at('/d/g'), 'utf8', (error, text) => resolve(error ?? text))))
        out.push(await new Promise((resolve) => g.open(at('/missing'), 'r', (error) => resolve(error))))
        out.push(await g.promises.readFile(at('/d/s'), 'utf8'))
        return out
      }),
    ).toMatchObject(['finished', ['tre'], { code: 'ENOENT' }, ['g', 's', 'sub'], 'gee', { code: 'ENOENT', syscall: 'open' }, 'streamed'])
  })
})

describe('what libraries pass to the calls', () => {
  it('readFile with a signal aborted right after the call rejects with AbortError, as Node\'s does (it checks after opening): promise, callback and FileHandle forms (they resolved with the content)', async () => {
    const aborted = { name: 'AbortError', code: 'ABORT_ERR' }
    expect(
      await same(async (fs, at) => {
        const controller = new AbortController()
        const reading = fs.promises.readFile(at('/f'), { signal: controller.signal, encoding: 'utf8' })
        controller.abort()
        return await reading
      }),
    ).toMatchObject(aborted)
    expect(
      await same(async (fs, at) => {
        const controller = new AbortController()
        const reading = new Promise((resolve) => fs.readFile(at('/f'), { signal: controller.signal }, (error, data) => resolve(error ?? data)))
        controller.abort()
        return await reading
      }),
    ).toMatchObject(aborted)
    expect(
      await same(async (fs, at) => {
        await using handle = await fs.promises.open(at('/f'))
        const controller = new AbortController()
        const reading = handle.readFile({ signal: controller.signal })
        controller.abort()
        return await reading
      }),
    ).toMatchObject(aborted)
    // A signal never aborted reads as without one; errors stay the file's.
    await same(async (fs, at) => [await fs.promises.readFile(at('/f'), { signal: new AbortController().signal, encoding: 'utf8' }), await fs.promises.readFile(at('/missing'), { signal: new AbortController().signal }).catch((error: unknown) => error)])
    await same(async (fs, at) => {
      await using handle = await fs.promises.open(at('/d/g'))
      return await handle.readFile({ signal: new AbortController().signal, encoding: 'utf8' })
    })
  })
})

describe('a tree changing under an open handle', () => {
  it('a Dir lists the directory it opened, wherever it went before the first read: renamed, removed or replaced (it listed the path then: ENOENT, or the new directory\'s names); opened directories below are opendir\'s errors', async () => {
    const names = async (dir: nodeFs.Dir) => {
      const out: string[] = []
      for await (const entry of dir) out.push(`${entry.parentPath.replace(/^.*\/d$/, 'd')}|${entry.name}`)
      return out.sort()
    }
    expect(
      await same(async (fs, at) => {
        const dir = fs.opendirSync(at('/d'))
        fs.renameSync(at('/d'), at('/moved'))
        return names(dir)
      }),
    ).toEqual(['d|g', 'd|sub'])
    await same(async (fs, at) => {
      const dir = fs.opendirSync(at('/d'))
      fs.renameSync(at('/d'), at('/old'))
      fs.mkdirSync(at('/d'))
      fs.writeFileSync(at('/d/new'), '')
      return names(dir)
    })
    expect(
      await same(async (fs, at) => {
        const dir = fs.opendirSync(at('/d'))
        fs.rmSync(at('/d'), { recursive: true })
        return [dir.readSync(), await names(dir)]
      }),
    ).toEqual([null, []])
    // Its parent renamed: the path it has now is found too.
    await same(async (fs, at) => {
      fs.mkdirSync(at('/top'))
      fs.renameSync(at('/d'), at('/top/d'))
      const dir = await fs.promises.opendir(at('/top/d'))
      fs.renameSync(at('/top'), at('/elsewhere'))
      return names(dir)
    })
    // Names added before the first read are seen, as getdents then sees them.
    await same(async (fs, at) => {
      const dir = fs.opendirSync(at('/d'))
      fs.writeFileSync(at('/d/added'), '')
      return names(dir)
    })
    expect(
      await same(async (fs, at) => {
        fs.mkdirSync(at('/d/sub/deep'))
        const dir = fs.opendirSync(at('/d'), { recursive: true })
        const seen: string[] = []
        for await (const entry of dir) {
          seen.push(entry.name)
          // sub's names are listed as it is read: deep is opened by its path when it is.
          if (entry.name === 'sub') {
            fs.rmdirSync(at('/d/sub/deep'))
            fs.writeFileSync(at('/d/sub/deep'), '')
          }
        }
        return seen
      }),
    ).toMatchObject({ code: 'ENOTDIR', syscall: 'opendir' })
  })

  it('a directory open in a descriptor (as durable writers open one to fsync it) keeps its inode when it is removed or renamed over: fstat, fchmod, futimes, fsync work with no links (fstat was ENOENT naming a path, or the stat of another directory)', async () => {
    const fields = (stats: nodeFs.Stats, ino: number) => [stats.isDirectory(), stats.nlink, stats.mode.toString(8), stats.ino === ino]
    expect(
      await same((fs, at) => {
        const fd = fs.openSync(at('/d'), 'r')
        const { ino } = fs.fstatSync(fd)
        fs.rmSync(at('/d'), { recursive: true })
        return [fields(fs.fstatSync(fd), ino), fs.fstatSync(fd).size]
      }),
    ).toEqual([[true, 0, '40755', true], 0])
    await same((fs, at) => {
      const fd = fs.openSync(at('/d/sub'), 'r')
      const { ino } = fs.fstatSync(fd)
      fs.rmdirSync(at('/d/sub'))
      fs.mkdirSync(at('/d/sub'), 0o700)
      fs.fchmodSync(fd, 0o750)
      fs.futimesSync(fd, 1, 2)
      fs.fsyncSync(fd)
      const stats = fs.fstatSync(fd)
      fs.closeSync(fd)
      return [fields(stats, ino), stats.mtimeMs, fs.statSync(at('/d/sub')).mode.toString(8)]
    })
    await same((fs, at) => {
      const fd = fs.openSync(at('/d/sub'), 'r')
      const { ino } = fs.fstatSync(fd)
      fs.mkdirSync(at('/other'))
      fs.renameSync(at('/other'), at('/d/sub'))
      return fields(fs.fstatSync(fd), ino)
    })
    // Renamed, it is still named: its changes land where it went.
    await same((fs, at) => {
      const fd = fs.openSync(at('/d/sub'), 'r')
      fs.renameSync(at('/d'), at('/moved'))
      fs.fchmodSync(fd, 0o711)
      return [fs.fstatSync(fd).nlink, fs.statSync(at('/moved/sub')).mode.toString(8)]
    })
  })
})

describe('isomorphic-git over ws.fs', () => {
  it('init, add, commit, branch, checkout, merge, status and log over many files give the same commits, trees and worktree as over a real directory', async () => {
    const outcome = await same(async (fs, at) => {
      const dir = at('/repo')
      const author = { name: 'agent', email: 'agent@example.com', timestamp: 1700000000, timezoneOffset: 0 }
      const out: unknown[] = []
      await git.init({ fs, dir, defaultBranch: 'main' })
      for (let i = 0; i < 60; i++) {
        fs.mkdirSync(`${dir}/src/m${i % 7}`, { recursive: true })
        fs.writeFileSync(`${dir}/src/m${i % 7}/f${i}.txt`, `file ${i}\n`.repeat(i + 1))
      }
      fs.writeFileSync(`${dir}/run.sh`, '#!/bin/sh\n', { mode: 0o755 })
      fs.symlinkSync('run.sh', `${dir}/link`)
      await git.add({ fs, dir, filepath: '.' })
      out.push(await git.commit({ fs, dir, message: 'one', author }))
      await git.branch({ fs, dir, ref: 'feature', checkout: true })
      fs.writeFileSync(`${dir}/src/m1/f1.txt`, 'changed on feature\n')
      fs.rmSync(`${dir}/src/m2`, { recursive: true })
      fs.writeFileSync(`${dir}/new.txt`, 'new\n')
      await git.add({ fs, dir, filepath: ['src/m1/f1.txt', 'new.txt'] })
      for (const filepath of await git.listFiles({ fs, dir })) if (filepath.startsWith('src/m2/')) await git.remove({ fs, dir, filepath })
      out.push(await git.commit({ fs, dir, message: 'feature', author }))
      // Back on main the deleted directory comes back and the new file goes.
      await git.checkout({ fs, dir, ref: 'main' })
      out.push(fs.existsSync(`${dir}/new.txt`), fs.readdirSync(`${dir}/src/m2`).length, fs.readFileSync(`${dir}/src/m1/f1.txt`, 'utf8'))
      fs.writeFileSync(`${dir}/src/m3/f3.txt`, 'changed on main\n')
      await git.add({ fs, dir, filepath: 'src/m3/f3.txt' })
      out.push(await git.commit({ fs, dir, message: 'main', author }))
      out.push(await git.merge({ fs, dir, ours: 'main', theirs: 'feature', author, message: 'merge' }))
      await git.checkout({ fs, dir, ref: 'main', force: true })
      fs.writeFileSync(`${dir}/src/m4/f4.txt`, 'dirty')
      out.push(await git.statusMatrix({ fs, dir }))
      out.push((await git.log({ fs, dir })).map((entry) => entry.oid))
      out.push(fs.readdirSync(dir).sort(), (fs.statSync(`${dir}/run.sh`).mode & 0o777).toString(8), fs.readlinkSync(`${dir}/link`))
      return out
    })
    expect(outcome).toHaveLength(12)
  })
})

describe('cp with dereference', () => {
  it('a link back up the tree ends in ELOOP from stat after 40 links in the source path, as Node does (it copied on some 600 levels, until ENAMETOOLONG)', async () => {
    const copied = (fs: Fs, at: At) => fs.readdirSync(at('/copy'), { recursive: true }).length
    expect(
      await same((fs, at) => {
        fs.symlinkSync('..', at('/d/sub/up'))
        try {
          fs.cpSync(at('/d'), at('/copy'), { recursive: true, dereference: true })
        } catch (error) {
          // How far it got depends on the order names are listed in; 40 levels of two entries each is the bound.
          return [error, copied(fs, at) <= 41 * 4]
        }
      }),
    ).toMatchObject([{ code: 'ELOOP', syscall: 'stat' }, true])
    await same(async (fs, at) => {
      fs.symlinkSync('..', at('/d/sub/up'))
      return fs.promises.cp(at('/d'), at('/copy'), { recursive: true, dereference: true }).catch((error: unknown) => [error, copied(fs, at) <= 41 * 4])
    })
    // Links that do not loop are copied as what they point to, relative paths too.
    await same((fs, at) => {
      fs.symlinkSync('../g', at('/d/sub/lg'))
      fs.symlinkSync('.', at('/top'))
      fs.cpSync('top/d/', 'copy', { recursive: true, dereference: true })
      return fs.readdirSync('copy', { recursive: true, withFileTypes: true }).map((entry) => `${entry.name}:${entry.isFile()}`).sort()
    })
  })
})
