/**
 * What a flush into a real directory reports when it cannot carry a replaced file's extended
 * attributes over (FlushReport.xattrsNotKept[].why): getfattr's or setfattr's own message, with the
 * host paths it names as workspace paths, as the rest of the flush's report and errors name them.
 * The tools fail for real: the flush runs as the unprivileged exec test user, over a file whose
 * user.* attributes it may no longer read (made mode 000 while the flush stages), or onto a temp it
 * may not set them on (mode 0444: user.* attributes need write permission). getfattr run by that
 * user on the same file is the oracle.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { EXEC_USER, userProblem } from './support/exec-user-run.js'
import { capability } from './support/require.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-flush-xattr-paths-`))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** A flush of one changed file, run as the user: the report's xattrsNotKept as JSON. */
const SCRIPT = `
const { directory } = await import('./adapters/node-fs/index.ts')
const { Workspace } = await import('./src/index.ts')
const fs = await import('node:fs')
const [root, path, mode, race] = process.argv.slice(1)
const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
// Written anew (no copy-up, which would read a file the user may not read): it replaces the file on disk.
ws.fs.rmSync(path)
ws.fs.writeFileSync(path, 'new\\n')
ws.fs.chmodSync(path, Number(mode))
// Unreadable from the moment the flush stages (it read the file before, to pin what it replaces):
// the user's own hand on disk, racing the flush, which is forced (its last look would refuse the change).
const racing = race === 'unreadable'
const report = await ws.flush(directory(root), { force: racing, onProgress: () => racing && fs.chmodSync(root + path, 0) })
console.log(JSON.stringify({ xattrsNotKept: report.xattrsNotKept ?? [] }))
await ws.close()
`

const asUser = process.getuid?.() === 0 ? capability('exec-user', userProblem()) : false
/** Whether the scratch directory's file system keeps user.* attributes at all. */
const xattrsHere = (() => {
  const probe = `${scratch}/probe`
  fs.writeFileSync(probe, '')
  return spawnSync('setfattr', ['-n', 'user.probe', '-v', '1', probe]).status === 0
})()

let serial = 0
/** A project of the user's own whose `/src/a.ts` has a user.* attribute and mode `mode`. */
function project(mode: number): string {
  const root = `${scratch}/project${serial++}`
  fs.mkdirSync(`${root}/src`, { recursive: true })
  fs.writeFileSync(`${root}/src/a.ts`, 'a\n')
  execFileSync('setfattr', ['-n', 'user.note', '-v', 'kept', `${root}/src/a.ts`])
  fs.chmodSync(scratch, 0o755)
  execFileSync('chown', ['-R', EXEC_USER, root])
  fs.chmodSync(`${root}/src/a.ts`, mode)
  return root
}

function flushAsUser(root: string, path: string, mode: number, race = ''): { target: string; paths: string[]; why: string }[] {
  const result = spawnSync('runuser', ['-u', EXEC_USER, '--', process.execPath, '--import', 'tsx', '--input-type=module', '-e', SCRIPT, root, path, String(mode), race], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', TMPDIR: os.tmpdir() },
    encoding: 'utf8',
    timeout: 60_000,
  })
  expect(result.stderr).toBe('')
  return (JSON.parse(result.stdout) as { xattrsNotKept: { target: string; paths: string[]; why: string }[] }).xattrsNotKept
}

describe.skipIf(!asUser || !xattrsHere)(`a flush as ${EXEC_USER} that cannot keep a file's extended attributes`, () => {
  it('getfattr refused (the replaced file made mode 000 while the flush staged): reported, and why names the workspace path', () => {
    // The oracle: the same read by the same user of a file like it is refused, naming the host path,
    // and getfattr still exits 0.
    const root = project(0o644)
    const oracle = `${root}-oracle`
    fs.writeFileSync(oracle, 'a\n')
    execFileSync('setfattr', ['-n', 'user.note', '-v', 'kept', oracle])
    execFileSync('chown', [EXEC_USER, oracle])
    fs.chmodSync(oracle, 0)
    const native = spawnSync('runuser', ['-u', EXEC_USER, '--', 'getfattr', '--absolute-names', '-d', '-m', '^user\\.', oracle], { encoding: 'utf8' })
    expect({ status: native.status, stderr: native.stderr.trim() }).toEqual({ status: 0, stderr: `${oracle}: user.note: Permission denied` })

    const notKept = flushAsUser(root, '/src/a.ts', 0o644, 'unreadable')
    expect(notKept).toHaveLength(1)
    expect(notKept[0]).toMatchObject({ paths: ['/src/a.ts'], why: 'getfattr: /src/a.ts: user.note: Permission denied' })
    expect(notKept[0].why).not.toContain(scratch)
    // The flush itself went through.
    expect(fs.readFileSync(`${root}/src/a.ts`, 'utf8')).toBe('new\n')
  }, 60_000)

  it('setfattr refused (the new file is 0444, and user.* attributes need write permission): why names the file the temp stands for', () => {
    const root = project(0o644)
    const notKept = flushAsUser(root, '/src/a.ts', 0o444)
    expect(notKept).toHaveLength(1)
    expect(notKept[0]).toMatchObject({ paths: ['/src/a.ts'], why: 'setfattr: /src/a.ts: Permission denied' })
    expect(notKept[0].why).not.toContain(scratch)
    expect(fs.readFileSync(`${root}/src/a.ts`, 'utf8')).toBe('new\n')
    expect(fs.statSync(`${root}/src/a.ts`).mode & 0o777).toBe(0o444)
  }, 60_000)
})
