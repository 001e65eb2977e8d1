/**
 * Section 9 of bench/run.ts: what ws.exec costs around a command.
 *   9.1 `true` and `echo hi > out.txt` in projects of 1k, 10k and 100k files (1 KiB each, 1000 per
 *       directory): the command run directly (spawned from Node in the project), ws.exec in overlay
 *       mode, and ws.exec in copy mode with its temp copy on disk (os.tmpdir()) and on /dev/shm.
 *       Targets: overlay overhead ≤ 30 ms at 100k files and flat (t100k / t1k ≤ 1.5); overlay ≥ 50×
 *       faster than copy mode at 10k.
 *   9.2 a real build: `tsc -p tsconfig.build.json` of this repository's own sources (a copy, with
 *       node_modules linked), run directly and through ws.exec in overlay mode. Target: ≤ 1.2×.
 * Every measure checks what it timed (the command's output and the change it recorded).
 * Also runnable alone: node --import tsx bench/exec.ts [--quick].
 */
import { spawn } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ExecOptions, ExecResult, Workspace } from '../src/index.js'
import { Content, dirsFor, fmtCount, fmtMs, fmtRatio, layout, median, progress, table } from './lib.js'

export interface ExecBenchOptions {
  quick: boolean
  emit(markdown: string): void
}

const FULL = { sizes: [1_000, 10_000, 100_000], samples: 15, copySamples: 3, copyLimitMs: 120_000, buildSamples: 3 }
const QUICK = { sizes: [1_000, 5_000], samples: 5, copySamples: 1, copyLimitMs: 20_000, buildSamples: 1 }

// The built package, as users install it (`npm run bench` builds first).
const DIST_ENTRY = new URL('../dist/src/index.js', import.meta.url).href
const DIST_NODE_FS = new URL('../dist/adapters/node-fs/index.js', import.meta.url).href
const REPO = new URL('..', import.meta.url).pathname

async function load() {
  const core = (await import(DIST_ENTRY)) as typeof import('../src/index.js')
  const nodeFs = (await import(DIST_NODE_FS)) as typeof import('../adapters/node-fs/index.js')
  return { Workspace: core.Workspace, directory: nodeFs.directory }
}

/** A project directory of `files` × 1 KiB. */
function makeProject(files: number): string {
  const root = nodeFs.mkdtempSync(join(tmpdir(), `rewindfs-bench-exec-${files}-`))
  const { dirs, paths } = layout(files, dirsFor(files))
  for (const dir of dirs) nodeFs.mkdirSync(root + dir)
  const content = new Content()
  paths.forEach((path, i) => nodeFs.writeFileSync(root + path, content.stamp(i)))
  return root
}

/** The command run directly: /bin/sh -c spawned from Node in `cwd`, as exec's runner spawns. */
function direct(command: string, cwd: string): Promise<{ ms: number; stdout: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn('/bin/sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ ms: performance.now() - started, stdout, code }))
  })
}

async function timedExec(ws: Workspace, command: string, options: ExecOptions): Promise<{ ms: number; result: ExecResult }> {
  const started = performance.now()
  const result = await ws.exec(command, options)
  return { ms: performance.now() - started, result }
}

const COMMANDS = [
  { name: '`true`', command: 'true', check: (r: ExecResult) => r.exitCode === 0 && r.changes.added.length === 0 },
  { name: '`echo hi > out.txt`', command: 'echo hi > out.txt', check: (r: ExecResult) => r.exitCode === 0 && r.changes.added.length + r.changes.modified.length === 1 },
]

export async function benchExec(options: ExecBenchOptions): Promise<void> {
  const config = options.quick ? QUICK : FULL
  const { Workspace, directory } = await load()
  const rows: string[][] = []
  const overlayAt = new Map<string, Map<number, number>>()
  const copyAt = new Map<string, Map<number, number>>()
  const overheadAt = new Map<string, Map<number, number>>()
  let modeNote = ''
  const shm = nodeFs.existsSync('/dev/shm') ? '/dev/shm' : undefined
  let copySkipped = false
  for (const files of config.sizes) {
    progress(`exec: a project of ${fmtCount(files)} files`)
    const root = makeProject(files)
    try {
      const ws = await Workspace.open({ lower: directory(root) })
      // The first exec probes the host and makes the session's layer: timed apart.
      const first = await timedExec(ws, 'true', {})
      modeNote = `overlay mode here: ${first.result.mode} (${first.result.modeReason})`
      if (first.result.mode !== 'overlay') progress(`exec: overlay mode does not run here: ${first.result.modeReason}`)
      for (const { name, command, check } of COMMANDS) {
        const directMs: number[] = []
        const overlayMs: number[] = []
        for (let i = 0; i < config.samples; i++) {
          const run = await direct(command, root)
          if (run.code !== 0) throw new Error(`${command} failed directly`)
          directMs.push(run.ms)
          nodeFs.rmSync(join(root, 'out.txt'), { force: true })
          const { ms, result } = await timedExec(ws, command, { mode: 'overlay' })
          if (!check(result)) throw new Error(`exec ${command} did not do what it should: ${JSON.stringify(result.changes)}`)
          overlayMs.push(ms)
          if (ws.fs.existsSync('/out.txt')) ws.fs.rmSync('/out.txt') // the next run creates it again
        }
        const copy = async (place: string | undefined) => {
          if (place === undefined || copySkipped) return NaN
          const times: number[] = []
          for (let i = 0; i < config.copySamples; i++) {
            const { ms, result } = await timedExec(ws, command, { mode: 'copy', tmpdir: place })
            if (!check(result)) throw new Error(`copy-mode exec ${command} did not do what it should`)
            times.push(ms)
            if (ws.fs.existsSync('/out.txt')) ws.fs.rmSync('/out.txt')
          }
          return median(times)
        }
        const copyDisk = await copy(tmpdir())
        const copyShm = await copy(shm)
        const d = median(directMs)
        const o = median(overlayMs)
        ;(overlayAt.get(name) ?? overlayAt.set(name, new Map()).get(name)!).set(files, o)
        ;(overheadAt.get(name) ?? overheadAt.set(name, new Map()).get(name)!).set(files, o - d)
        ;(copyAt.get(name) ?? copyAt.set(name, new Map()).get(name)!).set(files, copyDisk)
        if (copyDisk > config.copyLimitMs) copySkipped = true // the next size would take minutes per run
        rows.push([name, fmtCount(files), fmtMs(d), `**${fmtMs(o)}**`, fmtMs(o - d), Number.isNaN(copyDisk) ? 'skipped' : fmtMs(copyDisk), Number.isNaN(copyShm) ? 'skipped' : fmtMs(copyShm), Number.isNaN(copyDisk) ? 'n/a' : fmtRatio(copyDisk / o)])
      }
      rows.push(['first exec (probe + layer)', fmtCount(files), '', fmtMs(first.ms), '', '', '', ''])
      await ws.close()
    } finally {
      nodeFs.rmSync(root, { recursive: true, force: true })
    }
  }

  // Targets.
  const largest = config.sizes[config.sizes.length - 1]
  const smallest = config.sizes[0]
  const targets: string[] = []
  for (const { name } of COMMANDS) {
    const overhead = overheadAt.get(name)!.get(largest)!
    const flat = overlayAt.get(name)!.get(largest)! / overlayAt.get(name)!.get(smallest)!
    targets.push(`${name}: overlay overhead at ${fmtCount(largest)} files ${fmtMs(overhead)} (goal ≤ 30 ms) ${overhead <= 30 ? '✅' : '❌'}; t${fmtCount(largest)}/t${fmtCount(smallest)} ${fmtRatio(flat)} (goal ≤ 1.5) ${flat <= 1.5 ? '✅' : '❌'}`)
    const at10k = copyAt.get(name)!.get(10_000)
    if (at10k !== undefined && !Number.isNaN(at10k)) {
      const speedup = at10k / overlayAt.get(name)!.get(10_000)!
      targets.push(`${name}: overlay vs copy mode (disk) at 10k files ${fmtRatio(speedup)} faster (goal ≥ 50×) ${speedup >= 50 ? '✅' : '❌'}`)
    }
  }

  // 9.2 a real build.
  const build = await benchBuild(Workspace, directory, config.buildSamples)
  targets.push(`tsc -p of the repository's sources: overlay ${fmtRatio(build.ratio)} of direct (goal ≤ 1.2×) ${build.ratio <= 1.2 ? '✅' : '❌'}`)

  options.emit(
    `### 9. Commands in the workspace: ws.exec (\`bench/exec.ts\`)\n\n` +
      `#### 9.1 Exec overhead (median of ${config.samples}; copy mode: median of ${config.copySamples}, skipped once one run passes ${fmtMs(config.copyLimitMs)})\n\n` +
      table(['command', 'files', 'direct', 'overlay', 'overlay overhead', 'copy (disk)', 'copy (/dev/shm)', 'copy (disk) / overlay'], rows) +
      `\n\n${modeNote}\n\n` +
      `#### 9.2 A real build (median of ${config.buildSamples})\n\n` +
      table(['build', 'direct', 'overlay', 'overlay / direct', 'files recorded'], [[`tsc -p tsconfig.build.json (${fmtCount(build.files)} source files)`, fmtMs(build.direct), fmtMs(build.overlay), `**${fmtRatio(build.ratio)}**`, fmtCount(build.recorded)]]) +
      `\n\n` +
      targets.map((t) => `- ${t}`).join('\n'),
  )
}

/** This repository's sources copied into a project, node_modules linked: `tsc -p` direct vs through ws.exec. */
async function benchBuild(Workspace: typeof import('../src/index.js').Workspace, directory: typeof import('../adapters/node-fs/index.js').directory, samples: number) {
  progress('exec: a real build (tsc -p)')
  const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-bench-build-'))
  try {
    for (const dir of ['src', 'adapters', 'validators', 'tools', 'worker', 'cli', 'testing']) nodeFs.cpSync(join(REPO, dir), join(root, dir), { recursive: true })
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) nodeFs.copyFileSync(join(REPO, file), join(root, file))
    nodeFs.symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'))
    const command = `${JSON.stringify(process.execPath)} node_modules/typescript/bin/tsc -p tsconfig.build.json`
    let files = 0
    for (const dir of ['src', 'adapters', 'validators', 'tools', 'worker', 'cli', 'testing']) files += countTs(join(root, dir))
    const directMs: number[] = []
    const overlayMs: number[] = []
    let recorded = 0
    const ws = await Workspace.open({ lower: directory(root) })
    await ws.exec('true')
    for (let i = 0; i < samples; i++) {
      const run = await direct(command, root)
      if (run.code !== 0) throw new Error(`tsc failed directly: ${run.stdout}`)
      directMs.push(run.ms)
      nodeFs.rmSync(join(root, 'dist'), { recursive: true, force: true })
      if (ws.fs.existsSync('/dist')) ws.fs.rmSync('/dist', { recursive: true })
      const { ms, result } = await timedExec(ws, command, { mode: 'overlay' })
      if (result.exitCode !== 0) throw new Error(`tsc failed through ws.exec: ${result.stdout}${result.stderr}`)
      recorded = result.changes.added.length
      overlayMs.push(ms)
    }
    await ws.close()
    const d = median(directMs)
    const o = median(overlayMs)
    return { direct: d, overlay: o, ratio: o / d, files, recorded }
  } finally {
    nodeFs.rmSync(root, { recursive: true, force: true })
  }
}

function countTs(dir: string): number {
  let count = 0
  for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) count += countTs(join(dir, entry.name))
    else if (entry.name.endsWith('.ts')) count++
  }
  return count
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchExec({ quick: process.argv.includes('--quick'), emit: (markdown) => process.stdout.write(markdown + '\n') })
}
