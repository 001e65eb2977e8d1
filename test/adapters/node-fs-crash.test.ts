/**
 * Crash test of the directory adapter under the real engine: a child process writes, checkpoints,
 * syncs and flushes generation after generation into a directory (its own lower) with a directory
 * store, and is killed with SIGKILL at random moments. After every kill the directory, once
 * recovered, must hold exactly one flushed generation, never older than the last one the child
 * acknowledged, and the store must reopen to a committed prefix that keeps every acknowledged sync.
 * REWINDFS_CRASH_KILLS sets the number of kills (default 200), REWINDFS_SEED the random sequence,
 * REWINDFS_CRASH_FLUSH=ws makes the child flush through ws.flush instead of the target's apply.
 * The store is in the pack layout with small segments, so kills also land while a segment is sealed
 * or collected (compactions delete blobs); after every kill the pack must hold no damage.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../../adapters/node-fs/index.js'
import { Workspace } from '../../src/index.js'
import * as pack from '../support/pack-raw.js'
import { generator, randomSeed } from '../support/seed.js'

const KILLS = Number(process.env.REWINDFS_CRASH_KILLS ?? 200)
const FLUSH = process.env.REWINDFS_CRASH_FLUSH === 'apply' ? 'apply' : 'ws'
/** Kills land up to this many ms after the child is ready: a few of its rounds. */
const WINDOW = FLUSH === 'ws' ? 600 : 150
/** Small segments: a few rounds fill one, compactions leave them mostly dead, collection rewrites them. */
const SEGMENT_BYTES = 32 * 1024
const seed = randomSeed

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-node-fs-crash-`)
const child = `${scratch}/child.mjs`
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

// One bundle up front: a plain .mjs starts in a fraction of the time tsx needs, so the kills fit the budget.
beforeAll(async () => {
  await build({ entryPoints: ['test/adapters/fixtures/node-fs-crash-child.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
})

/** What the child's generation `gen` looks like on disk (files, links; directories implied). */
function generation(gen: number): Record<string, string> {
  const files: Record<string, string> = { '/gen.txt': String(gen), [`/marks/${gen}`]: String(gen) }
  for (const d of ['a', 'b', 'c/deep']) for (let i = 0; i < 4; i++) files[`/${d}/${i}.txt`] = `${gen}:${d}/${i}`
  files[`/tree-${gen}/inner/file.txt`] = String(gen)
  files[`/tree-${gen}/link`] = '-> ../gen.txt'
  return files
}

function hostFiles(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir)) {
      const stats = fs.lstatSync(`${dir}/${name}`)
      if (stats.isDirectory()) walk(`${dir}/${name}`, `${prefix}/${name}`)
      else out[`${prefix}/${name}`] = stats.isSymbolicLink() ? '-> ' + fs.readlinkSync(`${dir}/${name}`) : fs.readFileSync(`${dir}/${name}`, 'utf8')
    }
  }
  walk(root, '')
  return out
}

function workspaceFiles(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of ws.fs.readdirSync(dir) as string[]) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stats = ws.fs.lstatSync(path)
      if (stats.isDirectory()) walk(path)
      else out[path] = stats.isSymbolicLink() ? '-> ' + ws.fs.readlinkSync(path) : (ws.fs.readFileSync(path, 'utf8') as string)
    }
  }
  walk('/')
  return out
}

/** Runs the child until a random moment after it is ready, kills it, and returns what it acknowledged. */
async function runAndKill(dir: string, storeDir: string, delay: number): Promise<{ synced: number; flushed: number; output: string }> {
  const proc = spawn(process.execPath, [child, dir, storeDir, FLUSH, String(SEGMENT_BYTES)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  let errors = ''
  proc.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
  const exited = new Promise<void>((resolve) => proc.on('close', () => resolve()))
  await new Promise<void>((resolve) => {
    proc.stdout.on('data', (chunk: Buffer) => {
      const ready = !output.includes('ready\n')
      output += chunk.toString()
      if (ready && output.includes('ready\n')) setTimeout(() => proc.kill('SIGKILL'), delay)
    })
    proc.on('close', () => resolve())
  })
  await exited
  if (!output.includes('ready\n') || errors.trim() !== '') throw new Error(`the crash child failed before the kill:\n${errors}\n${output}`)
  const last = (word: string) => Math.max(0, ...[...output.matchAll(new RegExp(`^${word} (\\d+)$`, 'gm'))].map((m) => Number(m[1])))
  return { synced: last('synced'), flushed: last('flushed'), output }
}

/** One child's life after another over the same directory and store, checking after every kill. */
async function lane(name: string, kills: number, next: () => number) {
  const dir = `${scratch}/${name}-target`
  const storeDir = `${scratch}/${name}-store`
  fs.mkdirSync(dir)
  const seen = { flushedAck: 0, syncedAck: 0, interrupted: 0, highest: 0, segments: 0 }
  for (let kill = 0; kill < kills; kill++) {
    const { synced, flushed } = await runAndKill(dir, storeDir, Math.floor(next() * WINDOW))
    seen.flushedAck = Math.max(seen.flushedAck, flushed)
    seen.syncedAck = Math.max(seen.syncedAck, synced)
    const context = `${name} after kill ${kill} (seed ${seed}; acknowledged synced ${seen.syncedAck}, flushed ${seen.flushedAck})`
    if (fs.existsSync(`${dir}/.rewindfs-flush/manifest.json`)) seen.interrupted++

    // The directory: recovered on open, one whole generation, not older than the last acknowledged flush.
    directory(dir)
    const onDisk = hostFiles(dir)
    const flushedGen = onDisk['/gen.txt'] === undefined ? 0 : Number(onDisk['/gen.txt'])
    expect(onDisk, context).toEqual(flushedGen === 0 ? {} : generation(flushedGen))
    expect(flushedGen, context).toBeGreaterThanOrEqual(seen.flushedAck)

    // The store: a committed prefix holding every acknowledged sync, files and state agreeing.
    const store = directoryStore(storeDir, { segmentBytes: SEGMENT_BYTES })
    // The pack layout (no journal file, no blob files), read without damage: a kill only ever cuts a tail.
    expect(JSON.parse(fs.readFileSync(`${storeDir}/format`, 'utf8')), context).toMatchObject({ store: 'rewindfs-directory', layout: 2 })
    expect(fs.readdirSync(storeDir).filter((name) => name === 'journal' || name === 'blobs'), context).toEqual([])
    expect(store.packStats!.damaged, context).toBe(0)
    const segments = pack.segmentFiles(storeDir).map(({ segment }) => segment)
    seen.highest = Math.max(seen.highest, ...segments)
    seen.segments = segments.length
    const ws = await Workspace.open({ lower: directory(dir), store, autoCheckpoint: false, compactEvery: 60 })
    expect(ws.status.degraded, context).toBeFalsy()
    expect(ws.status.corrupt, context).toBeUndefined()
    const state = Number((await ws.state.get('gen')) ?? 0)
    expect(state, context).toBeGreaterThanOrEqual(seen.syncedAck)
    const files = workspaceFiles(ws)
    const written = files['/gen.txt'] === undefined ? 0 : Number(files['/gen.txt'])
    // The transaction commits before the state record: the files are at the state's generation or one ahead.
    expect([state, state + 1], context).toContain(written)
    expect(files, context).toEqual(written === 0 ? {} : generation(written))
    expect(flushedGen, context).toBeLessThanOrEqual(written)
    await ws.close()
  }
  return seen
}

describe('crash safety of the directory adapter under SIGKILL', () => {
  it(`keeps one whole flushed generation and every acknowledged sync across ${KILLS} kills (seed ${seed})`, async () => {
    console.log(`[rewindfs] node-fs crash test: ${KILLS} kills, flushes through ${FLUSH}, seed ${seed} (replay with REWINDFS_SEED=${seed})`)
    const { next } = generator(seed)
    // Two independent lanes (own directory and store) share the time: a child mostly waits on fsync.
    const lanes = await Promise.all([lane('one', Math.ceil(KILLS / 2), next), lane('two', Math.floor(KILLS / 2), next)])
    for (const [i, seen] of lanes.entries()) {
      console.log(`[rewindfs] node-fs crash lane ${i + 1}: generation ${seen.syncedAck} synced / ${seen.flushedAck} flushed; ${seen.interrupted} kills interrupted a flush; pack segments up to ${seen.highest}, ${seen.segments} left`)
      // The child gets somewhere, and the kills land inside flushes, not only around them.
      expect(seen.flushedAck).toBeGreaterThan(0)
      if (KILLS >= 100) expect(seen.interrupted).toBeGreaterThan(0)
      // Segments were sealed and collected under the kills (a collected segment's number is not reused).
      if (KILLS >= 100) expect(seen.highest).toBeGreaterThan(seen.segments)
    }
  }, 600_000)
})
