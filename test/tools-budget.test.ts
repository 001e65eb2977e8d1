/**
 * Answers an agent can afford, on the 16 000-file project of the trial that found them 172-408 KB:
 * every result of a session with a large rollback stays within the result budget; undo_operation
 * right after a rollback does not undo it (which once deleted 2 366 restored files) unless asked for
 * with operation_type 'restore', and every undo says first what it reverted.
 */
import { beforeEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { flushEngine } from '../src/adapter-kit.js'
import type { FlushEntry, FlushTarget } from '../src/flush/target.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

const FILES = 16_000
const lower: Record<string, string> = {}
for (let i = 0; i < FILES; i++) lower[`/lib/pkg${i % 40}/file${i}.js`] = `// module ${i}\nexport const value${i} = ${i}\nexport function f${i}() { return value${i} * 2 }\n`
lower['/package.json'] = '{ "name": "big", "version": "1.0.0" }\n'

/** Flushes into memory, recording what it was asked to write and delete. */
class RecordingTarget implements FlushTarget {
  readonly kind = 'memory'
  readonly id = 'memory:budget'
  readonly flusher = flushEngine
  readonly applied: FlushEntry[] = []
  async versions(paths: readonly string[]) {
    return paths.map(() => undefined)
  }
  async apply(entries: readonly FlushEntry[]) {
    this.applied.push(...entries)
    return entries.map(() => 'v1')
  }
}

let ws: Workspace
let tools: AgentTool[]
let target: RecordingTarget
const sizes: Record<string, number> = {}

/** Runs a tool and records the size of its answer as the model receives it. */
async function run(label: string, name: string, input: unknown): Promise<{ isError: boolean; body: Json }> {
  const outcome = await callTool(tools, name, input)
  const body = outcome.isError ? { error: outcome.error } : outcome.result
  sizes[label] = JSON.stringify(body).length
  return { isError: outcome.isError, body }
}

beforeEach(async () => {
  ws = await Workspace.open({ lower })
  target = new RecordingTarget()
  tools = createAgentTools(ws, { flushTarget: target })
})

describe('a session on a 16 000-file project', () => {
  it('keeps every answer within the budget, and a rollback is undone only on request', async () => {
    await run('checkpoint', 'manage_checkpoint', { action: 'create', checkpoint_name: 'start' })
    for (let i = 0; i < 10; i++) await run(`edit ${i}`, 'edit_file', { path: `/lib/pkg${i}/file${i}.js`, old_string: `= ${i}\n`, new_string: `= ${i + 1}\n` })
    // Coalesced: 'start' was made in the same burst and covers all ten (it once took nine automatic ones).
    expect(ws.checkpoints().map((checkpoint) => checkpoint.name)).toEqual(['start'])
    await run('delete', 'delete_path', { path: '/lib/pkg7', recursive: true })
    await run('write', 'write_file', { path: '/NOTES.md', content: 'notes\n' })

    const preview = await run('preview', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' } })
    expect(preview.body.summary).toEqual({ paths: 411, added: 401, modified: 9, deleted: 1 })
    expect(preview.body.changes_not_listed).toBeGreaterThan(0)
    const page2 = await run('preview page', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' }, offset: preview.body.next_offset })
    expect(page2.body.changes[0].path).not.toBe(preview.body.changes[0].path)
    const applied = await run('rollback', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' }, preview_changes: false })
    expect(applied.body).toMatchObject({ applied: true, summary: { paths: 411 } })
    expect(ws.fs.existsSync('/lib/pkg7/file7.js')).toBe(true)

    const history = await run('history', 'operation_history', { limit: 5 })
    expect(history.body.operations[0]).toMatchObject({ operation: 'restore', paths_total: 411 })
    expect(history.body.operations[0].paths).toHaveLength(10)

    // The trap: steps 2 right after the rollback must not take the rollback back.
    const trap = await run('undo', 'undo_operation', { steps: 2 })
    expect(trap).toMatchObject({ isError: true, body: { error: { code: 'ENOTHINGTOUNDO' } } })
    expect(trap.body.error.message).toContain(`since the rollback ${history.body.operations[0].operation_id}`)
    expect(trap.body.error.message).toContain('operation_type "restore"')
    expect(ws.fs.existsSync('/lib/pkg7/file7.js')).toBe(true)

    // Work after the rollback is undone; the rollback stops the count and the summary says why.
    await run('edit after', 'edit_file', { path: '/package.json', old_string: '1.0.0', new_string: '1.1.0' })
    const partial = await run('undo partial', 'undo_operation', { steps: 3 })
    expect(partial.body.summary).toMatch(/^Undid 1 operation\(s\): .*Asked for 3 step\(s\); older operations are behind the rollback .*operation_type "restore"\.$/)
    expect(ws.fs.readFileSync('/package.json', 'utf8')).toContain('1.0.0')
    expect(ws.fs.existsSync('/lib/pkg7/file7.js')).toBe(true)

    const dry = await run('undo restore dry', 'undo_operation', { operation_type: 'restore', dry_run: true })
    expect(dry.body.summary).toMatch(/^Would undo the rollback .*: 411 path\(s\) would go back to how they were just before it\. Nothing was changed \(dry run\)\.$/)
    expect(dry.body.undo_summary).toMatchObject({ operations_undone: 1, files_affected_total: 411 })

    await run('checkpoints', 'manage_checkpoint', { action: 'list' })
    await run('info', 'manage_checkpoint', { action: 'info', checkpoint_name: 'start' })
    const listing = await run('list', 'list_directory', { path: '/', recursive: true })
    expect(listing.body).toMatchObject({ total: FILES + 40 + 2, truncated: true })
    const search = await run('search', 'search_files', { pattern: 'export' })
    expect(search.body.truncated).toBe(true)
    await run('find', 'find_files', { pattern: '*.js' })

    const commit = await run('commit', 'commit_changes', {})
    expect(commit.body).toMatchObject({ applied: true })
    // The rollback stood: the commit deletes none of the files it brought back.
    expect(target.applied.filter((entry) => entry.kind === 'delete')).toEqual([])

    for (const [label, size] of Object.entries(sizes)) expect([label, size <= 8000]).toEqual([label, true])
  })

  it('undoes the rollback itself with operation_type restore, and says so first', async () => {
    await ws.checkpoint({ name: 'start' })
    ws.fs.rmSync('/lib/pkg1', { recursive: true })
    await run('rollback', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' }, preview_changes: false })
    expect(ws.fs.existsSync('/lib/pkg1/file1.js')).toBe(true)
    const undo = await run('undo restore', 'undo_operation', { operation_type: 'restore' })
    expect(Object.keys(undo.body)[0]).toBe('summary')
    expect(undo.body.summary).toMatch(/^Undid the rollback .*\(restore start\): 401 path\(s\) went back to how they were just before it\.$/)
    expect(undo.body.undone_operations[0]).toMatchObject({ operation: 'restore', type: 'restore', files_reverted: 401 })
    expect(ws.fs.existsSync('/lib/pkg1/file1.js')).toBe(false)
    expect(sizes['undo restore']).toBeLessThanOrEqual(8000)
  })

  it('a smaller budget is kept as well, and stated in the descriptions', async () => {
    const small = createAgentTools(ws, { budget: { chars: 2000 } })
    for (const tool of small.filter((candidate) => candidate.name !== 'read_file' && candidate.name !== 'write_file')) {
      if (['list_directory', 'search_files', 'find_files', 'undo_operation', 'rollback_to_checkpoint', 'operation_history'].includes(tool.name)) expect(tool.description).toContain('2000 characters')
    }
    ws.fs.rmSync('/lib/pkg2', { recursive: true })
    for (const [name, input] of [
      ['list_directory', { path: '/lib/pkg3' }],
      ['search_files', { pattern: 'value' }],
      ['find_files', { pattern: '*' }],
      ['operation_history', {}],
    ] as const) {
      const outcome = await callTool(small, name, input)
      expect([name, JSON.stringify(outcome.isError ? outcome.error : outcome.result).length <= 2000]).toEqual([name, true])
    }
    expect(() => createAgentTools(ws, { budget: { chars: 10 } })).toThrow('budget.chars must be a whole number of characters, at least 1000')
  })
})

describe('the last guard', () => {
  it('fits any JSON value into the budget, keeping what fits and saying it cut', async () => {
    const fc = await import('fast-check')
    const { fitJson } = await import('../tools/budget.js')
    fc.assert(
      // Deep values, wide objects and long arrays: most of them over the budget.
      fc.property(
        fc.oneof(
          fc.jsonValue({ maxDepth: 6 }),
          fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { minKeys: 20, maxKeys: 300 }),
          fc.array(fc.jsonValue({ maxDepth: 4 }), { minLength: 20, maxLength: 300 }),
        ),
        fc.integer({ min: 300, max: 2000 }),
        (value, chars) => {
          const fitted = fitJson(value, chars) as { result_chars?: number }
          expect(JSON.stringify(fitted).length).toBeLessThanOrEqual(chars)
          if (JSON.stringify(value).length <= chars) expect(fitted).toBe(value)
          else expect(fitted?.result_chars).toBeUndefined() // something kept, not only the note
        },
      ),
      { numRuns: 500 },
    )
    const big = { summary: 'kept whole', items: Array.from({ length: 5000 }, (_, i) => ({ path: `/lib/file${i}.js`, n: i })), text: 'x'.repeat(50_000) }
    const fitted = fitJson(big, 4000) as { summary: string; items: unknown[]; text: string; truncated_to_budget: string }
    expect(JSON.stringify(fitted).length).toBeLessThanOrEqual(4000)
    expect(fitted.summary).toBe('kept whole')
    expect(fitted.truncated_to_budget).toContain('4000 characters')
    expect(fitted.items.at(-1)).toMatch(/^… \d+ more not shown$/)
    expect(fitted.items[0]).toEqual({ path: '/lib/file0.js', n: 0 })
    expect(fitted.text).toMatch(/… \[\d+ characters cut\]$/)
  })
})
