/**
 * What a reopen takes for the workspace's first sighting of a project directory: the version the
 * live session saw, as the journal's 'seen' record carries it, not the one the replay finds on disk
 * when it copies the directory up again (a replayed write copies its parent up before the record of
 * that sighting comes, at the group commit). The sighting is a later change's conflict base: a
 * person who chmods a project directory the agent wrote into, before the agent chmods it too, makes
 * the flush a conflict in the live session, and so after a reopen or a compaction made from the
 * journal alone. Real project directories are the oracle; the person's changes are made with node:fs.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { type DurabilityEngine, MemoryStore, durableJournal, snapshotOfStore } from '../src/adapter-kit.js'
import type { Durability } from '../src/engine/durability.js'
import type { SnapshotEncoder } from '../src/engine/snapshot-elsewhere.js'
import { Workspace } from '../src/index.js'
import { humanProjects, open, refused, tick } from './support/human-project.js'

const project = humanProjects('replay-sightings')

/** The permission bits of the project's `name` on disk. */
const modeOf = (root: string, name: string) => fs.statSync(path.join(root, name)).mode & 0o7777

/** The agent writes a new file into the project's /d (copying /d up: its first sighting); then the person chmods /d on disk. */
async function wroteThenPersonChmods(ws: Workspace, root: string): Promise<void> {
  ws.fs.writeFileSync('/d/new.txt', 'agent\n')
  await ws.sync()
  await tick()
  fs.chmodSync(path.join(root, 'd'), 0o750)
}

/** The agent chmods /d, which it never saw since the person did: the flush refuses /d and leaves the person's mode. */
async function agentChmodRefused(ws: Workspace, root: string): Promise<void> {
  ws.fs.chmodSync('/d', 0o700)
  await refused(ws, root, ['/d'])
  expect(modeOf(root, 'd')).toBe(0o750)
}

describe('a project directory copied up by a write, chmodded on disk by a person, then by the agent', () => {
  it('is a conflict in the live session', async () => {
    const { root, store } = project({ 'd/keep.txt': 'k\n' })
    const ws = await open(root, store)
    await wroteThenPersonChmods(ws, root)
    await agentChmodRefused(ws, root)
    await ws.close()
  })

  it('is a conflict after a reopen: the sighting the journal recorded is the base, not the replay’s', async () => {
    const { root, store } = project({ 'd/keep.txt': 'k\n' })
    const ws = await open(root, store)
    await wroteThenPersonChmods(ws, root)
    await ws.close()
    const again = await open(root, store)
    await agentChmodRefused(again, root)
    await again.close()
  })

  it('is a conflict after a reopen from a snapshot a replica made from the journal alone (a compaction elsewhere)', async () => {
    const { root } = project({ 'd/keep.txt': 'k\n', 'other/': '' })
    const holder: { store?: MemoryStore } = {}
    const encoder: SnapshotEncoder = { fromChars: 0, encode: (request) => snapshotOfStore(holder.store!, request), close: () => undefined }
    const store = (holder.store = new MemoryStore())
    const engine: DurabilityEngine = { open: (host, target, options) => durableJournal.open(host, target, { ...options, snapshots: encoder }), repair: durableJournal.repair }
    Object.defineProperty(store, 'durability', { value: engine })
    const ws = await Workspace.open({ lower: directory(root), store, compactEvery: 40, autoCheckpoint: false })
    await wroteThenPersonChmods(ws, root)
    // Writes elsewhere until a compaction made by the replica (after the person's chmod: its replay finds the new mode) is written.
    const durability = (ws as unknown as { context: { durability: Durability } }).context.durability
    for (let i = 0; durability.compactions.elsewhere === 0; i++) {
      if (i === 2000) throw new Error(`no compaction elsewhere (${durability.elsewhereFailure ?? 'no failure'})`)
      ws.fs.writeFileSync(`/other/f${i % 10}.txt`, `v${i}\n`)
      if (i % 10 === 9) {
        await ws.sync()
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    }
    expect(durability.elsewhereFailure).toBeUndefined()
    await ws.close()
    // The snapshot is the journal's first record now: the reopen reads /d's sighting from it.
    const image = store.image()
    const again = await Workspace.open({ lower: directory(root), store: MemoryStore.from(image), autoCheckpoint: false })
    await agentChmodRefused(again, root)
    await again.close()
  })
})

describe('a project file read, saved on disk by a person, then chmodded by the agent', () => {
  // A replay copies up no file (a write records its content): the recorded sighting is its base already.
  it.each(['live', 'reopened'] as const)('is a conflict (%s)', async (when) => {
    const { root, store } = project({ 'd/a.txt': 'one\n' })
    let ws = await open(root, store)
    expect(ws.fs.readFileSync('/d/a.txt', 'utf8')).toBe('one\n')
    ws.fs.writeFileSync('/d/new.txt', 'agent\n')
    await ws.sync()
    await tick()
    fs.writeFileSync(path.join(root, 'd/a.txt'), 'HUMAN two\n')
    if (when === 'reopened') {
      await ws.close()
      ws = await open(root, store)
    }
    ws.fs.chmodSync('/d/a.txt', 0o600)
    await refused(ws, root, ['/d/a.txt'])
    expect(fs.readFileSync(path.join(root, 'd/a.txt'), 'utf8')).toBe('HUMAN two\n')
    await ws.close()
  })
})
