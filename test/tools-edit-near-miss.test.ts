/**
 * edit_file's refusal of an old_string it does not find names the nearest text and how it differs:
 * it said only "not found; read the file again", and a model re-read the whole file, often to send
 * the same near miss (two spaces for four, spaces for a tab, a curly quote, a decomposed accent).
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

async function refusal(files: Record<string, string>, input: Record<string, unknown>) {
  const ws = await Workspace.open({ lower: files, autoCheckpoint: false })
  const outcome = await callTool(createAgentTools(ws), 'edit_file', input)
  if (!outcome.isError) throw new Error(`edit_file succeeded: ${JSON.stringify(outcome.result)}`)
  // Nothing changed.
  for (const [path, content] of Object.entries(files)) expect(ws.fs.readFileSync(path, 'utf8')).toBe(content)
  return outcome.error
}

describe('edit_file: old_string not found', () => {
  const ts = 'function f() {\n    return 1\n}\n\nfunction g() {\n    return 2\n}\n'

  it('shows the lines it nearly matched and names an indentation of another width', async () => {
    const error = await refusal({ '/a.ts': ts }, { path: '/a.ts', old_string: 'function g() {\n  return 2\n}', new_string: 'x' })
    expect(error.code).toBe('ENOMATCH')
    expect(error.details).toEqual({ near_line: 5 })
    expect(error.message).toBe(
      "old_string was not found in '/a.ts'. The nearest text is at lines 5-7, which differs from old_string in indentation: " +
        "line 6 of the file starts with 4 spaces, old_string's with 2 spaces. The file has there (copy old_string from it, whitespace included):\n" +
        'function g() {\n    return 2\n}',
    )
  })

  it('names tabs for spaces, trailing whitespace, a mixed file\'s CR, inner whitespace, curly quotes and NFD', async () => {
    const cases: [Record<string, string>, string, string, number][] = [
      [{ '/t.go': 'func f() {\n\treturn 1\n}\n' }, '    return 1\n}', "line 2 of the file starts with 1 tab, old_string's with 4 spaces", 2],
      [{ '/w.py': 'x = 1  \ny = 2\n' }, 'x = 1\ny = 2', "the end of line 1: the file's ends with 2 spaces, old_string's with no whitespace", 1],
      [{ '/m.txt': 'a\r\nb\nc\r\n' }, 'a\nb', "line 1 of the file ends in CRLF: this file mixes CRLF and LF line ends, so old_string takes '\\r\\n' there", 1],
      [{ '/s.ts': 'let a =  1\n' }, 'let a = 1', 'the whitespace inside line 1', 1],
      // Twice in the file once quotes are taken alike: not taken (it would not be unique), so it is named.
      [{ '/q.md': 'It\u2019s \u201cdone\u201d.\nIt\u2019s \u201cdone\u201d.\n' }, 'It\'s "done".', 'quotes: line 1 of the file has \u2019 \u201c \u201d where old_string has \' "', 1],
      // One accent decomposed, one composed: neither form of old_string matches as a whole.
      [{ '/n.txt': 'cafe\u0301 and jalape\u00f1o\n' }, 'caf\u00e9 and jalape\u00f1o', 'Unicode normalization: line 1 of the file writes its accents decomposed (NFD', 1],
    ]
    for (const [files, old_string, reason, line] of cases) {
      const path = Object.keys(files)[0]
      const error = await refusal(files, { path, old_string, new_string: 'x' })
      expect(error.code).toBe('ENOMATCH')
      expect(error.message).toContain(reason)
      expect(error.details).toEqual({ near_line: line })
    }
  })

  it('takes the line sharing most words when no line fits loosely, and says nothing more when none is near', async () => {
    const near = await refusal({ '/a.ts': ts }, { path: '/a.ts', old_string: 'return 3', new_string: 'x' })
    expect(near.message).toMatch(/^old_string was not found in '\/a.ts'. The nearest text is at line 2, which differs from old_string in the text of line 2\. .*:\n {4}return 1$/)
    const none = await refusal({ '/a.ts': ts }, { path: '/a.ts', old_string: 'class Widget', new_string: 'x' })
    expect(none).toEqual({ code: 'ENOMATCH', message: "old_string was not found in '/a.ts'; read the file again and copy the exact text, whitespace included" })
  })

  it('shows the whole block, and says so, when old_string left out a line or has one too many', async () => {
    const file = 'import x from "x"\n\nfunction alpha() {\n  const value = compute()\n\n  return value\n}\n'
    const block = 'function alpha() {\n  const value = compute()\n\n  return value\n}'
    const fewer = await refusal({ '/a.ts': file }, { path: '/a.ts', old_string: 'function alpha() {\n  const value = compute()\n  return value\n}', new_string: 'x' })
    expect(fewer.message).toBe(
      "old_string was not found in '/a.ts'. The nearest text is at lines 3-7, which differs from old_string in its lines: old_string has 4 where the file has 5 " +
        `(a line left out of old_string, blank ones count). The file has there (copy old_string from it, whitespace included):\n${block}`,
    )
    const more = await refusal({ '/a.ts': file }, { path: '/a.ts', old_string: 'function alpha() {\n  const value = compute()\n\n\n  return value\n}', new_string: 'x' })
    expect(more.message).toContain(`lines 3-7, which differs from old_string in its lines: old_string has 6 where the file has 5 (a line too many in old_string, blank ones count). The file has there (copy old_string from it, whitespace included):\n${block}`)
  })

  it("says when old_string goes on past the file's end, and whether its last line has a newline", async () => {
    const bare = await refusal({ '/a.txt': 'a\nb' }, { path: '/a.txt', old_string: 'b\n', new_string: 'c\n' })
    expect(bare.message).toBe(
      "old_string was not found in '/a.txt'. The nearest text is at line 2, which differs from old_string in the end of the file: old_string goes on past line 2, the last, " +
        'which has no newline at its end. The file has there (copy old_string from it, whitespace included):\nb',
    )
    // The '' after a final newline is no line of the file: it is neither shown nor compared.
    const ended = await refusal({ '/c.txt': 'x\ny\nz\n' }, { path: '/c.txt', old_string: 'y\nz\nq', new_string: 'w' })
    expect(ended.message).toContain('at lines 2-3, which differs from old_string in the end of the file: old_string goes on past line 3, the last. The file has there (copy old_string from it, whitespace included):\ny\nz')
    expect((await refusal({ '/c.txt': 'x\ny\nz\n' }, { path: '/c.txt', old_string: ' z\n', new_string: 'w' })).message).toContain("in indentation: line 3 of the file starts with no whitespace, old_string's with 1 space. ")
  })

  it('names the edit of several and cuts a long near text', async () => {
    const long = Array.from({ length: 100 }, (_, index) => `    line ${index} ${'x'.repeat(30)}`).join('\n')
    const error = await refusal({ '/l.txt': long + '\n' }, { path: '/l.txt', edits: [{ old_string: 'line 0 ', new_string: 'L0 ' }, { old_string: long.replaceAll('    ', '  '), new_string: 'x' }] })
    expect(error.message).toMatch(/^edits\[1\]: old_string was not found in '\/l.txt' \(after the edits before it\)\. The nearest text is at lines 1-100/)
    expect(error.message).toMatch(/; 9\d more\. /)
    expect(error.message).toMatch(/… \(cut; read_file shows the rest\)$/)
    expect(error.message.length).toBeLessThan(2500)
  })
})
