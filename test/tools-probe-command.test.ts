/**
 * run_command as a model used to Claude Code's Bash drives it: there, a cd carries over to the next
 * call and a background server keeps running. Here each call starts afresh and whatever it left in
 * the background is killed as it returns (its later writes are lost), so the description says both,
 * or an `npm install` meant for app/ lands in the root and a `npm run dev &` is gone by the next call.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

let root: string
let ws: Workspace
let tools: AgentTool[]
beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-command-probe-'))
  fs.mkdirSync(path.join(root, 'app'))
  ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
  tools = createAgentTools(ws, { commands: true })
})
afterEach(async () => {
  await ws.close()
  fs.rmSync(root, { recursive: true, force: true })
})

async function ok(input: Record<string, unknown>): Promise<Json> {
  const outcome = await callTool(tools, 'run_command', input)
  if (outcome.isError) throw new Error(`run_command failed: ${outcome.error.code} ${outcome.error.message}`)
  return outcome.result
}

describe('run_command, as its description tells it', () => {
  it('says that a cd does not carry over and that background processes end with the call', () => {
    const { description } = tools.find((tool) => tool.name === 'run_command')!
    expect(description).toContain('a cd or export does not carry over to the next call')
    expect(description).toContain('killed when it returns')
  })

  it('starts each call afresh, and nothing a background process writes after the call lands', async () => {
    await ok({ command: 'cd app' })
    expect((await ok({ command: 'pwd' })).stdout.trim()).toBe(fs.realpathSync(root))
    expect((await ok({ command: 'pwd', cwd: 'app' })).stdout.trim()).toBe(path.join(fs.realpathSync(root), 'app'))
    // The background process writes as soon as the shell that started it is gone.
    const started = await ok({ command: "sh -c 'while kill -0 $1 2>/dev/null; do sleep 0.01; done; echo late > late.txt' _ $$ >/dev/null 2>&1 & echo started" })
    expect(started).toMatchObject({ stdout: 'started\n', changes: { added: [] } })
    expect((await ok({ command: 'ls' })).stdout).toBe('app\n')
    expect(ws.fs.existsSync('/late.txt')).toBe(false)
  })
})
