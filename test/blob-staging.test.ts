/**
 * Staging of new contents over a store that reads synchronously (src/blob/staging.ts): small
 * contents are copied into a few reused chunks, leave memory once durable and about a MiB of newer
 * writes have followed, and are read back from the store when next needed. Proved by the
 * workspace's counters and by what reads return: nothing not yet durable is ever dropped or
 * overwritten, a content read while staged is kept, and every content reads back as written,
 * before and after a reopen.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { CHUNKS, CHUNK_BYTES, STAGED_LIMIT, type StagedEntry, Staging } from '../src/blob/staging.js'
import { BlobStore } from '../src/blob/store.js'
import { Workspace } from '../src/index.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-staging-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`
const open = (path: string) => Workspace.open({ store: directoryStore(path), autoCheckpoint: false })

/** 4 KiB, its first bytes the file's number: every file's content differs. */
function content(n: number): Uint8Array {
  const bytes = new Uint8Array(4096).fill(0x61 + (n % 26))
  new DataView(bytes.buffer).setUint32(0, n, true)
  return bytes
}

/** Files that fill the staging chunks `times` times over. */
const filling = (times: number) => Math.ceil((times * CHUNKS * CHUNK_BYTES) / 4096)

describe('Staging: chunks used in turn', () => {
  const entry = (staging: Staging, id: string, size: number) => staging.place(id, new Uint8Array(size).fill(id.length))!

  it('reuses a chunk only when release lets it go, oldest first, and makes another while none is', () => {
    const asked: string[][] = []
    let allow = false
    const staging = new Staging((entries: readonly StagedEntry[]) => {
      asked.push(entries.map(([id]) => id))
      return allow
    }, 1024, 2)
    const a = entry(staging, 'a', 1024) // chunk 1
    entry(staging, 'b', 1024) // chunk 2
    const c = entry(staging, 'c', 1024) // both kept chunks held, release refuses each: chunk 3
    expect(asked).toEqual([['a'], ['b']])
    expect(a.buffer).not.toBe(c.buffer)
    expect(Array.from(a.subarray(0, 4))).toEqual([1, 1, 1, 1]) // not overwritten
    allow = true
    const d = entry(staging, 'd', 1024) // over the two kept: chunk 1 let go, then chunk 2 reused
    expect(asked.slice(2)).toEqual([['a'], ['b']])
    expect(staging.holds(a)).toBe(false)
    expect(staging.holds(d)).toBe(true)
    expect(staging.holds(c)).toBe(true)
    expect(staging.holds(new Uint8Array(8))).toBe(false)
  })

  it('uses a later chunk that can go while an older one cannot', () => {
    const pinned = new Set(['a'])
    const staging = new Staging((entries) => !entries.some(([id]) => pinned.has(id)), 1024, 2)
    const a = entry(staging, 'a', 1024)
    const b = entry(staging, 'b', 1024)
    const c = entry(staging, 'c', 1024) // b's chunk, released
    expect(c.buffer).toBe(b.buffer)
    expect(Array.from(a.subarray(0, 2))).toEqual([1, 1])
    expect(staging.holds(a)).toBe(true)
  })

  it('stages nothing larger than its limit or a chunk', () => {
    const staging = new Staging(() => true, 1024, 2)
    expect(staging.place('big', new Uint8Array(1025))).toBeUndefined()
    expect(new Staging(() => true).place('big', new Uint8Array(STAGED_LIMIT + 1))).toBeUndefined()
    expect(new Staging(() => true).place('small', new Uint8Array(STAGED_LIMIT))?.byteLength).toBe(STAGED_LIMIT)
  })
})

describe('BlobStore: staged bytes lent to the durable store', () => {
  it('stay as they are until returned, even once the content was read and its chunk is wanted again', () => {
    const blobs = new BlobStore()
    const stored = new Map<string, Uint8Array>()
    blobs.readOnDemand((id) => stored.get(id), 0)
    const id = blobs.putCopy(content(1))
    const lent = blobs.forStore(id) // a putBlobs in flight
    expect(Buffer.compare(blobs.get(id), content(1))).toBe(0) // read: copied out of its chunk
    // Everything after it durable at once (a cache of 0 lets each leave as soon as it may).
    for (let n = 2; n < filling(2); n++) {
      const other = blobs.putCopy(content(n))
      stored.set(other, content(n))
      blobs.markDurable(other)
    }
    expect(Buffer.compare(lent, content(1))).toBe(0)
    stored.set(id, content(1))
    blobs.returned([[id, lent]])
    blobs.markDurable(id)
    for (let n = filling(2); n < filling(4); n++) blobs.markDurable(blobs.putCopy(content(n)))
    // Its chunk used again since: the bytes lent are not the content any more, the store's copy is.
    expect(Buffer.compare(lent, content(1))).not.toBe(0)
    expect(Buffer.compare(blobs.get(id), content(1))).toBe(0)
  })
})

describe('a workspace over directoryStore stages what it writes', () => {
  it('holds a bounded amount of written contents, and every one reads back as written (from the store once it left)', async () => {
    const path = fresh()
    const ws = await open(path)
    const files = filling(3)
    for (let n = 0; n < files; n++) {
      ws.fs.writeFileSync(`/f${n}`, content(n))
      if (n % 100 === 99) await ws.sync()
    }
    await ws.sync()
    const storage = ws.storage
    // Resident: what the last chunks hold, not everything written (files × 4 KiB is three times that).
    expect(storage.resident.bytes).toBeLessThanOrEqual(CHUNKS * CHUNK_BYTES)
    expect(storage.durable.blobs).toBeGreaterThanOrEqual(files)
    const before = ws.counters.blobsRead
    for (let n = 0; n < files; n++) expect(Buffer.compare(ws.fs.readFileSync(`/f${n}`), content(n))).toBe(0)
    // The oldest ones had left memory: read back from the store, each once.
    const readBack = ws.counters.blobsRead - before
    expect(readBack).toBeGreaterThan(files / 2)
    expect(readBack).toBeLessThanOrEqual(files)
    await ws.close()
    const again = await open(path)
    for (let n = 0; n < files; n += 7) expect(Buffer.compare(again.fs.readFileSync(`/f${n}`), content(n))).toBe(0)
    await again.close()
  })

  it('never drops or overwrites a content that is not durable yet: staging grows instead', async () => {
    const ws = await open(fresh())
    const files = filling(3)
    // One synchronous run: no commit can happen until it ends, so nothing written is durable.
    for (let n = 0; n < files; n++) ws.fs.writeFileSync(`/f${n}`, content(n))
    expect(ws.storage.resident.bytes).toBe(files * 4096)
    // A third read now (still in the same run): each as written, none from the store.
    const readEarly = (n: number) => n % 3 === 0
    for (let n = 0; n < files; n++) if (readEarly(n)) expect(Buffer.compare(ws.fs.readFileSync(`/f${n}`), content(n))).toBe(0)
    expect(ws.counters.blobsRead).toBe(0)
    await ws.sync()
    // Durable now: further writes take the chunks back (the extra ones are let go), and the contents
    // not read leave memory; the ones read stay, copied out of their chunks.
    for (let n = files; n < 2 * files; n++) {
      ws.fs.writeFileSync(`/f${n}`, content(n))
      if (n % 100 === 99) await ws.sync()
    }
    await ws.sync()
    const early = Math.ceil(files / 3)
    expect(ws.storage.resident.bytes).toBeLessThanOrEqual(early * 4096 + CHUNKS * CHUNK_BYTES)
    for (let n = 0; n < files; n++) expect(Buffer.compare(ws.fs.readFileSync(`/f${n}`), content(n))).toBe(0)
    expect(ws.counters.blobsRead).toBe(files - early)
    await ws.close()
  })

  it('keeps a content that was read while staged: its chunk used again does not send it back to the store', async () => {
    const ws = await open(fresh())
    ws.fs.writeFileSync('/kept', content(-1))
    ws.fs.writeFileSync('/left', content(-2))
    await ws.sync()
    const held = ws.fs.readFileSync('/kept')
    for (let n = 0; n < filling(2); n++) {
      ws.fs.writeFileSync(`/f${n}`, content(n))
      if (n % 100 === 99) await ws.sync()
    }
    await ws.sync()
    const before = ws.counters.blobsRead
    expect(Buffer.compare(ws.fs.readFileSync('/kept'), content(-1))).toBe(0)
    expect(ws.counters.blobsRead).toBe(before) // in memory still
    expect(Buffer.compare(ws.fs.readFileSync('/left'), content(-2))).toBe(0)
    expect(ws.counters.blobsRead).toBe(before + 1) // had left: read back
    expect(Buffer.compare(held, content(-1))).toBe(0) // what a read returned never changes
    await ws.close()
  })

  it('stages a content once: the same bytes written again under another name share it', async () => {
    const ws = await open(fresh())
    ws.fs.writeFileSync('/a', content(1))
    ws.fs.writeFileSync('/b', content(1))
    await ws.sync()
    expect(ws.storage.resident).toEqual({ blobs: 1, bytes: 4096 })
    await ws.close()
  })
})
