/**
 * The rewindfs command as a user's shell runs it: a real child process against temp directories,
 * a store written by a real workspace. Asserts outputs, JSON shapes, exit codes (0 ok, 1 failure,
 * 2 usage, 3 conflict refused, 4 not found) and what ends up on disk.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { CLI, REPO, buildCli, removeCli, runCli } from './cli-process.js'
import { Kind } from '../adapters/node-fs/pack-format.js'
import * as pack from './support/pack-raw.js'

const ANSI = /\x1b\[/

let tmp: string
let project: string
let store: string

beforeAll(buildCli)
afterAll(removeCli)

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-cli-'))
  project = path.join(tmp, 'project')
  store = path.join(tmp, 'store')
  fs.mkdirSync(path.join(project, 'app'), { recursive: true })
  fs.writeFileSync(path.join(project, 'app/config.json'), '{ "port": 8080 }\n')
  fs.writeFileSync(path.join(project, 'README.md'), '# app\n')
})

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

const open = () => Workspace.open({ lower: directory(project), store: directoryStore(store) })

/** A store as an agent session leaves it: a checkpoint 'start', then three changes and 'edited'. */
async function seed(): Promise<void> {
  const ws = await open()
  ws.fs.readFileSync('/app/config.json')
  await ws.checkpoint({ name: 'start' })
  ws.fs.writeFileSync('/app/config.json', '{ "port": 9090 }\n')
  ws.fs.writeFileSync('/app/notes.md', 'notes\n')
  ws.fs.rmSync('/README.md')
  await ws.checkpoint({ name: 'edited' })
  await ws.close()
}

const project$ = () => ['--dir', project, '--store', store]
const json = (args: string[]) => {
  const result = runCli([...args, '--json'])
  return { ...result, body: JSON.parse(result.stdout) }
}
const onDisk = (rel: string) => (fs.existsSync(path.join(project, rel)) ? fs.readFileSync(path.join(project, rel), 'utf8') : undefined)

describe('rewindfs demo and help', () => {
  it('demo tells the story, exits 0 and points at the web demo; no colour into a pipe', () => {
    const result = runCli(['demo'])
    expect(result.code).toBe(0)
    for (const step of ['1. open', '3. checkpoint', '6. restore', '7. reset']) expect(result.stdout).toContain(step)
    expect(result.stdout).toContain('config.json parses again (port 8080)')
    expect(result.stdout).toContain('npm run demo')
    expect(result.stdout).not.toMatch(ANSI)
  })

  it('--help lists every command and the exit codes', () => {
    const result = runCli(['--help'])
    expect(result.code).toBe(0)
    for (const command of ['demo', 'mcp', 'status', 'log', 'checkpoints', 'diff', 'restore', 'flush']) expect(result.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'))
    for (const code of ['0  ok', '1  failure', '2  usage error', '3  conflict refused', '4  not found']) expect(result.stdout).toContain(code)
    expect(runCli(['help', 'restore']).stdout).toContain('Usage: rewindfs restore <checkpoint>')
    expect(runCli(['flush', '--help']).code).toBe(0)
  })

  it('usage errors exit 2 with a clear message, as JSON under --json', () => {
    const cases: [string[], string][] = [
      [['deploy'], "unknown command 'deploy'"],
      [['status', ...project$(), '--verbose'], "Unknown option '--verbose'"],
      [['status', '--dir', project], 'status needs --store <dir>'],
      [['restore', ...project$()], 'restore needs a checkpoint'],
      [['log', ...project$(), '--limit', 'ten'], '--limit takes a positive whole number'],
      [['status', ...project$(), 'extra'], "unexpected 'extra'"],
      [['status', '--dir'], "Option '--dir <value>' argument missing"],
      [['mcp', '--dir', project, '--json'], 'mcp has no --json output'],
    [['demo', '--json'], 'demo has no --json output'],
    ]
    for (const [args, message] of cases) {
      const result = runCli(args)
      expect(result.code, args.join(' ')).toBe(2)
      if (args.includes('--json')) expect(JSON.parse(result.stdout).error.message).toContain(message)
      else {
        expect(result.stderr).toContain(message)
        expect(result.stderr).toContain('rewindfs --help')
      }
    }
    const asJson = runCli(['status', '--dir', project, '--json'])
    expect(asJson.code).toBe(2)
    expect(JSON.parse(asJson.stdout)).toEqual({ error: { code: 'EUSAGE', message: expect.stringContaining('--store') } })
  })

  it('a missing project directory, store or checkpoint exits 4', async () => {
    expect(runCli(['status', '--dir', path.join(tmp, 'nope'), '--store', store]).code).toBe(4)
    const noStore = json(['status', '--dir', project, '--store', path.join(tmp, 'nope')])
    expect(noStore.code).toBe(4)
    expect(noStore.body.error).toMatchObject({ code: 'ENOENT', message: expect.stringContaining('no store') })
    // A file where the store should be is named as such, for readers and writers alike.
    fs.writeFileSync(path.join(tmp, 'a-file'), 'x')
    for (const command of ['status', 'run']) {
      const args = command === 'run' ? ['run', '--dir', project, '--store', path.join(tmp, 'a-file'), '--json', '--', 'true'] : ['status', '--dir', project, '--store', path.join(tmp, 'a-file'), '--json']
      const result = runCli(args)
      expect(result.code, command).toBe(4)
      expect(JSON.parse(result.stdout).error, command).toMatchObject({ code: 'ENOTDIR', message: expect.stringContaining('the store path is not a directory') })
    }
    await seed()
    const noCheckpoint = json(['restore', 'never-made', ...project$()])
    expect(noCheckpoint.code).toBe(4)
    expect(noCheckpoint.body.error.message).toContain('never-made')
    const noDiff = json(['diff', 'never-made', ...project$()])
    expect(noDiff.code).toBe(4)
    // Named by the command that looked for it.
    expect(noDiff.body.error).toMatchObject({ code: 'ENOENT', message: "ENOENT: no such checkpoint, diff 'never-made'" })
  })

  it('a store made over another directory is refused (exit 1), naming both', async () => {
    await seed()
    const other = path.join(tmp, 'other')
    fs.cpSync(project, other, { recursive: true })
    const result = json(['status', '--dir', other, '--store', store])
    expect(result.code).toBe(1)
    expect(result.body.error).toMatchObject({ code: 'ELOWERMISMATCH', message: expect.stringContaining(fs.realpathSync(project)) })
  })

  it('a store made over another directory is refused by every command, before anything is replayed or written', async () => {
    await seed()
    const other = path.join(tmp, 'other')
    fs.mkdirSync(other)
    for (const command of ['status', 'flush', 'log', 'diff']) {
      const refused = json([command, '--dir', other, '--store', store])
      expect(refused.code, command).toBe(1)
      expect(refused.body.error.code, command).toBe('ELOWERMISMATCH')
      expect(refused.body.error.message).toContain(fs.realpathSync(project))
    }
    const serve = runCli(['mcp', '--dir', other, '--store', store])
    expect(serve.code).toBe(1)
    expect(serve.stderr).toContain('belongs to the lower source')
    expect(fs.readdirSync(other)).toEqual([])
  })
})

describe('a store inside the project', () => {
  it('is refused by every command (exit 2), naming both, before anything is made: the agent could delete it and a flush write over it', async () => {
    const inside = path.join(project, '.rewindfs')
    for (const args of [['mcp', '--dir', project, '--store', inside], ['run', '--dir', project, '--store', inside, '--', 'true'], ['status', '--dir', project, '--store', inside], ['flush', '--dir', project, '--store', path.join(project, 'app', 'store')], ['status', '--dir', project, '--store', `pglite:${inside}`], ['status', '--dir', path.join(project, 'app', '..'), '--store', project]]) {
      const result = runCli(args)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr, args.join(' ')).toContain(`is inside the project ${fs.realpathSync(project)}`)
    }
    expect(fs.existsSync(inside)).toBe(false)
    // Through a link into the project too.
    fs.symlinkSync(project, path.join(tmp, 'link'))
    expect(runCli(['status', '--dir', project, '--store', path.join(tmp, 'link', 'store')]).code).toBe(2)
    // Beside it is fine, a name that only starts like it too.
    await seed()
    expect(runCli(['status', '--dir', project, '--store', store]).code).toBe(0)
    expect(runCli(['run', '--dir', project, '--store', project + '-store', '--', 'true']).code).toBe(0)
  })
})

describe('sessions of a directory store', () => {
  it('a directory store holds one session: another --session (or none, for main) is refused (exit 1) by every command, naming the one it holds', async () => {
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store), session: 'agent-1' })
    ws.fs.writeFileSync('/app/notes.md', 'notes\n')
    await ws.close()
    for (const command of ['status', 'log', 'checkpoints', 'diff', 'undo', 'flush']) {
      const refused = json([command, ...project$(), '--session', 'other'])
      expect(refused.code, command).toBe(1)
      expect(refused.body.error.code, command).toBe('EINVAL')
      expect(refused.body.error.message, command).toContain("holds session 'agent-1'")
    }
    const run = runCli(['run', ...project$(), '--session', 'other', '--', 'touch', 'made'])
    expect(run.code).toBe(1)
    expect(onDisk('app/notes.md')).toBeUndefined()
    const log = json(['log', ...project$(), '--session', 'agent-1'])
    expect(log.code).toBe(0)
    expect(log.body.operations).toEqual([expect.objectContaining({ session: 'agent-1', paths: ['/app/notes.md'] })])
    expect(json(['status', ...project$(), '--session', 'agent-1']).body).toMatchObject({ session: 'agent-1', changes: [expect.objectContaining({ path: '/app/notes.md' })] })
    expect(json(['status', ...project$()]).body.error).toMatchObject({ code: 'EINVAL', message: expect.stringContaining('open it with --session agent-1') })
  })
})

describe('rewindfs status, log, checkpoints, diff', () => {
  it('status: changes, checkpoint count and store health', async () => {
    await seed()
    const { code, body } = json(['status', ...project$()])
    expect(code).toBe(0)
    expect(body).toMatchObject({ project: fs.realpathSync(project), store: fs.realpathSync(store), session: 'main', checkpoints: 2 })
    expect(body.changes).toEqual([
      { path: '/README.md', type: 'deleted', entry: 'file' },
      { path: '/app/config.json', type: 'modified', entry: 'file' },
      { path: '/app/notes.md', type: 'added', entry: 'file' },
    ])
    expect(body.health).toMatchObject({ ok: true, warnings: [], brokenCheckpoints: [], corruptBlobs: 0 })
    expect(body.health.blobsVerified).toBeGreaterThan(0)
    const text = runCli(['status', ...project$()])
    expect(text.stdout).toMatch(/changes\s+3/)
    expect(text.stdout).toMatch(/modified\s+file\s+\/app\/config\.json/)
    expect(text.stdout).toMatch(/health\s+ok/)
    expect(text.stdout).not.toMatch(ANSI)
  })

  it('status reports a damaged store: a blob whose bytes no longer match', async () => {
    await seed()
    // The blob's bytes changed on disk, its pack checksum made to match: only its id tells.
    const [id] = [...pack.blobRecords(store)].find(([, record]) => record.payload.toString('utf8') === 'notes\n')!
    pack.setBlob(store, id, Buffer.from('Notes\n'))
    const { code, body } = json(['status', ...project$()])
    expect(code).toBe(1)
    expect(body.health).toMatchObject({ ok: false, corruptBlobs: 1, brokenCheckpoints: [expect.any(String)] })
    // The live tree needs the dropped content too: the change is still listed, and reading it is EIO.
    expect(body.changes).toContainEqual({ path: '/app/notes.md', type: 'added', entry: 'file' })
    expect(body.health.problems.join('\n')).toContain('broken checkpoints')
    expect(runCli(['status', ...project$()]).stdout).toMatch(/health\s+problems/)
    // It names the path that reads as EIO, and verify points there rather than at repair (which keeps contents as they are).
    expect(body.health.damagedPaths).toEqual(['/app/notes.md'])
    expect(body.health.problems.join('\n')).toMatch(/content damaged in the store, reads fail with EIO .*: \/app\/notes\.md/)
    const verify = runCli(['verify', '--store', store])
    expect(verify.code).toBe(1)
    expect(verify.stdout).toContain('rewindfs status --store')
    expect(verify.stdout).not.toContain('rewindfs repair')
    // Read (EIO: the workspace now knows) and written again with the same content, the damaged copy
    // is replaced: verify and status are clean.
    const ws = await open()
    expect(() => ws.fs.readFileSync('/app/notes.md')).toThrow(expect.objectContaining({ code: 'EIO' }))
    ws.fs.writeFileSync('/app/notes.md', 'notes\n')
    await ws.close()
    expect(runCli(['status', ...project$()]).code).toBe(0)
    expect(runCli(['verify', '--store', store]).code).toBe(0)
  })

  it('damaged bytes nothing reads (a dead journal record): verify points at repair, which sets them aside; then verify is clean', async () => {
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store, { segmentBytes: 4096 }), compactEvery: Number.POSITIVE_INFINITY })
    for (let i = 0; i < 30; i++) {
      ws.fs.writeFileSync(`/f${i}`, `file ${i} `.repeat(120))
      await ws.sync()
    }
    await ws.compact()
    ws.fs.writeFileSync('/after', 'after')
    await ws.close()
    const all = pack.records(store)
    const reset = all.findLast((record) => record.kind === Kind.Reset)!
    const dead = all.find((record) => record.kind === Kind.Append && (record.segment < reset.segment || (record.segment === reset.segment && record.offset < reset.offset)))!
    const bytes = fs.readFileSync(dead.file)
    bytes[dead.offset + 17] ^= 0x01
    fs.writeFileSync(dead.file, bytes)
    const verify = runCli(['verify', '--store', store])
    expect(verify.code).toBe(1)
    expect(verify.stdout).toContain('nothing the store needs is damaged')
    expect(verify.stdout).toContain('rewindfs repair')
    const repair = runCli(['repair', ...project$()])
    expect(repair.code).toBe(0)
    expect(repair.stdout).toMatch(/set aside {3}pack segment 0+\d\.pack, bytes \d+ to \d+: a record header fails its checksum: kept as blob\.damaged-/)
    const after = runCli(['verify', '--store', store])
    expect(after.code).toBe(0)
    expect(after.stdout).toMatch(/health\s+ok/)
  })

  it('works beside a writer that holds the store (read-only open)', async () => {
    await seed()
    const ws = await open()
    try {
      ws.fs.writeFileSync('/live.txt', 'live\n')
      await ws.sync()
      const { code, body } = json(['status', ...project$()])
      expect(code).toBe(0)
      expect(body.changes.map((c: { path: string }) => c.path)).toContain('/live.txt')
      // A writer command cannot take the lock meanwhile: a plain failure naming it.
      const restore = json(['restore', 'start', ...project$()])
      expect(restore.code).toBe(1)
      expect(restore.body.error).toMatchObject({ code: 'EBUSY', message: expect.stringContaining('locked') })
    } finally {
      await ws.close()
    }
  })

  it('log: operations newest first, --limit and --path', async () => {
    await seed()
    const { code, body } = json(['log', ...project$()])
    expect(code).toBe(0)
    const mine = body.operations.filter((op: { type: string }) => op.type !== 'checkpoint')
    expect(mine.map((op: { paths: string[] }) => op.paths)).toEqual(expect.arrayContaining([['/README.md'], ['/app/notes.md'], ['/app/config.json']]))
    expect(body.operations[0].paths).toEqual(['/README.md'])
    expect(body.operations[0]).toMatchObject({ id: expect.any(String), type: expect.any(String), session: 'main', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })
    expect(json(['log', ...project$(), '--limit', '1']).body.operations).toHaveLength(1)
    const notes = json(['log', ...project$(), '--path', '/app/notes.md']).body.operations
    expect(notes.map((op: { paths: string[] }) => op.paths)).toEqual([['/app/notes.md']])
    expect(runCli(['log', ...project$()]).stdout).toContain('/app/notes.md')
  })

  it('log and undo show an operation of many paths as its first few and a count; --json lists them all', async () => {
    const many = Array.from({ length: 30 }, (_, i) => `/gen/f${String(i).padStart(2, '0')}.txt`)
    const seeded = await open()
    seeded.fs.mkdirSync('/gen')
    await seeded.transaction(async (fs) => {
      for (const file of many) fs.writeFileSync(file, 'x')
    })
    await seeded.close()
    const line = runCli(['log', ...project$()]).stdout.split('\n')[0]
    expect(line).toContain('/gen/f00.txt, /gen/f01.txt')
    expect(line).toContain('… and 22 more')
    expect(line).not.toContain('/gen/f08.txt')
    expect(json(['log', ...project$()]).body.operations[0].paths).toHaveLength(30)
    const dry = runCli(['undo', ...project$(), '--dry-run']).stdout
    expect(dry).toContain('… and 22 more')
    expect(dry).not.toContain('/gen/f29.txt')
  })

  it('checkpoints: oldest first, with ids and kinds', async () => {
    await seed()
    const { code, body } = json(['checkpoints', ...project$()])
    expect(code).toBe(0)
    expect(body.checkpoints.map((c: { name: string; kind: string }) => [c.name, c.kind])).toEqual([
      ['start', 'manual'],
      ['edited', 'manual'],
    ])
    expect(runCli(['checkpoints', ...project$()]).stdout).toMatch(/start manual[^]*edited manual/)
  })

  it('diff: against the project, since a checkpoint, and with patches under --patch', async () => {
    await seed()
    expect(json(['diff', ...project$()]).body.changes).toHaveLength(3)
    expect(json(['diff', 'edited', ...project$()]).body).toMatchObject({ from: { name: 'edited' }, changes: [] })
    const since = json(['diff', 'start', ...project$(), '--patch']).body
    const config = since.changes.find((c: { path: string }) => c.path === '/app/config.json')
    expect(config.patch).toContain('-{ "port": 8080 }')
    expect(config.patch).toContain('+{ "port": 9090 }')
    expect(json(['diff', 'start', ...project$()]).body.changes.every((c: object) => !('patch' in c))).toBe(true)
    const text = runCli(['diff', 'start', ...project$(), '--patch']).stdout
    expect(text).toContain('+{ "port": 9090 }')
    expect(text).toMatch(/deleted\s+file\s+\/README\.md/)
  })
})

describe('rewindfs into a pipe', () => {
  it('a reader that stops early (| head) ends the output quietly: exit 0, no stack trace', async () => {
    const ws = await open()
    // More than a pipe holds (64 KiB), so the writes meet the closed pipe.
    for (let i = 0; i < 2000; i++) ws.fs.writeFileSync(`/app/file-with-a-long-name-${i}.txt`, `${i}\n`)
    await ws.close()
    const result = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" diff --dir "${project}" --store "${store}" | head -n 1`], { encoding: 'utf8' })
    expect(result.stdout).toMatch(/^changes|added|\//)
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })
})

describe('rewindfs checkpoint', () => {
  it('makes a named checkpoint that restore and diff go back to; a name taken is refused (exit 1), none is a usage error (exit 2)', async () => {
    await seed()
    const made = json(['checkpoint', 'before-cleanup', ...project$()])
    expect(made.code).toBe(0)
    expect(made.body).toMatchObject({ name: 'before-cleanup', kind: 'manual', session: 'main' })
    const ws = await open()
    ws.fs.rmSync('/app', { recursive: true })
    await ws.close()
    expect(json(['diff', 'before-cleanup', ...project$()]).body.changes.map((c: { path: string; type: string }) => `${c.type} ${c.path}`)).toContain('deleted /app')
    expect(runCli(['restore', 'before-cleanup', ...project$()]).code).toBe(0)
    expect(json(['diff', 'before-cleanup', ...project$()]).body.changes).toEqual([])
    expect(json(['checkpoints', ...project$()]).body.checkpoints.map((c: { name: string }) => c.name)).toContain('before-cleanup')
    const again = json(['checkpoint', 'before-cleanup', ...project$()])
    expect(again.code).toBe(1)
    expect(again.body.error).toMatchObject({ code: 'EEXIST' })
    const none = runCli(['checkpoint', ...project$()])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('checkpoint needs a name')
    // An empty name is a usage error too, not a stack trace.
    for (const args of [['checkpoint', ''], ['restore', ''], ['diff', '']]) {
      const empty = runCli([...args, ...project$()])
      expect(empty.code, args[0]).toBe(2)
      expect(empty.stderr, args[0]).toMatch(new RegExp(`^rewindfs: ${args[0]}: the (name|checkpoint) must not be empty\n`))
    }
  })
})

describe('rewindfs restore and flush', () => {
  it('restore --dry-run changes nothing; restore brings the workspace back and leaves the disk alone', async () => {
    await seed()
    const dry = json(['restore', 'start', ...project$(), '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.body).toMatchObject({ applied: false, dryRun: true, checkpoint: { name: 'start' } })
    expect(dry.body.changes).toHaveLength(3)
    expect(json(['status', ...project$()]).body.changes).toHaveLength(3)

    const done = json(['restore', 'start', ...project$()])
    expect(done.code).toBe(0)
    expect(done.body).toMatchObject({ applied: true, dryRun: false, guard: { kind: 'guard' } })
    expect(json(['status', ...project$()]).body.changes).toEqual([])
    expect(onDisk('README.md')).toBe('# app\n')
    // The guard checkpoint takes it back.
    expect(json(['restore', done.body.guard.id, ...project$()]).code).toBe(0)
    expect(json(['status', ...project$()]).body.changes).toHaveLength(3)
  })

  it('flush --dry-run writes nothing; flush writes the changes into the directory', async () => {
    await seed()
    const dry = json(['flush', ...project$(), '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.body).toMatchObject({ applied: false, dryRun: true, conflicts: [] })
    expect(dry.body.changes).toHaveLength(3)
    expect(onDisk('app/config.json')).toBe('{ "port": 8080 }\n')
    expect(onDisk('app/notes.md')).toBeUndefined()

    const done = runCli(['flush', ...project$()])
    expect(done.code).toBe(0)
    expect(done.stdout).toContain('flushed 3 path(s)')
    expect(done.stderr).toBe('') // no progress bar when stderr is not a terminal
    expect(onDisk('app/config.json')).toBe('{ "port": 9090 }\n')
    expect(onDisk('app/notes.md')).toBe('notes\n')
    expect(onDisk('README.md')).toBeUndefined()
    expect(json(['status', ...project$()]).body.changes).toEqual([])
    expect(json(['flush', ...project$()]).body).toMatchObject({ applied: true, changes: [] })
    // Someone edits a flushed file on disk: the dry run says so, and a flush leaves it as they made it.
    fs.writeFileSync(path.join(project, 'app/notes.md'), 'theirs\n')
    const after = json(['flush', ...project$(), '--dry-run'])
    expect(after.body).toMatchObject({ changes: [], conflicts: [], changedInTarget: ['/app/notes.md'] })
    expect(runCli(['flush', ...project$(), '--dry-run']).stdout).toContain('changed in the project since flushed (kept there; the workspace still shows what it flushed): /app/notes.md')
    expect(json(['flush', ...project$()]).body).toMatchObject({ applied: true, changes: [] })
    expect(onDisk('app/notes.md')).toBe('theirs\n')
  })

  it('flush refuses with exit 3 over a file changed on disk since the last flush; --force overwrites', async () => {
    await seed()
    expect(runCli(['flush', ...project$()]).code).toBe(0)
    // The agent changes config.json again, and so does someone on disk.
    const ws = await open()
    ws.fs.writeFileSync('/app/config.json', '{ "port": 7 }\n')
    await ws.close()
    fs.writeFileSync(path.join(project, 'app/config.json'), '{ "port": 1, "theirs": true }\n')

    const refused = json(['flush', ...project$()])
    expect(refused.code).toBe(3)
    expect(refused.body.error).toMatchObject({ code: 'ECONFLICT', conflicts: ['/app/config.json'], message: expect.stringContaining('--force') })
    expect(onDisk('app/config.json')).toBe('{ "port": 1, "theirs": true }\n')
    expect(runCli(['flush', ...project$()]).stderr).toContain('/app/config.json')

    const preview = json(['flush', ...project$(), '--dry-run'])
    expect(preview.code).toBe(0)
    expect(preview.body.conflicts).toEqual(['/app/config.json'])

    const forced = json(['flush', ...project$(), '--force'])
    expect(forced.code).toBe(0)
    expect(forced.body).toMatchObject({ applied: true, conflicts: ['/app/config.json'] })
    expect(onDisk('app/config.json')).toBe('{ "port": 7 }\n')
  })
})

describe('rewindfs on a terminal', () => {
  const hasScript = spawnSync('script', ['--version']).status === 0

  /** Runs the CLI under script(1), so stdout and stderr are a pseudo-terminal. */
  function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): string {
    const command = [process.execPath, CLI, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ')
    const result = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: REPO, encoding: 'utf8', env: { ...process.env, NO_COLOR: undefined, ...env } })
    expect(result.status).toBe(0)
    return result.stdout
  }

  it.runIf(hasScript)('colours on a terminal, and not with NO_COLOR', async () => {
    await seed()
    expect(onTerminal(['status', ...project$()])).toMatch(ANSI)
    expect(onTerminal(['status', ...project$()], { NO_COLOR: '1' })).not.toMatch(ANSI)
    expect(onTerminal(['status', ...project$(), '--json'])).not.toMatch(ANSI)
  })
})
