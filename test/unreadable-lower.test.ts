/**
 * A project file this process may not read (mode 000, another user's 0600) can still be deleted
 * and brought back by undo, as on disk, where removing a name needs no read permission:
 * undo's report read the old content to count lines, and its EACCES failed every later undo. Run
 * as the unprivileged test user (root reads everything).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { capability } from './support/require.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-unreadable-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0

const CHILD = `
import fs from 'node:fs'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'

const [project] = process.argv.slice(2)
const results = {}
for (const change of ['unlink', 'rename', 'rm -r']) {
  const ws = await Workspace.open({ lower: directory(project) })
  let refused
  try {
    if (change === 'unlink') ws.fs.unlinkSync('/secret')
    if (change === 'rename') ws.fs.renameSync('/secret', '/moved')
    if (change === 'rm -r') ws.fs.rmSync('/dir', { recursive: true })
  } catch (error) {
    refused = error.code
  }
  const gone = ws.fs.readdirSync('/').join(',')
  if (refused !== undefined) {
    results[change] = { refused, tree: gone, history: ws.history().length }
    await ws.close()
    continue
  }
  let undo
  try {
    const result = await ws.undo()
    undo = { undone: result.undone.length, files: result.filesAffected }
  } catch (error) {
    undo = { error: error.code + ' ' + error.message }
  }
  let read
  try {
    ws.fs.readFileSync(change === 'rm -r' ? '/dir/secret' : '/secret')
    read = 'read'
  } catch (error) {
    read = error.code
  }
  results[change] = { gone, undo, after: ws.fs.readdirSync('/').join(','), read, disk: fs.readdirSync(project).join(',') }
  await ws.close()
}
console.log(JSON.stringify(results))
`

describe('a lower file this process cannot read', () => {
  const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
  const canRun = asRoot && capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')
  it.skipIf(!canRun)('is deleted and removed with its directory, and undo brings it back; a rename is refused whole (run as an unprivileged user)', async () => {
    const child = path.join(root, 'child.mjs')
    await build({ stdin: { contents: CHILD, resolveDir: new URL('.', import.meta.url).pathname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    const uid = Number(user!.stdout.trim())
    const project = path.join(root, 'project')
    fs.mkdirSync(path.join(project, 'dir'), { recursive: true })
    fs.writeFileSync(path.join(project, 'secret'), 'root only\n')
    fs.writeFileSync(path.join(project, 'dir', 'secret'), 'root only\n')
    fs.chmodSync(path.join(project, 'secret'), 0o600)
    fs.chmodSync(path.join(project, 'dir', 'secret'), 0o600)
    // The user may change the names in its project's directories, not read root's files.
    fs.chownSync(project, uid, uid)
    fs.chownSync(path.join(project, 'dir'), uid, uid)
    fs.chmodSync(root, 0o755)
    const result = spawnSync('runuser', ['-u', 'rewindfs-exec', '--', process.execPath, child, project], { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout.trim())
    expect(seen.unlink).toEqual({ gone: 'dir', undo: { undone: 1, files: 1 }, after: 'dir,secret', read: 'EACCES', disk: 'dir,secret' })
    // A rename copies the file up, which needs its content (README, Limits): refused, nothing changed.
    expect(seen.rename).toEqual({ refused: 'EACCES', tree: 'dir,secret', history: 0 })
    expect(seen['rm -r']).toMatchObject({ gone: 'secret', undo: { undone: 1 }, after: 'dir,secret', read: 'EACCES' })
  }, 60_000)
})
