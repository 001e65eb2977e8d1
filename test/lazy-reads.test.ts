/**
 * History on demand, proved by counters (blobs read back from the store), never by clocks: over a
 * store that reads synchronously (directoryStore), open reads no contents; a file, an old
 * checkpoint's restore, diff, undo and checkpointInfo read only the blobs they need; durable
 * contents stay within `cacheBytes` in memory, least recently used leaving first; damage found on
 * a read is EIO, reported, its checkpoints broken; a compaction reads no contents. A store without
 * synchronous reads keeps loading everything on open, and says so.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import type { WorkspaceOptions } from '../src/index.js'
import * as pack from './support/pack-raw.js'

const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-lazy-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

const open = (path: string, options: Partial<WorkspaceOptions> = {}) => Workspace.open({ store: directoryStore(path), autoCheckpoint: false, ...options })
const read = (ws: Workspace) => ws.counters.blobsRead
const content = (round: number, file: number) => `round ${round}, file ${file}\n`.repeat(40)

/** 50 files over 6 rounds, a checkpoint after each: 300 distinct contents, 50 live. */
async function history(path: string): Promise<string[]> {
  const ws = await open(path)
  const ids: string[] = []
  for (let round = 0; round < 6; round++) {
    for (let file = 0; file < 50; file++) ws.fs.writeFileSync(`/dir${file % 5}/f${file}.txt`, content(round, file))
    ids.push((await ws.checkpoint({ name: `r${round}` })).id)
  }
  await ws.close()
  return ids
}

/** Makes the directories history() writes into (a write does not make its parent). */
async function historyIn(path: string): Promise<string[]> {
  const ws = await open(path)
  for (let d = 0; d < 5; d++) ws.fs.mkdirSync(`/dir${d}`)
  await ws.close()
  return history(path)
}

describe('contents on demand over a directory store', () => {
  it('open reads no contents; a file reads its one blob, once, then from the cache', async () => {
    const path = fresh()
    await historyIn(path)
    const ws = await open(path)
    expect(read(ws)).toBe(0)
    const storage = ws.storage
    expect(storage.contents).toBe('on-demand')
    expect(storage.resident).toEqual({ blobs: 0, bytes: 0 })
    expect(storage.durable.blobs).toBe(300)
    expect(storage.durable.bytes).toBe(Array.from({ length: 6 }, (_, r) => Array.from({ length: 50 }, (_, f) => content(r, f).length)).flat().reduce((a, b) => a + b, 0))
    expect(ws.fs.readFileSync('/dir3/f13.txt', 'utf8')).toBe(content(5, 13))
    expect(read(ws)).toBe(1)
    expect(ws.fs.readFileSync('/dir3/f13.txt', 'utf8')).toBe(content(5, 13))
    expect(read(ws)).toBe(1)
    // Listing and stat need no contents.
    expect(ws.fs.readdirSync('/dir0')).toHaveLength(10)
    expect(ws.fs.statSync('/dir0/f0.txt').size).toBe(content(5, 0).length)
    expect(read(ws)).toBe(1)
    expect(ws.storage.resident.blobs).toBe(1)
    await ws.close()
  })

  it('restore, diff, undo and checkpointInfo of an old checkpoint read only the blobs they need', async () => {
    const path = fresh()
    const checkpoints = await historyIn(path)
    let ws = await open(path)
    // Restoring the first checkpoint moves trees: no content is read.
    await ws.restore(checkpoints[0])
    expect(read(ws)).toBe(0)
    // Its files read their own blobs only.
    for (let file = 0; file < 10; file++) expect(ws.fs.readFileSync(`/dir${file % 5}/f${file}.txt`, 'utf8')).toBe(content(0, file))
    expect(read(ws)).toBe(10)
    await ws.close()

    ws = await open(path)
    // The diff of one old operation: that file's two versions.
    const op = ws.history({ path: '/dir2/f7.txt' }).at(-2)!
    const detail = ws.operation(op.id)!
    expect(detail.diff).toHaveLength(1)
    expect(read(ws)).toBeLessThanOrEqual(2)
    // checkpointInfo of the first checkpoint: the lines of the 50 files it holds, nothing else.
    const before = read(ws)
    const info = await ws.checkpointInfo('r0')
    expect(info.files).toBe(50)
    expect(info.totalLines).toBe(50 * 40)
    expect(read(ws) - before).toBeLessThanOrEqual(50)
    await ws.close()

    ws = await open(path)
    // Undoing the restore (an operation over every path) reads no content for the tree, only what its report counts.
    ws.fs.writeFileSync('/dir1/f1.txt', 'changed')
    const beforeUndo = read(ws)
    await ws.undo()
    expect(ws.fs.readFileSync('/dir1/f1.txt', 'utf8')).toBe(content(0, 1))
    // The line counts of the one path undone: its previous content (the new one was never durable-only).
    expect(read(ws) - beforeUndo).toBeLessThanOrEqual(1)
    await ws.close()
  })

  it('keeps durable contents in memory within cacheBytes, least recently used leaving first; cold writes leave once durable', async () => {
    const path = fresh()
    await historyIn(path)
    const limit = 8 * 1024
    const ws = await open(path, { cacheBytes: limit })
    const size = content(5, 0).length
    for (let file = 0; file < 50; file++) ws.fs.readFileSync(`/dir${file % 5}/f${file}.txt`)
    expect(read(ws)).toBe(50)
    expect(ws.storage.resident.bytes).toBeLessThanOrEqual(limit)
    expect(ws.storage.cache).toEqual({ bytes: ws.storage.resident.bytes, limit })
    // The most recently read ones are in memory, the first ones left.
    ws.fs.readFileSync('/dir4/f49.txt')
    expect(read(ws)).toBe(50)
    ws.fs.readFileSync('/dir0/f0.txt')
    expect(read(ws)).toBe(51)
    // New contents stay until they are durable, then leave like the rest.
    for (let file = 0; file < 50; file++) ws.fs.writeFileSync(`/dir${file % 5}/f${file}.txt`, `new ${file}\n`.repeat(100))
    expect(ws.storage.resident.bytes).toBeGreaterThan(50 * 100 * 6)
    await ws.sync()
    expect(ws.storage.resident.bytes).toBeLessThanOrEqual(limit)
    expect(ws.storage.durable.blobs).toBe(350)
    expect(ws.fs.readFileSync('/dir0/f0.txt', 'utf8')).toBe('new 0\n'.repeat(100))
    expect(size).toBeGreaterThan(0)
    await ws.close()
    // What left memory is durable: a reopen reads it all back.
    const again = await open(path)
    for (let file = 0; file < 50; file++) expect(again.fs.readFileSync(`/dir${file % 5}/f${file}.txt`, 'utf8')).toBe(`new ${file}\n`.repeat(100))
    await again.close()
  })

  it('a compaction reads no contents and writes what is live, not the history', async () => {
    const path = fresh()
    await historyIn(path)
    const store = directoryStore(path)
    const ws = await Workspace.open({ store, autoCheckpoint: false, retention: { checkpoints: 1, operations: 10 } })
    const appended = store.packStats!.appendedBytes
    const historyBytes = ws.storage.durable.bytes
    for (const checkpoint of ws.checkpoints().slice(0, -1)) await ws.deleteCheckpoint(checkpoint.id)
    await ws.compact()
    await store.idle()
    expect(read(ws)).toBe(0)
    // The snapshot, a record of the places deleted, and the live blobs a collection moved: far less than the history.
    expect(store.packStats!.appendedBytes - appended).toBeLessThan(historyBytes / 3)
    expect(ws.storage.durable.blobs).toBeLessThan(300)
    await ws.close()
  })

  it('damage found when a content is read: EIO, never content; reported at once, its checkpoints broken, verify lists it', async () => {
    const path = fresh()
    await historyIn(path)
    const ws0 = await open(path)
    const id = ws0.storage.durable.blobs > 0 ? [...pack.blobRecords(path).values()].find((record) => record.payload.toString('utf8') === content(0, 7))!.id : ''
    await ws0.close()
    pack.flipBlobByte(path, id, 5)
    const alerts: string[] = []
    const ws = await open(path, { onAlert: (alert) => alerts.push(alert.kind) })
    expect(ws.status.warnings).toEqual([])
    await ws.restore('r0')
    expect(() => ws.fs.readFileSync('/dir2/f7.txt')).toThrow(expect.objectContaining({ code: 'EIO', syscall: 'read', path: '/dir2/f7.txt' }))
    expect(() => ws.fs.readFileSync('/dir2/f7.txt')).toThrow(expect.objectContaining({ code: 'EIO' }))
    expect(ws.status.warnings.join('\n')).toMatch(new RegExp(`blob ${id.replace(/[+/=]/g, '.')} .*cannot be read`))
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(alerts).toEqual(['integrity'])
    expect(ws.checkpoints().find((c) => c.name === 'r0')?.broken).toBe(true)
    const report = await ws.verify()
    expect(report.corrupt).toEqual([id])
    // Every other blob the store holds was read and checked (the damaged one was dropped when read).
    expect(report.verified).toBe(299)
    expect(alerts).toEqual(['integrity'])
    await ws.close()
  })
})

describe('open follows the last snapshot and the index, not history', () => {
  const options = { autoCheckpoint: false, compactEvery: 100, retention: { operations: 40, checkpoints: 3 } } as const
  const segmentBytes = 16 * 1024
  /** `rounds` rounds of 20 files and a checkpoint, under a retention that keeps the live state and kept history the same size. */
  async function session(path: string, rounds: number): Promise<void> {
    const ws = await Workspace.open({ store: directoryStore(path, { segmentBytes }), ...options })
    ws.fs.mkdirSync('/src')
    for (let round = 0; round < rounds; round++) {
      for (let file = 0; file < 20; file++) ws.fs.writeFileSync(`/src/f${file}.txt`, content(round, file))
      await ws.checkpoint({ name: `r${round}`, kind: 'auto' }) // automatic: retention keeps the last three
      await ws.sync()
    }
    await ws.compact() // the journal ends in its snapshot: open replays no tail in either store
    await ws.close()
  }
  /** What open did, by the store's and the workspace's counters. */
  async function opened(path: string, rounds: number) {
    const store = directoryStore(path, { segmentBytes })
    const ws = await Workspace.open({ store, ...options })
    const stats = store.packStats!
    const work = { scanned: stats.scannedBytes, journal: stats.journalBytesRead, indexed: stats.indexedSegments, segments: stats.segments, blobsRead: ws.counters.blobsRead, replayed: ws.status.loaded!.operations }
    expect(ws.fs.readFileSync('/src/f7.txt', 'utf8')).toBe(content(rounds - 1, 7))
    expect(ws.checkpoints().map((c) => c.name)).toEqual([`r${rounds - 3}`, `r${rounds - 2}`, `r${rounds - 1}`])
    await ws.close()
    return work
  }

  it('ten times the history: no segment read record by record, no content read, the same journal bytes read', async () => {
    const short = fresh()
    const long = fresh()
    await session(short, 6)
    await session(long, 60)
    const few = await opened(short, 6)
    const many = await opened(long, 60)
    for (const work of [few, many]) {
      // Every segment from its index file (the last one's written when the store closed): none scanned.
      expect(work.indexed).toBe(work.segments)
      expect(work.scanned).toBe(0)
      expect(work.blobsRead).toBe(0)
      expect(work.replayed).toBe(0)
    }
    // The journal from its last snapshot on, whose size follows what is kept, not how long the session ran.
    expect(many.journal).toBeGreaterThan(0)
    expect(many.journal).toBeLessThan(1.1 * few.journal)
  })
})

describe('open asks the store about a blob when it is first looked up, and lists none', () => {
  /** `files` files written `rounds` times, a checkpoint each, the journal compacted: files × rounds contents. */
  async function build(path: string, files: number, rounds: number): Promise<void> {
    const ws = await open(path)
    for (let round = 0; round < rounds; round++) {
      for (let file = 0; file < files; file++) ws.fs.writeFileSync(`/f${file}.txt`, content(round, file))
      await ws.checkpoint({ name: `r${round}` })
    }
    await ws.compact()
    await ws.close()
  }
  /** The directory store, its calls counted by member. */
  function counted(path: string) {
    const store = directoryStore(path)
    const calls: Record<string, number> = {}
    const proxy = new Proxy(store, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key, target)
        if (typeof value !== 'function' || typeof key !== 'string') return value
        return (...args: unknown[]) => {
          calls[key] = (calls[key] ?? 0) + 1
          return (value as (...args: unknown[]) => unknown).apply(target, args)
        }
      },
    })
    return { store, proxy, calls }
  }

  it('ten times the blobs: the same calls on open, no blob listed or read; ws.storage counts from the store\'s totals', async () => {
    const opened: Record<string, number>[] = []
    for (const rounds of [3, 30]) {
      const path = fresh()
      await build(path, 40, rounds)
      const { store, proxy, calls } = counted(path)
      const ws = await Workspace.open({ store: proxy, autoCheckpoint: false })
      opened.push({ ...calls })
      // What the store lists, summed here: what ws.storage reports without a sum of its own.
      const sizes = await store.blobSizes()
      expect(sizes.length).toBeGreaterThanOrEqual(40 * rounds)
      expect(ws.storage.durable).toEqual({ blobs: sizes.length, bytes: sizes.reduce((sum, [, size]) => sum + size, 0) })
      expect(ws.storage.blobs).toBe(sizes.length)
      // The oldest checkpoint's files: one lookup and one read for each.
      const before = { ...calls }
      await ws.restore('r0')
      for (let file = 0; file < 40; file++) expect(ws.fs.readFileSync(`/f${file}.txt`, 'utf8')).toBe(content(0, file))
      expect(ws.counters.blobsRead).toBe(40)
      // A few lookups for each file read (is it there, read it back, its size), not one per blob held.
      expect((calls.blobSize ?? 0) - (before.blobSize ?? 0)).toBeLessThanOrEqual(4 * 40)
      await ws.close()
    }
    const [few, many] = opened
    for (const calls of opened) {
      expect(calls.blobIds ?? 0).toBe(0)
      expect(calls.blobSizes ?? 0).toBe(0)
      expect(calls.getBlob ?? 0).toBe(0)
      expect(calls.readBlobSync ?? 0).toBe(0)
    }
    // Asked per blob looked up by open (the live tree's, none here), not per blob held.
    expect(many).toEqual(few)
  })

  it('a content written again while a compaction deletes it is stored again, not lost', async () => {
    const path = fresh()
    const options = { retention: { operations: 1 } }
    let ws = await open(path, options)
    ws.fs.writeFileSync('/a.txt', 'old content')
    await ws.sync()
    ws.fs.writeFileSync('/a.txt', 'new content')
    // The write of 'old content' leaves the kept history (trimmed in batches): nothing reaches it any more.
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync(`/other${i % 5}.txt`, `other ${i}`)
    await ws.close()
    const old = createHash('sha1').update('old content').digest('base64')
    const { store, proxy } = counted(path)
    let deleted: readonly string[] = []
    const deleteBlobs = store.deleteBlobs.bind(store)
    store.deleteBlobs = async (ids) => {
      if (ids.includes(old)) {
        deleted = ids
        // The compaction decided to delete it and has not yet: written again now, it must be stored again.
        ws.fs.writeFileSync('/again.txt', 'old content')
      }
      return deleteBlobs(ids)
    }
    ws = await Workspace.open({ store: proxy, autoCheckpoint: false, ...options })
    expect(ws.storage.resident.blobs).toBe(0)
    // Nothing is deleted until the history's parts are listed (in the background, after open).
    for (let tries = 0; deleted.length === 0 && tries < 50; tries++) {
      await ws.compact()
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(deleted).toContain(old)
    await ws.sync()
    await ws.close()
    ws = await open(path)
    expect(ws.fs.readFileSync('/again.txt', 'utf8')).toBe('old content')
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('new content')
    expect(ws.status.warnings).toEqual([])
    await ws.close()
  })
})

describe('the state a clean close saves', () => {
  /** What the store finds on open: the state taken back or not, segments read record by record, every blob and file as written. */
  async function reopened(path: string, expected: Record<string, string>) {
    const store = directoryStore(path, { segmentBytes: 16 * 1024 })
    const stats = { ...store.packStats! }
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    for (const [file, text] of Object.entries(expected)) expect(ws.fs.readFileSync(file, 'utf8')).toBe(text)
    expect(ws.status.warnings).toEqual([])
    const sizes = await store.blobSizes()
    expect(ws.storage.durable).toEqual({ blobs: sizes.length, bytes: sizes.reduce((sum, [, size]) => sum + size, 0) })
    for (const [id] of sizes) expect(store.readBlobSync(id)).toBeDefined()
    return { stats, ws, store }
  }
  /** Rounds of 20 files over small segments, a checkpoint each: what the files hold at the end. */
  async function written(path: string, rounds: number, from = 0): Promise<Record<string, string>> {
    const ws = await Workspace.open({ store: directoryStore(path, { segmentBytes: 16 * 1024 }), autoCheckpoint: false })
    const files: Record<string, string> = {}
    for (let round = from; round < from + rounds; round++) {
      for (let file = 0; file < 20; file++) ws.fs.writeFileSync(`/f${file}.txt`, (files[`/f${file}.txt`] = content(round, file)))
      await ws.checkpoint({ name: `r${round}` })
    }
    await ws.close()
    return files
  }

  it('is taken back on open instead of the index files; written again only after appends', async () => {
    const path = fresh()
    const files = await written(path, 6)
    const { stats, ws, store } = await reopened(path, files)
    expect(stats.statesRestored).toBe(1)
    expect(stats.indexedSegments).toBe(stats.segments)
    expect(stats.scannedBytes).toBe(0)
    await ws.close()
    // Closed without appending: the state stays as it was, and is taken back again.
    const saved = fs.statSync(pack.stateFile(path)).mtimeMs
    expect(store.packStats!.appendedBytes).toBe(0)
    const again = await reopened(path, files)
    expect(again.stats.statesRestored).toBe(1)
    expect(fs.statSync(pack.stateFile(path)).mtimeMs).toBe(saved)
    await again.ws.close()
  })

  it('no longer describing the segments (appends a crash kept from a close, a collection, damage), it is ignored: open scans', async () => {
    const path = fresh()
    let files = await written(path, 6)
    const stale = fs.readFileSync(pack.stateFile(path))
    // More appends, then the state as a crash would leave it: the one saved before them.
    files = { ...files, ...(await written(path, 2, 6)) }
    fs.writeFileSync(pack.stateFile(path), stale)
    let opened = await reopened(path, files)
    expect(opened.stats.statesRestored).toBe(0)
    await opened.ws.close()
    // A checkpoint deleted and compacted: segments collected, the state saved after it describes what is left.
    const store = directoryStore(path, { segmentBytes: 16 * 1024 })
    const ws = await Workspace.open({ store, autoCheckpoint: false, retention: { operations: 1 } })
    for (const checkpoint of ws.checkpoints().slice(0, -1)) await ws.deleteCheckpoint(checkpoint.id)
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync('/other.txt', `other ${i}`)
    files['/other.txt'] = 'other 39'
    for (let tries = 0; tries < 20; tries++) {
      await ws.compact()
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await store.idle()
    expect(store.packStats!.collected).toBeGreaterThan(0)
    await ws.close()
    opened = await reopened(path, files)
    expect(opened.stats.statesRestored).toBe(1)
    await opened.ws.close()
    // Its bytes damaged: its checksum fails, it is ignored.
    const bytes = fs.readFileSync(pack.stateFile(path))
    bytes[bytes.length >> 1] ^= 0x10
    fs.writeFileSync(pack.stateFile(path), bytes)
    opened = await reopened(path, files)
    expect(opened.stats.statesRestored).toBe(0)
    await opened.ws.close()
  })
})

describe('a snapshot whose history opens lazily (format 2)', () => {
  const options = { autoCheckpoint: false, compactEvery: Number.POSITIVE_INFINITY, retention: { operations: 40 } } as const
  const files = (ws: Workspace) => {
    const out: Record<string, string> = {}
    const walk = (dir: string) => {
      for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
        const path = dir === '/' ? `/${name}` : `${dir}/${name}`
        if (ws.fs.statSync(path).isDirectory()) walk(path)
        else out[path] = ws.fs.readFileSync(path, 'utf8') as string
      }
    }
    walk('/')
    return out
  }
  /** `rounds` rounds over 50 files in 5 directories, a kept checkpoint after each, compacted at the end; what each checkpoint held. */
  async function session(path: string, rounds: number): Promise<Map<string, Record<string, string>>> {
    const ws = await Workspace.open({ store: directoryStore(path), ...options })
    for (let d = 0; d < 5; d++) ws.fs.mkdirSync(`/dir${d}`)
    const held = new Map<string, Record<string, string>>()
    for (let round = 0; round < rounds; round++) {
      // Most files change each round, one directory keeps its files (a subtree checkpoints share).
      for (let file = 10; file < 50; file++) ws.fs.writeFileSync(`/dir${file % 5}/f${file}.txt`, content(round, file))
      if (round === 0) for (let file = 0; file < 10; file++) ws.fs.writeFileSync(`/dir${file % 5}/f${file}.txt`, content(round, file))
      await ws.checkpoint({ name: `r${round}` })
      held.set(`r${round}`, files(ws))
    }
    await ws.compact()
    await ws.close()
    return held
  }
  /** Part reads: the store's blob reads that were not contents. */
  const partsRead = (store: ReturnType<typeof directoryStore>, ws: Workspace) => store.packStats!.blobsRead - ws.counters.blobsRead

  it('ten times the history: open reads no part and about the same journal bytes; a compaction then writes no part', async () => {
    const work: { journal: number; parts: number; appended: number }[] = []
    for (const rounds of [6, 60]) {
      const path = fresh()
      await session(path, rounds)
      const store = directoryStore(path)
      const ws = await Workspace.open({ store, ...options })
      const opened = { journal: store.packStats!.journalBytesRead, parts: partsRead(store, ws) }
      expect(ws.checkpoints()).toHaveLength(rounds)
      expect(ws.fs.readFileSync('/dir2/f17.txt', 'utf8')).toBe(content(rounds - 1, 17))
      // Nothing decoded, nothing written again: the snapshot refers to the parts as they are.
      const before = store.packStats!.appendedBytes
      await ws.compact()
      work.push({ ...opened, appended: store.packStats!.appendedBytes - before })
      expect(partsRead(store, ws)).toBe(0)
      await ws.close()
    }
    const [few, many] = work
    for (const w of work) expect(w.parts).toBe(0)
    // The head: the live tree, kept operations (40) and every checkpoint's name, not their trees.
    expect(many.journal).toBeLessThan(1.5 * few.journal)
    expect(many.appended).toBeLessThan(1.5 * few.appended)
    expect(many.appended).toBeLessThan(2 * many.journal)
  })

  it('restore, diff, checkpointInfo and undo decode only the parts they need, and see exactly what was written', async () => {
    const path = fresh()
    const held = await session(path, 30)
    /** A copy of the store, to restore in without recording it in the original. */
    const copy = () => {
      const to = fresh()
      fs.cpSync(path, to, { recursive: true })
      return to
    }
    let store = directoryStore(copy())
    let ws = await Workspace.open({ store, ...options })
    await ws.restore('r0')
    expect(files(ws)).toEqual(held.get('r0'))
    // The parts r0's tree is in (a few of them), not the history's.
    const restoring = partsRead(store, ws)
    expect(restoring).toBeGreaterThan(0)
    expect(restoring).toBeLessThanOrEqual(3)
    await ws.close()
    // Every checkpoint: its tree decoded from the parts reads as it was written.
    for (const [name, expected] of held) {
      ws = await Workspace.open({ store: directoryStore(copy()), ...options })
      await ws.restore(name)
      expect(files(ws), name).toEqual(expected)
      await ws.close()
    }
    store = directoryStore(path)
    ws = await Workspace.open({ store, ...options })
    expect(ws.diff('r28', 'r29').map((change) => change.path).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `/dir${(i + 10) % 5}/f${i + 10}.txt`).sort())
    expect((await ws.checkpointInfo('r3')).files).toBe(50)
    // Undo of the last round's writes: their changes decoded, the files back as in r28.
    for (let i = 0; i < 40; i++) await ws.undo()
    expect(files(ws)).toEqual(held.get('r28'))
    await ws.compact()
    await ws.close()
    // Compacted again with part of the history decoded: nothing lost.
    ws = await Workspace.open({ store: directoryStore(path), ...options })
    expect(files(ws)).toEqual(held.get('r28'))
    expect(ws.history().filter((op) => op.undone)).toHaveLength(40)
    await ws.restore('r7')
    expect(files(ws)).toEqual(held.get('r7'))
    await ws.undo()
    expect(files(ws)).toEqual(held.get('r28'))
    await ws.close()
  })

  it('names, link targets and contents in any Unicode come back from the parts exactly (UTF-8 of one to four bytes a character)', async () => {
    const path = fresh()
    const names = ['plain', 'café', 'prix€', 'grin😀', '日本語', 'a\u0301', 'z'.repeat(200)]
    const ws = await Workspace.open({ store: directoryStore(path), ...options })
    const held = new Map<string, Record<string, string>>()
    for (let round = 0; round < 3; round++) {
      for (const name of names) {
        ws.fs.mkdirSync(`/${name}-${round}`, { recursive: true })
        ws.fs.writeFileSync(`/${name}-${round}/${name}.txt`, `${name} ${round}`)
        ws.fs.symlinkSync(`/${name}-${round}/${name}.txt`, `/${name}-${round}/link→${name}`)
      }
      ws.fs.writeFileSync('/plain-0/plain.txt', `changed in ${round} 😀`)
      await ws.checkpoint({ name: `u${round}` })
      const links = Object.fromEntries(names.map((name) => [`/${name}-${round}/link→${name}`, ws.fs.readlinkSync(`/${name}-${round}/link→${name}`) as string]))
      held.set(`u${round}`, { ...files(ws), ...links })
    }
    await ws.compact()
    await ws.close()
    for (const [name, expected] of held) {
      const to = fresh()
      fs.cpSync(path, to, { recursive: true })
      const store = directoryStore(to)
      const reopened = await Workspace.open({ store, ...options })
      await reopened.restore(name)
      const round = Number(name.slice(1))
      const links = Object.fromEntries(names.map((n) => [`/${n}-${round}/link→${n}`, reopened.fs.readlinkSync(`/${n}-${round}/link→${n}`) as string]))
      expect({ ...files(reopened), ...links }, name).toEqual(expected)
      // The older checkpoints' trees come from the parts (the last one's is the live tree, in the head).
      if (name !== 'u2') expect(partsRead(store, reopened), name).toBeGreaterThan(0)
      await reopened.close()
    }
  })

  it('a checkpoint whose tree fills more than one part keeps every part it needs, when nothing else refers to them', async () => {
    // 8,040 directories: more than a part holds, so a parent lands in the part after its children.
    const store = new MemoryStore()
    let ws = await Workspace.open({ store, ...options, retention: { operations: 5 } })
    for (let a = 0; a < 40; a++) {
      ws.fs.mkdirSync(`/a${a}`)
      for (let b = 0; b < 200; b++) ws.fs.mkdirSync(`/a${a}/b${b}`)
    }
    await ws.checkpoint({ name: 'tree' })
    for (let a = 0; a < 40; a++) ws.fs.rmSync(`/a${a}`, { recursive: true })
    // Operations enough that the ones naming the tree's directories leave the history.
    for (let i = 0; i < 60; i++) ws.fs.writeFileSync(`/f${i}`, `${i}`)
    await ws.compact()
    await ws.close()
    ws = await Workspace.open({ store, ...options, retention: { operations: 5 } })
    await ws.restore('tree')
    expect(ws.fs.readdirSync('/a39')).toHaveLength(200)
    expect(ws.fs.readdirSync('/a0')).toHaveLength(200)
    await ws.close()
  })

  it('a part that cannot be read: its checkpoint fails to restore with EIO, is broken, and compaction deletes nothing', async () => {
    const path = fresh()
    const held = await session(path, 12)
    const parts = [...pack.blobRecords(path).values()].filter((record) => record.payload.subarray(0, 24).toString('utf8') === '{"rewindfs":"history-par')
    expect(parts.length).toBeGreaterThan(0)
    // The part r0's root directory is in: the last one written holds the roots (children come first).
    for (const part of parts) pack.flipBlobByte(path, part.id, 40, 0x01)
    const store = directoryStore(path)
    const ws = await Workspace.open({ store, ...options })
    expect(ws.status.warnings).toEqual([])
    expect(files(ws)).toEqual(held.get('r11'))
    await expect(ws.restore('r0')).rejects.toMatchObject({ code: 'EIO', message: expect.stringMatching(/checksum/) })
    expect(files(ws)).toEqual(held.get('r11'))
    const blobs = ws.storage.durable.blobs
    await ws.compact()
    await store.idle()
    expect(ws.storage.durable.blobs).toBeGreaterThanOrEqual(blobs)
    const report = await ws.verify()
    expect(report.corrupt.sort()).toEqual(parts.map((part) => part.id).sort())
    await ws.close()
  })

  it('a damaged part in a store without synchronous reads (loaded at open) is said to be damaged, not "not JSON"', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, ...options })
    ws.fs.mkdirSync('/d')
    for (let round = 0; round < 3; round++) {
      for (let file = 0; file < 5; file++) ws.fs.writeFileSync(`/d/f${file}.txt`, content(round, file))
      await ws.checkpoint({ name: `r${round}` })
    }
    await ws.compact()
    await ws.close()
    const image = store.image()
    const parts = image.blobs.filter(([, bytes]) => Buffer.from(bytes.subarray(0, 24)).toString('utf8') === '{"rewindfs":"history-par')
    expect(parts.length).toBeGreaterThan(0)
    for (const [, bytes] of parts) bytes[40] ^= 0x01
    const reopened = await Workspace.open({ store: MemoryStore.from(image), ...options })
    await expect(reopened.restore('r0')).rejects.toMatchObject({ code: 'EIO', message: expect.stringMatching(/checksum/) })
    await reopened.close()
  })

  it('a store compacted in format 1 (every tree in one record) opens as the rewindfs that wrote it saw it, and compacts to format 2', async () => {
    const fixture = JSON.parse(fs.readFileSync(new URL('./fixtures/snapshot-format-1.json', import.meta.url), 'utf8')) as {
      image: { journal: string; blobs: [string, string][]; meta: [string, never][] }
      expected: { files: Record<string, string>; checkpoints: string[]; history: string[]; at: Record<string, Record<string, string>> }
    }
    expect(fixture.image.journal).toMatch(/^\{"v":1,"c":\d+,"b":\{"n":0,"t":"snapshot","data":\{"checkpoints"/)
    const image = { journal: fixture.image.journal, blobs: fixture.image.blobs.map(([id, bytes]) => [id, new Uint8Array(Buffer.from(bytes, 'base64'))] as [string, Uint8Array]), meta: fixture.image.meta }
    const store = MemoryStore.from(image)
    const view = (ws: Workspace) => {
      const out: Record<string, string> = {}
      const walk = (dir: string) => {
        for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
          const path = dir === '/' ? `/${name}` : `${dir}/${name}`
          const stat = ws.fs.lstatSync(path)
          if (stat.isDirectory()) walk(path)
          else out[path] = stat.isSymbolicLink() ? `-> ${ws.fs.readlinkSync(path)}` : (ws.fs.readFileSync(path, 'utf8') as string)
        }
      }
      walk('/')
      return { files: out, checkpoints: ws.checkpoints().map((c) => c.name), history: ws.history().map((op) => `${op.id}${op.undone ? ':undone' : ''}`) }
    }
    const { at, ...expected } = fixture.expected
    for (const round of ['format 1', 'format 2']) {
      const ws = await Workspace.open({ store, ...options })
      expect(view(ws), round).toEqual(expected)
      for (const [name, held] of Object.entries(at)) {
        const probe = await Workspace.open({ store: MemoryStore.from(store.image()), ...options })
        await probe.restore(name)
        expect(view(probe).files, `${round}: ${name}`).toEqual(held)
        await probe.close()
      }
      await ws.compact()
      await ws.close()
      expect(store.image().journal, round).toMatch(/"t":"snapshot","data":\{"format":2,/)
    }
  })
})

describe('history parts a compaction drops', () => {
  it('are left in the store until they are a quarter of what it holds, then deleted with what only they named; ws.compact() deletes them at once', async () => {
    const path = fresh()
    // A session that only adds files, keeping its newest 100 operations: each compaction drops the parts of older ones.
    const ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false, compactEvery: 100, retention: { operations: 100 } })
    const files = 3000
    const fileBytes = 128
    ws.fs.mkdirSync('/t')
    /** Bytes the store holds that are no file's content (the history's parts, needed or stale), and all it holds. */
    const history: { parts: number; held: number }[] = []
    let deleted = 0
    for (let n = 0; n < files; n++) {
      ws.fs.writeFileSync(`/t/f${n}`, `${n}`.padEnd(fileBytes, '.'))
      if (n % 50 !== 49) continue
      const blobs = ws.storage.durable.blobs
      await ws.sync()
      // Only files are added: the store holds fewer blobs after a commit only when stale ones were deleted.
      if (ws.storage.durable.blobs < blobs + 50) deleted++
      history.push({ parts: ws.storage.durable.bytes - (n + 1) * fileBytes, held: ws.storage.durable.bytes })
    }
    await ws.sync()
    const before = ws.storage.durable
    await ws.compact()
    const after = ws.storage.durable
    // Stale parts were left between deletions and deleted once they were about a quarter of the store (the parts needed, one or two of about 25 KiB, besides).
    expect(before.blobs).toBeGreaterThan(after.blobs)
    expect(deleted).toBeGreaterThanOrEqual(1)
    for (const [i, { parts, held }] of history.entries()) expect(parts, `after ${(i + 1) * 50} files`).toBeLessThan(held / 4 + 64 * 1024)
    // After ws.compact() the store holds the files and the parts of the 100 operations kept, no more.
    expect(after.blobs - files).toBeLessThanOrEqual(2)
    await ws.close()
    const reopened = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect((reopened.fs.readdirSync('/t') as string[]).length).toBe(files)
    expect(reopened.fs.readFileSync('/t/f7', 'utf8')).toBe('7'.padEnd(fileBytes, '.'))
    // The kept history's parts are all there: its 100 newest operations are undone from them.
    expect(reopened.history().length).toBeGreaterThanOrEqual(100)
    for (const _ of [1, 2]) await reopened.undo({ steps: 50 })
    expect((reopened.fs.readdirSync('/t') as string[]).length).toBe(files - 100)
    expect(reopened.fs.existsSync(`/t/f${files - 101}`)).toBe(true)
    await reopened.close()
  })
})

describe('contents on demand: writing a damaged content again', () => {
  it('stores the good bytes (the damaged ones kept aside) though nothing read the damage yet', async () => {
    const path = fresh()
    await historyIn(path)
    const id = [...pack.blobRecords(path).values()].find((record) => record.payload.toString('utf8') === content(5, 7))!.id
    pack.flipBlobByte(path, id, 5)
    let ws = await open(path)
    // Not read yet: a write of the same content compares with what the store holds, finds it
    // damaged, and stores the good bytes (the file that had them reads them again too).
    ws.fs.writeFileSync('/copy.txt', content(5, 7))
    expect(ws.fs.readFileSync('/dir2/f7.txt', 'utf8')).toBe(content(5, 7))
    await ws.sync()
    await ws.close()
    ws = await open(path)
    expect(ws.fs.readFileSync('/dir2/f7.txt', 'utf8')).toBe(content(5, 7))
    expect(ws.fs.readFileSync('/copy.txt', 'utf8')).toBe(content(5, 7))
    expect(ws.status.warnings).toEqual([])
    await ws.close()
    expect(fs.readdirSync(path).filter((name) => name.startsWith('blob.damaged-'))).toHaveLength(1)
  })
})

describe('stores without synchronous reads', () => {
  it('are read whole on open, and ws.storage says so', async () => {
    const store = new MemoryStore()
    let ws = await Workspace.open({ store })
    ws.fs.writeFileSync('/a', 'one')
    await ws.close()
    ws = await Workspace.open({ store })
    expect(ws.storage).toMatchObject({ contents: 'preloaded', resident: { blobs: 1, bytes: 3 }, durable: { blobs: 1, bytes: 3 }, cache: { bytes: 0, limit: 0 } })
    expect(read(ws)).toBe(0)
    await ws.close()
    const memory = await Workspace.open({})
    memory.fs.writeFileSync('/a', 'one')
    expect(memory.storage).toMatchObject({ contents: 'memory', blobs: 1, bytes: 3, durable: { blobs: 0, bytes: 0 } })
    await memory.close()
  })

  it('cacheBytes is a number of bytes ≥ 0', async () => {
    await expect(Workspace.open({ cacheBytes: -1 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    await expect(Workspace.open({ cacheBytes: '1' as unknown as number })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
  })
})
