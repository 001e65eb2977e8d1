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
const unreadable = (records: readonly string[]) => records.filter((record) => /unreadable pack bytes/.test(record))

/** Replaces a store's packs folder with another's (the files a writer left a moment later). */
function swapPacks(path: string, from: string): void {
  const folder = `${path}/packs`
  for (const name of fs.readdirSync(folder)) fs.rmSync(`${folder}/${name}`)
  for (const name of fs.readdirSync(`${from}/packs`)) fs.copyFileSync(`${from}/packs/${name}`, `${folder}/${name}`)
}

/** The path an open descriptor is of. */
const pathOf = (fd: number) => fs.readlinkSync(`/proc/self/fd/${fd}`)

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

  it('a collection removing segment after segment as the reader reaches them: the reader goes on past each, never starting over', async () => {
    const path = fresh()
    const writer = directoryStore(path, { segmentBytes: 1024 })
    // Segments of journal text only: dead once the journal is replaced, a collection removes them with nothing to copy.
    for (let i = 0; i < 150; i++) await writer.appendJournal([`record ${i} `.repeat(120)])
    await writer.close()
    const before = fresh()
    fs.cpSync(path, before, { recursive: true })
    const again = directoryStore(path, { segmentBytes: 1024 })
    await again.replaceJournal(['snapshot'])
    await again.idle()
    expect(again.packStats!.collected).toBeGreaterThan(140)
    await again.close()
    // The moment between: the reset written, no dead segment removed yet.
    const kept = new Set(fs.readdirSync(`${path}/packs`))
    for (const name of fs.readdirSync(`${before}/packs`)) if (!kept.has(name) && /\.(pack|idx)$/.test(name)) fs.copyFileSync(`${before}/packs/${name}`, `${path}/packs/${name}`)
    fs.rmSync(pack.stateFile(path), { force: true })
    const dead = new Set(fs.readdirSync(`${path}/packs`).filter((name) => name.endsWith('.pack') && !kept.has(name)).map((name) => `${path}/packs/${name}`))
    expect(dead.size).toBeGreaterThan(140)
    const reader = directoryStore(path, { readOnly: true })
    // From now on each dead segment is collected just as the reader is about to open it.
    const openSync = fs.openSync
    vi.spyOn(fs, 'openSync').mockImplementation(((file: fs.PathLike, ...rest: unknown[]) => {
      if (dead.delete(String(file))) {
        fs.rmSync(String(file).replace(/\.pack$/, '.idx'), { force: true })
        fs.rmSync(String(file))
      }
      return (openSync as (...args: unknown[]) => number)(file, ...rest)
    }) as typeof fs.openSync)
    expect(await reader.readJournal()).toEqual({ records: ['snapshot'] })
    expect(dead.size).toBe(0)
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

  it('an append landing while the reader reads the last segment is whole or not there, never damage', async () => {
    const path = fresh()
    const writer = directoryStore(path)
    for (let i = 0; i < 5; i++) {
      await writer.putBlobs([[`b${i}`, bytes(`b${i}`)]])
      await writer.appendJournal([`r${i}`])
    }
    // The last segment as it is before the next commit and after it (zeros written ahead: the same size).
    const [{ file }] = pack.segmentFiles(path)
    const before = fs.readFileSync(file)
    await writer.putBlobs([['late', bytes('late')]])
    await writer.appendJournal(['late'])
    const after = fs.readFileSync(file)
    expect(after.length).toBe(before.length)
    fs.writeFileSync(file, before)
    const reader = directoryStore(path, { readOnly: true })
    expect((await reader.readJournal()).records).toHaveLength(5)
    // The commit lands right after the reader's first read of the segment's start.
    const readSync = fs.readSync
    let armed = true
    vi.spyOn(fs, 'readSync').mockImplementation(((fd: number, buffer: NodeJS.ArrayBufferView, ...rest: unknown[]) => {
      const read = (readSync as (...args: unknown[]) => number)(fd, buffer, ...rest)
      const position = rest.length === 3 ? rest[2] : (rest[0] as { position?: number } | undefined)?.position
      if (armed && position === 0 && pathOf(fd) === file) {
        armed = false
        const out = fs.openSync(file, 'r+')
        fs.writeSync(out, after, 0, after.length, 0)
        fs.closeSync(out)
      }
      return read
    }) as typeof fs.readSync)
    const { records } = await reader.readJournal()
    expect(armed).toBe(false)
    expect(unreadable(records)).toEqual([])
    expect([['r0', 'r1', 'r2', 'r3', 'r4'], ['r0', 'r1', 'r2', 'r3', 'r4', 'late']]).toContainEqual(records)
    vi.restoreAllMocks()
    expect((await reader.readJournal()).records.at(-1)).toBe('late')
    expect(await reader.getBlob('late')).toEqual(bytes('late'))
    await reader.close()
    await writer.close()
  })

  it('the last segment sealed (its index file written) between the reader reading its size and its index file: no bytes taken for lost', async () => {
    const path = fresh()
    const writer = directoryStore(path, { segmentBytes: 4096 })
    for (let i = 0; i < 6; i++) {
      await writer.putBlobs([[`b${i}`, bytes(`b${i}`, 40)]])
      await writer.appendJournal([`r${i}`])
    }
    await writer.close()
    // Sealed by the next commit: the segment whole, its index file, the next segment.
    const sealed = fresh()
    fs.cpSync(path, sealed, { recursive: true })
    const more = directoryStore(sealed, { segmentBytes: 4096 })
    const { segment, file } = pack.segmentFiles(sealed).at(-1)!
    while (pack.segmentFiles(sealed).at(-1)!.segment === segment) {
      await more.putBlobs([[`m${serial}`, bytes(`m${serial}`, 200)]])
      await more.appendJournal([`m${serial++}`])
    }
    await more.close()
    const whole = fs.readFileSync(file)
    const last = pack.records(sealed).filter((record) => record.segment === segment).at(-1)!
    // Before: the writer in the middle of that segment's last record (no index file yet, no next segment).
    const own = file.replace(sealed, path)
    fs.writeFileSync(own, whole.subarray(0, last.offset + 10))
    for (const name of fs.readdirSync(`${path}/packs`)) if (!name.endsWith('.pack') || Number(name.slice(0, 8)) > segment) fs.rmSync(`${path}/packs/${name}`)
    const reader = directoryStore(path, { readOnly: true })
    const fstatSync = fs.fstatSync
    let armed = true
    vi.spyOn(fs, 'fstatSync').mockImplementation(((fd: number, ...rest: unknown[]) => {
      const stats = (fstatSync as (...args: unknown[]) => fs.Stats)(fd, ...rest)
      if (armed && pathOf(fd) === own) {
        armed = false
        swapPacks(path, sealed)
      }
      return stats
    }) as typeof fs.fstatSync)
    const { records } = await reader.readJournal()
    expect(armed).toBe(false)
    expect(unreadable(records)).toEqual([])
    expect(reader.blobTotals().unreadable).toEqual([])
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

  it('a blob purged since the reader looked (its record overwritten with zeros) reads as gone, not as damage', async () => {
    const path = fresh()
    const writer = directoryStore(path)
    await writer.putBlobs([['secret', bytes('secret')], ['kept', bytes('kept')]])
    await writer.appendJournal(['both'])
    const reader = directoryStore(path, { readOnly: true })
    await reader.readJournal()
    await writer.replaceJournal(['kept only'])
    await writer.eraseBlobs(['secret'])
    await expect(reader.getBlob('secret')).resolves.toBeUndefined()
    expect(reader.readBlobSync('secret')).toBeUndefined()
    expect(await reader.getBlob('kept')).toEqual(bytes('kept'))
    // Damage is still damage: a byte of a blob no one deleted.
    pack.flipBlobByte(path, 'kept', 3)
    const fresh2 = directoryStore(path, { readOnly: true })
    await expect(fresh2.getBlob('kept')).rejects.toMatchObject({ code: 'EIO' })
    await fresh2.close()
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
