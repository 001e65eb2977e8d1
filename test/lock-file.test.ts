/**
 * rewindfs/adapter-kit/node's LockFile with `predecessors` (the PGlite data-directory lock): a lock
 * naming this pid that this thread does not hold was a predecessor's (a container restarted with
 * the same pid) and is taken over, but one another worker thread of this process holds is held:
 * taken over, two PGlites would write one directory. The directory store's lock and a project
 * directory's flush lock are such locks too: a container restarted gives its writer the pid its
 * predecessor had (1), and a lock that predecessor left must not keep the store or flushes refused.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { LockFile } from '../src/node/lock-file.js'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { bundleChild } from './support/child-bundle.js'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-lock-file-'))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** What tryAcquire answers in a worker thread of this process, for `file`. */
async function inAnotherThread(file: string): Promise<{ took: boolean; owner?: unknown }> {
  const source = path.join(tmp, 'try-lock.ts')
  fs.writeFileSync(
    source,
    `import { parentPort, workerData } from 'node:worker_threads'
import { LockFile } from ${JSON.stringify(path.resolve(import.meta.dirname, '../src/node/lock-file.ts'))}
const answer = LockFile.tryAcquire(workerData, { host: 'here', predecessors: true })
if ('lock' in answer) answer.lock.release()
parentPort.postMessage('lock' in answer ? { took: true } : { took: false, owner: answer.owner })`,
  )
  const bundled = path.join(tmp, 'try-lock.mjs')
  await bundleChild(path.relative(path.resolve(import.meta.dirname, '..'), source), bundled)
  const worker = new Worker(bundled, { workerData: file })
  try {
    return await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
  } finally {
    await worker.terminate()
  }
}

describe('a lock file with predecessors', () => {
  it('held by this thread is held for another worker thread of the process, which gets its owner', async () => {
    const file = path.join(tmp, 'held.lock')
    const answer = LockFile.tryAcquire(file, { host: 'here', predecessors: true })
    expect('lock' in answer).toBe(true)
    const other = await inAnotherThread(file)
    expect(other).toMatchObject({ took: false, owner: { pid: process.pid, host: 'here' } })
    // Still ours, and released by us.
    expect(fs.readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid))
    if ('lock' in answer) answer.lock.release()
    expect(fs.existsSync(file)).toBe(false)
    expect(await inAnotherThread(file)).toEqual({ took: true })
  })

  it('naming this pid and another start (or none: an older rewindfs) is a predecessor\'s, taken over', async () => {
    for (const content of [`${process.pid}\nhere\n1\n`, `${process.pid}\nhere\n`]) {
      const file = path.join(tmp, 'predecessor.lock')
      fs.writeFileSync(file, content)
      const answer = LockFile.tryAcquire(file, { host: 'here', predecessors: true })
      expect('lock' in answer, content).toBe(true)
      if ('lock' in answer) answer.lock.release()
    }
  })
})

describe('a lock on a full disk', () => {
  it('fails with the disk’s error and leaves no temp file behind', () => {
    const dir = path.join(tmp, 'full')
    fs.mkdirSync(dir)
    // As node:fs does on a full disk: the file is made ('wx'), then its write fails.
    const full = {
      ...fs,
      writeFileSync: (file: fs.PathOrFileDescriptor, _data: string, options: { flag: string }) => {
        fs.closeSync(fs.openSync(file as string, options.flag))
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      },
    } as unknown as typeof fs
    expect(() => LockFile.tryAcquire(path.join(dir, 'lock'), { fs: full, predecessors: true })).toThrow(expect.objectContaining({ code: 'ENOSPC' }))
    expect(fs.readdirSync(dir)).toEqual([])
  })
})

describe('locks a restarted container finds with its own pid', () => {
  it('the directory store’s lock is taken over; one this process holds is still EBUSY', async () => {
    const store = path.join(tmp, 'store')
    const first = await Workspace.open({ store: directoryStore(store) })
    first.fs.writeFileSync('/a', 'acknowledged')
    await first.sync()
    expect(() => directoryStore(store)).toThrow(expect.objectContaining({ code: 'EBUSY', message: expect.stringContaining('this process') }))
    await first.close()
    // What a killed predecessor with this pid leaves (an older rewindfs wrote the pid alone).
    for (const content of [`${process.pid}\n\n1\n`, `${process.pid}\n`]) {
      fs.writeFileSync(path.join(store, 'lock'), content)
      const again = await Workspace.open({ store: directoryStore(store) })
      expect(again.fs.readFileSync('/a', 'utf8')).toBe('acknowledged')
      await again.close()
    }
  })

  it('a project directory’s flush lock is taken over', async () => {
    const project = path.join(tmp, 'project')
    fs.mkdirSync(path.join(project, '.rewindfs-flush'), { recursive: true })
    fs.writeFileSync(path.join(project, '.rewindfs-flush', 'lock'), `${process.pid}\n\n1\n`)
    const ws = await Workspace.open({ lower: directory(project) })
    ws.fs.writeFileSync('/a.txt', 'flushed\n')
    expect((await ws.flush()).applied).toBe(true)
    expect(fs.readFileSync(path.join(project, 'a.txt'), 'utf8')).toBe('flushed\n')
    await ws.close()
  })
})
