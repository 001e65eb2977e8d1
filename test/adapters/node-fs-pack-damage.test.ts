/**
 * The directory store's last pack segment losing what its index file lists: cut anywhere below it
 * (inside its first record or its header too) or removed while the index file remains. An index
 * file is written only once what it lists is durable, and a crash never cuts or removes that, so
 * acknowledged commits were lost: damage, reported and kept (the workspace frozen at the last state
 * the store proves, nothing on disk changed), never a torn tail dropped in silence; `ws.repair()`
 * ends it. A crash's torn tail (bytes no index file lists) is still dropped as before.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { Kind, RECORD_HEADER_BYTES } from '../../adapters/node-fs/pack-format.js'
import { Workspace } from '../../src/index.js'
import * as pack from '../support/pack-raw.js'

const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-pack-damage-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

const open = (path: string, segmentBytes?: number) => Workspace.open({ store: directoryStore(path, segmentBytes !== undefined ? { segmentBytes } : {}), autoCheckpoint: false })

/** Every file of the workspace and its content, and how much history it holds. */
function view(ws: Workspace): string {
  const files: Record<string, string> = {}
  for (const name of (ws.fs.readdirSync('/') as string[]).sort()) files[name] = ws.fs.readFileSync(`/${name}`, 'utf8') as string
  return JSON.stringify({ files, history: ws.history().length })
}

/**
 * A store of `commits` group commits (one file written, one journal append each), closed cleanly
 * (every segment has its index file); `states[n]` is the workspace after n of them.
 */
async function filled(path: string, commits: number, segmentBytes?: number): Promise<string[]> {
  const ws = await open(path, segmentBytes)
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

/** Of a store's records (read before it was cut), the group commits it still holds whole: appends in segments before `last`, and in it those ending by `end` (a last record missing only its end byte is whole). */
function held(records: readonly pack.RawRecord[], last: number, end: number): number {
  return records.filter((record) => record.kind === Kind.Append && (record.segment < last || (record.segment === last && record.offset + record.bytes.length - 1 <= end))).length
}

/** Opens a store that lost acknowledged records: frozen at `state`, the loss reported (status, warning, verify), writes refused, nothing on disk changed. */
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
}

/** Repairs a damaged store, then: open clean and writable at `state`, and a write after it survives a reopen. */
async function expectRepaired(path: string, state: string, context: string): Promise<void> {
  let ws = await open(path)
  const report = await ws.repair()
  expect(report.repaired, context).toBe(true)
  await ws.close()
  ws = await open(path)
  expect(ws.status.corrupt, context).toBeUndefined()
  expect(ws.frozen, context).toBeFalsy()
  expect(view(ws), context).toBe(state)
  expect((await ws.verify()).corrupt, context).toEqual([])
  ws.fs.writeFileSync('/after-repair', 'kept')
  await ws.sync()
  await ws.close()
  ws = await open(path)
  expect(ws.status.corrupt, context).toBeUndefined()
  expect(ws.fs.readFileSync('/after-repair', 'utf8'), context).toBe('kept')
  expect((await ws.verify()).corrupt, context).toEqual([])
  await ws.close()
}

const CUT = /the segment ends at byte \d+, but its index file, written when the segment was whole and durable, lists records up to byte \d+: it was cut short/
const REMOVED = /the segment is missing, but its index file, written when the segment was whole and durable, lists records up to byte \d+: it was removed/

describe('pack segments: the last segment losing what its index file lists', () => {
  for (const segmentBytes of [undefined, 4096]) {
    const what = segmentBytes === undefined ? 'the only segment' : 'the last of several segments'
    it(`${what} cut inside its first record or its header is damage, not a torn tail: frozen at what the others prove, reported, nothing changed`, async () => {
      const path = fresh()
      const states = await filled(path, 10, segmentBytes)
      const { segment, file } = pack.segmentFiles(path).at(-1)!
      if (segmentBytes !== undefined) expect(segment).toBeGreaterThan(2)
      const whole = fs.readFileSync(file)
      const records = pack.records(path)
      const first = records.find((record) => record.segment === segment)!
      const firstEnd = first.offset + first.bytes.length
      // In the segment header, at its end, in the first record's header, id, payload, all but its end byte; and right after it (reported before too).
      const cuts = [0, 10, 24, 30, first.offset + RECORD_HEADER_BYTES + 3, firstEnd - 10, firstEnd - 1, firstEnd]
      for (const cut of cuts) {
        fs.writeFileSync(file, whole.subarray(0, cut))
        const context = `${what}, cut at byte ${cut} of ${whole.length} (its first record ends at ${firstEnd})`
        await expectDamage(path, states[held(records, segment, cut)], CUT, context)
        // A reader beside it reads the same loss.
        const reader = directoryStore(path, { readOnly: true })
        expect((await reader.readJournal()).records.at(-1), context).toMatch(/unreadable pack bytes.*cut short/)
        await reader.close()
      }
    })
  }

  it('the last segment removed while its index file remains is damage, its index file kept; the only one: the store opens empty and frozen', async () => {
    const path = fresh()
    const states = await filled(path, 20, 4096)
    const segments = pack.segmentFiles(path)
    const records = pack.records(path)
    expect(segments.length).toBeGreaterThan(3)
    // The last one, then the last two.
    for (const gone of [1, 2]) {
      for (const { file } of segments.slice(-gone)) fs.rmSync(file, { force: true })
      const last = segments.at(-gone - 1)!.segment
      const index = pack.indexFiles(path).sort()
      await expectDamage(path, states[held(records, last, Infinity)], REMOVED, `the last ${gone} segment(s) removed`)
      expect(pack.indexFiles(path).sort()).toEqual(index)
      const reader = directoryStore(path, { readOnly: true })
      expect((await reader.readJournal()).records.at(-1)).toMatch(/unreadable pack bytes.*the segment is missing/)
      await reader.close()
    }
    // The only segment of a store.
    const single = fresh()
    const one = await filled(single, 3)
    fs.rmSync(pack.segmentFiles(single)[0].file)
    await expectDamage(single, one[0], REMOVED, 'the only segment removed')
    expect(pack.indexFiles(single)).toHaveLength(1)
  })

  it('repair ends the damage: the cut segment is left as it is (appends go to a new one), a removed segment\'s number is not used again', async () => {
    for (const [kind, segmentBytes] of [['cut in its first record', 4096], ['cut in its first record', undefined], ['cut further on', undefined], ['removed', 4096], ['removed', undefined]] as const) {
      const path = fresh()
      const states = await filled(path, 10, segmentBytes)
      const { segment, file } = pack.segmentFiles(path).at(-1)!
      const records = pack.records(path)
      const first = records.find((record) => record.segment === segment)!
      const context = `the last segment ${kind} (segments of ${segmentBytes ?? 'the default'} bytes)`
      let state: string
      if (kind === 'removed') {
        fs.rmSync(file)
        state = states[held(records, segment - 1, Infinity)]
      } else {
        const cut = kind === 'cut further on' ? first.offset + first.bytes.length + 40 : first.offset + RECORD_HEADER_BYTES + 3
        fs.truncateSync(file, cut)
        state = states[held(records, segment, cut)]
      }
      const left = fs.existsSync(file) ? fs.readFileSync(file) : undefined
      await expectDamage(path, state, kind === 'removed' ? REMOVED : CUT, context)
      await expectRepaired(path, state, context)
      const after = pack.segmentFiles(path)
      expect(after.at(-1)!.segment, context).toBeGreaterThan(segment)
      if (left) {
        // What was left of the cut segment, never appended over: as it was, or collected once its damaged bytes were set aside.
        if (fs.existsSync(file)) expect(fs.readFileSync(file).equals(left), context).toBe(true)
        const kept = fs.readdirSync(path).filter((name) => name.startsWith('blob.damaged-')).map((name) => fs.readFileSync(`${path}/${name}`))
        expect(kept.some((bytes) => bytes.length > 0 && left.subarray(left.length - bytes.length).equals(bytes)), context).toBe(true)
      } else expect(after.some((entry) => entry.segment === segment), context).toBe(false)
    }
  })

  it('a torn tail is dropped as before: bytes past what the last segment\'s index file lists, or a segment no index file lists yet, cut by a crash', async () => {
    for (const segmentBytes of [undefined, 4096]) {
      const path = fresh()
      const states = await filled(path, 6, segmentBytes)
      const last = pack.segmentFiles(path).at(-1)!.segment
      // Appends after the clean close (with small segments, until a new one is started), then a
      // crash: the store's files as they are, the lock gone with the process.
      const ws = await open(path, segmentBytes)
      const before = pack.records(path).length
      for (let i = 0; i === 0 || (segmentBytes !== undefined && pack.segmentFiles(path).at(-1)!.segment === last); i++) {
        ws.fs.writeFileSync(`/late${i}`, 'late '.repeat(200))
        await ws.sync()
        states.push(view(ws))
      }
      const crashed = fresh()
      fs.cpSync(path, crashed, { recursive: true })
      fs.rmSync(`${crashed}/lock`)
      await ws.close()
      // The first record after the last segment's index file; with small segments, the new segment's first, which no index file lists.
      const records = pack.records(crashed)
      const late = records.slice(before)
      const target = segmentBytes === undefined ? late[0] : late.find((record) => record.segment > last)!
      const indexed = fs.existsSync(`${crashed}/packs/${String(target.segment).padStart(8, '0')}.idx`)
      expect(indexed).toBe(segmentBytes === undefined)
      const context = `segments of ${segmentBytes ?? 'the default'} bytes: the first record of segment ${target.segment} ${indexed ? 'after what its index file lists' : 'which has no index file'} cut`
      const cut = target.offset + RECORD_HEADER_BYTES + 3
      fs.truncateSync(target.file, cut)
      const reopened = await open(crashed)
      expect(reopened.status.corrupt, context).toBeUndefined()
      expect(reopened.frozen, context).toBeFalsy()
      expect(view(reopened), context).toBe(states[held(records, target.segment, cut)])
      reopened.fs.writeFileSync('/next', 'n')
      await reopened.sync()
      await reopened.close()
    }
  })

  it('an index file past the last segment that lists no record, or does not read, proves nothing', async () => {
    const path = fresh()
    const states = await filled(path, 4)
    const [{ segment }] = pack.segmentFiles(path)
    const [index] = pack.indexFiles(path)
    // Not about the next segment (its number is in the file, checksummed), and one that fails its checksum.
    fs.copyFileSync(index, `${path}/packs/${String(segment + 1).padStart(8, '0')}.idx`)
    fs.writeFileSync(`${path}/packs/${String(segment + 2).padStart(8, '0')}.idx`, Buffer.alloc(64, 1))
    const ws = await open(path)
    expect(ws.status.corrupt).toBeUndefined()
    expect(view(ws)).toBe(states.at(-1))
    await ws.close()
  })
})
