// @vitest-environment happy-dom
/**
 * The IndexedDB adapter under fake-indexeddb, in happy-dom's browser globals (window, navigator),
 * as a page would run it: the Store contract (the MemoryStore cases, a whole workspace session
 * reopened from it), the read-only second instance and its change notices, quota
 * and blocked-upgrade errors, and the tree as lower source and flush target with its preload limit.
 */
import 'fake-indexeddb/auto'
import { setMany } from 'idb-keyval'
import { afterEach, describe, expect, it } from 'vitest'
import { indexedDbStore, indexedDbTree, type IndexedDbStore } from '../../adapters/indexeddb/index.js'
import { Database } from '../../adapters/indexeddb/database.js'
import type { FlushEntry } from '../../src/flush/target.js'
import { MemoryStore } from '../../src/adapter-kit.js'
import { Workspace } from '../../src/index.js'
import { workspaceSnapshot } from '../support/workspace-snapshot.js'

let counter = 0
const unique = (label: string) => `rewindfs-test-${label}-${++counter}-${Date.now()}`
const text = (value: string) => new TextEncoder().encode(value)
const decode = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes))

const opened: { close(): unknown }[] = []
function track<T extends { close(): unknown }>(value: T): T {
  opened.push(value)
  return value
}
afterEach(async () => {
  for (const value of opened.splice(0)) await value.close()
})

/**
 * fake-indexeddb has no quota: values larger than `limit` bytes fail the way Chromium fails them, the
 * request errors with QuotaExceededError and its transaction aborts with it (through the fake's
 * request runner, the only way to fail a request asynchronously there).
 */
function quota(limit: number): () => void {
  const original = IDBObjectStore.prototype.put
  type Runner = { _execRequestAsync(request: { source: unknown; operation: () => unknown }): IDBRequest }
  IDBObjectStore.prototype.put = function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
    const size = value instanceof Uint8Array ? value.byteLength : typeof value === 'string' ? value.length : 0
    if (size <= limit) return original.call(this, value, key)
    return (this.transaction as unknown as Runner)._execRequestAsync({
      source: this,
      operation: () => {
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
      },
    })
  }
  return () => {
    IDBObjectStore.prototype.put = original
  }
}


describe('indexedDbStore: the Store contract', () => {
  it('appends in order, keeps appending after a reopen, and replaces the journal atomically', async () => {
    const name = unique('journal')
    const store = track(indexedDbStore(name))
    expect(await store.readJournal()).toEqual({ records: [] })
    await store.appendJournal(['a', 'b'])
    await store.appendJournal([])
    await store.appendJournal(['c'])
    expect(await store.readJournal()).toEqual({ records: ['a', 'b', 'c'] })
    await store.close()

    // A new instance continues after the last record (as a reload does), not over it.
    const again = track(indexedDbStore(name))
    await again.appendJournal(['d'])
    expect(await again.readJournal()).toEqual({ records: ['a', 'b', 'c', 'd'] })
    await again.replaceJournal(['snapshot', 'commit'])
    expect(await again.readJournal()).toEqual({ records: ['snapshot', 'commit'] })
    await again.appendJournal(['e'])
    expect(await again.readJournal()).toEqual({ records: ['snapshot', 'commit', 'e'] })
    await again.replaceJournal([])
    expect(await again.readJournal()).toEqual({ records: [] })
  })

  it('orders calls made without waiting, as a group commit issues them', async () => {
    const store = track(indexedDbStore(unique('order')))
    const calls = Array.from({ length: 20 }, (_, i) => store.appendJournal([`r${i}`]))
    const read = store.readJournal()
    await Promise.all(calls)
    expect(await read).toEqual({ records: Array.from({ length: 20 }, (_, i) => `r${i}`) })
  })

  it('stores blobs as copies of exactly their bytes, lists and deletes them', async () => {
    const store = track(indexedDbStore(unique('blobs')))
    // A view into a larger buffer (like Node's Buffer pool): only its own bytes are stored.
    const big = new Uint8Array(8192).fill(7)
    const view = big.subarray(100, 104)
    view.set([1, 2, 3, 4])
    await store.putBlobs([
      ['x', view],
      ['y', text('hello')],
    ])
    view[0] = 99 // the store holds a copy
    const x = await store.getBlob('x')
    expect([...(x ?? [])]).toEqual([1, 2, 3, 4])
    expect(x?.buffer.byteLength).toBe(4)
    expect(decode(await store.getBlob('y'))).toBe('hello')
    expect(await store.getBlob('missing')).toBeUndefined()
    expect((await store.blobIds()).sort()).toEqual(['x', 'y'])
    await store.deleteBlobs(['x'])
    expect(await store.blobIds()).toEqual(['y'])
  })

  it('reads blobs ahead in key order, so opening reads many per transaction, and forgets them on a change', async () => {
    const store = track(indexedDbStore(unique('read-ahead')))
    const blobs = Array.from({ length: 200 }, (_, i): [string, Uint8Array] => [`blob${String(i).padStart(3, '0')}`, text(`content ${i}`)])
    await store.putBlobs(blobs)
    const transaction = IDBDatabase.prototype.transaction
    let transactions = 0
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
      transactions++
      return transaction.apply(this, args)
    }
    try {
      const ids = await store.blobIds()
      const read = []
      for (const id of ids) read.push([id, decode(await store.getBlob(id))])
      expect(read).toEqual(blobs.map(([id, bytes]) => [id, decode(bytes)]))
      expect(transactions).toBeLessThanOrEqual(1 + Math.ceil(200 / 64))
    } finally {
      IDBDatabase.prototype.transaction = transaction
    }
    // Read ahead, then deleted: the delete wins.
    expect(decode(await store.getBlob('blob000'))).toBe('content 0')
    await store.deleteBlobs(['blob001'])
    expect(await store.getBlob('blob001')).toBeUndefined()
    expect(decode(await store.getBlob('blob002'))).toBe('content 2')
  })

  it('keeps metadata apart from blobs and journal', async () => {
    const store = track(indexedDbStore(unique('meta')))
    await store.putMeta('lower', { id: 'directory:/p', n: [1, 2, null], ok: true })
    await store.putBlobs([['lower', text('blob')]])
    await store.appendJournal(['record'])
    expect(await store.getMeta('lower')).toEqual({ id: 'directory:/p', n: [1, 2, null], ok: true })
    expect(await store.getMeta('nothing')).toBeUndefined()
    await store.deleteMeta('lower')
    expect(await store.getMeta('lower')).toBeUndefined()
    expect(decode(await store.getBlob('lower'))).toBe('blob')
    expect(await store.readJournal()).toEqual({ records: ['record'] })
  })

  it('refuses bad input and records it did not write with coded errors', async () => {
    expect(() => indexedDbStore('')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    const name = unique('bad')
    const store = track(indexedDbStore(name))
    await store.appendJournal(['good'])
    await expect(store.appendJournal(['ok', 5 as unknown as string])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    expect(await store.readJournal()).toEqual({ records: ['good'] })
    // Something else wrote into our key space: read back, it is refused, never passed on. A journal
    // record that is not a string stays in its place as one no decoder accepts (the engine reports where).
    const database = new Database(name)
    await setMany([['j:9999999999999999', { not: 'a string' }], ['b:odd', 'text'], ['m:odd', new Date(0)]], database.use)
    database.close()
    expect(await store.readJournal()).toEqual({ records: ['good', '(not a string: object)'] })
    await expect(store.getBlob('odd')).rejects.toMatchObject({ code: 'EIO' })
    await expect(store.getMeta('odd')).rejects.toMatchObject({ code: 'EIO' })
  })

  it('reports an exhausted quota as ENOSPC and keeps every earlier record', async () => {
    const store = track(indexedDbStore(unique('quota')))
    await store.appendJournal(['one', 'two'])
    await store.putBlobs([['small', text('small')]])
    const restore = quota(1000)
    try {
      const error = await store.appendJournal(['three', 'x'.repeat(5000), 'four']).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'ENOSPC', syscall: 'appendJournal', message: expect.stringMatching(/quota/) })
      expect((error as Error).cause).toMatchObject({ name: 'QuotaExceededError' })
      await expect(store.putBlobs([['a', text('a')], ['big', new Uint8Array(5000)]])).rejects.toMatchObject({ code: 'ENOSPC' })
    } finally {
      restore()
    }
    // All or nothing: 'three' did not land, the next append follows 'two' directly.
    expect(await store.readJournal()).toEqual({ records: ['one', 'two'] })
    expect(await store.blobIds()).toEqual(['small'])
    await store.appendJournal(['three'])
    expect(await store.readJournal()).toEqual({ records: ['one', 'two', 'three'] })
  })

  it('reports a blocked upgrade as EBUSY', async () => {
    const name = unique('blocked')
    // Another tab made this database without our object store and ignores version changes.
    const other = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(name, 1)
      request.onupgradeneeded = () => request.result.createObjectStore('theirs')
      request.onsuccess = () => resolve(request.result)
      request.onerror = () => reject(request.error)
    })
    const store = indexedDbStore(name)
    await expect(store.ready).rejects.toMatchObject({ code: 'EBUSY', syscall: 'open', message: expect.stringMatching(/blocked/) })
    await expect(store.appendJournal(['x'])).rejects.toMatchObject({ code: 'EBUSY' })
    await store.close()
    other.close()
    // Once the other connection is gone, the upgrade adds our object store next to theirs.
    const later = track(indexedDbStore(name))
    await later.appendJournal(['x'])
    expect(await later.readJournal()).toEqual({ records: ['x'] })
  })
})

describe('indexedDbStore: read-only instances', () => {
  it('refuses every mutating call with EROFS and hears the writer commit', async () => {
    const name = unique('tabs')
    // Node has no Web Locks, so the first instance is the writer; the second asks for read-only.
    const writer = track(indexedDbStore(name))
    const reader = track(indexedDbStore(name, { readOnly: true }))
    await Promise.all([writer.ready, reader.ready])
    expect([writer.readOnly, reader.readOnly]).toEqual([false, true])

    const mutations: [string, (s: IndexedDbStore) => Promise<void>][] = [
      ['appendJournal', (s) => s.appendJournal(['x'])],
      ['replaceJournal', (s) => s.replaceJournal([])],
      ['putBlobs', (s) => s.putBlobs([['b', text('b')]])],
      ['deleteBlobs', (s) => s.deleteBlobs(['b'])],
      ['putMeta', (s) => s.putMeta('k', 1)],
      ['deleteMeta', (s) => s.deleteMeta('k')],
      ['setAside', (s) => s.setAside({ journal: true }, 'torn').then(() => undefined)],
      ['removeKept', (s) => s.removeKept(['journal.torn-20260101T000000000Z'])],
    ]
    for (const [syscall, mutate] of mutations) {
      await expect(mutate(reader), syscall).rejects.toMatchObject({ code: 'EROFS', syscall, errno: -30 })
    }

    let heard = 0
    const changed = new Promise<void>((resolve) =>
      reader.onChange(() => {
        heard++
        resolve()
      }),
    )
    await writer.appendJournal(['from the writer'])
    await changed
    expect(heard).toBe(1)
    expect(await reader.readJournal()).toEqual({ records: ['from the writer'] })

    // Unsubscribed: later commits are not delivered to it.
    const off = reader.onChange(() => heard++)
    off()
    const next = new Promise<void>((resolve) => reader.onChange(() => resolve()))
    await writer.putMeta('k', 2)
    await next
    expect(heard).toBe(2) // the first listener only
  })

  it('carries a whole workspace session: reopened, it has the same files, checkpoints, history and state', async () => {
    const name = unique('workspace')
    const lower = { '/app/config.json': '{"port":8080}', '/app/src/index.js': 'serve()', '/README.md': '# app' }
    const session = async (ws: Workspace) => {
      ws.fs.writeFileSync('/app/config.json', '{"port":9090}')
      ws.fs.mkdirSync('/app/lib/deep', { recursive: true })
      ws.fs.writeFileSync('/app/lib/deep/util.js', 'export const x = 1')
      await ws.checkpoint({ name: 'first' })
      ws.fs.renameSync('/app/src', '/app/source')
      ws.fs.symlinkSync('source/index.js', '/app/main.js')
      ws.fs.rmSync('/README.md')
      ws.fs.chmodSync('/app/config.json', 0o600)
      await ws.state.set('plan', { step: 3, todo: ['a', 'b'] })
      await ws.beginTurn(2)
      ws.fs.writeFileSync('/app/binary.bin', new Uint8Array([0, 255, 1, 254]))
      await ws.undo()
      await ws.sync()
    }
    const ws = await Workspace.open({ lower, store: indexedDbStore(name), autoCheckpoint: false })
    await session(ws)
    const expected = await workspaceSnapshot(ws)
    await ws.close()
    // The same session on the in-memory store is the reference.
    const reference = await Workspace.open({ lower, store: new MemoryStore(), autoCheckpoint: false })
    await session(reference)
    expect(expected).toEqual(await workspaceSnapshot(reference))

    const reopened = await Workspace.open({ lower, store: indexedDbStore(name), autoCheckpoint: false })
    expect(reopened.status.warnings).toEqual([])
    expect(reopened.status.degraded).toBeUndefined()
    expect(await workspaceSnapshot(reopened)).toEqual(expected)
    await reopened.restore('first')
    expect(reopened.fs.readFileSync('/app/config.json', 'utf8')).toBe('{"port":9090}')
    expect(reopened.fs.existsSync('/README.md')).toBe(true)
    // Compaction replaces the journal in one transaction; the snapshot reopens to the same state.
    await reopened.compact()
    const compacted = await workspaceSnapshot(reopened)
    await reopened.close()
    const again = await Workspace.open({ lower, store: indexedDbStore(name), autoCheckpoint: false })
    expect(await workspaceSnapshot(again)).toEqual(compacted)
    await again.close()
  })

  it('a store that fails a group commit for quota leaves the last committed state to reopen', async () => {
    const name = unique('ws-quota')
    const ws = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/kept.txt', 'committed')
    await ws.sync()
    const restore = quota(100_000)
    try {
      ws.fs.writeFileSync('/huge.bin', new Uint8Array(200_000))
      await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
      expect(ws.status.degraded).toMatch(/quota/)
    } finally {
      restore()
    }
    await ws.close()
    const reopened = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    expect(reopened.fs.readFileSync('/kept.txt', 'utf8')).toBe('committed')
    expect(reopened.fs.existsSync('/huge.bin')).toBe(false)
    await reopened.close()
  })
})

describe('indexedDbTree: a lower source and flush target', () => {
  const seed: FlushEntry[] = [
    { path: '/app', kind: 'dir', mode: 0o755, mtimeMs: 1000 },
    { path: '/app/a.txt', kind: 'file', mode: 0o644, mtimeMs: 2000, content: text('alpha') },
    { path: '/app/lib', kind: 'dir', mode: 0o700, mtimeMs: 3000 },
    { path: '/app/lib/b.txt', kind: 'file', mode: 0o600, mtimeMs: 4000, content: text('bravo') },
    { path: '/app/link', kind: 'symlink', target: 'lib/b.txt' },
  ]

  it('takes a flush in one transaction, serves it as a lower layer, and reopens to the same tree', async () => {
    const name = unique('tree')
    const tree = track(await indexedDbTree(name))
    expect(tree.kind).toBe('indexeddb-tree')
    expect(tree.id).toBe(`indexeddb-tree:${name}`)
    const progress: number[] = []
    const versions = await tree.apply(seed, (p) => progress.push(p.done))
    expect(progress).toEqual([1, 2, 3, 4, 5])
    expect(new Set(versions).size).toBe(1) // one flush, one generation
    expect(await tree.versions(['/app/a.txt', '/nothing', '/'])).toEqual([versions[1], undefined, 'root'])
    await tree.close()

    const reopened = track(await indexedDbTree(name))
    const ws = await Workspace.open({ lower: reopened })
    expect(ws.fs.readdirSync('/app').sort()).toEqual(['a.txt', 'lib', 'link'])
    expect(ws.fs.readFileSync('/app/a.txt', 'utf8')).toBe('alpha')
    expect(ws.fs.readFileSync('/app/link', 'utf8')).toBe('bravo')
    expect(ws.fs.readlinkSync('/app/link')).toBe('lib/b.txt')
    const stat = ws.fs.statSync('/app/lib/b.txt')
    expect([stat.mode & 0o7777, stat.mtimeMs, stat.size]).toEqual([0o600, 4000, 5])
    expect(ws.fs.statSync('/app/lib').mode & 0o7777).toBe(0o700)
    // The workspace writes to its upper layer only; the tree is untouched.
    ws.fs.writeFileSync('/app/a.txt', 'changed')
    expect(decode(reopened.readFile('/app/a.txt'))).toBe('alpha')
    await ws.close()
  })

  it('bumps the versions of written paths only, deletes whole trees, and updates the loaded index', async () => {
    const name = unique('tree-versions')
    const tree = track(await indexedDbTree(name))
    const before = await tree.apply(seed)
    const after = await tree.apply([
      { path: '/app/a.txt', kind: 'file', mode: 0o644, mtimeMs: 5000, content: text('alpha 2') },
      { path: '/app/lib', kind: 'delete' },
      { path: '/app/new', kind: 'dir', mode: 0o755, mtimeMs: 6000 },
    ])
    expect(after[0]).not.toBe(before[1])
    expect(after[1]).toBeUndefined()
    expect(await tree.versions(['/app/a.txt', '/app', '/app/lib/b.txt', '/app/new'])).toEqual([after[0], before[0], undefined, after[2]])
    expect(tree.stat('/app/a.txt')?.version).toBe(after[0])
    expect(tree.stat('/app/lib/b.txt')).toBeUndefined()
    expect(tree.readdir('/app').sort()).toEqual(['a.txt', 'link', 'new'])
    expect(decode(tree.readFile('/app/a.txt'))).toBe('alpha 2')

    // A file replacing a directory takes its tree, in the database as in memory.
    await tree.apply([
      { path: '/app/new/inner.txt', kind: 'file', mode: 0o644, mtimeMs: 1, content: text('inner') },
    ])
    await tree.apply([{ path: '/app/new', kind: 'file', mode: 0o644, mtimeMs: 1, content: text('now a file') }])
    await tree.close()
    const reopened = track(await indexedDbTree(name))
    expect(reopened.readdir('/app').sort()).toEqual(['a.txt', 'link', 'new'])
    expect(reopened.stat('/app/new')?.type).toBe('file')
    expect(reopened.stat('/app/new/inner.txt')).toBeUndefined()
    expect(reopened.stat('/app/lib')).toBeUndefined()
    expect(decode(reopened.readFile('/app/new'))).toBe('now a file')
  })

  it('refuses a bad change set before writing anything, and a failed transaction leaves the tree as it was', async () => {
    const name = unique('tree-bad')
    const tree = track(await indexedDbTree(name))
    const versions = await tree.apply(seed)
    const cases: [FlushEntry[], string, RegExp][] = [
      [[{ path: 'relative.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('x') }], 'EINVAL', /absolute/],
      [[{ path: '/app/../x', kind: 'dir', mode: 0o755, mtimeMs: 0 }], 'EINVAL', /absolute/],
      [[{ path: '/', kind: 'delete' }], 'EINVAL', /root/],
      [[{ path: '/app/x', kind: 'file', mode: 0o644, mtimeMs: 0, content: 'text' as unknown as Uint8Array }], 'EINVAL', /Uint8Array/],
      // The first entry is fine; the second has no parent: nothing at all is written.
      [[{ path: '/app/ok.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('x') }, { path: '/missing/x', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('x') }], 'ENOENT', /parent/],
      [[{ path: '/app/a.txt/under', kind: 'dir', mode: 0o755, mtimeMs: 0 }], 'ENOENT', /parent/],
      // Deleted earlier in the same flush: its children are gone too.
      [[{ path: '/app/lib', kind: 'delete' }, { path: '/app/lib/b.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('x') }], 'ENOENT', /parent/],
    ]
    for (const [entries, code, message] of cases) {
      await expect(tree.apply(entries), JSON.stringify(entries[0]?.path)).rejects.toMatchObject({ code, message: expect.stringMatching(message) })
    }
    // Made again after a delete in the same flush, the directory takes new children.
    await tree.apply([
      { path: '/app/lib', kind: 'delete' },
      { path: '/app/lib', kind: 'dir', mode: 0o755, mtimeMs: 0 },
      { path: '/app/lib/c.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('charlie') },
    ])
    expect(tree.readdir('/app/lib')).toEqual(['c.txt'])

    const current = await tree.versions(['/app/a.txt', '/app/lib/c.txt'])
    const restore = quota(1000)
    try {
      await expect(
        tree.apply([
          { path: '/app/a.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('would change') },
          { path: '/app/huge', kind: 'file', mode: 0o644, mtimeMs: 0, content: new Uint8Array(5000) },
        ]),
      ).rejects.toMatchObject({ code: 'ENOSPC', syscall: 'flush' })
    } finally {
      restore()
    }
    expect(await tree.versions(['/app/a.txt', '/app/lib/c.txt'])).toEqual(current)
    expect(decode(tree.readFile('/app/a.txt'))).toBe('alpha')
    expect(tree.stat('/app/huge')).toBeUndefined()
    await tree.close()
    const reopened = track(await indexedDbTree(name))
    expect(decode(reopened.readFile('/app/a.txt'))).toBe('alpha')
    expect(reopened.stat('/app/huge')).toBeUndefined()
    expect(reopened.stat('/app/a.txt')?.version).toBe(versions[1])
  })

  it('loads contents up front below preloadBytes; above it, a sync read throws NotLoadedError until prefetch', async () => {
    const name = unique('tree-preload')
    const writer = await indexedDbTree(name)
    await writer.apply([
      { path: '/big', kind: 'dir', mode: 0o755, mtimeMs: 0 },
      { path: '/big/one.bin', kind: 'file', mode: 0o644, mtimeMs: 0, content: new Uint8Array(600).fill(1) },
      { path: '/big/two.bin', kind: 'file', mode: 0o644, mtimeMs: 0, content: new Uint8Array(600).fill(2) },
    ])
    writer.close()

    const small = track(await indexedDbTree(name, { preloadBytes: 1200 }))
    expect([small.loaded('/big/one.bin'), small.loaded('/big/two.bin')]).toEqual([true, true])

    const lazy = track(await indexedDbTree(name, { preloadBytes: 1199 }))
    expect([lazy.loaded('/big/one.bin'), lazy.loaded('/big/two.bin')]).toEqual([false, false])
    const ws = await Workspace.open({ lower: lazy })
    // The index is there: listings and stats answer synchronously.
    expect(ws.fs.readdirSync('/big').sort()).toEqual(['one.bin', 'two.bin'])
    expect(ws.fs.statSync('/big/two.bin').size).toBe(600)
    expect(() => ws.fs.readFileSync('/big/one.bin')).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_NOT_LOADED', message: expect.stringMatching(/indexeddb-tree.*prefetch/) }))
    await lazy.prefetch(['/big/one.bin'])
    expect([lazy.loaded('/big/one.bin'), lazy.loaded('/big/two.bin')]).toEqual([true, false])
    expect([...ws.fs.readFileSync('/big/one.bin')].every((b) => b === 1)).toBe(true)
    expect(() => ws.fs.readFileSync('/big/two.bin')).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_NOT_LOADED' }))
    // The promise form loads what it needs by itself; after it, sync reads work too.
    expect((await ws.fs.promises.readFile('/big/two.bin')).every((b: number) => b === 2)).toBe(true)
    expect(lazy.loaded('/big/two.bin')).toBe(true)
    expect(ws.fs.readFileSync('/big/two.bin').byteLength).toBe(600)
    await ws.close()

    await expect(indexedDbTree(name, { preloadBytes: -1 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
  })

  it('takes a workspace flush into its own tree (a rebase), and refuses one over a change another tab made', async () => {
    const name = unique('tree-flush')
    const tree = track(await indexedDbTree(name))
    await tree.apply(seed)
    const ws = await Workspace.open({ lower: tree })
    ws.fs.writeFileSync('/app/a.txt', 'edited')
    ws.fs.rmSync('/app/lib', { recursive: true })
    ws.fs.mkdirSync('/app/docs')
    ws.fs.writeFileSync('/app/docs/x.md', '# x')
    ws.fs.unlinkSync('/app/link')
    ws.fs.symlinkSync('docs/x.md', '/app/link')
    const report = await ws.flush()
    expect(report.applied).toBe(true)
    expect(report.changes.map((c) => `${c.type} ${c.path}`).sort()).toEqual([
      'added /app/docs',
      'added /app/docs/x.md',
      'deleted /app/lib',
      'deleted /app/lib/b.txt',
      'modified /app/a.txt',
      'modified /app/link',
    ])
    expect(ws.changes()).toEqual([])

    // Another tab opens the database: the flush is there.
    const other = track(await indexedDbTree(name))
    expect(decode(other.readFile('/app/a.txt'))).toBe('edited')
    expect(decode(other.readFile('/app/docs/x.md'))).toBe('# x')
    expect(other.readlink('/app/link')).toBe('docs/x.md')
    expect(other.stat('/app/lib')).toBeUndefined()

    // It changes a file this workspace wrote; the workspace's next write there is a conflict.
    await other.apply([{ path: '/app/docs/x.md', kind: 'file', mode: 0o644, mtimeMs: 0, content: text('theirs') }])
    ws.fs.writeFileSync('/app/docs/x.md', 'mine')
    await expect(ws.flush()).rejects.toMatchObject({ code: 'ECONFLICT', message: expect.stringMatching(/\/app\/docs\/x\.md/) })
    const after = track(await indexedDbTree(name))
    expect(decode(after.readFile('/app/docs/x.md'))).toBe('theirs')
    await ws.flush(undefined, { force: true })
    const forced = track(await indexedDbTree(name))
    expect(decode(forced.readFile('/app/docs/x.md'))).toBe('mine')
    await ws.close()
  })

  it('refuses index records it did not write', async () => {
    const name = unique('tree-corrupt')
    const database = new Database(name)
    await setMany([['i:/x', { type: 'socket', mode: 0, mtimeMs: 0, size: 0, version: 'v' }]], database.use)
    database.close()
    await expect(indexedDbTree(name)).rejects.toMatchObject({ code: 'EIO', path: '/x' })
  })
})
