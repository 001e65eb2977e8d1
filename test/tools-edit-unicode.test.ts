/**
 * edit_file matches an old_string typed with composed accents (NFC, as a model types 'é') in a file
 * that writes them decomposed (NFD: 'e' then U+0301, as text from macOS or a PDF may), and the other
 * way round: both look the same, a model cannot copy the decomposed form back, and every edit of such
 * a line failed as not found. new_string is written in the file's form, and the result says so.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

const NFD = 'Cafe\u0301 cre\u0300me bru\u0302le\u0301e\n'

describe('edit_file and Unicode normalization', () => {
  it("finds an NFC old_string in an NFD file and writes new_string in the file's form", async () => {
    const ws = await Workspace.open({ lower: { '/menu.md': NFD + 'Cafe\u0301 noir\n' }, autoCheckpoint: false })
    const tools = createAgentTools(ws)
    const edit = await callTool(tools, 'edit_file', { path: '/menu.md', old_string: 'Caf\u00e9 cr\u00e8me', new_string: 'Th\u00e9 cr\u00e8me' })
    expect(edit).toMatchObject({ isError: false, result: { replacements: 1, lines: [1], unicode_form: 'NFD' } })
    expect(ws.fs.readFileSync('/menu.md', 'utf8')).toBe('The\u0301 cre\u0300me bru\u0302le\u0301e\nCafe\u0301 noir\n')
    // Unique and replace_all count in that form too.
    expect(await callTool(tools, 'edit_file', { path: '/menu.md', old_string: 'e\u0301', new_string: 'e' })).toMatchObject({ isError: true, error: { code: 'EAMBIGUOUS' } })
    expect(await callTool(tools, 'edit_file', { path: '/menu.md', old_string: '\u00e9', new_string: 'e', replace_all: true })).toMatchObject({ isError: false, result: { replacements: 3, unicode_form: 'NFD' } })
    expect(ws.fs.readFileSync('/menu.md', 'utf8')).toBe('The cre\u0300me bru\u0302lee\nCafe noir\n')
  })

  it('finds an NFD old_string in an NFC file; an exact match is taken as given, with no unicode_form', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'caf\u00e9\n', '/b.txt': 'cafe\u0301\n' }, autoCheckpoint: false })
    const tools = createAgentTools(ws)
    expect(await callTool(tools, 'edit_file', { path: '/a.txt', old_string: 'cafe\u0301', new_string: 'cafe\u0301s' })).toMatchObject({ isError: false, result: { unicode_form: 'NFC' } })
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('caf\u00e9s\n')
    const exact = await callTool(tools, 'edit_file', { path: '/b.txt', old_string: 'cafe\u0301', new_string: 'caf\u00e9' })
    expect(exact).toMatchObject({ isError: false })
    expect(exact).not.toMatchObject({ result: { unicode_form: expect.anything() } })
    expect(ws.fs.readFileSync('/b.txt', 'utf8')).toBe('caf\u00e9\n')
  })
})
