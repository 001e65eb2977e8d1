/**
 * How long a command lives: no longer than the process that runs it, however that process ends
 * (a SIGKILL included), and no longer than its caller wants (ws.exec's `signal`). Real processes
 * and real kills: a Node process runs ws.exec, the test kills it and then looks in /proc for the
 * command's processes (marked through their environment) and on disk for what they would write.
 * `rewindfs run` told to end (SIGTERM, SIGHUP) kills its command and leaves no temp directory.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, hostShell } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import type { ExecMode } from '../src/index.js'
import { CLI, buildCli, removeCli, runCli } from './cli-process.js'
import { until, withMarker } from './support/processes.js'
import { capability } from './support/require.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-lifetime-`)
beforeAll(buildCli)
afterAll(() => {
  removeCli()
  fs.rmSync(scratch, { recursive: true, force: true })
})

const host = await support()
const modes: ExecMode[] = capability('exec-overlay', host.overlay) ? ['overlay', 'copy'] : ['copy']
const EXEC = new URL('../adapters/node-fs/index.ts', import.meta.url).pathname
const PROCESS = new URL('../adapters/node-fs/exec-process.ts', import.meta.url).pathname
const SOURCE = new URL('../src/index.ts', import.meta.url).pathname

let serial = 0
function project(): string {
  const root = `${scratch}/p${serial++}`
  fs.mkdirSync(root)
  fs.writeFileSync(`${root}/a.txt`, 'a\n')
  return root
}

/** A marker for the environment of one test's command: NAME=value, and its processes. */
function marker(): { entry: string; name: string; value: string; processes: () => number[] } {
  const name = 'REWINDFS_LIFETIME_TEST'
  const value = `${process.pid}-${serial++}-${Date.now()}`
  const entry = `${name}=${value}`
  return { entry, name, value, processes: () => withMarker(entry) }
}

/** A Node process running `script` (an ES module, with the sources through tsx). */
function node(script: string, env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return { child, output: () => output }
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
  } catch {
    return '' // gone
  }
}

const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())))

describe.each(modes)('a command (%s mode) dies with the process that runs it', (mode) => {
  it('when that process is killed with SIGKILL: its processes are gone within seconds and what it would write next never appears', async () => {
    const mark = marker()
    const late = `${scratch}/late-${serial++}`
    const temps = `${scratch}/tmp-${serial++}`
    fs.mkdirSync(temps)
    const { child, output } = node(`
      const { directory } = await import(${JSON.stringify(EXEC)})
      const { Workspace } = await import(${JSON.stringify(SOURCE)})
      const ws = await Workspace.open({ lower: directory(${JSON.stringify(project())}) })
      await ws.exec(${JSON.stringify(`(sleep 6; touch ${late}) & sleep 6; touch ${late}`)}, { mode: ${JSON.stringify(mode)}, tmpdir: ${JSON.stringify(temps)}, env: { ${mark.name}: ${JSON.stringify(mark.value)} } })
      console.log('the command ended')
    `)
    // The shell, both sleeps (and in namespaces unshare and the helper) carry the marker.
    expect(await until(() => mark.processes().length >= 3, 30_000), output()).toBe(true)
    const started = Date.now()
    child.kill('SIGKILL')
    await exited(child)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    // The sleeps leave the kill six seconds (a loaded machine sees the processes late); then past them.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 6500 - (Date.now() - started))))
    expect(fs.existsSync(late)).toBe(false)
    expect(output()).not.toContain('the command ended')
  })
})

describe('a command without namespaces (the shell leads its own process group)', () => {
  it('dies with the process that ran it, background processes of its group included', async () => {
    const mark = marker()
    const late = `${scratch}/late-${serial++}`
    const { child, output } = node(`
      const { runProcess } = await import(${JSON.stringify(PROCESS)})
      const running = runProcess({ file: '/bin/sh', args: ['-c', ${JSON.stringify(`(sleep 2; touch ${late}) & sleep 30`)}], cwd: '/', env: { ...process.env, ${mark.name}: ${JSON.stringify(mark.value)} }, timeout: undefined, stdio: 'pipe', status: false })
      console.log('started')
      await running
      console.log('the command ended')
    `)
    // 'started': runProcess has returned, the process is started and listed (a kill before that is a race no code can win).
    expect(await until(() => output().includes('started') && mark.processes().length >= 3, 30_000), output()).toBe(true)
    const started = Date.now()
    child.kill('SIGKILL')
    await exited(child)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2500 - (Date.now() - started))))
    expect(fs.existsSync(late)).toBe(false)
  })

  it('an interactive one (the terminal shared, no group of its own) dies with it too', async () => {
    const mark = marker()
    const { child, output } = node(`
      const { runProcess } = await import(${JSON.stringify(PROCESS)})
      const running = runProcess({ file: '/bin/sh', args: ['-c', 'exec sleep 30'], cwd: '/', env: { ...process.env, ${mark.name}: ${JSON.stringify(mark.value)} }, timeout: undefined, stdio: 'inherit', status: false })
      console.log('started')
      await running
    `)
    expect(await until(() => output().includes('started') && mark.processes().length >= 1, 30_000), output()).toBe(true)
    child.kill('SIGKILL')
    await exited(child)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
  })
})

describe.each(modes)("ws.exec's signal (%s mode)", (mode) => {
  it('kills the command and all it started, records nothing of it, rejects with AbortError, and frees the workspace for the next command', async () => {
    const temps = `${scratch}/tmp-${serial++}`
    fs.mkdirSync(temps)
    const ws = await Workspace.open({ lower: directory(project()), exec: hostShell({ mode, tmpdir: temps }) })
    const mark = marker()
    const late = `${scratch}/late-${serial++}`
    const controller = new AbortController()
    const running = ws.exec(`echo early > early.txt; (sleep 2; touch ${late}) & sleep 30; echo late > late.txt`, { env: { [mark.name]: mark.value }, signal: controller.signal })
    expect(await until(() => mark.processes().length >= 3, 30_000)).toBe(true)
    const reason = new Error('the caller went away')
    const aborted = Date.now()
    controller.abort(reason)
    const error = await running.then(
      () => undefined,
      (thrown: unknown) => thrown,
    )
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', message: 'The operation was aborted', cause: reason })
    expect(Date.now() - aborted).toBeLessThan(5000)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    // Nothing of it landed, not even what it wrote before the abort.
    expect(ws.history()).toEqual([])
    expect(ws.fs.existsSync('/early.txt')).toBe(false)
    // The next command runs at once, in the same mode (an abort during set-up is no reason to leave overlay mode).
    const next = await ws.exec('cat a.txt; echo next > next.txt')
    expect(next).toMatchObject({ exitCode: 0, stdout: 'a\n', mode, changes: { added: ['/next.txt'] } })
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2500 - (Date.now() - aborted))))
    expect(fs.existsSync(late)).toBe(false)
    await ws.close()
    expect(fs.readdirSync(temps)).toEqual([])
  })

  it('aborted while the command is being set up, or already: nothing runs and nothing is left', async () => {
    const temps = `${scratch}/tmp-${serial++}`
    fs.mkdirSync(temps)
    // Overlay mode as chosen by itself: a helper killed while setting up must not send later commands to copy mode.
    const ws = await Workspace.open({ lower: directory(project()), exec: hostShell({ ...(mode === 'copy' ? { mode } : {}), tmpdir: temps }) })
    const ran = `${scratch}/ran-${serial++}`
    // Already aborted: rejected before anything starts.
    await expect(ws.exec(`touch ${ran}`, { signal: AbortSignal.abort('gone') })).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: 'gone' })
    // Aborted as soon as the call is made, and a moment later (the helper starting, the namespaces being made).
    for (const delay of [0, 5, 20, 60]) {
      const controller = new AbortController()
      const running = ws.exec(`touch ${ran}; sleep 30`, { signal: controller.signal })
      await new Promise((resolve) => setTimeout(resolve, delay))
      controller.abort()
      await expect(running).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    }
    fs.rmSync(ran, { force: true })
    expect(ws.history()).toEqual([])
    expect(await ws.exec('echo ok')).toMatchObject({ stdout: 'ok\n', mode })
    await ws.close()
    expect(fs.readdirSync(temps)).toEqual([])
  })

  it('leaves a command that ended before the abort as it was: its changes recorded, the listener gone', async () => {
    const ws = await Workspace.open({ lower: directory(project()), exec: hostShell({ mode }) })
    const controller = new AbortController()
    const result = await ws.exec('echo made > made.txt', { signal: controller.signal })
    controller.abort()
    expect(result).toMatchObject({ exitCode: 0, changes: { added: ['/made.txt'] } })
    expect(ws.fs.readFileSync('/made.txt', 'utf8')).toBe('made\n')
    await ws.close()
  })
})

describe('ws.exec refuses what cannot reach a process', () => {
  it('a NUL byte in the command, cwd, tmpdir, an environment name or value, or a writable path, naming which', async () => {
    const ws = await Workspace.open({ lower: directory(project()) })
    const refused = (field: RegExp) => ({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(field) })
    await expect(ws.exec('echo x > f\0y')).rejects.toMatchObject(refused(/the command must be a string without null bytes/))
    await expect(ws.exec('pwd', { cwd: '/a\0b' })).rejects.toMatchObject(refused(/cwd must be a string without null bytes/))
    await expect(ws.exec('pwd', { tmpdir: '/tmp\0x' })).rejects.toMatchObject(refused(/tmpdir must be a string without null bytes/))
    await expect(ws.exec('pwd', { env: { X: 'a\0b' } })).rejects.toMatchObject(refused(/env\.X must be a string without null bytes/))
    await expect(ws.exec('pwd', { env: { 'X\0Y': 'a' } })).rejects.toMatchObject(refused(/env names .* must be a string without null bytes/))
    await expect(ws.exec('pwd', { sandbox: { host: 'read-only', writable: ['/tmp/a\0b'] } })).rejects.toMatchObject(refused(/sandbox\.writable entries must be a string without null bytes/))
    expect(ws.history()).toEqual([])
    await ws.close()
  })
})

describe('ws.exec refuses a bad signal', () => {
  it('a signal that is not an AbortSignal, and one among a runner\'s defaults (a signal is one call\'s)', async () => {
    const ws = await Workspace.open({ lower: directory(project()) })
    await expect(ws.exec('true', { signal: {} as AbortSignal })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('signal must be an AbortSignal') })
    expect(() => hostShell({ signal: new AbortController().signal } as Parameters<typeof hostShell>[0])).toThrow(/cannot hold a signal/)
    await ws.close()
  })
})

describe('rewindfs run told to end', () => {
  // SIGTERM with the output collected (--json: the command leads its own process group); SIGHUP, as
  // a closed terminal sends it, with the terminal handed over (the command in this process's group).
  it.each([
    ['SIGTERM', ['--json']],
    ['SIGHUP', []],
  ] as const)('by %s kills its command, removes its temp directory, records nothing and ends by that signal', async (signal, flags) => {
    const root = project()
    const temps = `${scratch}/tmp-${serial++}`
    fs.mkdirSync(temps)
    const mark = marker()
    const late = `${scratch}/late-${serial++}`
    const child = spawn(process.execPath, [CLI, 'run', '--dir', root, '--store', `${root}-store`, ...flags, '--', `echo early > early.txt; (sleep 2; touch ${late}) & sleep 30`], {
      env: { ...process.env, TMPDIR: temps, [mark.name]: mark.value },
      stdio: 'ignore',
    })
    // The CLI carries the marker too, and so does its probe of the host: wait for the command's own sleep.
    const sleeping = () => mark.processes().some((pid) => commandLine(pid) === 'sleep 30')
    expect(await until(sleeping, 30_000)).toBe(true)
    const started = Date.now()
    child.kill(signal)
    await exited(child)
    expect(child.signalCode).toBe(signal)
    expect(Date.now() - started).toBeLessThan(5000)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(JSON.parse(runCli(['log', '--dir', root, '--store', `${root}-store`, '--json']).stdout).operations).toEqual([])
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2500 - (Date.now() - started))))
    expect(fs.existsSync(late)).toBe(false)
  })
})
