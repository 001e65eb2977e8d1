/**
 * A directory store's large compactions encoded on a worker thread (snapshot-worker.ts), started
 * on the first one and kept for the next: the workspace's thread goes on committing while the
 * worker replays the journal and encodes its snapshot (engine/snapshot-elsewhere.ts says why and
 * how). The worker holds the process only while it works; the store's close ends it.
 */
import { Worker } from 'node:worker_threads'
import type { ElsewhereSnapshot, SnapshotEncoder, SnapshotRequest, StatsWanted } from 'rewindfs/adapter-kit'

type Made = ElsewhereSnapshot | StatsWanted
type Waiting = { readonly resolve: (made: Made) => void; readonly reject: (error: Error) => void }

/** Characters of a snapshot and the journal since it from which a compaction is encoded on the worker (about 10 ms of encoding here). */
export const DEFAULT_FROM_CHARS = 1024 * 1024

export class SnapshotWorker implements SnapshotEncoder {
  private worker: Worker | undefined
  private serial = 0
  private readonly waiting = new Map<number, Waiting>()
  private closed = false

  constructor(
    private readonly root: string,
    readonly fromChars: number,
  ) {}

  encode(request: SnapshotRequest): Promise<Made> {
    if (this.closed) return Promise.reject(new Error('rewindfs: the store is closed'))
    const worker = (this.worker ??= this.start())
    const id = ++this.serial
    worker.ref()
    return new Promise<Made>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, request })
    })
  }

  close(): void {
    this.closed = true
    const worker = this.worker
    this.worker = undefined
    this.fail(new Error('rewindfs: the store closed while a snapshot was encoded'))
    void worker?.terminate()
  }

  private start(): Worker {
    const data = { root: this.root }
    // The process's flags but --input-type (of `node -e` only: a worker given it fails to start).
    const execArgv = process.execArgv.filter((arg) => !arg.startsWith('--input-type'))
    // From the TypeScript sources (tests, bench under tsx) the entry is loaded through tsx, as worker/bootstrap.mjs does.
    const worker = import.meta.url.endsWith('.ts')
      ? new Worker(new URL('../../worker/bootstrap.mjs', import.meta.url), { execArgv, workerData: { ...data, entry: new URL('./snapshot-worker.ts', import.meta.url).href } })
      : new Worker(new URL('./snapshot-worker.js', import.meta.url), { execArgv, workerData: data })
    worker.unref()
    worker.on('message', (message: { id: number; made?: Made; error?: string }) => {
      const waiting = this.waiting.get(message.id)
      if (waiting === undefined) return
      this.waiting.delete(message.id)
      if (this.waiting.size === 0) worker.unref()
      if (message.made !== undefined) waiting.resolve(message.made)
      else waiting.reject(new Error(message.error ?? 'rewindfs: the snapshot worker gave no answer'))
    })
    const gone = (error: Error) => {
      if (this.worker === worker) this.worker = undefined
      this.fail(error)
    }
    worker.on('error', gone)
    worker.on('exit', (code) => gone(new Error(`rewindfs: the snapshot worker exited (code ${code})`)))
    return worker
  }

  private fail(error: Error): void {
    for (const waiting of this.waiting.values()) waiting.reject(error)
    this.waiting.clear()
  }
}
