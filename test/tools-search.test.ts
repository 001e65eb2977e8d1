/**
 * search_files, find_files and recursive list_directory against real oracles: `grep -rn` over a real
 * directory holding what the workspace view holds (the lower directory with the agent's changes
 * applied to a copy with node:fs), and `git check-ignore` in a real git repository for .gitignore.
 * Both ways of reading the view are covered: a directory lower (untouched trees read from disk) and
 * a fixture lower (everything through the overlay). Regular expressions run in linear time: patterns
 * that backtrack catastrophically in RegExp against grep -E within a work bound (steps counted, no
 * clock), generated ones against RegExp line by line, and what needs backtracking refused.
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
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-search-'))
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

function write(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), content)
  }
}

/** A directory's files as a fixture lower (every read then goes through the overlay). */
function fixtureOf(root: string): Record<string, string | Uint8Array> {
  const out: Record<string, string | Uint8Array> = {}
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.isFile()) out['/' + path.relative(root, full)] = new Uint8Array(fs.readFileSync(full))
    }
  }
  walk(root)
  return out
}

/** `grep -rn` (binary files skipped, byte semantics) as [path, line number, line] sorted. */
function grep(root: string, flags: string[], pattern: string): string[] {
  let out = ''
  try {
    out = execFileSync('grep', ['-rnIZ', ...flags, '-e', pattern, '.'], { cwd: root, env: { LC_ALL: 'C', PATH: process.env.PATH }, maxBuffer: 64 * 1024 * 1024 }).toString('utf8')
  } catch (error) {
    if ((error as { status?: number }).status !== 1) throw error // 1: no line matched
  }
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [file, rest] = line.split('\0')
      const colon = rest.indexOf(':')
      return `${file.slice(1)}:${rest.slice(0, colon)}:${rest.slice(colon + 1)}`
    })
    .sort()
}

/** Every page of search_files, as grep prints its lines. */
async function search(tools: readonly AgentTool[], input: Record<string, unknown>): Promise<string[]> {
  const lines: string[] = []
  for (let offset: number | undefined = 0; offset !== undefined; ) {
    const page: Json = await ok(tools, 'search_files', { path: '/', ...input, offset })
    for (const match of page.matches) lines.push(`${match.path}:${match.line_number}:${match.line}`)
    offset = page.next_offset
  }
  return lines.sort()
}

const PATTERNS: { input: Record<string, unknown>; grep: [string[], string] }[] = [
  { input: { pattern: 'serve' }, grep: [['-F'], 'serve'] },
  { input: { pattern: 'a.b(c)' }, grep: [['-F'], 'a.b(c)'] },
  { input: { pattern: 'café' }, grep: [['-F'], 'café'] },
  { input: { pattern: 'SERVE', case_sensitive: false }, grep: [['-F', '-i'], 'SERVE'] },
  { input: { pattern: '^\\s*import\\b', regex: true }, grep: [['-P'], '^\\s*import\\b'] },
  { input: { pattern: 'fo+ba[rz]', regex: true }, grep: [['-E'], 'fo+ba[rz]'] },
  { input: { pattern: '^$', regex: true }, grep: [['-E'], '^$'] },
  { input: { pattern: '\\d{3,}$', regex: true }, grep: [['-P'], '\\d{3,}$'] },
  { input: { pattern: 'end', regex: true }, grep: [['-E'], 'end'] },
  { input: { pattern: 'needle' }, grep: [['-F'], 'needle'] },
  // ripgrep's syntax, as models write it for a Grep tool: POSIX classes and a leading inline flag.
  { input: { pattern: '[[:upper:]]{4}', regex: true }, grep: [['-E'], '[[:upper:]]{4}'] },
  { input: { pattern: '[^[:space:]]+ [[:digit:]]+$', regex: true }, grep: [['-E'], '[^[:space:]]+ [[:digit:]]+$'] },
  { input: { pattern: '[[:punct:]][[:alpha:]]', regex: true }, grep: [['-E'], '[[:punct:]][[:alpha:]]'] },
  { input: { pattern: '(?i)serve', regex: true }, grep: [['-P'], '(?i)serve'] },
]

const LOWER: Record<string, string | Uint8Array> = {
  'src/a.ts': 'import { serve } from "./serve"\n\nserve()\nconst x = a.b(c) + 1234\n',
  'src/b.ts': '  import fs from "node:fs"\nfoobar foooobaz fobar\nserve(8080)\n',
  'src/nested/deep/c.ts': 'export const SERVE = true\n// Serve it\n\n\n',
  'README.md': '# app\n\ncafé and naïve\nnumbers 12 and 345\n',
  'noeol.txt': 'no newline at the end',
  'empty.txt': '',
  '.hidden/x.ts': 'import hidden\nserve hidden\n',
  'bin/data.bin': new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 10]),
  'lib/many.txt': Array.from({ length: 300 }, (_, i) => `line ${i} needle ${i % 7 === 0 ? 'serve' : ''}`).join('\n') + '\n',
}

/** The same changes to a workspace and (with node:fs) to a copy of its lower directory. */
async function change(ws: Workspace, copy: string): Promise<void> {
  ws.fs.writeFileSync('/src/new.ts', 'serve(1)\nfoobaz\n')
  write(copy, { 'src/new.ts': 'serve(1)\nfoobaz\n' })
  ws.fs.writeFileSync('/src/a.ts', 'import x\nno longer serving\n')
  write(copy, { 'src/a.ts': 'import x\nno longer serving\n' })
  ws.fs.unlinkSync('/src/b.ts')
  fs.unlinkSync(path.join(copy, 'src/b.ts'))
  ws.fs.rmSync('/src/nested', { recursive: true })
  fs.rmSync(path.join(copy, 'src/nested'), { recursive: true })
  ws.fs.mkdirSync('/docs/guide', { recursive: true })
  fs.mkdirSync(path.join(copy, 'docs/guide'), { recursive: true })
  ws.fs.renameSync('/README.md', '/docs/guide/README.md')
  fs.renameSync(path.join(copy, 'README.md'), path.join(copy, 'docs/guide/README.md'))
  ws.fs.renameSync('/lib', '/moved-lib')
  fs.renameSync(path.join(copy, 'lib'), path.join(copy, 'moved-lib'))
  ws.fs.symlinkSync('src/new.ts', '/link.ts')
  fs.symlinkSync('src/new.ts', path.join(copy, 'link.ts'))
}

describe('search_files against grep -rn', () => {
  let lower: string
  let copy: string
  beforeAll(() => {
    lower = path.join(tmp, 'grep-lower')
    copy = path.join(tmp, 'grep-copy')
    write(lower, LOWER)
    write(copy, LOWER)
  })

  for (const kind of ['directory', 'fixture'] as const) {
    it(`finds the lines grep finds over a ${kind} lower, untouched and then changed`, async () => {
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(lower) : fixtureOf(lower), autoCheckpoint: false })
      const tools = createAgentTools(ws)
      for (const { input, grep: [flags, pattern] } of PATTERNS) {
        expect([input, await search(tools, { ...input, include_ignored: true })]).toEqual([input, grep(lower, flags, pattern)])
      }
      const changed = fs.mkdtempSync(path.join(tmp, 'changed-'))
      fs.cpSync(copy, changed, { recursive: true })
      await change(ws, changed)
      for (const { input, grep: [flags, pattern] } of PATTERNS) {
        expect([input, await search(tools, { ...input, include_ignored: true })]).toEqual([input, grep(changed, flags, pattern)])
      }
      await ws.close()
    })
  }

  it('reads an untouched directory tree straight from disk: no overlay lookups per file', async () => {
    const big = path.join(tmp, 'big')
    write(big, Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`d${i % 20}/f${i}.txt`, `file ${i}\n${i === 1999 ? 'the last one\n' : ''}`])))
    const ws = await Workspace.open({ lower: directory(big) })
    const tools = createAgentTools(ws)
    const before = ws.counters.lookups
    expect(await search(tools, { pattern: 'the last' })).toEqual(['/d19/f1999.txt:2:the last one'])
    expect(ws.counters.lookups - before).toBeLessThan(20)
    // A changed file is read through the overlay, its untouched siblings still from disk.
    ws.fs.writeFileSync('/d3/f3.txt', 'the last word\n')
    const changed = ws.counters.lookups
    expect(await search(tools, { pattern: 'the last' })).toEqual(['/d19/f1999.txt:2:the last one', '/d3/f3.txt:1:the last word'])
    expect(ws.counters.lookups - changed).toBeLessThan(400) // the 100 entries of /d3 and the root, not 2000 files
    await ws.close()
  })

  it('under a path through a symlink, reads what the view shows there, never the link target on the host', async () => {
    // On disk, view/out leads to the sibling directory host-only/; in the workspace a '..' folds at
    // the root, so /out is /host-only inside the view, a directory of its own.
    const root = path.join(tmp, 'links')
    write(root, { 'view/host-only/notes.txt': 'secret: the view\n', 'view/host-only/sub/deep.txt': 'secret: deep in the view\n', 'host-only/notes.txt': 'secret: the host\n', 'host-only/sub/deep.txt': 'secret: deep on the host\n' })
    fs.symlinkSync('../host-only', path.join(root, 'view/out'))
    const ws = await Workspace.open({ lower: directory(path.join(root, 'view')) })
    const tools = createAgentTools(ws)
    expect(await search(tools, { pattern: 'secret', path: '/out/notes.txt' })).toEqual(['/out/notes.txt:1:secret: the view'])
    expect(await search(tools, { pattern: 'secret', path: '/out/sub' })).toEqual(['/out/sub/deep.txt:1:secret: deep in the view'])
    // A change under the link's target is seen through the link too.
    ws.fs.writeFileSync('/host-only/sub/deep.txt', 'secret: changed\n')
    expect(await search(tools, { pattern: 'secret', path: '/out/sub' })).toEqual(['/out/sub/deep.txt:1:secret: changed'])
    const listed = await ok(tools, 'list_directory', { path: '/out/sub' })
    expect(listed.entries).toEqual([{ path: 'deep.txt', type: 'file', size: 'secret: changed\n'.length }])
    await ws.close()
  })

  for (const kind of ['directory', 'fixture'] as const) {
    it(`follows a symlink named as the path, as grep -r and ls do, over a ${kind} lower (it found nothing)`, async () => {
      const root = path.join(tmp, `named-link-${kind}`)
      write(root, { 'src/a.txt': 'hello there\n', 'src/deep/b.txt': 'hello below\n' })
      fs.symlinkSync('src', path.join(root, 'linkdir'))
      fs.symlinkSync('.', path.join(root, 'selfloop'))
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(root) : fixtureOf(root), autoCheckpoint: false })
      if (kind === 'fixture') {
        ws.fs.symlinkSync('src', '/linkdir')
        ws.fs.symlinkSync('.', '/selfloop')
      }
      const tools = createAgentTools(ws)
      // grep prints the path as named: linkdir/a.txt.
      const expected = grep(path.join(root, 'linkdir') + '/', [], 'hello').map((line) => '/linkdir/' + line.slice(1))
      expect(expected).toHaveLength(2)
      expect(await search(tools, { pattern: 'hello', path: '/linkdir' })).toEqual(expected)
      expect((await ok(tools, 'list_directory', { path: '/linkdir' })).entries.map((entry: Json) => entry.path)).toEqual(['a.txt', 'deep/'])
      // A link to the root is followed once, as ls -R follows it: the links below it are listed, not entered.
      const listed = (await ok(tools, 'list_directory', { path: '/selfloop', recursive: true })).entries.map((entry: Json) => entry.path)
      expect(listed).toEqual(['linkdir', 'selfloop', 'src/', 'src/a.txt', 'src/deep/', 'src/deep/b.txt'])
      await ws.close()
    })
  }

  it('searches running at the same time each read their own files (no read buffer shared between walks)', async () => {
    const root = path.join(tmp, 'concurrent')
    write(root, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d${i % 3}/f${i}.txt`, `${i % 2 === 0 ? 'even' : 'odd'} ${i}\n`])))
    const ws = await Workspace.open({ lower: directory(root) })
    const tools = createAgentTools(ws)
    const [even, odd] = await Promise.all([search(tools, { pattern: 'even', max_results: 1000 }), search(tools, { pattern: 'odd', max_results: 1000 })])
    expect(even).toEqual(grep(root, [], 'even'))
    expect(odd).toEqual(grep(root, [], 'odd'))
    await ws.close()
  })

  it('shows context lines, narrows by include and exclude globs, and stops at max_results', async () => {
    const ws = await Workspace.open({ lower: directory(lower) })
    const tools = createAgentTools(ws)
    const context = await ok(tools, 'search_files', { pattern: 'serve()', context_lines: 1, include_ignored: true, include: ['src/a.ts'] })
    expect(context.matches).toEqual([{ path: '/src/a.ts', line_number: 3, line: 'serve()', before: [''], after: ['const x = a.b(c) + 1234'] }])
    const first = await ok(tools, 'search_files', { pattern: 'import', include_ignored: true, include: ['*.ts'], exclude: ['.hidden'] })
    expect(first.matches.map((match: Json) => match.path)).toEqual(['/src/a.ts', '/src/b.ts'])
    const limited = await ok(tools, 'search_files', { pattern: 'needle', max_results: 5, include_ignored: true })
    expect(limited).toMatchObject({ returned: 5, truncated: true, next_offset: 5 })
    expect(limited.matches.map((match: Json) => match.line_number)).toEqual([1, 2, 3, 4, 5])
    const next = await ok(tools, 'search_files', { pattern: 'needle', max_results: 5, offset: 5, include_ignored: true })
    expect(next.matches.map((match: Json) => match.line_number)).toEqual([6, 7, 8, 9, 10])
    const binary = await ok(tools, 'search_files', { pattern: 'needle', path: '/bin' })
    expect(binary).toMatchObject({ matches: [], binary_files_skipped: 1, truncated: false })
    await ws.close()
  })

  it('stays within the result budget on a pattern that matches everywhere, and says how to go on', async () => {
    const ws = await Workspace.open({ lower: directory(lower) })
    const tools = createAgentTools(ws, { budget: { chars: 2000 } })
    const page = await ok(tools, 'search_files', { pattern: 'line', max_results: 1000 })
    expect(JSON.stringify(page).length).toBeLessThanOrEqual(2000)
    expect(page).toMatchObject({ truncated: true, next_offset: page.returned })
    expect(page.more).toContain('result budget')
    await ws.close()
  })

  it('refuses a bad regular expression and a literal with a newline, as invalid input', async () => {
    const ws = await Workspace.open({ lower: directory(lower) })
    const tools = createAgentTools(ws)
    const bad = await callTool(tools, 'search_files', { pattern: 'a(b', regex: true })
    expect(bad).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining('not a valid regular expression') } })
    expect(await callTool(tools, 'search_files', { pattern: 'a\nb' })).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT' } })
    // A negated POSIX class JavaScript has no escape for is refused with the class to write instead.
    const negated = await callTool(tools, 'search_files', { pattern: '[[:^alpha:]]', regex: true })
    expect(negated).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining('[^A-Za-z]') } })
    expect(await callTool(tools, 'search_files', { pattern: 'a', path: '/missing' })).toMatchObject({ isError: true, error: { code: 'ENOENT' } })
    await ws.close()
  })

  it('refuses a regular expression that needs a newline, as ripgrep does without --multiline; [^\\n] still runs', async () => {
    const ws = await Workspace.open({ lower: directory(lower) })
    const tools = createAgentTools(ws)
    // 'serve()\nconst' is in src/a.ts: a line-by-line search answered "no matches".
    for (const pattern of ['serve\\(\\)\\nconst', 'a\\x0Ab', 'a\\u000ab', 'a\\u{a}b', 'a[\\n]b', 'a\nb']) {
      const outcome = await callTool(tools, 'search_files', { pattern, regex: true })
      expect([pattern, outcome]).toMatchObject([pattern, { isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining('within one line') } }])
    }
    const found = await ok(tools, 'search_files', { pattern: 'serve[^\\n]*\\\\n|^import', regex: true, path: '/src/a.ts' })
    expect(found.returned).toBe(1)
    expect((await ok(tools, 'search_files', { pattern: '\\\\n', regex: true, path: '/src/a.ts' })).returned).toBe(0) // a backslash and an n
    await ws.close()
  })
})

describe('.gitignore against git check-ignore', () => {
  let repo: string
  let expected: string[]
  beforeAll(() => {
    repo = path.join(tmp, 'repo')
    write(repo, {
      '.gitignore': '*.log\n!keep.log\nbuild/\n!build/kept.txt\n/top-only.txt\ndocs/**/draft.md\n*.tmp\nnode_modules\n# a comment\n\\#hash.txt\n',
      'sub/.gitignore': '!*.tmp\nlocal/\ntop-only.txt\n',
      'sub/deeper/.gitignore': '*.ts\n!main.ts\n',
      'a.log': 'marker\n',
      'keep.log': 'marker\n',
      'x/b.log': 'marker\n',
      'x/keep.log': 'marker\n',
      'build/out.js': 'marker\n',
      'build/kept.txt': 'marker\n',
      'src/build/gen.js': 'marker\n',
      'top-only.txt': 'marker\n',
      'x/top-only.txt': 'marker\n',
      'sub/top-only.txt': 'marker\n',
      'docs/draft.md': 'marker\n',
      'docs/a/b/draft.md': 'marker\n',
      'docs/final.md': 'marker\n',
      'c.tmp': 'marker\n',
      'sub/d.tmp': 'marker\n',
      'sub/local/e.txt': 'marker\n',
      'sub/deeper/x.ts': 'marker\n',
      'sub/deeper/main.ts': 'marker\n',
      'node_modules/pkg/index.js': 'marker\n',
      '#hash.txt': 'marker\n',
      'excluded-by-info.txt': 'marker\n',
      'normal.txt': 'marker\n',
      'src/index.ts': 'marker\n',
    })
    execFileSync('git', ['init', '-q'], { cwd: repo })
    fs.writeFileSync(path.join(repo, '.git/info/exclude'), 'excluded-by-info.txt\n')
    const files = execFileSync('find', ['.', '-type', 'f', '-not', '-path', './.git/*'], { cwd: repo }).toString().split('\n').filter(Boolean).map((file) => file.slice(2))
    let ignored = ''
    try {
      ignored = execFileSync('git', ['check-ignore', '--no-index', '--stdin'], { cwd: repo, input: files.join('\n') + '\n' }).toString()
    } catch (error) {
      if ((error as { status?: number }).status !== 1) throw error
    }
    const out = new Set(ignored.split('\n').filter(Boolean))
    expected = files.filter((file) => !out.has(file)).map((file) => '/' + file).sort()
  })

  it('the oracle ignores what the rules say (a sanity check of the fixture itself)', () => {
    expect(expected).toContain('/keep.log')
    expect(expected).toContain('/sub/d.tmp')
    expect(expected).toContain('/sub/deeper/main.ts')
    expect(expected).not.toContain('/build/kept.txt')
    expect(expected).not.toContain('/excluded-by-info.txt')
    expect(expected).not.toContain('/sub/top-only.txt')
  })

  for (const kind of ['directory', 'fixture'] as const) {
    it(`find_files, search_files and list_directory leave out what git ignores (${kind} lower)`, async () => {
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(repo) : fixtureOf(repo) })
      const tools = createAgentTools(ws)
      const found = await ok(tools, 'find_files', { pattern: '*', path: '/', max_results: 1000 })
      expect(found.files).toEqual(expected)
      expect(await search(tools, { pattern: 'marker' })).toEqual(expected.filter((file) => !file.endsWith('.gitignore')).map((file) => `${file}:1:marker`))
      const listed = await ok(tools, 'list_directory', { path: '/', recursive: true })
      expect(listed.entries.filter((entry: Json) => entry.type === 'file').map((entry: Json) => '/' + entry.path)).toEqual(expected)
      expect(listed.ignored_by_gitignore).toBeGreaterThan(0)
      // include_ignored: everything but .git, as find lists it.
      const all = await ok(tools, 'find_files', { pattern: '*', path: '/', include_ignored: true, max_results: 1000 })
      expect(all.files.filter((file: string) => !file.startsWith('/.git/'))).toEqual(
        execFileSync('find', ['.', '-type', 'f', '-not', '-path', './.git/*'], { cwd: repo }).toString().split('\n').filter(Boolean).map((file) => file.slice(1)).sort(),
      )
      // A .gitignore the agent edits applies at once.
      ws.fs.writeFileSync('/sub/deeper/.gitignore', '*.ts\n')
      expect((await ok(tools, 'find_files', { pattern: '*.ts', path: '/sub' })).files).toEqual([])
      // A directory the rules exclude, asked for by name, is searched (only the rules inside it apply).
      expect((await ok(tools, 'find_files', { pattern: '*', path: '/node_modules' })).files).toEqual(['/node_modules/pkg/index.js'])
      await ws.close()
    })
  }
})

describe('find_files', () => {
  it('sorts by modification time, newest first, and pages with offset', async () => {
    const root = path.join(tmp, 'mtime')
    write(root, { 'old.ts': '', 'middle.ts': '', 'new.ts': '', 'other.js': '' })
    const at = (rel: string, seconds: number) => fs.utimesSync(path.join(root, rel), seconds, seconds)
    at('old.ts', 1_000_000)
    at('middle.ts', 2_000_000)
    at('new.ts', 3_000_000)
    const ws = await Workspace.open({ lower: directory(root) })
    const tools = createAgentTools(ws)
    expect((await ok(tools, 'find_files', { pattern: '*.ts', sort: 'mtime' })).files).toEqual(['/new.ts', '/middle.ts', '/old.ts'])
    ws.fs.writeFileSync('/old.ts', 'touched now') // through the overlay: the newest
    expect((await ok(tools, 'find_files', { pattern: '*.ts', sort: 'mtime' })).files).toEqual(['/old.ts', '/new.ts', '/middle.ts'])
    const page = await ok(tools, 'find_files', { pattern: '*.ts', max_results: 2 })
    expect(page).toMatchObject({ files: ['/middle.ts', '/new.ts'], truncated: true, next_offset: 2 })
    expect(await ok(tools, 'find_files', { pattern: '*.ts', max_results: 2, offset: 2 })).toMatchObject({ files: ['/old.ts'], truncated: false, total: 3 })
    await ws.close()
  })
})

describe('the line matcher', () => {
  it('finds exactly the lines a line-by-line search finds, for literals, regexes and any bytes', async () => {
    const fc = await import('fast-check')
    const { LineMatcher, loadGrep } = await import('../tools/grep.js')
    await loadGrep()
    const alphabet = fc.constantFrom('a', 'b', 'z', 'q', '\n', ' ', 'é', '.', '(')
    const text = fc.array(alphabet, { maxLength: 300 }).map((chars) => chars.join(''))
    const needle = fc.array(fc.constantFrom('a', 'b', 'z', 'q', ' ', 'é', '.', '('), { minLength: 1, maxLength: 4 }).map((chars) => chars.join(''))
    const reference = (body: string, test: (line: string) => boolean) => {
      const lines = body.split('\n')
      if (lines[lines.length - 1] === '') lines.pop()
      return lines.flatMap((line, i) => (test(line) ? [`${i + 1}:${line}`] : []))
    }
    const found = (matcher: InstanceType<typeof LineMatcher>, body: string) => {
      const out: string[] = []
      matcher.search(new TextEncoder().encode(body), 0, (match) => (out.push(`${match.line_number}:${match.line}`), true))
      return out
    }
    fc.assert(
      fc.property(text, needle, fc.boolean(), (body, pattern, caseSensitive) => {
        const literal = new LineMatcher({ pattern, regex: false, caseSensitive })
        const folded = (line: string) => (caseSensitive ? line.includes(pattern) : line.toLowerCase().includes(pattern.toLowerCase()))
        expect(found(literal, body)).toEqual(reference(body, folded))
        const source = pattern.replace(/[.(]/g, '\\$&') + '[ab]*'
        const regex = new LineMatcher({ pattern: source, regex: true, caseSensitive: true })
        expect(found(regex, body)).toEqual(reference(body, (line) => new RegExp(source, 'u').test(line)))
        // A class that matches newlines too: matches may cross lines, each line is still judged alone.
        const crossing = new LineMatcher({ pattern: `${source}[^x]*z`, regex: true, caseSensitive: true })
        expect(found(crossing, body)).toEqual(reference(body, (line) => new RegExp(`${source}[^x]*z`, 'u').test(line)))
      }),
      { numRuns: 500 },
    )
  })
})

describe('regular expressions in time linear in the text', () => {
  // Patterns on which JavaScript's backtracking RegExp runs for minutes or more (r-regex-redos.mjs:
  // (a+)+$ over 32 'a's and a '!' froze the MCP server), each with its spelling for grep -E.
  const HOSTILE: [pattern: string, grep: string][] = [
    ['(a+)+$', '(a+)+$'],
    ['(a|aa)+$', '(a|aa)+$'],
    ['(a|a)*b', '(a|a)*b'],
    ['a+b', 'a+b'],
    ['\\s+$', '[[:space:]]+$'],
    ['(\\w+\\s?)+$', '([[:alnum:]_]+[[:space:]]?)+$'],
    ['(x+x+)+y', '(x+x+)+y'],
    ['^(([a-z])+.)+[A-Z]([a-z])+$', '^(([a-z])+.)+[A-Z]([a-z])+$'],
    ['(?:a|b)*a(?:a|b){12}c', '(a|b)*a(a|b){12}c'],
  ]
  const FILES: Record<string, string> = {
    'runs.txt': 'a'.repeat(32) + '!\n' + 'a'.repeat(5000) + 'b\n' + 'aaa\n',
    'spaces.txt': ' '.repeat(20_000) + 'x\ntrailing   \n',
    'words.txt': ('word '.repeat(30) + '!\n').repeat(100) + 'ends with words\n',
    'xs.txt': 'x'.repeat(40) + '\n' + 'x'.repeat(5000) + 'y\n',
    'names.txt': 'abcdefghijklmnopqrstuvwxyzabcdefgh!\nhello World\n',
    'ab.txt': Array.from({ length: 2000 }, (_, i) => ((i * 7919) % 13 < 6 ? 'a' : 'b')).join('') + 'c\n',
  }
  const bytes = Object.values(FILES).reduce((sum, text) => sum + text.length, 0)

  it('answers patterns that backtrack catastrophically, as grep -E does, in steps linear in the text', async () => {
    const { grepCounters } = await import('../tools/grep.js')
    const root = path.join(tmp, 'hostile')
    write(root, FILES)
    const ws = await Workspace.open({ lower: directory(root) })
    const tools = createAgentTools(ws)
    for (const [pattern, spelling] of HOSTILE) {
      const before = grepCounters.steps
      const found = await search(tools, { pattern, regex: true })
      // Every character scanned a few times at most (the automaton, its prefilter), plus building its states.
      expect([pattern, grepCounters.steps - before <= 2 * bytes + 20_000]).toEqual([pattern, true])
      // Lines compared by path and number (a line over 400 characters is shown around its match).
      const where = (lines: string[]) => lines.map((line) => line.split(':', 2).join(':'))
      expect([pattern, where(found)]).toEqual([pattern, where(grep(root, ['-E'], spelling))])
    }
    await ws.close()
  })

  it('refuses backreferences and look-around, as ripgrep does without -P, saying why and what to use instead', async () => {
    const ws = await Workspace.open({ lower: directory(path.join(tmp, 'hostile')) })
    const tools = createAgentTools(ws)
    for (const pattern of ['(a)\\1', '(?<w>a)\\k<w>', 'foo(?=bar)', 'foo(?!bar)', '(?<=a)b', '(?<!a)b']) {
      const outcome = await callTool(tools, 'search_files', { pattern, regex: true })
      expect(outcome).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringMatching(/^pattern: (backreferences are|look-around is) not supported/) } })
      if (outcome.isError) expect(outcome.error.message).toMatch(/linear in the text, as ripgrep does without -P.*exponential time\. (Spell|Match)/)
    }
    // Outside Unicode mode '\2' with one group and '\8' are escapes of characters, not references.
    expect(await callTool(tools, 'search_files', { pattern: '(a)\\2|\\8', regex: true })).toMatchObject({ isError: false })
    const large = await callTool(tools, 'search_files', { pattern: '(?:a{1000}){1000}', regex: true })
    expect(large).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining('too large') } })
    // Nothing is lost: the next search answers as before.
    expect(await search(tools, { pattern: 'hello' })).toEqual(['/names.txt:2:hello World'])
    await ws.close()
  })

  it('stops a pattern whose automaton changes state at every character with an error, at its work limit', async () => {
    const { grepCounters } = await import('../tools/grep.js')
    const root = path.join(tmp, 'costly')
    // Random a and b, and a 'c' with a 'b' 21 characters before it: no match, and a state per character.
    let seed = 7
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
    const line = Array.from({ length: 3_000_000 }, () => (random() < 0.5 ? 'a' : 'b')).join('') + 'b' + 'a'.repeat(20) + 'c\n'
    write(root, { 'ab.txt': line })
    const ws = await Workspace.open({ lower: directory(root) })
    const tools = createAgentTools(ws)
    const before = grepCounters.steps
    const outcome = await callTool(tools, 'search_files', { pattern: '(?:a|b)*a(?:a|b){20}c', regex: true })
    expect(outcome).toMatchObject({ isError: true, error: { code: 'EINVALIDINPUT', message: expect.stringContaining('too costly for this text') } })
    expect(grepCounters.steps - before).toBeLessThan(100_000_000 + 2 * line.length)
    await ws.close()
  })

  /**
   * The source with ripgrep's word characters in place of RegExp's ASCII ones, for the characters
   * the generated texts hold ('é', 'É' and 'ſ' are letters): \w, \W, \b and \B outside classes
   * (the generated classes hold none).
   */
  function unicodeWords(source: string): string {
    const word = '[\\wéÉſ]'
    const spelt: Record<string, string> = {
      '\\w': word,
      '\\W': '[^\\wéÉſ]',
      '\\b': `(?:(?<=${word})(?!${word})|(?<!${word})(?=${word}))`,
      '\\B': `(?:(?<=${word})(?=${word})|(?<!${word})(?!${word}))`,
    }
    let out = ''
    for (let at = 0; at < source.length; ) {
      let end = at + 1
      if (source[at] === '\\') end = at + 2
      else if (source[at] === '[') {
        end = source[at + 1] === '^' ? at + 2 : at + 1
        while (end < source.length && source[end] !== ']') end += source[end] === '\\' ? 2 : 1
        end++
      }
      const token = source.slice(at, end)
      out += spelt[token] ?? token
      at = end
    }
    return out
  }

  it('finds the lines RegExp finds, line by line, for generated patterns in both syntaxes, with and without case', async () => {
    const fc = await import('fast-check')
    const { LineMatcher, UnsupportedPattern, loadGrep } = await import('../tools/grep.js')
    await loadGrep()
    // Atoms meant for Unicode mode, Annex B's legacy syntax (\8, octal escapes, a literal '{'), and case folding (K, ſ).
    const atoms = ['a', 'b', 'A', 'é', '😀', 'k', 'K', 'ſ', '\\r', ' ', '\\.', '.', '[ab]', '[^a]', '[a-z]', '[\\s\\S]', '[]', '[^]', '\\d', '\\w', '\\s', '\\W', '\\S', '\\x61', '\\u0062', '\\u{1F600}', '\\p{L}', '\\0', '\\cJ', '[😀-😂]', '\\uD83D\\uDE00', '\\8', '\\101', '\\400', '\\c1', 'a{,2}', '\\u{41}', ']', '{', '\\-']
    const quantifiers = ['', '*', '+', '?', '{2}', '{1,}', '{0,2}', '*?', '{1,3}?']
    const pattern = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, tie('atom'), tie('seq'), tie('alt')),
      atom: fc.oneof(
        fc.tuple(fc.constantFrom(...atoms), fc.constantFrom(...quantifiers)).map(([atom, quantifier]) => atom + quantifier),
        fc.constantFrom('^', '$', '\\b', '\\B'),
        fc.tuple(tie('node'), fc.constantFrom('(', '(?:', '(?<n>'), fc.constantFrom(...quantifiers)).map(([node, open, quantifier]) => `${open}${node})${quantifier}`),
      ),
      seq: fc.array(tie('node'), { maxLength: 4 }).map((nodes) => nodes.join('')),
      alt: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((nodes) => nodes.join('|')),
    })).node as import('fast-check').Arbitrary<string>
    const chars = ['a', 'b', 'A', 'é', 'É', '😀', '😁', 'k', 'K', 's', 'S', 'ſ', '\r', '\n', ' ', '.', '-', '1', '8', '\t', '\0', '\u2028', '_', '{', ']', '\\', 'A', '\x01']
    const text = fc.array(fc.constantFrom(...chars), { maxLength: 40 }).map((list) => list.join(''))
    fc.assert(
      fc.property(pattern, text, fc.boolean(), (source, body, caseSensitive) => {
        let matcher: InstanceType<typeof LineMatcher>
        try {
          matcher = new LineMatcher({ pattern: source, regex: true, caseSensitive })
        } catch (error) {
          if (error instanceof SyntaxError) return // RegExp refuses it too
          // \8 is a backreference once eight groups come before it (Annex B reads it as '8' otherwise).
          if (error instanceof UnsupportedPattern && /^backreferences/.test(error.message) && /\\[1-9]/.test(source)) return
          throw error
        }
        let unicode = true
        try {
          new RegExp(source, 'u')
        } catch {
          unicode = false
        }
        // RegExp on each line alone, tried at every character's start (V8 also tries empty matches
        // inside a surrogate pair, where /\B/u matches 'a😀a'; the standard does not). Without the m
        // flag and with s, as grep reads a line: '^' and '$' at its ends only, '.' any character ('\r' too).
        const sticky = new RegExp(unicodeWords(source), (caseSensitive ? '' : 'i') + (unicode ? 'suy' : 'sy'))
        const matches = (line: string) => {
          for (let at = 0; at <= line.length; at++) {
            const inside = unicode && at > 0 && /[\uD800-\uDBFF]/.test(line[at - 1]) && /[\uDC00-\uDFFF]/.test(line[at] ?? '')
            sticky.lastIndex = at
            if (!inside && sticky.test(line)) return true
          }
          return false
        }
        const lines = body.split('\n')
        if (lines[lines.length - 1] === '') lines.pop()
        const found: number[] = []
        matcher.search(new TextEncoder().encode(body), 0, (match) => (found.push(match.line_number), true))
        expect([source, found]).toEqual([source, lines.flatMap((line, i) => (matches(line) ? [i + 1] : []))])
      }),
      { numRuns: 4000 },
    )
    // What it refuses has a backreference in it.
    expect(() => new LineMatcher({ pattern: '(a)(b)\\2', regex: true, caseSensitive: true })).toThrow(UnsupportedPattern)
  })
})
