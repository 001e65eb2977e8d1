/**
 * run_command over `rewindfs mcp --allow-commands` when the call is withdrawn: a client's
 * cancellation (notifications/cancelled, as the SDK sends at its request timeout) kills the command
 * with everything it started, nothing of it lands and the next call is answered at once; the
 * server's end (stdin closed, SIGTERM) kills a command still running and leaves no temp directory;
 * a SIGKILL of the server leaves no process running. A cancelled find_breaking_change kills its probe the same way. Real server, real commands: their processes
 * are found in /proc by a marker in their environment. A NUL byte is an input error naming its field.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CLI, REPO, buildCli, removeCli, runCli } from './cli-process.js'
import { until, withMarker } from './support/processes.js'

let tmp: string
let project: string
let store: string
let temps: string
const open: Client[] = []

beforeAll(buildCli)
afterAll(removeCli)

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-mcp-cancel-'))
  project = path.join(tmp, 'project')
  store = path.join(tmp, 'store')
  temps = path.join(tmp, 'tmp')
  fs.mkdirSync(project)
  fs.mkdirSync(temps)
  fs.writeFileSync(path.join(project, 'a.txt'), 'a\n')
})

afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
  fs.rmSync(tmp, { recursive: true, force: true })
})

let serial = 0
function marker(): { env: Record<string, string>; processes: () => number[] } {
  const value = `${process.pid}-${serial++}-${Date.now()}`
  return { env: { REWINDFS_MCP_CANCEL_TEST: value }, processes: () => withMarker(`REWINDFS_MCP_CANCEL_TEST=${value}`) }
}

/** The server, its temp directories in `temps` (TMPDIR), its session in `store`. */
async function connect(extraEnv: Record<string, string> = {}): Promise<{ client: Client; transport: StdioClientTransport; exited: Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--dir', project, '--store', store, '--allow-commands'],
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.homedir(), TMPDIR: temps, ...extraEnv },
    stderr: 'ignore',
  })
  const client = new Client({ name: 'rewindfs-cancel-test', version: '1.0.0' })
  const exited = new Promise<void>((resolve) => (transport.onclose = resolve))
  await client.connect(transport)
  open.push(client)
  return { client, transport, exited }
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: any }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  const [content] = result.content
  if (content.type !== 'text') throw new Error(`expected text content, got ${content.type}`)
  return { isError: result.isError === true, body: JSON.parse(content.text) }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A command that writes at once, leaves a background writer and then runs long; `late` must never appear. */
function longCommand(late: string): string {
  return `echo early > early.txt; (sleep 2; touch ${late}) & sleep 30; echo late > late.txt`
}

describe('a cancelled run_command', () => {
  it('is killed with everything it started, lands nothing, and the next call is answered at once', async () => {
    const { client } = await connect()
    const mark = marker()
    const late = path.join(tmp, 'late')
    const cancelled = Date.now() + 1500
    // The SDK gives up at its request timeout and sends notifications/cancelled.
    await expect(client.callTool({ name: 'run_command', arguments: { command: longCommand(late), env: mark.env } }, undefined, { timeout: 1500 })).rejects.toThrow(/timed out/i)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    const asked = Date.now()
    const listed = await call(client, 'list_directory', { path: '/' })
    expect(Date.now() - asked).toBeLessThan(5000)
    expect(JSON.stringify(listed.body)).not.toContain('early.txt')
    expect((await call(client, 'read_file', { path: '/early.txt' })).body.error.code).toBe('ENOENT')
    expect(JSON.stringify((await call(client, 'operation_history', {})).body)).not.toContain('exec:')
    // Commands still run, and land, afterwards.
    const next = await call(client, 'run_command', { command: 'cat a.txt; echo next > next.txt' })
    expect(next).toMatchObject({ isError: false, body: { exit_code: 0, stdout: 'a\n', changes: { added: ['/next.txt'] } } })
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, cancelled + 1000 - Date.now())))
    expect(fs.existsSync(late)).toBe(false)
  })
})

describe('a cancelled find_breaking_change', () => {
  it('kills the probe running, starts no other, leaves no temp directory, and the next call is answered at once', async () => {
    // The marker rides on the server's environment, which the probes inherit; the server itself is not counted.
    const mark = marker()
    const { client, transport } = await connect(mark.env)
    const probes = () => mark.processes().filter((pid) => pid !== transport.pid)
    await call(client, 'write_file', { path: '/a.txt', content: 'b\n' })
    await call(client, 'write_file', { path: '/a.txt', content: 'c\n' })
    const log = path.join(tmp, 'runs.log')
    const runs = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0)
    await expect(client.callTool({ name: 'find_breaking_change', arguments: { command: `echo run >> ${log}; sleep 30` } }, undefined, { timeout: 2500 })).rejects.toThrow(/timed out/i)
    expect(runs()).toBe(1)
    expect(await until(() => probes().length === 0, 5000), `left running: ${probes().join(' ')}`).toBe(true)
    expect(await until(() => fs.readdirSync(temps).length === 0, 5000), `left: ${fs.readdirSync(temps).join(' ')}`).toBe(true)
    const asked = Date.now()
    expect((await call(client, 'read_file', { path: '/a.txt' })).body.content.trim()).toBe('c')
    expect(Date.now() - asked).toBeLessThan(5000)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(runs()).toBe(1)
  })
})

describe('a run_command still running when the server ends', () => {
  it('is killed when the client closes stdin: the server exits by itself, its session kept, no temp directory left', async () => {
    const { client, transport, exited } = await connect()
    await call(client, 'write_file', { path: '/kept.txt', content: 'kept\n' })
    const mark = marker()
    const late = path.join(tmp, 'late')
    const running = client.callTool({ name: 'run_command', arguments: { command: longCommand(late), env: mark.env } }).catch(() => undefined)
    expect(await until(() => mark.processes().length >= 3, 30_000)).toBe(true)
    const pid = transport.pid!
    const closing = Date.now()
    await client.close()
    open.splice(0)
    await exited
    await running
    // Exited before the SDK's SIGTERM (2 s after stdin closed).
    expect(isAlive(pid)).toBe(false)
    expect(Date.now() - closing).toBeLessThan(2000)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(fs.existsSync(path.join(store, 'lock'))).toBe(false)
    const log = JSON.parse(runCli(['log', '--dir', project, '--store', store, '--json']).stdout)
    expect(log.operations.map((operation: { paths: string[] }) => operation.paths)).toEqual([['/kept.txt']])
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, closing + 2500 - Date.now())))
    expect(fs.existsSync(late)).toBe(false)
  })

  it.each(['SIGTERM', 'SIGINT'] as const)('is killed on %s: the server exits promptly, no process or temp directory left', async (signal) => {
    const { client, transport, exited } = await connect()
    const mark = marker()
    const late = path.join(tmp, 'late')
    void client.callTool({ name: 'run_command', arguments: { command: longCommand(late), env: mark.env } }).catch(() => undefined)
    expect(await until(() => mark.processes().length >= 3, 30_000)).toBe(true)
    const signalled = Date.now()
    process.kill(transport.pid!, signal)
    await exited
    expect(Date.now() - signalled).toBeLessThan(5000)
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(fs.existsSync(path.join(store, 'lock'))).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, signalled + 2500 - Date.now())))
    expect(fs.existsSync(late)).toBe(false)
  })

  it('dies with the server when it is killed with SIGKILL', async () => {
    const { client, transport, exited } = await connect()
    const mark = marker()
    const late = path.join(tmp, 'late')
    void client.callTool({ name: 'run_command', arguments: { command: longCommand(late), env: mark.env } }).catch(() => undefined)
    expect(await until(() => mark.processes().length >= 3, 30_000)).toBe(true)
    const killed = Date.now()
    process.kill(transport.pid!, 'SIGKILL')
    await exited
    expect(await until(() => mark.processes().length === 0, 5000), `left running: ${mark.processes().join(' ')}`).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, killed + 2500 - Date.now())))
    expect(fs.existsSync(late)).toBe(false)
  })
})

describe('run_command input', () => {
  it('refuses a NUL byte in the command, cwd or an environment variable as an input error naming the field', async () => {
    const { client } = await connect()
    const refused = async (args: Record<string, unknown>, field: string) => {
      const outcome = await call(client, 'run_command', args)
      expect(outcome).toMatchObject({ isError: true, body: { error: { code: 'EINVALIDINPUT', issues: [{ path: field, message: expect.stringContaining('NUL byte') }] } } })
      expect(outcome.body.error.message).not.toContain('args[')
    }
    await refused({ command: 'echo x > f\0y' }, 'command')
    await refused({ command: 'pwd', cwd: 'a\0b' }, 'cwd')
    await refused({ command: 'pwd', env: { X: 'a\0b' } }, 'env.X')
    expect(JSON.stringify((await call(client, 'operation_history', {})).body)).not.toContain('exec:')
  })
})
