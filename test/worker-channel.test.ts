/**
 * What only the worker has: the message boundary (garbage in, typed errors out, the worker keeps
 * serving), contents as transferred buffers, batches, validators by name and on the caller's side,
 * crashes and closing, and recovery from a durable store after the process running it was killed.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ValidationError } from '../src/engine/validator.js'
import { FsError } from '../src/errors.js'
import { BAD_CALL, WORKER_CLOSED, WORKER_CRASHED, type WorkerWorkspace, openWorkerWorkspace } from '../worker/index.js'
import type { WorkerApi } from '../worker/serve.js'
import { openOptions } from '../worker/protocol.js'
import type { AsyncFs } from '../src/async-workspace.js'

const bootstrap = new URL('../worker/bootstrap.mjs', import.meta.url)
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** A worker running an entry given as module source (it may import the worker's .ts modules by URL). */
function workerWithEntry(source: string): Worker {
  return new Worker(bootstrap, { workerData: { entry: `data:text/javascript,${encodeURIComponent(source)}` } })
}

const exited = (worker: Worker) => new Promise<number>((resolve) => worker.once('exit', resolve))

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function open(options: Parameters<typeof openWorkerWorkspace>[1] = {}): Promise<{ ws: WorkerWorkspace; worker: Worker }> {
  const worker = new Worker(bootstrap)
  const ws = await openWorkerWorkspace(worker, options)
  cleanups.push(() => ws.close())
  return { ws, worker }
}

describe('the message boundary', () => {
  it('answers malformed messages with ERR_REWINDFS_BAD_CALL and the zod issue, and keeps serving', async () => {
    const worker = new Worker(bootstrap)
    cleanups.push(() => worker.terminate())
    const remote = Comlink.wrap<WorkerApi>(nodeEndpoint(worker))
    const opened = await remote.request({ t: 'open', options: {} })
    expect(opened.ok).toBe(true)
    const handle = (opened as { value: { handle: number } }).value.handle

    const garbage: [unknown, RegExp][] = [
      [null, /malformed call/],
      ['readFile /etc/passwd', /malformed call/],
      [{ t: 'fs', handle, op: 'chmodd', args: [] }, /op/],
      [{ t: 'fs', handle, op: 'readFile', args: 'not an array' }, /args/],
      [{ t: 'call', handle, member: 'restore', args: [42] }, /the arguments of restore\(\)/],
      [{ t: 'call', handle, member: 'checkpoint', args: [{ kind: 'guard' }] }, /kind/],
      [{ t: 'call', handle, member: 'constructor', args: [] }, /member/],
      [{ t: 'batch', handle, ops: [{ op: 'readFile' }] }, /ops/],
      [{ t: 'batch', handle, ops: new Uint8Array([7, 99]), counts: new Uint8Array([1, 1]), args: ['/a'], bytes: new ArrayBuffer(0) }, /at ops\[1\]/],
      [{ t: 'open', options: { umask: 'rwx', store: { kind: 'floppy' } } }, /umask[\s\S]*store|store[\s\S]*umask/],
      [{ t: 'fs', handle: 99, op: 'stat', args: ['/'] }, /no open workspace has handle 99/],
      // A misspelt option is named, not ignored (the page would run with the default, unaware).
      [{ t: 'open', options: { cachebytes: 2 ** 20 } }, /Unrecognized key: "cachebytes"/],
      [{ t: 'open', options: { lower: { kind: 'indexeddb-tree', name: 'project', preload: 0 } } }, /Unrecognized key: "preload"[\s\S]*options\.lower/],
      [{ t: 'open', options: { store: { kind: 'opfs', name: 'project', segmentbytes: 4096 } } }, /Unrecognized key: "segmentbytes"[\s\S]*options\.store/],
      [{ t: 'open', options: { lower: { kind: 'indexeddb-tree', name: 'project', preloadBytes: -1 } } }, /preloadBytes/],
    ]
    for (const [message, detail] of garbage) {
      const outcome = await remote.request(message)
      expect(outcome.ok, JSON.stringify(message)).toBe(false)
      if (outcome.ok) continue
      expect(outcome.error.code).toBe(BAD_CALL)
      expect(outcome.error.message).toMatch(detail)
    }
    // A method comlink does not find is refused by comlink itself; the worker lives on.
    await expect((remote as unknown as { nope(): Promise<unknown> }).nope()).rejects.toThrow()

    expect(await remote.request({ t: 'fs', handle, op: 'writeFile', args: ['/still', 'serving'] })).toEqual({ ok: true, value: undefined })
    expect(await remote.request({ t: 'fs', handle, op: 'readFile', args: ['/still', 'utf8'] })).toEqual({ ok: true, value: 'serving' })
  })

  it('takes preloadBytes: Infinity (everything loads on open), as indexedDbTree and cacheBytes do', () => {
    expect(openOptions.safeParse({ lower: { kind: 'indexeddb-tree', name: 'project', preloadBytes: Infinity }, cacheBytes: Infinity }).success).toBe(true)
  })

  it('refuses an argument that cannot cross (a function) before it leaves, as a bad call', async () => {
    const { ws } = await open()
    const error = await ws.fs.writeFile('/f', (() => 'x') as unknown as string).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: BAD_CALL })
    expect((error as Error).message).toMatch(/could not be cloned/)
    await ws.fs.writeFile('/f', 'fine')
    expect(await ws.fs.readFile('/f', 'utf8')).toBe('fine')
  })

  it('rebuilds fs errors as FsError with Node fields, and engine errors with their own fields', async () => {
    const { ws } = await open({ lower: { kind: 'fixture', files: { '/a.json': '{}' } }, validators: ['json'] })
    const missing = await ws.fs.stat('/missing').catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(FsError)
    expect(Object.keys(missing as object)).toEqual(['errno', 'code', 'syscall', 'path'])

    const refused = await ws.transaction((fs) => fs.promises.writeFile('/a.json', '{ "broken": ')).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ValidationError)
    expect((refused as ValidationError).failures).toEqual([expect.objectContaining({ path: '/a.json', validator: 'json' })])
    expect(await ws.fs.readFile('/a.json', 'utf8')).toBe('{}')
  })
})

describe('file contents', () => {
  it('arrive in a buffer of their own, and neither the stored blob nor the caller’s buffer is detached', async () => {
    const { ws } = await open({ lower: { kind: 'fixture', files: { '/lower.bin': 'below' } } })
    const big = new Uint8Array(64 * 1024).map((_, i) => i % 251)
    await ws.fs.writeFile('/big.bin', big)
    expect(big.buffer.byteLength).toBe(64 * 1024) // copied, not taken
    const first = await ws.fs.readFile('/big.bin')
    const second = await ws.fs.readFile('/big.bin')
    expect(first.buffer.byteLength).toBe(64 * 1024) // the transferred buffer holds exactly the file
    expect(Buffer.compare(first, second)).toBe(0)
    expect(Buffer.compare(first, Buffer.from(big))).toBe(0)
    first.fill(0) // the caller's copy is theirs: the stored file does not change
    expect(Buffer.compare(await ws.fs.readFile('/big.bin'), Buffer.from(big))).toBe(0)

    await ws.fs.writeFile('/small.txt', 'tiny')
    const small = await ws.fs.readFile('/small.txt')
    expect(small.buffer.byteLength).toBe(4) // not a slab of Node's Buffer pool
    const names = await ws.fs.readdir('/', { encoding: 'buffer' })
    expect(names.every((name) => Buffer.isBuffer(name))).toBe(true)
    expect(names.map(String).sort()).toEqual(['big.bin', 'lower.bin', 'small.txt'])
  })

  it('reads a lower-layer file any number of times: the source keeps its bytes', async () => {
    const { ws } = await open({ lower: { kind: 'fixture', files: { '/lower.txt': 'x'.repeat(10_000) } } })
    const reads = await Promise.all([ws.fs.readFile('/lower.txt'), ws.fs.readFile('/lower.txt'), ws.fs.readFile('/lower.txt')])
    for (const bytes of reads) expect(bytes.toString()).toBe('x'.repeat(10_000))
    expect(reads[0].buffer).not.toBe(reads[1].buffer)
  })

  it('hands a caller’s buffer over without a copy when asked with { transfer: true }', async () => {
    const { ws } = await open()
    const data = new TextEncoder().encode('handed over')
    await ws.fs.writeFile('/t.txt', data, { transfer: true })
    expect(data.buffer.byteLength).toBe(0) // detached: it now belongs to the worker
    expect(await ws.fs.readFile('/t.txt', 'utf8')).toBe('handed over')
    // A batch packs contents into one buffer of its own: the caller's stays theirs.
    const tail = new TextEncoder().encode('!')
    await ws.batch([{ op: 'appendFile', args: ['/t.txt', tail, { transfer: true }] }])
    expect(tail.buffer.byteLength).toBe(1)
    expect(await ws.fs.readFile('/t.txt', 'utf8')).toBe('handed over!')
  })
})

describe('batch', () => {
  it('runs many operations in one round trip with a result or a Node-shaped error per operation', async () => {
    const { ws } = await open({ lower: { kind: 'fixture', files: { '/lower.txt': 'from below' } } })
    const results = await ws.batch([
      { op: 'mkdir', args: ['/d'] },
      { op: 'writeFile', args: ['/d/a.txt', 'A'] },
      { op: 'readFile', args: ['/d/a.txt', 'utf8'] },
      { op: 'readFile', args: ['/d/absent.txt'] },
      { op: 'stat', args: ['/lower.txt'] },
      { op: 'readdir', args: ['/', { withFileTypes: true }] },
      { op: 'readFile', args: ['/lower.txt'] },
    ])
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false, true, true, true])
    expect(results[2]).toEqual({ ok: true, value: 'A' })
    const failure = results[3] as { ok: false; error: Error }
    expect(failure.error).toBeInstanceOf(FsError)
    expect(failure.error).toMatchObject({ code: 'ENOENT', syscall: 'open', path: '/d/absent.txt' })
    const stats = (results[4] as { value: { isFile(): boolean; size: number } }).value
    expect(stats.isFile()).toBe(true)
    expect(stats.size).toBe(10)
    // Its Dates are own properties, as Node 20's: kept by a spread, as a stat from a plain call.
    const plain = await ws.fs.stat('/lower.txt')
    for (const stat of [stats, plain] as unknown as { mtimeMs: number }[]) expect({ ...stat }).toMatchObject({ mtime: new Date(Math.round(stat.mtimeMs)), birthtime: expect.any(Date) })
    const names = (results[5] as { value: { name: string; isDirectory(): boolean }[] }).value.map((d) => `${d.name}${d.isDirectory() ? '/' : ''}`)
    expect(names.sort()).toEqual(['d/', 'lower.txt'])
    expect(text((results[6] as { value: Uint8Array }).value)).toBe('from below')
  })

  it('refuses calls on a transaction’s staging fs once the transaction has ended', async () => {
    const { ws } = await open()
    let kept: AsyncFs | undefined
    await ws.transaction(async (fs) => {
      kept = fs.promises
      await fs.promises.writeFile('/inside.txt', 'committed')
    })
    await expect(kept!.writeFile('/late.txt', 'lost')).rejects.toMatchObject({ code: BAD_CALL, message: expect.stringMatching(/transaction has ended/) })
    await expect(ws.fs.access('/late.txt')).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await ws.fs.readFile('/inside.txt', 'utf8')).toBe('committed')
  })

  it('refuses a batch with a malformed operation before running any of it', async () => {
    const { ws } = await open()
    const error = await ws
      .batch([
        { op: 'writeFile', args: ['/first.txt', 'x'] },
        { op: 'format' as 'stat', args: ['/'] },
      ])
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: BAD_CALL })
    expect((error as Error).message).toMatch(/operation 1 is not \{ op, args: \[\.\.\.\] \} naming an fs operation/)
    await expect(ws.fs.access('/first.txt')).rejects.toMatchObject({ code: 'ENOENT' })
  })
})

describe('validators and hooks across the boundary', () => {
  it('runs validators registered in the worker by name and validator objects on the caller’s side', async () => {
    const seen: string[] = []
    const { ws } = await open({
      validators: [
        'json',
        { name: 'no-todo', match: '**/*.md', validate: (content, path) => (seen.push(path), !text(content).includes('TODO') || 'leaves a TODO') },
      ],
    })
    await ws.transaction(async (fs) => {
      await fs.promises.writeFile('/ok.json', '{"a":1}')
      await fs.promises.writeFile('/notes.md', 'done')
    })
    const refused = await ws.transaction((fs) => fs.promises.writeFile('/notes.md', 'TODO: later')).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ValidationError)
    expect((refused as ValidationError).failures).toEqual([{ path: '/notes.md', validator: 'no-todo', message: 'leaves a TODO' }])
    expect(seen).toEqual(['/notes.md', '/notes.md'])
    expect(await ws.fs.readFile('/notes.md', 'utf8')).toBe('done')
  })

  it('refuses to open with a validator name the worker does not know, and ends the worker', async () => {
    const worker = new Worker(bootstrap)
    const exit = exited(worker)
    await expect(openWorkerWorkspace(worker, { validators: ['no-such-validator'] })).rejects.toMatchObject({
      code: BAD_CALL,
      message: expect.stringMatching(/no validator named 'no-such-validator'/),
    })
    expect(await exit).toBe(1) // terminated
  })

  it('asks the approval hook and tells onAlert given when the workspace opened, on this side', async () => {
    const requests: number[] = []
    const alerts: { kind: string; message: string }[] = []
    const { ws } = await open({
      lower: { kind: 'fixture', files: { '/a': '1', '/b': '2', '/c': '3', '/d': '4' } },
      approve: (request) => (requests.push(request.risk.score), request.changes.length < 4),
      onAlert: (alert) => void alerts.push(alert),
    })
    await ws.transaction(async (fs) => {
      await fs.promises.rm('/a')
      await fs.promises.rm('/b')
    })
    await expect(
      ws.transaction(async (fs) => {
        await fs.promises.rm('/c')
        await fs.promises.rm('/d')
        await fs.promises.writeFile('/x', 'new')
        await fs.promises.writeFile('/y', 'new')
      }),
    ).rejects.toMatchObject({ code: 'EAPPROVAL' })
    expect(requests).toEqual([12, 14])
    expect(await ws.fs.readFile('/c', 'utf8')).toBe('3')

    await ws.recordSideEffect({ description: 'paged the on-call', compensate: { name: 'not-registered' } })
    const undone = await ws.undo()
    expect(undone.uncompensated).toEqual([{ description: 'paged the on-call', error: expect.stringMatching(/no compensator named 'not-registered'/) }])
    // Alerts are notifications on the hooks' own port: they may land just after the undo's answer.
    await vi.waitFor(() => expect(alerts).toEqual([expect.objectContaining({ kind: 'uncompensated' })]))
  })
})

describe('what the descriptors name', () => {
  const temps: string[] = []
  afterEach(() => {
    for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('opens over a real directory (adapters/node-fs) and a FileSystemTree, and never writes to the directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewindfs-worker-lower-'))
    temps.push(dir)
    writeFileSync(join(dir, 'config.json'), '{ "port": 8080 }\n')
    const { ws } = await open({ lower: { kind: 'directory', path: dir } })
    expect(await ws.fs.readFile('/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
    await ws.fs.writeFile('/config.json', 'changed')
    await ws.fs.writeFile('/new.txt', 'x')
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe('{ "port": 8080 }\n')
    expect(readdirSync(dir)).toEqual(['config.json'])

    const { ws: tree } = await open({ lower: { kind: 'file-system-tree', tree: { app: { directory: { 'a.txt': { file: { contents: 'tree' } }, link: { file: { symlink: 'a.txt' } } } } } } })
    expect(await tree.fs.readFile('/app/link', 'utf8')).toBe('tree')
  })

  it('compensates with compensators registered by name in the worker entry', async () => {
    const entry = `
      import { Workspace } from ${JSON.stringify(new URL('../src/workspace.ts', import.meta.url).href)}
      import { serve } from ${JSON.stringify(new URL('../worker/serve.ts', import.meta.url).href)}
      Workspace.registerCompensator('refund', (args) => { if (args !== 42) throw new Error('wrong order id: ' + args) })
      await serve()
    `
    const worker = workerWithEntry(entry)
    const ws = await openWorkerWorkspace(worker)
    cleanups.push(() => ws.close())
    await ws.recordSideEffect({ description: 'charged order 42', compensate: { name: 'refund', args: 42 } })
    await ws.recordSideEffect({ description: 'charged order 7', compensate: { name: 'refund', args: 7 } })
    const undone = await ws.undo({ steps: 2 })
    expect(undone.compensated).toEqual(['charged order 42'])
    expect(undone.uncompensated).toEqual([{ description: 'charged order 7', error: expect.stringMatching(/wrong order id: 7/) }])
  })
})

describe('crashes and closing', () => {
  it('rejects pending and later calls with a clear error, calls onCrash once and sets status.crashed', async () => {
    const serveModule = new URL('../worker/serve.ts', import.meta.url).href
    const worker = workerWithEntry(`
      import { registerValidator, serve } from ${JSON.stringify(serveModule)}
      // Throws outside any call, as a bug in the engine would.
      registerValidator('explodes', { name: 'explodes', match: '**', validate() { setTimeout(() => { throw new Error('engine exploded') }); return new Promise(() => {}) } })
      await serve()
    `)
    const crashes: Error[] = []
    const ws = await openWorkerWorkspace(worker, { validators: ['explodes'], onCrash: (error) => crashes.push(error) })
    cleanups.push(() => ws.close())
    await ws.fs.writeFile('/a', 'before')
    const pending = ws.transaction((fs) => fs.promises.writeFile('/b', 'never'))
    const error = await pending.catch((e: unknown) => e)
    expect(error).toMatchObject({ code: WORKER_CRASHED, message: expect.stringMatching(/crashed \(the worker threw Error: engine exploded\)/) })
    expect(crashes).toEqual([error])
    expect(ws.status.crashed).toMatch(/engine exploded/)
    await expect(ws.fs.readFile('/a')).rejects.toBe(error)
  })

  it('close() closes the engine and terminates the worker; later calls are refused', async () => {
    const worker = new Worker(bootstrap)
    const ws = await openWorkerWorkspace(worker)
    const fork = await ws.fork('side')
    await fork.fs.writeFile('/side.txt', 'fork')
    const sideFork = await ws.fork('closed-alone')
    await sideFork.close()
    await expect(sideFork.fs.readFile('/side.txt')).rejects.toMatchObject({ code: WORKER_CLOSED, message: expect.stringMatching(/'closed-alone' is closed/) })
    expect(await fork.fs.readFile('/side.txt', 'utf8')).toBe('fork') // the others keep working
    const exit = exited(worker)
    await ws.close()
    expect(await exit).toBe(1)
    expect(ws.status.closed).toBe(true)
    expect(fork.status.closed).toBe(true)
    await expect(ws.fs.readFile('/x')).rejects.toMatchObject({ code: WORKER_CLOSED })
    await ws.close() // twice is fine
  })
})

describe('durability', () => {
  const temps: string[] = []
  afterEach(() => {
    for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('reopens the last synced state from a directory store after the process running the worker was killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewindfs-worker-store-'))
    temps.push(dir)
    const store = join(dir, 'store')
    const client = new URL('../worker/index.ts', import.meta.url).href
    // A separate process, killed with SIGKILL after its acknowledged sync: nothing gets to clean up.
    const script = `
      import { Worker } from 'node:worker_threads'
      import { openWorkerWorkspace } from ${JSON.stringify(client)}
      const ws = await openWorkerWorkspace(new Worker(new URL(${JSON.stringify(bootstrap.href)})), { store: { kind: 'directory', path: ${JSON.stringify(store)} } })
      await ws.fs.writeFile('/plan.md', '1. migrate\\n')
      await ws.checkpoint({ name: 'planned' })
      await ws.state.set('phase', 'execute')
      await ws.fs.appendFile('/plan.md', '2. verify\\n')
      await ws.sync()
      process.stdout.write('synced\\n')
      process.kill(process.pid, 'SIGKILL')
    `
    const file = join(dir, 'killed.mts')
    writeFileSync(file, script)
    const child = spawn(process.execPath, ['--import', 'tsx', file], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
    expect(output).toContain('synced')
    expect(signal).toBe('SIGKILL')

    const { ws } = await open({ store: { kind: 'directory', path: store } })
    expect(await ws.fs.readFile('/plan.md', 'utf8')).toBe('1. migrate\n2. verify\n')
    expect((await ws.checkpoints()).map((c) => c.name)).toContain('planned')
    expect(await ws.state.get('phase')).toBe('execute')
    await ws.restore('planned')
    expect(await ws.fs.readFile('/plan.md', 'utf8')).toBe('1. migrate\n')
  })
})
