/**
 * search_files on files whose lines end in CRLF (or hold a lone '\r', U+2028, U+2029), against real
 * grep over the same files on disk: only '\n' ends a line, as grep and ripgrep (without --crlf) read
 * a file. JavaScript's RegExp m flag takes '\r' as a line end too, and the search followed it: '^$'
 * matched every line of a CRLF file and 'a$' its lines ending in "a\r", while 'a.$' matched none.
 * Every output mode is compared (content's line numbers, files_with_matches, count), on a directory
 * lower read straight from disk and on the same files written through the workspace. The lines
 * shown are read_file's: a CRLF file's without the '\r' before each newline, a mixed one's as grep
 * prints them ('\r' and all; they lost it, so an old_string copied from one did not match).
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

let tmp: string
beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-search-crlf-')))
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** A small generator with a seed, so the generated files are the same on every run. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
}

const FILES: Record<string, string> = {
  'crlf.txt': 'a\r\n\r\nb\r\n',
  'mixed.txt': 'a\n\r\na\r\n\nend', // LF, CRLF, no end of line
  'cr-only.txt': 'a\rb\r', // old Mac endings: one line to grep
  'separators.txt': 'x\u2028y\nx\u2029y\n', // one line each
  'plain.txt': 'a\n\nb\n',
  // '^$' past the first chunks files_with_matches scans (4 KiB, then doubling) and a line cut by one.
  'big-crlf.txt': 'line\r\n'.repeat(2000) + '\n' + 'end\r\n',
}
{
  const next = random(7)
  const chars = ['a', 'b', ' ', '\r', '\n', '\r\n', 'é', '\u2028', '.']
  for (let i = 0; i < 30; i++) FILES[`gen/${i}.txt`] = Array.from({ length: Math.floor(next() * 60) }, () => chars[Math.floor(next() * chars.length)]).join('')
}

/**
 * A pattern for search_files, and grep's spelling of it (ERE, with a raw CR where the pattern has
 * \r), run in a UTF-8 locale ('.' is one character, 'é' a word character to \b) unless `bytes`.
 */
const PATTERNS: { input: Record<string, unknown>; grep: string[]; bytes?: boolean }[] = [
  { input: { pattern: '^$', regex: true }, grep: ['-E', '^$'] },
  { input: { pattern: 'a$', regex: true }, grep: ['-E', 'a$'] },
  { input: { pattern: 'a.$', regex: true }, grep: ['-E', 'a.$'] },
  { input: { pattern: '^.$', regex: true }, grep: ['-E', '^.$'] },
  { input: { pattern: '^b', regex: true }, grep: ['-E', '^b'] },
  { input: { pattern: '^y|x$', regex: true }, grep: ['-E', '^y|x$'] },
  { input: { pattern: '^x.y$', regex: true }, grep: ['-E', '^x.y$'] },
  { input: { pattern: '\\r$', regex: true }, grep: ['-E', '\r$'] },
  { input: { pattern: '^\\r?$', regex: true }, grep: ['-E', '^\r?$'] },
  { input: { pattern: '[^a]$', regex: true }, grep: ['-E', '[^a]$'] },
  { input: { pattern: '\\s$', regex: true }, grep: ['-E', '[[:space:]]$'] },
  { input: { pattern: 'a\\b', regex: true }, grep: ['-E', 'a\\b'] },
  { input: { pattern: '^a$|^b$', regex: true }, grep: ['-E', '^a$|^b$'] },
  { input: { pattern: 'A$', regex: true, case_sensitive: false }, grep: ['-E', '-i', 'A$'] },
  { input: { pattern: '(?i)^B', regex: true }, grep: ['-E', '-i', '^B'] },
  { input: { pattern: 'é.', regex: true }, grep: ['-E', 'é.'] },
  { input: { pattern: 'a' }, grep: ['-F', 'a'] },
  { input: { pattern: 'A', case_sensitive: false }, grep: ['-F', '-i', 'A'] },
]

/** read_file's rule: a file is CRLF (shown with LF ends) when it has a newline and a '\r' before every one. */
function isCrlf(content: string): boolean {
  return content.includes('\n') && !/(?:^|[^\r])\n/.test(content)
}

/** grep's output, also when it exits 1 (no line matched). */
function run(args: string[], options: { cwd?: string; bytes?: boolean }): string {
  try {
    return execFileSync('grep', args, { cwd: options.cwd, env: { LC_ALL: options.bytes ? 'C' : 'C.UTF-8', PATH: process.env.PATH } }).toString('utf8')
  } catch (error) {
    if ((error as { status?: number }).status !== 1) throw error
    return String((error as { stdout?: Buffer }).stdout ?? '')
  }
}

/** grep -r over `root` with `flags` then `args`, its lines as [workspace path, rest] (the rest as grep printed it). */
function grep(root: string, flags: string[], args: string[], bytes?: boolean): [string, string][] {
  const pattern = args[args.length - 1]
  return run(['-r', ...flags, ...args.slice(0, -1), '-e', pattern, '.'], { cwd: root, bytes })
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const colon = line.indexOf(':')
      return colon === -1 ? [line.slice(1), ''] : [line.slice(1, colon), line.slice(colon + 1)]
    })
}

async function every(tools: readonly AgentTool[], input: Record<string, unknown>): Promise<Json[]> {
  const pages: Json[] = []
  for (let offset: number | undefined = 0; offset !== undefined; ) {
    const outcome = await callTool(tools, 'search_files', { path: '/', include_ignored: true, max_results: 1000, ...input, offset })
    if (outcome.isError) throw new Error(`search_files failed: ${outcome.error.code} ${outcome.error.message}`)
    const page: Json = outcome.result
    pages.push(page)
    offset = page.next_offset
  }
  return pages
}

describe('search_files reads lines as grep does: only a newline ends one', () => {
  let lower: string
  beforeAll(() => {
    lower = path.join(tmp, 'lower')
    for (const [rel, content] of Object.entries(FILES)) {
      fs.mkdirSync(path.dirname(path.join(lower, rel)), { recursive: true })
      fs.writeFileSync(path.join(lower, rel), content)
    }
  })

  it('grep itself: "^$" and "a$" match nothing in a CRLF file, "a.$" its first line, which grep -n prints with its CR', () => {
    const crlf = path.join(lower, 'crlf.txt')
    expect(run(['-n', '^$', crlf], {})).toBe('')
    expect(run(['-c', 'a$', crlf], {})).toBe('0\n')
    expect(run(['-n', 'a.$', crlf], {})).toBe('1:a\r\n')
  })

  for (const kind of ['directory', 'written'] as const) {
    it(`finds the lines, files and counts grep -rn, -rl and -rc find (${kind === 'directory' ? 'a directory lower, read from disk' : 'files written through the workspace'})`, async () => {
      const ws = await Workspace.open({ lower: kind === 'directory' ? directory(lower) : {}, autoCheckpoint: false })
      if (kind === 'written') {
        for (const [rel, content] of Object.entries(FILES)) {
          ws.fs.mkdirSync(path.dirname('/' + rel), { recursive: true })
          ws.fs.writeFileSync('/' + rel, content)
        }
      }
      const tools = createAgentTools(ws)
      for (const { input, grep: args, bytes } of PATTERNS) {
        const lines = grep(lower, ['-n'], args, bytes).map(([file, rest]) => {
          const colon = rest.indexOf(':')
          const number = Number(rest.slice(0, colon))
          // The line as search_files shows it: as grep prints it, but in a CRLF file without the '\r' before its newline, as read_file shows it.
          const text = rest.slice(colon + 1)
          const content = FILES[file.slice(1)]
          const cut = isCrlf(content) && number < content.split('\n').length && text.endsWith('\r')
          return `${file}:${number}:${cut ? text.slice(0, -1) : text}`
        })
        const found = (await every(tools, input)).flatMap((page) => page.matches.map((match: Json) => `${match.path}:${match.line_number}:${match.line}`))
        expect([input, found.sort()]).toEqual([input, lines.sort()])

        const files = (await every(tools, { ...input, output_mode: 'files_with_matches' })).flatMap((page) => page.files)
        expect([input, files.sort()]).toEqual([input, grep(lower, ['-l'], args, bytes).map(([file]) => file).sort()])

        const counts = (await every(tools, { ...input, output_mode: 'count' })).flatMap((page) => page.counts.map((entry: Json) => `${entry.path}:${entry.count}`))
        const counted = grep(lower, ['-c'], args, bytes).filter(([, count]) => count !== '0').map(([file, count]) => `${file}:${count}`)
        expect([input, counts.sort()]).toEqual([input, counted.sort()])
      }
      await ws.close()
    })
  }

  it("shows a line of a mixed-endings file as read_file and grep do, '\\r' and all, and a CRLF file's as read_file does", async () => {
    const root = path.join(tmp, 'shown')
    const files: Record<string, string> = {
      'mixed.txt': 'one\r\ntwo\nthree\r\nfour\n', // a '\r' before some newlines only: read_file shows it as it is
      'crlf.txt': 'one\r\ntwo\r\nthree\r\nfour\r', // CRLF, its last line ending in a '\r' of its own
      'lf.txt': 'one\ntwo\rx\nthree\n', // a '\r' inside a line of an LF file
    }
    fs.mkdirSync(root, { recursive: true })
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(root, name), content)
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    const tools = createAgentTools(ws)
    for (const name of Object.keys(files)) {
      const read = await callTool(tools, 'read_file', { path: `/${name}` })
      if (read.isError) throw new Error(read.error.message)
      const shownLines: string[] = (read.result as Json).content.split('\n')
      // Every line, each with the lines around it.
      const [page] = await every(tools, { pattern: '.', regex: true, path: `/${name}`, context_lines: 1 })
      const found: Json[] = page.matches
      expect([name, found.map((match) => match.line)]).toEqual([name, shownLines])
      for (const match of found) {
        expect([name, match.before ?? []]).toEqual([name, shownLines.slice(Math.max(0, match.line_number - 2), match.line_number - 1)])
        expect([name, match.after ?? []]).toEqual([name, shownLines.slice(match.line_number, match.line_number + 1)])
      }
      // grep -n prints the '\r's of a mixed or LF file's lines too.
      if (!isCrlf(files[name])) expect([name, found.map((match) => `${match.line_number}:${match.line}`)]).toEqual([name, run(['-n', '', path.join(root, name)], {}).split('\n').slice(0, -1)])
    }
    await ws.close()
  })
})
