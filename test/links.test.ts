/**
 * Hard links: names that share one inode, as on Linux. link(2)'s errors against a real directory;
 * what the names share (content, mode, times, nlink, ino) and what one name's removal leaves;
 * checkpoints, restore, undo, redo, transactions and the durable journal keeping link identity;
 * per-name copy-up of lower files that are hard links on disk (overlayfs without index=on); the
 * work a write through a link costs (counters, not clocks).
 */
import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { syncFsSource } from '../src/adapter-kit.js'
import { MemoryStore, flushEngine } from '../src/adapter-kit.js'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { durableLinkSession } from './support/link-session.js'

type F = typeof nodeFs
const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-links-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let counter = 0
const fresh = (label: string) => {
  const dir = join(base, `${label}-${counter++}`)
  nodeFs.mkdirSync(dir)
  return dir
}

/** The same tree on both sides: a file, a directory, a symlink to each, a dangling link. */
function seed(fs: F, at: (p: string) => string) {
  fs.writeFileSync(at('/f'), 'hi')
  fs.mkdirSync(at('/d'))
  fs.symlinkSync('f', at('/s'))
  fs.symlinkSync('d', at('/sd'))
  fs.symlinkSync('nowhere', at('/dang'))
}

const outcome = (call: () => unknown) => {
  try {
    call()
    return 'ok'
  } catch (error) {
    const e = error as NodeJS.ErrnoException
    return `${e.code} ${e.syscall} ${e.message}`
  }
}

describe('link(2) as Linux does it', () => {
  it('gives the same results and errors as a real directory, in the same order', async () => {
    const real = fresh('real')
    seed(nodeFs, (p) => real + p)
    const ws = await Workspace.open({ autoCheckpoint: false })
    const fs = ws.fs as unknown as F
    seed(fs, (p) => p)
    const cases: [string, string][] = [
      ['nope', 'x'], ['d', 'x'], ['f', 'f'], ['f', 'd'], ['f', 'nodir/x'], ['f', 'f/x'], ['f/', 'x'], ['f', 'x/'],
      ['s', 'ls'], ['sd/', 'x2'], ['sd', 'lsd'], ['dang', 'ldang'], ['f', 'dang'], ['f', '.'], ['f', '..'], ['.', 'x3'],
      ['nope', 'f'], ['d/', 'x4'], ['f', 'd/'], ['f', ''], ['', 'x'], ['f', 's'], ['f', 'sd/x5'], ['nope/x', 'f'], ['f/x', 'q'],
      ['d/..', 'x6'], ['f', 'd/.'], ['d', 'd'], ['d', 'nope/x'], ['f', 'ls/x'],
      // Both names in one directory (resolved once for both): through a symlink, missing, not a directory.
      ['sd/x5', 'sd/x7'], ['d/x5', 'd/x5'], ['d/nope', 'd/x8'], ['nodir/a', 'nodir/b'], ['f/a', 'f/b'], ['s/a', 's/b'], ['dang/a', 'dang/b'], ['sd/x5', 'sd/'],
    ]
    const cwd = process.cwd()
    process.chdir(real)
    try {
      for (const [from, to] of cases) {
        const expected = outcome(() => nodeFs.linkSync(from, to))
        const actual = outcome(() => fs.linkSync(from, to))
        expect(actual, `link(${from}, ${to})`).toBe(expected)
      }
      for (const name of ['ls', 'lsd', 'ldang', 'x5']) {
        const path = name === 'x5' ? 'sd/x5' : name
        const a = fs.lstatSync('/' + path)
        const b = nodeFs.lstatSync(path)
        expect([a.isSymbolicLink(), a.nlink], path).toEqual([b.isSymbolicLink(), b.nlink])
      }
    } finally {
      process.chdir(cwd)
    }
    // The promise and callback forms are the same call.
    await expect(ws.fs.promises.link('/nope', '/y')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'link', path: '/nope', dest: '/y' })
    await ws.fs.promises.link('/f', '/y')
    await new Promise<void>((resolve, reject) => ws.fs.link('/f', '/z', (error) => (error ? reject(error) : resolve())))
    expect(ws.fs.statSync('/f').nlink).toBe(5) // f, d/x5 (made as sd/x5), d/x7 (as sd/x7), y, z
  })
})

describe('names of one inode', () => {
  it('share content, mode, owner, times, nlink and ino; a write through one is seen through all', async () => {
    const ws = await Workspace.open({ lower: { '/a/f': 'lower' }, autoCheckpoint: false })
    const fs = ws.fs
    fs.linkSync('/a/f', '/g')
    fs.linkSync('/g', '/a/h')
    const stats = ['/a/f', '/g', '/a/h'].map((p) => fs.statSync(p))
    expect(new Set(stats.map((s) => s.ino)).size).toBe(1)
    expect(stats.map((s) => s.nlink)).toEqual([3, 3, 3])
    fs.writeFileSync('/g', 'through g')
    expect(fs.readFileSync('/a/f', 'utf8')).toBe('through g')
    fs.appendFileSync('/a/h', '!')
    expect(fs.readFileSync('/g', 'utf8')).toBe('through g!')
    fs.chmodSync('/a/h', 0o600)
    fs.utimesSync('/a/f', 100, 200)
    fs.chownSync('/g', 7, 8)
    for (const path of ['/a/f', '/g', '/a/h']) {
      const s = fs.statSync(path)
      expect([s.mode & 0o7777, s.mtimeMs, s.atimeMs, s.uid, s.gid], path).toEqual([0o600, 200_000, 100_000, 7, 8])
    }
    // A descriptor opened through one name writes the inode.
    const fd = fs.openSync('/a/h', 'r+')
    fs.writeSync(fd, 'T')
    fs.closeSync(fd)
    expect(fs.readFileSync('/a/f', 'utf8')).toBe('Through g!')
    fs.truncateSync('/g', 1)
    expect(fs.readFileSync('/a/h', 'utf8')).toBe('T')
    // copyFile onto a name writes into the inode (open with O_TRUNC), as on Linux.
    fs.writeFileSync('/other', 'copied')
    fs.copyFileSync('/other', '/a/f')
    expect(fs.readFileSync('/g', 'utf8')).toBe('copied')
    expect(fs.statSync('/g').nlink).toBe(3)
  })

  it('removing one name leaves the others, one link fewer; the last name takes the inode', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    const fs = ws.fs
    fs.mkdirSync('/d/e', { recursive: true })
    fs.writeFileSync('/f', 'x')
    fs.linkSync('/f', '/d/g')
    fs.linkSync('/f', '/d/e/h')
    fs.linkSync('/f', '/k')
    const before = fs.statSync('/f').ctimeMs
    fs.unlinkSync('/f')
    expect(fs.statSync('/k').nlink).toBe(3)
    expect(fs.statSync('/k').ctimeMs).toBeGreaterThanOrEqual(before)
    fs.rmSync('/d', { recursive: true })
    expect(fs.statSync('/k').nlink).toBe(1)
    expect(fs.readFileSync('/k', 'utf8')).toBe('x')
    // A rename over another name of the same inode does nothing, as rename(2) says.
    fs.linkSync('/k', '/k2')
    fs.renameSync('/k', '/k2')
    expect(fs.readdirSync('/').sort()).toEqual(['k', 'k2'])
    expect(fs.statSync('/k2').nlink).toBe(2)
    // A rename over a name of another inode drops that name's link.
    fs.writeFileSync('/other', 'o')
    fs.renameSync('/other', '/k2')
    expect(fs.statSync('/k').nlink).toBe(1)
    expect(fs.readFileSync('/k2', 'utf8')).toBe('o')
    // A renamed name (and a renamed directory holding names) stays linked.
    fs.linkSync('/k', '/m')
    fs.mkdirSync('/dir')
    fs.renameSync('/m', '/dir/m')
    fs.renameSync('/dir', '/dir2')
    fs.writeFileSync('/dir2/m', 'via renamed')
    expect(fs.readFileSync('/k', 'utf8')).toBe('via renamed')
    expect(fs.statSync('/k').nlink).toBe(2)
    fs.unlinkSync('/k')
    fs.unlinkSync('/dir2/m')
    expect(fs.existsSync('/dir2/m')).toBe(false)
  })

  it('a descriptor keeps its inode when its name goes and another stays, as on a real directory', async () => {
    const sequence = (fs: F, at: (p: string) => string) => {
      const out: unknown[] = []
      fs.writeFileSync(at('/f'), 'one')
      fs.linkSync(at('/f'), at('/g'))
      const fd = fs.openSync(at('/f'), 'r+')
      fs.unlinkSync(at('/f'))
      fs.writeSync(fd, 'ONE', 0)
      out.push(fs.fstatSync(fd).nlink)
      const buffer = Buffer.alloc(3)
      fs.readSync(fd, buffer, 0, 3, 0)
      out.push(buffer.toString())
      fs.closeSync(fd)
      out.push(fs.readFileSync(at('/g'), 'utf8'))
      fs.linkSync(at('/g'), at('/h'))
      const fd2 = fs.openSync(at('/g'), 'a')
      fs.renameSync(at('/g'), at('/k'))
      fs.writeSync(fd2, '+')
      fs.closeSync(fd2)
      out.push(fs.readFileSync(at('/h'), 'utf8'), fs.readFileSync(at('/k'), 'utf8'), fs.statSync(at('/k')).nlink)
      return out
    }
    const real = fresh('real')
    const ws = await Workspace.open({ autoCheckpoint: false })
    expect(sequence(ws.fs as unknown as F, (p) => p)).toEqual(sequence(nodeFs, (p) => real + p))
  })

  it('a symlink can be hard-linked (link does not follow it)', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/t', 'target')
    ws.fs.symlinkSync('t', '/s')
    ws.fs.linkSync('/s', '/s2')
    expect(ws.fs.lstatSync('/s2').isSymbolicLink()).toBe(true)
    expect(ws.fs.lstatSync('/s').nlink).toBe(2)
    expect(ws.fs.readFileSync('/s2', 'utf8')).toBe('target')
    expect(ws.fs.statSync('/t').nlink).toBe(1)
  })
})

describe('link identity through the engine', () => {
  it('checkpoints, restore, undo, redo and diff keep the names linked', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    const fs = ws.fs
    fs.writeFileSync('/f', 'one')
    fs.linkSync('/f', '/g')
    const one = await ws.checkpoint({ name: 'one' })
    fs.writeFileSync('/g', 'two')
    expect(ws.diff(one.id).map((c) => `${c.type} ${c.path}`)).toEqual(['modified /f', 'modified /g'])
    expect(ws.diff(one.id)[0].patch).toContain('+two')
    const two = await ws.checkpoint({ name: 'two' })
    fs.unlinkSync('/f')
    await ws.restore(one.id)
    expect(fs.readFileSync('/f', 'utf8')).toBe('one')
    fs.writeFileSync('/f', 'after restore')
    expect(fs.readFileSync('/g', 'utf8')).toBe('after restore')
    expect(fs.statSync('/g').nlink).toBe(2)
    await ws.restore(two.id)
    expect([fs.readFileSync('/g', 'utf8'), fs.statSync('/g').nlink]).toEqual(['two', 2])
    // Undo and redo of a link, an unlink and a write through a name.
    fs.linkSync('/g', '/h')
    fs.unlinkSync('/f')
    fs.writeFileSync('/h', 'three')
    await ws.undo()
    expect(fs.readFileSync('/g', 'utf8')).toBe('two')
    await ws.undo()
    expect(fs.statSync('/f').nlink).toBe(3)
    await ws.undo()
    expect([fs.existsSync('/h'), fs.statSync('/f').nlink]).toEqual([false, 2])
    await ws.redo()
    expect(fs.statSync('/h').nlink).toBe(3)
    fs.writeFileSync('/h', 'four')
    expect(fs.readFileSync('/f', 'utf8')).toBe('four')
    // What an operation shows names the path it was made through, never the inode table.
    const last = ws.history()[0]
    expect(ws.operation(last.id)!.diff.map((d) => d.path)).toEqual(['/h'])
  })

  it('a transaction commits links with their inode', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/f', 'x')
    await ws.transaction((fs) => {
      fs.linkSync('/f', '/g')
      fs.writeFileSync('/g', 'in transaction')
    })
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('in transaction')
    ws.fs.writeFileSync('/f', 'after')
    expect([ws.fs.readFileSync('/g', 'utf8'), ws.fs.statSync('/g').nlink]).toEqual(['after', 2])
    await ws.undo()
    await ws.undo()
    expect([ws.fs.existsSync('/g'), ws.fs.statSync('/f').nlink, ws.fs.readFileSync('/f', 'utf8')]).toEqual([false, 1, 'x'])
  })

  it("a transaction that only sets a hard-linked file's times records them under one of its names", async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/f', 'x')
    ws.fs.linkSync('/f', '/g')
    await ws.transaction((fs) => fs.utimesSync('/g', 5000, 5000))
    expect(ws.fs.statSync('/f').mtimeMs).toBe(5_000_000)
    expect(ws.history()[0].paths).toHaveLength(1)
    expect(['/f', '/g']).toContain(ws.history()[0].paths[0])
    await ws.undo()
    expect(ws.fs.statSync('/g').mtimeMs).not.toBe(5_000_000)
  })

  it('a write through a hard link copies O(1) nodes and a checkpoint none, however many names', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    const fs = ws.fs
    fs.mkdirSync('/a/b/c/d', { recursive: true })
    fs.writeFileSync('/a/b/c/d/f', 'x')
    for (let i = 0; i < 200; i++) fs.linkSync('/a/b/c/d/f', `/a/b/c/d/n${i}`)
    await ws.checkpoint()
    let before = ws.counters.nodesCopied
    fs.writeFileSync('/a/b/c/d/n7', 'y')
    // The root and the inode table: the names' directories are untouched.
    expect(ws.counters.nodesCopied - before).toBe(2)
    before = ws.counters.nodesCopied
    await ws.checkpoint()
    expect(ws.counters.nodesCopied - before).toBe(0)
    expect(fs.readFileSync('/a/b/c/d/n199', 'utf8')).toBe('y')
  })
})

describe('durable stores replay links to the same shared inode', () => {
  it('MemoryStore', async () => {
    const store = new MemoryStore()
    await durableLinkSession(() => Workspace.open({ store, autoCheckpoint: false }))
  })

  it('directoryStore', async () => {
    const dir = fresh('store')
    await durableLinkSession(() => Workspace.open({ store: directoryStore(join(dir, 'store')), autoCheckpoint: false }))
  })
})

describe('lower files that are hard links on disk', () => {
  it('are copied up per name, as overlayfs does without index=on', async () => {
    const lower = fresh('lower')
    nodeFs.writeFileSync(join(lower, 'a'), 'shared on disk')
    nodeFs.linkSync(join(lower, 'a'), join(lower, 'b'))
    const ws = await Workspace.open({ lower: directory(lower), autoCheckpoint: false })
    const fs = ws.fs
    // Before any copy-up, both names show the lower inode and its link count.
    expect([fs.statSync('/a').nlink, fs.statSync('/b').nlink, fs.statSync('/a').ino === fs.statSync('/b').ino]).toEqual([2, 2, true])
    fs.appendFileSync('/a', ' + a')
    // The copied-up name keeps the inode number, has one link, and is a file of its own.
    expect([fs.statSync('/a').nlink, fs.statSync('/a').ino === fs.statSync('/b').ino]).toEqual([1, true])
    expect(fs.readFileSync('/b', 'utf8')).toBe('shared on disk')
    expect(nodeFs.readFileSync(join(lower, 'b'), 'utf8')).toBe('shared on disk')
    // Linking a lower name copies it up first; the lower file never changes.
    fs.linkSync('/b', '/c')
    fs.writeFileSync('/c', 'c')
    expect([fs.readFileSync('/b', 'utf8'), fs.statSync('/b').nlink, nodeFs.readFileSync(join(lower, 'a'), 'utf8')]).toEqual(['c', 2, 'shared on disk'])
  })

  // The oracle: kernel overlayfs without index=on, mounted over the same lower directory (as root, in
  // a mount namespace). Compared: link counts, which names share an inode, contents. Not compared: a
  // copied-up name's inode number, which overlayfs keeps only where it can record the origin (the
  // workspace keeps it; this host's upper file system may not).
  it.skipIf(process.getuid?.() !== 0)('match kernel overlayfs without index, name by name', async () => {
    const seedLower = () => {
      const lower = fresh('lower')
      nodeFs.writeFileSync(join(lower, 'a'), 'shared\n')
      nodeFs.linkSync(join(lower, 'a'), join(lower, 'b'))
      nodeFs.writeFileSync(join(lower, 'x'), 'x\n')
      nodeFs.linkSync(join(lower, 'x'), join(lower, 'y'))
      return lower
    }
    const steps = ['echo more >> a', 'ln b c', 'echo via-c >> c', 'chmod 600 y', 'rm x']
    const look = 'for f in a b c x y; do if [ -e $f ]; then echo "$f $(stat -c %h $f) $(cat $f | tr "\\n" "|")"; fi; done; [ "$(stat -c %i b)" = "$(stat -c %i c)" ] && echo "b=c"; [ "$(stat -c %i a)" = "$(stat -c %i b)" ] && echo "a=b"; echo "y $(stat -c %a y)"'
    const lower = seedLower()
    const dir = fresh('kernel')
    for (const sub of ['upper', 'work', 'merged']) nodeFs.mkdirSync(join(dir, sub))
    const script = `mount -t overlay overlay -o lowerdir=${lower},upperdir=${dir}/upper,workdir=${dir}/work,index=off ${dir}/merged && cd ${dir}/merged && ${look} && echo --- && ${steps.map((step) => `${step} && ${look} && echo ---`).join(' && ')}`
    let expected: string
    try {
      expected = execFileSync('unshare', ['-m', 'sh', '-c', script], { encoding: 'utf8' })
    } catch (error) {
      console.log(`[rewindfs] skipping the kernel overlayfs oracle: ${(error as Error).message.split('\n')[0]}`)
      return
    }
    // The same steps in the workspace, over a copy of the same lower directory.
    const ws = await Workspace.open({ lower: directory(seedLower()), autoCheckpoint: false })
    const fs = ws.fs
    const lookHere = () => {
      const lines: string[] = []
      for (const f of ['a', 'b', 'c', 'x', 'y']) if (fs.existsSync('/' + f)) lines.push(`${f} ${fs.statSync('/' + f).nlink} ${fs.readFileSync('/' + f, 'utf8').replaceAll('\n', '|')}`)
      if (fs.existsSync('/c') && fs.statSync('/b').ino === fs.statSync('/c').ino) lines.push('b=c')
      if (fs.statSync('/a').ino === fs.statSync('/b').ino && fs.statSync('/a').nlink > 1) lines.push('a=b')
      lines.push(`y ${(fs.statSync('/y').mode & 0o777).toString(8)}`)
      return lines.join('\n') + '\n---\n'
    }
    let actual = lookHere()
    const run: Record<string, () => void> = {
      'echo more >> a': () => fs.appendFileSync('/a', 'more\n'),
      'ln b c': () => fs.linkSync('/b', '/c'),
      'echo via-c >> c': () => fs.appendFileSync('/c', 'via-c\n'),
      'chmod 600 y': () => fs.chmodSync('/y', 0o600),
      'rm x': () => fs.unlinkSync('/x'),
    }
    for (const step of steps) {
      run[step]()
      actual += lookHere()
    }
    expect(actual).toBe(expected)
    await ws.close()
  })

  it('syncFsSource reports the link count it reads', async () => {
    const lower = fresh('lower')
    nodeFs.writeFileSync(join(lower, 'a'), 'x')
    nodeFs.linkSync(join(lower, 'a'), join(lower, 'b'))
    const ws = await Workspace.open({ lower: syncFsSource(nodeFs, lower), autoCheckpoint: false })
    expect(ws.fs.lstatSync('/b').nlink).toBe(2)
    expect(ws.fs.statSync('/').nlink).toBe(2)
  })
})

describe('flush keeps link identity where the target can', () => {
  const inode = (path: string) => nodeFs.lstatSync(path).ino

  it('a directory target gets hard links, on each flush, with every name of a changed inode', async () => {
    const project = fresh('project')
    nodeFs.writeFileSync(join(project, 'a'), 'a')
    const ws = await Workspace.open({ lower: directory(project), autoCheckpoint: false })
    ws.fs.mkdirSync('/d')
    ws.fs.linkSync('/a', '/d/b')
    const report = await ws.flush()
    expect(report.linksCopied).toBeUndefined()
    expect(report.changes.map((c) => `${c.type} ${c.path}`)).toEqual(['modified /a', 'added /d', 'added /d/b'])
    expect(inode(join(project, 'a'))).toBe(inode(join(project, 'd/b')))
    expect(nodeFs.lstatSync(join(project, 'a')).nlink).toBe(2)
    // A third name alone: all names are written again, as one inode.
    ws.fs.linkSync('/a', '/c')
    await ws.flush()
    expect(new Set(['a', 'c', 'd/b'].map((p) => inode(join(project, p)))).size).toBe(1)
    // A write through one name: every name on disk shows it.
    ws.fs.writeFileSync('/c', 'changed')
    await ws.flush()
    expect(nodeFs.readFileSync(join(project, 'd/b'), 'utf8')).toBe('changed')
    expect(nodeFs.lstatSync(join(project, 'a')).nlink).toBe(3)
    // Another directory as target, and an unlink there.
    const other = fresh('other')
    const target = directory(other)
    await ws.flush(target)
    expect(inode(join(other, 'a'))).toBe(inode(join(other, 'c')))
    ws.fs.unlinkSync('/c')
    await ws.flush(target)
    expect([nodeFs.existsSync(join(other, 'c')), nodeFs.lstatSync(join(other, 'a')).nlink]).toEqual([false, 2])
  })

  it('a target that cannot make hard links gets copies, and the report names them', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'x')
    ws.fs.linkSync('/a', '/b')
    const written: unknown[] = []
    const target = {
      id: 'plain',
      kind: 'plain',
      flusher: flushEngine,
      versions: async (paths: readonly string[]) => paths.map(() => undefined),
      apply: async (entries: readonly { path: string }[]) => {
        written.push(...entries)
        return entries.map(() => 'v')
      },
    }
    const report = await ws.flush(target)
    expect(report.linksCopied).toEqual([{ target: 'plain', paths: ['/b'] }])
    expect(written.map((e) => [(e as { path: string }).path, (e as { link?: string }).link, new TextDecoder().decode((e as { content: Uint8Array }).content)])).toEqual([
      ['/a', undefined, 'x'],
      ['/b', '/a', 'x'],
    ])
  })
})
