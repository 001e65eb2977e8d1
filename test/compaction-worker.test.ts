/**
 * Compactions encoded elsewhere (engine/snapshot-elsewhere.ts; a directory store's worker thread,
 * adapters/node-fs/snapshots.ts): the snapshot a replica makes from the store alone is the state
 * the workspace had at that moment, over a real project whose directories its writes copied up;
 * what it needs is never deleted as stale; a replica that cannot make it leaves the compaction to
 * the calling thread.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { type DurabilityEngine, MemoryStore, durableJournal, snapshotOfStore } from '../src/adapter-kit.js'
import type { Durability } from '../src/engine/durability.js'
import type { SnapshotEncoder } from '../src/engine/snapshot-elsewhere.js'
import { Workspace } from '../src/index.js'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-compaction-worker-'))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** The workspace's durable journal (its compaction counters). */
function durabilityOf(ws: Workspace): Durability {
  return (ws as unknown as { context: { durability: Durability } }).context.durability
}

/** A project on disk: nested directories the workspace's writes go into (copied up). */
function project(): string {
  const dir = fs.mkdtempSync(path.join(scratch, 'project-'))
  for (const sub of ['src/lib/deep', 'docs', 'assets/img']) fs.mkdirSync(path.join(dir, sub), { recursive: true })
  fs.writeFileSync(path.join(dir, 'src/lib/deep/a.ts'), 'export const a = 1\n')
  fs.writeFileSync(path.join(dir, 'docs/readme.md'), '# docs\n')
  fs.chmodSync(path.join(dir, 'docs'), 0o750)
  return dir
}

/** Everything a reopen must give back: each entry's type, mode, size, times and content, the checkpoints and the operations. */
function fingerprint(ws: Workspace): unknown {
  const entries: unknown[] = []
  const walk = (dir: string) => {
    for (const name of ws.fs.readdirSync(dir).sort()) {
      const at = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stat = ws.fs.lstatSync(at)
      const base = { at, mode: stat.mode, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino }
      if (stat.isDirectory()) {
        entries.push(base)
        walk(at)
      } else if (stat.isSymbolicLink()) entries.push({ ...base, target: ws.fs.readlinkSync(at) })
      else entries.push({ ...base, content: createHash('sha1').update(ws.fs.readFileSync(at)).digest('hex') })
    }
  }
  walk('/')
  const checkpoints = ws.checkpoints().map((c) => ({ id: c.id, name: c.name }))
  const operations = ws.history().map((op) => ({ id: op.id, type: op.type, paths: op.paths, undone: op.undone }))
  return { entries, checkpoints, operations, round: ws.state.read('round') }
}

/** The entries alone (a restore records an operation of its own). */
function entriesOf(ws: Workspace): unknown {
  return (fingerprint(ws) as { entries: unknown }).entries
}

/** Writes, renames, deletes, chmods, checkpoints, undos and session state, in the project's directories and new ones. */
async function work(ws: Workspace, round: number): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const n = round * 40 + i
    ws.fs.writeFileSync(`/src/lib/deep/f${n % 25}.ts`, `export const v = ${n}\n`.repeat(1 + (n % 5)))
    if (n % 7 === 0) ws.fs.mkdirSync(`/new/d${n}/e`, { recursive: true })
    if (n % 7 === 0) ws.fs.writeFileSync(`/new/d${n}/e/x.txt`, `x${n}`)
    if (n % 11 === 0) ws.fs.renameSync(`/src/lib/deep/f${n % 25}.ts`, `/assets/img/moved${n}.ts`)
    if (n % 13 === 0) ws.fs.rmSync(`/assets/img/moved${n - 13 * 11}.ts`, { force: true })
    if (n % 17 === 0) ws.fs.chmodSync('/docs', 0o700 + (n % 3) * 0o10)
    if (n % 19 === 0) ws.fs.symlinkSync(`../lib/deep/a.ts`, `/src/link${n}`)
  }
  await ws.checkpoint({ name: `round-${round}` })
  if (round % 3 === 2) await ws.undo({ steps: 2 })
  await ws.state.set(`round`, round)
  await ws.sync()
}

/** Runs rounds of work until `count` compactions encoded elsewhere were written (the worker answers when it has replayed: rounds go on meanwhile). */
async function untilElsewhere(ws: Workspace, count: number): Promise<void> {
  const durability = durabilityOf(ws)
  for (let round = 0; durability.compactions.elsewhere < count; round++) {
    if (round === 400) throw new Error(`${durability.compactions.elsewhere} of ${count} compactions elsewhere after ${round} rounds (${durability.elsewhereFailure ?? 'no failure'})`)
    await work(ws, round)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('a directory store compacts on its worker thread', () => {
  it('a snapshot made by the worker reopens to the state the workspace had, the project directories it copied up included', async () => {
    const lower = project()
    const store = path.join(scratch, 'store-same')
    const ws = await Workspace.open({ lower: directory(lower), store: directoryStore(store, { compactionWorker: { fromChars: 0 } }), compactEvery: 300, autoCheckpoint: false })
    await untilElsewhere(ws, 2)
    expect(durabilityOf(ws).elsewhereFailure).toBeUndefined()
    const live = fingerprint(ws)
    await ws.close()
    const reopened = await Workspace.open({ lower: directory(lower), store: directoryStore(store, { compactionWorker: false }), autoCheckpoint: false })
    expect(reopened.status.loaded?.damage).toBeUndefined()
    expect(fingerprint(reopened)).toEqual(live)
    await reopened.close()
  })

  it('keeps what its snapshots need when it deletes stale blobs: checkpoints restore and operations undo after a reopen', async () => {
    const lower = project()
    const store = path.join(scratch, 'store-gc')
    const stored = directoryStore(store, { compactionWorker: { fromChars: 0 } })
    // Counted: a run that deleted nothing would prove nothing about what the deletion keeps.
    let deleted = 0
    const deleteBlobs = stored.deleteBlobs.bind(stored)
    const ledger = () => (durabilityOf(ws) as unknown as { ledger: { active: boolean } }).ledger
    // Those deleted after a snapshot made elsewhere was written (one made here may come between, when the worker falls behind).
    stored.deleteBlobs = (ids) => ((deleted += ledger().active ? ids.length : 0), deleteBlobs(ids))
    // A short history: operations leave it, and contents only they held become stale.
    const ws = await Workspace.open({ lower: directory(lower), store: stored, compactEvery: 300, autoCheckpoint: false, retention: { operations: 100 } })
    await untilElsewhere(ws, 2)
    expect(deleted).toBeGreaterThan(0)
    // The first ones (in parts written by the earliest snapshots) and the newest.
    const all = ws.checkpoints().map((c) => c.id)
    const checkpoints = [...all.slice(0, 3), ...all.slice(-3)]
    const states: unknown[] = []
    for (const id of checkpoints) {
      await ws.restore(id)
      states.push(entriesOf(ws))
    }
    await ws.close()
    const reopened = await Workspace.open({ lower: directory(lower), store: directoryStore(store, { compactionWorker: false }), autoCheckpoint: false, retention: { operations: 100 } })
    for (const [i, id] of checkpoints.entries()) {
      await reopened.restore(id)
      expect(entriesOf(reopened)).toEqual(states[i])
    }
    // The newest operations' contents are there to take them back, each file readable after each step.
    for (let step = 0; step < 2; step++) {
      await reopened.undo({ steps: 50 })
      entriesOf(reopened)
    }
    await reopened.close()
  })
})

describe('the built package', () => {
  // From the sources the worker starts through tsx (worker/bootstrap.mjs); the package starts dist's snapshot-worker.js, which a
  // missing or renamed file would turn into compactions on the calling thread, silently.
  it.skipIf(!fs.existsSync(new URL('../dist/adapters/node-fs/snapshot-worker.js', import.meta.url)))('starts its worker from dist and writes the snapshot it made', () => {
    const store = path.join(scratch, 'store-dist')
    const script = `
      import { Workspace } from './dist/src/index.js'
      import { directoryStore } from './dist/adapters/node-fs/index.js'
      const ws = await Workspace.open({ store: directoryStore(${JSON.stringify(store)}, { compactionWorker: { fromChars: 0 } }), compactEvery: 1000, autoCheckpoint: false })
      ws.fs.mkdirSync('/t')
      const durability = ws.context.durability
      // Paced, so the worker's start does not leave it 4 x compactEvery behind (it would be dropped for one made here).
      for (let i = 0; durability.compactions.elsewhere === 0 && i < 40000; i++) {
        ws.fs.writeFileSync('/t/f' + (i % 500), 'v' + i)
        if (i % 50 === 49) { await ws.sync(); await new Promise((resolve) => setTimeout(resolve, 10)) }
      }
      // One still encoding is written by the close.
      await ws.close()
      const { compactions, elsewhereFailure } = durability
      console.log(JSON.stringify({ compactions, elsewhereFailure }))`
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' })
    const { compactions, elsewhereFailure } = JSON.parse(out.trim().split('\n').at(-1)!) as { compactions: { elsewhere: number }; elsewhereFailure?: string }
    expect(elsewhereFailure).toBeUndefined()
    expect(compactions.elsewhere).toBeGreaterThan(0)
  })
})

describe('compactions encoded elsewhere, over any store', () => {
  /** A MemoryStore whose durable journal is given `encoder`. */
  function storeWith(encoder: SnapshotEncoder): MemoryStore {
    const store = new MemoryStore()
    const engine: DurabilityEngine = { open: (host, target, options) => durableJournal.open(host, target, { ...options, snapshots: encoder }), repair: durableJournal.repair }
    Object.defineProperty(store, 'durability', { value: engine })
    return store
  }

  it('a replica made on the same thread from the store alone gives the snapshot the workspace writes', async () => {
    let asked = 0
    const holder: { store?: MemoryStore } = {}
    const encoder: SnapshotEncoder = { fromChars: 0, encode: (request) => (asked++, snapshotOfStore(holder.store!, request)), close: () => undefined }
    const store = (holder.store = storeWith(encoder))
    const lower = project()
    const ws = await Workspace.open({ lower: directory(lower), store, compactEvery: 300, autoCheckpoint: false })
    await untilElsewhere(ws, 2)
    // The first request named the project's directories its replay copied up; asked again with their stats.
    expect(asked).toBeGreaterThan(durabilityOf(ws).compactions.elsewhere)
    const live = fingerprint(ws)
    await ws.close()
    const reopened = await Workspace.open({ lower: directory(lower), store: MemoryStore.from(store.image()), autoCheckpoint: false })
    expect(fingerprint(reopened)).toEqual(live)
    await reopened.close()
  })

  it('a replica that fails leaves the compactions to this thread, nothing lost', async () => {
    const encoder: SnapshotEncoder = { fromChars: 0, encode: () => Promise.reject(new Error('no thread here')), close: () => undefined }
    const store = storeWith(encoder)
    const ws = await Workspace.open({ store, compactEvery: 50, autoCheckpoint: false })
    ws.fs.mkdirSync('/t')
    for (let i = 0; i < 400; i++) {
      ws.fs.writeFileSync(`/t/f${i % 30}`, `v${i}`)
      if (i % 20 === 19) await ws.sync()
    }
    await ws.sync()
    const durability = durabilityOf(ws)
    expect(durability.elsewhereFailure).toBe('no thread here')
    expect(durability.compactions.elsewhere).toBe(0)
    expect(durability.compactions.here).toBeGreaterThan(0)
    const live = fingerprint(ws)
    await ws.close()
    const reopened = await Workspace.open({ store: MemoryStore.from(store.image()), autoCheckpoint: false })
    expect(fingerprint(reopened)).toEqual(live)
  })
})
