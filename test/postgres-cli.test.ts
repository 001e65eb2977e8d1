/**
 * The CLI on shared stores: --store postgres://… (a real server, the schema from ?schema=) and
 * --store pglite:<dir> for every store command, and `rewindfs sessions` listing a store's sessions
 * with their last activity, checkpoints and size. Passwords never reach the output.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { pgliteStore, postgresStore } from '../adapters/postgres/index.js'
import { Workspace } from '../src/index.js'
import { buildCli, removeCli, runCli } from './cli-process.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pg-cli-'))
const project = path.join(tmp, 'project')
fs.mkdirSync(project)
fs.writeFileSync(path.join(project, 'README.md'), '# project\n')

function json(args: string[]): { code: number | null; body: Record<string, any>; stderr: string } {
  const result = runCli([...args, '--json'])
  return { code: result.code, body: JSON.parse(result.stdout), stderr: result.stderr }
}

/** A session with a checkpoint and a change after it, written the way a program would. */
async function seed(store: Awaited<ReturnType<typeof postgresStore>>, session: string): Promise<void> {
  const ws = await Workspace.open({ lower: directory(project), store, session })
  ws.fs.writeFileSync('/notes.txt', 'first\n')
  await ws.checkpoint({ name: 'start' })
  ws.fs.writeFileSync('/notes.txt', 'second\n')
  await ws.close()
}

beforeAll(async () => {
  await buildCli()
}, 120_000)
afterAll(() => {
  removeCli()
  fs.rmSync(tmp, { recursive: true, force: true })
})

describe.skipIf(url === undefined)('the CLI with --store postgres://…', () => {
  const schema = scratchSchema('pgcli')
  const store = () => `${url!}&schema=${schema}`
  const session = 'cli-session'
  const args = () => ['--dir', project, '--store', store(), '--session', session]

  beforeAll(async () => {
    await seed(await postgresStore({ connectionString: url!, session, schema }), session)
  })
  afterAll(async () => {
    await dropSchema(url!, schema)
  })

  it('status, checkpoints, log, diff, verify and restore work on a session in the server', () => {
    const password = new URL(url!).password
    const status = json(['status', ...args()])
    expect(status.code).toBe(0)
    expect(status.body).toMatchObject({ session, checkpoints: 1 })
    expect(status.body.store).not.toContain(`:${password}@`)
    expect(json(['checkpoints', ...args()]).body.checkpoints.map((c: { name: string }) => c.name)).toEqual(['start'])
    expect(json(['log', ...args()]).body.operations.length).toBeGreaterThan(0)
    expect(json(['diff', 'start', ...args()]).body.changes).toEqual([{ path: '/notes.txt', type: 'modified', entry: 'file' }])
    const verify = json(['verify', '--store', store(), '--session', session])
    expect(verify.code).toBe(0)
    expect(verify.body.ok).toBe(true)
    const restore = json(['restore', 'start', ...args()])
    expect(restore.code).toBe(0)
    expect(json(['diff', 'start', ...args()]).body.changes).toEqual([])
    expect(fs.existsSync(path.join(project, 'notes.txt'))).toBe(false) // the project on disk is untouched until flush
    const plain = runCli(['status', ...args()])
    expect(plain.stdout + plain.stderr).not.toContain(`:${password}@`)
  })

  it('run records a command in the session and names the store without its password', () => {
    const password = new URL(url!).password
    const ran = runCli(['run', ...args(), '--', 'sh', '-c', 'echo ran > ran.txt'])
    expect(ran.code).toBe(0)
    expect(ran.stdout + ran.stderr).toContain('recorded as one operation in postgresql://')
    expect(ran.stdout + ran.stderr).not.toContain(`:${password}@`)
    expect(json(['log', ...args()]).body.operations[0].paths).toEqual(['/ran.txt'])
  })

  it('sessions lists every session with last activity, checkpoints and size', async () => {
    await seed(await postgresStore({ connectionString: url!, session: 'second', schema }), 'second')
    const listed = json(['sessions', '--store', store()])
    expect(listed.code).toBe(0)
    const names = listed.body.sessions.map((s: { session: string }) => s.session)
    expect(names).toEqual(expect.arrayContaining([session, 'second']))
    const second = listed.body.sessions.find((s: { session: string }) => s.session === 'second')
    expect(second).toMatchObject({ checkpoints: 1, lastCheckpoint: 'start', writing: false })
    expect(second.blobs).toBeGreaterThan(0)
    expect(Date.now() - Date.parse(second.lastActivity)).toBeLessThan(5 * 60_000)
    // Both sessions wrote the same bytes: stored once.
    expect(listed.body.storage.referencedBytes).toBeGreaterThan(listed.body.storage.blobBytes)
    const text = runCli(['sessions', '--store', store()])
    expect(text.stdout).toMatch(/^second\s+\d{4}-\d\d-\d\dT/m)
  })

  it('mcp serves a session in the server (and gives its lock back when stdin ends)', () => {
    const served = runCli(['mcp', '--dir', project, '--store', store(), '--session', 'served'])
    expect(served.code).toBe(0)
    expect(served.stderr).toMatch(/tools over .* \(store postgresql:\/\/rewindfs:\*\*\*@.*, session served\)/)
    const listed = json(['sessions', '--store', store()]).body.sessions.find((s: { session: string }) => s.session === 'served')
    expect(listed).toMatchObject({ writing: false })
  })

  it('a command refused for a missing session or schema makes nothing: no session row, no schema of tables (sessions neither)', async () => {
    const typo = `${schema}_typo`
    try {
      for (const command of [['restore', 'start'], ['undo'], ['checkpoint', 'c1'], ['flush']]) {
        const refused = json([...command, '--dir', project, '--store', store(), '--session', 'typo'])
        expect(refused.code, command[0]).toBe(4)
        expect(refused.body.error).toMatchObject({ code: 'ENOENT', message: expect.stringContaining("no session 'typo'") })
        expect(json([...command, '--dir', project, '--store', `${url!}&schema=${typo}`]).code, command[0]).toBe(4)
      }
      // Listing a schema that is not there makes none either.
      const listed = json(['sessions', '--store', `${url!}&schema=${typo}`])
      expect(listed.code).toBe(4)
      expect(listed.body.error).toMatchObject({ code: 'ENOENT', message: expect.stringContaining('no rewindfs tables') })
      const client = await rawClient(url!)
      try {
        expect((await client.query(`SELECT id FROM "${schema}".sessions WHERE id = 'typo'`)).rows).toEqual([])
        expect((await client.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [typo])).rows).toEqual([])
      } finally {
        await client.end()
      }
    } finally {
      await dropSchema(url!, typo)
    }
  })

  it('refusals: a missing session is exit 4, a refused connection exit 1 without the password, sessions on a directory store a usage error', () => {
    expect(json(['status', '--dir', project, '--store', store(), '--session', 'never-written']).code).toBe(4)
    const nowhere = path.join(tmp, 'no-server')
    fs.mkdirSync(nowhere, { recursive: true })
    const refused = json(['status', '--dir', project, '--store', `postgresql://rewindfs:hunter2@localhost/rewindfs?host=${nowhere}`])
    expect(refused.code).toBe(1)
    expect(refused.body.error.code).toBe('ECONNREFUSED')
    expect(JSON.stringify(refused.body)).not.toContain('hunter2')
    expect(runCli(['sessions', '--store', path.join(tmp, 'a-directory')]).code).toBe(2)
  })
})

describe('the CLI with --store pglite:<dir>', () => {
  it('a command that needs a session, or lists them, refuses a directory without a database, and makes none in it', () => {
    const empty = path.join(tmp, 'empty-pglite')
    fs.mkdirSync(empty)
    expect(json(['undo', '--dir', project, '--store', `pglite:${empty}`]).code).toBe(4)
    expect(json(['sessions', '--store', `pglite:${empty}`]).code).toBe(4)
    expect(fs.readdirSync(empty)).toEqual([])
  })

  it('reads a PGlite session and lists the sessions in it', async () => {
    const dataDir = path.join(tmp, 'pglite')
    const store = await pgliteStore({ dataDir, session: 'lite' })
    await seed(store, 'lite')
    const checkpoints = json(['checkpoints', '--dir', project, '--store', `pglite:${dataDir}`, '--session', 'lite'])
    expect(checkpoints.code).toBe(0)
    expect(checkpoints.body.checkpoints.map((c: { name: string }) => c.name)).toEqual(['start'])
    const listed = json(['sessions', '--store', `pglite:${dataDir}`])
    expect(listed.body.sessions).toEqual([expect.objectContaining({ session: 'lite', checkpoints: 1 })])
  }, 240_000)
})
