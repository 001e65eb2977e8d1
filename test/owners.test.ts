/**
 * Who owns what, against node:fs on a real directory: a project's files keep their owners, and
 * what the workspace makes belongs to the process that makes it, as the kernel gives a new file
 * its creator's ids (programs compare `stat.uid` with `process.getuid()`, as `which` does for the
 * execute bits). The second case runs as the unprivileged test user, where that differs from 0.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-owners-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0

const CHILD = `
import fs from 'node:fs'
import { Workspace } from '../src/index.js'

const [dir] = process.argv.slice(2)
const ws = await Workspace.open({ lower: { '/fixture.txt': 'x' } })
fs.writeFileSync(dir + '/real.txt', 'x')
fs.mkdirSync(dir + '/real-dir')
ws.fs.writeFileSync('/made.txt', 'x')
ws.fs.mkdirSync('/made-dir')
const ids = (stat) => [stat.uid, stat.gid]
console.log(JSON.stringify({
  process: [process.getuid(), process.getgid()],
  real: [ids(fs.statSync(dir + '/real.txt')), ids(fs.statSync(dir + '/real-dir'))],
  made: [ids(ws.fs.statSync('/made.txt')), ids(ws.fs.statSync('/made-dir'))],
  fixture: ids(ws.fs.statSync('/fixture.txt')),
}))
await ws.close()
`

describe('owners', () => {
  it.skipIf(!asRoot)("a directory's files keep their owner and group, in a stat and after a copy-up", async () => {
    const project = fs.mkdtempSync(path.join(root, 'project-'))
    fs.writeFileSync(path.join(project, 'owned.txt'), 'x')
    fs.mkdirSync(path.join(project, 'dir'))
    fs.chownSync(path.join(project, 'owned.txt'), 1234, 5678)
    fs.chownSync(path.join(project, 'dir'), 4321, 8765)
    const ws = await Workspace.open({ lower: directory(project) })
    const ids = (stat: fs.Stats) => [stat.uid, stat.gid]
    expect(ids(ws.fs.statSync('/owned.txt') as fs.Stats)).toEqual(ids(fs.statSync(path.join(project, 'owned.txt'))))
    expect(ids(ws.fs.statSync('/dir') as fs.Stats)).toEqual([4321, 8765])
    // A change of mode copies it up: the owner stays, as chmod leaves it on disk.
    ws.fs.chmodSync('/owned.txt', 0o600)
    ws.fs.writeFileSync('/dir/new.txt', 'x')
    expect(ids(ws.fs.statSync('/owned.txt') as fs.Stats)).toEqual([1234, 5678])
    expect(ids(ws.fs.statSync('/dir') as fs.Stats)).toEqual([4321, 8765])
    await ws.close()
  })

  const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
  const canRun = !asRoot || capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')
  it.skipIf(!canRun)('what the workspace makes belongs to the process, as what node:fs makes does (run as an unprivileged user)', async () => {
    const child = path.join(root, 'child.mjs')
    await build({ stdin: { contents: CHILD, resolveDir: new URL('.', import.meta.url).pathname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    const dir = fs.mkdtempSync(path.join(root, 'user-'))
    fs.chmodSync(root, 0o755)
    if (asRoot) fs.chownSync(dir, Number(user!.stdout.trim()), Number(user!.stdout.trim()))
    const command = asRoot ? ['runuser', '-u', 'rewindfs-exec', '--', process.execPath, child, dir] : [process.execPath, child, dir]
    const result = spawnSync(command[0], command.slice(1), { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout.trim()) as { process: number[]; real: number[][]; made: number[][]; fixture: number[] }
    if (asRoot) expect(seen.process[0]).not.toBe(0)
    expect(seen.made).toEqual(seen.real)
    expect(seen.made[0]).toEqual(seen.process)
    // A source that keeps no owners (a fixture) gives its files to the process too.
    expect(seen.fixture).toEqual(seen.process)
  }, 60_000)

  it("a transaction's chown of a directory (its own or the project's) or of a symlink alone commits, and undo takes it back", async () => {
    const ws = await Workspace.open({ lower: { '/project-dir/file.txt': 'x', '/target': 'x' }, autoCheckpoint: false })
    ws.fs.mkdirSync('/made-dir')
    ws.fs.symlinkSync('target', '/link')
    const ids = (path: string) => {
      const stat = ws.fs.lstatSync(path) as fs.Stats
      return [stat.uid, stat.gid]
    }
    const before = ['/project-dir', '/made-dir', '/link'].map(ids)
    await ws.transaction((staged) => staged.chownSync('/project-dir', 9, 10))
    await ws.transaction((staged) => staged.chownSync('/made-dir', 11, 12))
    await ws.transaction((staged) => staged.lchownSync('/link', 13, 14))
    expect(['/project-dir', '/made-dir', '/link'].map(ids)).toEqual([[9, 10], [11, 12], [13, 14]])
    expect(ws.history({ type: 'transaction' }).map((op) => op.paths)).toEqual([['/link'], ['/made-dir'], ['/project-dir']])
    await ws.undo({ steps: 3 })
    expect(['/project-dir', '/made-dir', '/link'].map(ids)).toEqual(before)
    await ws.close()
  })
})

