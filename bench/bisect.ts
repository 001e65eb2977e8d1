/**
 * Section 10 of bench/run.ts: what ws.bisect costs around the test runs it makes. A project of
 * 10k files (1 KiB each) with a tiny node:test suite, and a history of 256 operations (edits of
 * the data files; one of them breaks the suite):
 *   - rewindfs: ws.bisect('node --test test/') over the workspace's history (overlay mode);
 *   - shadow git: the same history as 256 commits of a git repository holding the project, and
 *     `git bisect run` (checkout + test per step), the peer a user would reach for;
 *   - the test runs themselves: the same command run directly in the project directory, as many
 *     times as each search ran it.
 * Goal: rewindfs's total within 1.2× of its own test runs. Printed: probes, the probes' own time
 * (ws.bisect's durationMs), the total and the overhead around the tests.
 * Also runnable alone: node --import tsx bench/bisect.ts [--quick].
 */
import { execFileSync, spawn } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Content, dirsFor, fmtCount, fmtMs, fmtRatio, layout, progress, table } from './lib.js'

export interface BisectBenchOptions {
  quick: boolean
  emit(markdown: string): void
}

const FULL = { files: 10_000, operations: 256, breakAt: 181 }
const QUICK = { files: 2_000, operations: 64, breakAt: 37 }

const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
const DIST_NODE_FS = new URL('../dist/adapters/node-fs/index.js', import.meta.url).href

const COMMAND = 'node --test test/'
const TEST = `import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sum } from '../src/sum.js'

test('sum adds', () => assert.equal(sum(2, 3), 5))
`
const GOOD = 'export const sum = (a, b) => a + b\n'
const BAD = 'export const sum = (a, b) => a - b\n'

async function load() {
  const core = (await import(DIST_ENTRY)) as typeof import('../src/index.js')
  const nodeFs = (await import(DIST_NODE_FS)) as typeof import('../adapters/node-fs/index.js')
  return { Workspace: core.Workspace, directory: nodeFs.directory }
}

/** The project: `files` × 1 KiB of data in directories of 1000, and the package with its test. */
function makeProject(files: number): { root: string; paths: string[] } {
  const root = nodeFs.mkdtempSync(join(tmpdir(), `rewindfs-bench-bisect-${files}-`))
  const { dirs, paths } = layout(files, dirsFor(files))
  for (const dir of dirs) nodeFs.mkdirSync(root + dir)
  const content = new Content()
  paths.forEach((path, i) => nodeFs.writeFileSync(root + path, content.stamp(i)))
  nodeFs.mkdirSync(join(root, 'src'))
  nodeFs.mkdirSync(join(root, 'test'))
  nodeFs.writeFileSync(join(root, 'package.json'), '{ "name": "bench", "type": "module", "private": true }\n')
  nodeFs.writeFileSync(join(root, 'src/sum.js'), GOOD)
  nodeFs.writeFileSync(join(root, 'test/sum.test.js'), TEST)
  return { root, paths }
}

/** Operation n of the history: the path it writes and the bytes (operation breakAt breaks sum). */
function step(n: number, paths: readonly string[], breakAt: number, content: Content): { path: string; bytes: Uint8Array } {
  if (n === breakAt) return { path: '/src/sum.js', bytes: new TextEncoder().encode(BAD) }
  return { path: paths[(n * 7919) % paths.length], bytes: content.stamp(1_000_000 + n) }
}

function direct(command: string, cwd: string): Promise<{ ms: number; code: number | null }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn('/bin/sh', ['-c', command], { cwd, stdio: 'ignore' })
    child.on('error', reject)
    child.on('close', (code) => resolve({ ms: performance.now() - started, code }))
  })
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'b@e', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'b@e' } })

export async function benchBisect(options: BisectBenchOptions): Promise<void> {
  const config = options.quick ? QUICK : FULL
  const { Workspace, directory } = await load()
  progress(`bisect: a project of ${fmtCount(config.files)} files, ${config.operations} operations`)
  const { root, paths } = makeProject(config.files)
  const shadow = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-bisect-git-'))
  try {
    /** The test run by itself `times` times in the project on disk, right after a search (the same load): total ms. */
    const alone = async (times: number) => {
      let ms = 0
      for (let i = 0; i < times; i++) {
        const run = await direct(COMMAND, root)
        if (run.code !== 0) throw new Error(`${COMMAND} fails in the project before any operation`)
        ms += run.ms
      }
      return ms
    }

    // rewindfs: the history in a workspace, then ws.bisect.
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    const content = new Content()
    for (let n = 1; n <= config.operations; n++) {
      const { path, bytes } = step(n, paths, config.breakAt, content)
      ws.fs.writeFileSync(path, bytes)
    }
    const breaking = ws.history().reverse()[config.breakAt - 1].id
    // Earlier sections' (and this project's) dirty pages are not this search's cost: a disk busy
    // writing them back slows every mount and directory made in it (1.56x after the 2 GiB history section).
    execFileSync('sync')
    const started = performance.now()
    const result = await ws.bisect(COMMAND)
    const total = performance.now() - started
    await ws.close()
    if (result.suspects.length !== 1 || result.suspects[0].id !== breaking) throw new Error(`ws.bisect blamed ${result.suspects.map((op) => op.id).join(', ')}, not ${breaking}`)
    const probeMs = result.probes.reduce((sum, p) => sum + p.durationMs, 0)
    const probes = result.probes.length
    const testsMs = await alone(probes)

    // Shadow git: the same history as commits, then git bisect run.
    progress('bisect: building the shadow git history')
    nodeFs.cpSync(root, shadow, { recursive: true })
    git(shadow, 'init', '-q')
    git(shadow, 'add', '-A')
    git(shadow, 'commit', '-q', '-m', 'start')
    const good = git(shadow, 'rev-parse', 'HEAD').trim()
    const replay = new Content()
    for (let n = 1; n <= config.operations; n++) {
      const { path, bytes } = step(n, paths, config.breakAt, replay)
      nodeFs.writeFileSync(shadow + path, bytes)
      git(shadow, 'commit', '-q', '-a', '-m', `operation ${n}`)
    }
    const breakingCommit = git(shadow, 'rev-list', '--reverse', 'HEAD').trim().split('\n')[config.breakAt]
    progress('bisect: git bisect run')
    execFileSync('sync')
    const gitStarted = performance.now()
    git(shadow, 'bisect', 'start', 'HEAD', good)
    const output = git(shadow, 'bisect', 'run', 'sh', '-c', COMMAND)
    const gitTotal = performance.now() - gitStarted
    git(shadow, 'bisect', 'reset')
    if (!output.includes(`${breakingCommit} is the first bad commit`)) throw new Error(`git bisect run did not name operation ${config.breakAt}: ${output.slice(-500)}`)
    const gitSteps = (output.match(/^running /gm) ?? []).length
    const gitTestsMs = await alone(gitSteps)

    const rows = [
      ['rewindfs ws.bisect (overlay mode)', String(probes), fmtMs(probeMs), `**${fmtMs(total)}**`, fmtMs(testsMs), `**${fmtRatio(total / testsMs)}**`, fmtMs((total - testsMs) / probes)],
      ['shadow git: git bisect run (checkout + test)', String(gitSteps), '', fmtMs(gitTotal), fmtMs(gitTestsMs), fmtRatio(gitTotal / gitTestsMs), fmtMs((gitTotal - gitTestsMs) / gitSteps)],
    ]
    const ratio = total / testsMs
    options.emit(
      `### 10. Which operation broke it: ws.bisect (\`bench/bisect.ts\`)\n\n` +
        `A project of ${fmtCount(config.files)} × 1 KiB files with a node:test suite; ${config.operations} operations, number ${config.breakAt} breaks the suite. ` +
        `"The same test runs alone": \`${COMMAND}\` run directly in the project as many times as the search ran it, right after it.\n\n` +
        table(['search', 'test runs', "probes' own time", 'total', 'the same test runs alone', 'total / test runs', 'overhead per run'], rows) +
        `\n\nrewindfs probes \`to\` and \`from\` only when the answer rests on them and runs the blamed state twice (a flaky command is reported, not blamed); git bisect run takes both ends on trust and runs each step once.\n\n` +
        `- rewindfs total / its test runs: ${fmtRatio(ratio)} (goal ≤ 1.2×) ${ratio <= 1.2 ? '✅' : '❌'}; per run ${fmtMs(total / probes)} vs git's ${fmtMs(gitTotal / gitSteps)}`,
    )
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
    nodeFs.rmSync(shadow, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchBisect({ quick: process.argv.includes('--quick'), emit: (markdown) => process.stdout.write(markdown + '\n') })
}
