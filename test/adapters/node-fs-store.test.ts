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

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-node-fs-store-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`
const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array | undefined) => (data === undefined ? undefined : new TextDecoder().decode(data))


describe('directoryStore: the Store contract on disk', () => {
  it('appends journal lines durably, returns a torn last line as it is, and replaces the journal atomically', async () => {
    const path = fresh()
    const store = directoryStore(path)
    expect(await store.readJournal()).toEqual([])
    await store.appendJournal(['one', 'two'])
    await store.appendJournal(['three'])
    expect(fs.readFileSync(`${path}/journal`, 'utf8')).toBe('one\ntwo\nthree\n')
    expect(await store.readJournal()).toEqual(['one', 'two', 'three'])
    await expect(store.appendJournal(['two\nlines'])).rejects.toThrow(/single line/)
    // A crash mid-append leaves part of a line: it comes back last, for the engine to drop.
    fs.appendFileSync(`${path}/journal`, '{"torn')
    expect(await store.readJournal()).toEqual(['one', 'two', 'three', '{"torn'])
    await store.replaceJournal(['snapshot'])
    await store.appendJournal(['after'])
    expect(fs.readFileSync(`${path}/journal`, 'utf8')).toBe('snapshot\nafter\n')
    expect(fs.readdirSync(path).sort()).toEqual(['blobs', 'journal', 'lock', 'meta'])
    await store.close()
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
    for (const bucket of fs.readdirSync(`${path}/blobs`)) {
      for (const name of fs.readdirSync(`${path}/blobs/${bucket}`)) expect(name.startsWith(bucket)).toBe(true)
    }
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
})

describe('directoryStore: a torn journal tail under the engine', () => {
  it('reopens past a half-written last record, cuts it off, and appends whole records after it', async () => {
    const path = fresh()
    let ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    ws.fs.writeFileSync('/kept.txt', 'acknowledged')
    await ws.sync()
    await ws.close()
    // What a crash in the middle of the next group commit leaves.
    fs.appendFileSync(`${path}/journal`, '{"v":1,"t":"op","half')
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(ws.status.warnings).toEqual([expect.stringMatching(/dropped 1 torn/)])
    expect(ws.fs.readFileSync('/kept.txt', 'utf8')).toBe('acknowledged')
    ws.fs.writeFileSync('/after.txt', 'after the tear')
    await ws.sync()
    await ws.close()
    expect(fs.readFileSync(`${path}/journal`, 'utf8')).not.toContain('half')
    ws = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(ws.status.warnings).toEqual([])
    expect(ws.fs.readFileSync('/after.txt', 'utf8')).toBe('after the tear')
    await ws.close()
  })
})

describe('directoryStore: the lock', () => {
  it('gives a second opener EBUSY, a read-only opener a working view that refuses writes with EROFS, and frees on close', async () => {
    const path = fresh()
    const writer = directoryStore(path)
    await writer.appendJournal(['record'])
    expect(fs.readFileSync(`${path}/lock`, 'utf8')).toBe(`${process.pid}\n`)
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
    expect(await reader.readJournal()).toEqual(['record'])
    const writes: [string, () => Promise<unknown>][] = [
      ['appendJournal', () => reader.appendJournal(['x'])],
      ['replaceJournal', () => reader.replaceJournal([])],
      ['putBlobs', () => reader.putBlobs([['id', bytes('x')]])],
      ['deleteBlobs', () => reader.deleteBlobs(['id'])],
      ['putMeta', () => reader.putMeta('k', 1)],
      ['deleteMeta', () => reader.deleteMeta('k')],
    ]
    for (const [method, call] of writes) await expect(call(), method).rejects.toThrow(expect.objectContaining({ code: 'EROFS', syscall: method }))
    await reader.close()
    expect(fs.readFileSync(`${path}/journal`, 'utf8')).toBe('record\n')

    await writer.close()
    expect(fs.existsSync(`${path}/lock`)).toBe(false)
    const again = directoryStore(path)
    expect(await again.readJournal()).toEqual(['record'])
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
    expect(fs.readFileSync(`${path}/lock`, 'utf8')).toBe(`${process.pid}\n`)
    await store.close()
    // A lock that is not a pid at all (damaged) is stale too.
    fs.writeFileSync(`${path}/lock`, 'garbage')
    await directoryStore(path).close()
  })
})
