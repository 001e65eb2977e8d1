/**
 * How the directory store waits for a group commit's fdatasync (pack-sync.ts): on the calling
 * thread while the disk answers within the budget, in libuv's thread pool after an overrun (for
 * twice as many syncs each time it happens again), for large commits, and always when the budget
 * is 0. The policy by its decisions; the store by its counters, with budgets no disk misses or
 * meets by chance.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import { BLOCKING_SYNC_BYTES, DEFAULT_BLOCKING_SYNC_MS, SyncPolicy } from '../../adapters/node-fs/pack-sync.js'
import { Workspace } from '../../src/index.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-pack-sync-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0
const fresh = () => `${scratch}/s${serial++}`

/** The next `count` decisions for commits of `bytes`, each blocking one taking `ms`. */
function decisions(policy: SyncPolicy, count: number, ms: number, bytes = 1000): boolean[] {
  const out: boolean[] = []
  for (let i = 0; i < count; i++) {
    const blocking = policy.blocking(bytes)
    out.push(blocking)
    if (blocking) policy.took(ms)
  }
  return out
}

describe('sync policy', () => {
  it('blocks while the disk answers within the budget', () => {
    expect(decisions(new SyncPolicy(2), 50, 1.5)).toEqual(Array(50).fill(true))
    expect(DEFAULT_BLOCKING_SYNC_MS).toBeGreaterThan(0)
  })

  it('after an overrun sends the next syncs to the pool, twice as many each time it happens again, and blocks again once the disk is back within budget', () => {
    const policy = new SyncPolicy(2)
    // Overruns: 1 sync in the pool, then 2, then 4.
    const slow = decisions(policy, 1 + 1 + 1 + 2 + 1 + 4, 5)
    expect(slow).toEqual([true, false, true, false, false, true, false, false, false, false])
    // Within budget: the backoff starts over.
    expect(decisions(policy, 1, 1)).toEqual([true])
    expect(decisions(policy, 3, 5)).toEqual([true, false, true])
  })

  it('caps the backoff: a disk slow for good is tried again every 257th sync', () => {
    const runs: number[] = []
    let run = 0
    for (const blocking of decisions(new SyncPolicy(2), 5000, 10)) {
      if (!blocking) run++
      else if (run > 0) {
        runs.push(run)
        run = 0
      }
    }
    expect(runs.slice(0, 10)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 256])
    expect(Math.max(...runs)).toBe(256)
  })

  it('sends a commit past the byte limit to the pool without counting it as an overrun', () => {
    const policy = new SyncPolicy(2)
    expect(policy.blocking(BLOCKING_SYNC_BYTES + 1)).toBe(false)
    expect(policy.blocking(BLOCKING_SYNC_BYTES)).toBe(true)
  })

  it('never blocks with a budget of 0', () => {
    expect(decisions(new SyncPolicy(0), 20, 0)).toEqual(Array(20).fill(false))
  })
})

describe('directory store: where a group commit waits for its fdatasync', () => {
  async function commits(options: { blockingSyncMs?: number }): Promise<{ fdatasyncs: number; blockingSyncs: number }> {
    const path = fresh()
    const store = directoryStore(path, options)
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    // The first write starts a segment and preallocates its zeros (more than the byte limit).
    ws.fs.writeFileSync('/first', 'x')
    await ws.sync()
    const before = store.packStats!
    for (let i = 0; i < 10; i++) {
      ws.fs.writeFileSync(`/f${i}`, `content ${i}`)
      await ws.sync()
    }
    // A commit past the byte limit.
    ws.fs.writeFileSync('/large', new Uint8Array(BLOCKING_SYNC_BYTES + 4096).fill(7))
    await ws.sync()
    const after = store.packStats!
    await ws.close()
    // Everything acknowledged is there, whichever way it was waited for.
    const again = await Workspace.open({ store: directoryStore(path), autoCheckpoint: false })
    expect(again.fs.readFileSync('/f9', 'utf8')).toBe('content 9')
    expect((again.fs.readFileSync('/large') as Uint8Array).length).toBe(BLOCKING_SYNC_BYTES + 4096)
    await again.close()
    return { fdatasyncs: after.fdatasyncs - before.fdatasyncs, blockingSyncs: after.blockingSyncs - before.blockingSyncs }
  }

  it('blocks for small commits within a budget no disk misses, and sends a large one to the pool', async () => {
    const { fdatasyncs, blockingSyncs } = await commits({ blockingSyncMs: 60_000 })
    expect(fdatasyncs).toBe(11)
    expect(blockingSyncs).toBe(10)
  })

  it('never blocks with blockingSyncMs: 0', async () => {
    const { fdatasyncs, blockingSyncs } = await commits({ blockingSyncMs: 0 })
    expect(fdatasyncs).toBe(11)
    expect(blockingSyncs).toBe(0)
  })

  it('refuses a budget that is not a finite number of milliseconds, 0 or more', () => {
    for (const blockingSyncMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '2' as unknown as number]) {
      expect(() => directoryStore(fresh(), { blockingSyncMs })).toThrow(/blockingSyncMs must be a finite number/)
    }
  })
})
