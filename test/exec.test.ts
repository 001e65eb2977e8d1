/**
 * ws.exec: a real `sh` runs against the workspace, in both modes (overlay: kernel overlayfs at the
 * project's own path; copy: a materialised copy); what it leaves on a real Linux directory is the
 * oracle for what lands in the workspace.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore, hostShell } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { ConflictError, ValidationError, Workspace } from '../src/index.js'
import type { ExecMode, ExecOptions, ExecResult, Validator, WorkspaceOptions } from '../src/index.js'
import { capability } from './support/require.js'

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

const overlayProblem = (await support()).overlay
// Without overlay mode the file runs copy mode only (a failure under REWINDFS_REQUIRE=exec-overlay).
const modes: ExecMode[] = capability('exec-overlay', overlayProblem) ? ['overlay', 'copy'] : ['copy']

describe.each(modes)('ws.exec in %s mode: a shell command against the workspace', (mode) => {
  /** A workspace over a real directory, its commands in this suite's mode. */
  const open = (root: string, options: WorkspaceOptions = {}) => Workspace.open({ lower: directory(root), exec: hostShell({ mode }), ...options })
  const run = (ws: Workspace, command: string, options: ExecOptions = {}): Promise<ExecResult> => ws.exec(command, options)

  it('takes back files, directories, symlinks, modes and deletes as one undo step; the lower directory is untouched', async () => {
    const root = project()
    const lowerBefore = tree(root)
    const temps = tmpdir()
    const ws = await open(root, { exec: hostShell({ mode, tmpdir: temps }) })
    ws.fs.writeFileSync('/notes.txt', 'from the workspace\n')
    ws.fs.rmSync('/src/util.c')
    const viewBefore = view(ws)
    const checkpointsBefore = ws.checkpoints()

    const command = [
      'cat notes.txt', // upper-layer content is there
      'test -e src/util.c || echo "util.c is gone"', // and a workspace delete is too
      'echo more >> README.md', // appending to a lower file must not reach the lower directory
      'mkdir -p build/out && echo binary > build/out/app',
      'chmod 755 build/out/app',
      'ln -s ../README.md build/readme',
      'rm -r old',
      'echo "int x;" > src/main.c',
    ].join(' && ')
    const result = await run(ws, command)

    expect(result.exitCode).toBe(0)
    expect(result.mode).toBe(mode)
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
    expect(ws.checkpoints()).toEqual(checkpointsBefore) // exec keeps no checkpoint of its own

    const [operation] = ws.history({ limit: 1 })
    expect(operation.type).toBe('transaction')
    expect(operation.description).toBe(`exec: ${command}`)
    await ws.undo()
    expect(view(ws)).toEqual(viewBefore)
    await ws.close()
    expect(fs.readdirSync(temps)).toEqual([]) // the temp directory (overlay mode: the session's) is gone
  })

  it('with discard, throws the command\'s writes away unread: nothing recorded, nothing read back, the next command sees the workspace', async () => {
    const root = project()
    const lowerBefore = tree(root)
    const ws = await open(root)
    ws.fs.writeFileSync('/notes.txt', 'from the workspace\n')
    const viewBefore = view(ws)
    const historyBefore = ws.history()
    const result = await run(ws, 'cat notes.txt && echo more >> README.md && mkdir -p build && echo app > build/app && rm -r old && echo changed > notes.txt', { discard: true })
    expect(result).toMatchObject({ exitCode: 0, stdout: 'from the workspace\n', mode, changes: { added: [], modified: [], deleted: [] }, skipped: [] })
    // Overlay mode: the command's upper directory held its writes, and none of them was read back.
    if (mode === 'overlay') expect(result.work).toMatchObject({ upperEntries: 0 })
    expect(view(ws)).toEqual(viewBefore)
    expect(ws.history()).toEqual(historyBefore)
    expect(tree(root)).toEqual(lowerBefore)
    // The writes are gone for the next command too.
    expect((await run(ws, 'cat README.md notes.txt; test -e build || echo no build')).stdout).toBe('hello\nfrom the workspace\nno build\n')
    await expect(run(ws, 'true', { discard: 'yes' as unknown as boolean })).rejects.toThrow(/discard must be a boolean/)
    await ws.close()
  })

  it('is durable like any transaction: after a reopen the writes are there and undoable', async () => {
    const root = project()
    const storePath = `${scratch}/store${serial++}`
    let ws = await open(root, { store: directoryStore(storePath) })
    await run(ws, 'echo built > app && rm README.md')
    await ws.sync()
    await ws.close()
    ws = await open(root, { store: directoryStore(storePath) })
    expect(ws.fs.readFileSync('/app', 'utf8')).toBe('built\n')
    expect(ws.fs.existsSync('/README.md')).toBe(false)
    expect(ws.checkpoints()).toEqual([])
    await ws.undo()
    expect(ws.fs.existsSync('/app')).toBe(false)
    expect(ws.fs.readFileSync('/README.md', 'utf8')).toBe('hello\n')
    // The next command sees the undo: overlay mode's layer follows the tree back.
    expect((await run(ws, 'ls')).stdout).toBe('README.md\nold\nsrc\n')
    await ws.close()
  })

  it("a command that only sets times (touch) is taken back: the next command sees them, they survive a reopen, undo puts them back", async () => {
    const root = project()
    const storePath = `${scratch}/store${serial++}`
    let ws = await open(root, { store: directoryStore(storePath) })
    ws.fs.writeFileSync('/notes.txt', 'made here\n')
    const before = { readme: ws.fs.statSync('/README.md').mtimeMs, notes: ws.fs.statSync('/notes.txt').mtimeMs }
    await run(ws, 'touch -d "2001-02-03 04:05:06 UTC" README.md notes.txt')
    const touched = Date.UTC(2001, 1, 3, 4, 5, 6)
    expect([ws.fs.statSync('/README.md').mtimeMs, ws.fs.statSync('/notes.txt').mtimeMs]).toEqual([touched, touched])
    // make's question, asked of the next command: the touched file is older than a new one.
    expect((await run(ws, 'touch fresh && [ README.md -ot fresh ] && echo older')).stdout).toBe('older\n')
    await ws.sync()
    await ws.close()
    ws = await open(root, { store: directoryStore(storePath) })
    expect(ws.fs.statSync('/README.md').mtimeMs).toBe(touched)
    await ws.undo() // the second command (fresh)
    await ws.undo() // the touch
    expect({ readme: ws.fs.statSync('/README.md').mtimeMs, notes: ws.fs.statSync('/notes.txt').mtimeMs }).toEqual(before)
    await ws.close()
  })

  it("a command that only touches a project file, or writes its own bytes back, leaves its times: the next command sees them", async () => {
    const ws = await open(project())
    await run(ws, 'touch -d "2001-02-03 04:05:06 UTC" README.md')
    const touched = Date.UTC(2001, 1, 3, 4, 5, 6)
    expect(ws.fs.statSync('/README.md').mtimeMs).toBe(touched)
    // A formatter's or a build step's rewrite of unchanged output: make compares the times it left.
    const rewrite = await run(ws, 'cat src/util.c > /tmp/rewindfs-same-$$ && touch -d "2003-04-05 06:07:08 UTC" /tmp/rewindfs-same-$$ && cp -p /tmp/rewindfs-same-$$ src/util.c && rm /tmp/rewindfs-same-$$')
    expect(rewrite.changes.modified).toEqual(['/src/util.c'])
    const rewritten = Date.UTC(2003, 3, 5, 6, 7, 8)
    expect(ws.fs.statSync('/src/util.c').mtimeMs).toBe(rewritten)
    expect((await run(ws, 'stat -c %Y README.md src/util.c')).stdout).toBe(`${touched / 1000}\n${rewritten / 1000}\n`)
    expect(ws.history().map((op) => op.paths.join(','))).toEqual(['/src/util.c', '/README.md'])
    await ws.close()
  })

  it('runs in cwd; absolute link targets are rooted at the workspace both ways', async () => {
    const root = tempDirectory({ '/app/config.json': '{}\n', '/app/lib/x.js': 'x\n' })
    const ws = await open(root)
    ws.fs.symlinkSync('/app/config.json', '/app/current')
    const result = await run(ws, 'ls; cat current; ln -s "$PWD/lib/x.js" abs; ln -s "$PWD" self', { cwd: 'app' })
    expect(result.stdout).toBe('config.json\ncurrent\nlib\n{}\n')
    expect(ws.fs.readlinkSync('/app/abs')).toBe('/app/lib/x.js')
    expect(ws.fs.readlinkSync('/app/self')).toBe('/app')
    expect(ws.fs.readFileSync('/app/abs', 'utf8')).toBe('x\n')
    await ws.close()
  })

  it("a link to a path of the host the workspace does not hold (a venv's bin/python3) works in the next command; a flush writes links into the project relative", async () => {
    const root = tempDirectory({ '/lib/x.js': 'x\n' })
    const ws = await open(root)
    await run(ws, 'ln -s /bin/sh shell; ln -s "$PWD/lib/x.js" abs; ln -s /lib/x.js rooted')
    expect(ws.fs.readlinkSync('/shell')).toBe('/bin/sh')
    expect(ws.fs.readlinkSync('/abs')).toBe('/lib/x.js')
    // /lib/x.js is the workspace's (it holds it), /bin/sh the host's; a later command sees both so.
    const next = await run(ws, './shell -c "echo ran"; cat abs rooted; readlink shell')
    expect(next.stderr).toBe('')
    expect(next.stdout).toBe('ran\nx\nx\n/bin/sh\n')
    ws.fs.unlinkSync('/shell')
    await ws.flush()
    expect(fs.readlinkSync(`${root}/abs`)).toBe('lib/x.js')
    expect(fs.readFileSync(`${root}/abs`, 'utf8')).toBe('x\n')
    await ws.close()
  })

  it('a file larger than the workspace holds is skipped, not read: the rest of the command is kept, and what the workspace had there stays', async () => {
    const root = tempDirectory({ '/grow.txt': 'small\n' })
    const ws = await open(root, { maxFileSize: 1000 })
    const result = await run(ws, 'head -c 2000 /dev/zero > big.bin; head -c 5000 /dev/zero >> grow.txt; truncate -s 3G huge.img; echo kept > small.txt')
    expect(result.exitCode).toBe(0)
    expect(result.skipped).toEqual(['/big.bin', '/grow.txt', '/huge.img'])
    expect(result.changes).toEqual({ added: ['/small.txt'], modified: [], deleted: [] })
    expect(ws.fs.readFileSync('/grow.txt', 'utf8')).toBe('small\n')
    expect(ws.fs.existsSync('/big.bin')).toBe(false)
    expect(ws.fs.readFileSync('/small.txt', 'utf8')).toBe('kept\n')
    await ws.close()
  })

  it("shows the project's own path in the output (copy mode maps the copy's back)", async () => {
    const root = tempDirectory({ '/bad.js': 'x\n' })
    const ws = await open(root)
    const result = await run(ws, 'echo "$PWD/bad.js:1"; cat "$(pwd)/missing.js"; pwd')
    expect(result.stdout).toBe(`${root}/bad.js:1\n${root}\n`)
    expect(result.stderr).toContain(`${root}/missing.js`)
    await ws.close()
  })

  it('records the writes of a failing command and reports its exit code', async () => {
    const ws = await open(tempDirectory({ '/Makefile': 'all:\n' }))
    const result = await run(ws, 'echo partial > out.o; echo "error: boom" >&2; exit 3')
    expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stderr: 'error: boom\n' })
    expect(result.changes.added).toEqual(['/out.o'])
    expect(ws.fs.readFileSync('/out.o', 'utf8')).toBe('partial\n')
    await ws.close()
  })

  it('sees a same-size rewrite, a mode change and a touch', async () => {
    const ws = await open(tempDirectory({ '/a.txt': 'abcd', '/b.sh': 'echo\n', '/c.txt': 'c' }))
    ws.fs.writeFileSync('/d.txt', 'from the workspace') // an upper file too
    const result = await run(ws, "printf wxyz > a.txt; chmod 700 b.sh; touch -d '2001-02-03 04:05:06Z' c.txt; touch -d '2002-02-03 04:05:06Z' d.txt")
    expect(result.changes.modified).toEqual(['/a.txt', '/b.sh', '/c.txt', '/d.txt'])
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('wxyz')
    expect(ws.fs.statSync('/b.sh').mode & 0o777).toBe(0o700)
    expect(ws.fs.statSync('/c.txt').mtime.toISOString()).toBe('2001-02-03T04:05:06.000Z')
    expect(ws.fs.readFileSync('/c.txt', 'utf8')).toBe('c')
    expect(ws.fs.statSync('/d.txt').mtime.toISOString()).toBe('2002-02-03T04:05:06.000Z')
    await ws.close()
  })

  it('turns a file into a directory and a directory into a link', async () => {
    const ws = await open(tempDirectory({ '/x': 'file', '/d/inner.txt': 'i' }))
    const result = await run(ws, 'rm x && mkdir x && echo y > x/y && rm -r d && ln -s x d')
    expect(result.changes).toEqual({ added: ['/x/y'], modified: ['/d', '/x'], deleted: ['/d/inner.txt'] })
    expect(view(ws)).toEqual({ '/d': '-> x', '/x/': '755', '/x/y': '644 y\n' })
    await ws.close()
  })

  it('empties the workspace root when the command removes the directory it ran in', async () => {
    const ws = await open(tempDirectory({ '/a': 'a', '/d/b': 'b' }))
    const result = await run(ws, 'rm -rf "$PWD"')
    expect(result.changes.deleted).toEqual(['/a', '/d', '/d/b'])
    expect(ws.fs.readdirSync('/')).toEqual([])
    await ws.close()
  })

  it('what the command replaced or deleted in the project counts as seen: a flush refuses changes made there since', async () => {
    const root = project()
    const ws = await open(root)
    await run(ws, 'echo ours > README.md && rm src/util.c')
    fs.writeFileSync(`${root}/README.md`, 'theirs\n')
    fs.writeFileSync(`${root}/src/util.c`, 'theirs\n')
    await expect(ws.flush()).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [{ path: '/README.md' }, { path: '/src/util.c' }] })
    expect(fs.readFileSync(`${root}/README.md`, 'utf8')).toBe('theirs\n')
    expect(fs.readFileSync(`${root}/src/util.c`, 'utf8')).toBe('theirs\n')
    await ws.close()
  })

  it('leaves out what a workspace cannot hold (a FIFO) and says so', async () => {
    const ws = await open(tempDirectory({ '/a': 'a' }))
    const result = await run(ws, 'mkfifo pipe && echo ok > ok.txt')
    expect(result.skipped).toEqual(['/pipe'])
    expect(result.changes.added).toEqual(['/ok.txt'])
    expect(ws.fs.existsSync('/pipe')).toBe(false)
    await ws.close()
  })

  it('leaves out a name that is not UTF-8 (a workspace path is a string) and says so, keeping the rest; its temp files are removed', async () => {
    const temps = tmpdir()
    const ws = await open(tempDirectory({ '/a': 'a' }), { exec: hostShell({ mode, tmpdir: temps }) })
    const result = await run(ws, 'mkdir -p d && printf x > "$(printf "bad\\377name")" && printf y > "d/$(printf "\\303")" && echo ok > ok.txt')
    expect(result.exitCode).toBe(0)
    expect(result.skipped).toEqual(['/bad\ufffdname', '/d/\ufffd'])
    expect(result.changes.added).toEqual(['/d', '/ok.txt'])
    expect(ws.fs.readdirSync('/').sort()).toEqual(['a', 'd', 'ok.txt'])
    expect(ws.fs.readdirSync('/d')).toEqual([])
    await ws.close()
    expect(fs.readdirSync(temps)).toEqual([])
  })

  it('kills the command and what it started at the timeout, keeping what it wrote so far', async () => {
    const temps = tmpdir()
    const ws = await open(tempDirectory({ '/a': 'a' }), { exec: hostShell({ mode, tmpdir: temps }) })
    const marker = `${scratch}/late-${serial++}`
    const started = Date.now()
    const result = await run(ws, `echo early > early.txt; (sleep 0.6; echo alive > ${marker}) & sleep 5; echo late > late.txt`, { timeout: 300 })
    expect(Date.now() - started).toBeLessThan(4500) // the sleep 5 did not run out
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: null })
    expect(result.changes.added).toEqual(['/early.txt'])
    await new Promise((resolve) => setTimeout(resolve, 900))
    expect(fs.existsSync(marker)).toBe(false) // the background subshell died with the command
    await ws.close()
    expect(fs.readdirSync(temps)).toEqual([])
  })

  it('kills background processes left behind when the shell exits, setsid daemons included', async () => {
    const ws = await open(tempDirectory({ '/a': 'a' }))
    const marker = `${scratch}/bg-${serial++}`
    const daemon = `${scratch}/daemon-${serial++}`
    const result = await run(ws, `(sleep 0.5; echo alive > ${marker}) & setsid sh -c 'sleep 0.5; echo alive > ${daemon}' & echo started`)
    expect(result.stdout).toBe('started\n')
    await new Promise((resolve) => setTimeout(resolve, 900))
    expect(fs.existsSync(marker)).toBe(false)
    // Without a PID namespace a daemon that left the process group survives (the old limit).
    if ((await support()).pid) expect(fs.existsSync(daemon)).toBe(false)
    await ws.close()
  })

  it('lands nothing when a validator refuses, says why, and still hands back the output', async () => {
    const noTodo: Validator = { name: 'no-todo', match: '**/*.txt', validate: (content) => !new TextDecoder().decode(content).includes('TODO') || 'TODO left in' }
    const ws = await open(project(), { validators: [noTodo] })
    const before = view(ws)
    const error = await run(ws, 'echo TODO > notes.txt; rm README.md; echo done').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect((error as ValidationError).message).toContain('/notes.txt (no-todo): TODO left in')
    expect((error as { result: ExecResult }).result.stdout).toBe('done\n')
    expect((error as { result: ExecResult }).result.mode).toBe(mode)
    expect(view(ws)).toEqual(before)
    expect(ws.history()).toEqual([])
    expect(ws.checkpoints()).toEqual([])
    // The next command starts from the workspace as it is, not from what was refused.
    expect((await run(ws, 'ls')).stdout).toBe('README.md\nold\nsrc\n')
    await ws.close()
  })

  it('refuses when the workspace changed a path the command changed while it ran, and keeps the workspace write', async () => {
    const ws = await open(tempDirectory({ '/a.txt': 'a', '/b.txt': 'b' }))
    const running = run(ws, 'sleep 0.4; echo command > a.txt')
    await new Promise((resolve) => setTimeout(resolve, 150))
    ws.fs.writeFileSync('/a.txt', 'workspace')
    const error = await running.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConflictError)
    expect((error as ConflictError).paths).toEqual(['/a.txt'])
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('workspace')

    // An unrelated write meanwhile is no conflict.
    const second = run(ws, 'sleep 0.4; echo command > a.txt')
    await new Promise((resolve) => setTimeout(resolve, 150))
    ws.fs.writeFileSync('/b.txt', 'workspace')
    await second
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('command\n')
    expect(ws.fs.readFileSync('/b.txt', 'utf8')).toBe('workspace')

    // A directory removed in the workspace while the command wrote into it.
    ws.fs.mkdirSync('/d')
    const third = run(ws, 'sleep 0.4; echo x > d/x')
    await new Promise((resolve) => setTimeout(resolve, 150))
    ws.fs.rmdirSync('/d')
    await expect(third).rejects.toMatchObject({ code: 'ECONFLICT', paths: ['/d'] })
    expect(ws.fs.existsSync('/d')).toBe(false)
    await ws.close()
  })

  it('passes env over process.env and removes variables set to undefined', async () => {
    const ws = await open(tempDirectory({ '/a': 'a' }))
    const result = await run(ws, 'echo "$GREETING ${HOME:-unset}"; test -n "$PATH" && echo path', { env: { GREETING: 'hi', HOME: undefined, PWD: '/elsewhere' } })
    expect(result.stdout).toBe('hi unset\npath\n')
    const where = await run(ws, 'echo "$PWD" > where.txt', { env: { PWD: '/elsewhere' } })
    expect(where.changes.added).toEqual(['/where.txt'])
    await ws.close()
  })
})

describe('ws.exec: where it comes from, modes and bad input', () => {
  it('needs a runner: a directory lower has one; other lowers take hostShell()', async () => {
    const bare = await Workspace.open({ lower: { '/a': 'x' } })
    await expect(bare.exec('true')).rejects.toMatchObject({ code: 'ENOSYS', message: expect.stringContaining('hostShell()') })
    await bare.close()
    const ws = await Workspace.open({ lower: { '/a': 'x\n', '/d/b': 'b' }, exec: hostShell() })
    const result = await ws.exec('cat a; echo y > d/c')
    expect(result).toMatchObject({ stdout: 'x\n', mode: 'copy', modeReason: expect.stringContaining('not a directory(path)') })
    expect(ws.fs.readFileSync('/d/c', 'utf8')).toBe('y\n')
    await ws.close()
  })

  it('names the operation exec: <command>, or the label given', async () => {
    const ws = await Workspace.open({ lower: directory(project()) })
    await ws.exec('echo a > a.txt')
    await ws.exec('echo b > b.txt', { label: 'exec: a build' })
    expect(ws.history().map((op) => op.description)).toEqual(['exec: a build', 'exec: echo a > a.txt'])
    await ws.close()
  })

  it('runs in a frozen workspace, where a command that changed something is refused with EROFS and nothing lands', async () => {
    const ws = await Workspace.open({ lower: directory(tempDirectory({ '/a.txt': 'a\n' })) })
    ws.freeze('a test')
    expect(await ws.exec('cat a.txt')).toMatchObject({ stdout: 'a\n', changes: { added: [], modified: [], deleted: [] } })
    await expect(ws.exec('echo b > b.txt; echo done')).rejects.toMatchObject({ code: 'EROFS', message: expect.stringContaining('frozen (a test)'), result: { stdout: 'done\n', changes: { added: ['/b.txt'] } } })
    expect(ws.fs.existsSync('/b.txt')).toBe(false)
    expect(ws.history()).toEqual([])
    await ws.close()
  })

  it('copy mode maps the copy\'s paths in the output back to workspace paths for a lower that is not a directory', async () => {
    const ws = await Workspace.open({ lower: { '/src/bad.js': 'x' }, exec: hostShell() })
    const result = await ws.exec('echo "$PWD/bad.js:1"', { cwd: '/src' })
    expect(result.stdout).toBe('/src/bad.js:1\n')
    await ws.close()
  })

  it('gives the command a distinct inode for every lower file in copy mode (no hard link into the lower directory)', async () => {
    const root = project()
    const ws = await Workspace.open({ lower: directory(root) })
    const result = await ws.exec('stat -c %i README.md src/main.c', { mode: 'copy' })
    const inodes = result.stdout.trim().split('\n').map(Number)
    expect(inodes).toHaveLength(2)
    expect(inodes).not.toContain(fs.statSync(`${root}/README.md`).ino)
    expect(inodes).not.toContain(fs.statSync(`${root}/src/main.c`).ino)
    expect(result.changes).toEqual({ added: [], modified: [], deleted: [] })
    expect(ws.history()).toEqual([])
    await ws.close()
  })

  it('says which mode ran and why; forcing overlay where it cannot run is ENOTSUP with the reason', async () => {
    const fixture = await Workspace.open({ lower: { '/a': 'a' }, exec: hostShell() })
    await expect(fixture.exec('true', { mode: 'overlay' })).rejects.toMatchObject({ code: 'ENOTSUP', syscall: 'exec', message: expect.stringContaining('not a directory(path)') })
    expect(await fixture.exec('true', { mode: 'copy' })).toMatchObject({ mode: 'copy', modeReason: 'options.mode is copy' })
    await fixture.close()
    const root = project()
    const ws = await Workspace.open({ lower: directory(root) })
    const auto = await ws.exec('true')
    if (overlayProblem) expect(auto).toMatchObject({ mode: 'copy', modeReason: overlayProblem })
    else expect(auto).toMatchObject({ mode: 'overlay', modeReason: expect.stringContaining('kernel overlayfs') })
    // A temp directory inside the project would nest overlayfs's layers.
    fs.mkdirSync(`${root}/.tmp`)
    const nested = await Workspace.open({ lower: directory(root), exec: hostShell({ tmpdir: `${root}/.tmp` }) })
    // ...and copy mode's copy would contain itself.
    await expect(nested.exec('true')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('inside the project') })
    if (!overlayProblem) await expect(nested.exec('true', { mode: 'overlay' })).rejects.toMatchObject({ code: 'ENOTSUP', message: expect.stringContaining('inside the project') })
    await nested.close()
    await ws.close()
  })

  it('refuses bad input with clear errors before running anything', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' }, exec: hostShell() })
    await expect(ws.exec('')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('non-empty string') })
    await expect(ws.exec('true', { timeout: -1 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(ws.exec('true', { env: { X: 1 as unknown as string } })).rejects.toThrow(/env\.X must be a string/)
    await expect(ws.exec('true', { mode: 'fast' as ExecMode })).rejects.toThrow(/mode must be 'overlay' or 'copy'/)
    await expect(ws.exec('true', { sandbox: { host: 'none' as 'read-only' } })).rejects.toThrow(/sandbox\.host must be/)
    await expect(ws.exec('true', { sandbox: { writable: ['relative/path'] } })).rejects.toThrow(/absolute paths/)
    await expect(ws.exec('true', { label: ' ' })).rejects.toThrow(/label must be a non-empty string/)
    await expect(ws.exec('true', { cwd: '/missing' })).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(ws.exec('true', { cwd: '/a' })).rejects.toMatchObject({ code: 'ENOTDIR' })
    expect(() => hostShell({ timeout: 0 })).toThrow(/timeout must be a positive number/)
    expect(ws.history()).toEqual([])
    await ws.close()
  })
})
