/**
 * fs.watch, fs.promises.watch and fs.watchFile against node:fs on a real Linux directory: each kind
 * of change is made to a real tree and to a workspace with the same tree, and the event sequences
 * must be equal. The real side is fenced: after the change a file is created in a watched fence
 * directory, and since inotify delivers in order, its event means every earlier one has arrived.
 */
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { hostShell } from '../adapters/node-fs/index.js'
import { seedWatchTree, watchCases } from './support/watch-cases.js'
import { watching } from '../src/watch.js'

type F = typeof nodeFs
const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-watch-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let counter = 0

const fenceDir = join(base, 'fence')
nodeFs.mkdirSync(fenceDir)
/** Resolves once every inotify event queued before it has been delivered. */
async function fence(): Promise<void> {
  const name = `fence-${counter++}`
  await new Promise<void>((resolve) => {
    const watcher = nodeFs.watch(fenceDir, (_type, file) => {
      if (file === name) {
        watcher.close()
        resolve()
      }
    })
    nodeFs.writeFileSync(join(fenceDir, name), '')
  })
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

async function workspaceWith(seed: (fs: F, at: (p: string) => string) => void) {
  const ws = await Workspace.open({ watch: watching, autoCheckpoint: false })
  const fs = ws.fs as unknown as F
  seed(fs, (p) => p)
  return { ws, fs }
}

function realDir(seed: (fs: F, at: (p: string) => string) => void) {
  const root = join(base, `real-${counter++}`)
  nodeFs.mkdirSync(root)
  seed(nodeFs, (p) => root + p)
  return root
}

/** Every directory under `root` (the oracle for recursive watches: one native watch on each). */
function directories(root: string): string[] {
  const out = [root]
  for (const entry of nodeFs.readdirSync(root, { withFileTypes: true })) if (entry.isDirectory()) out.push(...directories(join(root, entry.name)))
  return out
}

describe('fs.watch reports what inotify reports on Linux', () => {
  for (const [name, [watched, run]] of Object.entries(watchCases)) {
    it(`${name}: watching ${watched}`, async () => {
      const root = realDir(seedWatchTree)
      const expected: string[] = []
      const real = nodeFs.watch(root + watched, (type, file) => expected.push(`${type}:${file}`))
      run(nodeFs, (p) => root + p)
      await fence()
      real.close()

      const { fs } = await workspaceWith(seedWatchTree)
      const actual: string[] = []
      const ours = fs.watch(watched, (type, file) => actual.push(`${type}:${file}`))
      run(fs, (p) => p)
      await settle()
      ours.close()
      expect(actual).toEqual(expected)
    })
  }
})

/** Creating directories with entries, and changes below a directory renamed in the same step: a static set of native watches cannot see those. */
const beyondStaticWatches = new Set(['mkdirp', 'cpDir', 'dRenameThenWrite', 'dParentRenameThenWrite'])

describe('fs.watch with recursive reports every path below as a watch on its directory would', () => {
  for (const [name, [, run]] of Object.entries(watchCases)) {
    if (beyondStaticWatches.has(name)) continue
    it(`${name}`, async () => {
      const root = realDir(seedWatchTree)
      const top = root + '/d'
      const expected: string[] = []
      const real = directories(top).map((dir) =>
        nodeFs.watch(dir, (type, file) => {
          const path = join(dir, String(file))
          // A subdirectory's own events are its parent's events about it (reported once).
          if (dir !== top && path === join(dir, dir.slice(dir.lastIndexOf('/') + 1)) && !nodeFs.existsSync(path)) return
          expected.push(`${type}:${relative(top, path)}`)
        }),
      )
      run(nodeFs, (p) => root + p)
      await fence()
      for (const watcher of real) watcher.close()

      const { fs } = await workspaceWith(seedWatchTree)
      const actual: string[] = []
      const ours = fs.watch('/d', { recursive: true }, (type, file) => actual.push(`${type}:${file}`))
      run(fs, (p) => p)
      await settle()
      ours.close()
      expect(actual).toEqual(expected)
    })
  }

  it('also reports what is made inside new directories, and follows renamed ones', async () => {
    const { fs } = await workspaceWith(seedWatchTree)
    const events: string[] = []
    fs.watch('/', { recursive: true }, (type, file) => events.push(`${type}:${file}`))
    fs.mkdirSync('/d/m/n', { recursive: true })
    fs.renameSync('/d/sub', '/d/moved')
    fs.writeFileSync('/d/moved/deep/y', 'new')
    await settle()
    expect(events).toEqual(['rename:d/m', 'rename:d/m/n', 'rename:d/sub', 'rename:d/moved', 'change:d/moved/deep/y'])
  })
})

describe('changes made by the engine reach watchers, one batch per operation', () => {
  async function watched() {
    const ws = await Workspace.open({ watch: watching, lower: { '/app/a.txt': 'a', '/app/lib/b.txt': 'b' }, autoCheckpoint: false, exec: hostShell() })
    const dir: string[] = []
    const all: string[] = []
    const batches: string[][] = []
    ws.fs.watch('/app', (type, file) => dir.push(`${type}:${file}`))
    ws.fs.watch('/', { recursive: true }, (type, file) => all.push(`${type}:${file}`))
    ws.events.on('change', (event) => batches.push(event.changes.map((c) => `${c.kind} ${c.path}${c.from ? ` from ${c.from}` : ''}`)))
    const step = async (body: () => unknown) => {
      await settle() // what came before is not this step's
      dir.length = 0
      all.length = 0
      batches.length = 0
      await body()
      await settle()
      return { dir: [...dir], all: [...all], batches: batches.map((b) => [...b]) }
    }
    return { ws, step }
  }

  it('undo and redo of a rename are renames', async () => {
    const { ws, step } = await watched()
    ws.fs.renameSync('/app/lib', '/app/lib2')
    expect(await step(() => ws.undo())).toEqual({ dir: ['rename:lib2', 'rename:lib'], all: ['rename:app/lib2', 'rename:app/lib'], batches: [['moved /app/lib from /app/lib2']] })
    expect(await step(() => ws.redo())).toEqual({ dir: ['rename:lib', 'rename:lib2'], all: ['rename:app/lib', 'rename:app/lib2'], batches: [['moved /app/lib2 from /app/lib']] })
  })

  it('a transaction lands as one batch; its undo as another', async () => {
    const { ws, step } = await watched()
    const commit = await step(() =>
      ws.transaction((fs) => {
        fs.writeFileSync('/app/new.txt', 'n')
        fs.rmSync('/app/a.txt')
        fs.mkdirSync('/app/x/y', { recursive: true })
      }),
    )
    expect(commit.batches).toHaveLength(1)
    expect([...commit.dir].sort()).toEqual(['change:new.txt', 'rename:a.txt', 'rename:new.txt', 'rename:x'])
    expect([...commit.all].sort()).toEqual(['change:app/new.txt', 'rename:app/a.txt', 'rename:app/new.txt', 'rename:app/x', 'rename:app/x/y'])
    const undone = await step(() => ws.undo())
    expect(undone.batches).toHaveLength(1)
    expect([...undone.all].sort()).toEqual(['change:app/a.txt', 'rename:app/a.txt', 'rename:app/new.txt', 'rename:app/x', 'rename:app/x/y'])
  })

  it('restore and reset report every path that differs; exec ingests as one batch', async () => {
    const { ws, step } = await watched()
    await ws.checkpoint({ name: 'start' })
    ws.fs.writeFileSync('/app/a.txt', 'changed')
    ws.fs.rmSync('/app/lib', { recursive: true })
    const restored = await step(() => ws.restore('start'))
    expect(restored.batches).toHaveLength(1)
    expect([...restored.all].sort()).toEqual(['change:app/a.txt', 'change:app/lib/b.txt', 'rename:app/lib', 'rename:app/lib/b.txt'])
    ws.fs.writeFileSync('/app/c.txt', 'c')
    const reset = await step(() => ws.reset())
    expect(reset.all).toEqual(['rename:app/c.txt'])
    const ran = await step(() => ws.exec('echo hi > app/e.txt && rm app/a.txt'))
    expect(ran.batches).toHaveLength(1)
    expect([...ran.dir].sort()).toEqual(['change:e.txt', 'rename:a.txt', 'rename:e.txt'])
  })

  it('a write through a descriptor is reported without waiting for close', async () => {
    const { ws, step } = await watched()
    const fd = ws.fs.openSync('/app/a.txt', 'r+')
    const written = await step(() => ws.fs.writeSync(fd, 'A'))
    expect(written.dir).toEqual(['change:a.txt'])
    ws.fs.closeSync(fd)
  })

  it('a watcher on / with 10k files gets 10k events for 10k writes, one batch per write', async () => {
    const ws = await Workspace.open({ watch: watching, autoCheckpoint: false })
    for (let d = 0; d < 10; d++) ws.fs.mkdirSync(`/d${d}`)
    for (let i = 0; i < 10_000; i++) ws.fs.writeFileSync(`/d${i % 10}/f${i}`, 'x')
    let events = 0
    let batches = 0
    ws.fs.watch('/', { recursive: true }, () => events++)
    ws.events.on('change', () => batches++)
    for (let i = 0; i < 10_000; i++) ws.fs.writeFileSync(`/d${i % 10}/f${i}`, 'y')
    await settle()
    expect([events, batches]).toEqual([10_000, 10_000])
  })
})

describe('FSWatcher and fs.promises.watch behave as Node', () => {
  it('close emits close once on a later tick, stops events, and Symbol.dispose closes', async () => {
    const { fs } = await workspaceWith(seedWatchTree)
    const log: string[] = []
    const watcher = fs.watch('/d', (type, file) => log.push(`${type}:${file}`))
    watcher.on('close', () => log.push('close'))
    expect(watcher.ref()).toBe(watcher)
    expect(watcher.unref()).toBe(watcher)
    watcher.close()
    log.push('after close')
    watcher.close()
    fs.writeFileSync('/d/after', 'x')
    await settle()
    expect(log).toEqual(['after close', 'close'])

    const disposed: string[] = []
    {
      using scoped = fs.watch('/d', (type, file) => disposed.push(`${type}:${file}`)) as nodeFs.FSWatcher & Disposable
      void scoped
    }
    fs.writeFileSync('/d/later', 'x')
    await settle()
    expect(disposed).toEqual([])

    const controller = new AbortController()
    const aborted: string[] = []
    fs.watch('/d', { signal: controller.signal }, (type, file) => aborted.push(`${type}:${file}`)).on('close', () => aborted.push('close'))
    controller.abort()
    fs.writeFileSync('/d/gone', 'x')
    await settle()
    expect(aborted).toEqual(['close'])
  })

  it('a missing path fails like Node, with filename; encoding buffer gives Buffers', async () => {
    const { fs } = await workspaceWith(seedWatchTree)
    const ours = (() => {
      try {
        fs.watch('/nope')
      } catch (error) {
        return error
      }
    })() as NodeJS.ErrnoException & { filename?: string }
    const theirs = (() => {
      try {
        nodeFs.watch(join(base, 'nope'))
      } catch (error) {
        return error
      }
    })() as NodeJS.ErrnoException & { filename?: string }
    expect([ours.code, ours.syscall, ours.filename, Object.keys(ours)]).toEqual([theirs.code, theirs.syscall, '/nope', Object.keys(theirs)])
    const names: unknown[] = []
    fs.watch('/d', { encoding: 'buffer' }, (_type, file) => names.push(file))
    fs.writeFileSync('/d/b', '')
    await settle()
    expect(names).toEqual([Buffer.from('b')])
  })

  it('promises.watch queues events and ends with Node’s AbortError', async () => {
    const { fs } = await workspaceWith(seedWatchTree)
    const controller = new AbortController()
    const seen: string[] = []
    const iterating = (async () => {
      try {
        for await (const { eventType, filename } of fs.promises.watch('/d', { signal: controller.signal })) {
          seen.push(`${eventType}:${filename}`)
          if (seen.length === 4) controller.abort('enough')
        }
      } catch (error) {
        return error
      }
    })()
    fs.writeFileSync('/d/x', '1')
    fs.writeFileSync('/d/y', '1')
    const ours = (await iterating) as Error & { code?: string }
    expect(seen).toEqual(['rename:x', 'change:x', 'rename:y', 'change:y'])

    const realController = new AbortController()
    const real = (async () => {
      try {
        for await (const _ of nodeFs.promises.watch(base, { signal: realController.signal })) void _
      } catch (error) {
        return error
      }
    })()
    realController.abort('enough')
    const theirs = (await real) as Error & { code?: string }
    expect([ours.name, ours.code, ours.message, ours.cause]).toEqual([theirs.name, theirs.code, theirs.message, theirs.cause])

    const iterator = (path: string, options?: object) => fs.promises.watch(path, options) as unknown as AsyncIterator<unknown>
    const early = await iterator('/d', { signal: AbortSignal.abort() }).next().catch((e: Error) => e.name)
    expect(early).toBe('AbortError')
    const missing = await iterator('/nope').next().catch((e: NodeJS.ErrnoException) => [e.code, e.syscall])
    expect(missing).toEqual(['ENOENT', 'watch'])
  })
})

describe('fs.watchFile is Node’s StatWatcher', () => {
  /** The listener calls for one script of changes, as (current size, previous size, current nlink) triples. */
  async function record(fs: F, path: string, script: (() => void)[]): Promise<string[]> {
    const calls: string[] = []
    const listener = (current: nodeFs.Stats, previous: nodeFs.Stats) => calls.push(`${current.size}/${previous.size}/${current.nlink}/${current.mtimeMs === 0 ? 'zero' : 'set'}`)
    fs.watchFile(path, { interval: 10 }, listener)
    await new Promise((resolve) => setTimeout(resolve, 60))
    for (const change of script) {
      change()
      await new Promise((resolve) => setTimeout(resolve, 80))
    }
    fs.unwatchFile(path, listener)
    return calls
  }

  it('reports changes of the stat, a missing file as the zeroed stat, and nothing for reads', async () => {
    const root = join(base, `stat-${counter++}`)
    nodeFs.mkdirSync(root)
    const script = (fs: F, at: (p: string) => string) => [
      () => fs.writeFileSync(at('/f'), 'abc'),
      () => fs.readFileSync(at('/f')),
      () => fs.appendFileSync(at('/f'), 'de'),
      () => fs.chmodSync(at('/f'), 0o600),
      () => fs.unlinkSync(at('/f')),
    ]
    const expected = await record(nodeFs, root + '/f', script(nodeFs, (p) => root + p))
    const { fs } = await workspaceWith(() => undefined)
    const actual = await record(fs, '/f', script(fs, (p) => p))
    expect(actual).toEqual(expected)
    expect(actual[0]).toBe('0/0/0/zero')
  })

  it('shares one watcher per path; unwatchFile removes one listener or all, then stops', async () => {
    const { fs } = await workspaceWith(seedWatchTree)
    const first = fs.watchFile('/d/f', { interval: 10 }, () => undefined)
    const second = fs.watchFile('/d/f', () => undefined)
    expect(second).toBe(first)
    let stopped = 0
    first.on('stop', () => stopped++)
    const calls: number[] = []
    fs.watchFile('/d/f', (current) => calls.push(current.size))
    fs.unwatchFile('/d/f')
    await settle()
    expect(stopped).toBe(1)
    fs.writeFileSync('/d/f', 'longer content')
    await new Promise((resolve) => setTimeout(resolve, 40))
    expect(calls).toEqual([])
    expect(() => (fs.watchFile as (path: string, options: object) => void)('/d/f', { interval: 10 })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })
})

describe('watching is a capability the workspace is given (rewindfs/watch)', () => {
  it('without it the watch members are ENOSYS, saying what to pass; forks and staged fs inherit it', async () => {
    const bare = await Workspace.open({ lower: { '/a.txt': 'a' } })
    for (const call of [() => bare.fs.watch('/'), () => bare.fs.promises.watch('/'), () => bare.fs.watchFile('/a.txt', () => undefined), () => bare.fs.unwatchFile('/a.txt')]) {
      expect(call).toThrow(expect.objectContaining({ code: 'ENOSYS', message: expect.stringContaining("watching from 'rewindfs/watch'") }))
    }
    await bare.close()

    const ws = await Workspace.open({ lower: { '/a.txt': 'a' }, watch: watching })
    const fork = await ws.fork()
    const seen: string[] = []
    const watcher = fork.fs.watch('/', (type, name) => seen.push(`${type}:${String(name)}`))
    fork.fs.writeFileSync('/b.txt', 'b')
    await settle()
    expect(seen).toEqual(['rename:b.txt', 'change:b.txt'])
    watcher.close()
    await ws.transaction(async (staged) => {
      const inside: string[] = []
      const stagedWatcher = staged.watch('/', (type, name) => inside.push(`${type}:${String(name)}`))
      staged.rmSync('/a.txt')
      await settle()
      expect(inside).toEqual(['rename:a.txt'])
      stagedWatcher.close()
    })
    await fork.close()
    await ws.close()
  })
})

describe("ws.events 'change' comes with watching too", () => {
  it("is ENOSYS without it, and a stream of every type leaves it out; the other events are told either way", async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a' }, autoCheckpoint: false })
    expect(() => ws.events.on('change', () => undefined)).toThrow(expect.objectContaining({ code: 'ENOSYS', message: expect.stringContaining("'rewindfs/watch'") }))
    expect(() => ws.events.stream({ types: ['change'] })).toThrow(expect.objectContaining({ code: 'ENOSYS' }))
    const stream = ws.events.stream()
    const operations: string[] = []
    ws.events.on('operation', (event) => operations.push(event.operation.type))
    ws.fs.writeFileSync('/a.txt', 'b')
    await settle()
    expect(operations).toEqual(['file_edit'])
    expect((await stream.next()).value).toMatchObject({ type: 'operation' })
    await stream.return!()
    await ws.close()
  })
})
