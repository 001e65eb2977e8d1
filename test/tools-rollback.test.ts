/**
 * rewindfs/tools: undo_operation, rollback_to_checkpoint, manage_checkpoint, operation_history and
 * commit_changes against the real engine, and an agent loop that breaks a config and recovers.
 */
import { beforeEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { MemoryStore, flushEngine } from '../src/adapter-kit.js'
import type { FlushEntry, FlushTarget } from '../src/flush/target.js'
import { type AgentTool, type ToolResult, callTool, createAgentTools, isConfigPath } from '../tools/index.js'

const lower = {
  '/app/config.json': '{\n  "port": 8080\n}\n',
  '/app/settings.yaml': 'a: 1\nb: 2\nc: 3\n',
  '/app/src/main.ts': 'serve()\n',
  '/app/README.md': '# app\n',
  '/app/logs/today.log': 'started\n',
}

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome)
  return outcome.result
}

async function fails(tools: readonly AgentTool[], name: string, input: unknown): Promise<Extract<ToolResult, { isError: true }>['error']> {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded: ${JSON.stringify(outcome.result)}`)
  return outcome.error
}

/** Every file and directory in the workspace with its content. */
function tree(ws: Workspace, dir = '/'): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
    const path = dir === '/' ? `/${name}` : `${dir}/${name}`
    if (ws.fs.lstatSync(path).isDirectory()) Object.assign(out, { [path + '/']: '' }, tree(ws, path))
    else out[path] = ws.fs.readFileSync(path, 'utf8') as string
  }
  return out
}

let ws: Workspace
let tools: AgentTool[]
beforeEach(async () => {
  ws = await Workspace.open({ lower, autoCheckpoint: false })
  tools = createAgentTools(ws)
})

describe('undo_operation', () => {
  it('undoes the last operation and reports it in the seed’s shape, with the line numbers it reverts', async () => {
    await ok(tools, 'edit_file', { path: '/app/settings.yaml', old_string: 'b: 2\n', new_string: 'b: 20\nb2: 21\n' })
    const [edit] = ws.history()
    const result = await ok(tools, 'undo_operation', {})
    expect(Object.keys(result)[0]).toBe('summary')
    expect(result).toEqual({
      summary: `Undid 1 operation(s): ${edit.id} (file edit /app/settings.yaml); 1 path(s) changed back.`,
      dry_run: false,
      undo_summary: { operations_undone: 1, files_affected: ['/app/settings.yaml'], timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      undone_operations: [
        {
          operation_id: edit.id,
          type: 'file_edit',
          operation: 'file_edit',
          file_path: '/app/settings.yaml',
          paths: ['/app/settings.yaml'],
          config_change: true,
          description: 'file edit /app/settings.yaml',
          timestamp: new Date(edit.time).toISOString(),
          changes_reverted: { lines_restored: [2], lines_removed: [2, 3] },
        },
      ],
      current_state: 'reverted_to_start',
      next_available_undo: null,
      guard_checkpoint: { checkpoint_id: expect.stringMatching(/^ckpt-/), name: expect.any(String) },
      next_step: `to take this undo back, roll back to checkpoint ${result.guard_checkpoint.name} (rollback_to_checkpoint)`,
    })
    expect(ws.fs.readFileSync('/app/settings.yaml', 'utf8')).toBe(lower['/app/settings.yaml'])
    // The undo taken back: the edit is there again.
    await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: result.guard_checkpoint.name }, preview_changes: false })
    expect(ws.fs.readFileSync('/app/settings.yaml', 'utf8')).toContain('b2: 21\n')
  })

  it('numbers reverted lines across hunks, and lists at most 200 per side', async () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`)
    ws.fs.writeFileSync('/app/long.txt', lines.join('\n') + '\n')
    const edited = lines.map((line, i) => (i === 1 ? 'changed 2' : i === 17 ? 'changed 18\nadded 18b' : line))
    await ok(tools, 'write_file', { path: '/app/long.txt', content: edited.join('\n') + '\n' })
    const undo = await ok(tools, 'undo_operation', {})
    expect(undo.undone_operations[0].changes_reverted).toEqual({ lines_restored: [2, 18], lines_removed: [2, 18, 19] })
    ws.fs.writeFileSync('/app/big.txt', Array.from({ length: 300 }, (_, i) => `old ${i}`).join('\n'))
    await ok(tools, 'write_file', { path: '/app/big.txt', content: Array.from({ length: 300 }, (_, i) => `new ${i}`).join('\n') })
    const big = (await ok(tools, 'undo_operation', {})).undone_operations[0].changes_reverted
    expect(big.lines_restored).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    expect(big.truncated).toBe(true)
  })

  it('undoes several steps newest first, and a dry run reports the same and changes nothing', async () => {
    await ok(tools, 'write_file', { path: '/app/src/util.ts', content: 'export {}\n' })
    await ok(tools, 'edit_file', { path: '/app/src/main.ts', old_string: 'serve()', new_string: 'serve(8080)' })
    await ok(tools, 'delete_path', { path: '/app/README.md' })
    const [remove, edit, create] = ws.history()
    const before = tree(ws)
    const preview = await ok(tools, 'undo_operation', { steps: 2, dry_run: true })
    expect(tree(ws)).toEqual(before)
    expect(preview).toMatchObject({ dry_run: true, undo_summary: { operations_undone: 2 }, current_state: `reverted_to_${create.id}`, next_available_undo: create.id })
    expect(preview.undone_operations.map((op: Json) => [op.operation_id, op.type])).toEqual([[remove.id, 'file_delete'], [edit.id, 'file_edit']])
    expect(preview.undone_operations[0].changes_reverted).toEqual({ lines_restored: [1], lines_removed: [] })
    const done = await ok(tools, 'undo_operation', { steps: 2 })
    expect(preview.summary).toMatch(/^Would undo 2 operation\(s\): .*Nothing was changed \(dry run\)\.$/)
    expect(done.summary).toMatch(/^Undid 2 operation\(s\): /)
    const same = (result: Json) => ({ ...result, summary: '', dry_run: true, undo_summary: { ...result.undo_summary, timestamp: 0 }, guard_checkpoint: undefined, next_step: undefined })
    expect(same(done)).toEqual(same(preview))
    // Only the undo that changed something kept a guard.
    expect(preview.guard_checkpoint).toBeUndefined()
    expect(done.guard_checkpoint).toBeDefined()
    expect(done.undo_summary.files_affected).toEqual(['/app/README.md', '/app/src/main.ts'])
    expect(ws.fs.readFileSync('/app/README.md', 'utf8')).toBe('# app\n')
    expect(ws.fs.readFileSync('/app/src/main.ts', 'utf8')).toBe('serve()\n')
    expect(ws.fs.existsSync('/app/src/util.ts')).toBe(true)
  })

  it('config_change undoes only edits to configuration files, newest first', async () => {
    await ok(tools, 'edit_file', { path: '/app/config.json', old_string: '8080', new_string: '80' })
    await ok(tools, 'edit_file', { path: '/app/src/main.ts', old_string: 'serve()', new_string: 'serve(80)' })
    await ok(tools, 'write_file', { path: '/app/.env', content: 'PORT=80\n' })
    await ok(tools, 'edit_file', { path: '/app/README.md', old_string: '# app', new_string: '# App' })
    await ok(tools, 'edit_file', { path: '/app/settings.yaml', old_string: 'a: 1', new_string: 'a: 10' })
    const history = await ok(tools, 'operation_history', { operation_type: 'config_change' })
    expect(history.operations.map((op: Json) => op.file_path)).toEqual(['/app/settings.yaml', '/app/.env', '/app/config.json'])

    const result = await ok(tools, 'undo_operation', { operation_type: 'config_change', steps: 2 })
    expect(result.undone_operations.map((op: Json) => op.file_path)).toEqual(['/app/settings.yaml', '/app/.env'])
    expect(result.next_available_undo).toBe(history.operations[2].operation_id)
    expect(ws.fs.existsSync('/app/.env')).toBe(false)
    expect(ws.fs.readFileSync('/app/settings.yaml', 'utf8')).toBe('a: 1\nb: 2\nc: 3\n')
    // The non-config edits in between stay.
    expect(ws.fs.readFileSync('/app/README.md', 'utf8')).toBe('# App\n')
    expect(ws.fs.readFileSync('/app/src/main.ts', 'utf8')).toBe('serve(80)\n')
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toContain('"port": 80\n')
    await ok(tools, 'undo_operation', { operation_type: 'config_change' })
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe(lower['/app/config.json'])
    expect(await fails(tools, 'undo_operation', { operation_type: 'config_change' })).toEqual({
      code: 'ENOTHINGTOUNDO',
      message: 'there is no operation config_change left to undo; operation_history lists what was done',
    })
  })

  it('knows configuration files by name', () => {
    for (const path of ['/a.json', '/b/c.YAML', '/x.yml', '/p.toml', '/s.ini', '/nginx.conf', '/.env', '/.env.local', '/prod.env']) expect([path, isConfigPath(path)]).toEqual([path, true])
    for (const path of ['/a.ts', '/json', '/README.md', '/env', '/a.json.bak', '/conf/x.txt']) expect([path, isConfigPath(path)]).toEqual([path, false])
  })

  it('filters by file_create, file_delete and target_files', async () => {
    await ok(tools, 'write_file', { path: '/app/a.txt', content: 'a' })
    await ok(tools, 'delete_path', { path: '/app/logs', recursive: true })
    await ok(tools, 'write_file', { path: '/app/b.txt', content: 'b' })
    await ok(tools, 'edit_file', { path: '/app/src/main.ts', old_string: 'serve', new_string: 'run' })
    const deleted = await ok(tools, 'undo_operation', { operation_type: 'file_delete' })
    expect(deleted.undone_operations).toMatchObject([{ type: 'file_delete', file_path: '/app/logs', operation: 'rmdir' }])
    expect(ws.fs.readFileSync('/app/logs/today.log', 'utf8')).toBe('started\n')
    const created = await ok(tools, 'undo_operation', { operation_type: 'file_create', target_files: ['/app/a.txt'] })
    expect(created.undone_operations.map((op: Json) => op.file_path)).toEqual(['/app/a.txt'])
    expect(ws.fs.existsSync('/app/a.txt')).toBe(false)
    expect(ws.fs.existsSync('/app/b.txt')).toBe(true)
    const underSrc = await ok(tools, 'undo_operation', { target_files: ['/app/src'] })
    expect(underSrc.undone_operations.map((op: Json) => op.file_path)).toEqual(['/app/src/main.ts'])
    expect(await fails(tools, 'undo_operation', { target_files: ['/elsewhere'] })).toMatchObject({ code: 'ENOTHINGTOUNDO', message: expect.stringContaining('on /elsewhere') })
  })

  it('refuses, naming them, when later operations depend on the ones selected, and changes nothing', async () => {
    await ok(tools, 'write_file', { path: '/app/new.json', content: '{}\n' })
    await ok(tools, 'edit_file', { path: '/app/new.json', old_string: '{}', new_string: '{"a":1}' })
    const [edit] = ws.history()
    const before = tree(ws)
    const error = await fails(tools, 'undo_operation', { operation_type: 'file_create' })
    expect(error).toMatchObject({ code: 'EDEPENDENT', details: { blocking: [edit.id] }, message: expect.stringContaining(`${edit.id} (file_edit /app/new.json)`) })
    expect(error.message).toContain('Undo those first')
    expect(tree(ws)).toEqual(before)
    // The guard an undo keeps first is dropped with the refusal.
    expect(ws.checkpoints()).toEqual([])
  })
})

describe('rollback_to_checkpoint', () => {
  it('previews by default (a diff, nothing changed), applies on request, and can be rolled back itself', async () => {
    await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'good' })
    const good = tree(ws)
    await ok(tools, 'edit_file', { path: '/app/config.json', old_string: '8080', new_string: '9090' })
    await ok(tools, 'delete_path', { path: '/app/logs', recursive: true })
    await ok(tools, 'write_file', { path: '/app/tmp.txt', content: 'scratch\n' })
    const broken = tree(ws)

    const preview = await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' } })
    expect(tree(ws)).toEqual(broken)
    expect(preview).toMatchObject({ preview: true, applied: false, scope: 'project', summary: { paths: 4, added: 2, modified: 1, deleted: 1 } })
    expect(preview.target).toMatch(/^checkpoint good \(ckpt-/)
    expect(preview.next_step).toContain('preview_changes: false')
    const config = preview.changes.find((change: Json) => change.path === '/app/config.json')
    expect(config).toMatchObject({ change: 'modified', entry: 'file' })
    expect(config.diff).toContain('-  "port": 9090')
    expect(config.diff).toContain('+  "port": 8080')
    expect(preview.changes.map((change: Json) => `${change.change} ${change.path}`).sort()).toEqual([
      'added /app/logs', 'added /app/logs/today.log', 'deleted /app/tmp.txt', 'modified /app/config.json',
    ])

    const applied = await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, preview_changes: false })
    expect(applied).toMatchObject({ preview: false, applied: true, summary: { paths: 4 }, guard_checkpoint: { name: expect.any(String) } })
    expect(tree(ws)).toEqual(good)
    await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: applied.guard_checkpoint.name }, preview_changes: false })
    expect(tree(ws)).toEqual(broken)
  })

  it('scope config rolls back only configuration files; scope files only include_files; exclude_files leaves paths alone', async () => {
    await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'good' })
    await ok(tools, 'edit_file', { path: '/app/config.json', old_string: '8080', new_string: '1' })
    await ok(tools, 'edit_file', { path: '/app/settings.yaml', old_string: 'a: 1', new_string: 'a: 2' })
    await ok(tools, 'edit_file', { path: '/app/src/main.ts', old_string: 'serve', new_string: 'run' })
    await ok(tools, 'delete_path', { path: '/app/logs', recursive: true })

    const preview = await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, scope: 'config', exclude_files: ['*.yaml'] })
    expect(preview.changes.map((change: Json) => change.path)).toEqual(['/app/config.json'])
    await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, scope: 'config', exclude_files: ['*.yaml'], preview_changes: false })
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe(lower['/app/config.json'])
    expect(ws.fs.readFileSync('/app/settings.yaml', 'utf8')).toBe('a: 2\nb: 2\nc: 3\n')
    expect(ws.fs.readFileSync('/app/src/main.ts', 'utf8')).toBe('run()\n')

    expect(await fails(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, scope: 'files' })).toEqual({
      code: 'EINVALIDINPUT',
      message: 'scope "files" needs include_files (globs of the paths to roll back)',
    })
    // A time past what a Date holds names the field, as a malformed one does.
    for (const timestamp of [Number.MAX_SAFE_INTEGER, 8.64e15 + 1]) {
      expect(await fails(tools, 'rollback_to_checkpoint', { target: { timestamp } })).toMatchObject({ code: 'EINVALIDINPUT', message: expect.stringContaining('target.timestamp') })
    }
    await ok(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'good' }, scope: 'files', include_files: ['/app/logs'], preview_changes: false })
    expect(ws.fs.readFileSync('/app/logs/today.log', 'utf8')).toBe('started\n')
    expect(ws.fs.readFileSync('/app/src/main.ts', 'utf8')).toBe('run()\n')
    expect(ws.fs.readFileSync('/app/settings.yaml', 'utf8')).toBe('a: 2\nb: 2\nc: 3\n')
  })

  it('rolls back to just after an operation, or to a time', async () => {
    await ok(tools, 'write_file', { path: '/app/a.txt', content: 'one' })
    const [first] = ws.history()
    await ok(tools, 'write_file', { path: '/app/a.txt', content: 'two' })
    await ok(tools, 'rollback_to_checkpoint', { target: { operation_id: first.id }, preview_changes: false })
    expect(ws.fs.readFileSync('/app/a.txt', 'utf8')).toBe('one')
    await ok(tools, 'rollback_to_checkpoint', { target: { timestamp: new Date(first.time - 1).toISOString() }, preview_changes: false })
    expect(ws.fs.existsSync('/app/a.txt')).toBe(false)
    expect(await fails(tools, 'rollback_to_checkpoint', { target: { operation_id: 'op-nope' } })).toEqual({
      code: 'ENOENT',
      message: "no operation has the id 'op-nope'; operation_history lists them",
    })
    expect(await fails(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'nope' } })).toMatchObject({ code: 'ENOENT', message: expect.stringContaining('action "list"') })
  })
})

describe('manage_checkpoint', () => {
  it('creates, lists, describes, renames and deletes checkpoints', async () => {
    const created = await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'before-refactor', description: 'all tests green' })
    expect(created.checkpoint).toMatchObject({ name: 'before-refactor', kind: 'manual', description: 'all tests green', checkpoint_id: expect.stringMatching(/^ckpt-/) })
    await ok(tools, 'write_file', { path: '/app/b.txt', content: 'x\ny\n' })
    const auto = await ok(tools, 'manage_checkpoint', { action: 'create' })
    expect(auto.checkpoint.name).toMatch(/^manual-\d+$/)
    expect(await fails(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'before-refactor' })).toMatchObject({ code: 'EEXIST' })

    const list = await ok(tools, 'manage_checkpoint', { action: 'list' })
    expect(list.count).toBe(2)
    expect(list.checkpoints.map((c: Json) => c.name)).toEqual(['before-refactor', auto.checkpoint.name])

    const info = await ok(tools, 'manage_checkpoint', { action: 'info', checkpoint_name: auto.checkpoint.checkpoint_id })
    const bytes = Object.values(lower).join('').length + 'x\ny\n'.length
    expect(info.project_state).toEqual({ files_count: 6, total_lines: 11, bytes, last_operation: ws.history()[0].id, changes_since_previous: 1 })

    const renamed = await ok(tools, 'manage_checkpoint', { action: 'rename', checkpoint_name: 'before-refactor', new_name: 'green' })
    expect(renamed).toMatchObject({ previous_name: 'before-refactor', checkpoint: { name: 'green', description: 'all tests green' } })
    expect(await fails(tools, 'manage_checkpoint', { action: 'rename', checkpoint_name: 'green', new_name: auto.checkpoint.name })).toMatchObject({ code: 'EEXIST' })
    await ok(tools, 'manage_checkpoint', { action: 'delete', checkpoint_name: 'green' })
    expect(ws.checkpoints().map((c) => c.name)).toEqual([auto.checkpoint.name])
    expect(await fails(tools, 'manage_checkpoint', { action: 'info', checkpoint_name: 'green' })).toMatchObject({ code: 'ENOENT' })
  })

  it('keeps a description with its checkpoint: a reopened store lists it', async () => {
    const store = new MemoryStore()
    const first = await Workspace.open({ lower, store, autoCheckpoint: false })
    await ok(createAgentTools(first), 'manage_checkpoint', { action: 'create', checkpoint_name: 'mine', description: 'before refactor' })
    expect(first.checkpoints()[0].description).toBe('before refactor')
    await first.close()
    const reopened = await Workspace.open({ lower, store, autoCheckpoint: false })
    const list = await ok(createAgentTools(reopened), 'manage_checkpoint', { action: 'list' })
    expect(list.checkpoints).toEqual([expect.objectContaining({ name: 'mine', description: 'before refactor' })])
    await reopened.close()
  })

  it('refuses names a listing cannot show on one line or a lookup cannot find, and changes nothing', async () => {
    const made = await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'first' })
    for (const name of ['two\nlines', 'nul\u0000', 'tab\there', '\ud800', 'x'.repeat(201)]) {
      expect(await fails(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: name }), JSON.stringify(name)).toMatchObject({ code: 'EINVAL' })
      expect(await fails(tools, 'manage_checkpoint', { action: 'rename', checkpoint_name: 'first', new_name: name })).toMatchObject({ code: 'EINVAL' })
    }
    // Another checkpoint's id as a name: looked up by id first, it could never be used by name.
    expect(await fails(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: made.checkpoint.checkpoint_id })).toMatchObject({ code: 'EEXIST' })
    expect(ws.checkpoints().map((c) => c.name)).toEqual(['first'])
    await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'é 名前 🙂'.padEnd(200, '.') })
    // Characters are code points: 200 emoji are 400 UTF-16 units, and a name.
    await ok(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: '🙂'.repeat(200) })
    expect(await fails(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: '🙂'.repeat(201) })).toMatchObject({ code: 'EINVAL' })
  })
})

describe('operation_history', () => {
  it('lists operations newest first, by path, type and time, with a limit', async () => {
    await ok(tools, 'write_file', { path: '/app/a.txt', content: 'a' })
    await new Promise((resolve) => setTimeout(resolve, 5))
    const start = Date.now()
    await ok(tools, 'edit_file', { path: '/app/a.txt', old_string: 'a', new_string: 'b' })
    await ok(tools, 'delete_path', { path: '/app/README.md' })
    await ok(tools, 'undo_operation', {})
    const all = await ok(tools, 'operation_history', {})
    expect(all.operations.map((op: Json) => [op.type, op.file_path, op.undone])).toEqual([
      ['file_delete', '/app/README.md', true],
      ['file_edit', '/app/a.txt', false],
      ['file_create', '/app/a.txt', false],
    ])
    expect(all).toMatchObject({ returned: 3, has_more: false })
    expect((await ok(tools, 'operation_history', { path: '/app/a.txt', operation_type: 'file_edit' })).operations).toHaveLength(1)
    expect((await ok(tools, 'operation_history', { since: new Date(start).toISOString() })).returned).toBe(2)
    expect((await ok(tools, 'operation_history', { since: start })).returned).toBe(2)
    expect(await ok(tools, 'operation_history', { limit: 1 })).toMatchObject({ returned: 1, has_more: true })
    ws.chdir('/app')
    expect((await ok(tools, 'operation_history', { path: 'README.md' })).returned).toBe(1)
  })
})

/** A flush target in memory: a map of entries with a version per path. */
class MemoryTarget implements FlushTarget {
  readonly kind = 'memory'
  readonly id = 'memory:test'
  readonly flusher = flushEngine
  readonly entries = new Map<string, FlushEntry>()
  private readonly version = new Map<string, string>()
  private generation = 0

  async versions(paths: readonly string[]) {
    return paths.map((path) => this.version.get(path))
  }

  async apply(entries: readonly FlushEntry[]) {
    for (const entry of entries) this.set(entry)
    return entries.map((entry) => this.version.get(entry.path))
  }

  /** Also how "someone else" changes the target. */
  set(entry: FlushEntry): void {
    if (entry.kind === 'delete') {
      for (const path of [...this.entries.keys()]) if (path === entry.path || path.startsWith(entry.path + '/')) (this.entries.delete(path), this.version.delete(path))
    } else {
      this.entries.set(entry.path, entry)
      this.version.set(entry.path, `v${++this.generation}`)
    }
  }

  text(path: string): string | undefined {
    const entry = this.entries.get(path)
    return entry?.kind === 'file' ? new TextDecoder().decode(entry.content) : undefined
  }
}

describe('commit_changes', () => {
  it('flushes the workspace to the target, refuses over a conflict, and overwrites with force', async () => {
    const target = new MemoryTarget()
    const committing = createAgentTools(ws, { flushTarget: target })
    await ok(committing, 'write_file', { path: '/app/config.json', content: '{"port":1}\n' })
    await ok(committing, 'delete_path', { path: '/app/README.md' })
    const first = await ok(committing, 'commit_changes', {})
    expect(first).toMatchObject({ applied: true, target: 'memory:test' })
    expect(first.changes.map((change: Json) => `${change.change} ${change.path}`).sort()).toEqual(['deleted /app/README.md', 'modified /app/config.json'])
    expect(target.text('/app/config.json')).toBe('{"port":1}\n')

    target.set({ path: '/app/config.json', kind: 'file', mode: 0o644, mtimeMs: 0, content: new TextEncoder().encode('theirs') })
    await ok(committing, 'write_file', { path: '/app/config.json', content: '{"port":2}\n' })
    expect(await fails(committing, 'commit_changes', {})).toMatchObject({ code: 'ECONFLICT', message: expect.stringContaining('/app/config.json') })
    expect(target.text('/app/config.json')).toBe('theirs')
    expect(await ok(committing, 'commit_changes', { force: true })).toMatchObject({ applied: true, changes: [{ path: '/app/config.json' }] })
    expect(target.text('/app/config.json')).toBe('{"port":2}\n')
  })
})

describe('an agent loop', () => {
  it('breaks a config, notices, undoes it; then previews and applies a rollback to its checkpoint', async () => {
    /** The host: runs the model's tool calls and hands each result back (here: to a scripted model). */
    const transcript: { name: string; input: unknown; outcome: ToolResult }[] = []
    const call = async (name: string, input: unknown) => {
      const outcome = await callTool(tools, name, input)
      transcript.push({ name, input, outcome })
      return outcome
    }
    const result = (outcome: ToolResult): Json => (outcome.isError ? expect.fail(outcome.error.message) : outcome.result)

    await call('manage_checkpoint', { action: 'create', checkpoint_name: 'task-start', description: 'before changing the port' })
    const start = tree(ws)
    // Turn 1: the model writes an invalid config, then checks its own work.
    await call('write_file', { path: '/app/config.json', content: '{ "port": 9090, }\n' })
    const check = result(await call('read_file', { path: '/app/config.json' }))
    expect(() => JSON.parse(check.content)).toThrow()
    // Turn 2: it undoes the config change and sees the file as it was.
    const undo = result(await call('undo_operation', { operation_type: 'config_change' }))
    expect(undo.undone_operations[0]).toMatchObject({ file_path: '/app/config.json', changes_reverted: { lines_restored: [1, 2, 3], lines_removed: [1] } })
    expect(JSON.parse(result(await call('read_file', { path: '/app/config.json' })).content)).toEqual({ port: 8080 })
    // Turn 3: a mis-edit gets a readable refusal, not a crash; it retries with a unique match.
    const refused = await call('edit_file', { path: '/app/settings.yaml', old_string: ': ', new_string: '= ' })
    expect(refused).toMatchObject({ isError: true, error: { code: 'EAMBIGUOUS' } })
    result(await call('edit_file', { path: '/app/settings.yaml', old_string: 'b: 2', new_string: 'b: 3' }))
    result(await call('move_path', { from: '/app/src/main.ts', to: '/app/src/server.ts' }))
    result(await call('delete_path', { path: '/app/logs', recursive: true }))
    const worked = tree(ws)
    // Turn 4: it decides to start over: preview first, then apply.
    const preview = result(await call('rollback_to_checkpoint', { target: { checkpoint_id: 'task-start' } }))
    expect(tree(ws)).toEqual(worked)
    expect(preview.summary).toEqual({ paths: 5, added: 3, modified: 1, deleted: 1 })
    result(await call('rollback_to_checkpoint', { target: { checkpoint_id: 'task-start' }, preview_changes: false }))
    expect(tree(ws)).toEqual(start)
    const history = result(await call('operation_history', { limit: 3 }))
    expect(history.operations[0]).toMatchObject({ operation: 'restore', description: 'restore task-start' })
    // Every result went back to the model as JSON; exactly one was an error.
    expect(transcript.filter((entry) => entry.outcome.isError).map((entry) => entry.name)).toEqual(['edit_file'])
    expect(JSON.parse(JSON.stringify(transcript))).toEqual(transcript)
  })
})
