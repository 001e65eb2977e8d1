/**
 * The file tools as a model meets them in one call. One tool call, one undo step: write_file and
 * move_path create the parent directories they need; recorded apart from the change,
 * undo_operation's default step took back the write and left the new empty directories, which a
 * commit then made on the real disk. The oracle is a real directory under the workspace: after the
 * undo a flush finds nothing to write and the disk is as it was. And one read_file call is not one
 * minified line: lines are cut at 2 000 characters.
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

    // The operation's diff names the file in the new directories, with its lines, not only the directory.
    expect(ws.operation(history[0].id)!.diff.find((entry) => entry.path === '/a/b/c/new.txt')?.patch).toContain('+hello')
    // Its type is the write's: the type filters find it as they find a plain write.
    expect(history[0].type).toBe('file_create')
    expect((await ok('operation_history', { operation_type: 'file_create' })).operations.map((operation: Json) => operation.operation_id)).toEqual([history[0].id])
    const undo = await ok('undo_operation', { operation_type: 'file_create' })
    expect(undo.summary).toBe(`Undid 1 operation(s): ${history[0].id} (file create /a/b/c/new.txt, with mkdir -p /a/b/c); 4 path(s) changed back.`)
    const entry = undo.undone_operations[0]
    // The entry's file is the one written (the directories are listed ahead of it), with its line.
    expect(entry).toMatchObject({ file_path: '/a/b/c/new.txt', changes_reverted: { lines_restored: [], lines_removed: [1] } })
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

/**
 * read_file cuts each line at 2 000 characters, as Claude Code's Read does: one line of a minified
 * bundle or a lockfile took the whole 100 000-character read by itself. Line numbers and paging
 * are those of the file; the cut lines are named.
 */
describe('read_file cuts long lines', () => {
  const lineOf = (n: number, length: number) => `${n}:`.padEnd(length, String.fromCharCode(97 + (n % 26)))

  it('shows a long line as its first 2 000 characters and names it, the lines around it whole', async () => {
    const file = [lineOf(1, 10), lineOf(2, 5000), lineOf(3, 2000), lineOf(4, 2001), lineOf(5, 3)]
    fs.writeFileSync(path.join(project, 'bundle.js'), file.join('\n') + '\n')
    const read = await ok('read_file', { path: '/bundle.js' })
    expect(read).toEqual({
      path: '/bundle.js',
      content: file.map((line) => line.slice(0, 2000)).join('\n'),
      start_line: 1,
      end_line: 5,
      total_lines: 5,
      truncated: false,
      line_truncated: true,
      truncated_lines: [2, 4],
    })
    // offset and limit page by the file's lines, cut or not.
    expect(await ok('read_file', { path: '/bundle.js', offset: 3, limit: 2 })).toMatchObject({
      start_line: 3, end_line: 4, truncated: true, next_offset: 5, line_truncated: true, truncated_lines: [4],
    })
    expect(await ok('read_file', { path: '/bundle.js', offset: 5 })).toEqual(expect.not.objectContaining({ line_truncated: expect.anything() }))
  })

  it('pages through a file of long lines, every line once, in order, within the character budget', async () => {
    const file = Array.from({ length: 300 }, (_, i) => lineOf(i + 1, 10_000))
    fs.writeFileSync(path.join(project, 'package-lock.json'), file.join('\n') + '\n')
    const seen: string[] = []
    let offset = 1
    for (let calls = 0; calls < 20; calls++) {
      const page = await ok('read_file', { path: '/package-lock.json', offset })
      expect(page.content.length).toBeLessThanOrEqual(100_000)
      const lines = page.content.split('\n')
      expect(page.end_line - page.start_line + 1).toBe(lines.length)
      expect(page.truncated_lines).toEqual(lines.map((_: string, i: number) => page.start_line + i))
      seen.push(...lines)
      if (!page.truncated) break
      offset = page.next_offset
    }
    expect(seen).toEqual(file.map((line) => line.slice(0, 2000)))
  })

  it('lists the first 100 cut lines and counts them all; a budget under 2 000 characters cuts a line there', async () => {
    const file = Array.from({ length: 150 }, (_, i) => lineOf(i + 1, 3000))
    fs.writeFileSync(path.join(project, 'wide.txt'), file.join('\n'))
    const wide = createAgentTools(ws, { budget: { readChars: 1_000_000 } })
    const outcome = await callTool(wide, 'read_file', { path: '/wide.txt' })
    expect(outcome.isError).toBe(false)
    const read = (outcome as { result: Json }).result
    expect(read).toMatchObject({ end_line: 150, truncated: false, line_truncated: true, truncated_lines_total: 150 })
    expect(read.truncated_lines).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))

    fs.writeFileSync(path.join(project, 'mid.txt'), [lineOf(1, 1500), 'two'].join('\n'))
    const narrow = createAgentTools(ws, { budget: { readChars: 1000 } })
    const cut = ((await callTool(narrow, 'read_file', { path: '/mid.txt' })) as { result: Json }).result
    expect(cut).toMatchObject({ content: lineOf(1, 1000), end_line: 1, truncated: true, next_offset: 2, line_truncated: true, truncated_lines: [1] })
  })

  it('does not end a cut line inside a surrogate pair', async () => {
    fs.writeFileSync(path.join(project, 'emoji.txt'), 'x'.repeat(1999) + '😀'.repeat(10) + '\n')
    const read = await ok('read_file', { path: '/emoji.txt' })
    expect(read.content).toBe('x'.repeat(1999))
    expect(read.truncated_lines).toEqual([1])
  })
})
