/**
 * The workspace members only a worker's proxy needs more than the shared suite shows: flush into
 * descriptors the worker opens (a real directory), exec in a Node worker, cursors and descriptors
 * that end with what owns them, and the new messages' boundary checks.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { afterEach, describe, expect, it } from 'vitest'
import { BAD_CALL, type WorkerWorkspace, openWorkerWorkspace } from '../worker/index.js'
import type { WorkerApi } from '../worker/serve.js'

const bootstrap = new URL('../worker/bootstrap.mjs', import.meta.url)

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rewindfs-worker-members-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function open(options: Parameters<typeof openWorkerWorkspace>[1] = {}): Promise<WorkerWorkspace> {
  const ws = await openWorkerWorkspace(new Worker(bootstrap), options)
  cleanups.push(() => ws.close())
  return ws
}

describe('flush and exec in a Node worker', () => {
  it('flushes into the real directory the worker opened as its lower layer, reporting progress here', async () => {
    const project = scratch()
    writeFileSync(join(project, 'a.txt'), 'on disk')
    const ws = await open({ lower: { kind: 'directory', path: project } })
    await ws.fs.promises.writeFile('/a.txt', 'edited in the worker')
    await ws.fs.promises.mkdir('/src')
    await ws.fs.promises.writeFile('/src/new.js', 'export {}\n')
    const preview = await ws.flush(undefined, { dryRun: true })
    expect(preview.applied).toBe(false)
    expect(readFileSync(join(project, 'a.txt'), 'utf8')).toBe('on disk')
    const progress: string[] = []
    const report = await ws.flush(undefined, { onProgress: (p) => progress.push(p.target) })
    expect(report.applied).toBe(true)
    expect(report.changes.map((c) => `${c.type} ${c.path}`).sort()).toEqual(['added /src', 'added /src/new.js', 'modified /a.txt'])
    expect(readFileSync(join(project, 'a.txt'), 'utf8')).toBe('edited in the worker')
    expect(readFileSync(join(project, 'src/new.js'), 'utf8')).toBe('export {}\n')
    expect(progress.length).toBeGreaterThan(0)
    expect(await ws.changes()).toEqual([])
  })

  it('flushes into another directory named by descriptor, and refuses a target the worker cannot open', async () => {
    const project = scratch()
    const target = scratch()
    mkdirSync(join(project, 'app'))
    writeFileSync(join(project, 'app/a.txt'), 'a')
    // A change set applies over the tree it was made from: the target has the same base.
    mkdirSync(join(target, 'app'))
    const ws = await open({ lower: { kind: 'directory', path: project } })
    await ws.fs.promises.writeFile('/app/b.txt', 'b')
    const report = await ws.flush({ kind: 'directory', path: target })
    expect(report.applied).toBe(true)
    expect(readFileSync(join(target, 'app/b.txt'), 'utf8')).toBe('b')
    await expect(ws.flush({ kind: 'indexeddb-tree', name: 'nope' })).rejects.toThrow()
    await expect(ws.flush({ kind: 'ftp' } as never)).rejects.toMatchObject({ code: BAD_CALL })
  })

  it('runs a shell command against the worker’s workspace and sees what it wrote', async () => {
    const ws = await open({ lower: { kind: 'fixture', files: { '/in.txt': 'from the lower layer\n' } } })
    const result = await ws.exec('cat in.txt && echo made > out.txt')
    expect(result).toMatchObject({ exitCode: 0, stdout: 'from the lower layer\n', changes: { added: ['/out.txt'], modified: [], deleted: [] } })
    expect(await ws.fs.promises.readFile('/out.txt', 'utf8')).toBe('made\n')
    expect((await ws.history({ limit: 1 }))[0].type).toBe('transaction')
  })
})

describe('what ends with its owner', () => {
  it('closes the descriptors a transaction body left open when the transaction ends', async () => {
    const ws = await open({ lower: { kind: 'fixture', files: { '/a.txt': 'a' } } })
    let kept: { stat(): Promise<unknown> } | undefined
    await ws.transaction(async (staged) => {
      kept = await staged.promises.open('/a.txt')
    })
    await expect(kept!.stat()).rejects.toMatchObject({ code: BAD_CALL, message: /transaction has ended/ })
  })

  it('ends a zip export’s cursor in the worker when the caller stops early', async () => {
    const files = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`/f${i}.txt`, 'x'.repeat(10_000) + i]))
    const ws = await open({ lower: { kind: 'fixture', files } })
    let chunks = 0
    for await (const chunk of await ws.export({ format: 'zip', level: 0 })) {
      expect(chunk).toBeInstanceOf(Uint8Array)
      if (++chunks === 3) break
    }
    expect(chunks).toBe(3)
    // The worker dropped the cursor: the workspace serves on, and closing it leaves nothing behind.
    expect(await ws.fs.promises.readFile('/f1.txt', 'utf8')).toHaveLength(10_001)
  })
})

describe('the boundary of the new messages', () => {
  it('answers malformed file, dir and cursor messages with ERR_REWINDFS_BAD_CALL and keeps serving', async () => {
    const worker = new Worker(bootstrap)
    cleanups.push(() => worker.terminate())
    const remote = Comlink.wrap<WorkerApi>(nodeEndpoint(worker))
    const opened = await remote.request({ t: 'open', options: { lower: { kind: 'fixture', files: { '/a.txt': 'a' } } } })
    const handle = (opened as { value: { handle: number } }).value.handle
    const garbage: [unknown, RegExp][] = [
      [{ t: 'file', handle, op: 'read', args: [4, 0, 4, 0] }, /needs the descriptor/],
      [{ t: 'file', handle, op: 'unlinkSync', fd: 1, args: [] }, /op/],
      [{ t: 'dir', handle, op: 'read', count: 4 }, /needs the Dir id/],
      [{ t: 'dir', handle, op: 'read', id: 1, count: 0 }, /count/],
      [{ t: 'cursor', handle, op: 'next', id: 99 }, /no open cursor/],
      [{ t: 'call', handle, member: 'export', args: [{ format: 'tar' }] }, /format/],
      [{ t: 'call', handle, member: 'flush', args: [{ kind: 'directory' }] }, /the arguments of flush\(\)/],
      [{ t: 'call', handle, member: 'exec', args: [42] }, /exec/],
    ]
    for (const [message, detail] of garbage) {
      const outcome = await remote.request(message)
      expect(outcome.ok, JSON.stringify(message)).toBe(false)
      if (!outcome.ok) {
        expect(outcome.error.code).toBe(BAD_CALL)
        expect(outcome.error.message).toMatch(detail)
      }
    }
    const fd = await remote.request({ t: 'file', handle, op: 'open', args: ['/a.txt'] })
    expect(fd.ok).toBe(true)
    const size = 2 ** 33
    const oversized = await remote.request({ t: 'file', handle, op: 'read', fd: (fd as { value: number }).value, args: [size, 0, 1, 0] })
    expect(oversized).toMatchObject({ ok: false, error: { code: BAD_CALL } })
    const dir = await remote.request({ t: 'dir', handle, op: 'read', id: 12345, count: 1 })
    expect(dir).toMatchObject({ ok: false, error: { code: 'ERR_DIR_CLOSED' } })
    const read = await remote.request({ t: 'fs', handle, op: 'readFile', args: ['/a.txt', 'utf8'] })
    expect(read).toEqual({ ok: true, value: 'a' })
  })
})
