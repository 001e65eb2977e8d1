/**
 * run_command through callTool, over a real directory lower: real shell commands, whose changes land
 * in the workspace as one undoable operation and never on disk; output cut to the result budget with
 * a marker; timeouts, exit codes, env and cwd; a validator's refusal as a tool error with the output.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'
import { json } from '../validators/index.js'
import { capability } from './support/require.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome)
  return outcome.result
}

const overlayHere = capability('exec-overlay', (await support()).overlay)

let root: string
let ws: Workspace
let tools: AgentTool[]
beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-command-'))
  fs.mkdirSync(path.join(root, 'sub'))
  fs.writeFileSync(path.join(root, 'a.txt'), 'from the lower layer\n')
  fs.writeFileSync(path.join(root, 'sub/config.json'), '{ "port": 8080 }\n')
  ws = await Workspace.open({ lower: directory(root), validators: [json()], autoCheckpoint: false })
  tools = createAgentTools(ws, { commands: true })
})
afterEach(async () => {
  await ws.close()
  fs.rmSync(root, { recursive: true, force: true })
})

describe('run_command', () => {
  it('is offered only when enabled', () => {
    expect(createAgentTools(ws).map((tool) => tool.name)).not.toContain('run_command')
    expect(createAgentTools(ws, { commands: {} }).map((tool) => tool.name)).toContain('run_command')
  })

  it('runs a command over the workspace; its changes are one operation, undoable, and nothing reaches the disk', async () => {
    ws.fs.writeFileSync('/b.txt', 'written by the agent\n')
    const result = await ok(tools, 'run_command', { command: 'cat a.txt b.txt && echo made > out.txt && rm a.txt && echo warning >&2' })
    expect(result).toMatchObject({
      exit_code: 0,
      signal: null,
      timed_out: false,
      stdout: 'from the lower layer\nwritten by the agent\n',
      stderr: 'warning\n',
      truncated: false,
      changes: { added: ['/out.txt'], modified: [], deleted: ['/a.txt'] },
      operation_id: ws.history()[0].id,
    })
    expect(['copy', 'overlay']).toContain(result.mode)
    expect(ws.fs.readFileSync('/out.txt', 'utf8')).toBe('made\n')
    expect(ws.fs.existsSync('/a.txt')).toBe(false)
    expect(fs.existsSync(path.join(root, 'out.txt'))).toBe(false)
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('from the lower layer\n')

    const undo = await ok(tools, 'undo_operation', {})
    expect(undo.summary).toMatch(/^Undid 1 operation\(s\): /)
    expect(undo.undone_operations[0].operation_id).toBe(result.operation_id)
    expect(ws.fs.existsSync('/out.txt')).toBe(false)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('from the lower layer\n')
  })

  it('reports exit codes, timeouts, env and cwd; a command that changes nothing records nothing', async () => {
    expect(await ok(tools, 'run_command', { command: 'exit 3' })).toMatchObject({ exit_code: 3, operation_id: null, changes: { added: [], modified: [], deleted: [] } })
    const slow = await ok(tools, 'run_command', { command: 'sleep 5', timeout_ms: 200 })
    expect(slow).toMatchObject({ timed_out: true, exit_code: null })
    expect(await ok(tools, 'run_command', { command: 'echo "$GREETING"', env: { GREETING: 'hello' } })).toMatchObject({ stdout: 'hello\n' })
    expect(await ok(tools, 'run_command', { command: 'ls', cwd: '/sub' })).toMatchObject({ stdout: 'config.json\n' })
    expect(await callTool(tools, 'run_command', { command: 'ls', cwd: '/nope' })).toMatchObject({ isError: true, error: { code: 'ENOENT' } })
    expect(ws.history()).toEqual([])
  })

  it('cuts long output in the middle with a marker, within the result budget', async () => {
    const result = await ok(tools, 'run_command', { command: 'for i in $(seq 1 20000); do echo "line $i"; done' })
    expect(JSON.stringify(result).length).toBeLessThanOrEqual(8000)
    expect(result.truncated).toBe(true)
    expect(result.stdout.startsWith('line 1\nline 2\n')).toBe(true)
    expect(result.stdout.endsWith('line 19999\nline 20000\n')).toBe(true)
    expect(result.stdout).toMatch(/\n… \[\d+ characters cut\] …\n/)
    const many = await ok(tools, 'run_command', { command: 'mkdir -p gen && for i in $(seq 1 2000); do : > gen/file-$i.txt; done' })
    expect(JSON.stringify(many).length).toBeLessThanOrEqual(8000)
    expect(many.changes.not_listed.added).toBe(2001 - many.changes.added.length)
  })

  it.runIf(overlayHere)('runs in overlay mode over a directory, inside the sandbox the host gave the tools', async () => {
    const sandboxed = createAgentTools(ws, { commands: { sandbox: { network: false } } })
    const result = await ok(sandboxed, 'run_command', { command: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; pwd" })
    expect(result).toMatchObject({ exit_code: 0, stdout: `lo\n${fs.realpathSync(root)}\n`, mode: 'overlay', mode_reason: expect.stringContaining('kernel overlayfs') })
    // Without the sandbox the command has this host's network devices.
    const devices = fs.readFileSync('/proc/net/dev', 'utf8').split('\n').slice(2).filter(Boolean).map((line) => line.split(':')[0].trim() + '\n').join('')
    expect((await ok(tools, 'run_command', { command: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '" })).stdout).toBe(devices)
  })

  it('a validator refusing the changes is a tool error with the output, and nothing lands', async () => {
    const refused = await callTool(tools, 'run_command', { command: 'echo "{ broken" > sub/config.json; echo done' })
    expect(refused).toMatchObject({ isError: true, error: { code: 'EVALIDATION', details: { exit_code: 0, stdout: 'done\n' } } })
    if (!refused.isError) throw new Error('unreachable')
    expect(refused.error.message).toContain('none of its changes were kept')
    expect(ws.fs.readFileSync('/sub/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
  })
})
