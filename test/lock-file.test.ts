/**
 * rewindfs/adapter-kit/node's LockFile with `predecessors` (the PGlite data-directory lock): a lock
 * naming this pid that this thread does not hold was a predecessor's (a container restarted with
 * the same pid) and is taken over, but one another worker thread of this process holds is held:
 * taken over, two PGlites would write one directory.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { LockFile } from '../src/node/lock-file.js'
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
