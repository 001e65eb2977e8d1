/**
 * Globs starting with '!' leave out what they match, as ripgrep's -g '!…' does and as a model writes
 * them for a Grep or Glob tool. search_files took include ['!*.test.ts'] as a literal '!' and searched
 * nothing; ['*.ts', '!src/**'] searched src anyway; find_files '!*.ts' found nothing. Each answered as
 * if that were the answer.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  return outcome.result
}

const files = {
  '/src/a.ts': 'needle\n',
  '/src/a.test.ts': 'needle\n',
  '/lib/b.ts': 'needle\n',
  '/README.md': 'needle\n',
  '/!bang.txt': 'needle\n',
}

describe("globs starting with '!'", () => {
  it('leave files out of search_files, beside the other includes or alone', async () => {
    const ws = await Workspace.open({ lower: files })
    const tools = createAgentTools(ws)
    const paths = async (include: string[]) => (await ok(tools, 'search_files', { pattern: 'needle', include })).matches.map((match: { path: string }) => match.path)
    expect(await paths(['!*.test.ts'])).toEqual(['/!bang.txt', '/README.md', '/lib/b.ts', '/src/a.ts'])
    expect(await paths(['*.ts', '!src/**'])).toEqual(['/lib/b.ts'])
    expect(await paths(['*.ts', '!*.test.ts', '!lib'])).toEqual(['/src/a.ts'])
    // A lone '!' is a name, as before.
    expect(await paths(['!'])).toEqual([])
    await ws.close()
  })

  it("list the files find_files' pattern does not match", async () => {
    const ws = await Workspace.open({ lower: files })
    const tools = createAgentTools(ws)
    expect((await ok(tools, 'find_files', { pattern: '!*.ts' })).files).toEqual(['/!bang.txt', '/README.md'])
    expect((await ok(tools, 'find_files', { pattern: '!src' })).files).toEqual(['/!bang.txt', '/README.md', '/lib/b.ts'])
    await ws.close()
  })
})
