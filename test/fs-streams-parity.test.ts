/**
 * Streams and FileHandle run on a real Linux directory with node:fs and on a workspace, beside
 * streams.test.ts: the outcome must be the same. Each case was a divergence a probe found.
 */
import { describe, it } from 'vitest'
import { type At, type Fs, fsOracle } from './support/fs-oracle.js'

function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/dir'))
  fs.writeFileSync(at('/f'), 'abcdefghijklmnopqrstuvwxyz')
}

const { same } = fsOracle('rewindfs-streams-parity-', seed)

describe('FileHandle.readableWebStream', () => {
  // It read through the closed descriptor: the next read rejected with ERR_OUT_OF_RANGE (fd -1).
  it('ends (done) when the handle closes under it, as Node cancels it', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const reader = handle.readableWebStream({ type: 'bytes' }).getReader()
      const first = await reader.read()
      await handle.close()
      return [Buffer.from(first.value as Uint8Array).toString(), await reader.read(), handle.fd]
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const reader = handle.readableWebStream().getReader()
      await handle.close()
      return [await reader.read(), await reader.read()]
    })
  })
})

describe('FileHandle.writeFile and appendFile', () => {
  // They waited a turn before writing: a close called right after them made them reject with
  // EBADF 'file closed' and write nothing, and an abort right after the call rejected, where
  // Node had written already.
  it('write at the call: a close or an abort right after it does not stop them', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/o'), 'w')
      const writing = handle.writeFile('hello')
      const closing = handle.close()
      return [await writing, await closing, fs.readFileSync(at('/o'), 'utf8')]
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'a')
      const abort = new AbortController()
      const appending = handle.appendFile('hello', { signal: abort.signal })
      abort.abort()
      const result = await appending
      await handle.close()
      return [result, fs.readFileSync(at('/f'), 'utf8')]
    })
  })

  // It wrote nothing: with a signal, Node writes 512 KiB at a time and checks it between them.
  it('with a signal, an abort after the call leaves the first 512 KiB written and rejects', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/o'), 'w')
      const abort = new AbortController()
      const writing = handle.writeFile('x'.repeat(1_200_000), { signal: abort.signal })
      abort.abort()
      const result = await writing.catch((error: unknown) => error)
      await handle.close()
      return [result, fs.statSync(at('/o')).size]
    })
  })
})
