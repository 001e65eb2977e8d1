/**
 * The directory store's pack segments under the real engine, checked against an independent
 * reading of the bytes (test/support/pack-raw.ts): a crash cut at every byte of the last group
 * commit, every byte of a store flipped (detected and reported, never read as content), segments
 * sealed at their size, garbage collection, a reader beside a writer, and a store in the first
 * layout (one file per blob) migrated. Killing a process in the middle of a collection is
 * test/adapters/node-fs-pack-gc-crash.test.ts.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { build } from 'esbuild'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { Kind, RECORD_HEADER_BYTES, crc32, readRecordHeader, recordHead } from '../../adapters/node-fs/pack-format.js'
import { MemoryStore } from '../../src/adapter-kit.js'
import { verifyStore } from '../../src/engine/verify-store.js'
import { Workspace } from '../../src/index.js'
import type { WorkspaceOptions } from '../../src/index.js'
import * as pack from '../support/pack-raw.js'
import { capability } from '../support/require.js'

// Thousands of opens: on tmpfs where there is one (the logic is what is tested here; the crash tests use a real disk).
const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-pack-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

const open = (path: string, options: Partial<WorkspaceOptions> & { segmentBytes?: number } = {}) => {
  const { segmentBytes, ...rest } = options
  return Workspace.open({ store: directoryStore(path, segmentBytes !== undefined ? { segmentBytes } : {}), autoCheckpoint: false, ...rest })
}

/** Every file of the workspace and its content, '<CODE>' where it cannot be read. */
function files(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      if (ws.fs.statSync(path).isDirectory()) walk(path)
      else {
        try {
          out[path] = ws.fs.readFileSync(path, 'utf8') as string
        } catch (error) {
          out[path] = `<${(error as { code?: string }).code}>`
        }
      }
    }
  }
  walk('/')
  return out
}

const view = (ws: Workspace) => JSON.stringify({ files: files(ws), checkpoints: ws.checkpoints().map((c) => c.name), history: ws.history().length })

const keptNames = (root: string) => fs.readdirSync(root).filter((name) => /^(journal|blob|meta|pack)\./.test(name)).sort()

describe('pack segments: the write path, by its counters', () => {
  it('makes a group commit durable with one fdatasync: its blobs and its journal record in one segment', async () => {
    const path = fresh()
    const store = directoryStore(path)
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    await ws.sync()
    const before = store.packStats!
    // Where the records end (zeros preallocated past them may follow while the store is open).
    const start = pack.records(path).reduce((end, record) => Math.max(end, record.offset + record.bytes.length), 0)
    for (let i = 0; i < 20; i++) {
      for (let k = 0; k < 5; k++) ws.fs.writeFileSync(`/f${i}-${k}`, `content ${i} ${k}`)
      await ws.sync()
    }
    const after = store.packStats!
    expect(after.fdatasyncs - before.fdatasyncs).toBe(20)
    // Each group: its five blobs, then its journal record; nothing else written, nothing twice.
    const written = pack.records(path).filter((record) => record.offset >= start)
    expect(written.map((record) => record.kind)).toEqual(Array.from({ length: 20 }, () => [Kind.Blob, Kind.Blob, Kind.Blob, Kind.Blob, Kind.Blob, Kind.Append]).flat())
    expect(after.appendedBytes - before.appendedBytes).toBe(written.reduce((sum, record) => sum + record.bytes.length, 0))
    await ws.close()
  })

  it('a group commit encoded in one buffer, a payload past the copy limit written from its own bytes, cut where segments seal: every record whole and checksummed', async () => {
    const path = fresh()
    const contents = new Map<string, Buffer>()
    let ws = await open(path, { segmentBytes: 8192, cacheBytes: 0 })
    // Small blobs around two larger than the 64 KiB copy limit, one group commit crossing many segment boundaries.
    for (let i = 0; i < 60; i++) {
      const size = i === 17 || i === 41 ? 100_000 + i : 200 + i * 37
      const bytes = Buffer.alloc(size, i)
      bytes.write(`blob ${i} `)
      contents.set(`/f${i}`, bytes)
      ws.fs.writeFileSync(`/f${i}`, bytes)
    }
    await ws.sync()
    // Read back through the places the appends gave (a cache of nothing: every read goes to the pack).
    for (const [file, bytes] of contents) expect(Buffer.from(ws.fs.readFileSync(file) as Uint8Array).equals(bytes)).toBe(true)
    await ws.close()
    // An independent reading: every record whole, its checksum right, every blob there once.
    const all = pack.records(path)
    expect(all.some((record) => record.torn)).toBe(false)
    for (const record of all) expect(crc32(record.bytes, RECORD_HEADER_BYTES, record.payloadAt - record.offset + record.payload.length)).toBe(record.bytes.readUInt32LE(16))
    const blobs = all.filter((record) => record.kind === Kind.Blob)
    expect(new Set(blobs.map((record) => record.id)).size).toBe(60)
    expect(new Set(blobs.map((record) => record.segment)).size).toBeGreaterThan(10)
    // Segments opened from the index files the appends listed (the last one's written at close), read through them.
    const store = directoryStore(path)
    ws = await Workspace.open({ store, cacheBytes: 0 })
    expect(store.packStats!.indexedSegments).toBe(pack.segmentFiles(path).length)
    for (const [file, bytes] of contents) expect(Buffer.from(ws.fs.readFileSync(file) as Uint8Array).equals(bytes)).toBe(true)
    await ws.close()
  })
})

describe('pack segments: a crash cut at every byte of the last group commit', () => {
  it('reopens at the commit before (or the whole commit), never reports damage, and keeps what it cuts aside first', async () => {
    const path = fresh()
    let ws = await open(path)
    ws.fs.writeFileSync('/a.txt', 'first')
    await ws.sync()
    const before = view(ws)
    const journalBefore = pack.journalText(path)
    ws.fs.writeFileSync('/b.txt', 'second')
    ws.fs.writeFileSync('/a.txt', 'changed')
    await ws.sync()
    const after = view(ws)
    await ws.close()

    const [{ file }] = pack.segmentFiles(path)
    const whole = fs.readFileSync(file)
    // A crash leaves no index file or saved state for the segment it cut: the clean close writes them.
    const crashed = () => {
      for (const index of pack.indexFiles(path)) fs.rmSync(index)
      fs.rmSync(`${path}/packs/state`, { force: true })
    }
    crashed()
    const all = pack.records(path)
    const appends = all.filter((record) => record.kind === Kind.Append)
    const last = appends.at(-1)!
    // The last group commit: its blob records, then its journal record, after the commit before.
    const previous = appends.at(-2)!
    const start = previous.offset + previous.bytes.length
    expect(all.filter((record) => record.offset >= start).map((record) => record.kind)).toEqual([Kind.Blob, Kind.Blob, Kind.Append])
    expect(last.offset + last.bytes.length).toBe(whole.length)
    const saved = fs.readdirSync(path)

    // Cut as a crash leaves the file: where the write stopped, or followed by the zeros the segment
    // was preallocated with.
    for (const zeros of [0, 4096])
    for (let cut = start; cut <= whole.length; cut++) {
      for (const name of fs.readdirSync(path)) if (!saved.includes(name)) fs.rmSync(`${path}/${name}`)
      crashed()
      fs.writeFileSync(file, Buffer.concat([whole.subarray(0, cut), Buffer.alloc(zeros)]))
      ws = await open(path)
      const context = `cut at byte ${cut} of ${whole.length}${zeros > 0 ? `, ${zeros} zeros after` : ''}`
      expect(ws.status.corrupt, context).toBeUndefined()
      expect(ws.frozen, context).toBeUndefined()
      // Only the record's end byte missing: whole (its checksum says so). Only the commit marker's
      // line end missing too: the engine takes the whole marker as written.
      const complete = cut >= whole.length - 2
      expect(view(ws), context).toBe(complete ? after : before)
      // The next commit cuts the tail, kept aside first.
      ws.fs.writeFileSync('/c.txt', 'later')
      await ws.sync()
      await ws.close()
      const torn = all.find((record) => record.offset < cut && cut < record.offset + record.bytes.length - 1)
      const kept = keptNames(path)
      if (torn === undefined) expect(kept, context).toEqual([])
      else if (torn.kind === Kind.Append && cut > torn.offset + RECORD_HEADER_BYTES) {
        // Journal text was cut: the engine keeps the journal as it was (the torn text included) and drops the group.
        expect(kept, context).toEqual([expect.stringMatching(/^journal\.torn-/)])
        expect(fs.readFileSync(`${path}/${kept[0]}`, 'utf8'), context).toBe(journalBefore + whole.subarray(torn.offset + RECORD_HEADER_BYTES, cut).toString('utf8'))
      } else {
        // A blob record or a journal record's header: the store keeps the segment's tail as it was.
        expect(kept, context).toEqual([expect.stringMatching(/^pack\.torn-\d{8}T\d{9}Z\.00000001-\d+$/)])
        // What was written of it (a zero it ends with cannot be told from the zeros of preallocation).
        let written = cut
        while (written > torn.offset && whole[written - 1] === 0) written--
        expect(fs.readFileSync(`${path}/${kept[0]}`).equals(whole.subarray(torn.offset, written)), context).toBe(true)
      }
      if (cut % 16 === 0 || cut === whole.length) {
        ws = await open(path)
        expect(ws.status.warnings, context).toEqual([])
        expect(files(ws)['/c.txt'], context).toBe('later')
        await ws.close()
      }
    }
  }, 300_000)
})

describe('pack segments: a journal replacement cut after any of its writes', () => {
  it('reopens with the old journal or the whole new one, a torn tail at most, never damage', async () => {
    const child = `${scratch}/reset-cut-child.mjs`
    await build({ entryPoints: ['test/adapters/fixtures/node-fs-reset-cut-child.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    // 300k two-byte characters: a reset record written in several slices.
    const size = 300_000
    let whole = false
    for (let cut = 1; !whole; cut++) {
      const path = fresh()
      const exit = spawnSync(process.execPath, [child, path, String(cut), String(size)], { encoding: 'utf8' })
      expect(exit.stderr).toBe('')
      whole = exit.status === 0
      const store = directoryStore(path)
      try {
        const journal = await store.readJournal()
        expect(journal.torn, `cut after write ${cut}`).toBeUndefined()
        expect(journal.records.length, `cut after write ${cut}`).toBe(1)
        if (journal.records[0] !== 'old') expect(journal.records[0], `cut after write ${cut}`).toBe('é'.repeat(size))
        if (whole) expect(journal.records[0]).toBe('é'.repeat(size))
        expect((await store.blobIds()).filter((id) => id.startsWith('pack-damage:')), `cut after write ${cut}`).toEqual([])
        expect((await store.keptAside()).filter((name) => !name.startsWith('pack.torn-')), `cut after write ${cut}`).toEqual([])
      } finally {
        await store.close()
      }
      expect(cut).toBeLessThan(50)
    }
  })
})

describe('pack segments: damage', () => {
  for (const indexed of [false, true]) {
    it(`a byte flipped anywhere (every header byte, payloads sampled): detected and reported, never read as content; nothing on disk changes (${indexed ? 'through index files: open reads no header, blob and journal reads and the scrub do' : 'no index files: open scans'})`, async () => {
      const path = fresh()
      let ws = await open(path, { compactEvery: Number.POSITIVE_INFINITY })
      const states = new Set<string>([JSON.stringify(files(ws))])
      const commit = async () => {
        await ws.sync()
        states.add(JSON.stringify(files(ws)))
      }
      for (let i = 0; i < 6; i++) {
        ws.fs.writeFileSync(`/f${i % 3}`, `v${i}`)
        if (i === 2) await ws.checkpoint({ name: 'cp' })
        await commit()
      }
      // A compaction: the journal as one reset record.
      await ws.compact()
      for (let i = 6; i < 9; i++) {
        ws.fs.writeFileSync(`/f${i % 3}`, `v${i}`)
        await commit()
      }
      const final = JSON.stringify(files(ws))
      await ws.close()
      // A blob stored and deleted: a record of forgotten places, and a blob nothing reads.
      const store = directoryStore(path)
      await store.putBlobs([['orphan', new TextEncoder().encode('orphan bytes')]])
      await store.deleteBlobs(['orphan'])
      await store.close()
      const all = pack.records(path)
      expect(all.some((record) => record.kind === Kind.Forget)).toBe(true)
      expect(all.some((record) => record.kind === Kind.Reset)).toBe(true)

      // Bytes nothing reads: the text of journal records before the last reset, and forgotten blobs.
      const lastReset = all.findLastIndex((record) => record.kind === Kind.Reset)
      const live = new Set([...pack.blobRecords(path).values()].map((record) => record.offset))
      const dead = new Set<number>()
      all.forEach((record, i) => {
        const deadText = (record.kind === Kind.Append || record.kind === Kind.Reset) && i < lastReset
        // A forgotten blob's header too: damage where a record was forgotten is damage nothing needs.
        const forgotten = record.kind === Kind.Blob && !live.has(record.offset)
        if (deadText || forgotten) for (let at = record.offset + (forgotten ? 0 : RECORD_HEADER_BYTES); at < record.offset + record.bytes.length; at++) dead.add(at)
        // The end byte only marks a record written whole: nothing reads what it holds.
        dead.add(record.offset + record.bytes.length - 1)
      })

      // Every byte of every header and id; payload bytes at their ends and one in 11 between (the
      // checksum covers each alike: sampling keeps the run short).
      const payloads = all.map((record) => [record.payloadAt, record.offset + record.bytes.length] as const)
      const sampled = (at: number) => {
        const payload = payloads.find(([start, end]) => start <= at && at < end)
        return payload === undefined || at - payload[0] < 4 || payload[1] - at <= 4 || (at - payload[0]) % 11 === 0
      }
      // Without index files open scans (after a crash, or where no index file covers a segment); through
      // them it reads no header: reads check the header the index lists, ws.verify() scrubs the rest.
      if (indexed) expect(pack.indexFiles(path)).toHaveLength(1)
      else pack.removeIndexes(path)
      const [{ file }] = pack.segmentFiles(path)
      const original = fs.readFileSync(file)
      for (let at = 0; at < original.length; at++) {
        if (!sampled(at)) continue
        const damaged = Buffer.from(original)
        damaged[at] ^= 0x10
        fs.writeFileSync(file, damaged)
        const context = `byte ${at} of ${original.length} flipped`
        const before = pack.fingerprint(path)
        ws = await open(path)
        const seen = files(ws)
        const report = await ws.verify()
        const reported = ws.status.corrupt !== undefined || ws.status.warnings.length > 0 || report.corrupt.length > 0
        // Never content that was not written: every file reads as in some state the session acknowledged, or fails.
        const matches = [...states].some((state) => {
          const expected = JSON.parse(state) as Record<string, string>
          const paths = Object.keys(expected)
          return paths.length === Object.keys(seen).length && paths.every((p) => seen[p] === expected[p] || seen[p] === '<EIO>')
        })
        expect(matches, `${context}: ${JSON.stringify(seen)}`).toBe(true)
        if (dead.has(at)) {
          expect(reported, context).toBe(false)
          expect(JSON.stringify(seen), context).toBe(final)
        } else expect(reported, `${context}: not reported`).toBe(true)
        await ws.close()
        expect(pack.fingerprint(path), context).toBe(before)
      }
      fs.writeFileSync(file, original)
    }, 600_000)
  }

  it('another store\'s pack kept as a file\'s content is never read as records, even right after damage', async () => {
    const other = fresh()
    const foreign = await open(other)
    foreign.fs.writeFileSync('/foreign.txt', 'foreign')
    await foreign.checkpoint({ name: 'foreign' })
    await foreign.compact() // a reset record: the whole journal of that store
    await foreign.close()
    const segment = fs.readFileSync(pack.segmentFiles(other)[0].file)
    const path = fresh()
    let ws = await open(path)
    ws.fs.writeFileSync('/mine.txt', 'mine')
    await ws.sync()
    ws.fs.writeFileSync('/copy.pack', segment)
    ws.fs.writeFileSync('/after.txt', 'after')
    await ws.sync()
    await ws.close()
    // The record holding the copy loses its header: a scan reads what follows from the next record of this store.
    pack.removeIndexes(path)
    const record = [...pack.blobRecords(path).values()].find((blob) => blob.payload.equals(segment))!
    const fd = fs.openSync(record.file, 'r+')
    fs.writeSync(fd, Buffer.from([record.bytes[2] ^ 0x40]), 0, 1, record.offset + 2)
    fs.closeSync(fd)
    ws = await open(path)
    expect(ws.status.corrupt).toMatchObject({ part: 'journal' })
    expect(files(ws)).toEqual({ '/mine.txt': 'mine' })
    expect(ws.checkpoints().map((c) => c.name)).not.toContain('foreign')
    expect(ws.status.warnings.join('\n')).toMatch(/pack-damage:1:\d+ cannot be read/)
    await ws.close()
  })

  it('through index files open reads no record header: a damaged one is found when its record is read (EIO for a blob, damage in the journal), never content', async () => {
    const path = fresh()
    let ws = await open(path)
    ws.fs.writeFileSync('/a.txt', 'first')
    await ws.sync()
    ws.fs.writeFileSync('/b.txt', 'second')
    await ws.sync()
    await ws.close()
    expect(pack.indexFiles(path)).toHaveLength(pack.segmentFiles(path).length)
    const records = pack.records(path)
    const ids = new Map([...pack.blobRecords(path)].map(([id, blob]) => [blob.offset, id]))
    const blobs = [...pack.blobRecords(path).values()]
    // Not the last record: open checks that one's header against the index file (a mismatch: the segment is scanned).
    const journalRecord = records.find((record) => record.kind === Kind.Append || record.kind === Kind.Reset)!
    expect(journalRecord).not.toBe(records.at(-1))
    const [{ file }] = pack.segmentFiles(path)
    const original = fs.readFileSync(file)
    // Its kind, its id's length, its payload's length, its checksum, the header's own checksum.
    for (const at of [4, 6, 8, 16, 20]) {
      for (const record of [...blobs, journalRecord]) {
        const damaged = Buffer.from(original)
        damaged[record.offset + at] ^= 0x01
        fs.writeFileSync(file, damaged)
        const context = `header byte ${at} of the ${record.kind === Kind.Blob ? 'blob' : 'journal'} record at ${record.offset}`
        const store = directoryStore(path, { readOnly: true })
        expect(store.packStats!.indexedSegments, context).toBe(1)
        expect(store.packStats!.scannedBytes, context).toBe(0)
        if (record.kind === Kind.Blob) {
          const id = ids.get(record.offset)!
          expect(() => store.readBlobSync(id), context).toThrow(expect.objectContaining({ code: 'EIO', message: expect.stringMatching(/record header is damaged/) }))
          await expect(store.getBlob(id), context).rejects.toMatchObject({ code: 'EIO' })
          await store.close()
          ws = await open(path)
          const seen = ['/a.txt', '/b.txt'].map((p) => {
            try {
              return ws.fs.readFileSync(p, 'utf8')
            } catch (error) {
              return (error as { code?: string }).code
            }
          })
          expect(seen, context).toContain('EIO')
          expect(seen.every((value) => value === 'EIO' || value === 'first' || value === 'second'), context).toBe(true)
          expect(ws.status.warnings.join('\n'), context).toMatch(/cannot be read or does not match/)
        } else {
          await store.close()
          ws = await open(path)
          expect(ws.status.corrupt, context).toMatchObject({ part: 'journal' })
        }
        await ws.close()
      }
    }
    fs.writeFileSync(file, original)
  })

  it('a segment that is not the last cut short is damage (a sealed segment was made durable whole), not a torn tail', async () => {
    const path = fresh()
    let ws = await open(path, { segmentBytes: 512 })
    for (let i = 0; i < 12; i++) {
      ws.fs.writeFileSync(`/f${i}`, `content ${i} `.repeat(20))
      await ws.sync()
    }
    await ws.close()
    const segments = pack.segmentFiles(path)
    expect(segments.length).toBeGreaterThan(3)
    const { file } = segments[1]
    fs.truncateSync(file, fs.statSync(file).size - 5)
    const before = pack.fingerprint(path)
    ws = await open(path)
    expect(ws.status.corrupt).toMatchObject({ part: 'journal' })
    expect(ws.frozen).toMatch(/damaged/)
    await ws.close()
    expect(pack.fingerprint(path)).toBe(before)
  })

  it('the last segment cut below what its index file (written at a clean close) lists is damage, not a torn tail: acknowledged commits were lost', async () => {
    const path = fresh()
    let ws = await open(path)
    const states: string[] = []
    for (let i = 0; i < 8; i++) {
      ws.fs.writeFileSync(`/f${i % 3}`, `version ${i} `.repeat(10))
      await ws.sync()
      states.push(view(ws))
    }
    await ws.close()
    const [{ file }] = pack.segmentFiles(path)
    const whole = fs.readFileSync(file)
    const index = pack.indexFiles(path)
    expect(index).toHaveLength(1)
    const appends = pack.records(path).filter((record) => record.kind === Kind.Append)
    // Cut at the end of the fourth group commit, inside the fifth's journal text, and inside the sixth's first blob record.
    const fifth = appends[4]
    const cuts = [appends[3].offset + appends[3].bytes.length, fifth.offset + RECORD_HEADER_BYTES + 10, appends[4].offset + appends[4].bytes.length + 30]
    for (const cut of cuts) {
      fs.writeFileSync(file, whole.subarray(0, cut))
      const before = pack.fingerprint(path)
      ws = await open(path)
      const context = `cut at byte ${cut} of ${whole.length}`
      expect(ws.status.corrupt, context).toMatchObject({ part: 'journal' })
      expect(ws.frozen, context).toMatch(/damaged/)
      expect(ws.status.warnings.join('\n'), context).toMatch(/index file, written when the segment was whole and durable, lists records up to byte \d+: it was cut short/)
      // The state of the last group commit the segment still holds whole (one append per sync).
      const held = appends.filter((record) => record.offset + record.bytes.length <= cut).length
      expect(view(ws), context).toBe(states[held - 1])
      expect(() => ws.fs.writeFileSync('/refused', 'x'), context).toThrow(expect.objectContaining({ code: 'EROFS' }))
      await ws.close()
      expect(pack.fingerprint(path), context).toBe(before)
    }
    // Without the index file (a crash, which writes none) the same cut is a torn tail, as ever.
    for (const name of index) fs.rmSync(name)
    fs.rmSync(`${path}/packs/state`, { force: true })
    ws = await open(path)
    expect(ws.status.corrupt).toBeUndefined()
    await ws.close()
  })
})

describe('pack segments: empty contents', () => {
  // Node's zlib.crc32 answers 0 for an empty view of a zero-length ArrayBuffer, whatever CRC it continues.
  const EMPTY = () => Buffer.alloc(0)

  it('an empty content given as a view of no memory (Buffer.alloc(0), an empty file read) is stored with its record checksummed, and reads back', async () => {
    const path = fresh()
    let ws = await open(path)
    await ws.transaction((fs) => {
      fs.writeFileSync('/empty', EMPTY())
      fs.writeFileSync('/full', 'x')
    })
    await ws.close()
    const { bytes } = pack.blobRecords(path).get('2jmj7l5rSw0yVb/vlWAYkK/YBwk=')!
    expect(readRecordHeader(bytes, 0, bytes.length, pack.salt(path))).toMatchObject({ length: 0, checksum: crc32(Buffer.from('2jmj7l5rSw0yVb/vlWAYkK/YBwk=')) })
    ws = await open(path)
    expect(files(ws)).toEqual({ '/empty': '', '/full': 'x' })
    const store = directoryStore(path, { readOnly: true })
    expect((await verifyStore(store)).ok).toBe(true)
    await store.close()
    await ws.close()
  })

  it('a store that bug wrote (an empty blob whose record says checksum 0) reads as the empty content it is', async () => {
    const path = fresh()
    let ws = await open(path)
    ws.fs.writeFileSync('/empty', '')
    await ws.close()
    const id = '2jmj7l5rSw0yVb/vlWAYkK/YBwk='
    const record = pack.blobRecords(path).get(id)!
    const [{ file }] = pack.segmentFiles(path)
    const bytes = fs.readFileSync(file)
    bytes.set(recordHead(Kind.Blob, Buffer.from(id), 0, 0, pack.salt(path)), record.offset)
    fs.writeFileSync(file, bytes)
    pack.removeIndexes(path)
    ws = await open(path)
    expect(ws.status.warnings).toEqual([])
    expect(files(ws)).toEqual({ '/empty': '' })
    await ws.close()
    const store = directoryStore(path, { readOnly: true })
    expect((await verifyStore(store)).ok).toBe(true)
    await store.close()
  })
})

describe('pack segments: a failed fdatasync', () => {
  it('is final: the workspace stays degraded with the commit unacknowledged, never retried (what the disk failed to write may be gone from the cache too)', async () => {
    const path = fresh()
    const ws = await open(path)
    ws.fs.writeFileSync('/kept.txt', 'kept')
    await ws.sync()
    // A disk error cannot be made on demand here: the one call fails as a failing disk's would.
    const sync = vi.spyOn(fs, 'fdatasyncSync').mockImplementationOnce(() => {
      throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })
    })
    try {
      ws.fs.writeFileSync('/lost.txt', 'not acknowledged')
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
    } finally {
      sync.mockRestore()
    }
    const started = Date.now()
    while (ws.status.reconnect?.state !== 'refused' && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(ws.status.reconnect).toMatchObject({ state: 'refused', error: expect.stringContaining('an earlier fdatasync of the pack failed') })
    await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
    await ws.close()
    const again = await open(path)
    expect(files(again)['/kept.txt']).toBe('kept')
    await again.close()
  })
})

/**
 * A child that fills a segment, makes the next one impossible to start — the packs directory
 * unwritable (EACCES, as an unprivileged user: chmod does not bind root), or every descriptor of
 * the process taken (EMFILE) — commits, opens a file of its own while the workspace retries, then
 * removes the cause; prints one JSON line of what it saw. Every commit of it starts a segment (its
 * contents are larger than one).
 */
const SEAL_CHILD = `
import fs from 'node:fs'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { Workspace } from '../../src/index.js'

const [root, mode] = process.argv.slice(2)
const store = root + '/store'
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const content = (c) => c.repeat(5000)
const ws = await Workspace.open({ store: directoryStore(store, { segmentBytes: 4096 }), autoCheckpoint: false })
ws.fs.writeFileSync('/a', content('a'))
await ws.sync()
const hogs = []
if (mode === 'eacces') fs.chmodSync(store + '/packs', 0o555)
else {
  try {
    for (;;) hogs.push(fs.openSync('/dev/null', 'r'))
  } catch (error) {
    if (error.code !== 'EMFILE') throw error
  }
}
ws.fs.writeFileSync('/b', content('b'))
let failure = ''
try {
  await ws.sync()
} catch (error) {
  failure = error.code + ': ' + error.message
}
// The application opens a file of its own: a descriptor the store closed may have its number now.
if (hogs.length > 0) fs.closeSync(hogs.pop())
const app = fs.openSync(root + '/app.log', 'w')
const started = Date.now()
while ((ws.status.reconnect?.attempts ?? 0) < 2 && ws.status.reconnect?.state !== 'refused' && Date.now() - started < 10000) await pause(20)
const blocked = { state: ws.status.reconnect?.state ?? null, attempts: ws.status.reconnect?.attempts ?? 0, error: ws.status.reconnect?.error ?? null }
let appFile = 'usable'
try {
  fs.writeSync(app, 'app data\\n')
} catch (error) {
  appFile = error.code
}
// The cause removed: a retry starts the segment and sends what was kept back.
if (mode === 'eacces') fs.chmodSync(store + '/packs', 0o755)
for (const fd of hogs.splice(0)) fs.closeSync(fd)
while (ws.status.reconnect?.state !== 'reconnected' && ws.status.reconnect?.state !== 'refused' && Date.now() - started < 30000) await pause(20)
const reconnect = ws.status.reconnect?.state ?? null
ws.fs.writeFileSync('/c', content('c'))
let after = 'committed'
try {
  await ws.sync()
} catch (error) {
  after = error.code + ': ' + error.message
}
let closed = 'closed'
try {
  await ws.close()
} catch (error) {
  closed = error.code + ': ' + error.message
}
// Opened again in this process: the lock was released.
let reopened
try {
  const again = await Workspace.open({ store: directoryStore(store) })
  reopened = { files: again.fs.readdirSync('/').sort(), intact: ['a', 'b', 'c'].every((c) => again.fs.existsSync('/' + c) && again.fs.readFileSync('/' + c, 'utf8') === content(c)), corrupt: again.status.corrupt ?? null }
  await again.close()
} catch (error) {
  reopened = error.code + ': ' + error.message
}
try {
  fs.closeSync(app)
} catch (error) {
  appFile = appFile === 'usable' ? 'closed by another: ' + error.code : appFile
}
// Every workspace closed: no descriptor is left on the store's files (a segment that failed to start included).
const held = fs.readdirSync('/proc/self/fd').flatMap((fd) => {
  try {
    const target = fs.readlinkSync('/proc/self/fd/' + fd)
    return target.startsWith(store + '/') ? [target] : []
  } catch {
    return []
  }
})
console.log(JSON.stringify({ failure, blocked, appFile, reconnect, after, closed, reopened, held }))
`

describe('pack segments: a next segment that fails to start', () => {
  const root = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-pack-seal-`)
  const child = `${root}/child.mjs`
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
  /** As root, the unprivileged test user runs the EACCES case (chmod does not bind root); anyone else runs it as themselves. */
  const asRoot = process.getuid?.() === 0
  const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
  const eacces = !asRoot || capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')

  const run = async (mode: 'eacces' | 'emfile') => {
    if (!fs.existsSync(child)) {
      await build({ stdin: { contents: SEAL_CHILD, resolveDir: new URL('.', import.meta.url).pathname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
      fs.chmodSync(root, 0o755)
    }
    const dir = fs.mkdtempSync(`${root}/${mode}-`)
    fs.chmodSync(dir, 0o755)
    if (mode === 'eacces' && asRoot) fs.chownSync(dir, Number(user!.stdout.trim()), Number(user!.stdout.trim()))
    // EMFILE: few descriptors, so the child can take every one.
    const command = mode === 'emfile' ? ['sh', '-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, child, dir, mode] : asRoot ? ['runuser', '-u', 'rewindfs-exec', '--', process.execPath, child, dir, mode] : [process.execPath, child, dir, mode]
    const result = spawnSync(command[0], command.slice(1), { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { failure: string; blocked: { state: string; attempts: number; error: string }; appFile: string; reconnect: string; after: string; closed: string; reopened: { files: string[]; intact: boolean; corrupt: unknown } | string; held: string[] }
  }

  for (const mode of ['eacces', 'emfile'] as const) {
    it.skipIf(mode === 'eacces' && !eacces)(`${mode === 'eacces' ? 'EACCES (the packs directory unwritable)' : 'EMFILE (every descriptor taken)'}: no descriptor it does not hold is closed, a retry starts the segment once the cause is gone, close releases the lock`, async () => {
      const seen = await run(mode)
      expect(seen.failure).toMatch(new RegExp(`^EDEGRADED: .*${mode.toUpperCase()}`))
      // Retried for the cause, never a closed descriptor's EBADF (which ends the retries).
      expect(seen.blocked.attempts).toBeGreaterThanOrEqual(2)
      expect(seen.blocked.state).toBe('reconnecting')
      expect(seen.blocked.error).toMatch(mode.toUpperCase())
      expect(seen.appFile).toBe('usable')
      expect(seen.reconnect).toBe('reconnected')
      expect(seen.after).toBe('committed')
      expect(seen.closed).toBe('closed')
      expect(seen.reopened).toEqual({ files: ['a', 'b', 'c'], intact: true, corrupt: null })
      expect(seen.held).toEqual([])
    }, 90_000)
  }

  it('the same, injected in this process (EACCES making the next segment): the descriptor the store closed is never closed again, whoever holds its number now', async () => {
    const path = fresh()
    const ws = await open(path, { segmentBytes: 4096 })
    ws.fs.writeFileSync('/a', 'a'.repeat(5000))
    await ws.sync()
    const openSync = fs.openSync
    let refuse = true
    const making = vi.spyOn(fs, 'openSync').mockImplementation((file, ...rest) => {
      if (refuse && String(file).includes('.pack.tmp')) throw Object.assign(new Error(`EACCES: permission denied, open '${String(file)}'`), { code: 'EACCES', syscall: 'open', path: String(file) })
      return openSync(file, ...rest)
    })
    let app: number | undefined
    try {
      ws.fs.writeFileSync('/b', 'b'.repeat(5000))
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
      // The lowest free number: the one the sealed segment's descriptor had, most likely.
      app = openSync(`${path}.app.log`, 'w')
      const started = Date.now()
      while ((ws.status.reconnect?.attempts ?? 0) < 2 && ws.status.reconnect?.state !== 'refused' && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(ws.status.reconnect).toMatchObject({ state: 'reconnecting', error: expect.stringContaining('EACCES') })
      expect(fs.writeSync(app, 'app data\n')).toBe(9)
    } finally {
      refuse = false
      making.mockRestore()
    }
    const started = Date.now()
    while (ws.status.reconnect?.state !== 'reconnected' && ws.status.reconnect?.state !== 'refused' && Date.now() - started < 30_000) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(ws.status.reconnect?.state).toBe('reconnected')
    await ws.close()
    fs.closeSync(app)
    const again = await open(path)
    expect(files(again)).toEqual({ '/a': 'a'.repeat(5000), '/b': 'b'.repeat(5000) })
    await again.close()
  }, 60_000)

  it('a failed fdatasync of the segment being sealed is final too (a retry would fdatasync what may be gone from the cache)', async () => {
    const path = fresh()
    const ws = await open(path, { segmentBytes: 4096 })
    ws.fs.writeFileSync('/kept.txt', 'k'.repeat(5000))
    await ws.sync()
    // Its content is larger than a segment: its blob goes to the active segment, then that segment is sealed (fdatasynced) before the journal record.
    const sync = vi.spyOn(fs, 'fdatasyncSync').mockImplementationOnce(() => {
      throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })
    })
    try {
      ws.fs.writeFileSync('/lost.txt', 'l'.repeat(5000))
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
      expect(sync).toHaveBeenCalled()
    } finally {
      sync.mockRestore()
    }
    const started = Date.now()
    while (ws.status.reconnect?.state !== 'refused' && ws.status.reconnect?.state !== 'reconnected' && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(ws.status.reconnect).toMatchObject({ state: 'refused', error: expect.stringContaining('an earlier fdatasync of the pack failed') })
    await ws.close()
    const again = await open(path)
    expect(files(again)['/kept.txt']).toBe('k'.repeat(5000))
    await again.close()
  })
})

describe('pack segments: sealing and garbage collection', () => {
  it('seals a segment at its size and starts the next; everything reads back after a reopen', async () => {
    const path = fresh()
    let ws = await open(path, { segmentBytes: 4096 })
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync(`/f${i}`, `${i}`.repeat(300))
    await ws.sync()
    for (let i = 0; i < 40; i += 3) {
      ws.fs.writeFileSync(`/f${i}`, `changed ${i}`)
      await ws.sync()
    }
    const expected = view(ws)
    await ws.close()
    const segments = pack.segmentFiles(path)
    expect(segments.length).toBeGreaterThan(3)
    // Each segment but the last was sealed at its size: its last record starts before it.
    for (const { segment } of segments.slice(0, -1)) expect(pack.records(path).filter((record) => record.segment === segment).at(-1)!.offset).toBeLessThan(4096)
    ws = await open(path)
    expect(view(ws)).toBe(expected)
    await ws.close()
  })

  it('rewrites a sealed segment whose records are mostly dead, in the background, keeping every live blob and the journal', async () => {
    const path = fresh()
    const store = directoryStore(path, { segmentBytes: 4096 })
    const content = (id: string) => new TextEncoder().encode(`blob ${id} `.repeat(40))
    const ids = Array.from({ length: 60 }, (_, i) => `id-${i}`)
    for (let i = 0; i < ids.length; i += 6) {
      await store.putBlobs(ids.slice(i, i + 6).map((id) => [id, content(id)] as const))
      await store.appendJournal([`put ${i}`])
    }
    const grown = pack.segmentFiles(path).length
    expect(grown).toBeGreaterThan(4)
    // A compaction: the journal replaced, then most blobs deleted. Collection follows on its own.
    await store.replaceJournal(['snapshot'])
    const keep = ids.filter((_, i) => i % 10 === 0)
    await store.deleteBlobs(ids.filter((id) => !keep.includes(id)))
    await store.appendJournal(['after'])
    await store.idle()
    expect(pack.segmentFiles(path).length).toBeLessThan(grown / 2)
    for (const id of keep) expect(await store.getBlob(id)).toEqual(content(id))
    expect((await store.blobIds()).sort()).toEqual([...keep].sort())
    expect(await store.readJournal()).toEqual({ records: ['snapshot', 'after'] })
    await store.close()
    expect(keptNames(path)).toEqual([])
    // The packs alone hold it all: an independent reading agrees, and so does a reopen.
    expect([...pack.blobRecords(path).keys()].sort()).toEqual([...keep].sort())
    const again = directoryStore(path)
    for (const id of keep) expect(await again.getBlob(id)).toEqual(content(id))
    expect((await again.blobIds()).sort()).toEqual([...keep].sort())
    expect(await again.readJournal()).toEqual({ records: ['snapshot', 'after'] })
    await again.close()
  })

  it('a blob deleted while the collector reads it to copy it stays deleted (its copy does not bring it back)', async () => {
    const path = fresh()
    const store = directoryStore(path, { segmentBytes: 4096 })
    const content = (id: string) => new TextEncoder().encode(`blob ${id} `.repeat(40))
    const ids = Array.from({ length: 60 }, (_, i) => `id-${i}`)
    for (let i = 0; i < ids.length; i += 6) {
      await store.putBlobs(ids.slice(i, i + 6).map((id) => [id, content(id)] as const))
      await store.appendJournal([`put ${i}`])
    }
    await store.replaceJournal(['snapshot'])
    const keep = ids.filter((_, i) => i % 10 === 0)
    // The collector's reads: the first live blobs it copies are deleted while their bytes are read.
    type Packs = { readAt(segment: number, offset: number, length: number): Promise<Uint8Array>; forget(ids: readonly string[]): Promise<void> }
    const packs = (store as unknown as { packs: Packs }).packs
    const readAt = packs.readAt.bind(packs)
    const deleted: string[] = []
    packs.readAt = async (segment, offset, length) => {
      const bytes = await readAt(segment, offset, length)
      const id = new TextDecoder().decode(bytes.subarray(24, 24 + new DataView(bytes.buffer, bytes.byteOffset).getUint16(6, true)))
      if (keep.includes(id) && deleted.length < 2) {
        deleted.push(id)
        await packs.forget([id])
      }
      return bytes
    }
    await store.deleteBlobs(ids.filter((id) => !keep.includes(id)))
    await store.appendJournal(['after'])
    await store.idle()
    expect(deleted).toHaveLength(2)
    expect((await store.blobIds()).sort()).toEqual(keep.filter((id) => !deleted.includes(id)).sort())
    await store.close()
    const again = directoryStore(path)
    expect((await again.blobIds()).sort()).toEqual(keep.filter((id) => !deleted.includes(id)).sort())
    await again.close()
  })

  it('collects under a workspace that compacts often: every state reads back after a reopen', async () => {
    const path = fresh()
    const store = directoryStore(path, { segmentBytes: 4096 })
    let ws = await Workspace.open({ store, autoCheckpoint: false, compactEvery: 20, retention: { operations: 10 } })
    for (let i = 0; i < 150; i++) {
      ws.fs.writeFileSync(`/f${i % 7}`, `version ${i} `.repeat(30))
      if (i % 25 === 0) await ws.checkpoint({ name: `cp${i}` })
      await ws.sync()
    }
    const expected = view(ws)
    await store.idle()
    await ws.close()
    // Segments stay few: the dead ones were rewritten as the history moved on.
    const bytes = pack.segmentFiles(path).reduce((sum, { file }) => sum + fs.statSync(file).size, 0)
    expect(bytes).toBeLessThan(40 * 4096)
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false, compactEvery: 20, retention: { operations: 10 } })
    expect(view(ws)).toBe(expected)
    expect(ws.status.warnings).toEqual([])
    await ws.close()
  })
})

describe('pack segments: index files and synchronous reads', () => {
  const content = (id: string) => new TextEncoder().encode(`blob ${id} `.repeat(60))
  /** A store of many sealed segments: blobs, journal appends, a deletion. */
  async function filled(path: string): Promise<string[]> {
    const store = directoryStore(path, { segmentBytes: 8192 })
    // Some ids not ASCII: an index file holds each id's UTF-8.
    const ids = Array.from({ length: 120 }, (_, i) => (i % 4 === 1 ? `id-${i}-é€😀` : `id-${i}`))
    for (let i = 0; i < ids.length; i += 10) {
      await store.putBlobs(ids.slice(i, i + 10).map((id) => [id, content(id)] as const))
      await store.appendJournal([`put ${i}`])
    }
    await store.deleteBlobs(['id-3'])
    await store.close()
    return ids.filter((id) => id !== 'id-3')
  }
  const size = (file: string) => fs.statSync(file).size

  it('open takes sealed segments from their index files and reads only the last one; blobs read by one positional read each', async () => {
    const path = fresh()
    const ids = await filled(path)
    const segments = pack.segmentFiles(path)
    expect(segments.length).toBeGreaterThan(10)
    // Every segment has its index file: a sealed one since it was sealed, the last since the store closed.
    expect(pack.indexFiles(path).length).toBe(segments.length)
    const store = directoryStore(path, { segmentBytes: 8192 })
    const stats = store.packStats!
    expect(stats.indexedSegments).toBe(segments.length)
    // No segment read record by record: open costs the index files, not the bytes of history.
    expect(stats.scannedBytes).toBe(0)
    // What an open that scans everything finds, and nothing read yet.
    expect((await store.blobIds()).sort()).toEqual([...ids].sort())
    expect(new Map(await store.blobSizes())).toEqual(new Map(ids.map((id) => [id, content(id).length])))
    expect(await store.readJournal()).toEqual({ records: Array.from({ length: 12 }, (_, i) => `put ${i * 10}`) })
    expect(store.packStats!.blobsRead).toBe(0)
    for (const id of ids.slice(0, 5)) expect(store.readBlobSync(id)).toEqual(content(id))
    expect(store.readBlobSync('id-3')).toBeUndefined()
    expect(store.readBlobSync('absent')).toBeUndefined()
    expect(store.packStats!.blobsRead).toBe(5)
    expect(store.packStats!.blobBytesRead).toBe(ids.slice(0, 5).reduce((sum, id) => sum + content(id).length, 0))
    await store.close()
  })

  it('the last segment’s index file (written at close) covers what came before; open reads on after it, after a crash too', async () => {
    const path = fresh()
    const ids = await filled(path)
    const last = pack.segmentFiles(path).at(-1)!
    const indexed = size(last.file)
    // Appended to after the index file, then a crash: the store's files as they are, the lock gone with the process.
    const store = directoryStore(path, { segmentBytes: 8192 })
    await store.putBlobs([['late', content('late')]])
    await store.appendJournal(['put late'])
    const crashed = fresh()
    fs.cpSync(path, crashed, { recursive: true })
    fs.rmSync(`${crashed}/lock`)
    await store.close()
    expect(pack.segmentFiles(crashed).at(-1)!.segment).toBe(last.segment) // still the same segment: its index file covers a prefix

    const reader = directoryStore(crashed, { readOnly: true })
    // The last segment too: its index file, then record by record from where that ends (the late record, the zeros after it).
    expect(reader.packStats!.indexedSegments).toBe(pack.segmentFiles(crashed).length)
    expect(reader.readBlobSync('late')).toEqual(content('late'))
    expect((await reader.blobIds()).sort()).toEqual([...ids, 'late'].sort())
    expect((await reader.readJournal()).records.at(-1)).toBe('put late')
    await reader.close()

    // A segment cut below what its index file covers (bytes lost, not a crash's tear): the file is ignored, the segment scanned.
    fs.truncateSync(last.file, indexed - 10)
    const cut = directoryStore(path, { readOnly: true })
    expect(cut.packStats!.indexedSegments).toBe(pack.segmentFiles(path).length - 1)
    await cut.close()
  })

  it('an index file that is missing, damaged or about another segment is ignored (the segment is scanned) and written again', async () => {
    const path = fresh()
    const ids = await filled(path)
    // Without the saved state, which open would take back instead of reading index files.
    fs.rmSync(pack.stateFile(path))
    const indexes = pack.indexFiles(path).sort()
    const reference = fs.readFileSync(indexes[1])
    fs.rmSync(indexes[0])
    const flipped = Buffer.from(reference)
    flipped[40] ^= 0x01
    fs.writeFileSync(indexes[1], flipped)
    // Another segment's index under this one's name.
    fs.copyFileSync(indexes[3], indexes[2])
    const reader = directoryStore(path, { readOnly: true })
    expect(reader.packStats!.indexedSegments).toBe(indexes.length - 3)
    for (const id of ids) expect(await reader.getBlob(id)).toEqual(content(id))
    await reader.close()
    // The writer writes them again.
    const writer = directoryStore(path, { segmentBytes: 8192 })
    await writer.close()
    expect(fs.readFileSync(indexes[1]).equals(reference)).toBe(true)
    const again = directoryStore(path, { readOnly: true })
    expect(again.packStats!.indexedSegments).toBe(indexes.length)
    expect((await again.blobIds()).sort()).toEqual([...ids].sort())
    await again.close()
  })

  it('a segment written anew under the same number does not match its old index file', async () => {
    const path = fresh()
    await filled(path)
    expect(pack.indexFiles(path).length).toBeGreaterThan(0)
    const indexes = pack.indexFiles(path).map((file) => [file, fs.readFileSync(file)] as const)
    // One segment holding other records (pack-raw rewrites the pack as one segment), its old index file put back (those of
    // segments after it, missing, would say acknowledged records were lost: node-fs-pack-damage.test.ts).
    pack.setJournal(path, { records: ['only this'] })
    const present = new Set(pack.segmentFiles(path).map(({ file }) => file.replace(/\.pack$/, '.idx')))
    expect(present.size).toBe(1)
    for (const [file, bytes] of indexes) if (present.has(file)) fs.writeFileSync(file, bytes)
    const store = directoryStore(path, { readOnly: true })
    expect(store.packStats!.indexedSegments).toBe(0)
    expect(await store.readJournal()).toEqual({ records: ['only this'] })
    await store.close()
  })

  it('a synchronous read checks the checksum too: damage is EIO, never content', async () => {
    const path = fresh()
    const ids = await filled(path)
    const record = pack.blobRecords(path).get(ids[7])!
    pack.flipBlobByte(path, ids[7], 3)
    const store = directoryStore(path, { readOnly: true })
    expect(() => store.readBlobSync(ids[7])).toThrow(expect.objectContaining({ code: 'EIO' }))
    expect(store.readBlobSync(ids[8])).toEqual(content(ids[8]))
    expect(record.segment).toBeLessThan(pack.segmentFiles(path).at(-1)!.segment)
    await store.close()
  })
  it('a scrub reads every record header of every segment: clean after writes, a deletion and sealing; a flipped segment header, dead record header or record of forgotten blobs is found though open reads none of them', async () => {
    const path = fresh()
    const ids = await filled(path)
    // The journal replaced (what came before is dead), then more, so the record forgetting id-3 is in a sealed segment.
    const writer = directoryStore(path, { segmentBytes: 8192 })
    await writer.replaceJournal(['snapshot'])
    const more = Array.from({ length: 20 }, (_, i) => `more-${i}`)
    for (let i = 0; i < more.length; i += 10) {
      await writer.putBlobs(more.slice(i, i + 10).map((id) => [id, content(id)] as const))
      await writer.appendJournal([`more ${i}`])
    }
    await writer.close()
    const segments = pack.segmentFiles(path)
    const total = segments.reduce((sum, { file }) => sum + size(file), 0)
    const clean = directoryStore(path, { readOnly: true })
    expect(await clean.scrub()).toEqual([])
    // Each segment read once, whole (they are smaller than the scrub's window).
    expect(clean.packStats!.scrubbedBytes).toBe(total)
    await clean.close()
    const records = pack.records(path)
    const deadText = records.find((record) => record.kind === Kind.Append)!
    const forget = records.find((record) => record.kind === Kind.Forget)!
    const forgotten = records.find((record) => record.kind === Kind.Blob && record.id === 'id-3')!
    expect(deadText.segment).toBe(1)
    expect(forget.segment).toBeLessThan(segments.at(-1)!.segment)
    const flip = (file: string, at: number) => {
      const bytes = fs.readFileSync(file)
      bytes[at] ^= 0x04
      fs.writeFileSync(file, bytes)
    }
    flip(deadText.file, deadText.offset + 9) // its length
    flip(segments[1].file, 13) // the segment's number
    flip(forget.file, forget.payloadAt + 1)
    // Damage where a record was forgotten is passed over, as open passes it over: nothing needs it.
    flip(forgotten.file, forgotten.offset + 2)
    const before = pack.fingerprint(path)
    const store = directoryStore(path, { readOnly: true })
    // Open reads index files (the last segment's too, written at close): it sees none of it, and every live blob and the journal read back.
    expect(store.packStats!.indexedSegments).toBe(segments.length)
    expect(store.packStats!.scannedBytes).toBe(0)
    expect(await store.readJournal()).toEqual({ records: ['snapshot', 'more 0', 'more 10'] })
    for (const id of [...ids, ...more]) expect(await store.getBlob(id)).toEqual(content(id))
    const found = await store.scrub()
    const reason = (id: string) => found.find((finding) => finding.id === id)?.reason
    expect(found.map((finding) => finding.id).sort()).toEqual([`pack-damage:1:${deadText.offset}`, 'pack-damage:2:0', `pack-damage:${forget.segment}:${forget.offset}`].sort())
    expect(reason(`pack-damage:1:${deadText.offset}`)).toMatch(/^pack segment 00000001\.pack, bytes \d+ to \d+: a record header fails its checksum; they are kept as they are$/)
    expect(reason('pack-damage:2:0')).toMatch(/the segment header fails its checksum/)
    expect(reason(`pack-damage:${forget.segment}:${forget.offset}`)).toMatch(/a record of forgotten blobs fails its checksum/)
    // rewindfs verify: damaged, each said where.
    const report = await verifyStore(store)
    expect(report.ok).toBe(false)
    expect(report.scrub).toEqual({ scrubbed: true, damaged: found })
    for (const finding of found) expect(report.problems).toContain(finding.reason)
    await store.close()
    expect(pack.fingerprint(path)).toBe(before)
  })

  it('ws.verify() scrubs: a flipped header of a journal record before the last compaction, in a sealed segment, is reported (corrupt, a warning, an alert); the workspace opens at its last state, nothing changed', async () => {
    const path = fresh()
    let ws = await open(path, { segmentBytes: 4096, compactEvery: Number.POSITIVE_INFINITY })
    // Blobs larger than the journal records beside them: no segment is mostly dead records, so no
    // collection moves the dead records away in the background before the test flips one.
    for (let i = 0; i < 30; i++) {
      ws.fs.writeFileSync(`/f${i}`, `file ${i} `.repeat(120))
      await ws.sync()
    }
    await ws.compact()
    ws.fs.writeFileSync('/after', 'after')
    await ws.sync()
    const expected = view(ws)
    expect(await ws.verify()).toEqual({ verified: ws.storage.durable.blobs, corrupt: [], broken: [], damagedPaths: [] })
    expect(ws.status.warnings).toEqual([])
    await ws.close()
    // An append before the last reset record is dead (the journal is that reset and what follows it).
    const all = pack.records(path)
    const reset = all.findLast((record) => record.kind === Kind.Reset)!
    const dead = all.find((record) => record.kind === Kind.Append && (record.segment < reset.segment || (record.segment === reset.segment && record.offset < reset.offset)))!
    expect(dead.segment).toBeLessThan(pack.segmentFiles(path).at(-1)!.segment)
    const bytes = fs.readFileSync(dead.file)
    bytes[dead.offset + 17] ^= 0x01 // its checksum
    fs.writeFileSync(dead.file, bytes)
    const before = pack.fingerprint(path)
    const alerts: string[] = []
    ws = await open(path, { onAlert: (alert) => alerts.push(alert.kind) })
    expect(ws.status.corrupt).toBeUndefined()
    expect(ws.status.warnings).toEqual([])
    expect(view(ws)).toBe(expected)
    const report = await ws.verify()
    expect(report.corrupt).toEqual([`pack-damage:${dead.segment}:${dead.offset}`])
    expect(ws.status.warnings).toEqual([expect.stringMatching(new RegExp(`pack segment ${String(dead.segment).padStart(8, '0')}.pack, bytes ${dead.offset} to \\d+: a record header fails its checksum`))])
    expect(alerts).toEqual(['integrity'])
    // Said once: a second verify lists it again, without another warning.
    expect((await ws.verify()).corrupt).toEqual(report.corrupt)
    expect(ws.status.warnings).toHaveLength(1)
    await ws.close()
    expect(pack.fingerprint(path)).toBe(before)

    // Repair sets the damaged bytes aside (nothing needs them, nothing is rebuilt): the store then
    // verifies clean, and the kept copy holds exactly those bytes.
    const verified = directoryStore(path, { readOnly: true })
    expect((await verifyStore(verified)).ok).toBe(false)
    await verified.close()
    const damagedBytes = fs.readFileSync(dead.file).subarray(dead.offset, dead.offset + 8)
    ws = await open(path)
    const dry = await ws.repair({ dryRun: true })
    expect(dry).toMatchObject({ repaired: false, damagedBytes: [{ id: `pack-damage:${dead.segment}:${dead.offset}` }] })
    expect(dry.damagedBytes[0].keptAs).toBeUndefined()
    const repaired = await ws.repair()
    expect(repaired).toMatchObject({ repaired: true, damage: [], lost: [], damagedBytes: [{ id: `pack-damage:${dead.segment}:${dead.offset}`, keptAs: expect.stringMatching(/^blob\.damaged-/) }] })
    expect(view(ws)).toBe(expected)
    expect((await ws.verify()).corrupt).toEqual([])
    await ws.close()
    expect(fs.readFileSync(`${path}/${repaired.damagedBytes[0].keptAs}`).subarray(0, 8)).toEqual(damagedBytes)
    const clean = directoryStore(path, { readOnly: true })
    const after = await verifyStore(clean)
    expect(after.problems).toEqual([])
    expect(after.ok).toBe(true)
    await clean.close()
    ws = await open(path)
    expect(view(ws)).toBe(expected)
    await ws.close()
  })
})

describe('pack segments: a reader beside the writer', () => {
  it('sees what the writer committed since, also across a collection that removed the segment it had read', async () => {
    const path = fresh()
    const writer = directoryStore(path, { segmentBytes: 2048 })
    const content = (id: string) => new TextEncoder().encode(`${id} `.repeat(100))
    for (let i = 0; i < 12; i++) {
      await writer.putBlobs([[`b${i}`, content(`b${i}`)]])
      await writer.appendJournal([`r${i}`])
    }
    const reader = directoryStore(path, { readOnly: true })
    expect((await reader.readJournal()).records).toHaveLength(12)
    await writer.putBlobs([['late', content('late')]])
    await writer.appendJournal(['late'])
    expect((await reader.readJournal()).records.at(-1)).toBe('late')
    expect(await reader.getBlob('late')).toEqual(content('late'))
    await writer.replaceJournal(['snapshot'])
    await writer.deleteBlobs(Array.from({ length: 11 }, (_, i) => `b${i}`))
    await writer.idle()
    // b11 moved to another segment: the reader looks again and finds it.
    expect(await reader.getBlob('b11')).toEqual(content('b11'))
    await reader.close()
    await writer.close()
  })

  it('reads in flight when the reader looks again, or the writer collects their segment, finish on the bytes they asked for', async () => {
    const path = fresh()
    const writer = directoryStore(path, { segmentBytes: 64 * 1024 })
    const content = (id: string) => new TextEncoder().encode(`${id} `.repeat(50))
    const ids = Array.from({ length: 400 }, (_, i) => `b${i}`)
    await writer.putBlobs(ids.map((id) => [id, content(id)]))
    await writer.appendJournal(['all'])
    const reader = directoryStore(path, { readOnly: true })
    // Many reads queued on the reader's descriptors, then a rescan that replaces them.
    const reads = ids.map((id) => reader.getBlob(id))
    await reader.readJournal()
    expect(await Promise.all(reads)).toEqual(ids.map(content))
    // The writer's own reads of a segment it collects meanwhile.
    await writer.replaceJournal(['snapshot'])
    const kept = ids.filter((_, i) => i % 10 === 0)
    const pending = kept.map((id) => writer.getBlob(id))
    await writer.deleteBlobs(ids.filter((_, i) => i % 10 !== 0))
    await writer.idle()
    expect(writer.packStats!.collected).toBeGreaterThan(0)
    expect(await Promise.all(pending)).toEqual(kept.map(content))
    await reader.close()
    await writer.close()
  })
})

describe('the first layout (one file per blob)', () => {
  /** A store of the first layout, as an earlier rewindfs wrote it, from a session in a MemoryStore. */
  async function firstLayout(path: string, tornTail = ''): Promise<string> {
    const memory = new MemoryStore()
    const ws = await Workspace.open({ store: memory, autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', 'alpha')
    ws.fs.mkdirSync('/dir')
    ws.fs.writeFileSync('/dir/b.txt', 'beta')
    await ws.checkpoint({ name: 'cp' })
    ws.fs.writeFileSync('/a.txt', 'alpha 2')
    await ws.state.set('plan', { step: 3 })
    await ws.sync()
    const expected = view(ws)
    await ws.close()
    const image = memory.image()
    fs.mkdirSync(`${path}/meta`, { recursive: true })
    fs.writeFileSync(`${path}/journal`, image.journal + tornTail)
    const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex')
    for (const [id, bytes] of image.blobs) {
      fs.mkdirSync(`${path}/blobs/${hex(id).slice(0, 2)}`, { recursive: true })
      fs.writeFileSync(`${path}/blobs/${hex(id).slice(0, 2)}/${hex(id)}`, bytes)
    }
    for (const [key, value] of image.meta) fs.writeFileSync(`${path}/meta/${hex(key)}.json`, JSON.stringify(value))
    fs.writeFileSync(`${path}/journal.torn-20260101T000000000Z`, 'kept earlier\n')
    return expected
  }

  it('opens read-only as it is, changing nothing', async () => {
    const path = fresh()
    const expected = await firstLayout(path)
    const before = pack.fingerprint(path)
    const ws = await Workspace.open({ store: directoryStore(path, { readOnly: true }), autoCheckpoint: false })
    expect(view(ws)).toBe(expected)
    await ws.close()
    expect(pack.fingerprint(path)).toBe(before)
  })

  it('is migrated when opened for writing: the packs hold it all, the old files are gone, what was kept aside stays', async () => {
    const path = fresh()
    const expected = await firstLayout(path)
    let ws = await open(path)
    expect(view(ws)).toBe(expected)
    expect(ws.status.warnings).toEqual([])
    ws.fs.writeFileSync('/after.txt', 'after')
    await ws.sync()
    const later = view(ws)
    await ws.close()
    expect(fs.readdirSync(path).sort()).toEqual(['format', 'journal.torn-20260101T000000000Z', 'meta', 'packs'])
    expect(JSON.parse(fs.readFileSync(`${path}/format`, 'utf8'))).toEqual({ store: 'rewindfs-directory', layout: 2, salt: expect.any(Number) })
    ws = await open(path)
    expect(view(ws)).toBe(later)
    await ws.close()
  })

  it('carries a torn tail over for the engine to drop, kept aside as before', async () => {
    const path = fresh()
    const expected = await firstLayout(path, '{"v":1,"c":1,"b":{"n":')
    const ws = await open(path)
    expect(view(ws)).toBe(expected)
    expect(ws.status.corrupt).toBeUndefined()
    expect(ws.status.loaded?.keptAside).toMatch(/^journal\.torn-/)
    expect(fs.readFileSync(`${path}/${ws.status.loaded!.keptAside}`, 'utf8')).toMatch(/\{"v":1,"c":1,"b":\{"n":$/)
    await ws.close()
  })

  it('a migration a crash cut short is made again; one cut short after its commit finishes', async () => {
    const path = fresh()
    const expected = await firstLayout(path)
    // Before the commit (no format file): a half-written pack.
    fs.mkdirSync(`${path}/packs`)
    fs.writeFileSync(`${path}/packs/00000001.pack`, 'half a segment')
    let ws = await open(path)
    expect(view(ws)).toBe(expected)
    await ws.close()
    expect(fs.existsSync(`${path}/journal`)).toBe(false)

    // After the commit: the format file is there, the old files not yet removed.
    const other = fresh()
    await firstLayout(other)
    const saved = fs.readFileSync(`${other}/journal`)
    ws = await open(other)
    await ws.close()
    fs.writeFileSync(`${other}/journal`, saved)
    fs.mkdirSync(`${other}/blobs/ff`, { recursive: true })
    fs.writeFileSync(`${other}/blobs/ff/ff`, 'stale')
    ws = await open(other)
    expect(view(ws)).toBe(expected)
    await ws.close()
    expect(fs.readdirSync(other).sort()).toEqual(['format', 'journal.torn-20260101T000000000Z', 'meta', 'packs'])
  })

  it('refuses a layout newer than it reads, changing nothing', async () => {
    const path = fresh()
    fs.mkdirSync(path)
    fs.writeFileSync(`${path}/format`, JSON.stringify({ store: 'rewindfs-directory', layout: 9 }))
    expect(() => directoryStore(path)).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_STORE_FORMAT', message: expect.stringMatching(/layout 9/) }))
    expect(fs.readdirSync(path)).toEqual(['format'])
  })

  it("a damaged or missing format file is read as the segments' checksummed headers say: reported, kept aside and written again by a writer, left as it is by a reader", async () => {
    const store = fresh()
    const ws = await open(store)
    ws.fs.writeFileSync('/kept.txt', 'kept')
    await ws.close()
    const format = fs.readFileSync(`${store}/format`)
    const { salt } = JSON.parse(format.toString('utf8')) as { salt: number }
    const damages = [`{"store":"rewindfs-directory","layout":2,"salt":${salt ^ 1}}\n`, '{"store":"rewindfs-directory","layout":1,"salt":1}', '{"store":"rewindfs-directory","layout":"2","salt":1}', '{"store":"rewindfs-directory","layout":2}', '{"store":"rewindfs-dire', '']
    for (const damaged of damages) {
      fs.writeFileSync(`${store}/format`, damaged)
      const reader = await Workspace.open({ store: directoryStore(store, { readOnly: true }), autoCheckpoint: false })
      expect(files(reader), damaged).toEqual({ '/kept.txt': 'kept' })
      expect(reader.status.warnings).toEqual([expect.stringMatching(new RegExp(`'format' file was damaged .*salt ${salt}\\): .*read-only, the file was left as it is`))])
      await reader.close()
      // rewindfs verify (read-only) counts it as damage while it is on disk.
      const checked = directoryStore(store, { readOnly: true })
      expect(await verifyStore(checked)).toMatchObject({ ok: false, problems: [expect.stringContaining("'format' file was damaged")] })
      await checked.close()
      expect(fs.readFileSync(`${store}/format`, 'utf8')).toBe(damaged)
      const writer = await open(store)
      expect(files(writer)).toEqual({ '/kept.txt': 'kept' })
      const [kept] = fs.readdirSync(store).filter((name) => name.startsWith('format.'))
      expect(kept).toMatch(/^format\.damaged-\d{8}T\d{9}Z$/)
      expect(writer.status.warnings).toEqual([expect.stringContaining(`written again from them, the damaged one kept aside as '${kept}'`)])
      await writer.close()
      expect(fs.readFileSync(`${store}/${kept}`, 'utf8')).toBe(damaged)
      expect(fs.readFileSync(`${store}/format`)).toEqual(format)
      const listing = directoryStore(store, { readOnly: true })
      expect((await listing.keptAside()).filter((name) => name.startsWith('format.'))).toEqual([kept])
      await listing.close()
      fs.rmSync(`${store}/${kept}`)
    }
    fs.rmSync(`${store}/format`)
    const writer = await open(store)
    expect(files(writer)).toEqual({ '/kept.txt': 'kept' })
    expect(writer.status.warnings).toEqual([expect.stringMatching(/'format' file was missing .*written again from them$/)])
    await writer.close()
    expect(fs.readFileSync(`${store}/format`)).toEqual(format)
  })

  it('refuses a format file no segment header agrees with where the headers disagree too (packs of two stores), changing nothing', async () => {
    const [a, b] = [fresh(), fresh()]
    for (const path of [a, b]) {
      const ws = await open(path)
      ws.fs.writeFileSync('/x.txt', path)
      await ws.close()
    }
    fs.copyFileSync(`${b}/packs/00000001.pack`, `${a}/packs/00000002.pack`)
    fs.writeFileSync(`${a}/format`, '{"store":"rewindfs-dire')
    const before = pack.fingerprint(a)
    for (const readOnly of [false, true]) expect(() => directoryStore(a, { readOnly })).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_STORE_FORMAT', message: expect.stringMatching(/does not name a directory store layout/) }))
    fs.writeFileSync(`${a}/format`, '{"store":"rewindfs-directory","layout":2,"salt":7}')
    for (const readOnly of [false, true]) expect(() => directoryStore(a, { readOnly })).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_STORE_FORMAT', message: expect.stringMatching(/names salt 7, which no pack segment's header names/) }))
    fs.writeFileSync(`${a}/format`, '{"store":"rewindfs-dire')
    expect(pack.fingerprint(a)).toBe(before)
  })
})
