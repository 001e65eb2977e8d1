/**
 * fs scenarios for the differential tests of AsyncWorkspace.fs: each runs against an fs rooted at
 * `root` and notes what it observes (values, chunk sizes, Node-shaped errors) in a transcript.
 * The oracle is Node's own fs on a real directory: the workspace's transcript, in process, in a
 * worker thread or in a Web Worker, must equal the one node:fs gives for the same scenario.
 * Platform-neutral (no node: imports), so a browser page runs them too.
 */
import type { AsyncFsRoot } from '../../src/async-workspace.js'

export type Note = (label: string, value: unknown) => void

export interface FsScenario {
  /** Files the scenario starts with, relative to the root. */
  files: Record<string, string>
  run(fs: AsyncFsRoot, root: string, note: Note): Promise<void>
  /** Members the scenario needs beyond the core (the in-process fs gains some later): when absent, the scenario is skipped there. */
  needs?: (fs: AsyncFsRoot, root: string) => Promise<boolean>
}

/** Text of bytes (Node 20's readableWebStream yields ArrayBuffers, later ones and browsers Uint8Arrays). */
const text = (value: unknown) => (value instanceof Uint8Array || value instanceof ArrayBuffer ? new TextDecoder().decode(value) : String(value))

/** A JSON-able picture of a value, with the root replaced by '<root>' so transcripts of different roots compare. */
export function picture(value: unknown, root: string): unknown {
  const strip = (s: string) => s.split(root).join('<root>')
  if (value instanceof Uint8Array) return { bytes: text(value) }
  if (value instanceof Error) {
    const error = value as Error & { code?: unknown; syscall?: unknown; errno?: unknown; path?: unknown }
    return { error: error.code ?? error.name, syscall: error.syscall, errno: error.errno, message: strip(error.message), ...(typeof error.path === 'string' ? { path: strip(error.path) } : {}) }
  }
  if (typeof value === 'string') return strip(value)
  if (Array.isArray(value)) return value.map((v) => picture(v, root))
  if (value && typeof value === 'object') {
    const object = value as Record<string, unknown> & { isFile?: () => boolean; isDirectory?: () => boolean; isSymbolicLink?: () => boolean; name?: unknown }
    if (typeof object.isFile === 'function' && typeof object.isDirectory === 'function') {
      const type = object.isFile() ? 'file' : object.isDirectory() ? 'dir' : object.isSymbolicLink?.() ? 'symlink' : 'other'
      // A Dirent (name, parentPath) or Stats (size, mode): what both sides define alike.
      if (typeof object.name === 'string') return { dirent: object.name, type, parentPath: picture(object.parentPath, root) }
      return { type, size: object.size, mode: typeof object.mode === 'number' ? (object.mode & 0o7777).toString(8) : undefined }
    }
    return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, picture(v, root)]))
  }
  return value
}

/** Runs `body`, noting its value or its error. */
async function attempt(note: Note, label: string, body: () => unknown): Promise<unknown> {
  try {
    const value = await body()
    note(label, value)
    return value
  } catch (error) {
    note(label, error)
    return undefined
  }
}

/** The chunks of a Node Readable or a web ReadableStream, and its error if it failed. */
async function drain(stream: unknown): Promise<{ chunks: unknown[]; error?: unknown }> {
  const chunks: unknown[] = []
  try {
    for await (const chunk of stream as AsyncIterable<unknown>) chunks.push(chunk)
    return { chunks }
  } catch (error) {
    return { chunks, error }
  }
}

/** Writes `chunks` to a Node Writable or a web WritableStream and waits until it has closed. */
async function fill(stream: unknown, chunks: readonly (string | Uint8Array)[]): Promise<void> {
  if (typeof (stream as WritableStream).getWriter === 'function') {
    const writer = (stream as WritableStream<string | Uint8Array>).getWriter()
    for (const chunk of chunks) await writer.write(chunk)
    await writer.close()
    return
  }
  const writable = stream as { write(chunk: unknown): boolean; end(): void; once(event: string, listener: (error?: unknown) => void): void }
  await new Promise<void>((resolve, reject) => {
    writable.once('error', reject)
    writable.once('close', () => resolve())
    for (const chunk of chunks) writable.write(chunk)
    writable.end()
  })
}

export const fsScenarios: Record<string, FsScenario> = {
  'FileHandle: writes and reads at offsets and positions, stats, truncates, and refuses calls once closed': {
    files: { 'lower.txt': 'lower contents\n' },
    async run(fs, root, note) {
      const p = fs.promises
      const fh = await p.open(`${root}/a.bin`, 'w+')
      note('fd is a number', typeof fh.fd)
      note('write string', (await fh.write('hello world')).bytesWritten)
      const source = new TextEncoder().encode('0123456789')
      const written = await fh.write(source, 2, 5, 20)
      note('write buffer slice at 20', [written.bytesWritten, written.buffer === source])
      note('size after a gap', (await fh.stat()).size)
      const target = new Uint8Array(8).fill(46)
      const read = await fh.read(target, 2, 5, 0)
      note('read into offset 2', [read.bytesRead, text(read.buffer as Uint8Array), read.buffer === target])
      const options = await fh.read({ buffer: new Uint8Array(4), position: 6 })
      note('read({ buffer, position })', [options.bytesRead, text(options.buffer)])
      const second = await fh.read(new Uint8Array(3), { position: 21 } as never)
      note('read(buffer, { position })', [second.bytesRead, text(second.buffer)])
      const past = await fh.read(new Uint8Array(4), 0, 4, 100)
      note('read past the end', past.bytesRead)
      const whole = await fh.read()
      note('read() from the file position', [whole.bytesRead, whole.buffer.byteLength])
      // The code only: Node words this one from FileHandle.read's own check, which fs.readSync does not share.
      await attempt(note, 'read with a bad offset', () => fh.read(new Uint8Array(4), 9, 1, 0).catch((error: { code?: string }) => Promise.reject(new Error(error.code))))
      await fh.truncate(5)
      note('truncated', (await fh.stat()).size)
      await fh.chmod(0o600)
      note('mode', (await fh.stat()).mode & 0o777)
      await fh.sync()
      await fh.datasync()
      await fh.close()
      await attempt(note, 'second close', () => fh.close())
      await attempt(note, 'read after close', () => fh.read(new Uint8Array(1), 0, 1, 0))
      await attempt(note, 'stat after close', () => fh.stat())
      note('file after close', await p.readFile(`${root}/a.bin`, 'utf8'))

      const append = await p.open(`${root}/lower.txt`, 'a')
      await append.write('appended\n')
      await append.appendFile('and more\n')
      await append.close()
      note('appended to a lower file', await p.readFile(`${root}/lower.txt`, 'utf8'))
      const reader = await p.open(`${root}/lower.txt`)
      note('readFile on a handle', text(await reader.readFile()))
      await attempt(note, 'write on a read-only handle', () => reader.write('x'))
      await reader.close()
      const rewrite = await p.open(`${root}/lower.txt`, 'r+')
      await rewrite.writeFile('LOWER')
      await rewrite.close()
      note('writeFile on a handle writes at the position', await p.readFile(`${root}/lower.txt`, 'utf8'))
    },
  },

  'open: flags and errors as Node gives them': {
    files: { 'dir/f.txt': 'f' },
    async run(fs, root, note) {
      const p = fs.promises
      await attempt(note, 'missing for reading', () => p.open(`${root}/missing`))
      await attempt(note, 'a directory for writing', () => p.open(`${root}/dir`, 'w'))
      await attempt(note, 'wx over a file', () => p.open(`${root}/dir/f.txt`, 'wx'))
      await attempt(note, 'a file as a directory', () => p.open(`${root}/dir/f.txt/x`, 'w'))
      const created = await p.open(`${root}/dir/new.txt`, 'wx', 0o640)
      await created.close()
      note('created with a mode', (await p.stat(`${root}/dir/new.txt`)).mode & 0o777)
      const dir = await p.open(`${root}/dir`)
      await attempt(note, 'reading a directory handle', () => dir.read(new Uint8Array(4), 0, 4, 0))
      note('a directory handle stats', await dir.stat())
      await dir.close()
    },
  },

  'opendir: reads entries one by one, in batches and by async iteration, and refuses a closed Dir': {
    files: { 'd/a.txt': 'a', 'd/b.txt': 'b', 'd/sub/c.txt': 'c', 'file.txt': 'x' },
    async run(fs, root, note) {
      const p = fs.promises
      const dir = await p.opendir(`${root}/d`)
      note('path', dir.path)
      const seen: unknown[] = []
      for (let entry = await dir.read(); entry !== null; entry = await dir.read()) seen.push(entry)
      note('read until null', seen.sort((a, b) => String((a as { name: string }).name).localeCompare((b as { name: string }).name)))
      note('read at the end again', await dir.read())
      await dir.close()
      await attempt(note, 'read after close', () => dir.read())
      await attempt(note, 'close twice', () => dir.close())

      const names: string[] = []
      for await (const entry of await p.opendir(`${root}/d`, { bufferSize: 1 })) names.push(entry.name)
      note('async iteration, bufferSize 1', names.sort())
      await attempt(note, 'opendir on a file', () => p.opendir(`${root}/file.txt`))
      await attempt(note, 'opendir on a missing path', () => p.opendir(`${root}/nope`))
    },
  },

  'exists: files, directories, missing paths and dangling symlinks': {
    files: { 'f.txt': 'f' },
    async run(fs, root, note) {
      await fs.promises.symlink('nowhere', `${root}/dangling`)
      const exists = (path: string) => new Promise<boolean>((resolve) => fs.exists(path, resolve))
      note('file', await exists(`${root}/f.txt`))
      note('dir', await exists(root))
      note('missing', await exists(`${root}/missing`))
      note('dangling symlink', await exists(`${root}/dangling`))
      note('below a file', await exists(`${root}/f.txt/x`))
    },
  },

  'streams: ranges and highWaterMark chunks, writes at a start, appends, and errors': {
    files: { 'ten.txt': '0123456789' },
    async run(fs, root, note) {
      const sizes = (chunks: unknown[]) => chunks.map((c) => (c as Uint8Array).byteLength)
      const all = await drain(fs.createReadStream(`${root}/ten.txt`, { highWaterMark: 4 }))
      note('chunks of 4', [sizes(all.chunks), all.chunks.map(text).join('')])
      const range = await drain(fs.createReadStream(`${root}/ten.txt`, { start: 2, end: 6 }))
      note('start 2 end 6', range.chunks.map(text).join(''))
      const missing = await drain(fs.createReadStream(`${root}/missing.txt`))
      note('reading a missing file', missing.error)

      await fill(fs.createWriteStream(`${root}/out.txt`), ['one ', new TextEncoder().encode('two '), 'three'])
      note('written', await fs.promises.readFile(`${root}/out.txt`, 'utf8'))
      await fill(fs.createWriteStream(`${root}/out.txt`, { flags: 'a' }), ['\nappended'])
      note('appended', await fs.promises.readFile(`${root}/out.txt`, 'utf8'))
      await fill(fs.createWriteStream(`${root}/ten.txt`, { flags: 'r+', start: 3 }), ['abc'])
      note('written at start 3', await fs.promises.readFile(`${root}/ten.txt`, 'utf8'))
      try {
        await fill(fs.createWriteStream(`${root}/no/such/dir.txt`), ['x'])
        note('writing below a missing directory', 'written')
      } catch (error) {
        note('writing below a missing directory', error)
      }
    },
  },

  'streams: a 3 MiB file crosses in bounded chunks and arrives whole': {
    files: {},
    async run(fs, root, note) {
      const big = new Uint8Array(3 * 1024 * 1024)
      for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff
      const chunks: Uint8Array[] = []
      for (let at = 0; at < big.length; at += 100_000) chunks.push(big.subarray(at, at + 100_000))
      await fill(fs.createWriteStream(`${root}/big.bin`), chunks)
      const { chunks: read } = await drain(fs.createReadStream(`${root}/big.bin`))
      let same = true
      let at = 0
      for (const chunk of read as Uint8Array[]) {
        for (let i = 0; i < chunk.byteLength; i++) if (chunk[i] !== big[at + i]) same = false
        at += chunk.byteLength
      }
      note('bytes read', at)
      note('identical', same)
      note('largest chunk at most 64 KiB', Math.max(...(read as Uint8Array[]).map((c) => c.byteLength)) <= 65536)
    },
  },

  'FileHandle streams and lines: createReadStream closes the handle at its end, readLines splits as readline': {
    files: { 'lines.txt': 'first\nsecond\r\nthird\rfourth\n\nlast' },
    needs: async (fs, root) => {
      const fh = await fs.promises.open(`${root}/lines.txt`)
      const has = typeof fh.readLines === 'function' && typeof fh.createReadStream === 'function' && typeof fh.readableWebStream === 'function'
      await fh.close()
      return has
    },
    async run(fs, root, note) {
      const p = fs.promises
      const lines: string[] = []
      for await (const line of (await p.open(`${root}/lines.txt`)).readLines()) lines.push(line)
      note('lines', lines)
      const fh = await p.open(`${root}/lines.txt`)
      const stream = fh.createReadStream({ start: 6, end: 11 })
      note('a handle stream', (await drain(stream)).chunks.map(text).join(''))
      await new Promise((resolve) => setTimeout(resolve, 10))
      await attempt(note, 'the handle after its stream ended', () => fh.stat())
      const web = await p.open(`${root}/lines.txt`)
      const webChunks = await drain(web.readableWebStream())
      note('readableWebStream', webChunks.chunks.map(text).join(''))
      await web.close()
    },
  },

  'readv and writev: scatter and gather at a position': {
    files: { 'v.txt': 'abcdefghij' },
    needs: async (fs, root) => {
      const fh = await fs.promises.open(`${root}/v.txt`)
      try {
        await fh.readv([new Uint8Array(1)], 0)
        return true
      } catch {
        return false
      } finally {
        await fh.close()
      }
    },
    async run(fs, root, note) {
      const fh = await fs.promises.open(`${root}/v.txt`, 'r+')
      const parts = [new Uint8Array(3), new Uint8Array(4)]
      const read = await fh.readv(parts, 2)
      note('readv', [read.bytesRead, parts.map(text)])
      const written = await fh.writev([new TextEncoder().encode('XY'), new TextEncoder().encode('Z')], 8)
      note('writev', written.bytesWritten)
      await fh.close()
      note('after writev', await fs.promises.readFile(`${root}/v.txt`, 'utf8'))
    },
  },
  'watch: a directory, a file and fs.promises.watch see creates, writes, attributes, renames and deletes as inotify reports them': {
    files: { 'd/keep.txt': 'k', 'f.txt': 'f' },
    needs: async (fs) => typeof fs.watch === 'function',
    async run(fs, root, note) {
      const p = fs.promises
      const dir: string[] = []
      const file: string[] = []
      const watcher = fs.watch(`${root}/d`, (type, name) => dir.push(`${type}:${String(name)}`))
      const fileWatcher = fs.watch(`${root}/f.txt`, (type, name) => file.push(`${type}:${String(name)}`))
      // No event repeats the one before it: the kernel would merge those while Node has not read them.
      await p.writeFile(`${root}/d/a`, 'a')
      await p.mkdir(`${root}/d/sub`)
      await p.rename(`${root}/d/a`, `${root}/d/b`)
      await p.appendFile(`${root}/d/b`, 'more')
      await p.chmod(`${root}/d/b`, 0o600)
      await p.writeFile(`${root}/d/sub/deep`, 'not seen: a watch is on one directory')
      await p.unlink(`${root}/d/b`)
      await p.rm(`${root}/d/sub`, { recursive: true })
      await p.appendFile(`${root}/f.txt`, 'g')
      await p.rename(`${root}/f.txt`, `${root}/d/f.txt`)
      await p.writeFile(`${root}/d/fence`, 'x')
      await eventually(() => dir.includes('change:fence'))
      watcher.close()
      fileWatcher.close()
      note('directory', dir)
      note('file (followed through its rename)', file)

      const missing = await watchFailure(() => fs.watch(`${root}/nope`))
      note('a missing path', [missing?.code, missing?.syscall, (missing as { filename?: string } | undefined)?.filename])

      const controller = new AbortController()
      const iterated: string[] = []
      const iterating = (async () => {
        try {
          for await (const event of p.watch(`${root}/d`, { signal: controller.signal })) {
            iterated.push(`${event.eventType}:${String(event.filename)}`)
            if (iterated.length === 2) controller.abort()
          }
          return 'ended'
        } catch (error) {
          return (error as Error).name
        }
      })()
      // Across a worker the watch starts with the iteration's first step: wait for it to see something.
      await eventually(async () => {
        await p.writeFile(`${root}/d/ping`, '')
        return iterated.length > 0
      })
      await p.writeFile(`${root}/d/last`, 'x')
      note('fs.promises.watch until its signal aborts', [await iterating, iterated.length])
    },
  },
}

/** Waits (a few milliseconds at a time, up to five seconds) until `ready` holds. */
async function eventually(ready: () => boolean | Promise<boolean>): Promise<void> {
  for (let waited = 0; !(await ready()); waited += 5) {
    if (waited > 5000) throw new Error('timed out waiting for watch events')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A watch that cannot start: thrown at once (in process, node:fs) or told as the watcher's 'error' (across a worker). */
function watchFailure(start: () => { once(event: 'error', listener: (error: Error) => void): unknown }): Promise<(Error & { code?: string; syscall?: string }) | undefined> {
  try {
    const watcher = start()
    return new Promise((resolve) => watcher.once('error', resolve))
  } catch (error) {
    return Promise.resolve(error as Error & { code?: string; syscall?: string })
  }
}


/** Where a workspace holds a scenario's files. */
export const SCENARIO_ROOT = '/scenario'

/** A scenario's files as a workspace's lower layer under SCENARIO_ROOT (the root exists even with no files). */
export function scenarioLower(scenario: FsScenario): Record<string, string> {
  const files = Object.entries(scenario.files)
  if (files.length === 0) return { [`${SCENARIO_ROOT}/.keep`]: '' }
  return Object.fromEntries(files.map(([name, contents]) => [`${SCENARIO_ROOT}/${name}`, contents]))
}

/** Runs one scenario and returns its transcript. */
export async function transcript(scenario: FsScenario, fs: AsyncFsRoot, root: string): Promise<[string, unknown][]> {
  const notes: [string, unknown][] = []
  await scenario.run(fs, root, (label, value) => notes.push([label, picture(value, root)]))
  return notes
}
