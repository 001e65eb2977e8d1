/**
 * The storage model's bounds, enforced with work counters instead of clocks: a checkpoint touches
 * nothing, restore touches work proportional to the paths that differ, and writes cost the same
 * after hundreds of checkpoints.
 */
import { describe, expect, it } from 'vitest'
import { type LowerSource, Workspace, type WorkspaceCounters, fixtureSource } from '../src/index.js'
import { watching } from '../src/watch.js'

function fixture(files: number): Record<string, string> {
  const tree: Record<string, string> = {}
  for (let i = 0; i < files; i++) tree[`/d${i % 100}/f${i}.txt`] = `lower ${i}\n`
  return tree
}

function work(before: WorkspaceCounters, after: WorkspaceCounters): number {
  return after.nodesCopied - before.nodesCopied + (after.lookups - before.lookups) + (after.blobsTouched - before.blobsTouched)
}

async function populated(files: number) {
  const ws = await Workspace.open({ lower: fixture(files) })
  // Half the files rewritten in the upper layer, so both layers are large.
  for (let i = 0; i < files; i += 2) ws.fs.writeFileSync(`/d${i % 100}/f${i}.txt`, `upper ${i}\n`)
  return ws
}

describe('complexity bounds (counted work, not time)', () => {
  it('a checkpoint touches no node and no blob, at 1k and at 100k files', async () => {
    for (const files of [1_000, 100_000]) {
      const ws = await populated(files)
      const before = ws.counters
      await ws.checkpoint()
      expect(work(before, ws.counters)).toBe(0)
    }
  })

  it('restore and diff work is proportional to the paths that differ, not to the tree', async () => {
    const costs: number[] = []
    for (const files of [1_000, 100_000]) {
      const ws = await populated(files)
      const start = await ws.checkpoint({ name: 'start' })
      for (let i = 0; i < 100; i++) ws.fs.writeFileSync(`/d${i % 100}/f${i}.txt`, `changed ${i}\n`)
      const before = ws.counters
      const report = await ws.restore(start.id)
      costs.push(work(before, ws.counters))
      expect(report.changes).toHaveLength(100)
      expect(ws.fs.readFileSync('/d1/f1.txt', 'utf8')).toBe(files === 1_000 ? 'lower 1\n' : 'lower 1\n')
      expect(ws.fs.readFileSync('/d0/f0.txt', 'utf8')).toBe('upper 0\n')
    }
    // 100 changed files in 100 directories: a few units of work per path, identical at both sizes.
    expect(costs[1]).toBe(costs[0])
    expect(costs[0]).toBeLessThan(100 * 20)
  })

  it('writes and reads cost the same after 500 checkpoints as after one', async () => {
    const costs: number[] = []
    for (const checkpoints of [1, 500]) {
      const ws = await populated(1_000)
      for (let i = 0; i < checkpoints; i++) {
        ws.fs.writeFileSync(`/d${i % 100}/f${i % 1000}.txt`, `v${i}`)
        await ws.checkpoint()
      }
      const before = ws.counters
      // Paths the checkpoint loop never touched, so both runs do identical work on them.
      ws.fs.writeFileSync('/d50/f550.txt', 'new')
      ws.fs.readFileSync('/d7/f707.txt')
      ws.fs.statSync('/d9/f909.txt')
      costs.push(work(before, ws.counters))
    }
    expect(costs[1]).toBe(costs[0])
  })

  it('mkdir after mkdir in one directory copies no node: only the new, empty directory is made immutable', async () => {
    const ws = await Workspace.open()
    ws.fs.mkdirSync('/t')
    ws.fs.mkdirSync('/t/d0')
    const before = ws.counters.nodesCopied
    for (let i = 1; i <= 100; i++) ws.fs.mkdirSync(`/t/d${i}`)
    // Freezing the tree after each would copy the root and /t on the next one: 200 copies.
    expect(ws.counters.nodesCopied - before).toBe(0)
    // The directory a record holds never changes afterwards: a write into it copies it first.
    ws.fs.writeFileSync('/t/d100/a.txt', 'a')
    expect(ws.counters.nodesCopied - before).toBe(1)
    await ws.undo() // the write
    await ws.undo() // the mkdir of /t/d100
    expect(ws.fs.existsSync('/t/d100')).toBe(false)
    await ws.redo()
    // The mkdir's record brings back the directory it made, empty (changed in place, it would hold a.txt).
    expect(ws.fs.readdirSync('/t/d100')).toEqual([])
    ws.fs.writeFileSync('/t/d100/b.txt', 'b')
    expect(ws.fs.readdirSync('/t/d100')).toEqual(['b.txt'])
    // mkdir -p fills the directories it makes within one operation: the tree is frozen then, as before.
    ws.fs.mkdirSync('/p/q/r', { recursive: true })
    const checkpoint = await ws.checkpoint()
    ws.fs.writeFileSync('/p/q/r/x', 'x')
    await ws.restore(checkpoint.id, { force: true })
    expect(ws.fs.readdirSync('/p/q/r')).toEqual([])
  })

  it('reset is O(1): it touches nothing however large the upper layer', async () => {
    const ws = await populated(100_000)
    const before = ws.counters
    await ws.reset()
    expect(work(before, ws.counters)).toBeLessThanOrEqual(1)
    expect(ws.fs.readFileSync('/d0/f0.txt', 'utf8')).toBe('lower 0\n')
  })
})

describe('copies through descriptors, a chunk at a time', () => {
  const CHUNK = 64 * 1024
  const CHUNKS = 32
  /** A lower source of one file, /big.bin (CHUNKS chunks), that counts its whole-file reads. */
  function countingLower() {
    const inner = fixtureSource({ '/big.bin': 'x'.repeat(CHUNK * CHUNKS) })
    const counts = { readFile: 0 }
    const source: LowerSource = {
      kind: 'counting',
      stat: (path) => inner.stat(path),
      readdir: (path) => inner.readdir(path),
      readFile: (path) => (counts.readFile++, inner.readFile(path)),
      readlink: (path) => inner.readlink(path),
    }
    return { source, counts }
  }
  /** Copies `from` to `to` with readSync and writeSync, calling `between` after each chunk; `chunks`: the first so many only. */
  function copy(ws: Workspace, from: string, to: string, between = () => {}, chunks = Infinity): void {
    const source = ws.fs.openSync(from, 'r')
    const target = ws.fs.openSync(to, 'w')
    const buffer = new Uint8Array(CHUNK)
    for (let n, i = 0; i < chunks && (n = ws.fs.readSync(source, buffer, 0, CHUNK, null)) > 0; i++, between()) ws.fs.writeSync(target, buffer, 0, n)
    ws.fs.closeSync(source)
    ws.fs.closeSync(target)
  }

  it('store the file written once, at its close, not at every read of the other file (that made a copy n²/chunk: a 50 MB pipe took 80 s)', async () => {
    const { source } = countingLower()
    const ws = await Workspace.open({ lower: source })
    ws.fs.writeFileSync('/upper.bin', new Uint8Array(CHUNK * CHUNKS))
    /** Contents stored (each hashed whole) by a copy of the first `chunks` chunks of `from`. */
    const stored = (from: string, chunks: number) => {
      const before = ws.counters.blobsTouched
      copy(ws, from, `${from}.copy`, undefined, chunks)
      expect(ws.fs.statSync(`${from}.copy`).size).toBe(CHUNK * Math.min(chunks, CHUNKS))
      return ws.counters.blobsTouched - before
    }
    for (const from of ['/big.bin', '/upper.bin']) {
      // A few (the file the open empties, what it holds once written), never one per chunk (CHUNKS).
      expect(stored(from, CHUNKS)).toBeLessThanOrEqual(4)
      expect(stored(from, CHUNKS)).toBe(stored(from, CHUNKS / 4))
    }
  })

  it('a stream pipe too: a few contents stored, not one per chunk', async () => {
    const ws = await Workspace.open()
    ws.fs.writeFileSync('/upper.bin', new Uint8Array(CHUNK * CHUNKS))
    const before = ws.counters.blobsTouched
    await new Promise((resolve, reject) => ws.fs.createReadStream('/upper.bin').pipe(ws.fs.createWriteStream('/piped.bin')).on('finish', () => resolve(undefined)).on('error', reject))
    expect(ws.counters.blobsTouched - before).toBeLessThanOrEqual(4)
    expect(ws.fs.readFileSync('/piped.bin')).toEqual(ws.fs.readFileSync('/upper.bin'))
  })

  it('read a project file from the lower source once, though the tree changes between the chunks (it was read whole again at every chunk)', async () => {
    const { source, counts } = countingLower()
    const ws = await Workspace.open({ lower: source })
    let chunks = 0
    copy(ws, '/big.bin', '/copy.bin', () => ws.fs.appendFileSync('/log', `chunk ${chunks++}\n`))
    expect(chunks).toBe(CHUNKS)
    expect(counts.readFile).toBe(1)
    expect(ws.fs.readFileSync('/copy.bin', 'latin1')).toBe('x'.repeat(CHUNK * CHUNKS))
    // A write to the file read is seen at the next chunk.
    const fd = ws.fs.openSync('/big.bin', 'r')
    const buffer = new Uint8Array(4)
    ws.fs.readSync(fd, buffer, 0, 4, null)
    ws.fs.writeFileSync('/big.bin', 'abcdefgh')
    ws.fs.readSync(fd, buffer, 0, 4, null)
    expect(new TextDecoder().decode(buffer)).toBe('efgh')
    ws.fs.closeSync(fd)
  })

  it('still show a reader of the same file what another descriptor wrote to it', async () => {
    const ws = await Workspace.open()
    ws.fs.writeFileSync('/f', 'aaaa')
    const writer = ws.fs.openSync('/f', 'r+')
    const reader = ws.fs.openSync('/f', 'r')
    const other = ws.fs.openSync('/g', 'w')
    ws.fs.writeSync(writer, 'bb', 0)
    ws.fs.writeSync(other, 'gg')
    const buffer = new Uint8Array(4)
    expect(ws.fs.readSync(reader, buffer, 0, 4, 0)).toBe(4)
    expect(new TextDecoder().decode(buffer)).toBe('bbaa')
    expect(ws.fs.readFileSync('/g', 'latin1')).toBe('gg')
    for (const fd of [writer, reader, other]) ws.fs.closeSync(fd)
  })
})

describe('a descriptor writing a log while other files are used', () => {
  it('stores the log once, not at every call on another file (each settled a new version of the whole log: 8000 lines took 4.5 s)', async () => {
    const ws = await Workspace.open()
    ws.fs.mkdirSync('/src')
    ws.fs.writeFileSync('/src/a.txt', 'a')
    /** Contents stored while `lines` lines are written to a log (or not), a stat, read and write of other files between them. */
    const stored = (lines: number, log: boolean) => {
      const fd = log ? ws.fs.openSync(`/log-${lines}`, 'a') : undefined
      const before = ws.counters.blobsTouched
      for (let i = 0; i < lines; i++) {
        if (fd !== undefined) ws.fs.writeSync(fd, `line ${i}\n`)
        ws.fs.statSync('/src/a.txt')
        ws.fs.readFileSync('/src/a.txt')
        ws.fs.writeFileSync('/src/b.txt', `${i % 2}`)
      }
      if (fd !== undefined) ws.fs.closeSync(fd)
      return ws.counters.blobsTouched - before
    }
    // What the log adds: its content once (at the first write and at its close), whatever its length.
    for (const lines of [50, 200]) expect(stored(lines, true) - stored(lines, false)).toBeLessThanOrEqual(2)
    expect(ws.fs.readFileSync('/log-200', 'latin1').split('\n')).toHaveLength(201)
  })

  it('is still seen whole by every call on its file: by its path, an ancestor, a symlink on the way or to it, and another name of its inode', async () => {
    const ws = await Workspace.open()
    ws.fs.mkdirSync('/d/e', { recursive: true })
    ws.fs.symlinkSync('/d', '/via')
    ws.fs.symlinkSync('/d/e/log', '/to-log')
    const fd = ws.fs.openSync('/d/e/log', 'a')
    ws.fs.linkSync('/d/e/log', '/hard')
    let size = 0
    for (const look of [
      () => ws.fs.statSync('/d/e/log').size,
      () => ws.fs.statSync('/via/e/log').size,
      () => ws.fs.statSync('/to-log').size,
      () => ws.fs.statSync('/hard').size,
      () => ws.fs.readFileSync('/via/e/log').byteLength,
      () => (ws.fs.readdirSync('/d', { recursive: true, withFileTypes: true }) as { name: string }[]).length && ws.fs.statSync('/d/e/log').size,
    ]) {
      ws.fs.writeSync(fd, 'xx')
      size += 2
      expect(look()).toBe(size)
    }
    // A rename of an ancestor takes the writes made before it along.
    ws.fs.writeSync(fd, 'yy')
    ws.fs.renameSync('/d', '/moved')
    expect(ws.fs.readFileSync('/moved/e/log', 'latin1')).toBe('xx'.repeat(6) + 'yy')
    ws.fs.closeSync(fd)
  })
})

describe('descriptor writes under a watcher', () => {
  it('settle a large file as its size grows by half, not at every write (a 32 MB pipe under fs.watch took 28 s), and the watcher still hears the last write', async () => {
    const ws = await Workspace.open({ watch: watching })
    const heard: string[] = []
    const watcher = ws.fs.watch('/', { recursive: true }, (_event, name) => heard.push(String(name)))
    /**
     * Contents stored while `size` bytes are written to a new file 64 KiB at a time, the microtasks
     * (where watchers' settles run) let run after each write; no timer turn comes in between.
     */
    const written = async (size: number) => {
      const before = ws.counters.blobsTouched
      const fd = ws.fs.openSync('/written.bin', 'w')
      for (let at = 0; at < size; at += 64 * 1024) {
        ws.fs.writeSync(fd, new Uint8Array(64 * 1024))
        await Promise.resolve()
      }
      ws.fs.closeSync(fd)
      return ws.counters.blobsTouched - before
    }
    const MiB = 1024 * 1024
    const small = await written(2 * MiB)
    // Four times the bytes (96 more writes): a few more settles, as the size grows by half.
    expect((await written(8 * MiB)) - small).toBeLessThanOrEqual(6)
    // A pipe's copy is whole.
    ws.fs.writeFileSync('/big.bin', new Uint8Array(8 * MiB).fill(7))
    await new Promise((resolve, reject) => ws.fs.createReadStream('/big.bin').pipe(ws.fs.createWriteStream('/piped.bin')).on('finish', () => resolve(undefined)).on('error', reject))
    expect(ws.fs.readFileSync('/piped.bin')).toEqual(ws.fs.readFileSync('/big.bin'))
    const size = 8 * MiB
    // A write too small to be due is settled for the watcher within a moment all the same.
    const fd = ws.fs.openSync('/piped.bin', 'a')
    heard.length = 0
    ws.fs.writeSync(fd, 'x')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(heard).toContain('piped.bin')
    ws.fs.closeSync(fd)
    expect(ws.fs.statSync('/piped.bin').size).toBe(size + 1)
    watcher.close()
    await ws.close()
  })
})

describe('a file grown by appendFile', () => {
  it('hashes only what each append adds (each append hashed and copied the whole file: 12 000 lines took 23 s and 7 GB), and every version stays readable for undo', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    const line = 'x'.repeat(99) + '\n'
    /** Bytes stored by `count` appends of a line to a new log. */
    const stored = (name: string, count: number) => {
      const before = ws.counters.bytesStored
      for (let i = 0; i < count; i++) ws.fs.appendFileSync(name, line)
      return ws.counters.bytesStored - before
    }
    // The bytes appended (the first line twice: stored as the new file, then hashed again as the
    // first append's base), not the sum of the file's sizes (100 lines: 505 000 bytes).
    expect(stored('/log-100', 100)).toBe(101 * line.length)
    expect(stored('/log-2000', 2000)).toBe(2001 * line.length)
    expect(ws.fs.readFileSync('/log-2000', 'latin1')).toBe(line.repeat(2000))
    // Older versions are the newer ones' first bytes: undo takes the file back line by line.
    for (let i = 0; i < 3; i++) await ws.undo({ steps: 1 })
    expect(ws.fs.readFileSync('/log-2000', 'latin1')).toBe(line.repeat(1997))
    // Appended again after the undo: the same content as before, and the next versions.
    ws.fs.appendFileSync('/log-2000', 'y\n')
    expect(ws.fs.readFileSync('/log-2000', 'latin1')).toBe(line.repeat(1997) + 'y\n')
    await ws.undo({ steps: 1 })
    expect(ws.fs.readFileSync('/log-2000', 'latin1')).toBe(line.repeat(1997))
  })

  it('purging the versions of one name leaves whole the later ones that shared their bytes', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    for (let i = 0; i < 20; i++) ws.fs.appendFileSync('/a.log', `secret ${i}\n`)
    // Renamed, then grown on: b.log's versions are views of the buffer a.log's were.
    ws.fs.renameSync('/a.log', '/b.log')
    for (let i = 20; i < 40; i++) ws.fs.appendFileSync('/b.log', `secret ${i}\n`)
    const expected = Array.from({ length: 40 }, (_, i) => `secret ${i}\n`).join('')
    const report = await ws.purge('/a.log')
    expect(report.erased).toBeGreaterThan(0)
    expect(ws.fs.readFileSync('/b.log', 'latin1')).toBe(expected)
    await ws.undo({ steps: 1 })
    expect(ws.fs.readFileSync('/b.log', 'latin1')).toBe(expected.slice(0, expected.lastIndexOf('secret 39')))
  })
})

describe('many watches', () => {
  it('a write asks the watches on its path and above, not every watch (a watch per directory, as chokidar makes: 4000 watches and writes took 1.9 s), and each hears what inotify would tell it', async () => {
    let registry: { counters: { asked: number } } | undefined
    const ws = await Workspace.open({
      watch: (ops) => {
        const watches = watching(ops)
        registry = watches as unknown as { counters: { asked: number } }
        return watches
      },
    })
    const dirs = 2000
    for (let i = 0; i < dirs; i++) ws.fs.mkdirSync(`/d${i}/sub`, { recursive: true })
    const heard: string[][] = Array.from({ length: dirs }, () => [])
    const watchers = Array.from({ length: dirs }, (_, i) => ws.fs.watch(`/d${i}`, (event, name) => heard[i].push(`${event}:${String(name)}`)))
    const root: string[] = []
    const top = ws.fs.watch('/', { recursive: true }, (event, name) => root.push(`${event}:${String(name)}`))
    const before = registry!.counters.asked
    for (let i = 0; i < dirs; i++) ws.fs.writeFileSync(`/d${i}/f`, 'x')
    await new Promise((resolve) => setTimeout(resolve, 20))
    // Each write: its directory's watch and the recursive one at the root.
    expect(registry!.counters.asked - before).toBe(2 * dirs)
    expect(heard.every((events) => events.join() === 'rename:f,change:f')).toBe(true)
    expect(root).toHaveLength(2 * dirs)
    // A directory renamed above a watch moves it along (all watches asked then), and the watch is found at its new path.
    ws.fs.renameSync('/d7', '/moved')
    ws.fs.writeFileSync('/moved/g', 'y')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(heard[7].slice(2)).toEqual(['rename:d7', 'rename:g', 'change:g'])
    for (const watcher of [...watchers, top]) watcher.close()
  })
})
