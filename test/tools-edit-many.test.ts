/**
 * edit_file's answers list at most 100 line numbers: '}' replaced all over a long file listed every
 * one (20 000), and the answer was cut to the result budget with the advice to "ask for less", after
 * the edit had been made; the ambiguous refusal's message listed them all as well.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

const big = Array.from({ length: 5000 }, (_, index) => `  x${index}()\n}`).join('\n') + '\n'

describe('edit_file with many matches', () => {
  it('refuses an ambiguous old_string naming the first 20 lines and counting the rest', async () => {
    const ws = await Workspace.open({ lower: { '/big.ts': big }, autoCheckpoint: false })
    const outcome = (await callTool(createAgentTools(ws), 'edit_file', { path: '/big.ts', old_string: '}', new_string: ')' })) as Json
    expect(outcome.error).not.toHaveProperty('truncated_to_budget')
    expect(outcome.error.code).toBe('EAMBIGUOUS')
    const first20 = Array.from({ length: 20 }, (_, index) => 2 * index + 2).join(', ')
    expect(outcome.error.message).toBe(`old_string occurs 5000 times in '/big.ts' (lines ${first20} and 4980 more); include more surrounding lines to make it unique, or pass replace_all: true to replace every one`)
    expect(outcome.error.details).toEqual({ lines: Array.from({ length: 100 }, (_, index) => 2 * index + 2), count: 5000 })
  })

  it('answers replace_all with the first 100 lines and lines_total, within the budget', async () => {
    const ws = await Workspace.open({ lower: { '/big.ts': big }, autoCheckpoint: false })
    const outcome = (await callTool(createAgentTools(ws), 'edit_file', { path: '/big.ts', old_string: '}', new_string: ')', replace_all: true })) as Json
    expect(outcome.isError).toBe(false)
    expect(outcome.result).not.toHaveProperty('truncated_to_budget')
    expect(outcome.result).toMatchObject({ replacements: 5000, lines: Array.from({ length: 100 }, (_, index) => 2 * index + 2), lines_total: 5000 })
    expect(ws.fs.readFileSync('/big.ts', 'utf8')).toBe(big.replaceAll('}', ')'))
  })
})
