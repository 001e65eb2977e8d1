/**
 * The directory flush target's lock across processes: writers in separate processes flush
 * read-modify-write edits of one file into one real directory at once. A flush holds the
 * directory's flush lock from its conflict check to the end of its apply, so each one either sees
 * the change another made since it read as a conflict (ECONFLICT) or applies after it; an overwrite
 * is never silent. The oracle is the file itself: every flush appends a line of its own to what it
 * read, so what it read tells which state it replaced.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { bundleChild } from './support/child-bundle.js'

const REPO = path.resolve(import.meta.dirname, '..')
const OUT = path.join(REPO, 'node_modules/.cache/rewindfs-flush-lock', String(process.pid))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-flush-lock-'))

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
  fs.rmSync(OUT, { recursive: true, force: true })
})

interface Applied {
  writer: string
  read: string
  wrote: string
  forced: boolean
}

async function race(base: string, writers: { forceChance: number }[], wanted: number) {
  const entry = path.join(OUT, 'writer.mjs')
  await bundleChild('test/flush-lock-writer.ts', entry)
  const applied: Applied[] = []
  const errors: string[] = []
  let refused = 0
  const children = writers.map(({ forceChance }, i) => {
    const config = { base, writer: `w${i}`, wanted, forceChance, seed: i * 7919 + 1 }
    const child = spawn(process.execPath, [entry, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'inherit'] })
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as Applied & { t: string; message?: string }
      if (message.t === 'applied') applied.push(message)
      else if (message.t === 'refused') refused++
      else errors.push(`${message.writer}: ${message.message}`)
    })
    return { child, closed: new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code))) }
  })
  // Each writer waits for this line, so they all start together.
  for (const { child } of children) child.stdin!.write('start\n')
  const codes = await Promise.all(children.map((c) => c.closed))
  return { applied, refused, errors, codes }
}

describe('flushing into one directory from many processes at once', () => {
  it('never loses an update silently: each flush is refused as a conflict, forced, or applied after the others', async () => {
    const base = path.join(tmp, 'base')
    fs.mkdirSync(base)
    fs.writeFileSync(path.join(base, 'log.txt'), 'original\n')
    const writers = [...Array.from({ length: 4 }, () => ({ forceChance: 0 })), ...Array.from({ length: 2 }, () => ({ forceChance: 0.3 }))]
    const { applied, refused, errors, codes } = await race(base, writers, 4)
    expect(errors).toEqual([])
    expect(codes.every((code) => code === 0)).toBe(true)
    expect(applied).toHaveLength(writers.length * 4)
    // The writers really raced: some flushes saw another's change since their read.
    expect(refused).toBeGreaterThan(0)

    const results = new Set(applied.map((a) => a.wrote))
    const final = fs.readFileSync(path.join(base, 'log.txt'), 'utf8')
    // The file holds what some flush wrote: the last one to apply, whole.
    expect(results.has(final)).toBe(true)
    const unforced = applied.filter((a) => !a.forced)
    for (const flush of unforced) {
      // An unforced flush replaced what it read: the original or what another flush wrote.
      expect(flush.read === 'original\n' || results.has(flush.read), `${flush.writer} read a state no flush wrote: ${JSON.stringify(flush.read)}`).toBe(true)
    }
    // Two unforced flushes that read the same state and both applied: the second overwrote the
    // first's line without a conflict, a lost update.
    const byRead = new Map<string, string[]>()
    for (const flush of unforced) byRead.set(flush.read, [...(byRead.get(flush.read) ?? []), flush.wrote.split('\n').at(-2)!])
    const lost = [...byRead].filter(([, lines]) => lines.length > 1).map(([read, lines]) => `${lines.join(' and ')} both replaced ${JSON.stringify(read.split('\n').at(-2))}`)
    expect(lost).toEqual([])
    // Without forced flushes in the chain, every line would be there; with them, a line is missing
    // only where a forced flush replaced a state it had not read.
    const lines = final.split('\n').filter(Boolean)
    for (const flush of unforced) {
      const line = flush.wrote.split('\n').at(-2)!
      if (!lines.includes(line)) {
        expect(applied.some((a) => a.forced), `${line} is missing although no flush was forced`).toBe(true)
      }
    }
  }, 120_000)

  it('waits for another process holding the lock, then sees what it wrote as a conflict', async () => {
    const base = path.join(tmp, 'waits')
    fs.mkdirSync(base)
    fs.writeFileSync(path.join(base, 'a.txt'), 'original\n')
    const lower = directory(base)
    const ws = await Workspace.open({ lower })
    ws.fs.readFileSync('/a.txt')
    ws.fs.writeFileSync('/a.txt', 'mine\n')
    // Another live process holds the directory's flush lock, as a flush of its own would.
    const holder = spawn('sleep', ['60'])
    fs.mkdirSync(path.join(base, '.rewindfs-flush'))
    fs.writeFileSync(path.join(base, '.rewindfs-flush/lock'), `${holder.pid}\n`)
    try {
      let settled = false
      const flushed = ws.flush().finally(() => (settled = true))
      flushed.catch(() => undefined)
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(settled, 'the flush waits for the lock').toBe(false)
      // The holder writes the file and releases the lock.
      fs.writeFileSync(path.join(base, 'a.txt'), 'theirs\n')
      fs.rmSync(path.join(base, '.rewindfs-flush/lock'))
      await expect(flushed).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [{ path: '/a.txt' }] })
      expect(fs.readFileSync(path.join(base, 'a.txt'), 'utf8')).toBe('theirs\n')
      await ws.flush(undefined, { force: true })
      expect(fs.readFileSync(path.join(base, 'a.txt'), 'utf8')).toBe('mine\n')
    } finally {
      holder.kill()
      await ws.close()
    }
  })

  it("removes the lock temps of a process killed while taking the lock, and keeps a live one's", async () => {
    const base = path.join(tmp, 'temps')
    fs.mkdirSync(path.join(base, '.rewindfs-flush'), { recursive: true })
    const dead = spawn('true')
    await new Promise((resolve) => dead.on('close', resolve))
    const live = spawn('sleep', ['60'])
    try {
      const folder = path.join(base, '.rewindfs-flush')
      for (const name of [`lock.tmp-${dead.pid}-0`, `lock.stale.tmp-${dead.pid}-1`, `lock.tmp-${live.pid}-0`]) fs.writeFileSync(path.join(folder, name), '')
      directory(base) // recovers on open
      expect(fs.readdirSync(folder)).toEqual([`lock.tmp-${live.pid}-0`])
    } finally {
      live.kill()
    }
  })

  it('work a flush section started that outlives it does not hold the lock', async () => {
    const base = path.join(tmp, 'outlives')
    fs.mkdirSync(base)
    const target = directory(base)
    let later: Promise<unknown> | undefined
    await target.exclusive(async () => {
      later = new Promise((resolve) => setTimeout(resolve, 100)).then(() => target.apply([{ path: '/late.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: new TextEncoder().encode('late') }]))
      later.catch(() => undefined)
    })
    // The section applied nothing, so it left no staging folder behind.
    expect(fs.readdirSync(base)).toEqual([])
    // Meanwhile another live process holds the lock: the late apply must not write under it.
    const holder = spawn('sleep', ['60'])
    fs.mkdirSync(path.join(base, '.rewindfs-flush'))
    fs.writeFileSync(path.join(base, '.rewindfs-flush/lock'), `${holder.pid}\n`)
    try {
      await expect(later).rejects.toMatchObject({ code: 'EBUSY' })
      expect(fs.existsSync(path.join(base, 'late.txt'))).toBe(false)
    } finally {
      holder.kill()
    }
  })
})
