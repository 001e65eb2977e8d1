/**
 * The directory store: the Store contract on real files, a workspace round trip through it, and
 * its lock (one writer; readers read-only; a dead owner's lock taken over).
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { DirectoryStore, directory, directoryStore } from '../../adapters/node-fs/index.js'
import { FsError, Workspace } from '../../src/index.js'
import { workspaceSnapshot } from '../support/workspace-snapshot.js'
import * as pack from '../support/pack-raw.js'
import { Kind } from '../../adapters/node-fs/pack-format.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-node-fs-store-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`
const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array | undefined) => (data === undefined ? undefined : new TextDecoder().decode(data))

/** Every segment's bytes, to compare before and after. */
const packBytes = (path: string) => pack.segmentFiles(path).map(({ file }) => fs.readFileSync(file))


describe('directoryStore: the Store contract on disk', () => {
  it('appends journal lines durably, returns a torn last append apart, and replaces the journal atomically', async () => {
    const path = fresh()
    const store = directoryStore(path)
    expect(await store.readJournal()).toEqual({ records: [] })
    await store.appendJournal(['one', 'two'])
    await store.appendJournal(['three'])
    expect(pack.journalText(path)).toBe('one\ntwo\nthree\n')
    expect(await store.readJournal()).toEqual({ records: ['one', 'two', 'three'] })
    await expect(store.appendJournal(['two\nlines'])).rejects.toThrow(/single line/)
    await store.close()
    // A crash mid-append leaves part of a record: its text comes back apart, for the engine to drop.
    pack.tearAppend(path, '{"torn')
    const again = directoryStore(path)
    expect(await again.readJournal()).toEqual({ records: ['one', 'two', 'three'], torn: '{"torn' })
    await again.replaceJournal(['snapshot'])
    await again.appendJournal(['after'])
    expect(pack.journalText(path)).toBe('snapshot\nafter\n')
    // Nothing told the store the torn text was kept with the journal: it kept the torn bytes itself before cutting them.
    expect(fs.readdirSync(path).sort()).toEqual(['format', 'lock', 'meta', expect.stringMatching(/^pack\.torn-\d{8}T\d{9}Z\.00000001-\d+$/), 'packs'])
    await again.close()
  })

  it('a file where the store should be is ENOTDIR, for writers and readers, and is left as it is', () => {
    const path = `${fresh()}-file`
    fs.writeFileSync(path, 'mine')
    for (const readOnly of [false, true]) {
      expect(() => directoryStore(path, { readOnly })).toThrow(expect.objectContaining({ code: 'ENOTDIR', message: expect.stringContaining('the store path is not a directory') }))
    }
    expect(fs.readFileSync(path, 'utf8')).toBe('mine')
  })

  it('keeps blobs content-addressed under any id, and metadata as JSON, both replaced whole', async () => {
    const path = fresh()
    const store = directoryStore(path)
    const ids = ['qUiQTy8PR5uPgZdpSzAYSw0u0cE=', 'a/b+c==', 'x~1', 'ünï']
    await store.putBlobs(ids.map((id) => [id, bytes(`content of ${id}`)] as const))
    await store.putBlobs([[ids[0], bytes('content of ' + ids[0])]])
    expect((await store.blobIds()).sort()).toEqual([...ids].sort())
    for (const id of ids) expect(text(await store.getBlob(id))).toBe(`content of ${id}`)
    expect(await store.getBlob('missing')).toBeUndefined()
    // Stored once each, under its id, in the pack.
    expect([...pack.blobRecords(path).keys()].sort()).toEqual([...ids].sort())
    expect(pack.records(path).filter((record) => record.kind === Kind.Blob)).toHaveLength(ids.length)
    await store.deleteBlobs([ids[1], 'missing'])
    expect((await store.blobIds()).sort()).toEqual([ids[0], ids[2], ids[3]].sort())
    await expect(store.putBlobs([['', bytes('x')]])).rejects.toThrow(/non-empty string/)

    await store.putMeta('flush-state', { v: 1, pins: [['/a', null]], nested: { ok: true } })
    await store.putMeta('weird/key name', 'value')
    expect(await store.getMeta('flush-state')).toEqual({ v: 1, pins: [['/a', null]], nested: { ok: true } })
    expect(await store.getMeta('weird/key name')).toBe('value')
    expect(await store.getMeta('absent')).toBeUndefined()
    await store.deleteMeta('weird/key name')
    expect(await store.getMeta('weird/key name')).toBeUndefined()
    fs.writeFileSync(`${path}/meta/${Buffer.from('broken').toString('hex')}.json`, '{not json')
    await expect(store.getMeta('broken')).rejects.toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_STORE_META' }))
    await store.close()
    await expect(store.getMeta('flush-state')).rejects.toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_STORE_CLOSED' }))
  })

  it('round-trips a workspace over a directory lower: files, checkpoints, history and state survive a reopen', async () => {
    const lowerPath = fresh()
    fs.mkdirSync(`${lowerPath}/app`, { recursive: true })
    fs.writeFileSync(`${lowerPath}/app/config.json`, '{"port":8080}')
    fs.writeFileSync(`${lowerPath}/README.md`, '# app')
    const storePath = fresh()
    let ws = await Workspace.open({ lower: directory(lowerPath), store: directoryStore(storePath), autoCheckpoint: false })
    ws.fs.writeFileSync('/app/config.json', '{"port":9090}')
    ws.fs.mkdirSync('/app/lib')
    ws.fs.writeFileSync('/app/lib/util.js', 'export {}')
    await ws.checkpoint({ name: 'first' })
    ws.fs.rmSync('/README.md')
    ws.fs.symlinkSync('lib/util.js', '/app/main.js')
    await ws.state.set('plan', { step: 2 })
    await ws.checkpoint({ name: 'second' })
    ws.fs.writeFileSync('/app/lib/util.js', 'export const x = 1')
    await ws.sync()
    const expected = await workspaceSnapshot(ws)
    await ws.close()

    ws = await Workspace.open({ lower: directory(lowerPath), store: directoryStore(storePath), autoCheckpoint: false })
    expect(await workspaceSnapshot(ws)).toEqual(expected)
    expect(ws.status.warnings).toEqual([])
    expect(ws.status.degraded).toBeFalsy()
    await ws.restore('first')
    expect(ws.fs.readFileSync('/README.md', 'utf8')).toBe('# app')
    expect(ws.fs.readFileSync('/app/lib/util.js', 'utf8')).toBe('export {}')
    await ws.compact()
    await ws.close()

    ws = await Workspace.open({ lower: directory(lowerPath), store: directoryStore(storePath), autoCheckpoint: false })
    expect(ws.fs.readFileSync('/app/lib/util.js', 'utf8')).toBe('export {}')
    expect(ws.checkpoints().map((c) => c.name)).toEqual(expect.arrayContaining(['first', 'second']))
    await ws.close()
    // The lower directory itself was never written.
    expect(fs.readdirSync(lowerPath).sort()).toEqual(['README.md', 'app'])
    expect(fs.readFileSync(`${lowerPath}/app/config.json`, 'utf8')).toBe('{"port":8080}')
  })

  it("directories' times survive a reopen as the operations set them (a write in place leaves them), before and after a compaction", async () => {
    const lowerPath = fresh()
    fs.mkdirSync(`${lowerPath}/app/src`, { recursive: true })
    fs.writeFileSync(`${lowerPath}/app/config.json`, '{"port":8080}')
    fs.writeFileSync(`${lowerPath}/app/src/index.js`, 'serve()')
    // The disk's times, long before anything the workspace does.
    const then = new Date('2020-01-02T03:04:05Z')
    for (const path of ['app/src/index.js', 'app/config.json', 'app/src', 'app', '']) fs.utimesSync(`${lowerPath}/${path}`, then, then)
    const storePath = fresh()
    const open = () => Workspace.open({ lower: directory(lowerPath), store: directoryStore(storePath), autoCheckpoint: false })
    const snapshot = (ws: Workspace) => workspaceSnapshot(ws, { times: true })
    // Operations a few milliseconds apart, so a replay at another time would show.
    const later = () => new Promise((resolve) => setTimeout(resolve, 5))
    let ws = await open()
    const steps: ((ws: Workspace) => unknown)[] = [
      (ws) => ws.fs.writeFileSync('/app/config.json', '{"port":9090}'), // in place: /app keeps the disk's times
      (ws) => ws.fs.mkdirSync('/app/lib'),
      (ws) => ws.fs.writeFileSync('/app/lib/util.js', 'export {}'),
      (ws) => ws.fs.renameSync('/app/src/index.js', '/app/lib/index.js'),
      (ws) => ws.fs.chmodSync('/app/lib/util.js', 0o600),
      (ws) => ws.fs.unlinkSync('/app/config.json'),
      (ws) => ws.undo(),
      (ws) => ws.redo(),
      (ws) => ws.compact(),
      (ws) => ws.fs.writeFileSync('/app/lib/util.js', 'export const x = 1'),
      (ws) => ws.fs.rmSync('/app/src', { recursive: true }),
      (ws) => ws.undo(),
    ]
    for (const step of steps) {
      await later()
      await step(ws)
      await ws.sync()
    }
    const expected = await snapshot(ws)
    expect(expected.files['/app/']).not.toMatch(new RegExp(`m${then.getTime()} `))
    await ws.close()
    ws = await open()
    expect(await snapshot(ws)).toEqual(expected)
    await ws.compact()
    await ws.close()
    ws = await open()
    expect(await snapshot(ws)).toEqual(expected)
    await ws.close()
  })
})

describe('directoryStore: purge', () => {
  /** Every byte under the store's directory, file by file. */
  const everyFile = (root: string): Buffer[] =>
    fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => fs.readFileSync(`${entry.parentPath}/${entry.name}`))

  it('overwrites the purged content where the packs kept it (its versions, after a reopen), keeps what another path shares, and the store opens and verifies clean', async () => {
    const path = fresh()
    const secret = `AKIA${'Q'.repeat(16)} value-of-the-leaked-key`
    let ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    ws.fs.writeFileSync('/config.env', `TOKEN=${secret}\n`)
    await ws.checkpoint({ name: 'leak' })
    ws.fs.writeFileSync('/config.env', `TOKEN=${secret}\nMORE=1\n`)
    ws.fs.writeFileSync('/kept.txt', `kept ${secret} in another file`)
    await ws.sync()
    await ws.close()
    // Reopened, the blobs' places come from the index files.
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    const report = await ws.purge('/config.env')
    expect(report).toMatchObject({ erased: 2, storeOverwrote: true })
    await ws.close()
    const found = (needle: string) => everyFile(path).filter((bytes) => bytes.includes(needle)).length
    expect(found(`TOKEN=${secret}`)).toBe(0)
    expect(found(`kept ${secret} in another file`)).toBe(1)
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect([ws.fs.readFileSync('/config.env', 'utf8'), ws.fs.readFileSync('/kept.txt', 'utf8')]).toEqual(['', `kept ${secret} in another file`])
    await ws.restore('leak')
    expect(ws.fs.readFileSync('/config.env', 'utf8')).toBe('')
    const verified = await ws.verify()
    expect([verified.corrupt, verified.broken, ws.status.warnings]).toEqual([[], [], []])
    await ws.close()
  })

  it("erases it after a compaction put the history in parts and a collection ran (purge took the parts' stale lists for another reference)", async () => {
    const path = fresh()
    const secret = `ghp_${'z'.repeat(36)}`
    const store = directoryStore(path, { segmentBytes: 2048 })
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/token', secret)
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync(`/filler${i}`, `${i}`.padEnd(600, '.'))
    await ws.sync()
    for (let i = 0; i < 40; i++) ws.fs.rmSync(`/filler${i}`)
    await ws.compact()
    // The collector copies live records out of mostly dead segments in the background.
    for (let i = 0; i < 200 && (store.packStats!.collecting || store.packStats!.collected === 0); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(store.packStats!.collected).toBeGreaterThan(0)
    expect(await ws.purge('/token')).toMatchObject({ erased: 1, sharedElsewhere: 0, storeOverwrote: true })
    await ws.close()
    expect(everyFile(path).filter((bytes) => bytes.includes(secret))).toEqual([])
  })
  it("erases the second of two purges in one process too (the first one's compaction left parts whose lists still named it)", async () => {
    const path = fresh()
    const first = `FIRST-${'a'.repeat(24)}`
    const second = `SECOND-${'b'.repeat(24)}`
    // Automatic checkpoints on, as by default: each purge scrubs theirs too.
    const ws = await Workspace.open({ store: directoryStore(path) })
    ws.fs.writeFileSync('/a.txt', first)
    ws.fs.writeFileSync('/b.txt', second)
    await ws.checkpoint({ name: 'both' })
    ws.fs.writeFileSync('/a.txt', 'clean a')
    ws.fs.writeFileSync('/b.txt', 'clean b')
    await ws.sync()
    expect(await ws.purge('/a.txt')).toMatchObject({ erased: 2, sharedElsewhere: 0, storeOverwrote: true })
    expect(await ws.purge('/b.txt')).toMatchObject({ erased: 2, sharedElsewhere: 0, storeOverwrote: true })
    await ws.close()
    expect(everyFile(path).filter((bytes) => bytes.includes(first) || bytes.includes(second))).toEqual([])
    const reopened = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    await reopened.restore('both')
    expect([reopened.fs.readFileSync('/a.txt', 'utf8'), reopened.fs.readFileSync('/b.txt', 'utf8')]).toEqual(['', ''])
    expect((await reopened.verify()).corrupt).toEqual([])
    await reopened.close()
  })
})

describe('directoryStore: a torn journal tail and damage under the engine', () => {
  it('reopens past a half-written last record: the journal is copied aside whole, then rewritten without it', async () => {
    const path = fresh()
    let ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    ws.fs.writeFileSync('/kept.txt', 'acknowledged')
    await ws.sync()
    await ws.close()
    // What a crash in the middle of the next group commit leaves.
    pack.tearAppend(path, '{"v":1,"t":"op","half')
    const before = Buffer.from(pack.journalText(path), 'utf8')
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    const kept = fs.readdirSync(path).filter((name) => name.startsWith('journal.'))
    expect(kept).toEqual([expect.stringMatching(/^journal\.torn-\d{8}T\d{9}Z$/)])
    expect(fs.readFileSync(`${path}/${kept[0]}`)).toEqual(before)
    expect(ws.status.warnings).toEqual([expect.stringMatching(new RegExp(`dropped 1 torn .*kept aside as '${kept[0]}'`))])
    expect(ws.fs.readFileSync('/kept.txt', 'utf8')).toBe('acknowledged')
    ws.fs.writeFileSync('/after.txt', 'after the tear')
    await ws.sync()
    await ws.close()
    expect(pack.journalText(path)).not.toContain('half')
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(ws.status.warnings).toEqual([])
    expect(ws.fs.readFileSync('/after.txt', 'utf8')).toBe('after the tear')
    await ws.close()
    const store = directoryStore(path)
    expect(await store.keptAside()).toEqual(kept)
    await store.removeKept([...kept, 'format', 'lock'])
    expect(fs.readdirSync(path).sort()).toEqual(['format', 'lock', 'meta', 'packs'])
    await store.close()
  })

  it('one flipped byte in the middle of the journal: every earlier record is kept, the files are untouched, repair salvages the rest', async () => {
    const path = fresh()
    let ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    for (let i = 0; i < 30; i++) {
      ws.fs.writeFileSync(`/f${i % 7}`, `version ${i}`)
      if (i % 8 === 7) await ws.checkpoint({ name: `cp${i}` })
      await ws.sync()
    }
    const expected = await workspaceSnapshot(ws)
    await ws.close()
    // The byte in the middle of the journal's text, wherever its record lies in the pack.
    const journal = Buffer.from(pack.journalText(path), 'utf8')
    const middle = Math.floor(journal.length / 2)
    pack.flipJournalByte(path, middle, 0x04)
    journal[middle] ^= 0x04
    const stored = packBytes(path)
    const lines = journal.toString('utf8').split('\n')
    let record = 0
    for (let offset = 0; offset + lines[record].length + 1 <= middle; record++) offset += lines[record].length + 1
    const offset = lines.slice(0, record).reduce((sum, line) => sum + line.length + 1, 0)

    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(ws.status.corrupt).toMatchObject({ part: 'journal', record, offset })
    expect(ws.frozen).toMatch(/damaged/)
    expect(ws.history().length).toBeGreaterThan(0)
    await ws.close()
    expect(packBytes(path)).toEqual(stored)
    expect(fs.readdirSync(path).sort()).toEqual(['format', 'meta', 'packs'])

    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    const report = await ws.repair({ salvage: true })
    expect(report.repaired).toBe(true)
    // The flipped record's group commit is lost; every other one still applies.
    const lost = report.lost.flatMap((l) => Array.from({ length: l.last - l.first + 1 }, (_, i) => l.first + i))
    expect(lost).toContain(record)
    expect(lost).toEqual(Array.from({ length: lost.length }, (_, i) => lost[0] + i))
    expect(lost.length).toBeLessThanOrEqual(3)
    expect(report.kept.records + lost.length).toBe(lines.length - 1)
    const salvaged = await workspaceSnapshot(ws)
    await ws.close()
    expect(fs.readFileSync(`${path}/${report.keptAside}`)).toEqual(journal)
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(ws.status.corrupt).toBeUndefined()
    expect(await workspaceSnapshot(ws)).toEqual(salvaged)
    expect(salvaged.history.length).toBeGreaterThanOrEqual(expected.history.length - 1)
    await ws.close()
  })
})

describe('directoryStore: the lock', () => {
  it('gives a second opener EBUSY, a read-only opener a working view that refuses writes with EROFS, and frees on close', async () => {
    const path = fresh()
    const writer = directoryStore(path)
    await writer.appendJournal(['record'])
    expect(fs.readFileSync(`${path}/lock`, 'utf8')).toMatch(new RegExp(`^${process.pid}\n\n\\d+\n$`)) // the pid, no host, its start
    let busy: unknown
    try {
      directoryStore(path)
    } catch (error) {
      busy = error
    }
    expect(busy).toBeInstanceOf(FsError)
    expect(busy).toMatchObject({ code: 'EBUSY', errno: -16, message: expect.stringMatching(/locked by this process/) })

    const reader = directoryStore(path, { readOnly: true })
    expect(reader.readOnly).toBe(true)
    expect(writer.readOnly).toBe(false)
    expect(await reader.readJournal()).toEqual({ records: ['record'] })
    const writes: [string, () => Promise<unknown>][] = [
      ['appendJournal', () => reader.appendJournal(['x'])],
      ['replaceJournal', () => reader.replaceJournal([])],
      ['putBlobs', () => reader.putBlobs([['id', bytes('x')]])],
      ['deleteBlobs', () => reader.deleteBlobs(['id'])],
      ['putMeta', () => reader.putMeta('k', 1)],
      ['deleteMeta', () => reader.deleteMeta('k')],
      ['setAside', () => reader.setAside({ journal: true }, 'torn')],
      ['removeKept', () => reader.removeKept(['journal.torn-20260101T000000000Z'])],
    ]
    for (const [method, call] of writes) await expect(call(), method).rejects.toThrow(expect.objectContaining({ code: 'EROFS', syscall: method }))
    await reader.close()
    expect(pack.journalText(path)).toBe('record\n')

    await writer.close()
    expect(fs.existsSync(`${path}/lock`)).toBe(false)
    const again = directoryStore(path)
    expect(await again.readJournal()).toEqual({ records: ['record'] })
    await again.close()
  })

  it('refuses a second process with EBUSY naming the owner, and opens read-only beside it', async () => {
    const path = fresh()
    await directoryStore(path).close()
    const holder = spawn(process.execPath, ['--import', 'tsx', 'test/adapters/fixtures/node-fs-lock-holder.ts', path], { stdio: ['pipe', 'pipe', 'inherit'] })
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve())
      holder.on('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)))
    })
    expect(() => directoryStore(path)).toThrow(expect.objectContaining({ code: 'EBUSY', message: expect.stringContaining(`process ${holder.pid}`) }))
    const ws = await Workspace.open({ store: directoryStore(path, { readOnly: true }) })
    expect(ws.fs.readdirSync('/')).toEqual([])
    await ws.close()
    holder.stdin.end()
    await new Promise((resolve) => holder.on('exit', resolve))
    const after = directoryStore(path)
    expect(after).toBeInstanceOf(DirectoryStore)
    await after.close()
  })

  it('takes over a lock left by a process that is gone', async () => {
    const path = fresh()
    fs.mkdirSync(path)
    const gone = spawnSync(process.execPath, ['-e', '']).pid!
    fs.writeFileSync(`${path}/lock`, `${gone}\n`)
    const store = directoryStore(path)
    expect(fs.readFileSync(`${path}/lock`, 'utf8')).toMatch(new RegExp(`^${process.pid}\n\n\\d+\n$`)) // the pid, no host, its start
    await store.close()
    // A lock that is not a pid at all (damaged) is stale too.
    fs.writeFileSync(`${path}/lock`, 'garbage')
    await directoryStore(path).close()
  })
})
