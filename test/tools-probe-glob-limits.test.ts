/**
 * Globs are refused past GLOB_CHARS characters. Matching costs O(glob × path) for every file a walk
 * meets, and a huge glob froze the MCP server: find_files with a pattern of 200 000 '/' and an 'x'
 * spent a minute in a quadratic RegExp (trailing slashes), and one of 100 000 '*' cost 69 ms a path,
 * 15 minutes over a 13 000-file project, every other call waiting.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools, schemas } from '../tools/index.js'

describe('glob inputs', () => {
  it('are refused past GLOB_CHARS characters, naming the limit; a glob of that length still runs', async () => {
    const ws = await Workspace.open({ lower: { '/src/a.ts': 'a\n', '/src/b.js': 'b\n' } })
    const tools = createAgentTools(ws)
    const limit = schemas.GLOB_CHARS
    const refused = await callTool(tools, 'find_files', { pattern: '/'.repeat(200_000) + 'x' })
    expect(refused).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining(`at most ${limit} characters`) } })
    expect(await callTool(tools, 'search_files', { pattern: 'a', include: ['*'.repeat(100_000)] })).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT' } })
    expect(await callTool(tools, 'search_files', { pattern: 'a', exclude: ['*'.repeat(limit + 1)] })).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT' } })
    const rollback = await callTool(tools, 'rollback_to_checkpoint', { target: { operation_id: 'x' }, scope: 'files', include_files: ['*'.repeat(limit + 1)] })
    expect(rollback).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT' } })
    const longest = await callTool(tools, 'find_files', { pattern: '*'.repeat(limit - 3) + '.ts' })
    expect(longest).toMatchObject({ isError: false, result: { files: ['/src/a.ts'] } })
    await ws.close()
  })
})
