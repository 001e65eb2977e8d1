/**
 * edit_file with an empty old_string, as Claude Code's Edit takes it: it creates a new file (or
 * fills an empty one) with new_string, and refuses a file with text saying what to do. It was
 * EINVALIDINPUT "Too small: expected string to have >=1 characters", which told a model used to
 * creating files this way neither why nor how; editing a missing file now names write_file too.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function setup(files: Record<string, string>) {
  const ws = await Workspace.open({ lower: files, autoCheckpoint: false })
  const tools = createAgentTools(ws)
  const call = async (name: string, input: unknown): Promise<Json> => callTool(tools, name, input)
  return { ws, call }
}

describe('edit_file with an empty old_string', () => {
  it('creates a missing file, its parents with it, as one operation that undo takes back whole', async () => {
    const { ws, call } = await setup({ '/a.ts': 'x\n' })
    const made = await call('edit_file', { path: '/src/new/b.ts', old_string: '', new_string: 'export const b = 1\n' })
    expect(made).toMatchObject({ isError: false, result: { path: '/src/new/b.ts', created: true } })
    expect(made.result.operation_ids).toHaveLength(1)
    expect(ws.fs.readFileSync('/src/new/b.ts', 'utf8')).toBe('export const b = 1\n')
    expect((await call('undo_operation', {})).isError).toBe(false)
    expect(ws.fs.existsSync('/src')).toBe(false)
  })

  it('fills an empty file, and refuses one with text, leaving it as it was', async () => {
    const { ws, call } = await setup({ '/empty.txt': '', '/a.ts': 'const a = 1\nconst b = 2\n' })
    expect(await call('edit_file', { path: '/empty.txt', old_string: '', new_string: 'first\n' })).toMatchObject({ isError: false, result: { created: false } })
    expect(ws.fs.readFileSync('/empty.txt', 'utf8')).toBe('first\n')
    expect(await call('edit_file', { path: '/a.ts', old_string: '', new_string: 'x' })).toEqual({
      isError: true,
      error: {
        code: 'EEXIST',
        message: "old_string is empty, which creates a file, but '/a.ts' exists and has 2 lines: give the text to replace as old_string (read_file shows it), or use write_file to replace the whole file",
      },
    })
    expect(ws.fs.readFileSync('/a.ts', 'utf8')).toBe('const a = 1\nconst b = 2\n')
    expect(await call('edit_file', { path: '/', old_string: '', new_string: 'x' })).toMatchObject({ isError: true, error: { code: 'EISDIR' } })
    expect(await call('edit_file', { path: '/none.txt', old_string: '', new_string: '' })).toMatchObject({ isError: true, error: { code: 'ENOCHANGE' } })
    // A path ending in '/' names a directory: no file named 'newdir' is made.
    expect(await call('edit_file', { path: '/newdir/', old_string: '', new_string: 'x' })).toEqual({
      isError: true,
      error: { code: 'EISDIR', message: "'/newdir/' ends with '/', so it names a directory; edit_file edits files (give the file's name)" },
    })
    expect(ws.fs.existsSync('/newdir')).toBe(false)
    expect(ws.fs.existsSync('/none.txt')).toBe(false)
  })

  it('a missing file with a non-empty old_string is ENOENT naming how to create one; edits still take no empty old_string', async () => {
    const { call } = await setup({})
    expect(await call('edit_file', { path: '/missing.txt', old_string: 'a', new_string: 'b' })).toEqual({
      isError: true,
      error: { code: 'ENOENT', message: "ENOENT: no such file or directory, open '/missing.txt'; to create it, use write_file (or edit_file with an empty old_string)" },
    })
    expect(await call('edit_file', { path: '/x.txt', edits: [{ old_string: '', new_string: 'b' }] })).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT' } })
  })
})
