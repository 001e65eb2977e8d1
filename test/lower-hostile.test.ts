/**
 * A directory(path) lower over messy or crafted projects: unreadable files, names the host refuses,
 * FIFOs and devices, directories swapped for links while the workspace reads. node:fs on the same
 * tree is the oracle; what counts is that nothing escapes the root, nothing hangs, and errors are
 * shaped like Node's with the workspace paths the API promises (never where the root lies on the host).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { Confinement } from '../adapters/node-fs/confine.js'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

// World-readable, so the unprivileged user can run a bundled child from here.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lower-hostile-'))
fs.chmodSync(scratch, 0o755)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0

let serial = 0
function project(files: Record<string, string> = {}): string {
  const root = path.join(scratch, `p${serial++}`)
  fs.mkdirSync(root)
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(root + name), { recursive: true })
    fs.writeFileSync(root + name, content)
  }
  return root
}

/** What a call threw, as the fields Node's errors carry. */
function thrown(call: () => unknown): { code?: string; errno?: number; syscall?: string; path?: string; message: string } {
  try {
    call()
  } catch (error) {
    const { code, errno, syscall, path, message } = error as NodeJS.ErrnoException
    return { code, errno, syscall, path, message }
  }
  throw new Error('expected a throw')
}

/**
 * Runs `script` (an ES module importing the repository by paths relative to test/) in a child
 * process, as the unprivileged test user when `asUser`, and parses what it prints. A child, so a
 * call that hangs fails the test (killed after `timeout`) instead of the test process.
 */
async function runChild(script: string, args: string[], { asUser = false, timeout = 60_000 } = {}): Promise<unknown> {
  const child = path.join(scratch, `child${serial++}.mjs`)
  await build({ stdin: { contents: script, resolveDir: import.meta.dirname, loader: 'ts' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
  const command = asUser ? ['runuser', '-u', 'rewindfs-exec', '--', process.execPath] : [process.execPath]
  const result = spawnSync(command[0], [...command.slice(1), child, ...args], { encoding: 'utf8', timeout })
  expect(result.signal, `the child was killed: ${result.stderr}`).toBeNull()
  expect(result.status, result.stderr).toBe(0)
  return JSON.parse(result.stdout)
}

const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
const asUser = asRoot && capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')

describe('errors from the disk name workspace paths, as the API promises', () => {
  it('a name longer than the host allows (ENAMETOOLONG) names the workspace path in every read, the walker and a flush', async () => {
    const root = project({ '/a.txt': 'a' })
    const source = directory(root)
    const long = '/' + 'n'.repeat(300)
    const oracle = thrown(() => fs.lstatSync(root + long))
    expect(oracle).toMatchObject({ code: 'ENAMETOOLONG', errno: -36 })
    for (const [what, call] of [
      ['stat', () => source.stat(long)],
      ['readFile', () => source.readFile(long)],
      ['readdir', () => source.readdir(long)],
      ['readlink', () => source.readlink(long)],
      ['walker.read', () => source.walker().read(long)],
      ['walker.list', () => source.walker().list(long)],
      ['walker.stat', () => source.walker().stat(long)],
    ] as const) {
      const error = thrown(call)
      expect(error, what).toEqual({ code: 'ENAMETOOLONG', errno: -36, syscall: error.syscall, path: long, message: `ENAMETOOLONG: name too long, ${error.syscall} '${long}'` })
    }

    // A path the workspace takes (under PATH_MAX) that is too long below the root on the host: the
    // flush is refused before anything is written, naming what the agent wrote.
    const ws = await Workspace.open({ lower: source })
    const deep = ('/' + 'd'.repeat(200)).repeat(20)
    const name = deep + '/' + 'f'.repeat(60)
    expect(name.length).toBeLessThan(4096)
    expect((root + name).length).toBeGreaterThan(4096)
    ws.fs.mkdirSync(deep, { recursive: true })
    ws.fs.writeFileSync(name, 'x')
    const refused = await ws.flush().then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error,
    )
    expect(refused).toMatchObject({ code: 'ENAMETOOLONG' })
    expect(refused!.path?.startsWith(root)).toBe(false)
    expect(refused!.message).not.toContain(root)
    expect(fs.readdirSync(root).filter((entry) => entry !== '.rewindfs-flush')).toEqual(['a.txt'])
    await ws.close()
  })

  it.skipIf(!asUser)('a file or directory the user may not read (EACCES) names the workspace path, as node:fs names its argument (run as an unprivileged user)', async () => {
    const root = project({ '/secret': 'root only', '/xonly/known.txt': 'k', '/closed/f': 'f' })
    fs.chmodSync(root + '/secret', 0o000)
    fs.chmodSync(root + '/xonly', 0o311)
    fs.chmodSync(root + '/closed', 0o000)
    const seen = (await runChild(
      `
      import { directory } from '../adapters/node-fs/index.js'
      import { Workspace } from '../src/index.js'
      const ws = await Workspace.open({ lower: directory(process.argv[2]) })
      const shape = (call) => { try { call(); return 'read' } catch (error) { return { code: error.code, errno: error.errno, syscall: error.syscall, path: error.path, message: error.message } } }
      console.log(JSON.stringify({
        read: shape(() => ws.fs.readFileSync('/secret')),
        list: shape(() => ws.fs.readdirSync('/xonly')),
        listClosed: shape(() => ws.fs.readdirSync('/closed')),
        readInXOnly: ws.fs.readFileSync('/xonly/known.txt', 'utf8'),
      }))
      await ws.close()
      `,
      [root],
      { asUser: true },
    )) as Record<string, unknown>
    expect(seen).toEqual({
      read: { code: 'EACCES', errno: -13, syscall: 'open', path: '/secret', message: "EACCES: permission denied, open '/secret'" },
      list: { code: 'EACCES', errno: -13, syscall: 'scandir', path: '/xonly', message: "EACCES: permission denied, scandir '/xonly'" },
      listClosed: { code: 'EACCES', errno: -13, syscall: 'scandir', path: '/closed', message: "EACCES: permission denied, scandir '/closed'" },
      readInXOnly: 'k',
    })
  })
})

describe('FIFOs and devices in the project', () => {
  /** Every read of `name` in `root` (the source's and its walker's), each as the error it threw or 'read'. */
  const READS = `
    import { directory } from '../adapters/node-fs/index.js'
    import { Workspace } from '../src/index.js'
    const [root, ...names] = process.argv.slice(2)
    const source = directory(root)
    const ws = await Workspace.open({ lower: source })
    const shape = (call) => { try { call(); return 'read' } catch (error) { return { code: error.code, syscall: error.syscall, path: error.path } } }
    const out = { listed: ws.fs.readdirSync('/').sort() }
    for (const name of names) {
      out[name] = {
        ws: shape(() => ws.fs.readFileSync(name)),
        source: shape(() => source.readFile(name)),
        walker: shape(() => source.walker().read(name)),
      }
    }
    await ws.close()
    console.log(JSON.stringify(out))
  `
  const absent = (name: string) => ({ code: 'ENOENT', syscall: 'open', path: name })

  it('a FIFO with no writer is not shown, and reading it (as the workspace does when a file stood there at its lookup) fails at once with ENOENT instead of hanging', async () => {
    const root = project({ '/a.txt': 'a' })
    execFileSync('mkfifo', [root + '/pipe'])
    const seen = await runChild(READS, [root, '/pipe'], { timeout: 20_000 })
    // The source is asked directly, as the workspace asks it when a file was there at its lookup.
    expect(seen).toEqual({ listed: ['a.txt'], '/pipe': { ws: absent('/pipe'), source: absent('/pipe'), walker: absent('/pipe') } })
  })

  it('a flush that would put a file where a FIFO is (the workspace saw nothing there) is a conflict, not a silent replacement', async () => {
    const root = project({ '/a.txt': 'a' })
    execFileSync('mkfifo', [root + '/pipe'])
    const ws = await Workspace.open({ lower: directory(root) })
    expect(ws.fs.existsSync('/pipe')).toBe(false)
    ws.fs.writeFileSync('/pipe', 'text')
    await expect(ws.flush()).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [expect.objectContaining({ path: '/pipe' })] })
    expect(fs.lstatSync(root + '/pipe').isFIFO()).toBe(true)
    // Forced, the file takes its place, as asked.
    await ws.flush(undefined, { force: true })
    expect(fs.readFileSync(root + '/pipe', 'utf8')).toBe('text')
    await ws.close()
  })

  it.skipIf(!asRoot)('a character device (/dev/zero made with mknod) is never read without end (run as root)', async () => {
    const root = project({ '/a.txt': 'a' })
    execFileSync('mknod', [root + '/zero', 'c', '1', '5'])
    const seen = await runChild(READS, [root, '/zero'], { timeout: 20_000 })
    expect(seen).toEqual({ listed: ['a.txt'], '/zero': { ws: absent('/zero'), source: absent('/zero'), walker: absent('/zero') } })
  })
})

describe('a directory swapped for a link out of the root while the workspace reads it (TOCTOU)', () => {
  afterEach(() => vi.restoreAllMocks())

  /** A project whose /d can be swapped for a link to a directory outside that has the same names. */
  function swappable() {
    const outside = project({ '/passwd': 'OUTSIDE SECRET', '/only-outside': '' })
    fs.symlinkSync('/etc/hostname', outside + '/lnk')
    const root = project({ '/d/passwd': 'inside', '/d/x': '' })
    fs.symlinkSync('x', root + '/d/lnk')
    // A link on the way makes the source walk the path (resolve) before its call.
    fs.symlinkSync('d', root + '/via')
    const swap = () => {
      fs.renameSync(root + '/d', root + '/d.real')
      fs.symlinkSync(outside, root + '/d')
    }
    const back = () => {
      fs.unlinkSync(root + '/d')
      fs.renameSync(root + '/d.real', root + '/d')
    }
    return { source: directory(root), swap, back }
  }
  const refused = expect.objectContaining({ code: 'EACCES', errno: -13, message: expect.stringMatching(/changed into a link leading outside the directory root/) })

  it("the walker (the agent tools' search) reads, lists, stats and readlinks nothing outside after listing the directory", () => {
    const { source, swap } = swappable()
    const walker = source.walker()
    expect(walker.list('/d').map((entry) => entry.name).sort()).toEqual(['lnk', 'passwd', 'x'])
    swap()
    for (const [what, call] of [
      ['read', () => new TextDecoder().decode(walker.read('/d/passwd'))],
      ['list', () => walker.list('/d').map((entry) => entry.name)],
      ['stat', () => walker.stat('/d/passwd').size],
      ['readlink', () => walker.readlink('/d/lnk')],
    ] as const) {
      expect(call, what).toThrow(refused)
    }
  })

  it("the source's stat, readlink, readdir (names, and with the types a workspace's listing takes) and readFile when the swap comes between their walk of the path and their call", () => {
    const { source, swap, back } = swappable()
    const resolve = Confinement.prototype.resolve
    vi.spyOn(Confinement.prototype, 'resolve').mockImplementation(function (this: Confinement, ...args: Parameters<Confinement['resolve']>) {
      const host = resolve.apply(this, args)
      swap()
      return host
    })
    for (const [what, call] of [
      ['stat', () => source.stat('/via/passwd')?.size],
      ['readlink', () => source.readlink('/via/lnk')],
      ['readdir', () => source.readdir('/via')],
      ['readdirTypes', () => source.readdirTypes('/via')],
      ['readFile', () => new TextDecoder().decode(source.readFile('/via/passwd'))],
    ] as const) {
      expect(call, what).toThrow(refused)
      back()
    }
  })
})

describe('a project opened through a link above it', () => {
  it('follows absolute links written through that path, as Linux and ws.exec do, and still refuses ones that leave', async () => {
    const base = project()
    fs.mkdirSync(base + '/real/app/src', { recursive: true })
    fs.writeFileSync(base + '/real/app/src/main.ts', 'main')
    fs.writeFileSync(base + '/real/secret', 'outside the project')
    fs.symlinkSync(base + '/real', base + '/alias') // as macOS's /tmp, or a /home that is a link
    fs.symlinkSync(base + '/alias/app/src', base + '/real/app/through-alias')
    fs.symlinkSync(base + '/alias/secret', base + '/real/app/alias-outside')
    expect(fs.readFileSync(base + '/alias/app/through-alias/main.ts', 'utf8')).toBe('main')

    const source = directory(base + '/alias/app')
    expect(source.readdir('/through-alias')).toEqual(['main.ts'])
    expect(source.readlink('/through-alias')).toBe('/src')
    expect(source.walker().readlink('/through-alias')).toBe('/src')
    expect(() => source.stat('/alias-outside/x')).toThrow(expect.objectContaining({ code: 'EACCES' }))
    const ws = await Workspace.open({ lower: source })
    expect(ws.fs.readFileSync('/through-alias/main.ts', 'utf8')).toBe('main')
    expect(() => ws.fs.readFileSync('/alias-outside')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    await ws.close()
  })
})

describe('a deep tree', () => {
  it("reads a file 1,000 directories down in a fraction of a second, not 15 (each ancestor's real path is one kernel lookup)", async () => {
    const root = project()
    const deep = '/d'.repeat(1000)
    fs.mkdirSync(root + deep, { recursive: true })
    fs.writeFileSync(root + deep + '/leaf.txt', 'deep')
    const ws = await Workspace.open({ lower: directory(root) })
    const started = performance.now()
    expect(ws.fs.readFileSync(deep + '/leaf.txt', 'utf8')).toBe('deep')
    expect(ws.fs.statSync(deep).isDirectory()).toBe(true)
    // glibc's realpath per ancestor took about 15 s here (cubic in the depth); one lookup each takes 0.2 s.
    expect(performance.now() - started).toBeLessThan(5_000)
    await ws.close()
  })
})
