/**
 * One tool call, one undo step. write_file and move_path create the parent directories they need;
 * recorded apart from the change, undo_operation's default step took back the write and left the
 * new empty directories, which a commit then made on the real disk. The oracle is a real directory
 * under the workspace: after the undo a flush finds nothing to write and the disk is as it was.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { watching } from '../src/watch.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

let project: string
let lower: ReturnType<typeof directory>
let ws: Workspace
let tools: AgentTool[]

/** Every path under the real directory (directories end in '/'), sorted. */
function disk(): string[] {
  return (fs.readdirSync(project, { recursive: true }) as string[])
    .filter((name) => !name.startsWith('.rewindfs-flush'))
    .map((name) => (fs.statSync(path.join(project, name)).isDirectory() ? `${name}/` : name))
    .sort()
}

beforeEach(async () => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-one-operation-'))
  fs.mkdirSync(path.join(project, 'src'))
  fs.writeFileSync(path.join(project, 'src/main.ts'), 'serve()\n')
  fs.mkdirSync(path.join(project, 'lib/util'), { recursive: true })
  fs.writeFileSync(path.join(project, 'lib/util/a.ts'), 'export const a = 1\n')
  lower = directory(project)
  ws = await Workspace.open({ lower, watch: watching })
  tools = createAgentTools(ws, { flushTarget: lower })
})

afterEach(async () => {
  await ws.close()
  fs.rmSync(project, { recursive: true, force: true })
})

async function ok(name: string, input: Record<string, unknown>): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  return outcome.result
}

async function fails(name: string, input: Record<string, unknown>): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded: ${JSON.stringify(outcome.result)}`)
  return outcome.error
}

/** The workspace has nothing to write to the disk, and a flush leaves the disk as it was. */
async function nothingToFlush(before: string[]): Promise<void> {
  expect(ws.changes()).toEqual([])
  const report = await ws.flush(lower)
  expect(report.changes).toEqual([])
  expect(disk()).toEqual(before)
}

describe('a tool call that creates parent directories is one operation', () => {
  it('write_file into new directories: one operation, which the default undo takes back whole', async () => {
    const before = disk()
    const written = await ok('write_file', { path: 'a/b/c/new.txt', content: 'hello\n' })
    expect(written).toMatchObject({ path: '/a/b/c/new.txt', created: true, bytes: 6, lines: 1 })
    const history = ws.history()
    expect(written.operation_ids).toEqual([history[0].id])
    expect(history).toHaveLength(1)
    expect(history[0].paths).toEqual(['/a', '/a/b', '/a/b/c', '/a/b/c/new.txt'])
    // What history and undo show says what the call did, as the file_create's "file create <path>" did.
    const listed = (await ok('operation_history', {})).operations
    expect(listed[0].description).toBe('file create /a/b/c/new.txt, with mkdir -p /a/b/c')

    const undo = await ok('undo_operation', {})
    expect(undo.summary).toBe(`Undid 1 operation(s): ${history[0].id} (file create /a/b/c/new.txt, with mkdir -p /a/b/c); 4 path(s) changed back.`)
    expect(undo.next_available_undo).toBeNull()
    expect(ws.fs.existsSync('/a')).toBe(false)
    await nothingToFlush(before)
  })

  it('write_file into a directory that exists stays one plain file_create or file_edit', async () => {
    const created = await ok('write_file', { path: '/src/new.ts', content: 'x\n' })
    const edited = await ok('write_file', { path: '/src/main.ts', content: 'serve(1)\n' })
    expect(ws.history().map((operation) => [operation.id, operation.type, operation.description])).toEqual([
      [edited.operation_ids[0], 'file_edit', undefined],
      [created.operation_ids[0], 'file_create', undefined],
    ])
  })

  it('move_path into new directories: the file is back at its source and the directories are gone after one undo', async () => {
    const before = disk()
    const moved = await ok('move_path', { from: '/src/main.ts', to: '/app/server/main.ts' })
    const history = ws.history()
    expect(moved.operation_ids).toEqual([history[0].id])
    expect(history[0]).toMatchObject({ description: 'rename /src/main.ts -> /app/server/main.ts, with mkdir -p /app/server' })
    expect(ws.fs.readFileSync('/app/server/main.ts', 'utf8')).toBe('serve()\n')

    await ok('undo_operation', {})
    expect(ws.fs.readFileSync('/src/main.ts', 'utf8')).toBe('serve()\n')
    expect(ws.fs.existsSync('/app')).toBe(false)
    await nothingToFlush(before)
  })

  it('move_path of a directory into new directories is one operation too', async () => {
    const before = disk()
    const moved = await ok('move_path', { from: '/lib', to: '/vendor/old/lib' })
    expect(moved.operation_ids).toHaveLength(1)
    expect(ws.fs.readFileSync('/vendor/old/lib/util/a.ts', 'utf8')).toBe('export const a = 1\n')
    await ok('undo_operation', {})
    expect(ws.fs.readFileSync('/lib/util/a.ts', 'utf8')).toBe('export const a = 1\n')
    expect(ws.fs.existsSync('/vendor')).toBe(false)
    await nothingToFlush(before)
  })

  it('a call that fails after its directories would have been made leaves none behind', async () => {
    const before = disk()
    // A directory into its own subtree: the parent /src/x/y is made first, then the rename fails (EINVAL, as Node's).
    const refused = await fails('move_path', { from: '/src', to: '/src/x/y/src' })
    expect(refused.code).toBe('EINVAL')
    expect(ws.fs.existsSync('/src/x')).toBe(false)
    expect(ws.history()).toEqual([])
    // A file where a directory is wanted: nothing is made, as before.
    expect((await fails('write_file', { path: '/src/main.ts/deep/x.txt', content: 'x' })).code).toBe('ENOTDIR')
    expect(ws.history()).toEqual([])
    await nothingToFlush(before)
  })

  it("a write the workspace refuses (past its maxFileSize) makes no directories, as the refusal comes before any", async () => {
    const small = await Workspace.open({ lower: { '/app/a.txt': 'a\n' }, maxFileSize: 10 })
    const smallTools = createAgentTools(small)
    const refused = await callTool(smallTools, 'write_file', { path: '/app/new/dir/big.txt', content: 'x'.repeat(100) })
    expect(refused).toMatchObject({ isError: true, error: { code: 'EFBIG' } })
    expect(small.fs.existsSync('/app/new')).toBe(false)
    expect(small.history()).toEqual([])
    await small.close()
  })

  it('a directory moved into new directories still gets its automatic checkpoint first', async () => {
    await ok('move_path', { from: '/lib', to: '/vendor/old/lib' })
    const [checkpoint] = ws.checkpoints()
    expect(checkpoint).toMatchObject({ kind: 'auto', operationSeq: 0 })
    // Rolling back to it is the state before the call: the directory at its place, nothing made.
    await ok('rollback_to_checkpoint', { target: { checkpoint_id: checkpoint.id }, preview_changes: false })
    expect(ws.fs.existsSync('/lib/util/a.ts')).toBe(true)
    expect(ws.fs.existsSync('/vendor')).toBe(false)
  })

  it('watchers see the new directories and the file, and a commit writes them', async () => {
    const events: string[] = []
    const watcher = ws.fs.watch('/', { recursive: true }, (event, name) => events.push(`${event} ${String(name)}`))
    await ok('write_file', { path: '/docs/guide/intro.md', content: '# Intro\n' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    watcher.close()
    expect(events).toEqual(['rename docs', 'rename docs/guide', 'rename docs/guide/intro.md', 'change docs/guide/intro.md'])
    await ok('commit_changes', {})
    expect(fs.readFileSync(path.join(project, 'docs/guide/intro.md'), 'utf8')).toBe('# Intro\n')
  })

  it('a file made on the disk meanwhile where write_file created one is still a conflict at the commit', async () => {
    await ok('write_file', { path: '/docs/new.md', content: 'ours\n' })
    fs.mkdirSync(path.join(project, 'docs'))
    fs.writeFileSync(path.join(project, 'docs/new.md'), 'theirs\n')
    expect((await fails('commit_changes', {})).code).toBe('ECONFLICT')
    expect(fs.readFileSync(path.join(project, 'docs/new.md'), 'utf8')).toBe('theirs\n')
  })
})
