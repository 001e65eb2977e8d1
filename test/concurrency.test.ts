/**
 * Concurrent engine calls (the MCP server runs tool calls concurrently; any host may): recording
 * calls run one after another, each reports what it really did, and user code running on behalf of
 * a call (a compensator, a transaction body, a flush's verify callback) can call the engine without
 * deadlocking. From ../shared/repros/concurrent-undo.js.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { MemoryStore, flushEngine } from '../src/adapter-kit.js'
import { type FlushTarget, Workspace } from '../src/index.js'
import { callTool, createAgentTools } from '../tools/index.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function fiveWrites(): Promise<Workspace> {
  const ws = await Workspace.open({ lower: { '/keep.txt': 'k' } })
  for (let i = 0; i < 5; i++) ws.fs.writeFileSync(`/f${i}.txt`, String(i))
  return ws
}

describe('concurrent recording calls run in turn', () => {
  it('five concurrent undo() calls undo five operations, newest first, each reporting its own', async () => {
    const ws = await fiveWrites()
    const ids = ws.history().map((operation) => operation.id)
    const results = await Promise.all([ws.undo(), ws.undo(), ws.undo(), ws.undo(), ws.undo()])
    expect(results.map((result) => result.undone.map((operation) => operation.id))).toEqual(ids.map((id) => [id]))
    expect(ws.fs.readdirSync('/')).toEqual(['keep.txt'])
    expect(ws.history().every((operation) => operation.undone)).toBe(true)
  })

  it('five concurrent undo_operation tool calls do the same', async () => {
    const ws = await fiveWrites()
    const tools = createAgentTools(ws)
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => callTool(tools, 'undo_operation', {})))
    const undone = outcomes.map((outcome) => {
      if (outcome.isError) throw new Error(outcome.error.message)
      return (outcome.result as { undone_operations: { file_path: string }[] }).undone_operations.map((entry) => entry.file_path)
    })
    expect(undone).toEqual([['/f4.txt'], ['/f3.txt'], ['/f2.txt'], ['/f1.txt'], ['/f0.txt']])
    expect(ws.fs.readdirSync('/')).toEqual(['keep.txt'])
  })

  it('a reading call made after changing ones sees what they did; reads made before them do not wait for them', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'old' } })
    const tools = createAgentTools(ws)
    const before = callTool(tools, 'read_file', { path: '/a.txt' })
    const writes = Array.from({ length: 20 }, (_, i) => callTool(tools, 'write_file', { path: '/a.txt', content: `v${i}` }))
    const after = [callTool(tools, 'read_file', { path: '/a.txt' }), callTool(tools, 'operation_history', {}), callTool(tools, 'search_files', { pattern: 'v19' })]
    const contentOf = async (call: Promise<Awaited<ReturnType<typeof callTool>>>) => {
      const outcome = await call
      if (outcome.isError) throw new Error(outcome.error.message)
      return outcome.result as { content?: string; operations?: unknown[]; matches?: unknown[] }
    }
    expect((await contentOf(before)).content).toBe('old')
    const [read, history, search] = await Promise.all(after.map(contentOf))
    expect(read.content).toBe('v19')
    expect(history.operations).toHaveLength(20)
    expect(search.matches).toHaveLength(1)
    await Promise.all(writes)
  })

  it('concurrent write_file calls each name only the operation they recorded', async () => {
    const ws = await Workspace.open({ lower: {} })
    const tools = createAgentTools(ws)
    const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => callTool(tools, 'write_file', { path: `/d${i}/f.txt`, content: `${i}` })))
    const named = outcomes.map((outcome) => (outcome.isError ? [] : (outcome.result as { operation_ids: string[] }).operation_ids))
    // mkdir and write of each call: its own, never a neighbour's.
    for (const [i, ids] of named.entries()) {
      expect(ids.length).toBeGreaterThan(0)
      for (const id of ids) expect(ws.operation(id)!.paths.some((p) => p.startsWith(`/d${i}`))).toBe(true)
    }
    expect(new Set(named.flat()).size).toBe(named.flat().length)
  })

  it('calls made while a flush is writing wait for its turn, then each reports what it did', async () => {
    const ws = await Workspace.open({ lower: {} })
    ws.fs.writeFileSync('/a.txt', 'a')
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    let writing!: () => void
    const started = new Promise<void>((resolve) => (writing = resolve))
    const written = new Map<string, string>()
    const target: FlushTarget = {
      kind: 'memory',
      id: 'memory:slow',
      flusher: flushEngine,
      versions: async (paths) => paths.map((p) => written.get(p)),
      apply: async (entries) => {
        writing()
        await gate
        return entries.map((entry) => {
          if (entry.kind === 'delete') written.delete(entry.path)
          else written.set(entry.path, `v${written.size}`)
          return written.get(entry.path)
        })
      },
    }
    const flush = ws.flush(target)
    await started
    // A transaction takes its turn once its body (and validators) ran; the undo takes its turn now.
    const transaction = ws.transaction((staged) => staged.writeFileSync('/b.txt', 'b'))
    const undo = ws.undo()
    await sleep(20)
    expect(ws.fs.existsSync('/b.txt')).toBe(false)
    expect(ws.history().map((operation) => operation.undone === true)).toEqual([false])
    open()
    const [report, , undone] = await Promise.all([flush, transaction, undo])
    expect(report.changes.map((change) => change.path)).toEqual(['/a.txt'])
    // Whichever went first, the undo undid exactly the operation it reports.
    expect(undone.undone).toHaveLength(1)
    const [path] = undone.undone[0].paths
    const other = path === '/a.txt' ? '/b.txt' : '/a.txt'
    expect(ws.fs.existsSync(path)).toBe(false)
    expect(ws.fs.existsSync(other)).toBe(true)
    expect(ws.history().filter((operation) => operation.undone).map((operation) => operation.id)).toEqual([undone.undone[0].id])
  })

  it('concurrent restore and checkpoint calls see each other’s results in call order', async () => {
    const ws = await Workspace.open({ lower: {} })
    ws.fs.writeFileSync('/a.txt', '1')
    await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/a.txt', '2')
    const [restored, after] = await Promise.all([ws.restore('one'), ws.checkpoint({ name: 'after-restore' })])
    expect(restored.applied).toBe(true)
    // The checkpoint queued behind the restore: it holds the restored tree.
    ws.fs.writeFileSync('/a.txt', '3')
    await ws.restore(after.id)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('1')
  })

  it('an idle queue starts a call at once: an unawaited checkpoint captures the state of that moment', async () => {
    const ws = await Workspace.open({ lower: {} })
    ws.fs.writeFileSync('/a.txt', 'before')
    const checkpoint = ws.checkpoint({ name: 'now' })
    ws.fs.writeFileSync('/a.txt', 'after')
    await checkpoint
    await ws.restore('now')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('before')
  })
})

describe('reentrancy: code run on behalf of a call may call the engine', () => {
  it('a compensator that awaits checkpoint(), a transaction and undo() completes during undo and restore', async () => {
    const ws = await Workspace.open({ lower: {} })
    const seen: string[] = []
    const compensate = async () => {
      const checkpoint = await ws.checkpoint()
      await ws.transaction((staged) => staged.writeFileSync(`/compensated-${checkpoint.seq}.txt`, 'yes'))
      seen.push(checkpoint.name)
    }
    await ws.checkpoint({ name: 'start' })
    await ws.recordSideEffect({ description: 'one', compensate })
    const undone = await ws.undo()
    expect(undone.compensated).toEqual(['one'])
    await ws.recordSideEffect({ description: 'two', compensate })
    const restored = await ws.restore('start')
    expect(restored.compensated).toEqual(['two'])
    expect(seen).toHaveLength(2)
    expect(ws.history({ type: 'transaction' })).toHaveLength(2)
  })

  it('what a compensator records is durable with the undo that ran it (one group commit)', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower: {}, store })
    let durableInside = true
    await ws.recordSideEffect({
      description: 'mail',
      compensate: async () => {
        await ws.checkpoint({ name: 'from-compensator' })
        durableInside = store.image().journal.includes('from-compensator')
      },
    })
    await ws.undo()
    // Not before the undo's group commit (it would have waited for itself), and with it.
    expect(durableInside).toBe(false)
    expect(store.image().journal).toContain('from-compensator')
    const reopened = await Workspace.open({ lower: {}, store: MemoryStore.from(store.image()) })
    expect(reopened.checkpoints().map((c) => c.name)).toContain('from-compensator')
    expect(reopened.history()[0]).toMatchObject({ type: 'side_effect', undone: true })
  })

  it('undo calls made while a compensator runs take the next operations, and each compensation runs once', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', '1')
    let refunds = 0
    await ws.recordSideEffect({
      description: 'charge card',
      compensate: async () => {
        refunds++
        await sleep(30)
      },
    })
    const ids = ws.history().map((operation) => operation.id)
    // The first undo lends its turn while the compensator awaits: the second runs then.
    const [first, second] = await Promise.all([ws.undo(), ws.undo()])
    expect(refunds).toBe(1)
    expect([first.undone.map((o) => o.id), second.undone.map((o) => o.id)].sort()).toEqual([[ids[0]], [ids[1]]].sort())
    expect([...first.compensated, ...second.compensated]).toEqual(['charge card'])
    expect(ws.fs.existsSync('/a')).toBe(false)
    expect(ws.history().every((operation) => operation.undone)).toBe(true)
  })

  it('a restore and an undo at once compensate a side effect once', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    await ws.checkpoint({ name: 'start' })
    ws.fs.writeFileSync('/a', '1')
    let refunds = 0
    await ws.recordSideEffect({
      description: 'charge card',
      compensate: async () => {
        refunds++
        await sleep(30)
      },
    })
    const [restored, undone] = await Promise.all([ws.restore('start'), ws.undo()])
    expect(refunds).toBe(1)
    expect([...restored.compensated, ...undone.compensated]).toEqual(['charge card'])
  })

  it('a compensator that calls undo() runs once; its undo takes the operation before', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', '1')
    let runs = 0
    await ws.recordSideEffect({
      description: 'notify',
      compensate: async () => {
        runs++
        await ws.undo()
      },
    })
    const result = await ws.undo()
    expect(runs).toBe(1)
    expect(result.compensated).toEqual(['notify'])
    expect(ws.fs.existsSync('/a')).toBe(false)
  })

  it('a compensation that returns false is retried once, then reported', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    let runs = 0
    await ws.recordSideEffect({ description: 'refund', compensate: () => (runs++, false) })
    const result = await ws.undo()
    expect(runs).toBe(2)
    expect(result.uncompensated).toEqual([{ description: 'refund', error: 'the compensation returned false' }])
  })

  it('a transaction body that awaits checkpoint(), undo() and restore() does not deadlock', async () => {
    const ws = await Workspace.open({ lower: {} })
    ws.fs.writeFileSync('/a.txt', 'a')
    await ws.checkpoint({ name: 'a' })
    ws.fs.writeFileSync('/b.txt', 'b')
    await ws.transaction(async (staged) => {
      await ws.checkpoint({ name: 'inside' })
      await ws.undo()
      staged.writeFileSync('/c.txt', 'c')
    })
    expect(ws.fs.existsSync('/b.txt')).toBe(false)
    expect(ws.fs.readFileSync('/c.txt', 'utf8')).toBe('c')
    expect(ws.checkpoints().map((c) => c.name)).toContain('inside')
  })

  it("a flush's verify callback may call the engine", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-concurrency-'))
    try {
      for (const name of ['a', 'b']) fs.mkdirSync(path.join(root, name))
      const ws = await Workspace.open({ lower: {} })
      ws.fs.writeFileSync('/x.txt', 'x')
      const report = await ws.flush([directory(path.join(root, 'a')), directory(path.join(root, 'b'))], {
        canary: 1,
        verify: async () => (await ws.checkpoint({ name: 'verified' })).name === 'verified',
      })
      expect(report.applied).toBe(true)
      expect(fs.readFileSync(path.join(root, 'b/x.txt'), 'utf8')).toBe('x')
      await ws.close()
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
