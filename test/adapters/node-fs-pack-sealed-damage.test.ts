/**
 * The directory store's sealed pack segments losing what their index files list: cut anywhere
 * below it (at a record boundary too, where nothing else is wrong with what is left) or removed
 * while the index file remains. A segment's index file is written when it is sealed, once what it
 * lists is durable, and nothing but a collection ever removes a sealed segment (its live records
 * copied first, its index file removed before it): acknowledged records were lost. Damage, as the
 * last segment's loss is (node-fs-pack-damage.test.ts): reported, the index file kept, nothing on
 * disk changed by a writer's open; `ws.repair()` records it. What a collection left behind (an
 * index file of a segment whose records all live on elsewhere) proves nothing and is not damage.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { Kind, RECORD_HEADER_BYTES } from '../../adapters/node-fs/pack-format.js'
import { Workspace } from '../../src/index.js'
import * as pack from '../support/pack-raw.js'

const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-sealed-damage-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

const SEGMENT = 4096
const open = (path: string) => Workspace.open({ store: directoryStore(path, { segmentBytes: SEGMENT }), autoCheckpoint: false })

function view(ws: Workspace): string {
  const files: Record<string, string> = {}
  for (const name of (ws.fs.readdirSync('/') as string[]).sort()) files[name] = ws.fs.readFileSync(`/${name}`, 'utf8') as string
  return JSON.stringify({ files, history: ws.history().length })
}

/** A store of `commits` group commits over segments of SEGMENT bytes, closed cleanly; `states[n]` is the workspace after n of them. */
async function filled(path: string, commits: number): Promise<string[]> {
  const ws = await open(path)
  const states = [view(ws)]
  for (let i = 0; i < commits; i++) {
    ws.fs.writeFileSync(`/f${i % 4}`, `version ${i} `.repeat(40))
    await ws.sync()
    states.push(view(ws))
  }
  await ws.close()
  expect(pack.indexFiles(path)).toHaveLength(pack.segmentFiles(path).length)
  return states
}

/** Group commits (journal appends) whole in segments before `segment`, and in it those ending by `end`. */
function held(records: readonly pack.RawRecord[], segment: number, end: number): number {
  return records.filter((record) => record.kind === Kind.Append && (record.segment < segment || (record.segment === segment && record.offset + record.bytes.length <= end))).length
}

const indexOf = (path: string, segment: number) => `${path}/packs/${String(segment).padStart(8, '0')}.idx`
const CUT = /the segment ends at byte \d+, but its index file, written when the segment was whole and durable, lists records up to byte \d+: it was cut short/
const REMOVED = /the segment is missing, but its index file, written when the segment was whole and durable, lists records up to byte \d+: it was removed/

/** A writer's open of a store that lost acknowledged journal text: frozen at `state`, the loss reported, nothing on disk changed; a reader reads the same. */
async function expectDamage(path: string, state: string, said: RegExp, context: string): Promise<void> {
  const before = pack.fingerprint(path)
  const ws = await open(path)
  try {
    expect(ws.status.corrupt, context).toMatchObject({ part: 'journal' })
    expect(ws.frozen, context).toMatch(/damaged/)
    expect(ws.status.warnings.join('\n'), context).toMatch(said)
    expect(view(ws), context).toBe(state)
    expect(() => ws.fs.writeFileSync('/refused', 'x'), context).toThrow(expect.objectContaining({ code: 'EROFS' }))
    expect((await ws.verify()).corrupt.some((id) => id.startsWith('pack-damage:')), context).toBe(true)
  } finally {
    await ws.close()
  }
  expect(pack.fingerprint(path), context).toBe(before)
  const reader = directoryStore(path, { readOnly: true })
  expect((await reader.readJournal()).records.some((record) => /unreadable pack bytes/.test(record) && said.test(record)), context).toBe(true)
  await reader.close()
}

/** Repairs, then: open clean and writable at `state`, nothing reported again, and a write after it survives a reopen. */
async function expectRepaired(path: string, state: string, context: string): Promise<void> {
  let ws = await open(path)
  expect((await ws.repair()).repaired, context).toBe(true)
  await ws.close()
  for (let round = 0; round < 2; round++) {
    ws = await open(path)
    expect(ws.status.corrupt, context).toBeUndefined()
    expect(ws.frozen, context).toBeFalsy()
    expect(ws.status.warnings.join('\n'), context).not.toMatch(/cannot be read/)
    if (round === 0) {
      expect(view(ws), context).toBe(state)
      ws.fs.writeFileSync('/after-repair', 'kept')
      await ws.sync()
    } else expect(ws.fs.readFileSync('/after-repair', 'utf8'), context).toBe('kept')
    await ws.close()
  }
}

describe('pack segments: a sealed segment losing what its index file lists', () => {
  it('cut anywhere below it — at the start of its last record (what is left is whole), inside a record, inside its first record — is damage, its index file kept; repair ends it', async () => {
    const base = fresh()
    const states = await filled(base, 24)
    const segments = pack.segmentFiles(base)
    expect(segments.length).toBeGreaterThan(4)
    const { segment } = segments.at(-3)!
    const records = pack.records(base)
    const mine = records.filter((record) => record.segment === segment)
    const last = mine.at(-1)!
    const cuts = {
      'at the start of its last record': last.offset,
      'at the start of its last blob record': mine.filter((record) => record.kind === Kind.Blob).at(-1)!.offset,
      'inside its last record': last.offset + RECORD_HEADER_BYTES + 5,
      'inside its first record': mine[0].offset + RECORD_HEADER_BYTES + 3,
    }
    for (const [where, cut] of Object.entries(cuts)) {
      const path = fresh()
      fs.cpSync(base, path, { recursive: true })
      const file = `${path}/packs/${String(segment).padStart(8, '0')}.pack`
      fs.truncateSync(file, cut)
      const context = `segment ${segment} of ${segments.length} cut ${where} (byte ${cut})`
      const left = fs.readFileSync(file)
      const index = fs.readFileSync(indexOf(path, segment))
      const state = states[held(records, segment, cut)]
      await expectDamage(path, state, CUT, context)
      expect(fs.readFileSync(indexOf(path, segment)).equals(index), context).toBe(true)
      await expectRepaired(path, state, context)
      // What was left of the cut segment is as it was (or collected once its loss was recorded).
      if (fs.existsSync(file)) expect(fs.readFileSync(file).equals(left), context).toBe(true)
      expect(fs.readdirSync(path).some((name) => name.startsWith('blob.damaged-')), context).toBe(true)
    }
  })

  it('removed while its index file remains is damage (the first segment too), the index file kept; repair ends it', async () => {
    const base = fresh()
    const states = await filled(base, 24)
    const segments = pack.segmentFiles(base)
    const records = pack.records(base)
    for (const { segment } of [segments[0], segments.at(-3)!]) {
      const path = fresh()
      fs.cpSync(base, path, { recursive: true })
      fs.rmSync(`${path}/packs/${String(segment).padStart(8, '0')}.pack`)
      const context = `segment ${segment} of ${segments.length} removed`
      const state = states[held(records, segment, 0)]
      await expectDamage(path, state, REMOVED, context)
      expect(fs.existsSync(indexOf(path, segment)), context).toBe(true)
      await expectRepaired(path, state, context)
    }
  })

  it('after a compaction, a segment holding only blobs the snapshot needs, removed or cut, is reported and its index file kept', async () => {
    for (const how of ['removed', 'cut'] as const) {
      const path = fresh()
      let ws = await open(path)
      for (let i = 0; i < 16; i++) {
        ws.fs.writeFileSync(`/f${i}`, `content ${i} `.repeat(60))
        await ws.sync()
      }
      await ws.compact()
      await ws.close()
      // The journal is the compaction's, in the last segment: an earlier one holds blobs it needs (and dead journal text).
      const records = pack.records(path)
      const reset = records.findLast((record) => record.kind === Kind.Reset)!
      const victim = pack.segmentFiles(path).find(({ segment }) => segment < reset.segment && segment > 1)!.segment
      const blobs = records.filter((record) => record.segment === victim && record.kind === Kind.Blob)
      expect(blobs.length).toBeGreaterThan(0)
      const file = `${path}/packs/${String(victim).padStart(8, '0')}.pack`
      if (how === 'removed') fs.rmSync(file)
      else fs.truncateSync(file, blobs[0].offset)
      const context = `segment ${victim} ${how}`
      ws = await open(path)
      expect(ws.status.warnings.join('\n'), context).toMatch(how === 'removed' ? REMOVED : CUT)
      expect((await ws.verify()).corrupt, context).toContain(`pack-damage:${victim}:${how === 'removed' ? 24 : blobs[0].offset}`)
      await ws.close()
      expect(fs.existsSync(indexOf(path, victim)), context).toBe(true)
      const reader = directoryStore(path, { readOnly: true })
      expect(reader.blobTotals().unreadable, context).toHaveLength(1)
      for (const blob of blobs) expect(await reader.getBlob(blob.id), context).toBeUndefined()
      await reader.close()
    }
  })

  it('a blob deleted before the cut, whose record started where the segment now ends, does not hide the loss', async () => {
    const path = fresh()
    const store = directoryStore(path, { segmentBytes: SEGMENT })
    const bytes = (text: string, times: number) => new TextEncoder().encode(text.repeat(times))
    await store.putBlobs([['dead', bytes('dead ', 60)]])
    await store.appendJournal(['one'])
    await store.putBlobs([['live', bytes('live ', 700)]])
    await store.appendJournal(['two'])
    await store.putBlobs([['more', bytes('more ', 200)]])
    await store.appendJournal(['three'])
    await store.replaceJournal(['snapshot'])
    await store.deleteBlobs(['dead'])
    await store.idle()
    await store.close()
    const dead = pack.records(path).find((record) => record.id === 'dead')!
    expect(fs.existsSync(dead.file)).toBe(true)
    expect(pack.segmentFiles(path).at(-1)!.segment).toBeGreaterThan(dead.segment)
    fs.truncateSync(dead.file, dead.offset)
    const again = directoryStore(path, { segmentBytes: SEGMENT })
    expect(again.blobTotals().unreadable).toEqual([`pack-damage:${dead.segment}:${dead.offset}`])
    expect(await again.getBlob('live')).toBeUndefined()
    await again.close()
    expect(fs.existsSync(indexOf(path, dead.segment))).toBe(true)
  })

  it('an index file a collection left behind (its segment removed, every live record copied first) is no damage, and the writer removes it', async () => {
    const path = fresh()
    const store = directoryStore(path, { segmentBytes: SEGMENT })
    const content = (id: string) => new TextEncoder().encode(`blob ${id} `.repeat(40))
    const ids = Array.from({ length: 60 }, (_, i) => `id-${i}`)
    for (let i = 0; i < ids.length; i += 6) {
      await store.putBlobs(ids.slice(i, i + 6).map((id) => [id, content(id)] as const))
      await store.appendJournal([`put ${i}`])
    }
    const saved = new Map(pack.indexFiles(path).map((file) => [file, fs.readFileSync(file)]))
    await store.replaceJournal(['snapshot'])
    const keep = ids.filter((_, i) => i % 10 === 0)
    await store.deleteBlobs(ids.filter((id) => !keep.includes(id)))
    await store.idle()
    expect(store.packStats!.collected).toBeGreaterThan(0)
    await store.close()
    // A crash between removing a collected segment and its index file (the order an earlier rewindfs removed them in).
    const left = [...saved].filter(([file]) => !fs.existsSync(file.replace(/\.idx$/, '.pack')))
    expect(left.length).toBeGreaterThan(0)
    for (const [file, bytes] of left) fs.writeFileSync(file, bytes)
    fs.rmSync(pack.stateFile(path), { force: true })
    const reader = directoryStore(path, { readOnly: true })
    expect(reader.blobTotals().unreadable).toEqual([])
    expect(await reader.readJournal()).toEqual({ records: ['snapshot'] })
    await reader.close()
    const writer = directoryStore(path, { segmentBytes: SEGMENT })
    expect(writer.blobTotals().unreadable).toEqual([])
    for (const id of keep) expect(await writer.getBlob(id)).toEqual(content(id))
    await writer.close()
    for (const [file] of left) expect(fs.existsSync(file)).toBe(false)
  })
})
