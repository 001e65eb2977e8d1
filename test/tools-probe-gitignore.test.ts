/**
 * .gitignore as the search tools read it, against git itself (`git ls-files -co --exclude-standard`
 * in a real repository), on the rules git's documentation spells out and the corners of wildmatch;
 * and a hostile repository's rule: 'a/**\/a/**\/…/b' over a directory 40 deep, which the `ignore`
 * package's backtracking RegExp took seconds per path to test (47 s at 50 deep, 8 repetitions),
 * freezing find_files and the MCP server with it. The work is bounded by a counter, not a clock.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { gitignoreCounters } from '../tools/gitignore.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

let tmp: string
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-gitignore-'))
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

function write(root: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), content)
  }
}

async function allFiles(tools: readonly AgentTool[], input: Record<string, unknown> = {}): Promise<string[]> {
  const outcome = await callTool(tools, 'find_files', { pattern: '**', max_results: 10_000, ...input })
  if (outcome.isError) throw new Error(`find_files failed: ${outcome.error.code} ${outcome.error.message}`)
  return ((outcome.result as Json).files as string[]).map((file) => file.slice(1)).sort()
}

describe('.gitignore against git ls-files', () => {
  it('leaves out what git leaves out', async () => {
    const repo = path.join(tmp, 'repo')
    const rules = [
      '# comment',
      '\\#literal-hash',
      '*.log',
      '!important.log',
      '/root-only.txt',
      'dir-only/',
      'docs/**/draft.md',
      '**/cache',
      'out/**',
      'a?c.txt',
      '[ab]x.txt',
      '[!0-9]y.txt',
      '[[:digit:]]z.txt',
      'tail-space.txt   ',
      'kept\\ space.txt\\ ',
      'star**mid.txt',
      'unclosed[.txt',
      'crlf.txt\r',
      'sub/*.tmp',
      '\\!bang.txt',
    ]
    write(repo, {
      '.gitignore': rules.join('\n') + '\n',
      'nested/.gitignore': '!*.log\n*.md\n',
      '#literal-hash': '', 'x.log': '', 'important.log': '', 'nested/y.log': '', 'nested/readme.md': '',
      'root-only.txt': '', 'nested/root-only.txt': '', 'dir-only/f.txt': '', 'nested/dir-only/f.txt': '', 'file-not-dir/dir-only': '',
      'docs/draft.md': '', 'docs/a/b/draft.md': '', 'docs/final.md': '', 'x/cache/c.txt': '', 'cache/d.txt': '',
      'out/o.txt': '', 'out/deep/o.txt': '', 'abc.txt': '', 'a/c.txt': '', 'ax.txt': '', 'cx.txt': '', 'ay.txt': '', '1y.txt': '',
      '5z.txt': '', 'qz.txt': '', 'tail-space.txt': '', 'kept space.txt ': '', 'kept space.txt': '', 'starXXmid.txt': '', 'star/mid.txt': '',
      'unclosed[.txt': '', 'crlf.txt': '', 'sub/x.tmp': '', 'sub/deeper/x.tmp': '', '!bang.txt': '', 'keep.txt': '',
    })
    execFileSync('git', ['init', '-q'], { cwd: repo })
    const expected = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: repo }).toString('utf8').split('\0').filter(Boolean).sort()
    const ws = await Workspace.open({ lower: directory(repo) })
    const found = await allFiles(createAgentTools(ws))
    await ws.close()
    expect(found).toEqual(expected)
    expect(found).toContain('keep.txt')
    expect(found).not.toContain('x.log')
  })
})

describe('the common shapes of rule', () => {
  it('are plain string tests, as git makes them: no automaton steps for a literal, *.ext, prefix* or dir/**', async () => {
    const repo = path.join(tmp, 'common')
    write(repo, {
      '.gitignore': 'node_modules\n*.log\n/dist\ntmp*\nbuild/**\n!keep.log\ncoverage/\n',
      'src/a.ts': '', 'src/b.log': '', 'keep.log': '', 'dist/x.js': '', 'src/dist/y.js': '', 'tmpfile': '', 'build/z.js': '', 'coverage/c.txt': '',
      'node_modules/m.js': '',
    })
    const ws = await Workspace.open({ lower: directory(repo) })
    gitignoreCounters.steps = 0
    expect(await allFiles(createAgentTools(ws))).toEqual(['.gitignore', 'keep.log', 'src/a.ts', 'src/dist/y.js'])
    expect(gitignoreCounters.steps).toBe(0)
    await ws.close()
  })
})

describe('a hostile .gitignore', () => {
  it('is matched in time linear in the path: a rule of many **/ over a deep directory', async () => {
    const repo = path.join(tmp, 'hostile')
    const deep = Array.from({ length: 40 }, () => 'a').join('/')
    write(repo, {
      '.gitignore': Array.from({ length: 8 }, () => 'a').join('/**/') + '/**/b\n',
      [`${deep}/c.txt`]: 'c\n',
      [`${deep}/b`]: 'b\n',
    })
    const ws = await Workspace.open({ lower: directory(repo) })
    const tools = createAgentTools(ws)
    gitignoreCounters.steps = 0
    expect(await allFiles(tools)).toEqual(['.gitignore', `${deep}/c.txt`])
    // The rule was run by the linear matcher: 41 entries, each a rule of 27 steps over at most 83 characters.
    expect(gitignoreCounters.steps).toBeGreaterThan(0)
    expect(gitignoreCounters.steps).toBeLessThan(41 * 27 * 84 * 3)
    await ws.close()
  })
})
