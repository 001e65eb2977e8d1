/**
 * What an unprivileged user may do with project entries whose mode forbids reading: the same calls
 * on a real directory with node:fs are the oracle, run as that user (as root the kernel skips the
 * permission checks, so the test runs a child as the unprivileged test user). `rm -r` of a
 * directory it may not list (0311) succeeded in the workspace, where Linux's rm cannot list it to
 * unlink its entries (EACCES): the agent was told it worked, and the flush then refused.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { capability } from './support/require.js'

// World-readable, so the unprivileged user can run the bundled child from here.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lower-permissions-'))
fs.chmodSync(scratch, 0o755)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const asRoot = process.getuid?.() === 0
const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
// As root, a child runs as the test user; as another user, this process's own permissions apply.
const canRun = !asRoot || capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')

/**
 * Each scenario runs on a fresh project twice, in a real directory through node:fs (from inside it,
 * so relative paths name the same entries) and in a workspace over it (relative to its '/'). It
 * reports every step's outcome (a value, or the error's Node fields) and the tree left, as `find`
 * would list it. The project: `d` (0311: search, no read) holding `f` and `sub/`; `e` (0311, empty);
 * `w/x/deep` (0311, holding `g`); `z`, a file of mode 000.
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
  fs.mkdirSync(root + '/d/sub', { recursive: true })
  fs.writeFileSync(root + '/d/f', 'f')
  fs.mkdirSync(root + '/e')
  fs.mkdirSync(root + '/w/x/deep', { recursive: true })
  fs.writeFileSync(root + '/w/x/deep/g', 'g')
  fs.writeFileSync(root + '/z', 'secret')
  for (const dir of ['/d', '/e', '/w/x/deep']) fs.chmodSync(root + dir, 0o311)
  fs.chmodSync(root + '/z', 0)
  return root
}
const shape = (error) => ({ code: error.code, errno: error.errno, syscall: error.syscall, path: error.path, dest: error.dest, message: error.message })
const printable = (value) => (value === undefined ? 'ok' : Buffer.isBuffer(value) || value instanceof Uint8Array ? Buffer.from(value).toString() : value)
async function outcome(step) {
  try {
    return printable(await step())
  } catch (error) {
    return shape(error)
  }
}
/** The tree as a listing shows it, its unlistable directories marked. */
function tree(fsys, dir) {
  const out = []
  const walk = (at) => {
    let names
    try {
      names = fsys.readdirSync(at).sort()
    } catch (error) {
      out.push(at + ' (' + error.code + ')')
      return
    }
    for (const name of names) {
      const child = at === '.' ? name : at + '/' + name
      const stat = fsys.lstatSync(child)
      out.push(child + ' ' + (stat.mode & 0o7777).toString(8))
      if (stat.isDirectory()) walk(child)
    }
  }
  walk(dir)
  return out
}

const scenarios = {
  'rmSync -r': (f) => [() => f.rmSync('d', { recursive: true })],
  'rmSync -rf': (f) => [() => f.rmSync('d', { recursive: true, force: true })],
  'rm -r (callback)': (f) => [() => new Promise((resolve, reject) => f.rm('d', { recursive: true }, (error) => (error ? reject(error) : resolve())))],
  'rm -r (promise)': (f) => [() => f.promises.rm('d', { recursive: true })],
  'rmdir recursive': (f) => [() => f.rmdirSync('d', { recursive: true })],
  'rm -r of a directory above one': (f) => [() => f.rmSync('w', { recursive: true }), () => f.promises.rm('w/', { recursive: true })],
  'rmdir': (f) => [() => f.rmdirSync('d')],
  'readdir': (f) => [() => f.readdirSync('d'), () => f.readdirSync('d', { withFileTypes: true }), () => f.promises.readdir('d')],
  'a rename over it': (f) => [() => f.mkdirSync('n'), () => f.renameSync('n', 'd')],
  'written in, then listed and removed': (f) => [() => f.writeFileSync('d/new', 'n'), () => f.readdirSync('d'), () => f.rmSync('d', { recursive: true, force: true }), () => f.readFileSync('d/new', 'utf8')],
  'a file of mode 000': (f) => [() => f.readFileSync('z'), () => f.statSync('z').mode & 0o777],
  'rm -r of what it may list': (f) => [() => f.rmSync('d/sub', { recursive: true }), () => f.unlinkSync('d/f')],
  'renamed, then listed and removed': (f) => [() => f.renameSync('d', 'moved'), () => f.readdirSync('moved'), () => f.rmSync('moved', { recursive: true })],
  'a recursive listing': (f) => [() => f.readdirSync('w', { recursive: true }), () => f.promises.readdir('w/', { recursive: true, withFileTypes: true })],
  // Where the workspace answers otherwise (README, Limits and hosts): see KNOWN below.
  ...removals('e', 'an empty one removed'),
  ...removals('d', 'a full one removed'),
  'a file of mode 000 made readable and renamed': (f) => [() => f.chmodSync('z', 0o600), () => f.renameSync('z', 'z2'), () => f.readFileSync('z2', 'utf8')],
  // opendir(3) fails where it may not list (Node 20's opendirSync names no path); Dir reads below fail as readdir.
  'opendir': (f) => [
    () => f.opendirSync('d'),
    () => f.opendirSync(Buffer.from('d')),
    () => f.promises.opendir('./d'),
    () => new Promise((resolve, reject) => f.opendir('d', (error, dir) => (error ? reject(error) : resolve(dir)))),
    () => f.promises.opendir('w/x/deep/'),
  ],
  // cp lists each directory with opendir; what it made before it failed stays.
  'cp -r': (f) => [
    () => f.cpSync('d', 'c1', { recursive: true }),
    () => f.promises.cp('d', 'c2', { recursive: true }),
    () => new Promise((resolve, reject) => f.cp('d', 'c3', { recursive: true }, (error) => (error ? reject(error) : resolve()))),
    () => f.cpSync('w', 'c4', { recursive: true }),
    () => f.promises.cp('./w/', 'c5', { recursive: true }),
  ],
}

/**
 * Every way to remove a directory (or replace it by a rename), one scenario each: 'e', an empty one
 * Linux removes (rmdir(2) needs no read permission on it), against 'd', which holds entries.
 */
function removals(dir, title) {
  const call = (run) => new Promise((resolve, reject) => run((error) => (error ? reject(error) : resolve())))
  const forms = {
    rmdirSync: (f) => f.rmdirSync(dir),
    'rmdir (callback)': (f) => call((cb) => f.rmdir(dir, cb)),
    'rmdir (promise)': (f) => f.promises.rmdir('./' + dir),
    'rmdirSync recursive': (f) => f.rmdirSync(dir, { recursive: true }),
    'rmSync -r': (f) => f.rmSync(dir, { recursive: true }),
    'rmSync -rf': (f) => f.rmSync(dir + '/', { recursive: true, force: true }),
    'rm -r (callback)': (f) => call((cb) => f.rm(dir, { recursive: true }, cb)),
    'rm -r (promise)': (f) => f.promises.rm(dir, { recursive: true }),
    'a rename of an empty one over it': (f) => (f.mkdirSync('n'), f.renameSync('n', dir)),
  }
  return Object.fromEntries(Object.entries(forms).map(([form, remove]) => [title + ': ' + form, (f) => [() => remove(f)]]))
}

const sources = { directory: (root) => directory(root), 'sync-fs': (root) => syncFsSource(fs, root) }
const results = {}
for (const [name, steps] of Object.entries(scenarios)) {
  const real = project()
  const here = process.cwd()
  process.chdir(real)
  const oracle = []
  for (const step of steps(fs)) oracle.push(await outcome(step))
  const oracleTree = tree(fs, '.')
  process.chdir(here)
  const workspaces = {}
  for (const [kind, source] of Object.entries(sources)) {
    const ws = await Workspace.open({ lower: source(project()) })
    const workspace = []
    for (const step of steps(ws.fs)) workspace.push(await outcome(step))
    workspaces[kind] = { workspace, workspaceTree: tree(ws.fs, '.') }
    await ws.close()
  }
  results[name] = { oracle, oracleTree, workspaces }
}
console.log(JSON.stringify(results))
`

describe('project entries this user may not read', () => {
  it.skipIf(!canRun)('rm -r, rmdir, readdir and rename over a directory it may not list fail as on Linux, nothing removed', async () => {
    const child = path.join(scratch, 'child.mjs')
    await build({ stdin: { contents: CHILD, resolveDir: import.meta.dirname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    const base = path.join(scratch, 'projects')
    fs.mkdirSync(base)
    if (asRoot) fs.chownSync(base, Number(user!.stdout.trim()), Number(user!.stdout.trim()))
    const command = asRoot ? ['runuser', '-u', 'rewindfs-exec', '--', process.execPath] : [process.execPath]
    const result = spawnSync(command[0], [...command.slice(1), child, base], { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    type Run = { workspace: unknown[]; workspaceTree: string[] }
    const seen = JSON.parse(result.stdout) as Record<string, { oracle: unknown[]; oracleTree: string[]; workspaces: Record<string, Run> }>
    const refused = (code: string, syscall: string, path: string) => expect.objectContaining({ code, syscall, path })
    const KNOWN: Record<string, { oracle: unknown[]; workspace: unknown[] }> = {
      // A rename or chmod copies a lower file up, reading its content (Overlay.copyUp): it fails
      // as the call, naming the paths as given (never the host's).
      'a file of mode 000 made readable and renamed': { oracle: ['ok', 'ok', 'secret'], workspace: [refused('EACCES', 'chmod', 'z'), expect.objectContaining({ code: 'EACCES', syscall: 'rename', path: 'z', dest: 'z2' }), refused('ENOENT', 'open', 'z2')] },
    }
    expect(Object.keys(seen)).toEqual(expect.arrayContaining(Object.keys(KNOWN)))
    // Whether a directory it may not list is empty no one without read permission can tell (a link
    // count of 2 says it holds no directory, not no file): rmdir(2) knows, the workspace refuses
    // exactly as Linux refuses one that holds something, and never removes on a guess.
    const EMPTY = 'an empty one removed: '
    const empties = Object.keys(seen).filter((name) => name.startsWith(EMPTY))
    expect(empties).toHaveLength(9)
    for (const name of empties) {
      const full = seen['a full one removed: ' + name.slice(EMPTY.length)]
      expect(seen[name].oracle, name).toEqual(['ok'])
      expect(full.oracle, name).toEqual([expect.objectContaining({ code: expect.stringMatching(/^(ENOTEMPTY|EACCES)$/) })])
      const asForTheFullOne = JSON.parse(JSON.stringify(full.oracle).replace(/'(\.\/)?d(\/?)'/g, "'$1e$2'").replace(/"(\.\/)?d(\/?)"/g, '"$1e$2"'))
      for (const [kind, { workspace }] of Object.entries(seen[name].workspaces)) expect(workspace, `${name} (${kind})`).toEqual(asForTheFullOne)
    }
    for (const [name, { oracle, oracleTree, workspaces }] of Object.entries(seen)) {
      expect(Object.keys(workspaces), name).toEqual(['directory', 'sync-fs'])
      if (name.startsWith(EMPTY)) continue
      for (const [kind, { workspace, workspaceTree }] of Object.entries(workspaces)) {
        if (KNOWN[name]) {
          expect({ oracle, workspace }, `${name} (${kind})`).toEqual(KNOWN[name])
          continue
        }
        expect(workspace, `${name} (${kind})`).toEqual(oracle)
        expect(workspaceTree, `${name} (${kind})`).toEqual(oracleTree)
      }
    }
  }, 60_000)
})
