/**
 * A result is an acknowledgement: with a durable store, every async Workspace call that records
 * something resolves only once that is durable. Each case runs in a child process over a directory
 * lower and a directory store; the moment the call resolves the child prints ACK and blocks its
 * event loop, so no commit can still land after it; the parent kills it with SIGKILL, reopens the
 * store and finds what was acknowledged. No mocks: a real process, a real kill, a real reopen.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-acknowledgement-'))
const child = path.join(scratch, 'child.mjs')

beforeAll(async () => {
  await build({ entryPoints: ['test/fixtures/acknowledgement-child.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
})
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** Runs one scenario to its ACK, kills the child with SIGKILL, and reopens what it left. */
async function acknowledgedThenKilled(scenario: string): Promise<{ ws: Workspace; dir: string; ack: unknown }> {
  const dir = fs.mkdtempSync(path.join(scratch, `${scenario}-`))
  fs.writeFileSync(path.join(dir, 'lower.txt'), 'from the project\n')
  const store = `${dir}.store`
  const process_ = spawn(process.execPath, [child, dir, store, scenario], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  let errors = ''
  process_.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
  const ack = await new Promise<unknown>((resolve, reject) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split('\n').find((candidate) => candidate.startsWith('ACK '))
      if (line === undefined || !output.includes('\n')) return
      process_.kill('SIGKILL')
      resolve(JSON.parse(line.slice(4)))
    })
    process_.once('exit', (code, signal) => reject(new Error(`the child exited (${code ?? signal}) before its ACK: ${errors}`)))
  })
  await new Promise((resolve) => (process_.exitCode !== null || process_.signalCode !== null ? resolve(undefined) : process_.once('exit', resolve)))
  expect(process_.signalCode).toBe('SIGKILL')
  const ws = await Workspace.open({ lower: directory(dir), store: directoryStore(store), autoCheckpoint: false })
  expect(ws.status.degraded).toBeUndefined()
  return { ws, dir, ack }
}

const exists = (ws: Workspace, p: string) => ws.fs.existsSync(p)
const names = (ws: Workspace) => ws.checkpoints().map((checkpoint) => checkpoint.name)

const cases: Record<string, (ws: Workspace, dir: string, ack: unknown) => void> = {
  checkpoint(ws) {
    expect(names(ws)).toEqual(['acknowledged'])
    // What was written before it (never synced on its own) is in it.
    expect(ws.fs.readFileSync('/before.txt', 'utf8')).toBe('unsynced write before the checkpoint')
  },
  restore(ws) {
    expect(exists(ws, '/later.txt')).toBe(false)
    expect(exists(ws, '/kept.txt')).toBe(true)
    expect(ws.checkpoints().some((checkpoint) => checkpoint.kind === 'guard')).toBe(true)
    expect(ws.history()[0].type).toBe('restore')
  },
  undo(ws) {
    expect(exists(ws, '/undone.txt')).toBe(false)
    expect(ws.history().find((operation) => operation.paths.includes('/undone.txt'))).toMatchObject({ undone: true })
  },
  redo(ws) {
    expect(ws.fs.readFileSync('/redone.txt', 'utf8')).toBe('x')
    expect(ws.history()[0].undone).toBeUndefined()
  },
  undoRestore(ws) {
    expect(ws.fs.readFileSync('/back.txt', 'utf8')).toBe('back')
  },
  reset(ws) {
    expect(exists(ws, '/gone.txt')).toBe(false)
    expect(ws.history()[0].type).toBe('reset')
  },
  renameCheckpoint(ws) {
    expect(names(ws)).toEqual(['new-name'])
  },
  deleteCheckpoint(ws) {
    expect(names(ws)).toEqual([])
  },
  setResume(ws) {
    expect(ws.resume).toEqual({ phase: 'verify', turn: 7, data: { step: 'acknowledged' } })
  },
  recordSideEffect(ws) {
    expect(ws.history()[0]).toMatchObject({ type: 'side_effect', description: 'sent the acknowledged mail' })
  },
  beginTurn(ws) {
    expect(names(ws)).toEqual(['turn-3'])
  },
  transaction(ws) {
    expect(ws.fs.readFileSync('/t1.txt', 'utf8')).toBe('one')
    expect(ws.fs.readFileSync('/t2.txt', 'utf8')).toBe('two')
    expect(ws.history()[0].type).toBe('transaction')
  },
  flush(ws, dir) {
    expect(fs.readFileSync(path.join(dir, 'flushed.txt'), 'utf8')).toBe('flushed')
    // The flush is recorded too: the workspace knows the project holds its change.
    expect(ws.changes()).toEqual([])
  },
  sync(ws) {
    expect(ws.fs.readFileSync('/synced.txt', 'utf8')).toBe('synced')
  },
}

describe('with a directory store, a call that resolved survives a SIGKILL right after', () => {
  it.each(Object.keys(cases))('%s', async (scenario) => {
    const { ws, dir, ack } = await acknowledgedThenKilled(scenario)
    try {
      cases[scenario](ws, dir, ack)
      // The write made just before the call (unsynced; a new blob) is durable with it, unless the call replaced the tree.
      if (!['restore', 'reset', 'redo', 'undoRestore', 'checkpoint', 'sync'].includes(scenario)) expect(ws.fs.readFileSync('/pending.txt', 'utf8')).toMatch(/^pending /)
    } finally {
      await ws.close()
    }
  })
})

/** A store whose disk fails on demand (ENOSPC cannot be produced on the test machine's disk). */
class FailingStore extends MemoryStore {
  failing = false
  override appendJournal(records: readonly string[]): Promise<void> {
    return this.failing ? Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })) : super.appendJournal(records)
  }
}

describe('a store that fails: the call rejects, it is not acknowledged', () => {
  it('checkpoint() and transaction() reject with EDEGRADED and status.degraded says why', async () => {
    const store = new FailingStore()
    const ws = await Workspace.open({ lower: {}, store })
    await ws.checkpoint({ name: 'fine' })
    store.failing = true
    await expect(ws.checkpoint({ name: 'lost' })).rejects.toMatchObject({ code: 'EDEGRADED', message: expect.stringContaining('no space left on device') })
    expect(ws.status.degraded).toContain('no space left on device')
    await expect(ws.transaction((staged) => staged.writeFileSync('/a.txt', 'a'))).rejects.toMatchObject({ code: 'EDEGRADED' })
  })

  it('a mutating tool answers EDEGRADED instead of a result; a reading tool still answers', async () => {
    const store = new FailingStore()
    const ws = await Workspace.open({ lower: { '/readme.md': 'hello\n' }, store })
    const tools = createAgentTools(ws)
    expect(await callTool(tools, 'write_file', { path: '/a.txt', content: 'a' })).toMatchObject({ isError: false })
    store.failing = true
    const failed = await callTool(tools, 'write_file', { path: '/b.txt', content: 'b' })
    expect(failed).toMatchObject({ isError: true, error: { code: 'EDEGRADED', message: expect.stringContaining('not durable') } })
    expect(await callTool(tools, 'read_file', { path: '/readme.md' })).toMatchObject({ isError: false, result: { content: 'hello' } })
    expect(tools.filter((tool) => tool.readOnly).map((tool) => tool.name).sort()).toEqual(['find_files', 'list_directory', 'operation_history', 'read_file', 'search_files'])
  })
})
