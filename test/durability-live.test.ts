/**
 * A live workspace on a directory store under a long random run (shared/repros/child.js): every
 * `sync()` settles, even with a compaction every few records overlapping restores and undos, and
 * every file reads back after every step.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { generator, seeds } from './support/seed.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true })
})

/** Reads every file of the view (the read that failed with EIO when a cycle swept live content). */
function readAll(ws: Workspace, dir = '/'): number {
  let files = 0
  for (const entry of ws.fs.readdirSync(dir, { withFileTypes: true })) {
    const path = dir === '/' ? `/${entry.name}` : `${dir}/${entry.name}`
    if (entry.isDirectory()) files += readAll(ws, path)
    else if (entry.isFile()) {
      ws.fs.readFileSync(path)
      files++
    }
  }
  return files
}

/** Rejects if `promise` has not settled after `ms`: a hang must fail the test, not time it out silently. */
function settles<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never settled`)), ms)
  })
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer))
}

async function run(seed: number, steps: number): Promise<void> {
  const root = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-live-`)
  roots.push(root)
  const random = generator(seed)
  const ws = await Workspace.open({ store: directoryStore(root), compactEvery: 15 })
  const names = ['a', 'b', 'c', 'd']
  const files = () => ws.fs.readdirSync('/', { recursive: true }).map((p) => `/${p}`).filter((p) => ws.fs.lstatSync(p).isFile())
  for (let step = 1; step <= steps; step++) {
    const r = random.next()
    try {
      if (r < 0.4) {
        const existing = files()
        const target = existing.length > 0 && random.next() < 0.5 ? random.pick(existing) : `/${random.pick(names)}${random.below(4)}`
        // Large enough that overwrites become reverse-delta candidates and allocations start collections.
        ws.fs.writeFileSync(target, random.next() < 0.3 ? new Uint8Array(256 * 1024 + random.below(1 << 20)).fill(random.below(256)) : `v${step}\n`.repeat(1 + random.below(2000)))
      } else if (r < 0.5) ws.fs.mkdirSync(`/d${random.pick(names)}`, { recursive: true })
      else if (r < 0.6) {
        const existing = files()
        if (existing.length > 0) ws.fs.rmSync(random.pick(existing))
      } else if (r < 0.7) await ws.checkpoint({ name: `c${step}` })
      else if (r < 0.82) await ws.undo()
      else if (r < 0.94) {
        const checkpoints = ws.checkpoints()
        if (checkpoints.length > 0) await ws.restore(random.pick(checkpoints).id)
      } else await ws.redo()
    } catch (error) {
      const code = (error as { code?: string }).code
      // Expected refusals of a random run (nothing to redo into, a name taken); anything else is a defect.
      if (!['EEXIST', 'ENOENT', 'EDEPENDENT', 'EEFFECT', 'ENOTDIR', 'EISDIR'].includes(code ?? '')) throw error
    }
    readAll(ws)
    if (step % 3 === 0) await settles(ws.sync(), `sync() after step ${step} (seed ${seed})`)
  }
  await ws.close()
}

describe('a live workspace on a directory store', () => {
  it('settles every sync() and reads every file back, with a compaction every 15 records', async () => {
    // The two seeds of shared/repros/child.js, then a random one (printed; replay with REWINDFS_SEED).
    for (const seed of seeds([1240551506, 560961403])) await run(seed, 400)
  }, 240_000)
})
