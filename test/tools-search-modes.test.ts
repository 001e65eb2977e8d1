/**
 * find_files and search_files where they take the place of a coding agent's Glob and Grep: what
 * find_files lists for symlinks (against `find` and realpath over a real directory), and
 * search_files' output modes, files_with_matches and count (against `grep -rlI` and `grep -rcI`),
 * with the work of files_with_matches bounded by counters, not a clock: the bytes it scans, and the
 * bytes read from disk (what fs.readSync returned), and its order (newest first, as Claude Code's
 * Grep lists files) against the files' own modification times.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'
import { READ_PART } from '../tools/walk.js'

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

/** `grep -r` with `flags` over `root`, its output lines as workspace paths (and what follows them), sorted. */
function grep(root: string, flags: string[], pattern: string): string[] {
  let out = ''
  try {
    out = execFileSync('grep', ['-rI', ...flags, '-e', pattern, '.'], { cwd: root, env: { LC_ALL: 'C', PATH: process.env.PATH }, maxBuffer: 64 * 1024 * 1024 }).toString('utf8')
  } catch (error) {
    if ((error as { status?: number }).status !== 1) throw error // 1: no line matched
  }
  return out.split('\n').filter(Boolean).map((line) => line.slice(1)).sort()
}

/** Every page of search_files in a mode, as grep -l (paths) or grep -c (path:count) prints it. */
async function pages(tools: readonly AgentTool[], input: Record<string, unknown>): Promise<string[]> {
  const out: string[] = []
  for (let offset: number | undefined = 0; offset !== undefined; ) {
    const page: Json = await ok(tools, 'search_files', { path: '/', include_ignored: true, ...input, offset })
    if (input.output_mode === 'files_with_matches') out.push(...page.files)
    else {
      out.push(...page.counts.map((entry: Json) => `${entry.path}:${entry.count}`))
      expect(page.matching_lines).toBe(page.counts.reduce((sum: number, entry: Json) => sum + entry.count, 0))
    }
    offset = page.next_offset
  }
  return out.sort()
}

const long = Array.from({ length: 2000 }, (_, i) => `row ${i} ${i % 500 === 499 ? 'needle' : 'hay'}`).join('\n') + '\n' // ~ 24 KB, matches past several chunks
const LOWER: Record<string, string | Uint8Array> = {
  'src/a.ts': 'import { serve } from "./serve"\n\nserve()\nconst needle = 1234\n',
  'src/b.ts': '  import fs from "node:fs"\nfoobar foooobaz fobar\nserve(8080)\n',
  'src/deep/c.ts': 'export const SERVE = true\n// Serve it\n\n\n',
  'crlf.txt': 'needle one\r\nserve two\r\nimport three\r\n',
  'README.md': '# app\n\ncafé and naïve\nnumbers 12 and 345\n',
  'noeol.txt': 'a needle at the end',
  'empty.txt': '',
  'long.txt': long,
  'late.txt': 'x'.repeat(5000) + '\n' + 'y'.repeat(3000) + ' needle\n', // the match in the second chunk, its line across the first's size
  'bin/data.bin': new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 10]),
}

const PATTERNS: { input: Record<string, unknown>; grep: [string[], string] }[] = [
  { input: { pattern: 'needle' }, grep: [['-F'], 'needle'] },
  { input: { pattern: 'serve' }, grep: [['-F'], 'serve'] },
  { input: { pattern: 'café' }, grep: [['-F'], 'café'] },
  { input: { pattern: 'SERVE', case_sensitive: false }, grep: [['-F', '-i'], 'SERVE'] },
  { input: { pattern: '^\\s*import\\b', regex: true }, grep: [['-P'], '^\\s*import\\b'] },
  { input: { pattern: 'fo+ba[rz]', regex: true }, grep: [['-E'], 'fo+ba[rz]'] },
  { input: { pattern: 'needle$', regex: true }, grep: [['-E'], 'needle$'] },
  { input: { pattern: '^$', regex: true }, grep: [['-E'], '^$'] }, // none in crlf.txt: a '\r' ends no line
  { input: { pattern: 'e$', regex: true }, grep: [['-E'], 'e$'] },
  { input: { pattern: '\\d+ and', regex: true }, grep: [['-P'], '\\d+ and'] },
  { input: { pattern: 'row 1[0-9]{3} needle', regex: true }, grep: [['-E'], 'row 1[0-9]{3} needle'] },
  { input: { pattern: 'absent' }, grep: [['-F'], 'absent'] },
]

describe('search_files output modes against grep -l and grep -c', () => {
  let lower: string
  beforeAll(() => {
    lower = path.join(tmp, 'modes')
    write(lower, LOWER)
  })

  for (const kind of ['directory', 'fixture'] as const) {
    it(`files_with_matches lists what grep -rlI lists, count what grep -rcI counts (${kind} lower, untouched and changed)`, async () => {
      const fixture = Object.fromEntries(Object.entries(LOWER).map(([rel, content]) => ['/' + rel, content]))
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(lower) : fixture, autoCheckpoint: false })
      const tools = createAgentTools(ws)
      const check = async (root: string) => {
        for (const { input, grep: [flags, pattern] } of PATTERNS) {
          // Small pages, so paging by offset is covered too.
          expect([input, await pages(tools, { ...input, output_mode: 'files_with_matches', max_results: 3 })]).toEqual([input, grep(root, ['-l', ...flags], pattern)])
          const counted = grep(root, ['-c', ...flags], pattern).filter((line) => !line.endsWith(':0'))
          expect([input, await pages(tools, { ...input, output_mode: 'count', max_results: 3 })]).toEqual([input, counted])
        }
        // And what content mode finds, line by line ('^$' too, where JavaScript's m flag takes a CR as a line end and grep does not).
        for (const input of [...PATTERNS.map((entry) => entry.input), { pattern: '^$', regex: true }]) {
          const lines: string[] = []
          for (let offset: number | undefined = 0; offset !== undefined; ) {
            const page: Json = await ok(tools, 'search_files', { path: '/', include_ignored: true, ...input, offset, max_results: 1000 })
            lines.push(...page.matches.map((match: Json) => match.path))
            offset = page.next_offset
          }
          const perFile = new Map<string, number>()
          for (const file of lines) perFile.set(file, (perFile.get(file) ?? 0) + 1)
          expect([input, await pages(tools, { ...input, output_mode: 'files_with_matches' })]).toEqual([input, [...perFile.keys()].sort()])
          expect([input, await pages(tools, { ...input, output_mode: 'count' })]).toEqual([input, [...perFile].map(([file, count]) => `${file}:${count}`).sort()])
        }
      }
      await check(lower)
      const changed = fs.mkdtempSync(path.join(tmp, 'modes-changed-'))
      fs.cpSync(lower, changed, { recursive: true })
      for (const [rel, content] of [['src/new.ts', 'needle\nserve(1)\nneedle\n'], ['src/a.ts', 'no longer\n']] as const) {
        ws.fs.writeFileSync('/' + rel, content)
        fs.writeFileSync(path.join(changed, rel), content)
      }
      ws.fs.unlinkSync('/noeol.txt')
      fs.unlinkSync(path.join(changed, 'noeol.txt'))
      await check(changed)
      await ws.close()
    })
  }

  it('content stays the default, and every mode stays within the result budget, paging on', async () => {
    const many = path.join(tmp, 'many')
    write(many, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`dir${i % 7}/file-with-a-longish-name-${i}.txt`, `needle ${i}\nneedle again\n`])))
    const ws = await Workspace.open({ lower: directory(many) })
    const tools = createAgentTools(ws, { budget: { chars: 2000 } })
    const plain = await ok(tools, 'search_files', { pattern: 'needle', max_results: 3 })
    expect(plain.matches).toHaveLength(3)
    expect(plain.files).toBeUndefined()
    for (const output_mode of ['files_with_matches', 'count'] as const) {
      const first = await ok(tools, 'search_files', { pattern: 'needle', output_mode, max_results: 1000 })
      expect(JSON.stringify(first).length).toBeLessThanOrEqual(2000)
      expect(first).toMatchObject({ truncated: true, next_offset: first.returned })
      expect(first.more).toContain('result budget')
      const capped = await ok(tools, 'search_files', { pattern: 'needle', output_mode, max_results: 5 })
      expect(capped).toMatchObject({ returned: 5, truncated: true, next_offset: 5, more: expect.stringContaining('more than max_results (5) files match') })
      expect(await pages(tools, { pattern: 'needle', output_mode, max_results: 1000 })).toEqual(
        grep(many, [output_mode === 'count' ? '-c' : '-l', '-F'], 'needle'),
      )
    }
    await ws.close()
  })
})

describe('files_with_matches reads a file only up to its first match', () => {
  for (const [label, input] of [
    ['a literal', { pattern: 'needle' }],
    ['a literal, case-insensitive', { pattern: 'NEEDLE', case_sensitive: false }],
    ['a regular expression', { pattern: 'ne+dle\\b', regex: true }],
  ] as const) {
    it(`${label}: the bytes scanned stop near the first match, not at the end of the file (content and count read it all)`, async () => {
      const { scanCounters } = await import('../tools/grep.js')
      // 4 MiB of matching lines after a match on the first line.
      const body = 'needle first\n' + 'a needle in every line of the rest\n'.repeat(120_000)
      const ws = await Workspace.open({ lower: { '/big.txt': body, '/late.txt': 'hay\n'.repeat(100_000) + 'needle last\n' } })
      const tools = createAgentTools(ws)
      const scanned = async (mode: string, file: string) => {
        const before = scanCounters.bytes
        const result = await ok(tools, 'search_files', { ...input, path: file, output_mode: mode, max_results: 1000 })
        return { result, bytes: scanCounters.bytes - before }
      }
      const first = await scanned('files_with_matches', '/big.txt')
      expect(first.result.files).toEqual(['/big.txt'])
      // A literal stops at the match itself; a regular expression at the end of its first chunk (4 KiB of whole lines).
      expect(first.bytes).toBeLessThanOrEqual(input.case_sensitive === false || 'regex' in input ? 4096 + 64 : 'needle'.length)
      expect((await scanned('count', '/big.txt')).bytes).toBeGreaterThanOrEqual(body.length)
      expect((await scanned('count', '/big.txt')).result.counts).toEqual([{ path: '/big.txt', count: 120_001 }])
      expect((await scanned('content', '/big.txt')).result).toMatchObject({ truncated: true })
      // A match at the end: the chunks, doubling, go over the file about once (never twice).
      const last = await scanned('files_with_matches', '/late.txt')
      expect(last.result.files).toEqual(['/late.txt'])
      expect(last.bytes).toBeLessThanOrEqual(400_000 + 'needle last\n'.length)
      await ws.close()
    })
  }
})

describe('files_with_matches in chunks finds what content finds', () => {
  it('a byte order mark at the start of a later chunk stays a character, as in the whole text', async () => {
    // The first line is exactly the first chunk (4096 bytes): the second starts with U+FEFF.
    const body = 'x'.repeat(4095) + '\n\uFEFFimport marked\n'
    const ws = await Workspace.open({ lower: { '/bom.txt': body } })
    const tools = createAgentTools(ws)
    for (const pattern of ['^import', '^\uFEFFimport', 'marked$']) {
      const lines = (await ok(tools, 'search_files', { pattern, regex: true })).matches.map((match: Json) => match.path)
      const files = (await ok(tools, 'search_files', { pattern, regex: true, output_mode: 'files_with_matches' })).files
      const counts = (await ok(tools, 'search_files', { pattern, regex: true, output_mode: 'count' })).counts
      expect([pattern, files, counts.map((entry: Json) => entry.path)]).toEqual([pattern, [...new Set(lines)], lines])
    }
    expect((await ok(tools, 'search_files', { pattern: '^import', regex: true, output_mode: 'files_with_matches' })).files).toEqual([])
    await ws.close()
  })
})

describe('search_files input', () => {
  it('takes output_mode in its JSON Schema (content by default), and refuses bad values with a reason', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'needle\n' } })
    const tools = createAgentTools(ws)
    const tool = tools.find((candidate) => candidate.name === 'search_files')!
    expect((tool.inputSchema as Json).properties.output_mode).toMatchObject({ enum: ['content', 'files_with_matches', 'count'], default: 'content' })
    expect(tool.description).toContain('files_with_matches')
    const refused = async (input: Record<string, unknown>) => {
      const outcome = await callTool(tools, 'search_files', { pattern: 'needle', ...input })
      if (!outcome.isError) throw new Error(`accepted ${JSON.stringify(input)}`)
      expect(outcome.error.code).toBe('EINVALIDINPUT')
      return outcome.error.message
    }
    expect(await refused({ output_mode: 'lines' })).toContain('expected one of "content"|"files_with_matches"|"count"')
    expect(await refused({ output_mode: 'count', context_lines: 2 })).toContain('context_lines applies to output_mode content only')
    expect(await refused({ output_mode: 'files_with_matches', max_results: 0 })).toContain('max_results')
    // Grep's head_limit is max_results here: said so, not only "unrecognized key".
    expect(await refused({ head_limit: 5 })).toContain('for head_limit use max_results')
    expect(await refused({ head_limit: 5, glob: '*.ts' })).toContain('"head_limit", "glob"')
    expect(await ok(tools, 'search_files', { pattern: 'needle', output_mode: 'files_with_matches', context_lines: 0 })).toMatchObject({ files: ['/a.txt'] })
    await ws.close()
  })
})

/** Bytes fs.readSync returned while `run` ran: what was read from disk (the directory walker reads with it). */
async function readFromDisk<T>(run: () => Promise<T>): Promise<{ result: T; bytes: number }> {
  const spy = vi.spyOn(fs, 'readSync')
  try {
    const result = await run()
    return { result, bytes: spy.mock.results.reduce((sum, call) => sum + (call.type === 'return' ? Number(call.value) : 0), 0) }
  } finally {
    spy.mockRestore()
  }
}

describe('files_with_matches reads a file from disk a part at a time, up to its first match', () => {
  const INPUTS = [
    { pattern: 'needle' },
    { pattern: 'NEEDLE', case_sensitive: false },
    { pattern: 'ne+dle\\b', regex: true },
  ] as const

  it('reads one part of a large file whose first line matches, where content and count read it all', async () => {
    const dir = path.join(tmp, 'parts-big')
    const body = 'needle first\n' + 'a needle in every line of the rest\n'.repeat(120_000) // 4 MiB
    write(dir, { 'big.txt': body, 'late.txt': 'hay\n'.repeat(100_000) + 'needle last\n', 'none.txt': 'hay\n'.repeat(50_000) })
    const ws = await Workspace.open({ lower: directory(dir), autoCheckpoint: false })
    const tools = createAgentTools(ws)
    for (const input of INPUTS) {
      const search = (file: string, output_mode: string) => readFromDisk(() => ok(tools, 'search_files', { ...input, path: file, output_mode, max_results: 1000 }))
      const first = await search('/big.txt', 'files_with_matches')
      expect([input, first.result.files]).toEqual([input, ['/big.txt']])
      expect([input, first.bytes]).toEqual([input, READ_PART])
      // The counter sees whole reads: count reads the file to its end.
      const count = await search('/big.txt', 'count')
      expect([input, count.bytes, count.result.counts]).toEqual([input, body.length, [{ path: '/big.txt', count: 120_001 }]])
      // A match at the end, and none: every part, once.
      expect(await search('/late.txt', 'files_with_matches')).toEqual({ result: expect.objectContaining({ files: ['/late.txt'] }), bytes: 400_000 + 'needle last\n'.length })
      expect(await search('/none.txt', 'files_with_matches')).toEqual({ result: expect.objectContaining({ files: [] }), bytes: 200_000 })
    }
    // Over the tree: each file up to the part with its first match.
    const all = await readFromDisk(() => ok(tools, 'search_files', { pattern: 'needle', output_mode: 'files_with_matches' }))
    expect(all.result.files.sort()).toEqual(['/big.txt', '/late.txt'])
    expect(all.bytes).toBe(READ_PART + 400_000 + 'needle last\n'.length + 200_000)
    await ws.close()
  })

  it('finds a match and a UTF-8 character cut by a part\'s end, and a line over several parts, as grep -l does', async () => {
    const dir = path.join(tmp, 'parts-cut')
    const x = (n: number) => 'x'.repeat(n)
    const files: Record<string, string> = {
      'match-cut.txt': x(READ_PART - 3) + 'needle\n' + 'hay\n', // 'nee' | 'dle'
      'match-cut-long.txt': x(READ_PART - 3) + 'needle\n' + 'hay\n'.repeat(20_000), // and the next part overwrites the reader's buffer
      'long-line-varied.txt': 'abcdefghij'.repeat(READ_PART / 4) + 'é needle\n' + 'hay\n'.repeat(20_000),
      'char-cut.txt': x(READ_PART - 1) + 'é needle\n', // é's two bytes on either side
      'char-cut-end.txt': x(READ_PART - 1) + 'é', // and the file's last line, without a newline
      'long-line.txt': x(3 * READ_PART + 5) + 'needle', // a line over four parts, no newline
      'long-line-no.txt': x(3 * READ_PART + 5) + 'needl\n' + 'e\n',
      'exact.txt': x(READ_PART - 1) + '\n' + 'needle\n', // the second part starts the line
      'exact-start.txt': x(READ_PART - 1) + '\n' + 'hay needle\n',
      'bom.txt': x(READ_PART - 1) + '\n' + '\uFEFFimport needle\n', // a byte order mark starting a part is a character
      'crlf-cut.txt': 'line\r\n'.repeat(READ_PART / 6) + 'nee\r\n' + '\r\n', // '^$' in none; '\r' cut from its '\n' at the part's end
    }
    write(dir, files)
    const ws = await Workspace.open({ lower: directory(dir), autoCheckpoint: false })
    const tools = createAgentTools(ws)
    const cases: { input: Record<string, unknown>; grep: string[] }[] = [
      { input: { pattern: 'needle' }, grep: ['-F', 'needle'] },
      { input: { pattern: 'NEEDLE', case_sensitive: false }, grep: ['-F', '-i', 'NEEDLE'] },
      { input: { pattern: 'ne+dle$', regex: true }, grep: ['-E', 'ne+dle$'] },
      { input: { pattern: 'é' }, grep: ['-F', 'é'] },
      { input: { pattern: 'xé', regex: true }, grep: ['-E', 'xé'] },
      { input: { pattern: 'x.$', regex: true }, grep: ['-E', 'x.$'] },
      { input: { pattern: 'É', case_sensitive: false }, grep: ['-F', '-i', 'É'] },
      { input: { pattern: '^needle', regex: true }, grep: ['-E', '^needle'] },
      { input: { pattern: '^import', regex: true }, grep: ['-E', '^import'] },
      { input: { pattern: '^$', regex: true }, grep: ['-E', '^$'] },
      { input: { pattern: 'e$', regex: true }, grep: ['-E', 'e$'] },
    ]
    for (const { input, grep: args } of cases) {
      let listed = ''
      try {
        listed = execFileSync('grep', ['-rl', ...args.slice(0, -1), '-e', args[args.length - 1], '.'], { cwd: dir, env: { LC_ALL: 'C.UTF-8', PATH: process.env.PATH } }).toString('utf8')
      } catch (error) {
        if ((error as { status?: number }).status !== 1) throw error
      }
      const want = listed.split('\n').filter(Boolean).map((line) => line.slice(1)).sort()
      const { result, bytes } = await readFromDisk(() => ok(tools, 'search_files', { ...input, output_mode: 'files_with_matches' }))
      expect([input, [...result.files].sort()]).toEqual([input, want])
      // Every file was read past its first part (the cuts were there to be crossed), none twice.
      expect(bytes).toBeGreaterThan(Object.keys(files).length * READ_PART)
      expect(bytes).toBeLessThanOrEqual(Object.values(files).reduce((sum, body) => sum + Buffer.byteLength(body), 0))
      // What content finds, file by file.
      const lines: Json = await ok(tools, 'search_files', { ...input, max_results: 1000 })
      expect([input, [...new Set(lines.matches.map((match: Json) => match.path))].sort()]).toEqual([input, want])
    }
    await ws.close()
  })
})

describe.skipIf(!fs.existsSync('/proc/self/fd'))('the directory walker\'s parts', () => {
  it('are the file\'s bytes in order; a stop reads no further; errors name workspace paths; no descriptor is kept; a swapped directory is refused', async () => {
    const root = path.join(tmp, 'walker-parts')
    const outside = path.join(tmp, 'walker-parts-outside')
    const body = Buffer.from(Array.from({ length: 3 * READ_PART + 7 }, (_, i) => (i * 7919) % 251))
    write(root, { 'd/big.bin': body, 'd/empty.txt': '' })
    write(outside, { 'big.bin': 'outside' })
    const source = directory(root)
    const turn = () => new Promise((resolve) => setImmediate(resolve))
    await turn()
    const open = fs.readdirSync('/proc/self/fd').length
    const walker = source.walker()
    const parts = (file: string, stopAfter = Infinity) => {
      const got: Buffer[] = []
      walker.readParts(file, READ_PART, (part) => (got.push(Buffer.from(part)), got.length < stopAfter))
      return got
    }
    expect(parts('/d/big.bin').map((part) => part.length)).toEqual([READ_PART, READ_PART, READ_PART, 7])
    expect(Buffer.concat(parts('/d/big.bin')).equals(Buffer.from(source.readFile('/d/big.bin')))).toBe(true)
    expect(parts('/d/empty.txt')).toEqual([])
    const stopped = await readFromDisk(async () => parts('/d/big.bin', 1))
    expect([stopped.result.length, stopped.bytes]).toEqual([1, READ_PART])
    expect(() => parts('/d/none.txt')).toThrow(expect.objectContaining({ code: 'ENOENT', path: '/d/none.txt' }))
    expect(() => parts('/d')).toThrow(expect.objectContaining({ code: 'EISDIR', path: '/d' }))
    fs.symlinkSync('big.bin', path.join(root, 'd/link'))
    expect(() => parts('/d/link')).toThrow(expect.objectContaining({ code: 'ELOOP', path: '/d/link' }))
    await turn()
    expect(fs.readdirSync('/proc/self/fd').length).toBe(open)
    fs.renameSync(path.join(root, 'd'), path.join(root, 'moved'))
    fs.symlinkSync(outside, path.join(root, 'd'))
    expect(() => parts('/d/big.bin')).toThrow(expect.objectContaining({ code: 'EACCES' }))
  })
})

describe('files_with_matches lists the newest files first, as Claude Code\'s Grep does', () => {
  it('orders by modification time, newest first, ties by path, then cuts the page (max_results, offset, the budget)', async () => {
    const dir = path.join(tmp, 'by-time')
    write(dir, { 'a.txt': 'needle\n', 'b.txt': 'needle\n', 'c/d.txt': 'needle\n', 'c/e.txt': 'needle\n', 'f.txt': 'needle\n', 'g.txt': 'hay\n' })
    const at = (rel: string, seconds: number) => fs.utimesSync(path.join(dir, rel), seconds, seconds)
    at('a.txt', 1_000_000) // oldest
    at('b.txt', 3_000_000) // newest on disk
    at('c/d.txt', 2_000_000) // c/d.txt, c/e.txt and f.txt tie: by path
    at('c/e.txt', 2_000_000)
    at('f.txt', 2_000_000)
    at('g.txt', 4_000_000) // no match
    const ws = await Workspace.open({ lower: directory(dir), autoCheckpoint: false })
    const tools = createAgentTools(ws)
    // The oracle: the files' own times, on disk and in the workspace.
    const byTime = (paths: string[]) =>
      paths
        .map((file) => ({ file, time: ws.fs.statSync(file).mtimeMs }))
        .sort((p, q) => q.time - p.time || (p.file < q.file ? -1 : 1))
        .map(({ file }) => file)
    const matching = ['/a.txt', '/b.txt', '/c/d.txt', '/c/e.txt', '/f.txt']
    expect(byTime(matching)).toEqual(['/b.txt', '/c/d.txt', '/c/e.txt', '/f.txt', '/a.txt'])
    const list = async (input: Record<string, unknown> = {}) => ok(tools, 'search_files', { pattern: 'needle', output_mode: 'files_with_matches', ...input })
    expect(await list()).toMatchObject({ files: byTime(matching), returned: 5, truncated: false })
    // The page is cut from the ordered list, not from the walk's path order.
    expect(await list({ max_results: 2 })).toMatchObject({ files: ['/b.txt', '/c/d.txt'], truncated: true, next_offset: 2 })
    expect(await list({ max_results: 2, offset: 2 })).toMatchObject({ files: ['/c/e.txt', '/f.txt'], truncated: true, next_offset: 4 })
    expect(await list({ max_results: 2, offset: 4 })).toMatchObject({ files: ['/a.txt'], truncated: false })
    // A file the agent writes is the newest; one it touches back in time goes back; a match it adds counts.
    ws.fs.writeFileSync('/a.txt', 'needle again\n')
    ws.fs.utimesSync('/c/e.txt', 500_000, 500_000)
    ws.fs.writeFileSync('/g.txt', 'needle now\n')
    const now = ['/a.txt', '/b.txt', '/c/d.txt', '/c/e.txt', '/f.txt', '/g.txt']
    expect((await list()).files).toEqual(byTime(now))
    expect(byTime(now).slice(-3)).toEqual(['/c/d.txt', '/f.txt', '/c/e.txt'])
    // Count and content keep the walk's path order.
    expect((await ok(tools, 'search_files', { pattern: 'needle', output_mode: 'count' })).counts.map((entry: Json) => entry.path)).toEqual([...now].sort())
    expect((await ok(tools, 'search_files', { pattern: 'needle' })).matches.map((match: Json) => match.path)).toEqual([...now].sort())
    await ws.close()

    // The result budget cuts the ordered list too: the newest files are the ones shown.
    const many = path.join(tmp, 'by-time-many')
    write(many, Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`file-with-a-longish-name-${String(i).padStart(3, '0')}.txt`, 'needle\n'])))
    for (let i = 0; i < 200; i++) at(path.relative(dir, path.join(many, `file-with-a-longish-name-${String(i).padStart(3, '0')}.txt`)), 1_000_000 + i)
    const big = await Workspace.open({ lower: directory(many), autoCheckpoint: false })
    const budgeted = await ok(createAgentTools(big, { budget: { chars: 2000 } }), 'search_files', { pattern: 'needle', output_mode: 'files_with_matches', max_results: 1000 })
    expect(budgeted.truncated).toBe(true)
    expect(budgeted.files).toEqual(Array.from({ length: budgeted.returned }, (_, k) => `/file-with-a-longish-name-${String(199 - k).padStart(3, '0')}.txt`))
    await big.close()
  })
})
