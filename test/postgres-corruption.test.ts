/**
 * Damage below the PostgreSQL stores, as a faulty disk, a bad restore or an attacker with SQL
 * access would leave it: bytes flipped in journal records, inline blobs and blob chunks, chunks
 * missing, rows of the journal's end gone, a PGlite data directory's files flipped or cut short.
 * Every case must be reported (open's status, verify, EIO on the read) and never returned as
 * content; nothing is silently cut away. PGlite in this process (no server needed).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pgliteStore } from '../adapters/postgres/index.js'
import { CHUNK } from '../adapters/postgres/schema.js'
import { Workspace } from '../src/index.js'

type Db = { query<T>(text: string, params?: unknown[]): Promise<{ rows: T[] }>; close(): Promise<void> }
let db: Db
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-postgres-corruption-'))
const KEEP = process.env.KEEP_TMP

beforeAll(async () => {
  const { PGlite } = await import('@electric-sql/pglite')
  db = (await PGlite.create()) as unknown as Db
}, 60_000)
afterAll(async () => {
  await db?.close()
  if (!KEEP) fs.rmSync(tmp, { recursive: true, force: true })
})

const big = (seed: number) => {
  const bytes = new Uint8Array(2 * CHUNK + 777)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + seed) & 0xff
  return bytes
}

/** A session with a small file, a chunked one and a few commits; closed. */
async function session(name: string): Promise<void> {
  const ws = await Workspace.open({ store: await pgliteStore({ db: db as never, session: name }), autoCheckpoint: false })
  ws.fs.writeFileSync('/small.txt', 'small and acknowledged')
  ws.fs.writeFileSync('/big.bin', big(1))
  await ws.checkpoint({ name: 'one' })
  ws.fs.writeFileSync('/late.txt', 'the last commit')
  await ws.sync()
  await ws.close()
}

const open = async (name: string) => Workspace.open({ store: await pgliteStore({ db: db as never, session: name }), autoCheckpoint: false })

/** Reads a file: its content, or the error's code. */
function read(ws: Workspace, file: string): string {
  try {
    const bytes = ws.fs.readFileSync(file)
    return file === '/big.bin' ? (Buffer.compare(bytes, big(1)) === 0 ? 'big(1)' : 'OTHER BYTES') : bytes.toString()
  } catch (error) {
    return (error as { code: string }).code
  }
}

describe('damage in the rows of a PGlite store is reported, never read as content', () => {
  it("a flipped character in a journal record: open reports the journal's damage at that record", async () => {
    await session('journal-flip')
    const [row] = (await db.query<{ seq: string; record: string }>(`SELECT seq, record FROM rewindfs.journal WHERE session = 'journal-flip' AND record LIKE '%late.txt%' ORDER BY seq LIMIT 1`)).rows
    const flipped = row.record.replace('late.txt', 'lame.txt')
    await db.query(`UPDATE rewindfs.journal SET record = $1 WHERE session = 'journal-flip' AND seq = $2`, [flipped, row.seq])
    const ws = await open('journal-flip')
    expect(ws.status.corrupt).toMatchObject({ part: 'journal' })
    expect(ws.fs.existsSync('/lame.txt')).toBe(false)
    expect(read(ws, '/small.txt')).toBe('small and acknowledged')
    await ws.close()
  })

  it("the journal's last commit deleted (rows gone, the session row still counts them): reported, not a silent rewind", async () => {
    await session('journal-cut')
    const [{ max }] = (await db.query<{ max: string }>(`SELECT max(seq) AS max FROM rewindfs.journal WHERE session = 'journal-cut'`)).rows
    // The last group commit: the write of /late.txt and its commit marker.
    await db.query(`DELETE FROM rewindfs.journal WHERE session = 'journal-cut' AND seq >= $1`, [Number(max) - 1])
    const ws = await open('journal-cut')
    const [{ left }] = (await db.query<{ left: number }>(`SELECT count(*)::int AS left FROM rewindfs.journal WHERE session = 'journal-cut'`)).rows
    // Damage where the missing records begin; the state before them, as damage shows it.
    expect(ws.status.corrupt).toMatchObject({ part: 'journal', record: left })
    expect(ws.fs.existsSync('/late.txt')).toBe(false)
    expect(read(ws, '/small.txt')).toBe('small and acknowledged')
    // Repair keeps the journal as it was aside, then goes on from the state it proves.
    await ws.repair()
    await ws.close()
    const repaired = await open('journal-cut')
    expect(repaired.status.corrupt).toBeUndefined()
    expect(read(repaired, '/small.txt')).toBe('small and acknowledged')
    repaired.fs.writeFileSync('/again.txt', 'after the repair')
    await repaired.sync()
    await repaired.close()
    const reopened = await open('journal-cut')
    expect(read(reopened, '/again.txt')).toBe('after the repair')
    const kept = (await db.query<{ name: string; n: number }>(`SELECT name, cardinality(records) AS n FROM rewindfs.kept WHERE session = 'journal-cut' AND records IS NOT NULL`)).rows
    expect(kept).toEqual([{ name: expect.stringMatching(/^journal/), n: left }])
    await reopened.close()
  })

  it('a flipped byte in an inline blob: the file reads EIO and verify names it', async () => {
    await session('blob-flip')
    await db.query(
      `UPDATE rewindfs.blobs SET bytes = set_byte(bytes, 0, get_byte(bytes, 0) # 1)
        WHERE id IN (SELECT blob FROM rewindfs.blob_refs WHERE session = 'blob-flip') AND chunks = 0 AND bytes = convert_to('small and acknowledged', 'UTF8')`,
    )
    const ws = await open('blob-flip')
    expect(read(ws, '/small.txt')).toBe('EIO')
    const report = await ws.verify()
    expect(report.corrupt.length).toBe(1)
    expect(report.damagedPaths).toEqual(['/small.txt'])
    expect(read(ws, '/big.bin')).toBe('big(1)')
    await ws.close()
  })

  it('a flipped byte in a chunk, a chunk missing, a chunk too many, a size changed: the big file reads EIO, never other bytes', async () => {
    const damages = [
      `UPDATE rewindfs.blob_chunks SET bytes = set_byte(bytes, 5, get_byte(bytes, 5) # 128) WHERE blob = $1 AND n = 1`,
      `DELETE FROM rewindfs.blob_chunks WHERE blob = $1 AND n = 1`,
      `DELETE FROM rewindfs.blob_chunks WHERE blob = $1 AND n = 2`,
      `INSERT INTO rewindfs.blob_chunks (blob, n, bytes) VALUES ($1, 3, '\\x00')`,
      `UPDATE rewindfs.blobs SET size = size - 1 WHERE id = $1`,
      `UPDATE rewindfs.blobs SET chunks = chunks - 1 WHERE id = $1`,
    ]
    for (const [i, damage] of damages.entries()) {
      const name = `chunk-${i}`
      await session(name)
      const [{ id }] = (await db.query<{ id: string }>(`SELECT b.id FROM rewindfs.blobs b JOIN rewindfs.blob_refs r ON r.blob = b.id WHERE r.session = $1 AND b.chunks > 0`, [name])).rows
      await db.query(damage, [id])
      const ws = await open(name).catch((error: unknown) => error)
      if (!(ws instanceof Workspace)) {
        expect(ws, damage).toMatchObject({ code: 'EIO' })
        continue
      }
      expect(read(ws, '/big.bin'), damage).toBe('EIO')
      expect((await ws.verify()).damagedPaths, damage).toEqual(['/big.bin'])
      expect(read(ws, '/small.txt')).toBe('small and acknowledged')
      await ws.close()
      // Shared by content: the next session's identical blob must not be this damaged one.
      await db.query(`DELETE FROM rewindfs.blob_chunks WHERE blob = $1`, [id])
      await db.query(`DELETE FROM rewindfs.blob_refs WHERE blob = $1`, [id])
      await db.query(`DELETE FROM rewindfs.blobs WHERE id = $1`, [id])
    }
  })
})

describe("damage to a PGlite data directory's files is reported, never read as content", () => {
  const made = path.join(tmp, 'made')
  const files: Record<string, string> = {}

  beforeAll(async () => {
    const store = await pgliteStore({ dataDir: made, session: 'disk' })
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/small.txt', 'small and acknowledged')
    ws.fs.writeFileSync('/big.bin', big(1))
    await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/late.txt', 'the last commit')
    await ws.sync()
    await ws.close()
    // Where each table's and index's bytes are, asked of a PGlite on a copy (the store's own is closed).
    const probe = path.join(tmp, 'probe')
    fs.cpSync(made, probe, { recursive: true })
    const { PGlite } = await import('@electric-sql/pglite')
    const pg = (await PGlite.create(probe)) as unknown as Db
    for (const relation of ['journal', 'journal_pkey', 'sessions', 'blobs', 'blob_chunks', 'blob_refs']) {
      const [{ file }] = (await pg.query<{ file: string }>(`SELECT pg_relation_filepath($1) AS file`, [`rewindfs.${relation}`])).rows
      files[relation] = file
    }
    await pg.close()
  }, 120_000)

  /** Damages one copy of the directory, opens it, and checks it reported the damage or reads right. */
  async function damaged(label: string, relation: string, damage: (file: string) => void): Promise<string> {
    const dataDir = path.join(tmp, label)
    fs.cpSync(made, dataDir, { recursive: true })
    damage(path.join(dataDir, files[relation]))
    let ws: Workspace
    try {
      ws = await Workspace.open({ store: await pgliteStore({ dataDir, session: 'disk' }), autoCheckpoint: false })
    } catch (error) {
      expect(typeof (error as { code?: unknown }).code, `${label}: ${(error as Error).message}`).toBe('string')
      return `refused ${(error as { code: string }).code}`
    }
    try {
      const reads = ['/small.txt', '/big.bin', '/late.txt'].map((file) => read(ws, file))
      // Damage at open (read-only at the state it proves), a store it cannot read (degraded: every
      // sync rejects, nothing is acknowledged), or blobs verify finds damaged.
      const reported = ws.status.corrupt !== undefined || ws.status.degraded !== undefined || (await ws.verify()).corrupt.length > 0
      // Content is right, or EIO, or (damage reported: the state before it) not there; never other bytes.
      expect(reads[0], label).toMatch(/^(small and acknowledged|EIO|ENOENT)$/)
      expect(reads[1], label).toMatch(/^(big\(1\)|EIO|ENOENT)$/)
      expect(reads[2], label).toMatch(/^(the last commit|EIO|ENOENT)$/)
      if (!reported) expect(reads, label).toEqual(['small and acknowledged', 'big(1)', 'the last commit'])
      return reported ? `reported (${ws.status.corrupt?.reason ?? ws.status.degraded ?? 'verify'}) ${reads.join(' ')}` : 'intact'
    } finally {
      await ws.close()
    }
  }

  const flip = (at: (size: number) => number) => (file: string) => {
    const bytes = fs.readFileSync(file)
    const i = at(bytes.length)
    bytes[i] ^= 0x20
    fs.writeFileSync(file, bytes)
  }
  const cut = (to: (size: number) => number) => (file: string) => fs.truncateSync(file, to(fs.statSync(file).size))

  it.each([
    ['journal', 'flip', flip((size) => size - 300)],
    ['journal', 'emptied', cut(() => 0)],
    ['journal', 'cut in a page', cut((size) => size - 4000)],
    ['journal_pkey', 'flip', flip((size) => size - 200)],
    ['journal_pkey', 'emptied', cut(() => 0)],
    ['sessions', 'emptied', cut(() => 0)],
    ['blobs', 'flip', flip((size) => size - 100)],
    ['blob_chunks', 'flip', flip((size) => Math.floor(size / 2))],
    ['blob_chunks', 'emptied', cut(() => 0)],
  ])('%s %s', async (relation, how, damage) => {
    const outcome = await damaged(`${relation}-${how.replaceAll(' ', '-')}`, relation, damage)
    console.log(`[rewindfs] ${relation} ${how}: ${outcome}`)
  }, 60_000)
})
