/**
 * A tool result is an acknowledgement: `rewindfs mcp` with a directory store, driven by the SDK's
 * own Client over stdio, is killed with SIGKILL at random moments (after a random delay, or right
 * after an answer arrives) while it writes, edits, moves, deletes, undoes, checkpoints, rolls back
 * and commits, sometimes several calls at once. The client keeps a model of every result it
 * received; after each kill the store is reopened and every acknowledged result must be there:
 * contents, deletions, checkpoints, the operations the results named, and committed files on disk.
 * A call that was still in flight may have landed or not. Several short lanes run side by side.
 * REWINDFS_MCP_KILLS sets the number of kills (default 104), REWINDFS_SEED the random sequence.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { CLI, REPO, buildCli, removeCli } from './cli-process.js'
import { generator, randomSeed } from './support/seed.js'

const KILLS = Number(process.env.REWINDFS_MCP_KILLS ?? 104)
const LANES = 4
const seed = randomSeed

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-mcp-kill-'))
beforeAll(buildCli)
afterAll(() => {
  removeCli()
  fs.rmSync(scratch, { recursive: true, force: true })
})

/** What a path must hold after a reopen: one value, or any of several while a call on it was in flight. */
type Value = string | null // null: absent
type Expected = Map<string, Value[]>

interface Lane {
  readonly name: string
  readonly project: string
  readonly store: string
  readonly rand: () => number
  /** Workspace paths → acceptable values. */
  readonly files: Expected
  /** Checkpoint names → must exist (true), must not (false), either (undefined entry with in-flight). */
  readonly checkpoints: Map<string, boolean[]>
  /** Operation ids some result named: each must be in the reopened history. */
  readonly operations: Set<string>
  /** What the project directory must hold after the last acknowledged commit (when no later commit was in flight). */
  disk: Map<string, Value> | undefined
  counter: number
  kills: number
  acknowledged: number
}

class Killed extends Error {}

/** One server life: connect, run random calls until the kill, recording what was acknowledged. */
async function round(lane: Lane): Promise<void> {
  const { rand } = lane
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--dir', lane.project, '--store', lane.store], cwd: REPO, stderr: 'ignore' })
  const client = new Client({ name: 'rewindfs-kill-test', version: '1.0.0' })
  let killed = false
  const kill = () => {
    if (killed) return
    killed = true
    if (transport.pid !== null) process.kill(transport.pid, 'SIGKILL')
  }
  const exited = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
  })
  let timer: NodeJS.Timeout | undefined
  // In flight: paths and checkpoints a pending call may change, with what they would become.
  const pendingFiles = new Map<string, Value[]>()
  const pendingCheckpoints = new Map<string, boolean>()
  let commitInFlight = false

  const call = async (name: string, args: Record<string, unknown>): Promise<any> => {
    if (killed) throw new Killed()
    let result: CallToolResult
    try {
      result = (await client.callTool({ name, arguments: args })) as CallToolResult
    } catch (error) {
      if (killed) throw new Killed()
      throw error
    }
    const body = JSON.parse((result.content[0] as { text: string }).text)
    if (result.isError) throw new Error(`${name} ${JSON.stringify(args)} failed: ${JSON.stringify(body)}`)
    lane.acknowledged++
    // Now and then the kill comes right after an answer, before anything else runs.
    if (rand() < 0.08) kill()
    return body
  }
  /** Marks what a call may change, runs it, and on its answer makes the change expected. */
  const change = async (files: Record<string, Value>, checkpoints: Record<string, boolean>, run: () => Promise<unknown>) => {
    for (const [p, value] of Object.entries(files)) pendingFiles.set(p, [...(lane.files.get(p) ?? [null]), value])
    for (const [n, exists] of Object.entries(checkpoints)) pendingCheckpoints.set(n, exists)
    await run()
    for (const [p, value] of Object.entries(files)) {
      lane.files.set(p, [value])
      pendingFiles.delete(p)
    }
    for (const [n, exists] of Object.entries(checkpoints)) {
      lane.checkpoints.set(n, [exists])
      pendingCheckpoints.delete(n)
    }
  }
  const known = () => [...lane.files].filter(([p, values]) => values.length === 1 && values[0] !== null && !pendingFiles.has(p)).map(([p, [value]]) => [p, value!] as const)
  const fresh = () => `/${lane.name}/f${lane.counter++}.txt`
  const text = () => `${lane.counter}-${Math.floor(rand() * 1e9).toString(36)}\n`
  const named = (body: { operation_ids?: string[] }) => {
    for (const id of body.operation_ids ?? []) lane.operations.add(id)
  }

  try {
    await client.connect(transport)
    // Kills land up to 0.8 s into the session (a few to a few dozen calls), or right after an answer.
    timer = setTimeout(kill, Math.floor(rand() * 800))
    for (;;) {
      const pick = rand()
      const existing = known()
      if (pick < 0.3 || existing.length < 2) {
        const p = fresh()
        const content = text()
        await change({ [p]: content }, {}, async () => named(await call('write_file', { path: p, content })))
      } else if (pick < 0.4) {
        // A burst: several writes at once (the server runs calls concurrently).
        const writes = Array.from({ length: 2 + Math.floor(rand() * 4) }, () => [fresh(), text()] as const)
        await Promise.all(writes.map(([p, content]) => change({ [p]: content }, {}, async () => named(await call('write_file', { path: p, content })))))
      } else if (pick < 0.5) {
        const [p, content] = existing[Math.floor(rand() * existing.length)]
        const next = text()
        await change({ [p]: next }, {}, async () => named(await call('edit_file', { path: p, old_string: content, new_string: next })))
      } else if (pick < 0.57) {
        const [p] = existing[Math.floor(rand() * existing.length)]
        await change({ [p]: null }, {}, async () => named(await call('delete_path', { path: p })))
      } else if (pick < 0.64) {
        const [from, content] = existing[Math.floor(rand() * existing.length)]
        const to = fresh()
        await change({ [from]: null, [to]: content }, {}, async () => named(await call('move_path', { from, to })))
      } else if (pick < 0.74) {
        const checkpoint = `k${lane.counter++}`
        await change({}, { [checkpoint]: true }, () => call('manage_checkpoint', { action: 'create', checkpoint_name: checkpoint }))
      } else if (pick < 0.8) {
        const created = [...lane.checkpoints].filter(([n, states]) => states.length === 1 && states[0] && !pendingCheckpoints.has(n))
        if (created.length === 0) continue
        const [checkpoint] = created[Math.floor(rand() * created.length)]
        await change({}, { [checkpoint]: false }, () => call('manage_checkpoint', { action: 'delete', checkpoint_name: checkpoint }))
      } else if (pick < 0.87) {
        // Write a fresh file, then undo it: the undo's answer names that write.
        const p = fresh()
        const content = text()
        await change({ [p]: content }, {}, async () => named(await call('write_file', { path: p, content })))
        await change({ [p]: null }, {}, async () => {
          const body = await call('undo_operation', {})
          expect(body.undone_operations.map((entry: { file_path: string }) => entry.file_path)).toEqual([p])
        })
      } else if (pick < 0.93) {
        // Checkpoint, write a fresh file, roll back to the checkpoint: the file is gone, the guard is there.
        const checkpoint = `r${lane.counter++}`
        await change({}, { [checkpoint]: true }, () => call('manage_checkpoint', { action: 'create', checkpoint_name: checkpoint }))
        const p = fresh()
        const content = text()
        await change({ [p]: content }, {}, async () => named(await call('write_file', { path: p, content })))
        let guard = ''
        pendingCheckpoints.set('(guard)', true)
        await change({ [p]: null }, {}, async () => {
          const body = await call('rollback_to_checkpoint', { target: { checkpoint_id: checkpoint }, preview_changes: false })
          guard = body.guard_checkpoint.name
        })
        pendingCheckpoints.delete('(guard)')
        lane.checkpoints.set(guard, [true])
      } else {
        // Commit: the project on disk then holds exactly what the workspace holds.
        const snapshot = new Map([...lane.files].filter(([p]) => !pendingFiles.has(p)).map(([p, values]) => [p, values[0]] as const))
        commitInFlight = true
        await call('commit_changes', {})
        commitInFlight = false
        lane.disk = snapshot
      }
    }
  } catch (error) {
    if (!(error instanceof Killed) && !killed) throw error
  } finally {
    clearTimeout(timer)
    kill()
    await exited
    await client.close().catch(() => undefined)
  }
  // Whatever was in flight may have landed or not.
  for (const [p, values] of pendingFiles) lane.files.set(p, [...new Set(values)])
  for (const [n, exists] of pendingCheckpoints) if (n !== '(guard)') lane.checkpoints.set(n, [!exists, exists])
  if (commitInFlight) lane.disk = undefined
  lane.kills++
}

/** Reopens the store: every acknowledged result must be there. Settles what in-flight calls left. */
async function verify(lane: Lane): Promise<void> {
  const ws = await Workspace.open({ lower: directory(lane.project), store: directoryStore(lane.store) })
  try {
    expect(ws.status.degraded).toBeUndefined()
    for (const [p, values] of lane.files) {
      const actual = ws.fs.existsSync(p) ? (ws.fs.readFileSync(p, 'utf8') as string) : null
      expect({ lane: lane.name, kill: lane.kills, path: p, allowed: values.includes(actual) ? 'yes' : values }).toEqual({ lane: lane.name, kill: lane.kills, path: p, allowed: 'yes' })
      lane.files.set(p, [actual])
    }
    const names = new Set(ws.checkpoints().map((checkpoint) => checkpoint.name))
    for (const [n, states] of lane.checkpoints) {
      expect({ lane: lane.name, kill: lane.kills, checkpoint: n, allowed: states.includes(names.has(n)) }).toEqual({ lane: lane.name, kill: lane.kills, checkpoint: n, allowed: true })
      lane.checkpoints.set(n, [names.has(n)])
    }
    const history = new Set(ws.history().map((operation) => operation.id))
    const missing = [...lane.operations].filter((id) => !history.has(id))
    expect({ lane: lane.name, kill: lane.kills, missingOperations: missing }).toEqual({ lane: lane.name, kill: lane.kills, missingOperations: [] })
    if (lane.disk) {
      for (const [p, value] of lane.disk) {
        const host = path.join(lane.project, p)
        const actual = fs.existsSync(host) ? fs.readFileSync(host, 'utf8') : null
        expect({ lane: lane.name, kill: lane.kills, onDisk: p, actual }).toEqual({ lane: lane.name, kill: lane.kills, onDisk: p, actual: value })
      }
    }
  } finally {
    await ws.close()
  }
}

describe('rewindfs mcp with a directory store, killed with SIGKILL at random moments', () => {
  it(`keeps every acknowledged result over ${KILLS} kills (seed ${seed})`, async () => {
    console.log(`[rewindfs] MCP kill test seed: ${seed} (replay with REWINDFS_SEED=${seed})`)
    const lanes: Lane[] = Array.from({ length: LANES }, (_, i) => {
      const project = path.join(scratch, `lane${i}`, 'project')
      fs.mkdirSync(project, { recursive: true })
      fs.writeFileSync(path.join(project, 'README.md'), `# lane ${i}\n`)
      return {
        name: `lane${i}`,
        project,
        store: path.join(scratch, `lane${i}`, 'store'),
        rand: generator(seed + i).next,
        files: new Map(),
        checkpoints: new Map(),
        operations: new Set(),
        disk: undefined,
        counter: 0,
        kills: 0,
        acknowledged: 0,
      }
    })
    const perLane = Math.ceil(KILLS / LANES)
    await Promise.all(
      lanes.map(async (lane) => {
        while (lane.kills < perLane) {
          await round(lane)
          await verify(lane)
        }
      }),
    )
    const kills = lanes.reduce((sum, lane) => sum + lane.kills, 0)
    const acknowledged = lanes.reduce((sum, lane) => sum + lane.acknowledged, 0)
    console.log(`[rewindfs] MCP kill test: ${kills} kills, ${acknowledged} acknowledged results checked`)
    expect(kills).toBeGreaterThanOrEqual(KILLS)
    expect(acknowledged).toBeGreaterThan(KILLS)
  }, 600_000)
})
