/**
 * The commands the CLI suggests next (after run, shell and checkpoint) are pasted into a shell as
 * printed and act on the same session of the same store: --session is in them, every word is quoted
 * as a POSIX shell needs (a URL's '&schema=' split the command in two), and the store's password is
 * left out (it was `***`, which then failed to log in) with a note that the command reads it from
 * PGPASSWORD. Each suggestion here is run through sh, as a user would paste it.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI, buildCli, removeCli, runCli } from './cli-process.js'
import { dropSchema, scratchSchema, serverUrl } from './postgres-server.js'
import * as pack from './support/pack-raw.js'

const url = await serverUrl()
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs pg hints '))

/** Runs a suggested command through sh, `rewindfs` being this CLI (with --json), PGPASSWORD given or not. */
function paste(command: string, env: Record<string, string | undefined> = {}): { code: number | null; stdout: string; stderr: string } {
  // --json right after the command's name: after a '--' it would be a positional.
  const result = spawnSync('sh', ['-c', `rewindfs() { name=$1; shift; "$REWINDFS_NODE" "$REWINDFS_CLI" "$name" --json "$@"; }\n${command}`], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: undefined, NO_COLOR: '1', REWINDFS_NODE: process.execPath, REWINDFS_CLI: CLI, ...env },
    timeout: 60_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

function project(name: string): string {
  const dir = path.join(tmp, name)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'a.txt'), 'hello\n')
  return dir
}

beforeAll(async () => {
  await buildCli()
}, 120_000)
afterAll(() => {
  removeCli()
  fs.rmSync(tmp, { recursive: true, force: true })
})

describe.skipIf(url === undefined)('suggested commands on a postgres store', () => {
  const schema = scratchSchema('pghints')
  const password = () => new URL(url!).password
  const store = () => `${url!}&schema=${schema}`
  afterAll(async () => {
    await dropSchema(url!, schema)
  })

  it("run's diff / undo / flush and checkpoint's restore name the session and the store without its password, quoted, and work pasted", () => {
    const dir = project('agent one')
    const session = "agent's one"
    const ran = runCli(['run', '--dir', dir, '--store', store(), '--session', session, '--', 'sh', '-c', 'echo changed > a.txt'])
    expect(ran.code).toBe(0)
    const recorded = ran.stderr.match(/^recorded as one operation in .* \((rewindfs diff \/ undo \/ flush .*); (the store's password is left out: the command reads it from PGPASSWORD)\)$/m)
    expect(recorded, ran.stderr).not.toBeNull()
    const next = recorded![1]
    expect(next).toContain(`--session 'agent'\\''s one'`)
    expect(next).toContain(`--dir '${dir}'`)
    expect(next).toContain(`'postgresql://rewindfs@localhost/rewindfs?host=`)
    expect(ran.stderr).not.toContain(`:${password()}@`)

    // Pasted with the password in PGPASSWORD, diff acts on the session the run recorded into.
    const diff = paste(next.replace('diff / undo / flush', 'diff'), { PGPASSWORD: password() })
    expect(diff.code, diff.stderr).toBe(0)
    expect(JSON.parse(diff.stdout).changes).toEqual([{ path: '/a.txt', type: 'modified', entry: 'file' }])
    // Without it, the login is refused: nothing guessed, nothing shown.
    expect(paste(next.replace('diff / undo / flush', 'diff')).code).toBe(1)

    const made = runCli(['checkpoint', 'before it is done', '--dir', dir, '--store', store(), '--session', session])
    expect(made.code).toBe(0)
    const restore = made.stdout.match(/^(rewindfs restore .*) brings the workspace back to it \(the store's password is left out: the command reads it from PGPASSWORD\)$/m)
    expect(restore, made.stdout).not.toBeNull()
    expect(restore![1]).toMatch(/^rewindfs restore 'before it is done' --dir '.*' --store 'postgresql:\/\/rewindfs@localhost\/rewindfs\?host=[^' ]*&schema=[^' ]*' --session 'agent'\\''s one'$/)
    expect(made.stdout).not.toContain(`:${password()}@`)
    const restored = paste(restore![1], { PGPASSWORD: password() })
    expect(restored.code, restored.stderr).toBe(0)
    expect(JSON.parse(restored.stdout)).toMatchObject({ applied: true, checkpoint: { name: 'before it is done', session: "agent's one" } })
  })

  it('a store given without a password is suggested as given, with no note', () => {
    const dir = project('no-password')
    const plain = new URL(store())
    plain.password = ''
    const ran = runCli(['run', '--dir', dir, '--store', plain.href, '--', 'sh', '-c', 'echo x > b.txt'], { PGPASSWORD: password() })
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stderr).toContain(`(rewindfs diff / undo / flush --dir '${dir}' --store '${plain.href}')`)
  })
})

describe('suggested commands on a directory store', () => {
  it('quote a store path holding a space, and a checkpoint named like an option is passed after --', () => {
    const dir = project('plain')
    const store = path.join(tmp, 'the store')
    const ran = runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'echo changed > a.txt'])
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stderr).toContain(`(rewindfs diff / undo / flush --dir '${dir}' --store '${store}')`)
    const made = runCli(['checkpoint', '--dir', dir, '--store', store, '--', '-v1'])
    expect(made.code, made.stderr).toBe(0)
    const restore = made.stdout.match(/^(rewindfs restore .*) brings the workspace back to it$/m)
    expect(restore![1]).toBe(`rewindfs restore --dir '${fs.realpathSync(dir)}' --store '${store}' -- -v1`)
    const restored = paste(restore![1])
    expect(restored.code, restored.stderr).toBe(0)
    expect(JSON.parse(restored.stdout)).toMatchObject({ applied: true, checkpoint: { name: '-v1' } })
  })
  it("undo's and restore's guard checkpoints are suggested with the project and the store, and work pasted", () => {
    const dir = project('guarded')
    const store = path.join(tmp, 'guarded store')
    expect(runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'echo edited > a.txt']).code).toBe(0)
    const undone = runCli(['undo', '--dir', dir, '--store', store])
    expect(undone.code, undone.stderr).toBe(0)
    const takeBack = undone.stdout.match(/holds the workspace as it was: (rewindfs restore .*) takes this undo back$/m)
    expect(takeBack?.[1], undone.stdout).toContain(`--store '${store}'`)
    const restored = paste(takeBack![1])
    expect(restored.code, restored.stderr).toBe(0)
    const shown = runCli(['diff', '--dir', dir, '--store', store, '--json'])
    expect(JSON.parse(shown.stdout).changes.map((change: { path: string }) => change.path)).toEqual(['/a.txt'])
    const guard = JSON.parse(restored.stdout).guard.id
    const again = runCli(['restore', guard, '--dir', dir, '--store', store])
    expect(again.stdout).toMatch(new RegExp(`guard checkpoint \\S+: rewindfs restore \\S+ --dir '?${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'? --store '${store}' takes this back`))
  })
  it("verify's advice names the store quoted, pasteable once the project is filled in", () => {
    const dir = project('damaged')
    const store = path.join(tmp, 'damaged store')
    expect(runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'echo notes > notes.md']).code).toBe(0)
    const [id] = [...pack.blobRecords(store)].find(([, record]) => record.payload.toString('utf8') === 'notes\n')!
    pack.setBlob(store, id, Buffer.from('Notes\n'))
    const verified = runCli(['verify', '--store', store])
    expect(verified.code).toBe(1)
    const status = verified.stdout.match(/(rewindfs status .*) --dir <project> names the paths/)
    expect(status?.[1], verified.stdout).toBe(`rewindfs status --store '${store}'`)
    const pasted = paste(`${status![1]} --dir ${JSON.stringify(dir)}`)
    expect(pasted.code).toBe(1)
    expect(JSON.parse(pasted.stdout).health.damagedPaths).toEqual(['/notes.md'])
  })
})

