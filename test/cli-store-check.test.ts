/**
 * `rewindfs verify` and `rewindfs repair` as a user's shell runs them, on directory stores a real
 * workspace wrote and that were then damaged on disk: exit codes, reports, and that verify and a
 * dry run change nothing.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { buildCli, removeCli, runCli } from './cli-process.js'
import * as pack from './support/pack-raw.js'

let tmp: string
let project: string
let store: string

beforeAll(buildCli)
afterAll(removeCli)

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-cli-store-'))
  project = path.join(tmp, 'project')
  store = path.join(tmp, 'store')
  fs.mkdirSync(project)
  fs.writeFileSync(path.join(project, 'README.md'), '# app\n')
})

afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }))

async function seed(): Promise<void> {
  const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store), autoCheckpoint: false })
  for (let i = 0; i < 12; i++) {
    ws.fs.writeFileSync(`/f${i % 4}.txt`, `version ${i}\n`)
    if (i % 4 === 3) await ws.checkpoint({ name: `cp${i}` })
    await ws.sync()
  }
  await ws.close()
}

/** Every file of the store and a hash of its bytes. */
function fingerprint(): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir)) {
      const full = path.join(dir, name)
      if (fs.statSync(full).isDirectory()) walk(full, `${prefix}${name}/`)
      else out[prefix + name] = createHash('sha1').update(fs.readFileSync(full)).digest('hex')
    }
  }
  walk(store, '')
  return out
}

function flipJournalByteInRecord(index: number): void {
  const lines = pack.journalText(store).split('\n')
  const offset = lines.slice(0, index).reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)
  pack.flipJournalByte(store, offset + 20)
}

const json = (args: string[]) => {
  const result = runCli([...args, '--json'])
  return { ...result, body: JSON.parse(result.stdout) }
}

describe('rewindfs verify', () => {
  it('exits 0 on a sound store and reports what it checked', async () => {
    await seed()
    const result = runCli(['verify', '--store', store])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/health\s+ok/)
    const { body, code } = json(['verify', '--store', store])
    expect(code).toBe(0)
    expect(body).toMatchObject({ ok: true, journal: { operations: 12, checkpoints: 3, damagedCount: 0, torn: 0 }, blobs: { corrupt: [], missing: [] }, problems: [] })
    expect(body.blobs.verified).toBe(body.blobs.stored)
  })

  it('exits 1 on a damaged journal record, names it, and changes nothing', async () => {
    await seed()
    flipJournalByteInRecord(5)
    const before = fingerprint()
    const result = runCli(['verify', '--store', store])
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/journal record 5 at byte \d+ cannot be read: checksum mismatch/)
    expect(result.stdout).toMatch(/rewindfs repair/)
    const { body } = json(['verify', '--store', store])
    expect(body).toMatchObject({ ok: false, journal: { damagedCount: 1, damaged: [{ record: 5, reason: 'checksum mismatch' }] } })
    expect(fingerprint()).toEqual(before)
  })

  it('exits 1 on a blob whose bytes no longer match, naming the record that needs it; on unreadable metadata too', async () => {
    await seed()
    // Bytes rewritten whole, the pack's own checksum made to match: only the id tells.
    const [id, record] = [...pack.blobRecords(store)][0]
    const bytes = Buffer.from(record.payload)
    bytes[0] ^= 0x20
    pack.setBlob(store, id, bytes)
    const { body, code } = json(['verify', '--store', store])
    expect(code).toBe(1)
    expect(body.blobs.corrupt).toEqual([id])
    expect(body.problems).toEqual([expect.stringMatching(/does not match its checksum \(journal record \d+ needs it\)/)])
    fs.writeFileSync(path.join(store, 'meta', `${Buffer.from('lower').toString('hex')}.json`), '{"trunc')
    const again = json(['verify', '--store', store])
    expect(again.body.meta).toEqual([{ key: 'lower', problem: expect.stringMatching(/not JSON/) }])
  })

  it('exits 1 on a blob whose stored bytes fail the pack checksum: unreadable, never read as content, nothing changed', async () => {
    await seed()
    const [id] = [...pack.blobRecords(store).keys()]
    pack.flipBlobByte(store, id)
    const before = fingerprint()
    const { body, code } = json(['verify', '--store', store])
    expect(code).toBe(1)
    expect(body.blobs.unreadable).toEqual([{ id, reason: expect.stringMatching(/fails its checksum/) }])
    expect(body.problems).toEqual([expect.stringMatching(new RegExp(`blob ${id.replace(/[+/=]/g, '\\$&')} cannot be read`))])
    expect(fingerprint()).toEqual(before)
  })

  it('a torn tail is not damage: exit 0 with a note; a missing store is exit 4', async () => {
    await seed()
    pack.tearAppend(store, '{"v":1,"c":12,"b":{"n":')
    const { body, code } = json(['verify', '--store', store])
    expect(code).toBe(0)
    expect(body.journal.torn).toBe(1)
    expect(body.notes.join()).toMatch(/torn record/)
    expect(runCli(['verify', '--store', path.join(tmp, 'nowhere')]).code).toBe(4)
    expect(runCli(['verify']).code).toBe(2)
  })
})

describe('rewindfs repair', () => {
  it('salvages every group commit that still applies, keeps the old journal aside, and the store then verifies clean', async () => {
    await seed()
    flipJournalByteInRecord(5)
    const damaged = Buffer.from(pack.journalText(store), 'utf8')
    const before = fingerprint()
    const dry = json(['repair', '--dir', project, '--store', store, '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.body).toMatchObject({ repaired: false, damage: [{ part: 'journal', record: 5 }] })
    expect(fingerprint()).toEqual(before)

    const result = runCli(['repair', '--dir', project, '--store', store])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^repaired /)
    expect(result.stdout).toMatch(/lost\s+record/)
    const kept = fs.readdirSync(store).filter((name) => name.startsWith('journal.damaged-'))
    expect(kept).toHaveLength(1)
    expect(fs.readFileSync(path.join(store, kept[0]))).toEqual(damaged)
    expect(result.stdout).toContain(kept[0])

    const verified = json(['verify', '--store', store])
    expect(verified.code).toBe(0)
    expect(verified.body.kept).toEqual(kept)
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store), autoCheckpoint: false })
    expect(ws.status.corrupt).toBeUndefined()
    expect(ws.checkpoints().map((c) => c.name)).toEqual(expect.arrayContaining(['cp7', 'cp11']))
    expect(ws.fs.readFileSync('/f3.txt', 'utf8')).toBe('version 11\n')
    await ws.close()
    expect(json(['repair', '--dir', project, '--store', store]).body).toMatchObject({ repaired: false, damage: [] })
  })
})
