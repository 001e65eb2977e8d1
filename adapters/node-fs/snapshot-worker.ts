/**
 * The thread a directory store's large compactions are encoded on (snapshots.ts starts it). Each
 * request opens the store read-only beside its writer, replays the journal's prefix it names and
 * answers with that state's snapshot (snapshotOfStore), or with the error that stopped it: the
 * writer then compacts on its own thread. The history parts' bytes are transferred, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { type SnapshotRequest, snapshotOfStore } from 'rewindfs/adapter-kit'
import { directoryStore } from './store.js'

const { root } = workerData as { root: string }

parentPort!.on('message', (message: { id: number; request: SnapshotRequest }) => {
  void answer(message)
})

async function answer({ id, request }: { id: number; request: SnapshotRequest }): Promise<void> {
  let store: ReturnType<typeof directoryStore> | undefined
  try {
    store = directoryStore(root, { readOnly: true, compactionWorker: false })
    const made = await snapshotOfStore(store, request)
    const buffers = made.kind === 'snapshot' ? [...new Set(made.parts.map(([, bytes]) => bytes.buffer as ArrayBuffer))] : []
    parentPort!.postMessage({ id, made }, buffers)
  } catch (error) {
    parentPort!.postMessage({ id, error: (error as Error)?.message ?? String(error) })
  } finally {
    await store?.close().catch(() => undefined)
  }
}
