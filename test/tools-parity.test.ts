/**
 * The file tools where they take the shape of a coding agent's Read, Edit, Write, Glob and Grep:
 * what a model may send, well or badly, must give the answer those tools give or a clear refusal,
 * and never change bytes it did not ask to change. Each case was a divergence once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { type AgentTool, type ToolResult, callTool, createAgentTools } from '../tools/index.js'

let open: Workspace[] = []
afterEach(async () => {
  await Promise.all(open.map((ws) => ws.close()))
  open = []
})

async function workspace(): Promise<{ ws: Workspace; tools: AgentTool[] }> {
  const ws = await Workspace.open()
  open.push(ws)
  return { ws, tools: createAgentTools(ws) }
}

async function fails(tools: readonly AgentTool[], name: string, input: unknown): Promise<Extract<ToolResult, { isError: true }>['error']> {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded: ${JSON.stringify(outcome.result)}`)
  return outcome.error
}

describe('edit_file and insert_text change only what they are asked to', () => {
  it('refuse a file with bytes that are not UTF-8 anywhere in it, leaving it as it was (past the first 8 KiB they were rewritten as U+FFFD)', async () => {
    const { ws, tools } = await workspace()
    const latin1 = Uint8Array.of(0x63, 0x61, 0x66, 0xe9, 0x0a) // "café\n" in Latin-1
    const files = {
      '/late.txt': Buffer.concat([Buffer.from('x'.repeat(9000) + '\n'), latin1, Buffer.from('needle\n')]),
      '/early.txt': Buffer.concat([latin1, Buffer.from('needle\n'), Buffer.from('y'.repeat(9000) + '\n')]),
    }
    for (const [path, bytes] of Object.entries(files)) {
      ws.fs.writeFileSync(path, bytes)
      const edit = await fails(tools, 'edit_file', { path, old_string: 'needle', new_string: 'pin' })
      expect(edit).toMatchObject({ code: 'EBINARY' })
      // Past the sniff's first 8 KiB the edit's own check finds the byte; in them the sniff calls the file binary, as read_file does.
      expect(edit.message).toContain(path === '/late.txt' ? `byte ${bytes.indexOf(0xe9)} (line 2)` : 'is a binary file')
      expect(await fails(tools, 'insert_text', { path, insert_line: 0, text: 'top' })).toMatchObject({ code: 'EBINARY' })
      expect(Buffer.compare(ws.fs.readFileSync(path), bytes)).toBe(0)
    }
    // UTF-8 of every length, a BOM and U+FFFD itself are text: edited, every other byte kept.
    const text = '\uFEFFé € 𝄞 \uFFFD\nneedle\n'
    ws.fs.writeFileSync('/utf8.txt', text)
    expect((await callTool(tools, 'edit_file', { path: '/utf8.txt', old_string: 'needle', new_string: 'pin' })).isError).toBe(false)
    expect(ws.fs.readFileSync('/utf8.txt', 'utf8')).toBe(text.replace('needle', 'pin'))
  })
})

describe('refusals say what to do without losing anything', () => {
  it('move_path onto its own path is ENOCHANGE, not "already exists; delete it first" (advice that, followed, deleted the file it meant to move)', async () => {
    const { ws, tools } = await workspace()
    ws.fs.mkdirSync('/p/src', { recursive: true })
    ws.fs.writeFileSync('/p/a.txt', 'alpha\n')
    for (const [from, to] of [['/p/a.txt', '/p/a.txt'], ['/p/a.txt', '/p/./a.txt'], ['/p/src', '/p/src/'], ['a.txt', '/p/a.txt']]) {
      ws.chdir('/p')
      const refusal = await fails(tools, 'move_path', { from, to })
      expect(refusal.code).toBe('ENOCHANGE')
      expect(refusal.message).not.toContain('delete')
    }
    expect(ws.fs.readFileSync('/p/a.txt', 'utf8')).toBe('alpha\n')
    // Onto another path that exists it still refuses, and moves nothing.
    expect(await fails(tools, 'move_path', { from: '/p/a.txt', to: '/p/src' })).toMatchObject({ code: 'EEXIST' })
    expect(ws.fs.readdirSync('/p')).toEqual(['a.txt', 'src'])
  })
})

describe('find_files and search_files take globs as models write them', () => {
  it("'./src/*.ts' is taken from the search's directory and 'src/' names a directory, as in Glob and ripgrep's --glob (both matched nothing: find_files answered no files, exclude excluded nothing)", async () => {
    const { ws, tools } = await workspace()
    for (const path of ['/proj/src/a.ts', '/proj/src/sub/b.ts', '/proj/top.ts', '/proj/lib/src/c.ts']) {
      ws.fs.mkdirSync(path.slice(0, path.lastIndexOf('/')), { recursive: true })
      ws.fs.writeFileSync(path, 'foo\n')
    }
    ws.chdir('/proj')
    const found = async (input: object): Promise<string[]> => {
      const outcome = await callTool(tools, 'find_files', input)
      if (outcome.isError) throw new Error(outcome.error.message)
      return (outcome.result as { files: string[] }).files
    }
    const searched = async (input: object): Promise<string[]> => {
      const outcome = await callTool(tools, 'search_files', { pattern: 'foo', ...input })
      if (outcome.isError) throw new Error(outcome.error.message)
      return (outcome.result as { matches: { path: string }[] }).matches.map((match) => match.path)
    }
    // './' anchors at the directory searched: lib/src is not ./src.
    expect(await found({ pattern: './src/*.ts' })).toEqual(['/proj/src/a.ts'])
    expect(await found({ pattern: './src/**/*.ts' })).toEqual(['/proj/src/a.ts', '/proj/src/sub/b.ts'])
    expect(await found({ pattern: './*.ts', path: 'src/sub' })).toEqual(['/proj/src/sub/b.ts'])
    expect(await found({ pattern: '../top.ts', path: 'src' })).toEqual([])
    expect(await found({ pattern: './' })).toHaveLength(4)
    // A directory given with its slash covers what is under it, wherever it is, as 'src' does.
    expect(await found({ pattern: 'src/' })).toEqual(await found({ pattern: 'src' }))
    expect(await found({ pattern: 'sub/' })).toEqual(['/proj/src/sub/b.ts'])
    expect(await searched({ include: ['./src/**'] })).toEqual(['/proj/src/a.ts', '/proj/src/sub/b.ts'])
    expect(await searched({ include: ['src/sub/'] })).toEqual(['/proj/src/sub/b.ts'])
    expect(await searched({ exclude: ['./src'] })).toEqual(['/proj/lib/src/c.ts', '/proj/top.ts'])
    expect(await searched({ exclude: ['src/'] })).toEqual(['/proj/top.ts'])
    // What already matched still does.
    expect(await found({ pattern: '**/*.ts' })).toHaveLength(4)
    expect(await found({ pattern: '/proj/src/*.ts' })).toEqual(['/proj/src/a.ts'])
  })
})
