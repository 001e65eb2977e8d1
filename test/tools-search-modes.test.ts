/**
 * find_files and search_files where they take the place of a coding agent's Glob and Grep: what
 * find_files lists for symlinks (against `find` and realpath over a real directory), and
 * search_files' output modes, files_with_matches and count (against `grep -rlI` and `grep -rcI`),
 * with the work of files_with_matches bounded by a counter, not a clock.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  return outcome.result
}

let tmp: string
beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-search-modes-')))
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

function write(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), content)
  }
}

/** `find` run in `root`, as workspace paths, sorted. */
function find(root: string, ...args: string[]): string[] {
  return execFileSync('find', ['.', ...args], { cwd: root }).toString().split('\n').filter(Boolean).map((line) => line.slice(1)).sort()
}

describe('find_files and symlinks', () => {
  let project: string
  let outside: string
  /** name -> target of every link in the project. */
  const LINKS: Record<string, string> = {
    'linkdir': 'src', // a directory in the project
    'src/deep/up': '..', // a directory in the project, above the link
    'link.ts': 'src/a.ts', // a file in the project
    'outdir': '../outside', // a directory on the host, out of the project
    'gone.ts': 'nowhere', // nothing
    'loop1': 'loop2', // round in a loop
    'loop2': 'loop1',
  }
  beforeAll(() => {
    project = path.join(tmp, 'project')
    outside = path.join(tmp, 'outside')
    write(project, { 'src/a.ts': 'a\n', 'src/deep/b.ts': 'b\n', 'README.md': '# r\n' })
    write(outside, { 'x.ts': 'host\n' })
    for (const [name, target] of Object.entries(LINKS)) fs.symlinkSync(target, path.join(project, name))
    fs.symlinkSync(path.join(outside, 'x.ts'), path.join(project, 'abs.ts')) // a file on the host, out of the project
  })

  /**
   * What each link is to the tools, from the real directory: its target's type when realpath
   * keeps it inside the project (find -xtype), else unreachable; `find -type f` for the files.
   */
  function expected(): { files: string[]; links: { path: string; to: string }[] } {
    const files = find(project, '-type', 'f')
    const links: { path: string; to: string }[] = []
    for (const link of find(project, '-type', 'l')) {
      let real: string | undefined
      try {
        real = fs.realpathSync(path.join(project, link))
      } catch {
        real = undefined // ENOENT, ELOOP
      }
      const inside = real !== undefined && (real === project || real.startsWith(project + '/'))
      const kind = inside ? (fs.statSync(real!).isDirectory() ? 'directory' : 'file') : 'unreachable'
      if (kind === 'file') files.push(link)
      else links.push({ path: link, to: kind })
    }
    return { files: files.sort(), links }
  }

  for (const kind of ['directory', 'fixture'] as const) {
    it(`lists a link to a file as a file, and a link to a directory or out of the project apart, never as a file (${kind} lower)`, async () => {
      const want = expected()
      expect(want.links).toEqual([
        { path: '/gone.ts', to: 'unreachable' },
        { path: '/linkdir', to: 'directory' },
        { path: '/loop1', to: 'unreachable' },
        { path: '/loop2', to: 'unreachable' },
        { path: '/outdir', to: 'unreachable' },
        { path: '/src/deep/up', to: 'directory' },
      ].concat([{ path: '/abs.ts', to: 'unreachable' }]).sort((a, b) => (a.path < b.path ? -1 : 1)))
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(project) : { '/src/a.ts': 'a\n', '/src/deep/b.ts': 'b\n', '/README.md': '# r\n' }, autoCheckpoint: false })
      if (kind === 'fixture') {
        for (const [name, target] of Object.entries(LINKS)) ws.fs.symlinkSync(target, '/' + name)
        ws.fs.symlinkSync(path.join(outside, 'x.ts'), '/abs.ts')
      }
      const tools = createAgentTools(ws)
      const all = await ok(tools, 'find_files', { pattern: '**' })
      // Links to directories are not entered (no /linkdir/a.ts), as rg --files and find without -L.
      expect({ files: all.files, links: all.links }).toEqual(want)
      expect(all).toMatchObject({ returned: want.files.length + want.links.length, total: want.files.length + want.links.length, truncated: false })
      expect(all.links_note).toContain("'directory' ones are not entered")
      // The contract a model relies on: every file listed reads; no link listed apart does.
      for (const file of all.files) expect([file, (await callTool(tools, 'read_file', { path: file })).isError]).toEqual([file, false])
      for (const link of all.links) expect([link.path, (await callTool(tools, 'read_file', { path: link.path })).isError]).toEqual([link.path, true])
      // A link to a directory is a path to look inside.
      expect((await ok(tools, 'find_files', { pattern: '*.ts', path: '/linkdir' })).files).toEqual(['/linkdir/a.ts', '/linkdir/deep/b.ts'])
      // No host path reaches the model: the links' targets are not shown.
      expect(JSON.stringify(all)).not.toContain(tmp)
      // A pattern keeps its meaning: '*.ts' matches the links named so, and paging counts links as entries.
      const ts = await ok(tools, 'find_files', { pattern: '*.ts' })
      expect(ts).toMatchObject({ files: ['/link.ts', '/src/a.ts', '/src/deep/b.ts'], links: [{ path: '/abs.ts', to: 'unreachable' }, { path: '/gone.ts', to: 'unreachable' }] })
      const first = await ok(tools, 'find_files', { pattern: '*.ts', max_results: 2 })
      expect(first).toMatchObject({ files: [], links: [{ path: '/abs.ts', to: 'unreachable' }, { path: '/gone.ts', to: 'unreachable' }], returned: 2, next_offset: 2 })
      expect(await ok(tools, 'find_files', { pattern: '*.ts', max_results: 2, offset: 2, sort: 'mtime' })).toMatchObject({ returned: 2, truncated: true, next_offset: 4 })
      // Without links there is no links field.
      expect(await ok(tools, 'find_files', { pattern: '*.md' })).toEqual({ files: ['/README.md'], returned: 1, total: 1, truncated: false })
      await ws.close()
    })
  }
})
