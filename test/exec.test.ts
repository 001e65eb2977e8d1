/**
 * exec(ws, command): a real `sh` runs in a materialised copy of the workspace; what it leaves on
 * a real Linux directory is the oracle for what lands in the workspace.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { exec } from '../adapters/node-fs/exec.js'
import { ConflictError, ValidationError, Workspace } from '../src/index.js'
import type { Validator } from '../src/index.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-test-`)
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

/** Everything under `root` as Linux sees it (type, mode, contents or link target). */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const host = `${dir}/${name}`
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

/** The same listing of the workspace's view. */
function view(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of ws.fs.readdirSync(dir).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stats = ws.fs.lstatSync(path)
      const mode = (stats.mode & 0o7777).toString(8)
      if (stats.isDirectory()) {
        out[`${path}/`] = mode
        walk(path)
      } else if (stats.isSymbolicLink()) out[path] = '-> ' + ws.fs.readlinkSync(path)
      else out[path] = `${mode} ${ws.fs.readFileSync(path, 'utf8')}`
    }
  }
  walk('/')
  return out
}

/** A private place for exec's temp directories, so a test can see that none is left. */
function tmpdir(): string {
  const dir = `${scratch}/tmp${serial++}`
  fs.mkdirSync(dir)
  return dir
}

const project = () =>
  tempDirectory({
    '/README.md': 'hello\n',
    '/src/main.c': 'int main() { return 0; }\n',
    '/src/util.c': 'void util() {}\n',
    '/old/a.txt': 'a\n',
    '/old/b.txt': 'b\n',
  })

describe('exec: a shell command against the workspace', () => {
  it('takes back files, directories, symlinks, modes and deletes as one undo step; the lower directory is untouched', async () => {
    const root = project()
    const lowerBefore = tree(root)
    const ws = await Workspace.open({ lower: directory(root) })
    ws.fs.writeFileSync('/notes.txt', 'from the workspace\n')
    ws.fs.rmSync('/src/util.c')
    const viewBefore = view(ws)
    const checkpointsBefore = ws.checkpoints()
    const temps = tmpdir()

    const result = await exec(
      ws,
      [
        'cat notes.txt', // upper-layer content is there
        'test -e src/util.c || echo "util.c is gone"', // and a workspace delete is too
        'echo more >> README.md', // appending to a lower file must not reach the lower directory
        'mkdir -p build/out && echo binary > build/out/app',
        'chmod 755 build/out/app',
        'ln -s ../README.md build/readme',
        'rm -r old',
        'echo "int x;" > src/main.c',
      ].join(' && '),
      { tmpdir: temps },
    )

    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('from the workspace\nutil.c is gone\n')
    expect(result.changes).toEqual({
      added: ['/build', '/build/out', '/build/out/app', '/build/readme'],
      modified: ['/README.md', '/src/main.c'],
      deleted: ['/old', '/old/a.txt', '/old/b.txt'],
    })
    expect(view(ws)).toEqual({
      '/README.md': '644 hello\nmore\n',
      '/build/': '755',
      '/build/out/': '755',
      '/build/out/app': '755 binary\n',
      '/build/readme': '-> ../README.md',
      '/notes.txt': '644 from the workspace\n',
      '/src/': '755',
      '/src/main.c': '644 int x;\n',
    })
    expect(tree(root)).toEqual(lowerBefore)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(ws.checkpoints()).toEqual(checkpointsBefore) // exec's own checkpoint is gone

    const [operation] = ws.history({ limit: 1 })
    expect(operation.type).toBe('transaction')
    await ws.undo()
    expect(view(ws)).toEqual(viewBefore)
  })

  it('is durable like any transaction: after a reopen the writes are there, undoable, and no exec checkpoint is left', async () => {
    const root = project()
    const storePath = `${scratch}/store${serial++}`
    let ws = await Workspace.open({ lower: directory(root), store: directoryStore(storePath) })
    await exec(ws, 'echo built > app && rm README.md')
    await ws.sync()
    await ws.close()
    ws = await Workspace.open({ lower: directory(root), store: directoryStore(storePath) })
    expect(ws.fs.readFileSync('/app', 'utf8')).toBe('built\n')
    expect(ws.fs.existsSync('/README.md')).toBe(false)
    expect(ws.checkpoints().filter((c) => c.name.startsWith('exec-'))).toEqual([])
    await ws.undo()
    expect(ws.fs.existsSync('/app')).toBe(false)
    expect(ws.fs.readFileSync('/README.md', 'utf8')).toBe('hello\n')
    await ws.close()
  })

  it('gives the command a distinct inode for every lower file (no hard link into the lower directory)', async () => {
    const root = project()
    const ws = await Workspace.open({ lower: directory(root) })
    const result = await exec(ws, 'stat -c %i README.md src/main.c')
    const inodes = result.stdout.trim().split('\n').map(Number)
    expect(inodes).toHaveLength(2)
    expect(inodes).not.toContain(fs.statSync(`${root}/README.md`).ino)
    expect(inodes).not.toContain(fs.statSync(`${root}/src/main.c`).ino)
    expect(result.changes).toEqual({ added: [], modified: [], deleted: [] })
    expect(ws.history()).toEqual([])
  })

  it('runs in cwd mapped into the copy; absolute link targets are rooted at the workspace both ways', async () => {
    const ws = await Workspace.open({ lower: { '/app/config.json': '{}\n', '/app/lib/x.js': 'x\n' } })
    ws.fs.symlinkSync('/app/config.json', '/app/current')
    const result = await exec(ws, 'ls; cat current; ln -s "$PWD/lib/x.js" abs; ln -s "$PWD" self', { cwd: 'app' })
    expect(result.stdout).toBe('config.json\ncurrent\nlib\n{}\n')
    expect(ws.fs.readlinkSync('/app/abs')).toBe('/app/lib/x.js')
    expect(ws.fs.readlinkSync('/app/self')).toBe('/app')
    expect(ws.fs.readFileSync('/app/abs', 'utf8')).toBe('x\n')
  })

  it('records the writes of a failing command and reports its exit code', async () => {
    const ws = await Workspace.open({ lower: { '/Makefile': 'all:\n' } })
    const result = await exec(ws, 'echo partial > out.o; echo "error: boom" >&2; exit 3')
    expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stderr: 'error: boom\n' })
    expect(result.changes.added).toEqual(['/out.o'])
    expect(ws.fs.readFileSync('/out.o', 'utf8')).toBe('partial\n')
  })

  it('sees a same-size rewrite, a mode change and a touch right after materialising', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'abcd', '/b.sh': 'echo\n', '/c.txt': 'c' } })
    const result = await exec(ws, "printf wxyz > a.txt; chmod 700 b.sh; touch -d '2001-02-03 04:05:06Z' c.txt")
    expect(result.changes.modified).toEqual(['/a.txt', '/b.sh', '/c.txt'])
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('wxyz')
    expect(ws.fs.statSync('/b.sh').mode & 0o777).toBe(0o700)
    expect(ws.fs.statSync('/c.txt').mtime.toISOString()).toBe('2001-02-03T04:05:06.000Z')
    expect(ws.fs.readFileSync('/c.txt', 'utf8')).toBe('c')
  })

  it('turns a file into a directory and a directory into a link', async () => {
    const ws = await Workspace.open({ lower: { '/x': 'file', '/d/inner.txt': 'i' } })
    const result = await exec(ws, 'rm x && mkdir x && echo y > x/y && rm -r d && ln -s x d')
    expect(result.changes).toEqual({ added: ['/x/y'], modified: ['/d', '/x'], deleted: ['/d/inner.txt'] })
    expect(view(ws)).toEqual({ '/d': '-> x', '/x/': '755', '/x/y': '644 y\n' })
  })

  it('empties the workspace root when the command removes the directory it ran in', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a', '/d/b': 'b' } })
    const result = await exec(ws, 'rm -rf "$PWD"')
    expect(result.changes.deleted).toEqual(['/a', '/d', '/d/b'])
    expect(ws.fs.readdirSync('/')).toEqual([])
  })

  it('leaves out what a workspace cannot hold (a FIFO) and says so', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    const result = await exec(ws, 'mkfifo pipe && echo ok > ok.txt')
    expect(result.skipped).toEqual(['/pipe'])
    expect(result.changes.added).toEqual(['/ok.txt'])
    expect(ws.fs.existsSync('/pipe')).toBe(false)
  })

  it('kills the command and what it started at the timeout, keeping what it wrote so far', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    const marker = `${scratch}/late-${serial++}`
    const temps = tmpdir()
    const started = Date.now()
    const result = await exec(ws, `echo early > early.txt; (sleep 0.6; echo alive > ${marker}) & sleep 5; echo late > late.txt`, { timeout: 300, tmpdir: temps })
    expect(Date.now() - started).toBeLessThan(2000)
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: null })
    expect(result.changes.added).toEqual(['/early.txt'])
    expect(fs.readdirSync(temps)).toEqual([])
    await new Promise((resolve) => setTimeout(resolve, 900))
    expect(fs.existsSync(marker)).toBe(false) // the background subshell died with its group
  })

  it('kills background processes left behind when the shell exits', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    const marker = `${scratch}/bg-${serial++}`
    const result = await exec(ws, `(sleep 0.5; echo alive > ${marker}) & echo started`)
    expect(result.stdout).toBe('started\n')
    await new Promise((resolve) => setTimeout(resolve, 900))
    expect(fs.existsSync(marker)).toBe(false)
  })

  it('lands nothing when a validator refuses, says why, and still hands back the output', async () => {
    const noTodo: Validator = { name: 'no-todo', match: '**/*.txt', validate: (content) => !new TextDecoder().decode(content).includes('TODO') || 'TODO left in' }
    const root = project()
    const ws = await Workspace.open({ lower: directory(root), validators: [noTodo] })
    const before = view(ws)
    const temps = tmpdir()
    const error = await exec(ws, 'echo TODO > notes.txt; rm README.md; echo done', { tmpdir: temps }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect((error as ValidationError).message).toContain('/notes.txt (no-todo): TODO left in')
    expect((error as { result: { stdout: string } }).result.stdout).toBe('done\n')
    expect(view(ws)).toEqual(before)
    expect(ws.history()).toEqual([])
    expect(fs.readdirSync(temps)).toEqual([])
    expect(ws.checkpoints()).toEqual([])
  })

  it('refuses when the workspace changed a path the command changed while it ran, and keeps the workspace write', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a', '/b.txt': 'b' } })
    const running = exec(ws, 'sleep 0.4; echo command > a.txt')
    await new Promise((resolve) => setTimeout(resolve, 100))
    ws.fs.writeFileSync('/a.txt', 'workspace')
    const error = await running.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConflictError)
    expect((error as ConflictError).paths).toEqual(['/a.txt'])
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('workspace')

    // An unrelated write meanwhile is no conflict.
    const second = exec(ws, 'sleep 0.4; echo command > a.txt')
    await new Promise((resolve) => setTimeout(resolve, 100))
    ws.fs.writeFileSync('/b.txt', 'workspace')
    await second
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('command\n')
    expect(ws.fs.readFileSync('/b.txt', 'utf8')).toBe('workspace')

    // A directory removed in the workspace while the command wrote into it.
    ws.fs.mkdirSync('/d')
    const third = exec(ws, 'sleep 0.4; echo x > d/x')
    await new Promise((resolve) => setTimeout(resolve, 100))
    ws.fs.rmdirSync('/d')
    await expect(third).rejects.toMatchObject({ code: 'ECONFLICT', paths: ['/d'] })
    expect(ws.fs.existsSync('/d')).toBe(false)
  })

  it('refuses bad input with clear errors before running anything', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    await expect(exec(ws, '')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('non-empty string') })
    await expect(exec(ws, 'true', { timeout: -1 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(exec(ws, 'true', { env: { X: 1 as unknown as string } })).rejects.toThrow(/env\.X must be a string/)
    await expect(exec({} as Workspace, 'true')).rejects.toThrow(/must be a Workspace/)
    await expect(exec(ws, 'true', { cwd: '/missing' })).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(exec(ws, 'true', { cwd: '/a' })).rejects.toMatchObject({ code: 'ENOTDIR' })
  })

  it('passes env over process.env and removes variables set to undefined', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    const result = await exec(ws, 'echo "$GREETING ${HOME:-unset}"; test -n "$PATH" && echo path', { env: { GREETING: 'hi', HOME: undefined, PWD: '/elsewhere' } })
    expect(result.stdout).toBe('hi unset\npath\n')
    const where = await exec(ws, 'echo "$PWD" > where.txt', { env: { PWD: '/elsewhere' } })
    expect(where.changes.added).toEqual(['/where.txt'])
  })
})
