/**
 * edit_file takes curly and straight quotes alike when old_string is not found as given, as Claude
 * Code's Edit does: prose with ‘curly’ quotes did not match the straight ones a model types, and a
 * model that conjured curly quotes for code did not match either, so each such edit failed. Found
 * once that way, the file's text is replaced and new_string's quotes follow the file's style.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

async function setup(files: Record<string, string>) {
  const ws = await Workspace.open({ lower: files, autoCheckpoint: false })
  return { ws, edit: (input: Record<string, unknown>) => callTool(createAgentTools(ws), 'edit_file', input) }
}

describe('edit_file and quotes', () => {
  it("curls new_string's straight quotes where the file's text has curly ones", async () => {
    const { ws, edit } = await setup({ '/story.md': 'She said \u201chello\u201d and it\u2019s fine.\n' })
    expect(await edit({ path: '/story.md', old_string: 'said "hello" and it\'s', new_string: 'said "goodbye" and it\'s' })).toMatchObject({
      isError: false,
      result: { replacements: 1, quotes_as_in_file: true },
    })
    expect(ws.fs.readFileSync('/story.md', 'utf8')).toBe('She said \u201cgoodbye\u201d and it\u2019s fine.\n')
  })

  it('straightens curly quotes a model typed for code with straight ones', async () => {
    const { ws, edit } = await setup({ '/q.py': "print('hello')\nx = \"a\"\n" })
    expect(await edit({ path: '/q.py', old_string: 'print(\u2018hello\u2019)', new_string: 'print(\u2018bye\u2019)' })).toMatchObject({ isError: false, result: { quotes_as_in_file: true } })
    expect(ws.fs.readFileSync('/q.py', 'utf8')).toBe("print('bye')\nx = \"a\"\n")
  })

  it('leaves new_string as given where the file has primes, not quotes', async () => {
    const { ws, edit } = await setup({ '/h.md': 'height: 5\u20323\u2033 (tall)\n' })
    expect(await edit({ path: '/h.md', old_string: 'height: 5\'3"', new_string: 'height: 6\'1"' })).toMatchObject({ isError: false, result: { quotes_as_in_file: true } })
    expect(ws.fs.readFileSync('/h.md', 'utf8')).toBe('height: 6\'1" (tall)\n')
  })

  it('refuses an edit that, taken with the file\'s quotes, changes nothing, recording nothing', async () => {
    const { ws, edit } = await setup({ '/s.md': 'it\u2019s\n' })
    expect(await edit({ path: '/s.md', old_string: "it's", new_string: 'it\u2019s' })).toEqual({
      isError: true,
      error: { code: 'ENOCHANGE', message: "the edit leaves '/s.md' as it was: nothing was written" },
    })
    expect(ws.fs.readFileSync('/s.md', 'utf8')).toBe('it\u2019s\n')
    expect(await callTool(createAgentTools(ws), 'operation_history', {})).toMatchObject({ result: { operations: [] } })
  })

  it('takes an exact match as given, and no match twice over', async () => {
    const { ws, edit } = await setup({ '/a.js': "x = 'a'\n", '/b.md': 'it\u2019s\nit\u2019s\n' })
    const exact = await edit({ path: '/a.js', old_string: "'a'", new_string: '\u2018a\u2019' })
    expect(exact).toMatchObject({ isError: false })
    expect(exact).not.toMatchObject({ result: { quotes_as_in_file: expect.anything() } })
    expect(ws.fs.readFileSync('/a.js', 'utf8')).toBe('x = \u2018a\u2019\n')
    expect(await edit({ path: '/b.md', old_string: "it's", new_string: 'it is' })).toMatchObject({ isError: true, error: { code: 'ENOMATCH' } })
    expect(ws.fs.readFileSync('/b.md', 'utf8')).toBe('it\u2019s\nit\u2019s\n')
  })
})
