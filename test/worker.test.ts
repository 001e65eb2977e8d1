import fs from 'node:fs'
import os from 'node:os'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/workspace.js'
import type { AsyncWorkspace } from '../src/async-workspace.js'
import { type WorkerWorkspace, openWorkerWorkspace } from '../worker/index.js'
import { BAD_CALL, EVENTS_MESSAGE } from '../worker/constants.js'
import { asyncWorkspaceSuite } from './support/async-workspace-suite.js'
import { watching } from '../src/watch.js'

const bootstrap = new URL('../worker/bootstrap.mjs', import.meta.url)

// Compile-time: the in-process Workspace is an AsyncWorkspace as it stands.
const satisfied = (ws: Workspace): AsyncWorkspace => ws
void satisfied

asyncWorkspaceSuite('in-process Workspace', (files, store) => Workspace.open({ watch: watching, lower: files, ...(store ? { store: directoryStore(store) } : {}) }))
asyncWorkspaceSuite('engine in a worker thread', (files, store) =>
  openWorkerWorkspace(new Worker(bootstrap), { lower: files ? { kind: 'fixture', files } : undefined, ...(store ? { store: { kind: 'directory', path: store } } : {}) }),
)

const iterate = <T>(iterable: AsyncIterable<T>) => iterable[Symbol.asyncIterator]()

describe('watching across a worker thread', () => {
  const opened: WorkerWorkspace[] = []
  afterEach(async () => {
    for (const ws of opened.splice(0)) await ws.close()
  })
  /** A workspace in a worker, and a count of the event messages the worker posts. */
  const open = async (files: Record<string, string>) => {
    const worker = new Worker(bootstrap)
    const messages: number[] = []
    worker.on('message', (data: { kind?: string; items?: unknown[] }) => {
      if (data?.kind === EVENTS_MESSAGE) messages.push(data.items!.length)
    })
    const ws = await openWorkerWorkspace(worker, { lower: { kind: 'fixture', files }, autoCheckpoint: false })
    opened.push(ws)
    return { ws, worker, messages }
  }

  it('posts one message per operation batch, not one per path, and before the call that caused it resolves', async () => {
    const count = 2000
    const files = Object.fromEntries(Array.from({ length: count }, (_, i) => [`/src/f${i}.ts`, `export const v = ${i}\n`]))
    const { ws, messages } = await open(files)
    const events: string[] = []
    const changes: number[] = []
    const watcher = ws.fs.watch('/', { recursive: true }, (type, name) => events.push(`${type}:${String(name)}`))
    const off = ws.events.on('change', (event) => changes.push(event.changes.length))

    // Each awaited call is one operation, told in one message that arrives before its answer.
    for (let i = 0; i < 5; i++) {
      await ws.fs.promises.writeFile(`/src/f${i}.ts`, `export const v = -${i}\n`)
      expect(events.at(-1)).toBe(`change:src/f${i}.ts`)
    }
    expect(messages).toEqual([2, 2, 2, 2, 2])
    expect(changes).toEqual([1, 1, 1, 1, 1])

    // A batch runs every call in one task: one delivery, so one message for all of it.
    messages.length = 0
    events.length = 0
    changes.length = 0
    const results = await ws.batch(Array.from({ length: count }, (_, i) => ({ op: 'writeFile' as const, args: [`/src/f${i}.ts`, `export const v = ${i * 2}\n`] })))
    expect(results.every((r) => r.ok)).toBe(true)
    expect(messages.length).toBe(1)
    expect(events.length).toBe(count)
    expect(new Set(events).size).toBe(count)
    expect(changes.length).toBe(count)

    // Nothing listening: the worker posts nothing.
    watcher.close()
    off()
    messages.length = 0
    await ws.fs.promises.writeFile('/src/f0.ts', 'quiet')
    await ws.checkpoint({ name: 'quiet' })
    expect(messages).toEqual([])
  })

  it('a watch that cannot start is told as the watcher’s error, as Node reports a watch that fails; a staged fs is not watched', async () => {
    const { ws } = await open({ '/a.txt': 'a' })
    const error = await new Promise<Error & { code?: string; syscall?: string; path?: string; filename?: string }>((resolve) => ws.fs.watch('/missing/x').once('error', resolve))
    expect(error).toMatchObject({ code: 'ENOENT', errno: -2, syscall: 'watch', path: '/missing/x', filename: '/missing/x', message: "ENOENT: no such file or directory, watch '/missing/x'" })
    await expect(iterate(ws.fs.promises.watch('/missing/x')).next()).rejects.toMatchObject({ code: 'ENOENT', syscall: 'watch' })
    // Node's own argument errors are thrown at once, on this side.
    expect(() => ws.fs.watch(42 as unknown as string)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => ws.fs.watch('/a.txt', { recursive: 'yes' as unknown as boolean })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    await ws.transaction(async (staged) => {
      expect(() => staged.watch('/a.txt')).toThrow(expect.objectContaining({ code: 'ENOSYS', syscall: 'watch' }))
    })
  })

  it('watchers, fs.promises.watch and event streams end when the workspace closes, and with the crash when the worker dies', async () => {
    const first = await open({ '/a.txt': 'a' })
    const closed = new Promise<string>((resolve) => first.ws.fs.watch('/').once('close', () => resolve('close')))
    const pending = iterate(first.ws.fs.promises.watch('/')).next()
    const stream = first.ws.events.stream()
    const streamed = stream.next()
    await first.ws.close()
    expect(await closed).toBe('close')
    expect(await pending).toEqual({ value: undefined, done: true })
    expect(await streamed).toEqual({ value: undefined, done: true })

    const second = await open({ '/a.txt': 'a' })
    const errors: string[] = []
    const watcher = second.ws.fs.watch('/')
    watcher.on('error', (error: Error & { code?: string }) => errors.push(error.code!))
    const watcherClosed = new Promise((resolve) => watcher.once('close', resolve))
    const iterator = iterate(second.ws.fs.promises.watch('/'))
    const firstEvent = iterator.next()
    await second.ws.fs.promises.writeFile('/b.txt', 'started')
    expect(await firstEvent).toMatchObject({ value: { eventType: 'rename', filename: 'b.txt' } })
    expect(await iterator.next()).toMatchObject({ value: { eventType: 'change', filename: 'b.txt' } })
    const next = iterator.next()
    const crashStream = second.ws.events.stream().next()
    await second.worker.terminate()
    await expect(next).rejects.toMatchObject({ code: 'ERR_REWINDFS_WORKER_CRASHED' })
    expect(await crashStream).toEqual({ value: undefined, done: true })
    await watcherClosed
    expect(errors).toEqual(['ERR_REWINDFS_WORKER_CRASHED'])
  })

  it('a fork’s watches and events are its own', async () => {
    const { ws } = await open({ '/a.txt': 'a' })
    const fork = await ws.fork('other')
    const mine: string[] = []
    const theirs: string[] = []
    ws.fs.watch('/', (type, name) => mine.push(`${type}:${String(name)}`))
    fork.fs.watch('/', (type, name) => theirs.push(`${type}:${String(name)}`))
    const forkOperations: string[] = []
    fork.events.on('operation', (event) => forkOperations.push(event.operation.paths.join()))
    await ws.fs.promises.writeFile('/main.txt', 'm')
    await fork.fs.promises.writeFile('/fork.txt', 'f')
    expect(mine).toEqual(['rename:main.txt', 'change:main.txt'])
    expect(theirs).toEqual(['rename:fork.txt', 'change:fork.txt'])
    expect(forkOperations).toEqual(['/fork.txt'])
  })
})

describe('the memory budget of a worker’s workspace', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('cacheBytes in the descriptor bounds the durable contents a directoryStore’s workspace keeps; a bad value is refused at the boundary', async () => {
    const dir = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-worker-cache-`)
    dirs.push(dir)
    const size = 4096
    const content = (i: number) => String(i).padEnd(size, '.')
    const writer = await Workspace.open({ store: directoryStore(dir), autoCheckpoint: false })
    for (let i = 0; i < 20; i++) writer.fs.writeFileSync(`/f${i}.txt`, content(i))
    await writer.checkpoint({ name: 'written' })
    await writer.close()

    const ws = await openWorkerWorkspace(new Worker(bootstrap), { store: { kind: 'directory', path: dir }, cacheBytes: 3 * size, autoCheckpoint: false })
    try {
      const opened = await ws.storage
      expect(opened).toMatchObject({ contents: 'on-demand', cache: { limit: 3 * size }, durable: { blobs: 20, bytes: 20 * size }, resident: { blobs: 0, bytes: 0 } })
      for (let i = 0; i < 20; i++) expect(await ws.fs.readFile(`/f${i}.txt`, 'utf8')).toBe(content(i))
      const read = await ws.storage
      // The last three read stay; the others left the cache as later ones came in.
      expect(read.resident).toEqual({ blobs: 3, bytes: 3 * size })
      expect(read.cache).toEqual({ bytes: 3 * size, limit: 3 * size })
      expect(ws.status).toMatchObject({ warnings: [] })
    } finally {
      await ws.close()
    }

    // Infinity keeps every content read, as in-process.
    const unbounded = await openWorkerWorkspace(new Worker(bootstrap), { store: { kind: 'directory', path: dir }, cacheBytes: Infinity, autoCheckpoint: false })
    try {
      for (let i = 0; i < 20; i++) await unbounded.fs.readFile(`/f${i}.txt`)
      expect((await unbounded.storage).resident).toEqual({ blobs: 20, bytes: 20 * size })
    } finally {
      await unbounded.close()
    }

    for (const cacheBytes of [-1, Number.NaN, '1 MiB']) {
      const worker = new Worker(bootstrap)
      await expect(openWorkerWorkspace(worker, { store: { kind: 'directory', path: dir }, cacheBytes: cacheBytes as number })).rejects.toMatchObject({
        code: BAD_CALL,
        message: expect.stringMatching(/cacheBytes/),
      })
      await worker.terminate()
    }
  })
})
