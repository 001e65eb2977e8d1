/**
 * rewindfs/tools: schemas, input validation and the file tools. The JSON Schemas the model sees
 * are checked with a JSON Schema validator (ajv, draft 2020-12) against the same inputs zod judges.
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import { beforeEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { flushEngine } from '../src/adapter-kit.js'
import type { FlushTarget } from '../src/flush/target.js'
import { type AgentTool, type ToolResult, callTool, createAgentTools } from '../tools/index.js'

const lower = {
  '/app/config.json': '{\n  "port": 8080\n}\n',
  '/app/src/main.ts': 'import { serve } from "./serve"\nserve()\nserve()\n',
  '/app/logo.png': new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13, 0, 1, 2, 3]),
  '/app/empty/': '',
}

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome) // plain JSON, as a model receives it
  return outcome.result
}

async function fails(tools: readonly AgentTool[], name: string, input: unknown): Promise<Extract<ToolResult, { isError: true }>['error']> {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded: ${JSON.stringify(outcome.result)}`)
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome)
  return outcome.error
}

const memoryTarget: FlushTarget = { kind: 'memory', id: 'memory:schema', flusher: flushEngine, versions: async (paths) => paths.map(() => undefined), apply: async (entries) => entries.map(() => undefined) }

const schemaWorkspace = await Workspace.open()

describe('schemas', () => {
  const tools = createAgentTools(schemaWorkspace, { flushTarget: memoryTarget })
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
  const schema = (name: string): Json => byName[name].inputSchema

  it('offers each tool once with a description, and commit_changes only with a flush target', async () => {
    expect(tools.map((tool) => tool.name)).toEqual([
      'read_file', 'write_file', 'edit_file', 'insert_text', 'list_directory', 'delete_path', 'move_path', 'search_files', 'find_files',
      'undo_operation', 'rollback_to_checkpoint', 'manage_checkpoint', 'operation_history', 'commit_changes',
    ])
    expect(createAgentTools(schemaWorkspace, { commands: true }).map((tool) => tool.name)).toContain('run_command')
    expect(tools.map((tool) => tool.name)).not.toContain('run_command')
    for (const tool of tools) expect(tool.description.length).toBeGreaterThan(40)
    expect(createAgentTools(schemaWorkspace).map((tool) => tool.name)).not.toContain('commit_changes')
    expect(() => createAgentTools(schemaWorkspace, { flushTarget: { id: 'x' } as never })).toThrow('flushTarget must be a FlushTarget')
  })

  it('has the required fields and defaults of the input side', () => {
    const required = (name: string) => schema(name).required ?? []
    expect(required('read_file')).toEqual(['path'])
    expect(required('write_file')).toEqual(['path', 'content'])
    expect(required('edit_file')).toEqual(['path'])
    expect(schema('edit_file').properties.replace_all).toMatchObject({ type: 'boolean', default: false })
    expect(schema('edit_file').properties.edits).toMatchObject({ type: 'array', items: { required: ['old_string', 'new_string'] } })
    expect(required('insert_text')).toEqual(['path', 'insert_line', 'text'])
    expect(required('search_files')).toEqual(['pattern'])
    expect(schema('search_files').properties).toMatchObject({
      regex: { default: false }, case_sensitive: { default: true }, include: { type: 'array' }, exclude: { type: 'array' },
      context_lines: { default: 0 }, max_results: { default: 100 }, include_ignored: { default: false },
    })
    expect(required('find_files')).toEqual(['pattern'])
    expect(schema('find_files').properties.sort).toMatchObject({ enum: ['path', 'mtime'], default: 'path' })
    expect(required('list_directory')).toEqual(['path'])
    expect(required('delete_path')).toEqual(['path'])
    expect(required('move_path')).toEqual(['from', 'to'])
    expect(required('undo_operation')).toEqual([])
    expect(schema('undo_operation').properties).toMatchObject({
      steps: { type: 'integer', minimum: 1, maximum: 50, default: 1 },
      operation_type: { enum: ['file_edit', 'file_create', 'file_delete', 'config_change', 'restore', 'all'], default: 'all' },
      target_files: { type: 'array', items: { type: 'string' } },
      dry_run: { type: 'boolean', default: false },
    })
    expect(required('rollback_to_checkpoint')).toEqual(['target'])
    expect(schema('rollback_to_checkpoint').properties).toMatchObject({
      target: { type: 'object', properties: { checkpoint_id: { type: 'string' }, timestamp: {}, operation_id: { type: 'string' } } },
      scope: { enum: ['project', 'files', 'config'], default: 'project' },
      include_files: { type: 'array' },
      exclude_files: { type: 'array' },
      preview_changes: { type: 'boolean', default: true },
    })
    expect(required('manage_checkpoint')).toEqual(['action'])
    expect(schema('manage_checkpoint').properties.action.enum).toEqual(['create', 'list', 'delete', 'info', 'rename'])
    expect(Object.keys(schema('manage_checkpoint').properties)).toEqual(['action', 'checkpoint_name', 'new_name', 'description'])
    expect(required('operation_history')).toEqual([])
    expect(schema('operation_history').properties).toMatchObject({ limit: { default: 50 }, operation_type: { default: 'all' }, path: { type: 'string' } })
    expect(required('commit_changes')).toEqual([])
    expect(schema('commit_changes').properties.force).toMatchObject({ type: 'boolean' })
    for (const tool of tools) expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false })
  })

  it('accepts and refuses the same inputs as a JSON Schema validator does', async () => {
    const ajv = new Ajv2020({ strict: false })
    const cases: [string, unknown, boolean][] = [
      ['read_file', { path: '/a' }, true],
      ['read_file', { path: '/a', offset: 2, limit: 10 }, true],
      ['read_file', { path: '/a', offset: 0 }, false],
      ['read_file', { path: '/a', offset: 1.5 }, false],
      ['read_file', { path: '' }, false],
      ['read_file', { file_path: '/a' }, false],
      ['read_file', 'just a string', false],
      ['read_file', null, false],
      ['write_file', { path: '/a', content: 1 }, false],
      ['edit_file', { path: '/a', old_string: '', new_string: 'x' }, true],
      ['edit_file', { path: '/a', edits: [{ old_string: '', new_string: 'x' }] }, false],
      ['edit_file', { path: '/a', edits: [{ old_string: 'a', new_string: 'b' }, { old_string: 'c', new_string: 'd', replace_all: true }] }, true],
      ['edit_file', { path: '/a', edits: [{ old_string: 'a' }] }, false],
      ['edit_file', { path: '/a', edits: [] }, false],
      ['insert_text', { path: '/a', insert_line: 0, text: 'x' }, true],
      ['insert_text', { path: '/a', insert_line: -1, text: 'x' }, false],
      ['search_files', { pattern: 'x', regex: true, include: ['*.ts'], context_lines: 2 }, true],
      ['search_files', { pattern: '' }, false],
      ['search_files', { pattern: 'x', context_lines: 11 }, false],
      ['find_files', { pattern: '**/*.ts', sort: 'mtime' }, true],
      ['find_files', { pattern: '*.ts', sort: 'size' }, false],
      ['undo_operation', {}, true],
      ['undo_operation', { steps: 50, operation_type: 'config_change', target_files: ['/a'], dry_run: true }, true],
      ['undo_operation', { steps: 0 }, false],
      ['undo_operation', { steps: 51 }, false],
      ['undo_operation', { operation_type: 'everything' }, false],
      ['undo_operation', { operation_type: 'restore' }, true],
      ['rollback_to_checkpoint', { target: { checkpoint_id: 'good' } }, true],
      ['rollback_to_checkpoint', { target: { timestamp: '2024-07-15T10:30:00Z' }, scope: 'config', preview_changes: false }, true],
      ['rollback_to_checkpoint', { target: { timestamp: 1721039400000 } }, true],
      ['rollback_to_checkpoint', { target: { checkpoint: 'good' } }, false],
      ['rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, scope: 'everything' }, false],
      ['manage_checkpoint', { action: 'list' }, true],
      ['manage_checkpoint', { action: 'undo' }, false],
      ['operation_history', { limit: 501 }, false],
      ['commit_changes', { force: 'yes' }, false],
    ]
    for (const [name, input, valid] of cases) {
      expect([name, input, ajv.validate(schema(name), input)]).toEqual([name, input, valid])
      const outcome = await byName[name].run(input)
      // Valid inputs may still fail in the tool (no such file): never as invalid input.
      expect([name, input, outcome.isError && outcome.error.code === 'EINVALIDINPUT']).toEqual([name, input, !valid])
    }
  })
})

describe('malformed inputs', () => {
  let ws: Workspace
  let tools: AgentTool[]
  beforeEach(async () => {
    ws = await Workspace.open({ lower })
    tools = createAgentTools(ws)
  })

  it('come back as EINVALIDINPUT with one issue per field, and change nothing', async () => {
    const error = await fails(tools, 'write_file', { path: 42, contents: 'x' })
    expect(error.code).toBe('EINVALIDINPUT')
    expect(error.message).toMatch(/^invalid input for write_file: /)
    expect(error.issues!.map((issue) => issue.path).sort()).toEqual(['(input)', 'content', 'path'])
    expect(error.message).toContain('contents')
    // A guessed argument name is answered with the names there are, so the agent can retry.
    expect(error.issues!.find((issue) => issue.path === '(input)')!.message).toMatch(/"contents".*write_file takes path, content/)
    expect((await fails(tools, 'manage_checkpoint', { action: 'create', name: 'after-b' })).message).toMatch(/"name".*manage_checkpoint takes action, checkpoint_name/)
    expect(ws.checkpoints()).toEqual([])
    expect((await fails(tools, 'undo_operation', { steps: 99 })).issues).toEqual([{ path: 'steps', message: expect.stringContaining('50') }])
    expect((await fails(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'a', operation_id: 'b' } })).issues).toEqual([
      { path: 'target', message: 'give exactly one of checkpoint_id, timestamp, operation_id (got 2)' },
    ])
    expect((await fails(tools, 'manage_checkpoint', { action: 'rename', checkpoint_name: 'a' })).issues).toEqual([{ path: 'new_name', message: 'rename needs new_name' }])
    expect((await fails(tools, 'manage_checkpoint', { action: 'delete' })).issues).toEqual([
      { path: 'checkpoint_name', message: 'delete needs checkpoint_name (an id or name)' },
    ])
    expect((await fails(tools, 'read_file', undefined)).code).toBe('EINVALIDINPUT')
    expect(ws.history()).toEqual([])
    expect(ws.changes()).toEqual([])
  })

  it('refuses times that are not times, and unknown tools, as tool errors', async () => {
    expect(await fails(tools, 'operation_history', { since: 'yesterday-ish' })).toMatchObject({ code: 'EINVALIDINPUT', message: expect.stringContaining("since: 'yesterday-ish' is not a time") })
    expect(await fails(tools, 'rollback_to_checkpoint', { target: { timestamp: 'soon' } })).toMatchObject({ code: 'EINVALIDINPUT' })
    expect(await fails(tools, 'rm_rf', {})).toMatchObject({ code: 'EUNKNOWNTOOL', message: expect.stringContaining('read_file, write_file') })
  })

  it('never throw, even when the workspace is closed', async () => {
    await ws.close()
    for (const tool of tools) {
      const outcome = await tool.run(tool.name === 'manage_checkpoint' ? { action: 'create' } : tool.name === 'rollback_to_checkpoint' ? { target: { timestamp: 0 } } : { path: '/app/x', content: '', from: '/a', to: '/b', old_string: 'a', new_string: 'b' })
      expect(outcome.isError).toBe(true)
    }
    expect(await fails(tools, 'manage_checkpoint', { action: 'create' })).toMatchObject({ message: 'this workspace is closed' })
    const hostile = { get path(): string { throw new Error('no reading me') } }
    expect(await fails(tools, 'read_file', hostile)).toEqual({ code: 'EINTERNAL', message: 'no reading me' })
  })
})

describe('file tools', () => {
  let ws: Workspace
  let tools: AgentTool[]
  beforeEach(async () => {
    ws = await Workspace.open({ lower })
    tools = createAgentTools(ws)
  })

  it('read_file returns lines from offset up to limit, with the total and where to continue', async () => {
    ws.fs.writeFileSync('/lines.txt', Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n')
    expect(await ok(tools, 'read_file', { path: '/lines.txt', offset: 3, limit: 4 })).toEqual({
      path: '/lines.txt', content: 'line 3\nline 4\nline 5\nline 6', start_line: 3, end_line: 6, total_lines: 10, truncated: true, next_offset: 7,
    })
    expect(await ok(tools, 'read_file', { path: '/lines.txt', offset: 9 })).toMatchObject({ content: 'line 9\nline 10', end_line: 10, truncated: false })
    expect(await ok(tools, 'read_file', { path: '/lines.txt' })).toMatchObject({ start_line: 1, end_line: 10, total_lines: 10 })
    expect(await fails(tools, 'read_file', { path: '/lines.txt', offset: 12 })).toEqual({ code: 'EOUTOFRANGE', message: "offset 12 is past the end of '/lines.txt', which has 10 lines" })
    ws.chdir('/app')
    expect(await ok(tools, 'read_file', { path: 'config.json' })).toMatchObject({ path: '/app/config.json', content: '{\n  "port": 8080\n}', total_lines: 3 })
  })

  it('read_file stops at its character budget and says where to continue', async () => {
    // Lines of 1 500 characters (each within the 2 000 a line may show): 66 of them fit in 100 000.
    const long = 'x'.repeat(1500)
    ws.fs.writeFileSync('/long.txt', Array.from({ length: 100 }, () => long).join('\n'))
    const first = await ok(tools, 'read_file', { path: '/long.txt' })
    expect(first).toMatchObject({ end_line: 66, truncated: true, next_offset: 67 })
    expect(first.content.length).toBeLessThanOrEqual(100_000)
    expect(first).not.toHaveProperty('line_truncated')
    // A minified line shows its first 2 000 characters (as Claude Code's Read cuts lines), and the lines after it follow.
    ws.fs.writeFileSync('/minified.js', 'y'.repeat(250_000) + '\nnext\n')
    const cut = await ok(tools, 'read_file', { path: '/minified.js' })
    expect(cut).toEqual({ path: '/minified.js', content: 'y'.repeat(2000) + '\nnext', start_line: 1, end_line: 2, total_lines: 2, truncated: false, line_truncated: true, truncated_lines: [1] })
  })

  it('a file of CRLF lines reads with LF endings, as search_files shows it, and edits keep its CRLF endings', async () => {
    ws.fs.writeFileSync('/win.ini', '[core]\r\nname = a\r\nsize = 1\r\n')
    expect(await ok(tools, 'read_file', { path: '/win.ini' })).toMatchObject({ content: '[core]\nname = a\nsize = 1', total_lines: 3, line_endings: 'crlf' })
    // An old_string over two lines, copied from what read_file or search_files showed.
    expect(await ok(tools, 'edit_file', { path: '/win.ini', old_string: 'name = a\nsize = 1', new_string: 'name = b\nsize = 2\nmode = x' })).toMatchObject({ replacements: 1, lines: [2] })
    expect(ws.fs.readFileSync('/win.ini', 'utf8')).toBe('[core]\r\nname = b\r\nsize = 2\r\nmode = x\r\n')
    // Copied with its CRLF endings, it matches too.
    await ok(tools, 'edit_file', { path: '/win.ini', old_string: '[core]\r\nname', new_string: '[main]\r\nname' })
    await ok(tools, 'insert_text', { path: '/win.ini', insert_line: 1, text: '; a comment\n; another' })
    expect(ws.fs.readFileSync('/win.ini', 'utf8')).toBe('[main]\r\n; a comment\r\n; another\r\nname = b\r\nsize = 2\r\nmode = x\r\n')
    // Mixed endings are taken as they are: only the exact text matches.
    ws.fs.writeFileSync('/mixed.txt', 'a\r\nb\nc\r\n')
    expect(await ok(tools, 'read_file', { path: '/mixed.txt' })).toEqual(expect.not.objectContaining({ line_endings: expect.anything() }))
    expect(await fails(tools, 'edit_file', { path: '/mixed.txt', old_string: 'a\nb', new_string: 'x' })).toMatchObject({ code: 'ENOMATCH' })
    await ok(tools, 'edit_file', { path: '/mixed.txt', old_string: 'a\r\nb', new_string: 'x' })
    expect(ws.fs.readFileSync('/mixed.txt', 'utf8')).toBe('x\nc\r\n')
  })

  it('read_file reports missing files, directories and binary files with their codes', async () => {
    expect(await fails(tools, 'read_file', { path: '/nope.txt' })).toEqual({ code: 'ENOENT', message: "ENOENT: no such file or directory, open '/nope.txt'" })
    expect(await fails(tools, 'read_file', { path: '/app' })).toMatchObject({ code: 'EISDIR' })
    expect(await fails(tools, 'read_file', { path: '/app/logo.png' })).toEqual({
      code: 'EBINARY',
      message:
        "'/app/logo.png' is a binary file (12 bytes): read_file shows text, and PNG, JPEG, GIF and WebP images, and it is neither. " +
        "Look into it with run_command instead, e.g. in cwd '/app': file 'logo.png', or xxd 'logo.png' | head",
    })
  })

  it('write_file creates parents, says whether it created the file, and names the operations', async () => {
    const created = await ok(tools, 'write_file', { path: '/app/new/deep/file.txt', content: 'a\nb\n' })
    expect(created).toMatchObject({ path: '/app/new/deep/file.txt', created: true, bytes: 4, lines: 2 })
    expect(created.operation_ids).toEqual(ws.history().map((op) => op.id).reverse())
    // The new parents and the file are one operation, which one undo step takes back whole (test/tools-one-operation.test.ts).
    expect(ws.history().map((op) => [op.type, op.description])).toEqual([['file_create', 'file create /app/new/deep/file.txt, with mkdir -p /app/new/deep']])
    const overwritten = await ok(tools, 'write_file', { path: '/app/config.json', content: '{}' })
    expect(overwritten).toMatchObject({ created: false, operation_ids: [ws.history()[0].id] })
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe('{}')
    expect(await fails(tools, 'write_file', { path: '/app/src', content: 'x' })).toEqual({ code: 'EISDIR', message: "'/app/src' is a directory; write_file writes files" })
    // A path ending in '/' names a directory, as open(2) takes it: it made a file of that name.
    const before = ws.history().length
    expect(await fails(tools, 'write_file', { path: '/app/newdir/', content: 'x' })).toEqual({ code: 'EISDIR', message: "'/app/newdir/' ends with '/', so it names a directory; write_file writes files (give the file's name)" })
    expect(ws.fs.existsSync('/app/newdir')).toBe(false)
    expect(ws.history()).toHaveLength(before)
  })

  it('edit_file replaces a unique match and refuses a missing or ambiguous one, leaving the file as it was', async () => {
    const path = '/app/src/main.ts'
    const before = ws.fs.readFileSync(path, 'utf8')
    const ambiguous = await fails(tools, 'edit_file', { path, old_string: 'serve()', new_string: 'start()' })
    expect(ambiguous).toEqual({
      code: 'EAMBIGUOUS',
      message: "old_string occurs 2 times in '/app/src/main.ts' (lines 2, 3); include more surrounding lines to make it unique, or pass replace_all: true to replace every one",
      details: { lines: [2, 3] },
    })
    expect(await fails(tools, 'edit_file', { path, old_string: 'serve( )', new_string: 'x' })).toMatchObject({ code: 'ENOMATCH', message: expect.stringContaining('was not found') })
    expect(await fails(tools, 'edit_file', { path, old_string: 'serve', new_string: 'serve' })).toMatchObject({ code: 'ENOCHANGE' })
    expect(ws.fs.readFileSync(path, 'utf8')).toBe(before)
    expect(ws.history()).toEqual([])

    const unique = await ok(tools, 'edit_file', { path, old_string: 'serve()\nserve()', new_string: 'serve()\nstop()' })
    expect(unique).toMatchObject({ replacements: 1, lines: [2] })
    expect(ws.fs.readFileSync(path, 'utf8')).toBe('import { serve } from "./serve"\nserve()\nstop()\n')
    const all = await ok(tools, 'edit_file', { path, old_string: 'serve', new_string: 'start', replace_all: true })
    expect(all).toMatchObject({ replacements: 3, lines: [1, 1, 2] })
    expect(ws.fs.readFileSync(path, 'utf8')).toBe('import { start } from "./start"\nstart()\nstop()\n')
    expect(await fails(tools, 'edit_file', { path: '/app/logo.png', old_string: 'PNG', new_string: 'GIF' })).toMatchObject({ code: 'EBINARY' })
  })

  it('edit_file with edits applies them in order, all or nothing, as one operation', async () => {
    const path = '/app/src/main.ts'
    const before = ws.fs.readFileSync(path, 'utf8')
    const refused = await fails(tools, 'edit_file', { path, edits: [{ old_string: 'serve }', new_string: 'start }' }, { old_string: 'missing', new_string: 'x' }] })
    expect(refused).toMatchObject({ code: 'ENOMATCH', message: expect.stringMatching(/^edits\[1\]: old_string was not found in '\/app\/src\/main.ts' \(after the edits before it\)/) })
    const ambiguous = await fails(tools, 'edit_file', { path, edits: [{ old_string: 'import', new_string: 'export' }, { old_string: 'serve()', new_string: 'x' }] })
    expect(ambiguous).toMatchObject({ code: 'EAMBIGUOUS', message: expect.stringContaining('edits[1]: old_string occurs 2 times'), details: { lines: [2, 3] } })
    expect(ws.fs.readFileSync(path, 'utf8')).toBe(before)
    expect(ws.history()).toEqual([])

    // Each edit sees the text the ones before it left: the second finds what the first wrote.
    const done = await ok(tools, 'edit_file', {
      path,
      edits: [
        { old_string: 'serve()\nserve()', new_string: 'serve()\nstop()' },
        { old_string: 'stop()', new_string: 'stop(now)' },
        { old_string: 'serve', new_string: 'start', replace_all: true },
      ],
    })
    expect(done).toMatchObject({ replacements: 5, edits_applied: 3 })
    expect(ws.fs.readFileSync(path, 'utf8')).toBe('import { start } from "./start"\nstart()\nstop(now)\n')
    expect(ws.history()).toHaveLength(1)
    expect(done.operation_ids).toEqual([ws.history()[0].id])
    expect((await fails(tools, 'edit_file', { path, old_string: 'a', new_string: 'b', edits: [{ old_string: 'a', new_string: 'b' }] })).issues).toEqual([
      { path: 'edits', message: 'give either edits or old_string/new_string, not both' },
    ])
    expect((await fails(tools, 'edit_file', { path, old_string: 'a' })).issues).toEqual([{ path: 'new_string', message: 'new_string is required (or give edits)' }])
  })

  it('insert_text inserts after a line, at the start with 0 and at the end with the line count', async () => {
    ws.fs.writeFileSync('/list.txt', 'one\ntwo\nthree')
    expect(await ok(tools, 'insert_text', { path: '/list.txt', insert_line: 0, text: 'zero' })).toMatchObject({ inserted_lines: { from: 1, to: 1 }, total_lines: 4 })
    expect(await ok(tools, 'insert_text', { path: '/list.txt', insert_line: 2, text: 'one and a half\none and three quarters\n' })).toMatchObject({ inserted_lines: { from: 3, to: 4 }, total_lines: 6 })
    expect(await ok(tools, 'insert_text', { path: '/list.txt', insert_line: 6, text: 'four' })).toMatchObject({ inserted_lines: { from: 7, to: 7 }, total_lines: 7 })
    expect(ws.fs.readFileSync('/list.txt', 'utf8')).toBe('zero\none\none and a half\none and three quarters\ntwo\nthree\nfour\n')
    expect(await fails(tools, 'insert_text', { path: '/list.txt', insert_line: 8, text: 'x' })).toEqual({
      code: 'EOUTOFRANGE',
      message: "insert_line 8 is past the end of '/list.txt', which has 7 lines (use 7 to append)",
    })
    expect(await fails(tools, 'insert_text', { path: '/app/logo.png', insert_line: 0, text: 'x' })).toMatchObject({ code: 'EBINARY' })
    ws.fs.writeFileSync('/empty.txt', '')
    await ok(tools, 'insert_text', { path: '/empty.txt', insert_line: 0, text: 'first' })
    expect(ws.fs.readFileSync('/empty.txt', 'utf8')).toBe('first\n')
    const [insert] = ws.history()
    expect((await ok(tools, 'undo_operation', {})).undone_operations[0].operation_id).toBe(insert.id)
    expect(ws.fs.readFileSync('/empty.txt', 'utf8')).toBe('')
  })

  it('list_directory lists names, types and sizes, sorted, recursively when asked', async () => {
    ws.fs.symlinkSync('config.json', '/app/link.json')
    expect(await ok(tools, 'list_directory', { path: '/app' })).toEqual({
      path: '/app',
      truncated: false,
      total: 5,
      entries: [
        { path: 'config.json', type: 'file', size: 19 },
        { path: 'empty/', type: 'directory' },
        { path: 'link.json', type: 'symlink', target: 'config.json' },
        { path: 'logo.png', type: 'file', size: 12 },
        { path: 'src/', type: 'directory' },
      ],
    })
    const all = await ok(tools, 'list_directory', { path: '/', recursive: true })
    expect(all.entries.map((entry: { path: string }) => entry.path)).toEqual([
      'app/', 'app/config.json', 'app/empty/', 'app/link.json', 'app/logo.png', 'app/src/', 'app/src/main.ts',
    ])
    expect(await fails(tools, 'list_directory', { path: '/app/config.json' })).toMatchObject({ code: 'ENOTDIR' })
    expect(await fails(tools, 'list_directory', { path: '/nope' })).toMatchObject({ code: 'ENOENT' })
  })

  it('list_directory stops at the result budget, says how many there are, and pages on with offset', async () => {
    for (let i = 0; i < 1005; i++) ws.fs.writeFileSync(`/many-${String(i).padStart(4, '0')}`, '')
    const listing = await ok(tools, 'list_directory', { path: '/' })
    expect(JSON.stringify(listing).length).toBeLessThanOrEqual(8000)
    expect(listing).toMatchObject({ total: 1006, truncated: true, next_offset: listing.entries.length })
    expect(listing.entries.length).toBeGreaterThan(100)
    const seen: string[] = []
    for (let offset: number | undefined = 0; offset !== undefined; ) {
      const page: Json = await ok(tools, 'list_directory', { path: '/', offset })
      seen.push(...page.entries.map((entry: { path: string }) => entry.path))
      offset = page.next_offset
    }
    expect(seen).toEqual(['app/', ...Array.from({ length: 1005 }, (_, i) => `many-${String(i).padStart(4, '0')}`)])
  })

  it('delete_path deletes files and empty directories, and a full directory only with recursive', async () => {
    expect(await fails(tools, 'delete_path', { path: '/app/src' })).toEqual({
      code: 'ENOTEMPTY',
      message: "'/app/src' is a directory with 1 entries; pass recursive: true to delete it and everything under it",
    })
    expect(ws.fs.existsSync('/app/src/main.ts')).toBe(true)
    expect(await ok(tools, 'delete_path', { path: '/app/empty' })).toMatchObject({ type: 'directory' })
    expect(await ok(tools, 'delete_path', { path: '/app/config.json' })).toMatchObject({ type: 'file', operation_ids: [ws.history()[0].id] })
    expect(await ok(tools, 'delete_path', { path: '/app/src', recursive: true })).toMatchObject({ type: 'directory' })
    expect(ws.fs.readdirSync('/app')).toEqual(['logo.png'])
    expect(await fails(tools, 'delete_path', { path: '/app/src' })).toMatchObject({ code: 'ENOENT' })
  })

  it('move_path moves into new parents and refuses to overwrite', async () => {
    expect(await fails(tools, 'move_path', { from: '/app/config.json', to: '/app/src/main.ts' })).toEqual({
      code: 'EEXIST',
      message: "'/app/src/main.ts' already exists; delete it first or choose another destination",
    })
    expect(await ok(tools, 'move_path', { from: '/app/src', to: '/lib/code' })).toMatchObject({ from: '/app/src', to: '/lib/code' })
    expect(ws.fs.readFileSync('/lib/code/main.ts', 'utf8')).toContain('serve()')
    expect(ws.fs.existsSync('/app/src')).toBe(false)
    expect(await fails(tools, 'move_path', { from: '/nope', to: '/x' })).toMatchObject({ code: 'ENOENT' })
  })
})
