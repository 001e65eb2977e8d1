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
