/**
 * A lock whose holder was SIGKILLed while its parent has not reaped it yet: the dead process is a
 * zombie, which kill(pid, 0) still finds, so an opener took the lock for held and a restart right
 * after a crash got EBUSY until the parent waited. The holder here is a real process whose parent
 * (a shell exec'd into `sleep`) never waits for it, so it stays a zombie for as long as the test
 * needs: no race, nothing timed.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { LockFile, isAlive } from '../src/node/lock-file.js'
import { bundleChild } from './support/child-bundle.js'
import { until } from './support/processes.js'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lock-reap-'))
const started: ChildProcess[] = []
const holders: number[] = []
afterAll(() => {
  // A holder a failed test did not kill would outlive its parent. Holders first: while their
  // parents live, a killed one stays a zombie, so its pid is no one else's yet.
  for (const pid of holders) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Killed by its test already.
    }
  }
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  fs.rmSync(tmp, { recursive: true, force: true })
})

/**
 * The holder: takes the lock at its argument as a directory store takes its own (`<store>/lock`,
 * with predecessors), says its pid, and waits.
 */
const HOLDER = `
import { LockFile } from ${JSON.stringify(path.resolve(import.meta.dirname, '../src/node/lock-file.ts'))}
if (!('lock' in LockFile.tryAcquire(process.argv[2], { predecessors: true }))) throw new Error('the lock is held')
console.log(process.pid)
setInterval(() => {}, 60_000)
`

/** A holder of the lock at `file` under a parent that never reaps it; resolves to the holder's pid once it holds the lock. */
async function holder(file: string): Promise<number> {
  const bundled = path.join(tmp, 'holder.mjs')
  if (!fs.existsSync(bundled)) {
    const source = path.join(tmp, 'holder.ts')
    fs.writeFileSync(source, HOLDER)
    await bundleChild(path.relative(path.resolve(import.meta.dirname, '..'), source), bundled)
  }
  // exec: the shell becomes `sleep`, the holder's parent, which never calls wait().
  const parent = spawn('sh', ['-c', '"$0" "$1" "$2" & exec sleep 600', process.execPath, bundled, file], { stdio: ['ignore', 'pipe', 'inherit'] })
  started.push(parent)
  const pid = await new Promise<number>((resolve, reject) => {
    let out = ''
    parent.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('\n')) resolve(Number(out.trim()))
    })
    parent.once('exit', () => reject(new Error('the holder’s parent ended')))
  })
  holders.push(pid)
  return pid
}

/** The state /proc/<pid>/stat shows (Linux), after the command name. */
function state(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

/** SIGKILLs `pid` and waits until it is a zombie (its parent does not reap it). */
async function killIntoZombie(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL')
  expect(await until(() => state(pid) === 'Z', 30_000)).toBe(true)
  // What the lock used to ask: the zombie still "exists".
  expect(() => process.kill(pid, 0)).not.toThrow()
}

describe.skipIf(!fs.existsSync('/proc/self/stat'))('a lock whose holder was killed and not yet reaped', () => {
  it('is taken over: the dead holder is no longer alive', async () => {
    const file = path.join(tmp, 'bare.lock')
    const pid = await holder(file)
    expect(LockFile.tryAcquire(file, { predecessors: true })).toEqual({ owner: { pid, started: expect.any(String) } })
    await killIntoZombie(pid)
    expect(isAlive(pid)).toBe(false)
    const after = LockFile.tryAcquire(file, { predecessors: true })
    expect('lock' in after).toBe(true)
    if ('lock' in after) after.lock.release()
    // A live process is still alive (the holder's parent, and this one).
    expect(isAlive(started.at(-1)!.pid!)).toBe(true)
    expect(isAlive(process.pid)).toBe(true)
  })

  it('a directory store whose writer was SIGKILLed opens at once, before the writer is reaped', async () => {
    const store = path.join(tmp, 'store')
    const first = await Workspace.open({ store: directoryStore(store) })
    first.fs.writeFileSync('/a', 'kept')
    await first.sync()
    await first.close()
    const pid = await holder(path.join(store, 'lock'))
    expect(() => directoryStore(store)).toThrow(expect.objectContaining({ code: 'EBUSY' }))
    await killIntoZombie(pid)
    const again = await Workspace.open({ store: directoryStore(store) })
    expect(again.fs.readFileSync('/a', 'utf8')).toBe('kept')
    await again.close()
  })
})
