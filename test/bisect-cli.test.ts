/**
 * Bisect as users reach it: `rewindfs bisect` as a real child process over a store a workspace
 * wrote (a line per probe on stderr, the answer and its diff on stdout, exit codes, the store
 * untouched and usable beside its lock holder; interrupted, no probe or temp directory left), and find_breaking_change through the MCP server
 * with the SDK's own client, over a history the agent made with write_file.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { createAgentTools } from '../tools/index.js'
import { CLI, REPO, buildCli, removeCli, runCli } from './cli-process.js'
import { scriptHistory, writeProject } from './support/bisect-project.js'
import { until, withMarker } from './support/processes.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-bisect-cli-`)
beforeAll(buildCli)
afterAll(() => {
  removeCli()
  fs.rmSync(scratch, { recursive: true, force: true })
})

function bytesUnder(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = `${dir}/${name}`
      if (fs.lstatSync(full).isDirectory()) walk(full)
      else out[full.slice(root.length)] = fs.readFileSync(full).toString('base64')
    }
  }
  walk(root)
  return out
}

describe('rewindfs bisect', () => {
  it('prints a line per probe and names the operation; the store and the project are unchanged, even beside the lock holder', async () => {
    const project = `${scratch}/project`
    const store = `${scratch}/store`
    fs.mkdirSync(project)
    writeProject(project)
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store), autoCheckpoint: false })
    const ids = await scriptHistory(ws, { count: 16, breakAt: 11, between: async (n) => (n === 8 ? ws.checkpoint({ name: 'eight' }) : undefined) })
    await ws.close()
    const before = { store: bytesUnder(store), project: bytesUnder(project) }
    const args = ['bisect', '--dir', project, '--store', store]

    // A writer holds the store's lock meanwhile: bisect only reads it.
    const holder = await Workspace.open({ lower: directory(project), store: directoryStore(store), autoCheckpoint: false })
    const result = runCli([...args, '--', 'node', 'test/sum.test.js'])
    await holder.close()
    expect(result.code).toBe(0)
    const probeLines = result.stderr.trim().split('\n')
    expect(probeLines.length).toBeGreaterThanOrEqual(3)
    for (const line of probeLines) expect(line).toMatch(/^bisect: probe \d+ after op-\S+ \(.+\): (good|bad) \(exit [01], \d+ ms\); /)
    expect(probeLines.at(-1)).toContain('checking the answer again')
    expect(result.stdout).toContain(`${ids[10]} is the first bad operation`)
    expect(result.stdout).toContain('+export const sum = (a, b) => a - b')
    expect(result.stdout).toMatch(new RegExp(`${probeLines.length} probe\\(s\\)`))

    const json = runCli([...args, '--from', 'eight', '--json', '--', 'node test/sum.test.js'])
    expect(json.code).toBe(0)
    const body = JSON.parse(json.stdout)
    expect(body.suspects.map((op: { id: string }) => op.id)).toEqual([ids[10]])
    expect(body.lastGood).toMatchObject({ kind: 'operation', operation: ids[9] })
    expect(body.probes.every((p: { state: { operationSeq: number } }) => p.state.operationSeq > 8)).toBe(true)
    expect(body.diff).toContain('--- /src/sum.js')

    const passes = runCli([...args, '--to', ids[5], '--', 'node test/sum.test.js'])
    expect(passes.code).toBe(1)
    expect(passes.stderr).toMatch(/bisect: the command passes at to/)
    expect(JSON.parse(runCli([...args, '--to', ids[5], '--json', '--', 'node test/sum.test.js']).stdout)).toMatchObject({ error: { code: 'EBISECTTO' } })
    expect(runCli([...args, '--from', 'nowhere', '--', 'true']).code).toBe(4)
    expect(runCli([...args, '--granularity', 'commit', '--', 'true'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--granularity takes operation or checkpoint') })
    expect(runCli([...args, '--timeout', '0', '--', 'true'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--timeout takes a positive number of seconds') })
    expect(runCli(args)).toMatchObject({ code: 2, stderr: expect.stringContaining("bisect needs a command after '--'") })

    expect({ store: bytesUnder(store), project: bytesUnder(project) }).toEqual(before)
  })
})

describe('rewindfs bisect interrupted', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('on %s kills the probe running, leaves no temp directory and ends by the signal', async (signal) => {
    const project = `${scratch}/project-${signal}`
    const store = `${scratch}/store-${signal}`
    const temps = `${scratch}/tmp-${signal}`
    fs.mkdirSync(project)
    fs.mkdirSync(temps)
    writeProject(project)
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store), autoCheckpoint: false })
    await scriptHistory(ws, { count: 8, breakAt: 5 })
    await ws.close()
    const marker = `REWINDFS_BISECT_CLI_TEST=${process.pid}-${signal}`
    const log = `${scratch}/runs-${signal}.log`
    const child = spawn(process.execPath, [CLI, 'bisect', '--dir', project, '--store', store, '--', `echo run >> ${log}; sleep 30`], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.homedir(), TMPDIR: temps, REWINDFS_BISECT_CLI_TEST: `${process.pid}-${signal}` },
      stdio: 'ignore',
    })
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, by) => resolve({ code, signal: by })))
    expect(await until(() => fs.existsSync(log), 30_000)).toBe(true)
    const probes = () => withMarker(marker).filter((pid) => pid !== child.pid)
    child.kill(signal)
    expect(await exited).toEqual({ code: null, signal })
    expect(await until(() => probes().length === 0, 5000), `left running: ${probes().join(' ')}`).toBe(true)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(fs.readFileSync(log, 'utf8')).toBe('run\n')
  })
})

describe('find_breaking_change over MCP', () => {
  it('names the write_file call that broke the tests, only with --allow-commands', async () => {
    const project = `${scratch}/mcp-project`
    fs.mkdirSync(project)
    writeProject(project)
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--dir', project, '--allow-commands'], cwd: REPO, stderr: 'pipe' })
    const client = new Client({ name: 'rewindfs-test', version: '1.0.0' })
    await client.connect(transport)
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult
        const [content] = result.content
        if (content.type !== 'text') throw new Error('expected text')
        return { isError: result.isError === true, body: JSON.parse(content.text) }
      }
      const tool = (await client.listTools()).tools.find((t) => t.name === 'find_breaking_change')!
      expect(tool.inputSchema.required).toEqual(['command'])
      expect(tool.annotations?.readOnlyHint).toBeUndefined()
      expect(Object.keys(tool.inputSchema.properties ?? {})).toEqual(['command', 'from_checkpoint', 'timeout_ms'])

      let breaking = ''
      for (let i = 1; i <= 12; i++) {
        const write = i === 8 ? { path: '/src/sum.js', content: 'export const sum = (a, b) => a * b\n' } : { path: `/docs/step-${i}.md`, content: `step ${i}\n` }
        const { body } = await call('write_file', write)
        if (i === 8) breaking = body.operation_ids.at(-1)
        if (i === 4) await call('manage_checkpoint', { action: 'create', checkpoint_name: 'four' })
      }
      const found = await call('find_breaking_change', { command: 'node test/sum.test.js' })
      expect(found.isError).toBe(false)
      expect(found.body.first_bad_operation).toMatchObject({ operation_id: breaking, file_path: '/src/sum.js' })
      expect(found.body.diff).toContain('+export const sum = (a, b) => a * b')
      expect(found.body.probe_count).toBe(found.body.probes.length)

      const fromFour = await call('find_breaking_change', { command: 'node test/sum.test.js', from_checkpoint: 'four' })
      expect(fromFour.body.first_bad_operation.operation_id).toBe(breaking)
      expect(await call('find_breaking_change', { command: 'node test/sum.test.js', from_checkpoint: 'nine' })).toMatchObject({ isError: true, body: { error: { code: 'ENOENT' } } })
      // Nothing broke before operation 8: the tool says so with bisect's code.
      await call('undo_operation', { steps: 5 })
      expect(await call('find_breaking_change', { command: 'node test/sum.test.js' })).toMatchObject({ isError: true, body: { error: { code: 'EBISECTTO' } } })
      // Nothing reached the project directory.
      expect(fs.readdirSync(project).sort()).toEqual(['README.md', 'package.json', 'src', 'test'])
    } finally {
      await client.close()
    }
    // Without commands allowed there is no tool that runs one.
    const plain = await Workspace.open()
    expect(createAgentTools(plain).map((t) => t.name)).not.toContain('find_breaking_change')
    // It records nothing in the workspace, but the command runs on the host: no read-only hint.
    expect(createAgentTools(plain, { commands: true }).find((t) => t.name === 'find_breaking_change')!.readOnly).toBeUndefined()
    await plain.close()
  })
})
