/**
 * search_files' word characters against real grep -E in a UTF-8 locale and ripgrep, over the same
 * files on disk: \w, \W, \b and \B (and \w, \W in a bracket class) take é, ß, Ж, 中, ١ as letters
 * and digits, as ripgrep documents (\w is [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]). They
 * took RegExp's ASCII ones: '\bcafé\b' found nothing, '\bStra\b' found "Straße", '^\w+$' no Russian
 * word. GNU grep's \w leaves out combining marks and connectors other than '_' (it cuts हिन्दी), so
 * the files with those are compared with ripgrep alone, when it is installed (Debian's ripgrep).
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { grepCounters } from '../tools/grep.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'
import { capability } from './support/require.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

/** Where grep and ripgrep agree on every character. */
const COMMON: Record<string, string> = {
  'words.txt': [
    'café au lait',
    'le café.',
    'cafés crème',
    'CAFÉ NOIR',
    'Straße und Strasse',
    'Жук жук ЖУК',
    'Ёлка',
    'Ωμέγα',
    '中文字 test',
    'かな 한국어',
    '١٢٣ digits ५६७',
    '𝐀bc astral',
    '😀 emoji 😀',
    'naïve ÉCOLE',
    'snake_case x-y',
    'Ⅻ ² ½',
    'ǅ ª',
    '___',
    '-- !! --',
    'x-y',
    '',
  ].join('\n'),
  'code.py': ['# Größe des Puffers', 'def größe(x): return x  # вычислить', 'total_sum = 0  # 合計', 'print("Привет, мир")', 'ελληνικά=1', ''].join('\n'),
}

/** Combining marks, a connector and a joiner: word characters to ripgrep, not to GNU grep. */
const MARKS: Record<string, string> = {
  'marks.txt': ['e\u0301te\u0301 decomposed', 'hindi हिन्दी', 'zwj a\u200db', 'foo\u203fbar', 'x\u0301', ''].join('\n'),
}

/** A pattern for search_files, its spelling for grep -E (none where ERE cannot say it) and for ripgrep. */
interface Case {
  readonly input: Record<string, unknown>
  readonly grep?: readonly string[]
  readonly rg: readonly string[]
}

const same = (pattern: string, ...flags: string[]): Pick<Case, 'grep' | 'rg'> => ({ grep: [...flags, pattern], rg: [...flags, pattern] })

const CASES: readonly Case[] = [
  { input: { pattern: '\\bcafé\\b', regex: true }, ...same('\\bcafé\\b') },
  { input: { pattern: '\\bcaf\\b', regex: true }, ...same('\\bcaf\\b') },
  { input: { pattern: '\\bStra\\b', regex: true }, ...same('\\bStra\\b') },
  { input: { pattern: '\\bgr\\b', regex: true }, ...same('\\bgr\\b') },
  { input: { pattern: '^\\w+$', regex: true }, ...same('^\\w+$') },
  { input: { pattern: '^\\w+ \\w+$', regex: true }, ...same('^\\w+ \\w+$') },
  { input: { pattern: '\\w\\W\\w', regex: true }, ...same('\\w\\W\\w') },
  { input: { pattern: '\\Bé', regex: true }, ...same('\\Bé') },
  { input: { pattern: 'é\\b', regex: true }, ...same('é\\b') },
  { input: { pattern: 'é\\B', regex: true }, ...same('é\\B') },
  { input: { pattern: '\\b\\w{5}\\b', regex: true }, ...same('\\b\\w{5}\\b') },
  { input: { pattern: '\\W$', regex: true }, ...same('\\W$') },
  { input: { pattern: '^\\W+$', regex: true }, ...same('^\\W+$') },
  { input: { pattern: '\\b١٢٣\\b', regex: true }, ...same('\\b١٢٣\\b') },
  { input: { pattern: '𝐀\\b|\\b𝐀', regex: true }, ...same('𝐀\\b|\\b𝐀') },
  { input: { pattern: '\\B_', regex: true }, ...same('\\B_') },
  // Classes: ERE reads '\w' in brackets as '\' and 'w', so grep's spelling is [[:alnum:]_].
  { input: { pattern: '^[\\w-]+ [\\w-]+$', regex: true }, grep: ['^[[:alnum:]_-]+ [[:alnum:]_-]+$'], rg: ['^[\\w-]+ [\\w-]+$'] },
  { input: { pattern: '^[^\\W]+$', regex: true }, grep: ['^[[:alnum:]_]+$'], rg: ['^[^\\W]+$'] },
  { input: { pattern: '[^\\w ]', regex: true }, grep: ['[^[:alnum:]_ ]'], rg: ['[^\\w ]'] },
  { input: { pattern: '^[^\\w\\s]+$', regex: true }, grep: ['^[^[:alnum:]_[:space:]]+$'], rg: ['^[^\\w\\s]+$'] },
  { input: { pattern: '[a\\W]b', regex: true }, grep: ['(a|\\W)b'], rg: ['[a\\W]b'] },
  { input: { pattern: '^[^a\\W]+ ', regex: true }, rg: ['^[^a\\W]+ '] },
  { input: { pattern: '[\\w\\W]', regex: true }, grep: ['.'], rg: ['[\\w\\W]'] },
  // ripgrep's [[:word:]] and [[:^word:]] are ASCII, as grep's [0-9A-Za-z_] is.
  { input: { pattern: '^caf[[:^word:]]', regex: true }, grep: ['^caf[^0-9A-Za-z_]'], rg: ['^caf[[:^word:]]'] },
  { input: { pattern: '^[[:word:]]+$', regex: true }, grep: ['^[0-9A-Za-z_]+$'], rg: ['^[[:word:]]+$'] },
  { input: { pattern: '[x[:^word:]]y', regex: true }, grep: ['(x|[^0-9A-Za-z_])y'], rg: ['[x[:^word:]]y'] },
  // Case-insensitive.
  { input: { pattern: '(?i)\\bcafé\\b', regex: true }, grep: ['-i', '\\bcafé\\b'], rg: ['(?i)\\bcafé\\b'] },
  { input: { pattern: '\\bжук\\b', regex: true, case_sensitive: false }, ...same('\\bжук\\b', '-i') },
  { input: { pattern: '\\bÉCOLE\\b|^ω\\w+$', regex: true, case_sensitive: false }, ...same('\\bÉCOLE\\b|^ω\\w+$', '-i') },
  // Outside JavaScript's Unicode mode ('\-' and Annex B's [a-\w] are invalid in it): the same words.
  { input: { pattern: 'x\\-y|\\bé|\\bжук\\b', regex: true }, grep: ['x-y|\\bé|\\bжук\\b'], rg: ['x\\-y|\\bé|\\bжук\\b'] },
  { input: { pattern: '[a-\\w]é\\b|^\\w+\\-', regex: true }, grep: ['[-a[:alnum:]_]é\\b|^\\w+-'], rg: ['[-a\\w]é\\b|^\\w+\\-'] },
  { input: { pattern: '\\B\\-\\B|^[\\W]+$', regex: true }, grep: ['\\B-\\B|^\\W+$'], rg: ['\\B\\-\\B|^[\\W]+$'] },
  // Literals are bytes: no word characters in them.
  { input: { pattern: 'Größe' }, grep: ['-F', 'Größe'], rg: ['-F', 'Größe'] },
]

let tmp: string
beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-search-unicode-')))
  for (const [dir, files] of [
    ['common', COMMON],
    ['marks', MARKS],
  ] as const) {
    for (const [rel, content] of Object.entries(files)) {
      fs.mkdirSync(path.join(tmp, dir), { recursive: true })
      fs.writeFileSync(path.join(tmp, dir, rel), content)
    }
  }
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** A command's output in a UTF-8 locale, also when it exits 1 (no line matched). */
function run(command: string, args: readonly string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, env: { LC_ALL: 'C.UTF-8', PATH: process.env.PATH } }).toString('utf8')
  } catch (error) {
    if ((error as { status?: number }).status !== 1) throw error
    return String((error as { stdout?: Buffer }).stdout ?? '')
  }
}

function installed(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** grep -rn -E (or rg -n) run in `dir` under the root, its lines as workspace paths: '/dir/file:line:text'. */
function oracle(command: 'grep' | 'rg', dir: string, spelling: readonly string[], mode: string[] = ['-n']): string[] {
  const flags = spelling.slice(0, -1)
  const pattern = spelling[spelling.length - 1]
  const args =
    command === 'grep'
      ? ['-r', ...mode, ...(flags.includes('-F') ? [] : ['-E']), ...flags, '-e', pattern, '.']
      : ['--no-config', '--no-heading', '--with-filename', '--color', 'never', '--no-ignore', '--hidden', ...mode, ...flags, '-e', pattern, '.']
  return run(command, args, path.join(tmp, dir))
    .split('\n')
    .filter(Boolean)
    .map((line) => `/${dir}${line.slice(1)}`)
    .sort()
}

async function every(tools: readonly AgentTool[], input: Record<string, unknown>): Promise<Json[]> {
  const pages: Json[] = []
  for (let offset: number | undefined = 0; offset !== undefined; ) {
    const outcome = await callTool(tools, 'search_files', { include_ignored: true, max_results: 1000, ...input, offset })
    if (outcome.isError) throw new Error(`search_files failed: ${outcome.error.code} ${outcome.error.message}`)
    const page: Json = outcome.result
    pages.push(page)
    offset = page.next_offset
  }
  return pages
}

async function lines(tools: readonly AgentTool[], input: Record<string, unknown>): Promise<string[]> {
  return (await every(tools, input)).flatMap((page) => page.matches.map((match: Json) => `${match.path}:${match.line_number}:${match.line}`)).sort()
}

describe('search_files takes word characters as grep in a UTF-8 locale and ripgrep do', () => {
  let ws: Workspace
  let tools: readonly AgentTool[]
  beforeAll(async () => {
    ws = await Workspace.open({ lower: directory(tmp), autoCheckpoint: false })
    tools = createAgentTools(ws)
  })
  afterAll(() => ws.close())

  it('grep itself: é is a letter to \\b and \\w under LC_ALL=C.UTF-8, and \\w in brackets is two characters', () => {
    const words = path.join(tmp, 'common', 'words.txt')
    expect(run('grep', ['-oE', '\\bcafé\\b', words], tmp)).toBe('café\ncafé\n')
    expect(run('grep', ['-oE', '^\\w+', words], tmp).split('\n')).toContain('Straße')
    expect(run('grep', ['-cE', '[\\w]', words], tmp)).toBe('0\n')
  })

  it('finds the lines, files and counts grep -rn, -rl and -rc find', async () => {
    for (const { input, grep } of CASES) {
      if (grep === undefined) continue
      const at = { ...input, path: '/common' }
      expect([input, await lines(tools, at)]).toEqual([input, oracle('grep', 'common', grep)])
      const files = (await every(tools, { ...at, output_mode: 'files_with_matches' })).flatMap((page) => page.files).sort()
      expect([input, files]).toEqual([input, oracle('grep', 'common', grep, ['-l'])])
      const counts = (await every(tools, { ...at, output_mode: 'count' })).flatMap((page) => page.counts.map((entry: Json) => `${entry.path}:${entry.count}`)).sort()
      expect([input, counts]).toEqual([input, oracle('grep', 'common', grep, ['-c']).filter((line) => !line.endsWith(':0'))])
    }
  })

  it.skipIf(!capability('ripgrep', installed('rg') ? undefined : 'rg is not installed (apt-get install ripgrep)'))('finds the lines ripgrep finds, combining marks, connectors and joiners included', async () => {
    for (const { input, rg } of CASES) {
      for (const dir of ['common', 'marks']) expect([input, dir, await lines(tools, { ...input, path: `/${dir}` })]).toEqual([input, dir, oracle('rg', dir, rg)])
    }
  })

  it('no longer takes a letter next to a word for a boundary, nor cuts a word at its first non-ASCII letter', async () => {
    expect(await lines(tools, { pattern: '\\bcafé\\b', regex: true, path: '/common' })).toEqual(['/common/words.txt:1:café au lait', '/common/words.txt:2:le café.'])
    expect(await lines(tools, { pattern: '\\bStra\\b|\\bcaf\\b|\\bgr\\b', regex: true })).toEqual([])
    expect(await lines(tools, { pattern: '^\\w+$', regex: true, path: '/common/words.txt' })).toEqual(['/common/words.txt:18:___', '/common/words.txt:7:Ёлка', '/common/words.txt:8:Ωμέγα'])
    expect(await lines(tools, { pattern: '^[\\w\\-]+$', regex: true, path: '/marks' })).toEqual(['/marks/marks.txt:4:foo\u203fbar', '/marks/marks.txt:5:x\u0301'])
  })

  it("finds '\\bword\\b' by RegExp alone, looking one way for the word character a boundary needs, not both ways at every position", async () => {
    const { Parser, prefilter } = await import('../tools/linear-regex.js')
    const scanOf = (pattern: string, unicode: boolean) => {
      const parser = new Parser(pattern, unicode)
      return prefilter(parser.parse(), parser.sets, unicode ? 'gmu' : 'gm')
    }
    for (const [pattern, unicode] of [
      ['\\bcafé\\b', true],
      ['\\b(?:foo|bar)\\B\\w', true],
      ['\\bfoo\\b|x\\-', false],
    ] as const) {
      const found = scanOf(pattern, unicode)
      // A look both ways ((?<=W)(?!W)|(?<!W)(?=W)) at a factor's start is tried at every position: '\bfoo\b' scanned 15 times slower.
      expect([pattern, found?.exact, /\(\?<=[^)]*\)\(\?!/.test(found?.scan.source ?? '')]).toEqual([pattern, true, false])
    }
    // Next to a part of no one kind, a boundary narrows the search and the automaton decides.
    expect(scanOf('\\b[a.]foo', true)).toMatchObject({ exact: false })
    const root = path.join(tmp, 'many')
    fs.mkdirSync(root, { recursive: true })
    fs.writeFileSync(path.join(root, 'many.txt'), 'le café, un cafés\n'.repeat(20_000))
    const before = grepCounters.steps
    expect((await every(tools, { pattern: '\\bcafé\\b', regex: true, path: '/many', output_mode: 'count' }))[0].counts).toEqual([{ path: '/many/many.txt', count: 20_000 }])
    // No automaton ran over the lines: a hit of the whole pattern is a match.
    expect(grepCounters.steps - before).toBeLessThan(1_000)
  })

  it('stays linear in the text over long lines of non-ASCII words', async () => {
    const root = path.join(tmp, 'long')
    fs.mkdirSync(root, { recursive: true })
    const text = ('слово '.repeat(3000) + '!\n').repeat(5) + 'größe '.repeat(5000) + '\n'
    fs.writeFileSync(path.join(root, 'long.txt'), text)
    // GNU grep itself takes minutes over (\w+[[:space:]]?)+$ on these lines (its backtracking matcher): that one's answer is spelt out.
    for (const [pattern, spelling] of [
      ['(\\w+\\s?)+$', undefined],
      ['^(\\b\\w+\\b\\W?)+$', '^(\\b\\w+\\b\\W?)+$'],
      ['^(\\w+\\W)+$', '^(\\w+\\W)+$'],
      ['[\\w-]+!|^\\w+ \\w+ !', '[[:alnum:]_-]+!|^\\w+ \\w+ !'],
    ]) {
      const before = grepCounters.steps
      const found = await lines(tools, { pattern, regex: true, path: '/long' })
      // Every character scanned a few times at most (the automaton, its prefilter), plus building its states.
      expect([pattern, grepCounters.steps - before <= 2 * text.length + 20_000]).toEqual([pattern, true])
      const where = (all: string[]) => all.map((line) => line.split(':', 2).join(':'))
      expect([pattern, where(found)]).toEqual([pattern, spelling === undefined ? ['/long/long.txt:6'] : where(oracle('grep', 'long', [spelling]))])
    }
  })
})
