/**
 * Owners, groups and modes through ws.exec, in both modes, against what the same command does on
 * disk. As root: a command sees the workspace's owners (the project's, and those the workspace set)
 * and its chown comes back, is undone, and reaches the next command. As the unprivileged test user
 * (a user namespace maps only the user's own ids, so overlayfs cannot copy up another group's
 * file): a project holding such files runs in copy mode and says why, the workspace keeps the
 * owners it had, and a file of the user's own that its mode keeps from the user comes back the same
 * from both modes when the command changes its mode.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-exec-owners-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0
const host = await support()
const overlayHere = capability('exec-overlay', host.overlay)

const ids = (stats: { uid: number; gid: number }) => `${stats.uid}:${stats.gid}`
/** Closed after each test, passed or failed: a session's temp directory goes with it. */
const opened: Workspace[] = []
afterEach(async () => {
  for (const ws of opened.splice(0)) await ws.close()
})

describe.skipIf(!asRoot)('owners through exec, as root', () => {
  for (const mode of ['overlay', 'copy'] as const) {
    it.skipIf(mode === 'overlay' && !overlayHere)(`${mode} mode: the command sees the workspace's owners, and its chown comes back, undoes and reaches the next command`, async () => {
      const project = fs.mkdtempSync(path.join(root, `${mode}-`))
      for (const name of ['f', 's', 'owned.txt']) fs.writeFileSync(path.join(project, name), `${name}\n`)
      fs.mkdirSync(path.join(project, 'd'))
      fs.chownSync(path.join(project, 'owned.txt'), 1234, 5678)
      fs.chownSync(project, 4321, 8765)
      const ws = await Workspace.open({ lower: directory(project), autoCheckpoint: false })
      opened.push(ws)
      ws.fs.writeFileSync('/w', 'w\n')
      ws.fs.chownSync('/w', 77, 88)
      const before = await ws.exec("stat -c '%n %u:%g' . owned.txt w f", { mode })
      expect(before).toMatchObject({ mode, stdout: '. 4321:8765\nowned.txt 1234:5678\nw 77:88\nf 0:0\n', changes: { added: [], modified: [], deleted: [] } })

      const run = await ws.exec('chown 11:12 f && echo n > new && chown 13:14 new && mkdir nd && chown 15:16 nd && chown 17:18 d && ln -s f l && chown -h 19:20 l && chown 21:22 s && chmod 4755 s && chown 23:24 w', { mode })
      expect(run).toMatchObject({ exitCode: 0, stderr: '', mode })
      expect(run.changes).toEqual({ added: ['/l', '/nd', '/new'], modified: ['/d', '/f', '/s', '/w'], deleted: [] })
      const owners = () => ['/f', '/new', '/nd', '/d', '/l', '/s', '/w', '/owned.txt'].map((p) => `${p} ${ids(ws.fs.lstatSync(p))}`)
      expect(owners()).toEqual(['/f 11:12', '/new 13:14', '/nd 15:16', '/d 17:18', '/l 19:20', '/s 21:22', '/w 23:24', '/owned.txt 1234:5678'])
      // chown drops set-user-ID; the command set it again after.
      expect((ws.fs.statSync('/s').mode & 0o7777).toString(8)).toBe('4755')

      const next = await ws.exec("stat -c '%n %u:%g %a' f new nd d s w && stat -c '%n %u:%g' -L l >/dev/null && stat -c '%n %u:%g' l", { mode })
      expect(next.stdout).toBe('f 11:12 644\nnew 13:14 644\nnd 15:16 755\nd 17:18 755\ns 21:22 4755\nw 23:24 644\nl 19:20\n')
      expect(next.changes).toEqual({ added: [], modified: [], deleted: [] })

      await ws.undo()
      expect(['/f', '/d', '/s', '/w'].map((p) => `${p} ${ids(ws.fs.lstatSync(p))}`)).toEqual(['/f 0:0', '/d 0:0', '/s 0:0', '/w 77:88'])
      const undone = await ws.exec("stat -c '%n %u:%g' f d s w", { mode })
      expect(undone.stdout).toBe('f 0:0\nd 0:0\ns 0:0\nw 77:88\n')
      // A chown of the project root. (With a file made: a transaction whose only change is a
      // directory's owner commits nothing, src/diff.ts's sameEntry compares modes only.)
      const rootChown = await ws.exec('chown 5:6 . && echo x > x', { mode })
      expect(rootChown.changes).toEqual({ added: ['/x'], modified: ['/'], deleted: [] })
      expect(ids(ws.fs.statSync('/'))).toBe('5:6')
      // Nothing reached the disk.
      expect(ids(fs.statSync(path.join(project, 'f')))).toBe('0:0')
      expect(ids(fs.statSync(project))).toBe('4321:8765')
    }, 60_000)
  }
})

/** Runs one scenario as the unprivileged user over the projects given; prints one JSON object. */
const CHILD = `
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'

const [scenario, ...projects] = process.argv.slice(2)
const out = { user: process.getuid() + ':' + process.getgid() }
const brief = (r) => ({ exitCode: r.exitCode, mode: r.mode, modeReason: r.modeReason, stdout: r.stdout, stderr: r.stderr, changes: r.changes })
async function open(project, run) {
  const ws = await Workspace.open({ lower: directory(project), autoCheckpoint: false })
  try { return await run(ws) } finally { await ws.close() }
}
if (scenario === 'kept') {
  // The workspace's owner of a file (root's, set through ws.fs) stays when a command writes it.
  for (const mode of ['overlay', 'copy']) {
    out[mode] = await open(projects[0], async (ws) => {
      ws.fs.chownSync('/f', 0, 0)
      const run = brief(await ws.exec('echo more >> f && touch g', { mode }))
      const ids = (p) => ws.fs.statSync(p).uid + ':' + ws.fs.statSync(p).gid
      return { run, f: ids('/f'), g: ids('/g'), content: ws.fs.readFileSync('/f', 'utf8') }
    })
  }
}
if (scenario === 'unreadable') {
  // A file of the user's own that its mode keeps from the user: both modes alike.
  for (const mode of ['overlay', 'copy']) {
    out[mode] = await open(projects[0], async (ws) => {
      const run = brief(await ws.exec('cat s; chmod 600 s && cat s', { mode }))
      const after = { mode: (ws.fs.statSync('/s').mode & 0o777).toString(8), content: ws.fs.readFileSync('/s', 'utf8') }
      const next = brief(await ws.exec('cat s', { mode }))
      await ws.undo()
      return { run, after, next: next.stdout, undone: (ws.fs.statSync('/s').mode & 0o777).toString(8) }
    })
  }
}
if (scenario === 'unmapped') {
  const [group, sudoed, clean] = projects
  // A file of the user's with another group ('users'), as in a team's shared directory.
  out.group = await open(group, async (ws) => {
    const auto = brief(await ws.exec('echo 2 >> src/f && rm g && echo ok'))
    return { auto, content: ws.fs.readFileSync('/src/f', 'utf8'), again: brief(await ws.exec('true')) }
  })
  out.forced = await open(group, async (ws) => {
    try { await ws.exec('true', { mode: 'overlay' }); return 'ran' } catch (error) { return error.code + ' ' + error.message }
  })
  // What the workspace deleted no longer shows from the project: overlay mode runs.
  out.hidden = await open(group, async (ws) => {
    ws.fs.rmSync('/src/f')
    return brief(await ws.exec('echo 3 > src/f && cat src/f'))
  })
  // After 'sudo chown -R user' a directory keeps root's group: a delete in it copies it up.
  out.sudoed = await open(sudoed, async (ws) => brief(await ws.exec('rm lib/x && mv lib/y lib/z && echo ok')))
  out.clean = await open(clean, async (ws) => brief(await ws.exec('echo more >> f')))
}
console.log(JSON.stringify(out))
`

describe('owners through exec, as an unprivileged user', () => {
  const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
  const canRun = asRoot && capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')
  const uid = Number(user?.stdout.trim())
  const gid = Number(spawnSync('id', ['-g', 'rewindfs-exec'], { encoding: 'utf8' }).stdout.trim())
  const child = path.join(root, 'child.mjs')
  let built: Promise<unknown> | undefined
  /** A project of the user's, with files. */
  const make = (name: string, files: Record<string, string>) => {
    const project = path.join(root, name)
    for (const [file, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true })
      fs.writeFileSync(path.join(project, file), content)
    }
    spawnSync('chown', ['-R', `${uid}:${gid}`, project])
    return project
  }
  const runAs = async (scenario: string, ...projects: string[]) => {
    built ??= build({ stdin: { contents: CHILD, resolveDir: new URL('.', import.meta.url).pathname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    await built
    fs.chmodSync(root, 0o755)
    const result = spawnSync('runuser', ['-u', 'rewindfs-exec', '--', process.execPath, child, scenario, ...projects], { encoding: 'utf8', timeout: 120_000 })
    expect(result.status, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout.trim())
    expect(seen.user).toBe(`${uid}:${gid}`)
    return seen
  }

  it.skipIf(!canRun)("the workspace's owners stay when a command writes (a user namespace maps only the user's ids; copy mode's files are the user's)", async () => {
    const seen = await runAs('kept', make('kept', { '/f': 'f\n', '/g': 'g\n' }))
    for (const mode of ['overlay', 'copy']) {
      expect(seen[mode]).toMatchObject({ run: { exitCode: 0, mode, changes: { added: [], modified: ['/f', '/g'], deleted: [] } }, f: '0:0', g: `${uid}:${gid}`, content: 'f\nmore\n' })
    }
  }, 120_000)

  it.skipIf(!canRun)("a file of the user's that its mode keeps from the user: refused until a chmod, then read, alike in both modes", async () => {
    const project = make('unreadable', { '/s': 'secret\n' })
    fs.chmodSync(path.join(project, 's'), 0)
    const seen = await runAs('unreadable', project)
    // The workspace holds its content and mode afterwards; undo puts the mode back.
    for (const mode of ['overlay', 'copy']) {
      expect(seen[mode].run).toMatchObject({ exitCode: 0, mode, stdout: 'secret\n', changes: { added: [], modified: ['/s'], deleted: [] } })
      expect(seen[mode].run.stderr).toMatch(/s: Permission denied/)
      expect(seen[mode]).toMatchObject({ after: { mode: '600', content: 'secret\n' }, next: 'secret\n', undone: '0' })
    }
  }, 120_000)

  it.skipIf(!canRun)("a project holding another group's files runs in copy mode, as on disk, and says why", async () => {
    const group = make('group', { '/src/f': '1\n', '/g': 'g\n' })
    fs.chownSync(path.join(group, 'src/f'), uid, 100)
    const sudoed = make('sudoed', { '/lib/x': 'x\n', '/lib/y': 'y\n' })
    fs.chownSync(path.join(sudoed, 'lib'), uid, 0)
    const seen = await runAs('unmapped', group, sudoed, make('clean', { '/f': 'f\n' }))
    // As on disk: the write and the delete work.
    expect(seen.group.auto).toMatchObject({ exitCode: 0, mode: 'copy', stdout: 'ok\n', stderr: '', changes: { added: [], modified: ['/src/f'], deleted: ['/g'] } })
    expect(seen.group.auto.modeReason).toMatch(new RegExp(`^overlay mode could not be set up: '/src/f' in the project belongs to uid ${uid}, gid 100, and a user namespace maps only this user's ${uid}:${gid}: overlayfs could not copy it up \\(EOVERFLOW\\)`))
    expect(seen.group.content).toBe('1\n2\n')
    expect(seen.group.again.mode).toBe('copy')
    expect(seen.group.again.modeReason).toMatch(/^overlay mode could not be set up earlier in this workspace: '\/src\/f' in the project/)
    expect(seen.forced).toMatch(/^ENOTSUP rewindfs: exec: overlay mode could not be set up: '\/src\/f' in the project belongs to/)
    expect(seen.hidden).toMatchObject({ exitCode: 0, mode: 'overlay', stdout: '3\n', changes: { added: ['/src/f'], modified: [], deleted: [] } })
    expect(seen.sudoed).toMatchObject({ exitCode: 0, mode: 'copy', stdout: 'ok\n', stderr: '', changes: { added: ['/lib/z'], modified: [], deleted: ['/lib/x', '/lib/y'] } })
    expect(seen.sudoed.modeReason).toMatch(/'\/lib' in the project belongs to uid \d+, gid 0,/)
    expect(seen.clean).toMatchObject({ exitCode: 0, mode: 'overlay', changes: { modified: ['/f'] } })
  }, 120_000)
})
