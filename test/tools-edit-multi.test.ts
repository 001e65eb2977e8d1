/**
 * edit_file's edits[] taken together: edits that undo each other leave the file as it was, and were
 * answered "replacements: 2" with an operation recorded that changed nothing (a model took it for a
 * change, and undo_operation spent a step on it); now ENOCHANGE, nothing recorded. An edit made
 * ambiguous by an earlier one says so.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

describe('edit_file with edits', () => {
  it('refuses edits that together change nothing, recording nothing', async () => {
    const ws = await Workspace.open({ lower: { '/c.ts': 'let x = 1\n' }, autoCheckpoint: false })
    const tools = createAgentTools(ws)
    const outcome = await callTool(tools, 'edit_file', { path: '/c.ts', edits: [{ old_string: 'x', new_string: 'y' }, { old_string: 'let y', new_string: 'let x' }] })
    expect(outcome).toEqual({ isError: true, error: { code: 'ENOCHANGE', message: "the edits together leave '/c.ts' as it was: nothing was written" } })
    expect(ws.fs.readFileSync('/c.ts', 'utf8')).toBe('let x = 1\n')
    expect(await callTool(tools, 'operation_history', {})).toMatchObject({ isError: false, result: { operations: [] } })
  })

  it('names an old_string made ambiguous by the edits before it', async () => {
    const ws = await Workspace.open({ lower: { '/d.ts': 'foo()\nbar()\n' }, autoCheckpoint: false })
    const outcome = await callTool(createAgentTools(ws), 'edit_file', { path: '/d.ts', edits: [{ old_string: 'foo()', new_string: 'foo(bar())' }, { old_string: 'bar()', new_string: 'baz()' }] })
    expect(outcome).toMatchObject({ isError: true, error: { code: 'EAMBIGUOUS', message: expect.stringMatching(/^edits\[1\]: old_string occurs 2 times in '\/d.ts' after the edits before it \(lines 1, 2\)/) } })
    expect(ws.fs.readFileSync('/d.ts', 'utf8')).toBe('foo()\nbar()\n')
  })
})
