/**
 * The OPFS bench's worker (bundled and driven by bench/opfs.ts): group commits of 1 KiB records
 * through opfsStore and through indexedDbStore in the same dedicated worker, and the raw floor of
 * the same bytes written through one sync access handle with one flush() per group; and the
 * reopen of a workspace of many files on each store.
 */
import { indexedDbStore } from '../../adapters/indexeddb/index.js'
import { opfsStore } from '../../adapters/opfs/index.js'
import type { Store } from '../../src/engine/store.js'
import { Workspace } from '../../src/index.js'

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

/** What reopening a workspace of `files` files of `fileBytes` (written, synced, compacted, closed) cost on one store. */
export interface Reopen {
  open: number
  contents: string
  residentBytes: number
  durableBlobs: number
  /** Reading every file after the open. */
  readAll: number
}

async function reopen(subject: 'opfs' | 'indexeddb', name: string, files: number, fileBytes: number): Promise<Reopen> {
  const make = () => (subject === 'opfs' ? opfsStore(name) : indexedDbStore(name))
  const ws = await Workspace.open({ store: make(), autoCheckpoint: false })
  const bytes = new Uint8Array(fileBytes)
  for (let d = 0; d < files / 100; d++) {
    ws.fs.mkdirSync(`/d${d}`)
    for (let f = 0; f < 100; f++) {
      crypto.getRandomValues(bytes.subarray(0, 64))
      ws.fs.writeFileSync(`/d${d}/f${f}`, bytes)
    }
    await ws.sync()
  }
  await ws.compact()
  await ws.close()
  const start = performance.now()
  const again = await Workspace.open({ store: make(), autoCheckpoint: false })
  const open = performance.now() - start
  const { contents, resident, durable } = again.storage
  const reading = performance.now()
  let read = 0
  for (let d = 0; d < files / 100; d++) for (let f = 0; f < 100; f++) read += (again.fs.readFileSync(`/d${d}/f${f}`) as Uint8Array).length
  const readAll = performance.now() - reading
  await again.close()
  if (read !== files * fileBytes) throw new Error(`read back ${read} bytes of ${files * fileBytes}`)
  return { open, contents, residentBytes: resident.bytes, durableBlobs: durable.blobs, readAll }
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
  const { id, scenario, args } = event.data
  try {
    const value = scenario === 'reopen' ? await reopen(...(args as Parameters<typeof reopen>)) : await run(...(args as Parameters<typeof run>))
    self.postMessage({ id, ok: true, value })
  } catch (error) {
    self.postMessage({ id, ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), code: (error as { code?: string }).code })
  }
}
