/**
 * Streams and FileHandle run on a real Linux directory with node:fs and on a workspace, beside
 * streams.test.ts: the outcome must be the same. Each case was a divergence a probe found.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
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

  // It made a stream over a handle whose close() waited for a readFile, closed under it at once.
  it('is refused while the handle is closing, as Node refuses it', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const reading = handle.readFile('utf8')
      const closing = handle.close()
      let made: unknown
      try {
        handle.readableWebStream()
        made = 'made'
      } catch (error) {
        made = error
      }
      return [made, await reading, await closing]
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

describe('FileHandle.close while a call is in progress', () => {
  // close() closed the descriptor at once: the readFile or writeFile under way rejected with
  // EBADF 'file closed' (and wrote nothing), where Node's close waits for the calls in progress.
  it('waits for readFile and writeFile, as `try { return handle.readFile() } finally { await handle.close() }` needs', async () => {
    await same(async (fs, at) => {
      const read = async () => {
        const handle = await fs.promises.open(at('/f'), 'r')
        try {
          return handle.readFile('utf8')
        } finally {
          await handle.close()
        }
      }
      return read()
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const events: unknown[] = []
      // A FileHandle is an EventEmitter, as Node's is (its types leave that out).
      ;(handle as unknown as NodeJS.EventEmitter).on('close', () => events.push(['close emitted', handle.fd === -1]))
      const reading = handle.readFile({ encoding: 'utf8', signal: new AbortController().signal }).then((text) => events.push(['read', text]))
      const closing = handle.close().then(() => events.push(['closed', handle.fd]))
      events.push(['after close()', handle.fd === -1])
      await Promise.all([reading, closing])
      return [events, await handle.close()]
    })
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/o'), 'w')
      // Node takes an iterable of chunks (its types leave that out).
      const writing = handle.writeFile(['a', 'b'] as unknown as string)
      const closing = handle.close()
      return [await writing, await closing, fs.readFileSync(at('/o'), 'utf8')]
    })
  })

  // The workspace's own close does not wait: a call that never ends would hold it open forever.
  it('the workspace closing closes the handle at once, calls in progress or not', async () => {
    const ws = await Workspace.open()
    const handle = await ws.fs.promises.open('/o', 'w')
    const never = (async function* () {
      yield 'a'
      await new Promise(() => undefined)
    })()
    void handle.writeFile(never as unknown as string)
    let closeEmitted = 0
    ;(handle as unknown as { on(event: string, listener: () => void): void }).on('close', () => closeEmitted++)
    // The owner's close waits for the write, which never ends; the workspace's does not.
    const waiting = handle.close()
    expect(handle.fd).not.toBe(-1)
    await ws.close()
    expect([handle.fd, closeEmitted]).toEqual([-1, 1])
    await expect(waiting).resolves.toBeUndefined()
    await expect(handle.close()).resolves.toBeUndefined()
  })
})

describe('FileHandle as an object', () => {
  // close was a method of the prototype: `const { close } = handle; await close()` threw a
  // TypeError (this undefined), and the handle's own keys showed the workspace's internals
  // (ops, streams, descriptor...), all of it printed by console.log(handle).
  it('has close as its own property and no other own keys than Node’s', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const keys = Object.keys(handle)
      const { close } = handle
      await close()
      return [keys, handle.fd]
    })
  })
})

describe('streams over a FileHandle', () => {
  // The workspace read through the caller's fs (or failed checking it); Node refuses the pair.
  it('refuse an `fs` option given with it, as Node does (ERR_METHOD_NOT_IMPLEMENTED)', async () => {
    await same(async (fs, at) => {
      const handle = await fs.promises.open(at('/f'), 'r')
      const outcomes: unknown[] = []
      for (const make of [() => fs.createReadStream('', { fd: handle, fs: {} } as never), () => fs.createWriteStream('', { fd: handle, fs } as never)]) {
        try {
          const stream = make()
          stream.destroy()
          outcomes.push('made')
        } catch (error) {
          outcomes.push(error)
        }
      }
      await handle.close()
      return outcomes
    })
  })
})

describe('stream options', () => {
  // Spread as an object, they were taken as no options at all.
  it('a number, boolean, symbol or bigint as options is refused, as Node does; null and a function are no options', async () => {
    await same((fs, at) =>
      [5, true, Symbol('s'), 1n, null, () => undefined].flatMap((options) =>
        [fs.createReadStream, fs.createWriteStream].map((create) => {
          try {
            const stream = create(at('/f'), options as never) as NodeJS.EventEmitter & { destroy(): void }
            stream.on('error', () => undefined)
            stream.destroy()
            return 'made'
          } catch (error) {
            return error
          }
        }),
      ),
    )
  })
})

describe('streaming a big file', () => {
  const size = 16 * 1024 * 1024
  // They ran on microtasks only: nothing else ran until the whole file was through, so an abort
  // from a timer or an immediate came after the end, and a 16 MiB stream ended without error.
  it('lets the event loop run: an abort from an immediate stops a read stream part way', async () => {
    await same(async (fs, at) => {
      fs.writeFileSync(at('/big'), Buffer.alloc(size, 1))
      const abort = new AbortController()
      const stream = fs.createReadStream(at('/big'), { signal: abort.signal })
      let read = 0
      let failed: unknown
      stream.on('data', (chunk) => (read += chunk.length))
      stream.on('error', (error) => (failed = error))
      stream.once('data', () => setImmediate(() => abort.abort()))
      await new Promise<void>((resolve) => stream.on('close', () => resolve()))
      return [failed, read < size / 2]
    })
  })

  it('lets the event loop run: an abort from an immediate stops a write stream part way', async () => {
    await same(async (fs, at) => {
      const abort = new AbortController()
      const stream = fs.createWriteStream(at('/big'), { signal: abort.signal })
      let failed: unknown
      stream.on('error', (error) => (failed = error))
      const closed = new Promise<void>((resolve) => stream.on('close', () => resolve()))
      const chunk = Buffer.alloc(64 * 1024, 1)
      await new Promise<void>((resolve) => stream.once('ready', () => resolve()))
      setImmediate(() => abort.abort())
      // Each chunk when the last is through (Node's writev would take them all at once otherwise).
      for (let written = 0; written < size && !stream.destroyed; written += chunk.length) {
        if (!stream.write(chunk)) await Promise.race([new Promise<void>((resolve) => stream.once('drain', () => resolve())), closed])
      }
      stream.end()
      await closed
      return [failed, fs.statSync(at('/big')).size < size / 2]
    })
  })

  // It read on microtasks only: a loop over it kept everything else waiting until the file was through.
  it('lets the event loop run: an immediate runs while a web stream is read, bytes or default', async () => {
    for (const type of ['bytes', undefined]) {
      await same(async (fs, at) => {
        fs.writeFileSync(at('/big'), Buffer.alloc(size, 1))
        const handle = await fs.promises.open(at('/big'), 'r')
        let read = 0
        let readWhenImmediateRan = -1
        for await (const chunk of handle.readableWebStream({ type } as never) as unknown as AsyncIterable<ArrayBufferLike | Uint8Array>) {
          if (read === 0) setImmediate(() => (readWhenImmediateRan = read))
          read += chunk.byteLength
        }
        await handle.close()
        return [read, readWhenImmediateRan > 0 && readWhenImmediateRan < size / 2]
      })
    }
  })
})
