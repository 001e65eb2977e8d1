/**
 * A file that starts with a UTF-8 byte order mark keeps it, first, through edit_file and
 * insert_text: insert_text at line 0 put its lines in front of the mark (U+FEFF was then a stray
 * character at the start of line 2, which a C# or Java compiler rejects), and an old_string copied
 * from read_file with the invisible mark, replaced by one without it, dropped it.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function setup(files: Record<string, string>) {
  const ws = await Workspace.open({ lower: files, autoCheckpoint: false })
  const tools = createAgentTools(ws)
  const ok = async (name: string, input: unknown): Promise<Json> => {
    const outcome = await callTool(tools, name, input)
    if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
    return outcome.result
  }
  return { ws, ok }
}

const BOM = '\uFEFF'

describe('a file with a byte order mark', () => {
  it('reads without the mark and says so; the mark stays first through insert_text at line 0', async () => {
    const { ws, ok } = await setup({ '/Program.cs': `${BOM}using System;\nclass P {}\n` })
    expect(await ok('read_file', { path: '/Program.cs' })).toMatchObject({ content: 'using System;\nclass P {}', total_lines: 2, bom: true })
    expect(await ok('insert_text', { path: '/Program.cs', insert_line: 0, text: '// header' })).toMatchObject({ inserted_lines: { from: 1, to: 1 }, total_lines: 3 })
    expect(ws.fs.readFileSync('/Program.cs', 'utf8')).toBe(`${BOM}// header\nusing System;\nclass P {}\n`)
  })

  it('keeps the mark when old_string was copied with it and new_string was not, and in a CRLF file', async () => {
    const { ws, ok } = await setup({ '/a.txt': `${BOM}hello\nworld\n`, '/b.txt': `${BOM}one\r\ntwo\r\n` })
    await ok('edit_file', { path: '/a.txt', old_string: `${BOM}hello`, new_string: 'hi' })
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe(`${BOM}hi\nworld\n`)
    await ok('edit_file', { path: '/a.txt', old_string: 'hi\nworld', new_string: 'hey\nthere' })
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe(`${BOM}hey\nthere\n`)
    expect(await ok('read_file', { path: '/b.txt' })).toMatchObject({ content: 'one\ntwo', line_endings: 'crlf', bom: true })
    await ok('insert_text', { path: '/b.txt', insert_line: 0, text: 'zero' })
    await ok('edit_file', { path: '/b.txt', old_string: 'two\n', new_string: 'two\nthree\n' })
    expect(ws.fs.readFileSync('/b.txt', 'utf8')).toBe(`${BOM}zero\r\none\r\ntwo\r\nthree\r\n`)
  })

  it('a file without one gets none, and one not at the start is text like any other', async () => {
    const { ws, ok } = await setup({ '/c.txt': `a${BOM}b\n` })
    expect(await ok('read_file', { path: '/c.txt' })).toEqual(expect.not.objectContaining({ bom: expect.anything() }))
    await ok('insert_text', { path: '/c.txt', insert_line: 0, text: 'top' })
    await ok('edit_file', { path: '/c.txt', old_string: `a${BOM}b`, new_string: 'ab' })
    expect(ws.fs.readFileSync('/c.txt', 'utf8')).toBe('top\nab\n')
  })
})
