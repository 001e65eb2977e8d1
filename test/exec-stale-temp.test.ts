/**
 * Temp directories of a process killed with SIGKILL (its exec session's layer, a copy-mode copy):
 * nothing of it runs at exit, so they stay behind. Their names say who owns them (pid namespace,
 * pid, start time); the next runner's first temp directory in that place sweeps those whose owner
 * is gone: never a live process's, another pid namespace's, or one with a mount inside.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { staleSwept, sweepStale } from '../adapters/node-fs/exec-files.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import { until } from './support/processes.js'
import { capability } from './support/require.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-stale-test-`))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const host = await support()
const overlayHere = capability('exec-overlay', host.overlay)
const linux = process.platform === 'linux' && fs.existsSync('/proc/self/ns/pid')
const EXEC = new URL('../adapters/node-fs/index.ts', import.meta.url).pathname
const SOURCE = new URL('../src/index.ts', import.meta.url).pathname

let serial = 0
function place(): { temps: string; project: string } {
  const temps = `${scratch}/tmp-${serial}`
  const project = `${scratch}/project-${serial++}`
  fs.mkdirSync(temps)
  fs.mkdirSync(project)
  fs.writeFileSync(`${project}/a.txt`, 'a\n')
  return { temps, project }
}

const owned = (temps: string) => fs.readdirSync(temps).filter((name) => name.startsWith('rewindfs-exec-')).sort()
const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())))

/** This process's owner tag as exec names its directories: `<pid namespace>-<pid>-<start>`. */
function tagOf(pid: number | 'self'): string {
  const namespace = /\d+/.exec(fs.readlinkSync(`/proc/${pid}/ns/pid`))![0]
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return `${namespace}-${pid === 'self' ? process.pid : pid}-${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`
}

describe.runIf(linux)('stale exec temp directories', () => {
  it.runIf(overlayHere)('are left by a host killed with SIGKILL, and removed by the next runner once it is gone (never while it lives)', async () => {
    const { temps, project } = place()
    const script = `
      const { directory } = await import(${JSON.stringify(EXEC)})
      const { Workspace } = await import(${JSON.stringify(SOURCE)})
      const ws = await Workspace.open({ lower: directory(${JSON.stringify(project)}) })
      await ws.exec('echo one > one.txt', { mode: 'overlay', tmpdir: ${JSON.stringify(temps)} })
      const copy = await Workspace.open({ lower: directory(${JSON.stringify(project)}) })
      console.log('overlay done')
      await copy.exec('echo running; sleep 60', { mode: 'copy', tmpdir: ${JSON.stringify(temps)} })
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    try {
      // The overlay session's directory and the running copy's.
      expect(await until(() => output.includes('overlay done') && owned(temps).length === 2, 60_000), output).toBe(true)
      const left = owned(temps)
      expect(left.every((name) => name.startsWith(`rewindfs-exec-${tagOf(child.pid!)}-`))).toBe(true)
      // Its owner lives: a sweep leaves them.
      expect(await sweepStale(temps)).toEqual([])
      expect(owned(temps)).toEqual(left)
      child.kill('SIGKILL')
      await exited(child)
      // Nothing ran at its exit: both are still there.
      expect(owned(temps)).toEqual(left)
    } finally {
      child.kill('SIGKILL')
    }
    // The next runner's first command there sweeps them.
    const ws = await Workspace.open({ lower: directory(project) })
    try {
      const result = await ws.exec('cat a.txt', { tmpdir: temps })
      expect(result.stdout).toBe('a\n')
      const removed = await staleSwept(temps)
      expect(removed.length).toBe(2)
      expect(fs.readdirSync(temps).filter((name) => !name.startsWith(`rewindfs-exec-${tagOf('self')}-`))).toEqual([])
    } finally {
      await ws.close()
    }
  }, 120_000)

  it('tells a reused pid by its start time, and leaves other pid namespaces and directories with a mount inside', async () => {
    const { temps } = place()
    const [namespace, pid, start] = tagOf('self').split('-')
    const make = (name: string) => {
      fs.mkdirSync(`${temps}/${name}`)
      fs.mkdirSync(`${temps}/${name}/layer`)
      fs.writeFileSync(`${temps}/${name}/layer/f`, 'x')
      return name
    }
    const mine = make(`rewindfs-exec-${namespace}-${pid}-${start}-aaaaaa`)
    // This pid, started at another time: an earlier process that had it.
    const reused = make(`rewindfs-exec-${namespace}-${pid}-${Number(start) - 1}-bbbbbb`)
    // A pid no process has (above pid_max).
    const dead = make(`rewindfs-exec-${namespace}-${2 ** 22 + 1}-5-cccccc`)
    // A sweep cut short: finished.
    const cut = make(`rewindfs-gone-${namespace}-${2 ** 22 + 1}-5-dddddd-1`)
    const otherNamespace = make(`rewindfs-exec-${Number(namespace) + 1}-${2 ** 22 + 1}-5-eeeeee`)
    // Names exec never made (tests' own temp directories, an old version's) stay.
    const unknown = make('rewindfs-exec-scenario-ffffff')
    const mounted = process.getuid?.() === 0 ? make(`rewindfs-exec-${namespace}-${2 ** 22 + 1}-5-gggggg`) : undefined
    if (mounted !== undefined) execFileSync('mount', ['-t', 'tmpfs', 'rewindfs-test', `${temps}/${mounted}/layer`])
    try {
      const removed = await sweepStale(temps)
      expect(removed.sort()).toEqual([reused, dead, cut].map((name) => `${temps}/${name}`).sort())
      expect(fs.readdirSync(temps).sort()).toEqual([mine, otherNamespace, unknown, ...(mounted ? [mounted] : [])].sort())
    } finally {
      if (mounted !== undefined) execFileSync('umount', [`${temps}/${mounted}/layer`])
    }
  })
})
