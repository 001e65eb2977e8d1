/**
 * The OPFS bench's worker (bundled and driven by bench/opfs.ts): group commits of 1 KiB records
 * through opfsStore and through indexedDbStore in the same dedicated worker, and the raw floor of
 * the same bytes written through one sync access handle with one flush() per group.
 */
import { indexedDbStore } from '../../adapters/indexeddb/index.js'
import { opfsStore } from '../../adapters/opfs/index.js'
import type { Store } from '../../src/engine/store.js'

type Subject = 'opfs' | 'indexeddb' | 'raw-opfs'
/** 'journal': one appendJournal of `size` records per group. 'blob': `size` blobs and one journal record per group (a workspace's write + sync). */
type Shape = 'journal' | 'blob'

interface SyncHandle {
  write(buffer: Uint8Array, options: { at: number }): number
  flush(): void
  close(): void
}

function records(group: number, size: number, recordBytes: number): string[] {
  return Array.from({ length: size }, (_, i) => `${group}:${i}:`.padEnd(recordBytes, 'x'))
}

function blobs(group: number, size: number, recordBytes: number): [string, Uint8Array][] {
  return Array.from({ length: size }, (_, i) => {
    const bytes = new Uint8Array(recordBytes)
    crypto.getRandomValues(bytes.subarray(0, 64))
    return [`blob-${group}-${i}`, bytes]
  })
}

async function commits(store: Store, shape: Shape, groups: number, size: number, recordBytes: number): Promise<number> {
  const batches = Array.from({ length: groups }, (_, g) => (shape === 'journal' ? { records: records(g, size, recordBytes), blobs: [] } : { records: [`commit ${g}`], blobs: blobs(g, size, recordBytes) }))
  const start = performance.now()
  for (const batch of batches) {
    if (batch.blobs.length > 0) await store.putBlobs(batch.blobs)
    await store.appendJournal(batch.records)
  }
  return performance.now() - start
}

/** The floor: the same bytes per group written through one handle, one flush() per group. */
async function raw(name: string, groups: number, size: number, recordBytes: number): Promise<number> {
  const root = await navigator.storage.getDirectory()
  const file = await root.getFileHandle(name, { create: true })
  const handle = await (file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle()
  const group = new Uint8Array(size * (recordBytes + 24))
  let at = 0
  const start = performance.now()
  for (let g = 0; g < groups; g++) {
    at += handle.write(group, { at })
    handle.flush()
  }
  const elapsed = performance.now() - start
  handle.close()
  await root.removeEntry(name)
  return elapsed
}

async function run(subject: Subject, shape: Shape, name: string, groups: number, size: number, recordBytes: number): Promise<number> {
  if (subject === 'raw-opfs') return raw(name, groups, size, recordBytes)
  const store = subject === 'opfs' ? opfsStore(name) : indexedDbStore(name)
  await store.ready
  try {
    return await commits(store, shape, groups, size, recordBytes)
  } finally {
    await store.close()
  }
}

self.onmessage = async (event: MessageEvent<{ id: number; scenario: string; args: unknown[] }>) => {
  const { id, args } = event.data
  try {
    self.postMessage({ id, ok: true, value: await run(...(args as Parameters<typeof run>)) })
  } catch (error) {
    self.postMessage({ id, ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), code: (error as { code?: string }).code })
  }
}
