/**
 * mountOver(ws, root): paths under the project directory go to the workspace, all others to
 * node:fs. What is on the real disk afterwards is the oracle for where each write went.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { hostFs } from '../adapters/node-fs/host-fs.js'
import { mountOver, patchFs } from '../adapters/node-fs/mount.js'
import { Workspace } from '../src/index.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-mount-test-`))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

let serial = 0
function tempDirectory(files: Record<string, string> = {}): string {
  const root = `${scratch}/d${serial++}`
  fs.mkdirSync(root)
  for (const [path, content] of Object.entries(files)) {
    fs.mkdirSync(`${root}${path.slice(0, path.lastIndexOf('/'))}`, { recursive: true })
    fs.writeFileSync(root + path, content)
  }
  return root
}

async function setup() {
  const root = tempDirectory({ '/README.md': 'hello\n', '/src/main.c': 'int main;\n', '/src/old.c': 'old\n' })
  const outside = tempDirectory()
  const ws = await Workspace.open({ lower: directory(root) })
  return { root, outside, ws, mount: mountOver(ws, root) }
}

const errorOf = (body: () => unknown) => {
  try {
    body()
  } catch (error) {
    return error as NodeJS.ErrnoException
  }
  throw new Error('expected a throw')
}

describe('mountOver: routing by path prefix', () => {
  it('sends writes under the root to the workspace, never to disk, and everything else to disk', async () => {
    const { root, outside, ws, mount } = await setup()
    mount.writeFileSync(`${root}/new.txt`, 'virtual')
    // A new file in a directory only the lower layer has: unionfs would write it to disk.
    mount.writeFileSync(`${root}/src/extra.c`, 'extra')
    mount.rmSync(`${root}/src/old.c`)
    mount.writeFileSync(`${outside}/real.txt`, 'real')

    expect(ws.fs.readFileSync('/new.txt', 'utf8')).toBe('virtual')
    expect(ws.fs.readFileSync('/src/extra.c', 'utf8')).toBe('extra')
    expect(ws.fs.existsSync('/src/old.c')).toBe(false)
    expect(fs.readdirSync(root).sort()).toEqual(['README.md', 'src'])
    expect(fs.readdirSync(`${root}/src`).sort()).toEqual(['main.c', 'old.c'])
    expect(fs.readFileSync(`${outside}/real.txt`, 'utf8')).toBe('real')
    expect(mount.readdirSync(root).sort()).toEqual(['README.md', 'new.txt', 'src'])

    ws.fs.writeFileSync('/README.md', 'changed in the workspace')
    expect(mount.readFileSync(`${root}/README.md`, 'utf8')).toBe('changed in the workspace')
    expect(fs.readFileSync(`${root}/README.md`, 'utf8')).toBe('hello\n')
    // Only a whole path component matches: a sibling sharing the prefix is the host's.
    fs.mkdirSync(`${root}-sibling`)
    mount.writeFileSync(`${root}-sibling/x`, 'x')
    expect(fs.readFileSync(`${root}-sibling/x`, 'utf8')).toBe('x')
  })

  it('resolves relative paths and file: URLs against process.cwd()', async () => {
    const { root, ws, mount } = await setup()
    const cwd = process.cwd()
    process.chdir(`${root}/src`)
    try {
      mount.writeFileSync('relative.c', 'r')
      mount.mkdirSync('../docs/')
      expect(mount.readFileSync('main.c', 'utf8')).toBe('int main;\n')
    } finally {
      process.chdir(cwd)
    }
    mount.writeFileSync(new URL(`file://${root}/url.txt`), 'u')
    expect(ws.fs.readFileSync('/src/relative.c', 'utf8')).toBe('r')
    expect(ws.fs.statSync('/docs').isDirectory()).toBe(true)
    expect(ws.fs.readFileSync('/url.txt', 'utf8')).toBe('u')
    expect(fs.existsSync(`${root}/src/relative.c`)).toBe(false)
  })

  it('gives host paths back in all three forms: results, dirents and errors', async () => {
    const { root, mount } = await setup()
    mount.symlinkSync(`${root}/src`, `${root}/code`)
    expect(mount.realpathSync(`${root}/code/main.c`)).toBe(`${root}/src/main.c`)
    expect(mount.realpathSync.native(`${root}/code`)).toBe(`${root}/src`)
    expect(await mount.promises.realpath(`${root}/code`)).toBe(`${root}/src`)
    const viaCallback = await new Promise((resolve, reject) => mount.realpath(`${root}/code`, (e, p) => (e ? reject(e) : resolve(p))))
    expect(viaCallback).toBe(`${root}/src`)
    expect(mount.mkdirSync(`${root}/a/b`, { recursive: true })).toBe(`${root}/a`)
    expect(await mount.promises.mkdtemp(`${root}/tmp-`)).toMatch(new RegExp(`^${root}/tmp-`))

    const entries = mount.readdirSync(`${root}/src`, { withFileTypes: true })
    expect(entries.map((d) => [d.name, d.parentPath, d.isFile()])).toEqual([
      ['main.c', `${root}/src`, true],
      ['old.c', `${root}/src`, true],
    ])
    const dir = await mount.promises.opendir(`${root}/src`)
    expect(dir.path).toBe(`${root}/src`)
    const names: string[] = []
    for await (const entry of dir) names.push(`${entry.parentPath}/${entry.name}`)
    expect(names).toEqual([`${root}/src/main.c`, `${root}/src/old.c`])

    // A link target that is absolute: stored rooted at the workspace, read back as a host path.
    expect(mount.readlinkSync(`${root}/code`)).toBe(`${root}/src`)
    expect(mount.readFileSync(`${root}/code/main.c`, 'utf8')).toBe('int main;\n')

    const missing = `${root}/missing.txt`
    const expected = { code: 'ENOENT', path: missing, message: `ENOENT: no such file or directory, open '${missing}'` }
    expect(errorOf(() => mount.readFileSync(missing))).toMatchObject(expected)
    await expect(mount.promises.readFile(missing)).rejects.toMatchObject(expected)
    const viaCallbackError = await new Promise((resolve) => mount.readFile(missing, (e) => resolve(e)))
    expect(viaCallbackError).toMatchObject(expected)
  })

  it('keeps workspace descriptors apart from real ones', async () => {
    const { root, outside, ws, mount } = await setup()
    const virtual = mount.openSync(`${root}/fd.txt`, 'w')
    const real = mount.openSync(`${outside}/fd.txt`, 'w')
    mount.writeSync(virtual, 'into the workspace')
    mount.writeSync(real, 'onto the disk')
    expect(mount.fstatSync(virtual).size).toBe('into the workspace'.length)
    await new Promise<void>((resolve, reject) => mount.close(virtual, (e) => (e ? reject(e) : resolve())))
    mount.closeSync(real)
    expect(ws.fs.readFileSync('/fd.txt', 'utf8')).toBe('into the workspace')
    expect(fs.readFileSync(`${outside}/fd.txt`, 'utf8')).toBe('onto the disk')
    expect(fs.existsSync(`${root}/fd.txt`)).toBe(false)
    // Closed: the number is no longer the workspace's.
    expect(errorOf(() => mount.fstatSync(virtual)).code).toBe('EBADF')

    const handle = await mount.promises.open(`${root}/handle.txt`, 'w')
    await handle.writeFile('via a FileHandle')
    expect(mount.fstatSync(handle.fd).size).toBe('via a FileHandle'.length)
    await mount.promises.appendFile(handle, ', appended')
    await handle.close()
    expect(ws.fs.readFileSync('/handle.txt', 'utf8')).toBe('via a FileHandle, appended')
    const reading = await mount.promises.open(`${root}/handle.txt`)
    expect(await mount.promises.readFile(reading, 'utf8')).toBe('via a FileHandle, appended')
    await reading.close()

    const chunks: Buffer[] = []
    const stream = mount.createReadStream(`${root}/README.md`)
    expect(stream.path).toBe(`${root}/README.md`)
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('hello\n')
    const failed = await new Promise((resolve) => mount.createReadStream(`${root}/missing`).on('error', resolve))
    expect(failed).toMatchObject({ code: 'ENOENT', path: `${root}/missing` })
  })

  it('renames within a side, refuses across with EXDEV, and copies across', async () => {
    const { root, outside, ws, mount } = await setup()
    mount.renameSync(`${root}/README.md`, `${root}/README.txt`)
    expect(ws.fs.existsSync('/README.txt')).toBe(true)
    expect(fs.existsSync(`${root}/README.md`)).toBe(true)

    const crossing = errorOf(() => mount.renameSync(`${root}/README.txt`, `${outside}/README.txt`))
    expect(crossing).toMatchObject({ code: 'EXDEV', errno: -18, syscall: 'rename' })
    await expect(mount.promises.link(`${outside}/x`, `${root}/x`)).rejects.toMatchObject({ code: 'EXDEV' })
    expect(ws.fs.existsSync('/README.txt')).toBe(true)

    fs.writeFileSync(`${outside}/in.txt`, 'from disk', { mode: 0o600 })
    await mount.promises.copyFile(`${outside}/in.txt`, `${root}/in.txt`)
    expect(ws.fs.readFileSync('/in.txt', 'utf8')).toBe('from disk')
    expect(ws.fs.statSync('/in.txt').mode & 0o777).toBe(0o600)
    expect(fs.existsSync(`${root}/in.txt`)).toBe(false)
    await new Promise<void>((resolve, reject) => mount.copyFile(`${outside}/in.txt`, `${root}/in2.txt`, (e) => (e ? reject(e) : resolve())))
    expect(ws.fs.readFileSync('/in2.txt', 'utf8')).toBe('from disk')
    mount.copyFileSync(`${root}/README.txt`, `${outside}/out.txt`)
    expect(fs.readFileSync(`${outside}/out.txt`, 'utf8')).toBe('hello\n')
    expect(errorOf(() => mount.copyFileSync(`${root}/README.txt`, `${outside}/out.txt`, fs.constants.COPYFILE_EXCL)).code).toBe('EEXIST')
  })

  it('routes the root by the path it was given and by its real path (a link to it)', async () => {
    const { root, ws } = await setup()
    const alias = `${scratch}/alias${serial++}`
    fs.symlinkSync(root, alias)
    const mount = mountOver(ws, alias)
    mount.writeFileSync(`${alias}/via-alias.txt`, 'a')
    mount.writeFileSync(`${root}/via-real-path.txt`, 'r')
    expect(ws.fs.readdirSync('/').sort()).toEqual(['README.md', 'src', 'via-alias.txt', 'via-real-path.txt'])
    expect(fs.readdirSync(root).sort()).toEqual(['README.md', 'src'])
    expect(mount.realpathSync(`${root}/src`)).toBe(`${alias}/src`)
  })

  it('refuses a workspace whose lower directory is another one', async () => {
    const { ws, outside } = await setup()
    expect(() => mountOver(ws, outside)).toThrow(/lower directory is '.*', not '.*'/)
  })
})

describe('patchFs: unmodified tools from npm through the mounted fs', () => {
  let unpatch: (() => void) | undefined
  afterEach(() => {
    unpatch?.()
    unpatch = undefined
  })

  it('tinyglobby (ESM named imports of fs, and its CommonJS build) sees the workspace; the real fs is back afterwards', async () => {
    const { root, ws, mount } = await setup()
    ws.fs.writeFileSync('/src/only-in-workspace.c', 'w')
    ws.fs.rmSync('/src/old.c')
    const { globSync, glob } = await import('tinyglobby')
    const cjs = createRequire(import.meta.url)('tinyglobby') as typeof import('tinyglobby')
    const originalRead = fs.readFileSync
    const disk = ['README.md', 'src/main.c', 'src/old.c']
    expect(globSync('**/*', { cwd: root }).sort()).toEqual(disk)

    unpatch = patchFs(mount)
    const inWorkspace = ['README.md', 'src/main.c', 'src/only-in-workspace.c']
    expect(globSync('**/*', { cwd: root }).sort()).toEqual(inWorkspace)
    expect((await glob('**/*.c', { cwd: root, absolute: true })).sort()).toEqual([`${root}/src/main.c`, `${root}/src/only-in-workspace.c`])
    expect(cjs.globSync('**/*', { cwd: root }).sort()).toEqual(inWorkspace)
    // Writes through the patched module land in the workspace.
    fs.writeFileSync(`${root}/patched.txt`, 'p')
    await fs.promises.appendFile(`${root}/patched.txt`, 'q')
    expect(ws.fs.readFileSync('/patched.txt', 'utf8')).toBe('pq')
    // The workspace's own lower directory still reads the disk, also for streams and handles that
    // read later: after a rename, /lib/main.c is the lower's /src/main.c, which the view no longer has.
    ws.fs.renameSync('/src', '/lib')
    const chunks: Buffer[] = []
    for await (const chunk of fs.createReadStream(`${root}/lib/main.c`)) chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('int main;\n')
    const handle = await fs.promises.open(`${root}/lib/main.c`)
    expect(await handle.readFile('utf8')).toBe('int main;\n')
    await handle.close()
    // Child processes bypass it: they see the disk.
    expect(() => execFileSync('cat', [`${root}/patched.txt`], { stdio: 'pipe' })).toThrow()

    // The adapter's own access is marked as the host's: it reaches the disk, even through
    // node:fs functions that call other (patched) members internally.
    ws.fs.writeFileSync('/README.md', 'in the workspace')
    expect(hostFs.readFileSync(`${root}/README.md`, 'utf8')).toBe('hello\n')
    expect(fs.readFileSync(`${root}/README.md`, 'utf8')).toBe('in the workspace')
    // exec while patched: its materialising reads the lower directory (a renamed one, too) from disk.
    const result = await ws.exec('cat lib/main.c README.md && echo built > lib/out.o', { mode: 'copy' })
    expect(result.stdout).toBe('int main;\nin the workspace')
    expect(fs.readFileSync(`${root}/lib/out.o`, 'utf8')).toBe('built\n')
    expect(hostFs.existsSync(`${root}/lib`)).toBe(false)

    unpatch()
    unpatch = undefined
    expect(fs.readFileSync).toBe(originalRead)
    expect(globSync('**/*', { cwd: root }).sort()).toEqual(disk)
    expect(fs.existsSync(`${root}/patched.txt`)).toBe(false)
  })

  it("the adapter's asynchronous access reaches the disk under a patch: calls that finish in the call, and those that call other members later", async () => {
    const { root, ws, mount } = await setup()
    ws.fs.writeFileSync('/README.md', 'in the workspace')
    unpatch = patchFs(mount)
    // Marked by the counter while the call runs (promises' own internals, a leaf callback).
    expect(await hostFs.promises.readFile(`${root}/README.md`, 'utf8')).toBe('hello\n')
    expect(await hostFs.promises.readdir(`${root}/src`)).toEqual(['main.c', 'old.c'])
    const fd = await new Promise<number>((resolve, reject) => hostFs.open(`${root}/README.md`, 'r', (error, fd) => (error ? reject(error) : resolve(fd))))
    const buffer = Buffer.alloc(16)
    const read = await new Promise<number>((resolve, reject) => hostFs.read(fd, buffer, 0, 16, 0, (error, n) => (error ? reject(error) : resolve(n))))
    await new Promise<void>((resolve, reject) => hostFs.close(fd, (error) => (error ? reject(error) : resolve())))
    expect(buffer.subarray(0, read).toString()).toBe('hello\n')
    // writeFile's callback form opens, then writes and closes through fs.open/fs.write/fs.close
    // later: those calls come back marked through the async context.
    await new Promise<void>((resolve, reject) => hostFs.writeFile(`${root}/README.md`, 'on disk', (error) => (error ? reject(error) : resolve())))
    expect(ws.fs.readFileSync('/README.md', 'utf8')).toBe('in the workspace')
    unpatch()
    unpatch = undefined
    expect(fs.readFileSync(`${root}/README.md`, 'utf8')).toBe('on disk')
  })

  it('a process that opens, writes, syncs and reopens a directory store over a directory never enters an AsyncLocalStorage (Node 20 turns promise hooks on for every promise then)', () => {
    const root = tempDirectory({ '/README.md': 'hello\n' })
    const script = `
      import { AsyncLocalStorage } from 'node:async_hooks'
      let entered = 0
      for (const name of ['run', 'enterWith']) {
        const original = AsyncLocalStorage.prototype[name]
        AsyncLocalStorage.prototype[name] = function (...args) { entered++; return original.apply(this, args) }
      }
      const { directory, directoryStore } = await import(${JSON.stringify(new URL('../adapters/node-fs/index.ts', import.meta.url).pathname)})
      const { Workspace } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).pathname)})
      const open = () => Workspace.open({ lower: directory(${JSON.stringify(root)}), store: directoryStore(${JSON.stringify(`${root}-store`)}) })
      let ws = await open()
      ws.fs.writeFileSync('/README.md', ws.fs.readFileSync('/README.md', 'utf8') + 'more\\n')
      for (let i = 0; i < 50; i++) ws.fs.writeFileSync('/f' + i, String(i))
      await ws.sync()
      await ws.checkpoint('one')
      await ws.close()
      ws = await open()
      const text = ws.fs.readFileSync('/README.md', 'utf8') + ws.fs.readdirSync('/').length
      await ws.close()
      process.stdout.write(JSON.stringify({ entered, text }))
    `
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(JSON.parse(output)).toEqual({ entered: 0, text: 'hello\nmore\n51' })
  })
})
