// @vitest-environment happy-dom
/**
 * A content the live tree or the kept history refers to, gone from the store (its record deleted
 * from outside rewindfs): open says so once (status.warnings, an integrity alert), `ws.verify()`
 * lists it as corrupt with the live paths that hold it, the checkpoints that need it are broken, and
 * the workspace is not frozen — damage of one content, as a blob whose bytes no longer match, not of
 * the journal, which still proves the state: writing the same content again stores it. The same over
 * every kind of store: IndexedDB (fake-indexeddb in happy-dom here; Chromium below), MemoryStore and
 * the directory store (whose blobs are read on demand and looked up in its index).
 */
import 'fake-indexeddb/auto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { indexedDbStore } from '../adapters/indexeddb/index.js'
import { directoryStore } from '../adapters/node-fs/index.js'
import { MemoryStore, type Store } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import { CHROMIUM } from './browser/driver.js'
import { type Site, bundleModule, startSite } from './browser/site.js'
import { capability } from './support/require.js'

let counter = 0
const unique = (label: string) => `rewindfs-missing-${label}-${++counter}-${Date.now()}`
const decode = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes))

const cleanup: (() => unknown)[] = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

/** A kind of store: how to open it (again), and how something outside rewindfs deletes one blob's record. */
interface Subject {
  open(options?: { readOnly?: boolean }): Store
  remove(id: string): Promise<void>
}

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })
}

function indexedDb(): Subject {
  const name = unique('idb')
  return {
    open: (options) => indexedDbStore(name, options),
    async remove(id) {
      // Straight in the database, as another script or the devtools would: no store, no lock.
      const db = await request(indexedDB.open(name))
      const tx = db.transaction('rewindfs', 'readwrite')
      tx.objectStore('rewindfs').delete(`b:${id}`)
      await new Promise((resolve) => (tx.oncomplete = resolve))
      db.close()
    },
  }
}

function memory(): Subject {
  const store = new MemoryStore()
  return { open: () => store, remove: (id) => store.deleteBlobs([id]) }
}

function directory(): Subject {
  const dir = mkdtempSync(join(tmpdir(), 'rewindfs-missing-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'store')
  return {
    open: (options) => directoryStore(path, options),
    async remove(id) {
      const store = directoryStore(path)
      await store.deleteBlobs([id])
      await store.close()
    },
  }
}

/** The id of the blob holding `text`. */
async function blobOf(subject: Subject, text: string): Promise<string> {
  const store = subject.open({ readOnly: true })
  try {
    for (const id of await store.blobIds()) if (decode(await store.getBlob(id)) === text) return id
  } finally {
    await (store as { close?: () => Promise<void> }).close?.()
  }
  throw new Error(`no blob holds '${text}'`)
}

async function open(subject: Subject, options: { readOnly?: boolean } = {}) {
  const alerts: string[] = []
  const ws = await Workspace.open({ store: subject.open(options), autoCheckpoint: false, onAlert: (alert) => void alerts.push(`${alert.kind}: ${alert.message}`) })
  cleanup.push(() => ws.close())
  return { ws, alerts }
}

const missing = (kind: string, where: string) =>
  new RegExp(`^1 content\\(s\\) the workspace refers to is missing from the ${kind} store \\(removed from it outside rewindfs\\): ${where}; ws\\.verify\\(\\) lists them as corrupt`)

describe.each([
  ['indexeddb', indexedDb],
  ['memory', memory],
  ['directory', directory],
] as const)('a content missing from the %s store', (kind, make) => {
  it('one the live tree holds: said once at open, listed by verify() with its path, not frozen; writing it again stores it', async () => {
    const subject = make()
    const before = await Workspace.open({ store: subject.open(), autoCheckpoint: false })
    before.fs.mkdirSync('/app')
    before.fs.writeFileSync('/app/x.txt', 'x content')
    before.fs.writeFileSync('/app/y.txt', 'y content')
    await before.close()
    const id = await blobOf(subject, 'x content')
    await subject.remove(id)

    const { ws, alerts } = await open(subject)
    const said = missing(kind, "the live tree's /app/x.txt reads as EIO")
    // A store loaded on open is looked over then; one read on demand by the background check (verify() waits for it).
    if (kind !== 'directory') expect(ws.status.warnings).toEqual([expect.stringMatching(said)])
    await ws.verify()
    expect(ws.status.warnings).toEqual([expect.stringMatching(said)])
    expect(alerts).toEqual([expect.stringMatching(/^integrity: 1 content\(s\) the workspace refers to is missing/)])
    expect(ws.status.corrupt).toBeUndefined()
    expect(ws.frozen).toBeUndefined()
    expect(() => ws.fs.readFileSync('/app/x.txt')).toThrow(expect.objectContaining({ code: 'EIO' }))
    expect(() => ws.fs.readFileSync('/app/x.txt')).toThrow("EIO: i/o error: the stored content is missing from the store, read '/app/x.txt'")
    expect(ws.fs.readFileSync('/app/y.txt', 'utf8')).toBe('y content')
    const report = await ws.verify()
    expect(report).toMatchObject({ corrupt: [id], damagedPaths: ['/app/x.txt'] })
    expect(await ws.verify()).toMatchObject({ corrupt: [id], damagedPaths: ['/app/x.txt'] })
    expect(ws.status.warnings).toHaveLength(1) // said once: not again by the checks
    expect(alerts).toHaveLength(1)

    // The journal is sound: writes go on, and the content written again is stored again.
    ws.fs.writeFileSync('/app/new.txt', 'new')
    ws.fs.writeFileSync('/app/x.txt', 'x content')
    await ws.sync()
    expect(await ws.verify()).toMatchObject({ corrupt: [], damagedPaths: [] })
    await ws.close()
    const { ws: again } = await open(subject)
    expect(again.status.warnings).toEqual([])
    expect(again.fs.readFileSync('/app/x.txt', 'utf8')).toBe('x content')
    expect(again.fs.readFileSync('/app/new.txt', 'utf8')).toBe('new')
    expect(await again.verify()).toMatchObject({ corrupt: [], damagedPaths: [] })
  })

  it('one only the kept history needs: its checkpoint is broken, verify() lists it with no live path', async () => {
    const subject = make()
    const before = await Workspace.open({ store: subject.open(), autoCheckpoint: false })
    before.fs.writeFileSync('/a', 'first')
    await before.checkpoint({ name: 'cp' })
    before.fs.writeFileSync('/a', 'second')
    await before.close()
    const id = await blobOf(subject, 'first')
    await subject.remove(id)

    const { ws } = await open(subject)
    expect(await ws.verify()).toMatchObject({ corrupt: [id], damagedPaths: [] })
    expect(ws.status.warnings).toEqual([
      expect.stringMatching(/^checkpoint .* refers to content missing from the store; it is kept but cannot be restored$/),
      expect.stringMatching(missing(kind, 'only the kept history needs them')),
    ])
    expect(ws.checkpoints()[0]).toMatchObject({ name: 'cp', broken: true })
    expect(ws.frozen).toBeUndefined()
    expect(ws.fs.readFileSync('/a', 'utf8')).toBe('second')
    await expect(ws.restore('cp')).rejects.toMatchObject({ code: 'EBROKEN' })
  })

  it('a read-only instance (a follower tab, rewindfs status) reports it too', async () => {
    const subject = make()
    const before = await Workspace.open({ store: subject.open(), autoCheckpoint: false })
    before.fs.writeFileSync('/x', 'x content')
    await before.close()
    const id = await blobOf(subject, 'x content')
    await subject.remove(id)
    const { ws } = await open(subject, { readOnly: true })
    expect(await ws.verify()).toMatchObject({ corrupt: [id], damagedPaths: ['/x'] })
    expect(ws.status.warnings).toEqual([expect.stringMatching(missing(kind, "the live tree's /x reads as EIO"))])
  })
})

it('nothing missing: open says nothing and verify() lists nothing (every kind above, undamaged)', async () => {
  for (const make of [indexedDb, memory, directory]) {
    const subject = make()
    const before = await Workspace.open({ store: subject.open(), autoCheckpoint: false })
    before.fs.writeFileSync('/a', 'one')
    await before.checkpoint({ name: 'cp' })
    before.fs.writeFileSync('/a', 'two')
    await before.close()
    const { ws } = await open(subject)
    expect(ws.status.warnings).toEqual([])
    expect(await ws.verify()).toMatchObject({ corrupt: [], damagedPaths: [] })
  }
})

it('an IndexedDB blob record that is not bytes: said once (the open warning and one alert), not again as a checksum mismatch', async () => {
  const name = unique('not-bytes')
  const before = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
  before.fs.writeFileSync('/x', 'x content')
  await before.close()
  const db = await request(indexedDB.open(name))
  const tx = db.transaction('rewindfs', 'readwrite')
  const keys = (await request(tx.objectStore('rewindfs').getAllKeys())).map(String).filter((key) => key.startsWith('b:'))
  tx.objectStore('rewindfs').put('not bytes', keys[0])
  await new Promise((resolve) => (tx.oncomplete = resolve))
  db.close()
  const id = keys[0].slice(2)
  const { ws, alerts } = await open({ open: () => indexedDbStore(name), remove: async () => undefined })
  const report = await ws.verify()
  expect(report).toMatchObject({ corrupt: [id], damagedPaths: ['/x'] })
  expect(ws.status.warnings).toEqual([expect.stringMatching(/^blob .* cannot be read \(.*a blob is not a Uint8Array.*\); it is kept in the store, and what needs it reads as EIO$/)])
  expect(alerts).toEqual([expect.stringMatching(/^integrity: 1 blob\(s\) in the indexeddb store cannot be read/)])
  expect(() => ws.fs.readFileSync('/x')).toThrow(expect.objectContaining({ code: 'EIO' }))
  expect(ws.frozen).toBeUndefined()
})

/** The probe's case in Chromium: the engine in a Web Worker over a real IndexedDB, a `b:` record deleted from the page. */
const PAGE = `
import { openWorkerWorkspace } from '../../worker/index.js'
let ws
const codeOf = (error) => (error?.code ? error.code + ': ' + error.message : String(error?.message ?? error))
window.probe = {
  async open(name) {
    ws = await openWorkerWorkspace(new Worker('/engine.js', { type: 'module' }), { store: { kind: 'indexeddb', name }, autoCheckpoint: false })
    const { warnings, corrupt, frozen } = ws.status
    return { warnings, corrupt: corrupt ?? null, frozen: frozen ?? null }
  },
  async write(path, text) {
    try { await ws.fs.promises.mkdir('/app', { recursive: true }); await ws.fs.promises.writeFile(path, text); await ws.sync(); return 'written' } catch (error) { return codeOf(error) }
  },
  async read(path) {
    try { return await ws.fs.promises.readFile(path, 'utf8') } catch (error) { return codeOf(error) }
  },
  async verify() { const { corrupt, damagedPaths } = await ws.verify(); return { corrupt, damagedPaths, warnings: ws.status.warnings } },
  async close() { await ws.close(); return 'closed' },
  async removeBlob(name, text) {
    const db = await new Promise((resolve, reject) => { const r = indexedDB.open(name); r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error) })
    const tx = db.transaction('rewindfs', 'readwrite')
    const store = tx.objectStore('rewindfs')
    const keys = await new Promise((resolve) => { const r = store.getAllKeys(); r.onsuccess = () => resolve(r.result) })
    let removed
    for (const key of keys.filter((k) => String(k).startsWith('b:'))) {
      const value = await new Promise((resolve) => { const r = store.get(key); r.onsuccess = () => resolve(r.result) })
      if (new TextDecoder().decode(value) === text) { store.delete(key); removed = String(key).slice(2) }
    }
    await new Promise((resolve) => (tx.oncomplete = resolve))
    db.close()
    return removed
  },
}
document.getElementById('status').textContent = 'ready'
`

const chromium = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

describe.skipIf(!chromium)('a content missing from the IndexedDB store, in Chromium (the engine in a worker)', () => {
  let site: Site
  beforeAll(async () => {
    // (Inline modules resolve from test/browser/: this file's import.meta.url is happy-dom's, not a file's.)
    const [page, engine] = await Promise.all([bundleModule({ contents: PAGE }), bundleModule({ contents: "import '../../worker/browser-entry.ts'" })])
    site = await startSite({ '/': page }, { '/engine.js': engine })
  })
  afterAll(async () => {
    await site?.close()
    expect(site?.errors ?? []).toEqual([])
  })

  it('reported at open and by verify() with its path, its read says it is missing, writes go on', async () => {
    const context = await site.newContext()
    const call = (page: Page, name: string, ...args: unknown[]) => page.evaluate(([n, a]) => (window as unknown as Record<string, Record<string, (...x: unknown[]) => unknown>>).probe[n](...a), [name, args] as const)
    const first = await site.open(context)
    expect(await call(first, 'open', 'missing')).toEqual({ warnings: [], corrupt: null, frozen: null })
    expect(await call(first, 'write', '/app/x.txt', 'x content')).toBe('written')
    expect(await call(first, 'write', '/app/y.txt', 'y content')).toBe('written')
    await call(first, 'close')
    const id = await call(first, 'removeBlob', 'missing', 'x content')
    expect(id).toEqual(expect.any(String))

    const second = await site.open(context)
    const said = missing('indexeddb', "the live tree's /app/x.txt reads as EIO")
    expect(await call(second, 'open', 'missing')).toEqual({ warnings: [expect.stringMatching(said)], corrupt: null, frozen: null })
    expect(await call(second, 'read', '/app/y.txt')).toBe('y content')
    expect(await call(second, 'read', '/app/x.txt')).toBe("EIO: EIO: i/o error: the stored content is missing from the store, read '/app/x.txt'")
    expect(await call(second, 'verify')).toEqual({ corrupt: [id], damagedPaths: ['/app/x.txt'], warnings: [expect.stringMatching(said)] })
    expect(await call(second, 'write', '/app/new.txt', 'new')).toBe('written')
    await context.close()
  })
})
