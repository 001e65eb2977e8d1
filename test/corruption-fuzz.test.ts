// @vitest-environment happy-dom
/**
 * Corruption fuzz over real stores: a directory store on disk and an IndexedDB store under
 * fake-indexeddb, each holding a session of many group commits a real workspace made (writes,
 * checkpoints, undo, restore, a compaction). Each case damages a copy once — a flipped byte in the
 * journal, a blob or metadata, a cut at a random offset, a duplicated or reordered line, garbage
 * appended — and opens it. Open must never fail with an internal error, never lose a record before
 * the damage (the workspace holds exactly the state of the last group commit before it), never
 * modify what is damaged (every file hashed before and after; a torn tail is only ever kept aside
 * whole), and report the damage where it is. The torn last record cut at every byte is the Store
 * contract's check (test/store-contract.test.ts). Fixed fast-check seeds plus one random seed per
 * run (printed; replay with REWINDFS_SEED).
 */
import 'fake-indexeddb/auto'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import fc from 'fast-check'
import { promisifyRequest, setMany } from 'idb-keyval'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Database } from '../adapters/indexeddb/database.js'
import { indexedDbStore } from '../adapters/indexeddb/index.js'
import { directoryStore } from '../adapters/node-fs/index.js'
import type { Store } from '../src/engine/store.js'
import { IndexedSource } from '../src/lower/indexed.js'
import { Workspace } from '../src/index.js'
import { RECORD_HEADER_BYTES, Kind } from '../adapters/node-fs/pack-format.js'
import { readIndexHead } from '../adapters/node-fs/pack-index.js'
import * as pack from './support/pack-raw.js'
import { seeds } from './support/seed.js'

/** Cases per seed and kind; with four seeds, 300 flips and 300 cuts per store. */
const FLIPS = 75
const CUTS = 75
const LINES = 12

const encode = (text: string) => new TextEncoder().encode(text)
const utf8 = (text: string) => Buffer.byteLength(text, 'utf8')

function lower(): IndexedSource {
  const content = encode('from the lower layer\n')
  return new IndexedSource('fuzz', 'rewindfs-corruption-fuzz', [
    ['/src', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd' }],
    ['/src/main.js', { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'f', content }],
  ], async () => new Map())
}

const open = (store: Store) => Workspace.open({ lower: lower(), store, autoCheckpoint: false, compactEvery: Number.POSITIVE_INFINITY })

/** The state a reopen must show: files (EIO where content is lost), checkpoints, history. */
function view(ws: Workspace): string {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      if (ws.fs.lstatSync(path).isDirectory()) {
        files.push(`${path}/`)
        walk(path)
      } else {
        let content: string
        try {
          content = ws.fs.readFileSync(path, 'utf8') as string
        } catch (error) {
          content = `<${(error as { code?: string }).code}>`
        }
        files.push(`${path}=${content}`)
      }
    }
  }
  walk('/')
  return JSON.stringify({ files, checkpoints: ws.checkpoints().map((c) => `${c.name}${c.broken ? ':broken' : ''}`), history: ws.history().map((op) => `${op.id}${op.undone ? ':undone' : ''}`) })
}

/** The session: many group commits, a compaction half-way. Returns the state at every journal length after the compaction. */
async function session(store: Store): Promise<Map<number, string>> {
  const ws = await open(store)
  const states = new Map<number, string>()
  const journalLength = async () => (await store.readJournal()).records.length
  let step = 0
  const commit = async () => {
    await ws.sync()
    states.set(await journalLength(), view(ws))
  }
  const round = async (n: number) => {
    ws.fs.writeFileSync(`/notes-${n % 3}.md`, `# notes ${n}\n${'line\n'.repeat(n)}`)
    await commit()
    if (n % 3 === 0) ws.fs.mkdirSync(`/dir${n}/deep`, { recursive: true })
    ws.fs.writeFileSync('/src/main.js', `export const round = ${n}\n`)
    await commit()
    if (n % 4 === 1) {
      await ws.checkpoint({ name: `cp${n}` })
      await commit()
    }
    if (n % 5 === 2) {
      await ws.undo()
      await commit()
    }
    if (n % 7 === 3) {
      await ws.restore(ws.checkpoints().at(-1)!.id)
      await commit()
    }
    await ws.state.set('round', n)
    await commit()
  }
  for (; step < 8; step++) await round(step)
  await ws.compact()
  states.clear()
  states.set(await journalLength(), view(ws))
  for (; step < 20; step++) await round(step)
  await ws.close()
  return states
}

/** The state a store opens to with nothing replayed (the damage at the very first record). */
async function emptyState(): Promise<string> {
  const ws = await Workspace.open({ lower: lower(), autoCheckpoint: false })
  return view(ws)
}

/** Where a damage is: the journal record and its byte offset, and the group commit boundary before it. */
function locate(lines: readonly string[], record: number): { offset: number; proven: number } {
  let offset = 0
  for (let i = 0; i < record; i++) offset += utf8(lines[i]) + 1
  let proven = record
  while (proven > 0 && !/"t":"commit"/.test(lines[proven - 1])) proven--
  return { offset, proven }
}

type Damage =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'cut'; at: number }
  | { kind: 'duplicate'; line: number }
  | { kind: 'reorder'; line: number; other: number }
  | { kind: 'garbage'; bytes: number[]; newline: boolean }

const flips = fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), xor: fc.integer({ min: 1, max: 255 }) })
const cuts = fc.record({ kind: fc.constant('cut' as const), at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }) })
const lineDamage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('duplicate' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('reorder' as const), line: fc.nat(), other: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant('garbage' as const), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 40 }), newline: fc.boolean() }),
)

/** What a case expects once the damage is placed in a store's content. */
interface Expectation {
  /** A journal record that cannot be read: open is read-only at the state before it. */
  journal?: { record: number; offset: number; proven: number }
  /** The journal was cut inside a record (a tear): dropped, the journal kept aside whole. */
  torn?: { proven: number }
  /** A blob whose bytes changed. */
  blob?: string
  /** Metadata whose bytes changed. */
  meta?: string
  /** Nothing damaged, the journal cut at the group commit boundary `proven` (-1: a state the session did not record). */
  clean?: { proven: number }
  /** Damage the store reports without knowing what it held (a blob or the journal cannot be read, listed). */
  reported?: boolean
  /** The store refuses to open (its format file does not read), changing nothing. */
  refused?: boolean
  /**
   * The directory store's format file was damaged: read as the pack segments' checksummed headers
   * say (the session whole), the damaged file kept aside and written again; refused, changing
   * nothing, only where it now names a newer layout.
   */
  format?: boolean
}

/** Checks one damaged store against what it must show; returns the warnings its open gave (none when it refused). */
async function check(store: () => Promise<Store>, expectation: Expectation, states: Map<number, string>, empty: string, final: string, fingerprint: () => Promise<string>): Promise<readonly string[] | undefined> {
  const before = await fingerprint()
  let ws: Workspace
  let made: Store | undefined
  try {
    made = await store()
    ws = await open(made)
  } catch (error) {
    // A store the workspace refused is closed here (its lock released).
    await made?.close?.()
    if (expectation.refused || expectation.format) {
      expect((error as { code?: string }).code, String(error)).toBe('ERR_REWINDFS_STORE_FORMAT')
      if (expectation.format) expect(String(error)).toMatch(/has layout [3-9]/)
      expect(await fingerprint()).toBe(before)
      return undefined
    }
    // Only a damaged record of the lower source's name may refuse the open, with a clear code.
    expect(expectation.meta, String(error)).toBe('lower')
    expect((error as { code?: string }).code).toBe('ELOWERMISMATCH')
    expect(await fingerprint()).toBe(before)
    return undefined
  }
  const warnings = ws.status.warnings
  const stateAt = (proven: number) => (proven === 0 ? empty : proven < 0 ? undefined : states.get(proven))
  try {
    if (expectation.journal) {
      const { record, offset, proven } = expectation.journal
      expect(ws.status.corrupt).toMatchObject({ part: 'journal', record, offset })
      expect(ws.frozen).toMatch(/damaged/)
      const expected = stateAt(proven)
      if (expected !== undefined) expect(view(ws)).toBe(expected)
      if (record % 4 === 0) {
        // Salvage works out what it would keep without changing anything (a quarter of the cases: it replays twice).
        const dry = await ws.repair({ salvage: true, dryRun: true })
        expect(dry.repaired).toBe(false)
        if (expected !== undefined) expect(view(ws)).toBe(expected)
      }
    } else if (expectation.torn) {
      expect(ws.status.corrupt).toBeUndefined()
      expect(ws.frozen).toBeUndefined()
      const expected = stateAt(expectation.torn.proven)
      if (expected !== undefined) expect(view(ws)).toBe(expected)
    } else if (expectation.blob) {
      const report = await ws.verify()
      expect(report.corrupt).toEqual([expectation.blob])
      expect(ws.status.corrupt).toBeUndefined()
    } else if (expectation.reported) {
      const report = await ws.verify()
      expect(ws.status.corrupt !== undefined || ws.status.warnings.length > 0 || report.corrupt.length > 0, 'the damage is reported').toBe(true)
    } else if (expectation.meta) {
      expect(ws.status.corrupt).toMatchObject({ part: 'meta', key: expectation.meta })
      expect(view(ws)).toBe(final)
    } else if (expectation.format) {
      expect(ws.status.corrupt).toBeUndefined()
      expect(view(ws)).toBe(final)
    } else {
      expect(ws.status.corrupt).toBeUndefined()
      const expected = expectation.clean ? stateAt(expectation.clean.proven) : final
      if (expected !== undefined) expect(view(ws)).toBe(expected)
    }
    await ws.verify()
  } finally {
    await ws.close()
  }
  // A torn tail is the one thing open rewrites (the caller checks the journal was kept aside whole first).
  expect(await fingerprint()).toBe(before)
  return warnings
}

// Thousands of stores opened: on tmpfs where there is one, so fsync costs nothing (the logic is what
// is fuzzed here; test/adapters/node-fs-crash.test.ts kills processes on a real disk).
const scratch = fs.mkdtempSync(`${fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()}/rewindfs-corruption-fuzz-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

describe('corruption fuzz: directoryStore', () => {
  const base = `${scratch}/base`
  let states: Map<number, string>
  let final: string
  let empty: string
  /** One copy of the base store that every case damages, and the bytes to put back after it. */
  const work = `${scratch}/work`
  const original = new Map<string, Buffer>()
  /** The pack as the base store holds it, read apart from the store (test/support/pack-raw.ts). */
  let records: pack.RawRecord[]
  let lastReset: number
  let journal: Buffer
  /** Offsets of the blob records the index holds (not forgotten). */
  let liveBlobs: Set<number>
  /** Where each journal record of the live journal (the last reset and after) starts in the journal's text. */
  const textStart = new Map<number, number>()
  beforeAll(async () => {
    states = await session(directoryStore(base))
    final = [...states.entries()].sort((a, b) => b[0] - a[0])[0][1]
    empty = await emptyState()
    fs.cpSync(base, work, { recursive: true })
    for (const [name, file] of files(work)) original.set(name, fs.readFileSync(file))
    records = pack.records(work)
    lastReset = records.findLastIndex((record) => record.kind === Kind.Reset)
    journal = Buffer.from(pack.journalText(work), 'utf8')
    liveBlobs = new Set([...pack.blobRecords(work).values()].map((record) => record.offset))
    let text = 0
    records.forEach((record, i) => {
      if (i < lastReset || (record.kind !== Kind.Append && record.kind !== Kind.Reset)) return
      textStart.set(i, text)
      text += record.payload.length
    })
    expect(lastReset).toBeGreaterThan(0)
    expect(pack.segmentFiles(work)).toHaveLength(1)
  }, 120_000)

  /** Where byte `at` of file `name` lies among the bytes of every file, as damage() picks them. */
  const fractionOf = (name: string, at: number) => {
    const all = files(work).map(([file]) => [file, original.get(file)!.length] as const)
    const before = all.slice(0, all.findIndex(([file]) => file === name)).reduce((sum, [, size]) => sum + size, 0)
    return (before + at + 0.5) / all.reduce((sum, [, size]) => sum + size, 0)
  }

  function restore(): void {
    for (const [name, file] of files(work)) if (!original.has(name)) fs.rmSync(file)
    for (const [name, bytes] of original) {
      const file = `${work}/${name}`
      if (!fs.existsSync(file) || !fs.readFileSync(file).equals(bytes)) fs.writeFileSync(file, bytes)
    }
  }

  /** Every file of the store (the lock aside) and its bytes. */
  const files = (root: string) => {
    const out: [string, string][] = []
    const walk = (dir: string) => {
      for (const name of fs.readdirSync(dir).sort()) {
        const file = `${dir}/${name}`
        if (fs.statSync(file).isDirectory()) walk(file)
        else if (name !== 'lock') out.push([file.slice(root.length + 1), file])
      }
    }
    walk(root)
    return out
  }
  /** A hash of the store's files; without the packs and kept items where open may cut a torn tail and append. */
  const fingerprint = (root: string, packsToo: boolean, formatToo = true) => async () => {
    const hash = createHash('sha1')
    for (const [name, file] of files(root)) {
      if ((packsToo || !/^(packs\/|journal\.|pack\.)/.test(name)) && (formatToo || !/^format/.test(name))) hash.update(`${name}\0`).update(fs.readFileSync(file))
    }
    return hash.digest('hex')
  }

  const lines = () => journal.toString('utf8').split('\n').slice(0, -1)
  /** The journal line holding byte `at` of the journal's text. */
  const lineAt = (at: number) => {
    const all = lines()
    let line = 0
    for (let offset = 0; offset + utf8(all[line]) + 1 <= at; line++) offset += utf8(all[line]) + 1
    return line
  }
  /** Journal lines in the text before `at`. */
  const linesBefore = (at: number) => journal.subarray(0, at).toString('utf8').split('\n').length - 1

  /** What a byte of the pack changed means: journal text, a blob, or bytes the open reports without knowing what they held. */
  function packFlip(at: number): Expectation {
    const index = records.findIndex((record) => record.offset <= at && at < record.offset + record.bytes.length)
    if (index < 0) return { reported: true } // the segment header
    const record = records[index]
    const payload = record.payloadAt
    const live = index >= lastReset
    if (at === record.offset + record.bytes.length - 1) return {} // the end byte: nothing reads it
    const forgotten = record.kind === Kind.Blob && !liveBlobs.has(record.offset)
    if (forgotten) return {} // nothing reads it, damage where it was included
    if (at < payload && (record.kind !== Kind.Blob || at < record.offset + RECORD_HEADER_BYTES)) {
      // A header that fails its checksum: the bytes up to the next record cannot be read. Where the
      // journal runs (but at its reset), that is damage in the journal, right there.
      if (!live || index === lastReset) return { reported: true }
      const text = [...textStart.entries()].filter(([i]) => i < index).reduce((end, [i, start]) => Math.max(end, start + records[i].payload.length), 0)
      const line = linesBefore(text)
      return { journal: { record: line, ...locate(lines(), line) } }
    }
    // A flipped id byte lists the blob under another id (which fails its checksum when read): reported, the real id missing.
    if (record.kind === Kind.Blob && at < payload) return { reported: true }
    if (record.kind === Kind.Blob) return { blob: record.id }
    if (record.kind === Kind.Forget) return { reported: true }
    if (!live) return {} // journal text before the last reset: nothing reads it
    const line = lineAt(textStart.get(index)! + at - payload)
    return { journal: { record: line, ...locate(lines(), line) } }
  }

  /** What a pack cut at `at` leaves: the journal up to there (a torn append's text included), torn or at a record's end. */
  function packCut(at: number): Expectation {
    if (at < records[0].offset) return { reported: true } // inside the segment header
    // A record missing only its end byte is whole (its checksum says so).
    const whole = (record: pack.RawRecord) => record.offset + record.bytes.length - 1 <= at
    const torn = records.find((record) => record.offset < at && !whole(record))
    let text: Buffer = Buffer.alloc(0)
    for (const record of records) {
      if (!whole(record)) {
        if (record === torn && record.kind === Kind.Append && at > record.payloadAt) text = Buffer.concat([text, record.payload.subarray(0, at - record.payloadAt)])
        break
      }
      if (record.kind === Kind.Reset) text = record.payload
      else if (record.kind === Kind.Append) text = Buffer.concat([text, record.payload])
    }
    const kept = text.toString('utf8').split('\n')
    const partial = kept.pop()!
    // Only the line end of the last record missing: the engine takes it as written.
    const lines = partial !== '' && /"t":"commit"/.test(partial) && decodeWhole(partial) ? [...kept, partial] : kept
    let proven = lines.length
    while (proven > 0 && !/"t":"commit"/.test(lines[proven - 1])) proven--
    // Before the reset the journal is the one before the compaction: its states were not recorded.
    const recorded = whole(records[lastReset])
    const state = recorded ? proven : -1
    return torn === undefined && proven === lines.length ? { clean: { proven: state } } : { torn: { proven: state } }
  }
  const decodeWhole = (line: string) => /^\{"v":1,"c":\d+,"b":.*\}$/.test(line)

  /** How far the base store's index file of segment file `name` says its records reach (0: none). */
  const indexCovers = (name: string): number => {
    const index = original.get(name.replace(/\.pack$/, '.idx'))
    return (index && readIndexHead(index)?.covered) || 0
  }

  /** Copies the base store, damages it, and says what open must find. */
  function damage(damage: Damage): { root: string; expectation: Expectation } {
    const root = work
    if (damage.kind === 'flip' || damage.kind === 'cut') {
      // A byte of any file the store holds: the pack, metadata, the format file.
      const all = files(root)
      const sizes = all.map(([, file]) => fs.statSync(file).size)
      let at = Math.floor(damage.at * sizes.reduce((a, b) => a + b, 0))
      let index = 0
      while (at >= sizes[index]) at -= sizes[index++]
      const [name, file] = all[index]
      const bytes = fs.readFileSync(file)
      if (damage.kind === 'flip') {
        bytes[at] ^= damage.xor
        fs.writeFileSync(file, bytes)
      } else fs.writeFileSync(file, bytes.subarray(0, at))
      if (name === 'format') return { root, expectation: { format: true } }
      // An index file that does not check (CRC-32) is ignored: its segment is read instead, nothing lost.
      if (name.endsWith('.idx')) return { root, expectation: {} }
      if (name.startsWith('meta/')) return { root, expectation: { meta: Buffer.from(name.slice(5, -'.json'.length), 'hex').toString('utf8') } }
      if (damage.kind === 'flip') return { root, expectation: packFlip(at) }
      // Below what the base store's index file (written at a clean close) lists, anywhere (inside its
      // first record too): no crash cuts there, so acknowledged commits were lost, reported; else a torn tail.
      const listed = indexCovers(name)
      return { root, expectation: at < listed ? { reported: true } : packCut(at) }
    }
    const all = lines()
    if (damage.kind === 'garbage') {
      const bytes = Buffer.from(damage.bytes.map((b) => (b === 0x0a && !damage.newline ? 0x20 : b)))
      const text = bytes.toString('utf8')
      const complete = damage.newline || text.includes('\n')
      const pieces = (journal.toString('utf8') + text + (damage.newline ? '\n' : '')).split('\n')
      const last = pieces.pop()!
      pack.setJournal(root, { records: pieces, ...(last !== '' ? { torn: last } : {}) })
      return { root, expectation: complete ? { journal: { record: all.length, ...locate(all, all.length) } } : { torn: { proven: all.length } } }
    }
    const line = damage.line % (all.length - 1)
    const damaged =
      damage.kind === 'duplicate'
        ? [...all.slice(0, line + 1), all[line], ...all.slice(line + 1)]
        : all.map((l, i) => (i === line ? all[Math.min(line + damage.other, all.length - 1)] : i === Math.min(line + damage.other, all.length - 1) ? all[line] : l))
    const record = damage.kind === 'duplicate' ? line + 1 : line
    pack.setJournal(root, { records: damaged })
    if (damage.kind === 'reorder' && Math.min(line + damage.other, all.length - 1) === line) return { root, expectation: {} }
    return { root, expectation: { journal: { record, ...locate(damaged, record) } } }
  }

  /** Damaged format files read from the segments' headers (and kept aside), of the cases run. */
  let formatsMended = 0

  /** One damaged store, opened and checked against what it must show, then put back. */
  const one = async (what: Damage) => {
    const { root, expectation } = damage(what)
    try {
      // (The raw reader takes the records' salt from the format file: not read where that is what was damaged.)
      const damaged = expectation.format ? undefined : Buffer.from(pack.journalText(root), 'utf8')
      const tornTail = expectation.format ? undefined : pack.records(root).at(-1)
      const formatBefore = fs.existsSync(`${root}/format`) ? fs.readFileSync(`${root}/format`) : undefined
      const warnings = await check(async () => directoryStore(root), expectation, states, empty, final, fingerprint(root, !expectation.torn && !expectation.clean, !expectation.format))
      if (expectation.format) {
        // Mended: the damaged file kept aside as it was and the file written again as it was made;
        // or untouched (the damage left it naming the same salt, or a newer layout: refused).
        const keptFormat = fs.readdirSync(root).filter((name) => name.startsWith('format.'))
        const told = (warnings ?? []).filter((warning) => warning.includes("'format' file was damaged"))
        if (keptFormat.length > 0) {
          formatsMended++
          expect(keptFormat).toHaveLength(1)
          expect(told).toEqual([expect.stringContaining(keptFormat[0])])
          expect(fs.readFileSync(`${root}/${keptFormat[0]}`).equals(formatBefore!)).toBe(true)
          expect(fs.readFileSync(`${root}/format`).equals(original.get('format')!)).toBe(true)
        } else {
          expect(told).toEqual([])
          expect(fs.readFileSync(`${root}/format`).equals(formatBefore!)).toBe(true)
        }
      }
      const kept = fs.readdirSync(root).filter((name) => /^(journal|pack)\.torn-/.test(name))
      if (expectation.torn || expectation.clean) {
        const proven = expectation.torn?.proven ?? expectation.clean!.proven
        if (kept.some((name) => name.startsWith('journal.'))) {
          // Journal text was torn: the journal as it was is kept aside whole, then only whole group commits stay.
          // (Zeros a torn append's text ends with cannot be told from the zeros a segment is preallocated with.)
          expect(kept).toHaveLength(1)
          let written = damaged!.length
          while (tornTail?.torn && written > 0 && damaged![written - 1] === 0) written--
          expect(fs.readFileSync(`${root}/${kept[0]}`).equals(damaged!.subarray(0, written))).toBe(true)
        } else if (kept.length > 0) {
          // Another record was torn: its bytes are kept as they were (zeros it ended with aside), once something is appended after them.
          expect(kept).toHaveLength(1)
          expect(tornTail?.torn).toBe(true)
          let written = tornTail!.bytes.length
          while (written > 0 && tornTail!.bytes[written - 1] === 0) written--
          expect(fs.readFileSync(`${root}/${kept[0]}`).equals(tornTail!.bytes.subarray(0, written))).toBe(true)
        }
        // Open may have appended since (first sightings of lower files); what was proven is the start.
        if (proven >= 0) {
          const text = lines().slice(0, proven).map((line) => line + '\n').join('')
          expect(pack.journalText(root).slice(0, text.length)).toBe(text)
        }
      } else expect(kept).toEqual([])
    } finally {
      restore()
    }
  }

  const run = async (arbitrary: fc.Arbitrary<Damage>, runs: number, seed: number) => {
    await fc.assert(fc.asyncProperty(arbitrary, one), { numRuns: runs, seed })
  }

  it("damages every byte of the format file: read as the segments' headers say, kept aside and written again (refused only as a newer layout)", async () => {
    const size = original.get('format')!.length
    formatsMended = 0
    for (let at = 0; at < size; at++) {
      for (const xor of [0x01, 0x04, 0x80]) await one({ kind: 'flip', at: fractionOf('format', at), xor })
      await one({ kind: 'cut', at: fractionOf('format', at) })
    }
    // Every cut but the one that drops only the line end, and most flips, leave a file that does not say the salt.
    expect(formatsMended).toBeGreaterThan(2 * size)
  }, 120_000)

  it('flips every byte of the last group commit and its journal record: damage, never a silently dropped acknowledged commit', async () => {
    const [{ file }] = pack.segmentFiles(work)
    const name = file.slice(work.length + 1)
    const last = records.at(-1)!
    expect(last.kind).toBe(Kind.Append)
    // Every byte but the end byte (it only marks the record written whole), and the commit marker's line end more ways.
    const lineEnd = last.payloadAt + last.payload.length - 1
    const cases = [...Array.from({ length: last.bytes.length - 1 }, (_, i) => [last.offset + i, 0x01]), ...[0x02, 0x20, 0x0a ^ 0x7d, 0x0a ^ 0x80, 0xff].map((xor) => [lineEnd, xor])]
    for (const [at, xor] of cases) {
      const { root, expectation } = damage({ kind: 'flip', at: fractionOf(name, at), xor })
      // Its header or its text: journal damage at or after the group's first record.
      expect(expectation.journal?.record, `byte ${at}`).toBeGreaterThanOrEqual(linesBefore(textStart.get(records.length - 1)!))
      try {
        await check(async () => directoryStore(root), expectation, states, empty, final, fingerprint(root, true))
      } finally {
        restore()
      }
    }
  }, 120_000)

  for (const seed of seeds()) {
    it(`flips bytes of the pack, metadata and format file (seed ${seed})`, () => run(flips, FLIPS, seed), 120_000)
    it(`cuts the store's files at random offsets (seed ${seed})`, () => run(cuts, CUTS, seed), 120_000)
    it(`duplicates and reorders lines, appends garbage (seed ${seed})`, () => run(lineDamage, LINES, seed), 120_000)
  }
})

describe('corruption fuzz: indexedDbStore', () => {
  const base = `rewindfs-fuzz-base-${Date.now()}`
  let states: Map<number, string>
  let final: string
  let empty: string
  let entries: [IDBValidKey, unknown][]
  let serial = 0
  beforeAll(async () => {
    const store = indexedDbStore(base)
    states = await session(store)
    final = [...states.entries()].sort((a, b) => b[0] - a[0])[0][1]
    empty = await emptyState()
    const database = new Database(base)
    const [keys, values] = await database.use('readonly', (objects) => Promise.all([promisifyRequest(objects.getAllKeys()), promisifyRequest(objects.getAll())]))
    database.close()
    entries = keys.map((key, i) => [key, values[i]])
  }, 120_000)

  const fingerprintOf = (name: string) => async () => {
    const database = new Database(name)
    const [keys, values] = await database.use('readonly', (objects) => Promise.all([promisifyRequest(objects.getAllKeys()), promisifyRequest(objects.getAll())]))
    database.close()
    return JSON.stringify(keys.map((key, i) => [key, values[i]]), (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value))
  }

  /**
   * IndexedDB holds values, not bytes: a flip changes one character of a journal record, one byte of
   * a blob, or one character of a metadata value's JSON (what does not parse any more is stored as a
   * value that is not JSON). An append never tears, so a record cut short is damage too.
   */
  async function damage(what: Damage): Promise<{ name: string; expectation: Expectation; lines: string[] }> {
    const name = `rewindfs-fuzz-case-${serial++}-${Date.now()}`
    const copy = entries.map(([key, value]) => [key, value instanceof Uint8Array ? new Uint8Array(value) : structuredClone(value)] as [IDBValidKey, unknown])
    const journal = copy.filter(([key]) => String(key).startsWith('j:'))
    const lines = journal.map(([, value]) => value as string)
    let expectation: Expectation = {}
    let writtenLines = lines
    const charFlip = (text: string, at: number, xor: number) => {
      const index = Math.floor(at * text.length)
      const code = (text.charCodeAt(index) ^ xor) || 1
      return text.slice(0, index) + String.fromCharCode(code) + text.slice(index + 1)
    }
    if (what.kind === 'flip' || what.kind === 'cut') {
      const sizes = copy.map(([, value]) => (typeof value === 'string' ? value.length : value instanceof Uint8Array ? value.byteLength : JSON.stringify(value).length))
      let at = Math.floor(what.at * sizes.reduce((a, b) => a + b, 0))
      let index = 0
      while (at >= sizes[index]) at -= sizes[index++]
      const [key, value] = copy[index]
      const kind = String(key).slice(0, 2)
      const within = at / sizes[index]
      if (kind === 'j:') {
        const record = journal.findIndex(([k]) => k === key)
        copy[index][1] = what.kind === 'flip' ? charFlip(value as string, within, what.xor) : (value as string).slice(0, Math.floor(within * (value as string).length))
        writtenLines = lines.map((line, i) => (i === record ? (copy[index][1] as string) : line))
        expectation = { journal: { record, ...locate(lines, record) } }
      } else if (kind === 'b:') {
        const bytes = value as Uint8Array
        copy[index][1] = what.kind === 'flip' ? bytes.map((b, i) => (i === at ? b ^ what.xor : b)) : bytes.subarray(0, at).slice()
        expectation = { blob: String(key).slice(2) }
      } else {
        const text = JSON.stringify(value)
        const damaged = what.kind === 'flip' ? charFlip(text, within, what.xor) : text.slice(0, at)
        let parsed: unknown
        try {
          parsed = JSON.parse(damaged)
        } catch {
          parsed = new Date(0)
        }
        copy[index][1] = parsed
        expectation = { meta: String(key).slice(2) }
        if (damaged === text) expectation = {}
      }
    } else {
      const rest = copy.filter(([key]) => !String(key).startsWith('j:'))
      let damaged: string[]
      let record: number
      if (what.kind === 'garbage') {
        damaged = [...lines, Buffer.from(what.bytes).toString('latin1')]
        record = lines.length
      } else {
        const line = what.line % (lines.length - 1)
        const other = what.kind === 'reorder' ? Math.min(line + what.other, lines.length - 1) : line
        damaged = what.kind === 'duplicate' ? [...lines.slice(0, line + 1), lines[line], ...lines.slice(line + 1)] : lines.map((l, i) => (i === line ? lines[other] : i === other ? lines[line] : l))
        record = what.kind === 'duplicate' ? line + 1 : line
      }
      copy.splice(0, copy.length, ...rest, ...damaged.map((line, i) => [`j:${String(i + 1).padStart(16, '0')}`, line] as [IDBValidKey, unknown]))
      writtenLines = damaged
      expectation = damaged.every((line, i) => line === lines[i]) && damaged.length === lines.length ? {} : { journal: { record, ...locate(damaged, record) } }
    }
    const database = new Database(name)
    await setMany(copy, database.use)
    database.close()
    return { name, expectation, lines: writtenLines }
  }

  const run = async (arbitrary: fc.Arbitrary<Damage>, runs: number, seed: number) => {
    await fc.assert(
      fc.asyncProperty(arbitrary, async (what) => {
        const { name, expectation } = await damage(what)
        try {
          await check(async () => indexedDbStore(name), expectation, states, empty, final, fingerprintOf(name))
        } finally {
          await new Promise((resolve) => {
            const request = indexedDB.deleteDatabase(name)
            request.onsuccess = request.onerror = request.onblocked = resolve
          })
        }
      }),
      { numRuns: runs, seed },
    )
  }

  for (const seed of seeds()) {
    it(`flips a character, byte or value (seed ${seed})`, () => run(flips, FLIPS, seed), 120_000)
    it(`cuts a record, blob or value short (seed ${seed})`, () => run(cuts, CUTS, seed), 120_000)
    it(`duplicates and reorders records, appends garbage (seed ${seed})`, () => run(lineDamage, LINES, seed), 120_000)
  }
})
