/**
 * The errors of calls that read a project entry this user may not read (a file of mode 000 or 0200,
 * entries under a directory of mode 0600: listable, not searchable) name the path as the caller gave
 * it, as Node does: relative, with '..', from a Buffer or a file: URL. open, copyFile, truncate,
 * readlink and the rest named the workspace's absolute path instead (a sync-fs source: the host's,
 * telling the agent where the project lives), with the source's syscall ('lstat' for a stat), and
 * open succeeded where Node's fails. The oracle: the same calls through node:fs on a real directory,
 * run as the unprivileged test user (as root the kernel skips the permission checks).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { syncFsSource } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

// World-readable, so the unprivileged user can run the bundled child from here.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lower-error-paths-'))
fs.chmodSync(scratch, 0o755)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const asRoot = process.getuid?.() === 0
const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
// As root, a child runs as the test user; as another user, this process's own permissions apply.
const canRun = !asRoot || capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')

/**
 * Each group of calls runs on a fresh project in a real directory through node:fs (from inside it)
 * and in a workspace over each kind of source (relative to its '/'); a file: URL names the root's
 * place on the host for node:fs, '/' in the workspace, so the oracle's errors are compared with
 * that prefix taken out. The project: `z` (mode 000), `w` (0200), `lz` a link to `z`, `d/` (an
 * ordinary directory, for 'd/../z'), `nox/` (0600) holding `f` and the link `l`, `u/` (0311: searchable, not listable).
 */
const CHILD = `
import fs from 'node:fs'
import path from 'node:path'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { syncFsSource } from '../src/adapter-kit.js'

const [base] = process.argv.slice(2)
let serial = 0
function project() {
  const root = path.join(base, 'p' + serial++)
  fs.mkdirSync(root + '/d', { recursive: true })
  fs.writeFileSync(root + '/z', 'secret')
  fs.writeFileSync(root + '/w', 'write only')
  fs.symlinkSync('z', root + '/lz')
  fs.mkdirSync(root + '/u')
  fs.mkdirSync(root + '/nox')
  fs.writeFileSync(root + '/nox/f', 'f')
  fs.symlinkSync('f', root + '/nox/l')
  fs.chmodSync(root + '/z', 0)
  fs.chmodSync(root + '/w', 0o200)
  fs.chmodSync(root + '/nox', 0o600)
  fs.chmodSync(root + '/u', 0o311)
  return root
}
const shape = (error) => ({ code: error.code, errno: error.errno, syscall: error.syscall, path: error.path, dest: error.dest, message: error.message })
async function outcome(step) {
  try {
    const value = await step()
    return value === undefined ? 'ok' : typeof value === 'number' ? 'a descriptor' : String(value)
  } catch (error) {
    return shape(error)
  }
}
const streamed = (stream) => new Promise((resolve, reject) => stream.on('error', reject).on('data', () => {}).on('end', () => resolve('read')))
const called = (call) => new Promise((resolve, reject) => call((error, value) => (error ? reject(error) : resolve(value))))

/** The forms a caller names the unreadable file by; \`url\` is the file: URL of the root. */
const forms = (url) => ({ plain: 'z', dot: './z', dotdot: 'd/../z', buffer: Buffer.from('z'), url: new URL('z', url) })
const groups = {
  ...Object.fromEntries(
    ['plain', 'dot', 'dotdot', 'buffer', 'url'].map((form) => [
      'a file of mode 000 named ' + form,
      (f, url) => {
        const z = forms(url)[form]
        return [
          () => f.readFileSync(z),
          () => f.promises.readFile(z),
          () => f.openSync(z, 'r'),
          () => f.openSync(z, 'r+'),
          () => f.promises.open(z),
          () => called((cb) => f.open(z, cb)),
          () => streamed(f.createReadStream(z)),
          () => f.copyFileSync(z, 'c'),
          () => f.promises.copyFile(z, 'c'),
          () => f.truncateSync(z, 1),
          () => f.promises.truncate(z),
          () => f.appendFileSync(z, 'x'),
          () => f.writeFileSync(z, 'x', { flag: 'r+' }),
          // Node's cp takes no Buffer path (ERR_INVALID_ARG_TYPE), the workspace's does: not compared here.
          ...(form === 'buffer' ? [] : [() => f.cpSync(z, 'c'), () => f.promises.cp(z, 'c')]),
        ]
      },
    ]),
  ),
  'a file of mode 0200 and a link to one of 000': (f) => [
    () => f.readFileSync('w'),
    () => f.openSync('./w', 'r'),
    () => f.truncateSync('w'),
    () => f.readFileSync('lz'),
    () => f.copyFileSync('lz', 'c'),
    () => f.openSync('d/../lz', 'r'),
  ],
  // access(2) checks with this process's permissions: reading what it may not read is refused.
  'access to read': (f) => [
    () => f.accessSync('z', fs.constants.R_OK),
    () => f.promises.access('./w', fs.constants.R_OK | fs.constants.W_OK),
    () => called((cb) => f.access('lz', fs.constants.R_OK, cb)),
    () => f.accessSync('u', fs.constants.R_OK),
    () => f.accessSync('u/', fs.constants.X_OK),
    () => f.accessSync('z'),
    () => f.accessSync('nox', fs.constants.R_OK),
    () => f.accessSync('d', fs.constants.R_OK),
  ],
  'entries under a directory it may not search': (f) => [
    () => f.readlinkSync('nox/l'),
    () => f.readlinkSync('./nox/l'),
    () => f.promises.readlink(Buffer.from('nox/l')),
    () => f.statSync('nox/f'),
    () => f.lstatSync('d/../nox/f'),
    () => f.readFileSync('nox/f'),
    () => f.openSync('nox/f', 'r'),
    () => f.copyFileSync('nox/f', 'c'),
    () => f.copyFileSync('d/../z', 'nox/c'),
    () => f.truncateSync('nox/f'),
    () => f.unlinkSync('nox/f'),
    () => f.renameSync('nox/f', 'g'),
    () => f.mkdirSync('nox/n'),
    () => f.writeFileSync('nox/n', 'x'),
    () => f.symlinkSync('x', 'nox/s'),
    () => f.accessSync('nox/f'),
    () => f.existsSync('nox/f'),
    () => f.chmodSync('nox/f', 0o644),
    () => f.realpathSync.native('nox/f'),
    () => f.rmSync('nox/f'),
    () => f.openAsBlob('nox/f'),
  ],
}

const sources = { directory: (root) => directory(root), 'sync-fs': (root) => syncFsSource(fs, root) }
const results = {}
for (const [name, steps] of Object.entries(groups)) {
  const real = project()
  const here = process.cwd()
  process.chdir(real)
  const oracle = []
  for (const step of steps(fs, new URL('file://' + real + '/'))) oracle.push(await outcome(step))
  process.chdir(here)
  // A file: URL names the root's place on the host there, '/' in the workspace.
  const unrooted = JSON.parse(JSON.stringify(oracle).replaceAll(real, ''))
  const workspaces = {}
  for (const [kind, source] of Object.entries(sources)) {
    const ws = await Workspace.open({ lower: source(project()) })
    const workspace = []
    for (const step of steps(ws.fs, new URL('file:///'))) workspace.push(await outcome(step))
    workspaces[kind] = workspace
    await ws.close()
  }
  results[name] = { oracle: unrooted, workspaces }
}
console.log(JSON.stringify(results))
`

describe('errors of calls on project entries this user may not read', () => {
  it.skipIf(!canRun)('name the path as the caller gave it, with the syscall Node reports, from either source', async () => {
    const child = path.join(scratch, 'child.mjs')
    await build({ stdin: { contents: CHILD, resolveDir: import.meta.dirname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    const base = path.join(scratch, 'projects')
    fs.mkdirSync(base)
    if (asRoot) fs.chownSync(base, Number(user!.stdout.trim()), Number(user!.stdout.trim()))
    const command = asRoot ? ['runuser', '-u', 'rewindfs-exec', '--', process.execPath] : [process.execPath]
    const result = spawnSync(command[0], [...command.slice(1), child, base], { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout) as Record<string, { oracle: unknown[]; workspaces: Record<string, unknown[]> }>
    expect(Object.keys(seen)).toHaveLength(8)
    for (const [name, { oracle, workspaces }] of Object.entries(seen)) {
      for (const [kind, workspace] of Object.entries(workspaces)) expect(workspace, `${name} (${kind})`).toEqual(oracle)
    }
    // The oracle did refuse: a user that could read these would compare nothing.
    expect(seen['a file of mode 000 named plain'].oracle[0]).toMatchObject({ code: 'EACCES', syscall: 'open', path: 'z' })
  }, 60_000)
})

describe('open ahead of a read', () => {
  it('reads nothing ahead of a project file this process may read by its mode and owner (0600, 0640 of its own)', async () => {
    const root = fs.mkdtempSync(path.join(scratch, 'own-'))
    for (const [name, mode] of [['private', 0o600], ['group', 0o640], ['all', 0o644]] as const) {
      fs.writeFileSync(path.join(root, name), name)
      fs.chmodSync(path.join(root, name), mode)
    }
    let reads = 0
    const counting = { ...fs, readFileSync: (...args: Parameters<typeof fs.readFileSync>) => (reads++, fs.readFileSync(...args)) } as typeof fs
    const ws = await Workspace.open({ lower: syncFsSource(counting, root), autoCheckpoint: false })
    for (const name of ['private', 'group', 'all']) ws.fs.closeSync(ws.fs.openSync(`/${name}`, 'r'))
    // open(2) of a file it may read fails nowhere: the bytes are read when they are wanted, once.
    expect(reads).toBe(0)
    expect(ws.fs.readFileSync('/private', 'utf8')).toBe('private')
    expect(reads).toBe(1)
    await ws.close()
  })
})
