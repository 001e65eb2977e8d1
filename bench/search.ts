/**
 * Section 8 of bench/run.ts: the agent tools' search over a large project directory, side by side
 * with the Unix tools on the same directory (page cache warm for both, medians of several runs):
 *   - search_files (literal: no match, and a rare word; a regular expression) vs `grep -rn`;
 *   - search_files honouring .gitignore (the default) vs `grep -rn`;
 *   - search_files with 100 files changed in the workspace (read through the overlay) vs `grep -rn`;
 *   - find_files with a glob matching 7 500 of the files (every .ts file in a p0 directory) vs `find -path`.
 * The workspace's lower is the directory itself (nothing changed: every file read straight from
 * disk). Target: search within 2× of grep -rn at 100k files / 500 MB. Every run checks it found
 * what grep found. Run alone: node --import tsx bench/search.ts [--quick]
 */
import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { fmtBytes, fmtCount, fmtMs, fmtRatio, median, progress, table, timeAsync } from './lib.js'

export interface SearchBenchOptions {
  quick: boolean
  emit(markdown: string): void
}

const FULL = { files: 100_000, fileBytes: 5_000, runs: 5 }
const QUICK = { files: 5_000, fileBytes: 5_000, runs: 3 }
const WORDS = ['const', 'function', 'return', 'import', 'export', 'value', 'index', 'result', 'await', 'async', 'if', 'else', 'for', 'let', 'this', 'new', 'Map', 'string', 'number', 'throw', 'Error']
/** One line in this many holds the rare word: about 200 matches at 100k files. */
const RARE_EVERY = 50_000

/** The project: `files` source files of about `fileBytes` each, 100 per directory, two levels deep. */
function generate(root: string, files: number, fileBytes: number): number {
  let seed = 42
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
  let bytes = 0
  for (let i = 0; i < files; i++) {
    const dir = `${root}/src/m${i % 100}/p${Math.floor(i / 100) % 10}`
    if (i < 1000) nodeFs.mkdirSync(dir, { recursive: true })
    const lines: string[] = []
    let size = 0
    while (size < fileBytes) {
      let line = '  '
      for (let w = 0; w < 8; w++) line += WORDS[Math.floor(random() * WORDS.length)] + ' '
      if (random() * RARE_EVERY < 1) line += 'needle_rare '
      lines.push(line)
      size += line.length + 1
    }
    const text = lines.join('\n') + '\n'
    nodeFs.writeFileSync(`${dir}/f${i}.${i % 4 === 0 ? 'js' : 'ts'}`, text)
    bytes += text.length
  }
  nodeFs.writeFileSync(`${root}/.gitignore`, 'node_modules/\n*.log\ndist/\n')
  return bytes
}

/** Output lines of a command that may find nothing (grep's exit 1). */
function lines(command: string, args: string[], cwd: string): number {
  try {
    return execFileSync(command, args, { cwd, env: { ...process.env, LC_ALL: 'C' }, maxBuffer: 1 << 30 }).toString().split('\n').filter(Boolean).length
  } catch (error) {
    if ((error as { status?: number }).status === 1) return 0
    throw error
  }
}

export async function benchSearch(options: SearchBenchOptions): Promise<void> {
  const config = options.quick ? QUICK : FULL
  const scratch = nodeFs.mkdtempSync(`${tmpdir()}/rewindfs-bench-search-`)
  try {
    const root = `${scratch}/project`
    progress(`search: writing ${fmtCount(config.files)} files`)
    const bytes = generate(root, config.files, config.fileBytes)
    // The built package, as users install it.
    const { Workspace } = (await import(new URL('../dist/src/index.js', import.meta.url).href)) as typeof import('../src/index.js')
    const { directory } = (await import(new URL('../dist/adapters/node-fs/index.js', import.meta.url).href)) as typeof import('../adapters/node-fs/index.js')
    const { callTool, createAgentTools } = (await import(new URL('../dist/tools/index.js', import.meta.url).href)) as typeof import('../tools/index.js')
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    const tools = createAgentTools(ws, { budget: { chars: 10_000_000 } })

    const search = async (input: Record<string, unknown>): Promise<number> => {
      const outcome = await callTool(tools, 'search_files', { path: '/', max_results: 1000, ...input })
      if (outcome.isError) throw new Error(`search_files failed: ${outcome.error.message}`)
      const result = outcome.result as { returned: number; truncated: boolean }
      if (result.truncated) throw new Error('search_files stopped early: the bench pattern matches too often')
      return result.returned
    }
    const find = async (input: Record<string, unknown>): Promise<number> => {
      const outcome = await callTool(tools, 'find_files', { path: '/', max_results: 10_000, ...input })
      if (outcome.isError) throw new Error(`find_files failed: ${outcome.error.message}`)
      return (outcome.result as { total?: number; returned: number }).total ?? -1
    }
    /** Median time of `runs` runs after one warming run; the count each found must agree. */
    const measure = async (label: string, body: () => Promise<number> | number): Promise<{ ms: number; found: number }> => {
      const found = await body()
      const times: number[] = []
      for (let run = 0; run < config.runs; run++) times.push(await timeAsync(async () => body()))
      progress(`search: ${label}: ${fmtMs(median(times))} (${found} found)`)
      return { ms: median(times), found }
    }
    const rows: string[][] = []
    const compare = async (label: string, ours: () => Promise<number>, peerLabel: string, peer: () => number, target: string) => {
      const a = await measure(label, ours)
      const b = await measure(peerLabel, peer)
      if (a.found !== b.found) throw new Error(`${label} found ${a.found}, ${peerLabel} ${b.found}`)
      rows.push([label, fmtMs(a.ms), peerLabel, fmtMs(b.ms), fmtRatio(a.ms / b.ms), target, fmtCount(a.found)])
    }
    const grep = (flags: string, pattern: string) => () => lines('grep', [`-rn${flags}`, '--exclude=.gitignore', '-e', pattern, '.'], root)

    await compare('search_files, literal, no match', () => search({ pattern: 'absent_zq', include_ignored: true }), 'grep -rnF', grep('F', 'absent_zq'), '≤ 2×')
    await compare('search_files, literal, a rare word', () => search({ pattern: 'needle_rare', include_ignored: true }), 'grep -rnF', grep('F', 'needle_rare'), '≤ 2×')
    await compare('search_files, regex needle_r[a-z]+e', () => search({ pattern: 'needle_r[a-z]+e', regex: true, include_ignored: true }), 'grep -rnE', grep('E', 'needle_r[a-z]+e'), '')
    await compare('search_files, .gitignore honoured', () => search({ pattern: 'needle_rare' }), 'grep -rnF', grep('F', 'needle_rare'), '')
    // A glob matching under find_files' max_results (10 000), so the tool returns a total to check.
    await compare("find_files '**/p0/*.ts'", () => find({ pattern: '**/p0/*.ts', include_ignored: true }), "find -type f -path '*/p0/*.ts'", () => lines('find', ['.', '-type', 'f', '-path', '*/p0/*.ts'], root), '')

    // 100 files changed in the workspace (and on disk alike, so grep sees the same): their
    // directories are read through the overlay, the rest of the tree still from disk.
    for (let i = 0; i < 100; i++) {
      const path = `/src/m${i}/p0/f${i}.${i % 4 === 0 ? 'js' : 'ts'}`
      const text = `// changed\n  needle_changed in a changed file\n`
      ws.fs.writeFileSync(path, text)
      nodeFs.writeFileSync(root + path, text)
    }
    await compare('search_files, 100 files changed', () => search({ pattern: 'needle_changed', include_ignored: true }), 'grep -rnF', grep('F', 'needle_changed'), '')
    await ws.close()

    options.emit(
      `### 8. Agent search tools (\`bench/search.ts\`)\n\n` +
        `${fmtCount(config.files)} files, ${fmtBytes(bytes)}, in 1 000 directories on ${tmpdir()}; the workspace's lower is that directory. ` +
        `Median of ${config.runs} runs after a warming run (page cache warm for every subject).\n\n` +
        table(['rewindfs', 'time', 'peer', 'time', 'ratio', 'target', 'found'], rows),
    )
  } finally {
    nodeFs.rmSync(scratch, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchSearch({ quick: process.argv.includes('--quick'), emit: (markdown) => console.log(markdown + '\n') })
}
