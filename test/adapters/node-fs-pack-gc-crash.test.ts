/**
 * Crash test of pack garbage collection: a child process stores and deletes blobs round after
 * round over a directory store with small segments, so collections run all the time, and is
 * killed with SIGKILL at random moments — half of them just after it starts a deletion, inside the
 * collection that follows. After every kill the store must open with every acknowledged blob
 * reading back exactly, every acknowledged deletion gone, no damage, and only torn tails kept
 * aside. REWINDFS_GC_KILLS sets the number of kills (default 30), REWINDFS_SEED the sequence.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import * as pack from '../support/pack-raw.js'
import { generator, randomSeed } from '../support/seed.js'
import { type GcState, blobContent, kept, roundIds } from './fixtures/node-fs-pack-gc-rounds.js'

const KILLS = Number(process.env.REWINDFS_GC_KILLS ?? 30)
const seed = randomSeed

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-pack-gc-crash-`)
const child = `${scratch}/child.mjs`
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

beforeAll(async () => {
  await build({ entryPoints: ['test/adapters/fixtures/node-fs-pack-gc-child.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
})

/** Runs the child and kills it `delay` ms after it is ready, or after its first deletion when `inCollection`. */
async function runAndKill(storeDir: string, delay: number, inCollection: boolean): Promise<void> {
  const proc = spawn(process.execPath, [child, storeDir], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  let errors = ''
  let armed = false
  proc.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
  proc.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    if (!armed && (inCollection ? /deleting \d+\n/.test(output) : output.includes('ready\n'))) {
      armed = true
      setTimeout(() => proc.kill('SIGKILL'), delay)
    }
  })
  await new Promise<void>((resolve) => proc.on('close', () => resolve()))
  if (!output.includes('ready\n') || errors.trim() !== '') throw new Error(`the child failed before the kill:\n${errors}\n${output}`)
}

describe('crash safety of pack garbage collection under SIGKILL', () => {
  it(`keeps every acknowledged blob and deletion across ${KILLS} kills (seed ${seed})`, async () => {
    console.log(`[rewindfs] pack collection crash test: ${KILLS} kills, seed ${seed} (replay with REWINDFS_SEED=${seed})`)
    const { next } = generator(seed)
    const storeDir = `${scratch}/store`
    let interrupted = 0
    let rounds = 0
    for (let kill = 0; kill < KILLS; kill++) {
      const inCollection = kill % 2 === 1
      await runAndKill(storeDir, Math.floor(next() * (inCollection ? 15 : 250)), inCollection)
      const context = `after kill ${kill} (seed ${seed})`
      // A collection the kill interrupted leaves a blob twice (copied, the old segment not removed yet).
      if ([...pack.blobCopies(storeDir).values()].some((copies) => copies > 1)) interrupted++

      const store = directoryStore(storeDir)
      try {
        const journal = await store.readJournal()
        expect(journal.torn, context).toBeUndefined()
        expect(journal.records.length, context).toBeLessThanOrEqual(1)
        const state: GcState = journal.records.length > 0 ? JSON.parse(journal.records[0]) : { round: 0, deleted: 0 }
        rounds = state.round
        const ids = new Set(await store.blobIds())
        expect([...ids].filter((id) => id.startsWith('pack-damage:')), context).toEqual([])
        for (let round = 1; round <= state.round + 1; round++) {
          for (const id of roundIds(round)) {
            // Stored and acknowledged (the deletion of the last round has not started), deleted and
            // acknowledged, or either (a deletion or a store in flight when a kill came).
            const present = round <= state.round && (kept(id) || round === state.round)
            const absent = round <= state.deleted && !kept(id)
            const name = `${context}: ${id} of round ${round} (state ${JSON.stringify(state)})`
            if (present) expect(ids.has(id), name).toBe(true)
            if (absent) expect(ids.has(id), name).toBe(false)
            // Whatever is there reads back exactly: never other bytes, never EIO.
            if (ids.has(id)) expect(Buffer.from((await store.getBlob(id))!).equals(Buffer.from(blobContent(id))), name).toBe(true)
          }
        }
        expect((await store.keptAside()).filter((name) => !name.startsWith('pack.torn-')), context).toEqual([])
      } finally {
        await store.close()
      }
    }
    console.log(`[rewindfs] pack collection crash test: ${rounds} rounds, ${interrupted} kills found a collection half done (a blob copied, its old segment not removed yet)`)
    expect(rounds).toBeGreaterThan(5)
    if (KILLS >= 20) expect(interrupted).toBeGreaterThan(0)
    // Collection keeps up: the segments hold little beyond what is live.
    const liveBytes = [...pack.blobRecords(storeDir).values()].reduce((sum, record) => sum + record.bytes.length, 0)
    const packBytes = pack.segmentFiles(storeDir).reduce((sum, { file }) => sum + fs.statSync(file).size, 0)
    expect(packBytes).toBeLessThan(3 * liveBytes + 4 * 16 * 1024)
  }, 600_000)
})
