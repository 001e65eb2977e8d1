/**
 * PGlite on a data directory serves one process: a second PGlite on the same files (another
 * process, or a second store in this one) wrote them behind the first one's back and commits both
 * had acknowledged were lost. The second opener now gets EBUSY naming the holder, a reader too (a
 * PGlite that only reads still runs a server on the files), and a holder killed with SIGKILL leaves
 * a stale lock the next opener takes over. Needs no server: PGlite runs in the test's process.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { afterAll, describe, expect, it } from 'vitest'
import { pgliteFleet, pgliteStore } from '../adapters/postgres/index.js'
import { Workspace } from '../src/index.js'
import { bundleChild } from './support/child-bundle.js'

const REPO = path.resolve(import.meta.dirname, '..')
const OUT = path.join(REPO, 'node_modules/.cache/rewindfs-pglite-lock', String(process.pid))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pglite-lock-'))

afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
  fs.rmSync(OUT, { recursive: true, force: true })
})

/** A process that opens a session of the data directory for writing, says 'ready' and writes until killed. */
async function holder(dataDir: string): Promise<{ child: ChildProcess; ready: Promise<void>; acknowledged: () => number }> {
  fs.mkdirSync(OUT, { recursive: true })
  const source = path.join(OUT, 'holder.ts')
  fs.writeFileSync(
    source,
    `import { pgliteStore } from ${JSON.stringify(path.join(REPO, 'adapters/postgres/index.ts'))}
import { Workspace } from ${JSON.stringify(path.join(REPO, 'src/index.ts'))}
const store = await pgliteStore({ dataDir: process.argv[2], session: 'held' })
const ws = await Workspace.open({ store, autoCheckpoint: false })
console.log('ready')
for (let i = 0; ; i++) {
  ws.fs.writeFileSync('/file-' + (i % 50) + '.txt', 'write ' + i)
  await ws.sync()
  console.log('ack ' + i)
}
`,
  )
  const entry = path.join(OUT, 'holder.mjs')
  await bundleChild(path.relative(REPO, source), entry)
  const child = spawn(process.execPath, [entry, dataDir], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] })
  let acknowledged = -1
  const ready = new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve()
      else if (line.startsWith('ack ')) acknowledged = Number(line.slice(4))
    })
    child.on('exit', (code) => reject(new Error(`the holder exited (${code}) before it was ready`)))
  })
  return { child, ready, acknowledged: () => acknowledged }
}

describe('PGlite data directory: one process at a time', () => {
  it('a second process gets EBUSY (writer, reader and fleet) while one holds it, and takes it over once that one is killed', async () => {
    const dataDir = path.join(tmp, 'shared')
    const { child, ready, acknowledged } = await holder(dataDir)
    try {
      await ready
      for (const open of [
        () => pgliteStore({ dataDir, session: 'held' }),
        () => pgliteStore({ dataDir, session: 'other' }),
        () => pgliteStore({ dataDir, session: 'held', readOnly: true }),
        () => pgliteFleet({ dataDir }),
      ]) {
        const error = await open().then(
          (opened) => opened.close().then(() => undefined),
          (caught: unknown) => caught,
        )
        expect(error).toMatchObject({ code: 'EBUSY', syscall: 'open', path: path.resolve(dataDir) })
        expect((error as Error).message).toContain(`process ${child.pid}`)
      }
      // It keeps writing while the others are refused.
      await expect.poll(acknowledged, { timeout: 30_000 }).toBeGreaterThan(60)
    } finally {
      child.kill('SIGKILL')
      await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.on('exit', resolve)))
    }
    // Its lock is stale now: taken over, and everything it acknowledged is there.
    const last = acknowledged()
    const store = await pgliteStore({ dataDir, session: 'held' })
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    expect(ws.fs.readdirSync('/').length).toBe(50)
    expect(ws.fs.readFileSync(`/file-${last % 50}.txt`, 'utf8')).toBe(`write ${last}`)
    await ws.close()
  }, 120_000)

  it('a second store or fleet on the same directory in this process gets EBUSY until the first closes', async () => {
    const dataDir = path.join(tmp, 'in-process')
    const first = await pgliteStore({ dataDir, session: 'a' })
    await expect(pgliteStore({ dataDir, session: 'b' })).rejects.toMatchObject({ code: 'EBUSY', message: expect.stringContaining('this process') })
    await expect(pgliteFleet({ dataDir })).rejects.toMatchObject({ code: 'EBUSY' })
    await first.close()
    const fleet = await pgliteFleet({ dataDir })
    expect((await fleet.sessions()).map((s) => s.session)).toEqual(['a'])
    await fleet.close()
    expect(fs.existsSync(path.join(dataDir, 'rewindfs.lock'))).toBe(false)
  }, 60_000)

  it('a data directory that is a file is ENOTDIR', async () => {
    const file = path.join(tmp, 'a-file')
    fs.writeFileSync(file, 'not a database')
    await expect(pgliteStore({ dataDir: file, session: 'a' })).rejects.toMatchObject({ code: 'ENOTDIR', syscall: 'open', path: file })
    expect(fs.readFileSync(file, 'utf8')).toBe('not a database')
  })

  it('a lock taken on another machine or container (a shared volume) is EBUSY naming it, though its pid is not alive here; one of this host whose process is gone is taken over', async () => {
    const dataDir = path.join(tmp, 'shared-volume')
    fs.mkdirSync(dataDir)
    const dead = 2 ** 22 + 12_345 // above Linux's pid_max default: no such process here
    fs.writeFileSync(path.join(dataDir, 'rewindfs.lock'), `${dead}\nanother-container\n`)
    await expect(pgliteStore({ dataDir, session: 'a' })).rejects.toMatchObject({ code: 'EBUSY', message: expect.stringContaining(`process ${dead} on another-container`) })
    fs.writeFileSync(path.join(dataDir, 'rewindfs.lock'), `${dead}\n${os.hostname()}\n`)
    const store = await pgliteStore({ dataDir, session: 'a' })
    // Its pid, host and when it started (which tells this process's threads from a predecessor with its pid).
    expect(fs.readFileSync(path.join(dataDir, 'rewindfs.lock'), 'utf8')).toMatch(new RegExp(`^${process.pid}\\n${os.hostname()}\\n\\d+\\n$`))
    await store.close()
  }, 60_000)

  it('a lock file naming this process that this process does not hold (a predecessor with the same pid) is stale', async () => {
    const dataDir = path.join(tmp, 'same-pid')
    fs.mkdirSync(dataDir)
    fs.writeFileSync(path.join(dataDir, 'rewindfs.lock'), `${process.pid}\n`)
    const store = await pgliteStore({ dataDir, session: 'a' })
    await store.close()
  }, 60_000)
})
