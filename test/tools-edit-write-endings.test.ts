/**
 * write_file over a file whose lines end in CRLF, or that starts with a byte order mark, keeps them:
 * read_file shows such a file with LF ends and without the mark (and says line_endings: 'crlf',
 * bom: true), so a model rewriting it whole sent LF, and every line of the Windows file changed its
 * ending (a whole-file diff; Visual Studio and Delphi want CRLF) and the mark was lost.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

describe('write_file over an existing file', () => {
  it("keeps a CRLF file's endings and a file's byte order mark when the content has neither", async () => {
    const ws = await Workspace.open({
      lower: { '/win.pas': 'begin\r\nend.\r\n', '/bom.cs': '\uFEFFclass A {}\n', '/both.txt': '\uFEFFa\r\nb\r\n' },
      autoCheckpoint: false,
    })
    const tools = createAgentTools(ws)
    const write = async (path: string, content: string): Promise<Json> => {
      const outcome = await callTool(tools, 'write_file', { path, content })
      if (outcome.isError) throw new Error(outcome.error.message)
      return outcome.result
    }
    expect(await write('/win.pas', 'begin\n  x := 1;\nend.\n')).toMatchObject({ created: false, bytes: 24, lines: 3, line_endings: 'crlf' })
    expect(ws.fs.readFileSync('/win.pas', 'utf8')).toBe('begin\r\n  x := 1;\r\nend.\r\n')
    expect(await write('/bom.cs', 'class B {}\n')).toMatchObject({ bytes: 14, bom: true })
    expect(ws.fs.readFileSync('/bom.cs', 'utf8')).toBe('\uFEFFclass B {}\n')
    await write('/both.txt', 'x\ny')
    expect(ws.fs.readFileSync('/both.txt', 'utf8')).toBe('\uFEFFx\r\ny')
    // What read_file shows of it is what was written.
    expect(((await callTool(tools, 'read_file', { path: '/both.txt' })) as Json).result).toMatchObject({ content: 'x\ny', line_endings: 'crlf', bom: true })
  })

  it('writes the content as given where it has a \\r or a mark, and over a file of LF or mixed endings, a binary file or none', async () => {
    const ws = await Workspace.open({
      lower: { '/win.txt': 'a\r\nb\r\n', '/bom.txt': '\uFEFFa\n', '/lf.txt': 'a\nb\n', '/mixed.txt': 'a\r\nb\n', '/bin.dat': new Uint8Array([0, 1, 13, 10]) },
      autoCheckpoint: false,
    })
    const tools = createAgentTools(ws)
    const cases: [string, string][] = [
      ['/win.txt', 'x\r\ny\nz\n'],
      ['/bom.txt', '\uFEFFb\n'],
      ['/lf.txt', 'x\ny\n'],
      ['/mixed.txt', 'x\ny\n'],
      ['/bin.dat', 'x\ny\n'],
      ['/new.txt', 'x\ny\n'],
    ]
    for (const [path, content] of cases) {
      const outcome = (await callTool(tools, 'write_file', { path, content })) as Json
      expect(outcome.isError).toBe(false)
      expect(outcome.result).toEqual(expect.not.objectContaining({ line_endings: expect.anything(), bom: expect.anything() }))
      expect(ws.fs.readFileSync(path, 'utf8')).toBe(content)
    }
  })
})
