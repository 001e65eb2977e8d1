/**
 * Streams against node:fs on a real file: the same scenario (options, close, destroy, errors,
 * FileHandle streams, web streams, readLines) runs on both, and the logs of events (with chunk
 * sizes, errors by code and syscall, properties such as bytesRead and pending) must be equal.
 */
import type { EventEmitter } from 'node:events'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'

type F = typeof nodeFs
const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-streams-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let counter = 0

const TEXT = 'héllo wörld, this line has some bytes in it\n'.repeat(40) // multi-byte characters across chunk edges

/** A fresh real directory and a fresh workspace with the same files: /data.txt, /empty, /dir/. */
async function sides() {
  const root = join(base, `s${counter++}`)
  nodeFs.mkdirSync(join(root, 'dir'), { recursive: true })
  nodeFs.writeFileSync(join(root, 'data.txt'), TEXT)
  nodeFs.writeFileSync(join(root, 'empty'), '')
  const ws = await Workspace.open({ lower: { '/data.txt': TEXT, '/empty': '', '/dir/': '' }, autoCheckpoint: false })
  return [
    { fs: nodeFs, at: (p: string) => root + p },
    { fs: ws.fs as unknown as F, at: (p: string) => p },
  ] as const
}

/** Logs a stream's events until it closes (or a timeout, as 'timeout'). */
function events(stream: NodeJS.EventEmitter, extra: (log: string[]) => void = () => undefined): Promise<string[]> {
  const log: string[] = []
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve([...log, 'timeout']), 2000)
    stream.on('open', (fd) => log.push(`open:${typeof fd}`))
    stream.on('ready', () => log.push('ready'))
    stream.on('data', (chunk: Buffer | string) => log.push(`data:${typeof chunk === 'string' ? `s${chunk.length}` : chunk.length}`))
    stream.on('end', () => log.push('end'))
    stream.on('finish', () => log.push('finish'))
    stream.on('error', (error: NodeJS.ErrnoException) => log.push(`error:${error.code}:${error.syscall ?? ''}`))
    stream.on('close', () => {
      clearTimeout(timer)
      extra(log)
      resolve([...log, 'close'])
    })
  })
}

type Scenario = (fs: F, at: (p: string) => string) => Promise<unknown>

const scenarios: Record<string, Scenario> = {
  'read, default options': (fs, at) => events(fs.createReadStream(at('/data.txt'))),
  'read, highWaterMark, start and end': (fs, at) => {
    const s = fs.createReadStream(at('/data.txt'), { highWaterMark: 100, start: 3, end: 777 })
    return events(s, (log) => log.push(`bytesRead:${s.bytesRead}`))
  },
  'read, utf8 split across chunks': (fs, at) => events(fs.createReadStream(at('/data.txt'), { encoding: 'utf8', highWaterMark: 7, end: 60 })),
  'read, encoding as a string option': (fs, at) => events(fs.createReadStream(at('/data.txt'), 'hex')),
  'read, start past the end': (fs, at) => events(fs.createReadStream(at('/data.txt'), { start: 100_000 })),
  'read, empty file': (fs, at) => events(fs.createReadStream(at('/empty'))),
  'read, missing file': (fs, at) => events(fs.createReadStream(at('/missing'))),
  'read, a directory': (fs, at) => events(fs.createReadStream(at('/dir'))),
  'read, close() before it opens': (fs, at) => {
    const s = fs.createReadStream(at('/data.txt'))
    const closed = new Promise<string>((resolve) => s.close((error) => resolve(`close callback:${error ?? 'none'}`)))
    return Promise.all([events(s), closed, Promise.resolve(`pending:${s.pending}`)])
  },
  'read, close() after the first chunk': (fs, at) => {
    const s = fs.createReadStream(at('/data.txt'), { highWaterMark: 64 })
    s.once('data', () => s.close())
    return events(s, (log) => log.push(`destroyed:${s.destroyed}`))
  },
  'read, destroy with an error': (fs, at) => {
    const s = fs.createReadStream(at('/data.txt'))
    s.once('open', () => s.destroy(Object.assign(new Error('stop'), { code: 'ESTOP' })))
    return events(s)
  },
  'read, from a descriptor without autoClose': async (fs, at) => {
    const fd = fs.openSync(at('/data.txt'), 'r')
    const s = fs.createReadStream('', { fd, autoClose: false, start: 10, end: 19 })
    const chunks: string[] = []
    s.on('data', (chunk) => chunks.push(String(chunk)))
    await new Promise<void>((resolve) => s.on('end', () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, 20))
    return [chunks, s.destroyed, fs.fstatSync(fd).size, fs.closeSync(fd)]
  },
  'read, start after end is refused': (fs, at) => {
    try {
      fs.createReadStream(at('/data.txt'), { start: 5, end: 2 })
      return Promise.resolve('created')
    } catch (error) {
      return Promise.resolve(`${(error as NodeJS.ErrnoException).code}: ${(error as Error).message}`)
    }
  },
  'write, then end': async (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'))
    const returned = [s.write('one '), s.write(Buffer.from('two ')), s.pending]
    s.end('three')
    return [await events(s, (log) => log.push(`bytesWritten:${s.bytesWritten}`)), returned, fs.readFileSync(at('/out.txt'), 'utf8')]
  },
  'write, backpressure at highWaterMark': async (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'), { highWaterMark: 10 })
    const returned = [s.write('12345'), s.write('67890'), s.write('x')]
    s.end()
    return [await events(s), returned]
  },
  'write, flags a and r+ with start': async (fs, at) => {
    const append = fs.createWriteStream(at('/data.txt'), { flags: 'a' })
    append.end('APPENDED')
    await events(append)
    const middle = fs.createWriteStream(at('/data.txt'), { flags: 'r+', start: 5 })
    middle.end('MIDDLE')
    await events(middle)
    const text = fs.readFileSync(at('/data.txt'), 'utf8')
    return [text.slice(0, 20), text.slice(-20), text.length]
  },
  'write, after end is an error': async (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'))
    s.end('done')
    const log = events(s)
    s.write('late', (error) => void error)
    return log
  },
  'write, close() ends it; the callback runs': async (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'))
    s.write('abc')
    const closed = new Promise<string>((resolve) => s.close((error) => resolve(`close callback:${error ?? 'none'}`)))
    return [await events(s), await closed, fs.readFileSync(at('/out.txt'), 'utf8')]
  },
  'write, into a missing directory': (fs, at) => events(fs.createWriteStream(at('/nope/out.txt'))),
  'write, destroy before it opens': (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'))
    s.destroy()
    return events(s)
  },
  'write, cork and uncork (writev)': async (fs, at) => {
    const s = fs.createWriteStream(at('/out.txt'))
    s.cork()
    s.write('a')
    s.write('b')
    s.write('c')
    process.nextTick(() => s.uncork())
    s.end()
    return [await events(s), fs.readFileSync(at('/out.txt'), 'utf8')]
  },
  'pipeline copies': async (fs, at) => {
    await pipeline(fs.createReadStream(at('/data.txt'), { highWaterMark: 1000 }), fs.createWriteStream(at('/copy.txt'), { highWaterMark: 300 }))
    return fs.readFileSync(at('/copy.txt'), 'utf8') === TEXT
  },
  'FileHandle.createReadStream closes the handle': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r')
    const closed = new Promise((resolve) => (handle as unknown as NodeJS.EventEmitter).on('close', () => resolve('handle close')))
    const log = await events(handle.createReadStream({ start: 2, end: 40, highWaterMark: 16 }))
    return [log, await closed, handle.fd]
  },
  'FileHandle.createWriteStream writes at its position': async (fs, at) => {
    const handle = await fs.promises.open(at('/out.txt'), 'w')
    await handle.write('head:')
    const s = handle.createWriteStream()
    s.write('abc')
    s.end('def')
    return [await events(s), handle.fd, fs.readFileSync(at('/out.txt'), 'utf8')]
  },
  'FileHandle.createReadStream after close': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r')
    await handle.close()
    try {
      handle.createReadStream()
      return 'created'
    } catch (error) {
      return (error as NodeJS.ErrnoException).code
    }
  },
  'FileHandle methods after close': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r+')
    await handle.close()
    const out: unknown[] = [handle.fd]
    for (const call of [() => handle.read(Buffer.alloc(2)), () => handle.stat(), () => handle.readFile(), () => handle.write('x'), () => handle.sync(), () => handle.truncate(), () => handle.readv([Buffer.alloc(1)]), () => handle.writev([Buffer.alloc(1)]), () => handle.close()]) {
      out.push(await call().then(() => 'ok', (error: NodeJS.ErrnoException) => `${error.code}:${error.syscall}:${error.message}`))
    }
    try {
      handle.readableWebStream()
    } catch (error) {
      out.push((error as Error).message)
    }
    return out
  },
  'FileHandle.readLines': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r')
    const lines: number[] = []
    for await (const line of handle.readLines({ end: 200 })) lines.push(line.length)
    return [lines, handle.fd]
  },
  'FileHandle.readv and writev': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r+')
    const read = await handle.readv([Buffer.alloc(3), Buffer.alloc(4)], 1)
    const written = await handle.writev([Buffer.from('AB'), Buffer.from('CD')], 2)
    await handle.close()
    return [read.bytesRead, Buffer.concat(read.buffers).toString(), written.bytesWritten, fs.readFileSync(at('/data.txt'), 'utf8').slice(0, 8)]
  },
  'FileHandle.readableWebStream is locked while reading': async (fs, at) => {
    const handle = await fs.promises.open(at('/data.txt'), 'r')
    const web = handle.readableWebStream()
    let second: string
    try {
      handle.readableWebStream()
      second = 'created'
    } catch (error) {
      second = (error as Error).message
    }
    let bytes = 0
    for await (const chunk of web as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength
    await handle.close()
    return [second, bytes]
  },
}

describe('streams behave as node:fs on a real file', () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    it(name, async () => {
      const [real, ours] = await sides()
      const expected = await scenario(real.fs, real.at)
      const actual = await scenario(ours.fs, ours.at)
      expect(actual).toEqual(expected)
    })
  }

  it('web streams give Uint8Array chunks, 16 KiB at a time, BYOB included', async () => {
    const ws = await Workspace.open({ lower: { '/big': 'x'.repeat(40_000) } })
    const handle = await ws.fs.promises.open('/big', 'r')
    const sizes: number[] = []
    for await (const chunk of handle.readableWebStream() as unknown as AsyncIterable<Uint8Array>) {
      expect(chunk).toBeInstanceOf(Uint8Array)
      sizes.push(chunk.byteLength)
    }
    expect(sizes).toEqual([16384, 16384, 7232])
    const byob = (await ws.fs.promises.open('/big', 'r')).readableWebStream().getReader({ mode: 'byob' })
    const { value } = await byob.read(new Uint8Array(10))
    expect(value?.byteLength).toBe(10)
  })

  it('streams are instances of fs.ReadStream and fs.WriteStream, and of Node’s', async () => {
    const ws = await Workspace.open({ lower: { '/a': 'a' } })
    const fs = ws.fs
    const reader = fs.createReadStream('/a')
    expect(reader).toBeInstanceOf(fs.ReadStream)
    expect(reader).toBeInstanceOf(nodeFs.ReadStream)
    const writer = new (fs.WriteStream as unknown as new (path: string) => nodeFs.WriteStream)('/b')
    expect(writer).toBeInstanceOf(nodeFs.WriteStream)
    writer.end('b')
    await new Promise<void>((resolve) => writer.on('close', () => resolve()))
    expect(fs.readFileSync('/b', 'utf8')).toBe('b')
    reader.destroy()
  })
})

describe('the workspace closing under open handles and streams', () => {
  // It closed the descriptors under them: a later handle.close() rejected with EBADF, and a
  // stream's own close emitted an 'error' nobody listened for (a crash of the process), as after a
  // readLines loop left early.
  it('closes each FileHandle as its owner would, and the streams over it with it, with no error', async () => {
    const ws = await Workspace.open()
    ws.fs.writeFileSync('/a.txt', Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n'))
    const lines = await ws.fs.promises.open('/a.txt', 'r')
    let read = 0
    for await (const _line of lines.readLines()) if (++read === 3) break
    const handle = await ws.fs.promises.open('/a.txt', 'r')
    const overHandle = handle.createReadStream({ highWaterMark: 1024 })
    const byPath = ws.fs.createReadStream('/a.txt', { highWaterMark: 1024 })
    const errors: unknown[] = []
    for (const stream of [overHandle, byPath]) stream.on('error', (error: unknown) => errors.push(error))
    // Each started and paused part way through the file.
    for (const stream of [overHandle, byPath]) await new Promise<void>((resolve) => stream.once('readable', () => resolve()))
    // A FileHandle is an EventEmitter, as Node's is (its types leave that out).
    const handleClosed = new Promise<void>((resolve) => (handle as unknown as EventEmitter).once('close', () => resolve()))
    const streamClosed = new Promise<void>((resolve) => overHandle.once('close', () => resolve()))
    await ws.close()
    await handleClosed
    await streamClosed
    expect(handle.fd).toBe(-1)
    expect(lines.fd).toBe(-1)
    await expect(handle.close()).resolves.toBeUndefined()
    await expect(lines.close()).resolves.toBeUndefined()
    byPath.destroy()
    await new Promise<void>((resolve) => byPath.once('close', () => resolve()))
    expect(errors).toEqual([])
  })
})
