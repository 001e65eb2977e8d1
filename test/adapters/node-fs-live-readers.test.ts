/**
 * A directory store read (`{ readOnly: true }`, `rewindfs verify`, status) beside a writer that
 * goes on appending, sealing, compacting and collecting: a reader sees the segments as one moment
 * left them, never damage the writer's own work in flight made. Each race is made to happen at the
 * step it needs, by swapping in the files the writer left a moment later from inside the reader's
 * own fs calls (the store reads through node:fs's members as they are at each call).
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { verifyStore } from '../../src/engine/verify-store.js'
import { Workspace } from '../../src/index.js'
import * as pack from '../support/pack-raw.js'

const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-live-readers-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
afterEach(() => vi.restoreAllMocks())
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

const bytes = (id: string, times = 60) => new TextEncoder().encode(`${id} `.repeat(times))

/** Replaces a store's packs folder with another's (the files a writer left a moment later). */
function swapPacks(path: string, from: string): void {
  const folder = `${path}/packs`
  for (const name of fs.readdirSync(folder)) fs.rmSync(`${folder}/${name}`)
  for (const name of fs.readdirSync(`${from}/packs`)) fs.copyFileSync(`${from}/packs/${name}`, `${folder}/${name}`)
}

/**
 * A store of several segments (closed cleanly: `before`), then compacted with most blobs deleted
 * and the mostly dead segments collected (`after`): the same store a moment later. Returns the
 * journal and live blobs after.
 */
async function collected(before: string, after: string): Promise<{ journal: string[]; kept: string[] }> {
  const writer = directoryStore(before, { segmentBytes: 4096 })
  const ids = Array.from({ length: 60 }, (_, i) => `id-${i}`)
  for (let i = 0; i < ids.length; i += 6) {
    await writer.putBlobs(ids.slice(i, i + 6).map((id) => [id, bytes(id)] as const))
    await writer.appendJournal([`put ${i}`])
  }
  await writer.close()
  fs.cpSync(before, after, { recursive: true })
  const again = directoryStore(after, { segmentBytes: 4096 })
  await again.replaceJournal(['snapshot'])
  const kept = ids.filter((_, i) => i % 10 === 0)
  await again.deleteBlobs(ids.filter((id) => !kept.includes(id)))
  await again.putBlobs([['late', bytes('late')]])
  await again.appendJournal(['late'])
  await again.idle()
  expect(again.packStats!.collected).toBeGreaterThan(0)
  const journal = (await again.readJournal()).records
  await again.close()
  return { journal, kept: [...kept, 'late'] }
}

describe('a reader beside a live writer', () => {
  it('a segment listed, then collected before the reader opened it: the reader lists and reads again (one moment, not two)', async () => {
    const path = fresh()
    const after = fresh()
    const { journal, kept } = await collected(path, after)
    const removed = pack.segmentFiles(path).filter(({ segment }) => !fs.existsSync(`${after}/packs/${String(segment).padStart(8, '0')}.pack`))
    expect(removed.length).toBeGreaterThan(0)
    const reader = directoryStore(path, { readOnly: true, segmentBytes: 4096 })
    expect((await reader.readJournal()).records).toHaveLength(10)
    // Its next look lists the segments as they were, then the writer's collection is done.
    const readdirSync = fs.readdirSync
    let armed = true
    vi.spyOn(fs, 'readdirSync').mockImplementation(((folder: fs.PathLike, ...rest: unknown[]) => {
      const listing = (readdirSync as (...args: unknown[]) => unknown)(folder, ...rest)
      if (armed && String(folder).endsWith('/packs')) {
        armed = false
        swapPacks(path, after)
      }
      return listing
    }) as typeof fs.readdirSync)
    const read = await reader.readJournal()
    expect(armed).toBe(false)
    expect(read).toEqual({ records: journal })
    for (const id of kept) expect(await reader.getBlob(id), id).toEqual(bytes(id))
    expect(reader.blobTotals().unreadable).toEqual([])
    await reader.close()
  })

  it('opening beside a collection: a segment listed and gone before its header is read does not fail the open', async () => {
    const path = fresh()
    const after = fresh()
    const { journal, kept } = await collected(path, after)
    // The first listing of the packs (the format's check of the segments' salts) is of the moment before.
    const readdirSync = fs.readdirSync
    let armed = true
    vi.spyOn(fs, 'readdirSync').mockImplementation(((folder: fs.PathLike, ...rest: unknown[]) => {
      const listing = (readdirSync as (...args: unknown[]) => unknown)(folder, ...rest)
      if (armed && String(folder).endsWith('/packs')) {
        armed = false
        swapPacks(path, after)
      }
      return listing
    }) as typeof fs.readdirSync)
    const reader = directoryStore(path, { readOnly: true })
    expect(armed).toBe(false)
    expect((await reader.readJournal()).records).toEqual(journal)
    for (const id of kept) expect(await reader.getBlob(id), id).toEqual(bytes(id))
    await reader.close()
  })

  it('keeps reading the moment it read: a blob deleted and its segment collected since is still read (its journal needs it), until it looks again', async () => {
    const path = fresh()
    const writer = directoryStore(path, { segmentBytes: 4096 })
    const ids = Array.from({ length: 30 }, (_, i) => `id-${i}`)
    // Segments of blobs only (the reader reads no journal text there), then the journal.
    await writer.putBlobs(ids.map((id) => [id, bytes(id)] as const))
    await writer.appendJournal(['all'])
    expect(pack.segmentFiles(path).length).toBeGreaterThan(2)
    const reader = directoryStore(path, { readOnly: true })
    expect((await reader.readJournal()).records).toEqual(['all'])
    await writer.replaceJournal(['snapshot'])
    await writer.deleteBlobs(ids.slice(1))
    await writer.idle()
    expect(writer.packStats!.collected).toBeGreaterThan(0)
    for (const id of ids) expect(await reader.getBlob(id), id).toEqual(bytes(id))
    expect(reader.readBlobSync(ids[5])).toEqual(bytes(ids[5]))
    expect((await reader.readJournal()).records).toEqual(['snapshot'])
    expect(await reader.getBlob(ids[5])).toBeUndefined()
    expect(await reader.getBlob(ids[0])).toEqual(bytes(ids[0]))
    await reader.close()
    await writer.close()
  })

  it('rewindfs verify beside a workspace whose compactions and collections go on while it reads: healthy', async () => {
    const path = fresh()
    const after = fresh()
    const session = async (root: string, from: number) => {
      const store = directoryStore(root, { segmentBytes: 4096 })
      const ws = await Workspace.open({ store, autoCheckpoint: false, compactEvery: 20, retention: { operations: 10 } })
      for (let i = from; i < from + 80; i++) {
        ws.fs.writeFileSync(`/f${i % 7}`, `version ${i} `.repeat(30))
        if (i % 25 === 0) await ws.checkpoint({ name: `cp${i}` })
        await ws.sync()
      }
      await store.idle()
      const done = store.packStats!.collected
      await ws.close()
      return done
    }
    await session(path, 0)
    fs.cpSync(path, after, { recursive: true })
    expect(await session(after, 80)).toBeGreaterThan(0)
    const reader = directoryStore(path, { readOnly: true })
    const readdirSync = fs.readdirSync
    let armed = true
    vi.spyOn(fs, 'readdirSync').mockImplementation(((folder: fs.PathLike, ...rest: unknown[]) => {
      const listing = (readdirSync as (...args: unknown[]) => unknown)(folder, ...rest)
      if (armed && String(folder).endsWith('/packs')) {
        armed = false
        swapPacks(path, after)
      }
      return listing
    }) as typeof fs.readdirSync)
    const report = await verifyStore(reader)
    expect(armed).toBe(false)
    expect(report.problems).toEqual([])
    expect(report.ok).toBe(true)
    await reader.close()
  })
})
