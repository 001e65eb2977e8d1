/**
 * A worker that loads and never calls serve() (a wrong entry, an entry that forgot it, a start stuck
 * on an await): openWorkerWorkspace rejects with ETIMEDOUT after serveTimeoutMs and terminates the
 * worker, where it waited for ever. A worker that serves late, or before the page listened, opens.
 */
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { openWorkerWorkspace } from '../worker/index.js'
import { SERVING_MESSAGE } from '../worker/constants.js'

const bootstrap = new URL('../worker/bootstrap.mjs', import.meta.url)

/** A worker that loads and runs, and never serves. */
const silent = () => new Worker('setInterval(() => {}, 60_000)', { eval: true })

const exited = (worker: Worker) => new Promise<number>((resolve) => worker.once('exit', resolve))

describe('a worker that never calls serve()', () => {
  it('rejects the open with ETIMEDOUT after serveTimeoutMs, saying so, and terminates the worker', async () => {
    const worker = silent()
    const exit = exited(worker)
    const started = Date.now()
    const error = await openWorkerWorkspace(worker, { serveTimeoutMs: 300 }).catch((e: unknown) => e as Error & Record<string, unknown>)
    expect(Date.now() - started).toBeGreaterThanOrEqual(290)
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ code: 'ETIMEDOUT', errno: -110, syscall: 'open' })
    expect((error as Error).message).toMatch(/^ETIMEDOUT: the worker never called serve\(\) within 300 ms; .*, open$/)
    expect(await exit).toBe(1) // terminated
  }, 10_000)

  it('serveTimeoutMs is checked as Node checks a timeout (a bad value terminates the worker too); 0 waits without a limit', async () => {
    for (const [value, code] of [
      [-1, 'ERR_OUT_OF_RANGE'],
      [Number.NaN, 'ERR_OUT_OF_RANGE'],
      [Infinity, 'ERR_OUT_OF_RANGE'],
      ['1s', 'ERR_INVALID_ARG_TYPE'],
    ] as const) {
      const worker = silent()
      const exit = exited(worker)
      await expect(openWorkerWorkspace(worker, { serveTimeoutMs: value as number })).rejects.toMatchObject({ code, message: expect.stringMatching(/serveTimeoutMs/) })
      await exit
    }
    // No limit: still waiting after longer than a short timeout would have allowed.
    const worker = silent()
    const open = openWorkerWorkspace(worker, { serveTimeoutMs: 0 }).then(
      () => 'opened',
      (e: Error & { code?: string }) => e.code,
    )
    const early = await Promise.race([open, new Promise((resolve) => setTimeout(() => resolve('waiting'), 500))])
    expect(early).toBe('waiting')
    await worker.terminate()
    expect(await open).toBe('ERR_REWINDFS_WORKER_CRASHED')
  }, 10_000)
})

describe('a worker that serves', () => {
  it('opens when serve() comes late (the first message waits for it), within the timeout', async () => {
    // The default entry, imported a while after the worker started.
    const late = `setTimeout(() => import(${JSON.stringify(bootstrap.href)}), 300)`
    const ws = await openWorkerWorkspace(new Worker(late, { eval: true }), { lower: { kind: 'fixture', files: { '/a.txt': 'late' } }, serveTimeoutMs: 20_000 })
    try {
      expect(await ws.fs.promises.readFile('/a.txt', 'utf8')).toBe('late')
    } finally {
      await ws.close()
    }
  })

  it('opens when serve() was called before the page listened (its serving message missed: the hello is answered)', async () => {
    const worker = new Worker(bootstrap)
    await new Promise<void>((resolve) => {
      const heard = (data: { kind?: string }) => {
        if (data?.kind !== SERVING_MESSAGE) return
        worker.off('message', heard)
        resolve()
      }
      worker.on('message', heard)
    })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const ws = await openWorkerWorkspace(worker, { lower: { kind: 'fixture', files: { '/a.txt': 'early' } }, serveTimeoutMs: 2000 })
    try {
      expect(await ws.fs.promises.readFile('/a.txt', 'utf8')).toBe('early')
    } finally {
      await ws.close()
    }
  })
})
