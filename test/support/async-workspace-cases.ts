/**
 * One behaviour suite for every AsyncWorkspace: the in-process Workspace, the engine in a worker
 * thread and the engine in a browser's Web Worker must answer the same calls the same way (values,
 * Node-shaped errors, engine reports). Platform-neutral: only `expect` comes from vitest, so a
 * browser page bundles these cases with @vitest/expect in its place (test/browser/expect-shim.ts).
 */
// The zip is read back by fflate, a reader of its own that runs in browsers too (a devDependency only).
import { unzipSync } from 'fflate'
import { expect } from 'vitest'
import type { AsyncWorkspace } from '../../src/async-workspace.js'
import { type ExportsRemotely, exportView } from '../../src/export.js'
import type { Workspace } from '../../src/workspace.js'

/** Opens a fresh workspace over `files` as its lower layer (a fixture: path → text); closed after the case. */
export type Fresh = (files?: Record<string, string>) => Promise<AsyncWorkspace>

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** Waits (a few milliseconds at a time, up to five seconds) until `ready` holds. */
async function until(ready: () => boolean): Promise<void> {
  for (let waited = 0; !ready(); waited += 5) {
    if (waited > 5000) throw new Error('timed out waiting for events')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** What a member threw or rejected with: synchronous members of Workspace throw, remote ones reject. */
async function failure(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('expected the call to fail')
}

export const asyncWorkspaceCases: Record<string, (fresh: Fresh) => Promise<void>> = {
  'reads the lower layer and writes, lists, stats, renames and removes through fs.promises': async (fresh) => {
    const ws = await fresh({ '/app/config.json': '{ "port": 8080 }\n', '/app/src/index.js': 'serve()\n' })
    const fs = ws.fs.promises
    expect(await fs.readFile('/app/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
    const bytes = await fs.readFile('/app/src/index.js')
    expect(bytes).toBeInstanceOf(Uint8Array)
    expect(text(bytes)).toBe('serve()\n')

    await fs.mkdir('/app/lib/deep', { recursive: true })
    await fs.writeFile('/app/lib/deep/a.bin', new Uint8Array([0, 1, 254, 255]))
    await fs.appendFile('/app/lib/log.txt', 'one\n')
    await fs.appendFile('/app/lib/log.txt', 'two\n')
    expect([...(await fs.readFile('/app/lib/deep/a.bin'))]).toEqual([0, 1, 254, 255])
    expect(await fs.readFile('/app/lib/log.txt', 'utf8')).toBe('one\ntwo\n')

    const entries = await fs.readdir('/app', { withFileTypes: true })
    expect(entries.map((e) => `${e.name}:${e.isDirectory() ? 'dir' : e.isFile() ? 'file' : '?'}:${e.parentPath}`).sort()).toEqual([
      'config.json:file:/app',
      'lib:dir:/app',
      'src:dir:/app',
    ])
    expect((await fs.readdir('/app', { recursive: true })).sort()).toEqual(
      ['config.json', 'lib', 'lib/deep', 'lib/deep/a.bin', 'lib/log.txt', 'src', 'src/index.js'].sort(),
    )

    const stats = await fs.stat('/app/lib/log.txt')
    expect(stats.isFile()).toBe(true)
    expect(stats.isDirectory()).toBe(false)
    expect(stats.size).toBe(8)
    expect(stats.mtime).toBeInstanceOf(Date)
    expect(stats.mtime.getTime()).toBe(Math.trunc(stats.mtimeMs))
    const big = await fs.stat('/app/lib/log.txt', { bigint: true })
    expect(big.size).toBe(8n)

    await fs.symlink('config.json', '/app/link')
    expect(await fs.readlink('/app/link')).toBe('config.json')
    expect((await fs.lstat('/app/link')).isSymbolicLink()).toBe(true)
    expect(await fs.realpath('/app/link')).toBe('/app/config.json')

    await fs.rename('/app/lib/log.txt', '/app/log.txt')
    await fs.copyFile('/app/log.txt', '/app/copy.txt')
    await fs.unlink('/app/log.txt')
    await fs.rm('/app/lib', { recursive: true })
    expect((await fs.readdir('/app')).sort()).toEqual(['config.json', 'copy.txt', 'link', 'src'])
    expect(await fs.readFile('/app/copy.txt', 'utf8')).toBe('one\ntwo\n')
  },

  'makes hard links: one inode under two names, Linux errors, one undo step': async (fresh) => {
    const ws = await fresh({ '/app/a.txt': 'a' })
    const fs = ws.fs.promises
    await fs.link('/app/a.txt', '/app/b.txt')
    await fs.writeFile('/app/b.txt', 'through b')
    expect(await fs.readFile('/app/a.txt', 'utf8')).toBe('through b')
    const [a, b] = [await fs.stat('/app/a.txt'), await fs.stat('/app/b.txt')]
    expect([a.nlink, b.nlink, a.ino === b.ino]).toEqual([2, 2, true])
    await expect(fs.link('/app/a.txt', '/app/b.txt')).rejects.toMatchObject({ code: 'EEXIST', syscall: 'link', path: '/app/a.txt', dest: '/app/b.txt' })
    await expect(fs.link('/app', '/dir-link')).rejects.toMatchObject({ code: 'EPERM', syscall: 'link' })
    await fs.unlink('/app/a.txt')
    expect((await fs.stat('/app/b.txt')).nlink).toBe(1)
    await ws.undo()
    expect((await fs.stat('/app/a.txt')).nlink).toBe(2)
  },

  "keeps Node's error shape: code, errno, syscall, path and message": async (fresh) => {
    const ws = await fresh({ '/dir/file.txt': 'x' })
    const fs = ws.fs.promises
    const missing = await fs.readFile('/missing.txt').catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(Error)
    expect(missing).toMatchObject({ code: 'ENOENT', errno: -2, syscall: 'open', path: '/missing.txt' })
    expect((missing as Error).message).toBe("ENOENT: no such file or directory, open '/missing.txt'")

    await expect(fs.mkdir('/dir')).rejects.toMatchObject({ code: 'EEXIST', errno: -17, syscall: 'mkdir', path: '/dir' })
    await expect(fs.rmdir('/dir')).rejects.toMatchObject({ code: 'ENOTEMPTY', syscall: 'rmdir', path: '/dir' })
    await expect(fs.rename('/nope', '/dir/b')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'rename', path: '/nope', dest: '/dir/b' })
    const badArgument = await fs.writeFile('/dir/n.txt', 42 as unknown as string).catch((e: unknown) => e)
    expect(badArgument).toBeInstanceOf(TypeError)
    expect(badArgument).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    // Nothing of the failed calls landed.
    expect(await fs.readdir('/dir')).toEqual(['file.txt'])
  },

  'checkpoints, diffs and restores (also as a dry run), and refuses a duplicate name': async (fresh) => {
    const ws = await fresh({ '/app/config.json': '{ "port": 8080 }\n', '/app/server.js': 'serve()\n' })
    const fs = ws.fs.promises
    const good = await ws.checkpoint({ name: 'known-good', description: 'before the config change' })
    expect(good).toMatchObject({ name: 'known-good', kind: 'manual', session: ws.session, description: 'before the config change' })
    await expect(ws.checkpoint({ name: 'known-good' })).rejects.toMatchObject({ code: 'EEXIST' })

    await fs.writeFile('/app/config.json', '{ broken')
    await fs.rm('/app/server.js')
    const changes = await ws.diff('known-good')
    expect(changes.map((c) => `${c.type} ${c.path}`).sort()).toEqual(['deleted /app/server.js', 'modified /app/config.json'])
    expect(changes.find((c) => c.path === '/app/config.json')?.patch).toContain('+{ broken')

    const preview = await ws.restore('known-good', { dryRun: true })
    expect(preview.applied).toBe(false)
    expect(await fs.readFile('/app/config.json', 'utf8')).toBe('{ broken')

    const report = await ws.restore(good.id)
    expect(report.applied).toBe(true)
    expect(report.guard?.kind).toBe('guard')
    expect(await fs.readFile('/app/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
    expect(await fs.readFile('/app/server.js', 'utf8')).toBe('serve()\n')
    expect((await ws.checkpoints()).map((c) => c.kind)).toEqual(['manual', 'guard'])

    await ws.undoRestore()
    expect(await fs.readFile('/app/config.json', 'utf8')).toBe('{ broken')
  },

  'undoes, redoes and lists history with per-operation diffs': async (fresh) => {
    const ws = await fresh()
    const fs = ws.fs.promises
    await fs.writeFile('/a.txt', 'one\n')
    await fs.appendFile('/a.txt', 'two\n')
    const history = await ws.history()
    expect(history.map((op) => op.type)).toEqual(['file_edit', 'file_create'])
    const detail = await ws.operation(history[0].id)
    expect(detail?.diff[0].patch).toContain('+two')

    const undone = await ws.undo()
    expect(undone.undone.map((op) => op.id)).toEqual([history[0].id])
    expect(undone.changesReverted['/a.txt']).toEqual({ linesRestored: 0, linesRemoved: 1 })
    expect(await fs.readFile('/a.txt', 'utf8')).toBe('one\n')
    const redone = await ws.redo()
    expect(redone.redone).toHaveLength(1)
    expect(await fs.readFile('/a.txt', 'utf8')).toBe('one\ntwo\n')
  },

  'resets to the lower layer and lists changes against it': async (fresh) => {
    const ws = await fresh({ '/keep.txt': 'lower\n' })
    const fs = ws.fs.promises
    await fs.writeFile('/keep.txt', 'upper\n')
    await fs.writeFile('/new.txt', 'new\n')
    expect((await ws.changes()).map((c) => `${c.type} ${c.path}`).sort()).toEqual(['added /new.txt', 'modified /keep.txt'])
    await ws.reset()
    expect(await ws.changes()).toEqual([])
    expect(await fs.readFile('/keep.txt', 'utf8')).toBe('lower\n')
    await expect(fs.access('/new.txt')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'access' })
  },

  'commits a transaction as one operation, and leaves nothing behind when its body throws': async (fresh) => {
    const ws = await fresh({ '/servers/s1.json': '{}' })
    const result = await ws.transaction(
      async (staged) => {
        await staged.promises.writeFile('/servers/s1.json', '{"v":2}')
        await staged.promises.writeFile('/servers/s2.json', '{"v":2}')
        // The staging overlay is not visible outside until the commit.
        await expect(ws.fs.promises.readFile('/servers/s2.json')).rejects.toMatchObject({ code: 'ENOENT' })
        return { staged: 2 }
      },
      { group: 'rollout', label: 'two servers' },
    )
    expect(result).toEqual({ staged: 2 })
    expect(await ws.fs.promises.readFile('/servers/s2.json', 'utf8')).toBe('{"v":2}')
    const [op] = await ws.history({ limit: 1 })
    expect(op).toMatchObject({ type: 'transaction', group: 'rollout' })

    const before = await ws.history()
    const failure = await ws
      .transaction(async (staged) => {
        await staged.promises.writeFile('/servers/s3.json', 'x')
        await staged.promises.readFile('/servers/absent.json')
      })
      .catch((e: unknown) => e)
    expect(failure).toMatchObject({ code: 'ENOENT', syscall: 'open', path: '/servers/absent.json' })
    await expect(ws.fs.promises.access('/servers/s3.json')).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await ws.history()).toEqual(before)
  },

  "types a transaction's operation as asked, for history and undo's type filter, and refuses a type undo tells apart": async (fresh) => {
    const ws = await fresh({ '/keep.txt': 'lower\n' })
    await ws.transaction(
      async (staged) => {
        await staged.promises.mkdir('/a/b', { recursive: true })
        await staged.promises.writeFile('/a/b/new.txt', 'new\n')
      },
      { type: 'file_create', label: 'file create /a/b/new.txt' },
    )
    const [op] = await ws.history({ type: 'file_create' })
    expect(op).toMatchObject({ type: 'file_create', description: 'file create /a/b/new.txt' })
    const before = await ws.history()
    const refused = await ws.transaction(async (staged) => staged.promises.writeFile('/x.txt', 'x'), { type: 'restore' as never }).catch((e: unknown) => e)
    expect(refused).toMatchObject({ name: 'TypeError', message: expect.stringContaining('transaction type must be one of') })
    await expect(ws.fs.promises.access('/x.txt')).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await ws.history()).toEqual(before)
    const undone = await ws.undo({ types: ['file_create'] })
    expect(undone.undone.map((operation) => operation.id)).toEqual([op.id])
    await expect(ws.fs.promises.access('/a')).rejects.toMatchObject({ code: 'ENOENT' })
  },

  'asks the approval hook above the risk threshold and refuses when it says no': async (fresh) => {
    const ws = await fresh({ '/a': '1', '/b': '2' })
    const asked: number[] = []
    const refused = await ws
      .transaction(
        async (staged) => {
          await staged.promises.rm('/a')
          await staged.promises.rm('/b')
        },
        { riskThreshold: 1, approve: (request) => (asked.push(request.risk.score), false) },
      )
      .catch((e: unknown) => e)
    expect(asked).toEqual([12]) // two deletes (3 each), two files touched, two lower overwrites (2 each)
    expect(refused).toMatchObject({ code: 'EAPPROVAL' })
    expect(await ws.fs.promises.readFile('/a', 'utf8')).toBe('1')
  },

  'keeps session state with checkpoints and restores files and state together': async (fresh) => {
    const ws = await fresh()
    await ws.state.set('plan', ['migrate', 'verify'])
    await ws.fs.promises.writeFile('/plan.md', '1. migrate')
    await ws.checkpoint({ name: 'planned' })
    await ws.state.set('plan', ['abandoned'])
    await ws.state.set('extra', 1)
    expect(await ws.state.delete('extra')).toBe(true)
    expect(await ws.state.delete('extra')).toBe(false)
    const report = await ws.restore('planned')
    expect(report.state).toEqual({ plan: ['migrate', 'verify'] })
    expect(await ws.state.get('plan')).toEqual(['migrate', 'verify'])
    expect(await ws.state.entries()).toEqual([['plan', ['migrate', 'verify']]])
  },

  'runs a side effect’s compensation on undo and reports it compensated': async (fresh) => {
    const ws = await fresh()
    const sent: string[] = ['hello']
    await ws.recordSideEffect({ description: 'sent email hello', compensate: () => void sent.splice(0, 1) })
    const result = await ws.undo()
    expect(result.compensated).toEqual(['sent email hello'])
    expect(sent).toEqual([])
  },

  'marks turns, keeps the resume point, renames and deletes checkpoints': async (fresh) => {
    const ws = await fresh()
    const turn = await ws.beginTurn(3)
    expect(turn).toMatchObject({ kind: 'turn', name: 'turn-3' })
    await ws.fs.promises.writeFile('/t.txt', 'a\nb\n')
    expect((await ws.history({ limit: 1 }))[0].turn).toBe(3)
    await ws.setResume({ phase: 'verify', turn: 3, data: { step: 2 } })
    expect(ws.resume).toEqual({ phase: 'verify', turn: 3, data: { step: 2 } })

    const manual = await ws.checkpoint({ name: 'm' })
    expect(await ws.renameCheckpoint('m', 'renamed')).toMatchObject({ id: manual.id, name: 'renamed' })
    const info = await ws.checkpointInfo('renamed')
    expect(info).toMatchObject({ files: 1, totalLines: 2, bytes: 4 })
    await ws.deleteCheckpoint('renamed')
    expect((await ws.checkpoints()).map((c) => c.name)).toEqual(['turn-3'])
    await expect(ws.restore('renamed')).rejects.toMatchObject({ code: 'ENOENT' })
  },

  'forks a session that shares the tree at the fork and writes on its own': async (fresh) => {
    const ws = await fresh({ '/base.txt': 'base' })
    await ws.fs.promises.writeFile('/before.txt', 'shared')
    const fork = await ws.fork('experiment')
    expect(fork.session).toBe('experiment')
    await fork.fs.promises.writeFile('/before.txt', 'fork only')
    expect(await ws.fs.promises.readFile('/before.txt', 'utf8')).toBe('shared')
    expect(await fork.fs.promises.readFile('/before.txt', 'utf8')).toBe('fork only')
    await fork.close()
  },

  'resolves relative paths against chdir, freezes writes with EROFS, and purges content': async (fresh) => {
    const ws = await fresh({ '/app/a.txt': 'a' })
    await ws.chdir('/app')
    expect(await ws.cwd()).toBe('/app')
    expect(await ws.fs.promises.readFile('a.txt', 'utf8')).toBe('a')
    expect(await failure(() => ws.chdir('/app/a.txt'))).toMatchObject({ code: 'ENOTDIR', syscall: 'chdir' })

    await ws.freeze('maintenance')
    await expect(ws.fs.promises.writeFile('/x', '1')).rejects.toMatchObject({ code: 'EROFS' })
    await ws.unfreeze()
    await ws.fs.promises.writeFile('/.env', 'TOKEN=leaked')
    await ws.checkpoint({ name: 'with-secret' })
    const report = await ws.purge('/.env')
    expect(report).toMatchObject({ lowerStillHasIt: false })
    expect(report.erased).toBeGreaterThan(0)
    expect(await ws.fs.promises.readFile('/.env', 'utf8')).toBe('')
    await ws.collectGarbage()
    await ws.sync()
    await ws.compact()
    expect(ws.status.degraded).toBeUndefined()
  },

  'exports the view as a FileSystemTree and as a zip, each as it was when the export began': async (fresh) => {
    const ws = await fresh({ '/app/a.txt': 'lower a', '/app/src/index.js': 'serve()\n', '/other.txt': 'outside' })
    const fs = ws.fs.promises
    await fs.writeFile('/app/bin.dat', new Uint8Array([0, 1, 2, 255]))
    await fs.symlink('src/index.js', '/app/main')
    await fs.mkdir('/app/empty')
    const tree = await exportView(ws as Workspace | ExportsRemotely, { format: 'file-system-tree', path: '/app' })
    const bytes = (node: unknown) => [...((node as { file: { contents: Uint8Array } }).file.contents)]
    expect(Object.keys(tree).sort()).toEqual(['a.txt', 'bin.dat', 'empty', 'main', 'src'])
    expect(text((tree['a.txt'] as { file: { contents: Uint8Array } }).file.contents)).toBe('lower a')
    expect(bytes(tree['bin.dat'])).toEqual([0, 1, 2, 255])
    expect(tree.main).toEqual({ file: { symlink: 'src/index.js' } })
    expect(tree.empty).toEqual({ directory: {} })
    expect(Object.keys((tree.src as { directory: object }).directory)).toEqual(['index.js'])

    // Past one read slice (1 MiB) and compressible: deflated as a stream (CompressionStream in a browser).
    const long = Array.from({ length: 40_000 }, (_, i) => `line ${i} of a file that deflates well\n`).join('')
    await fs.writeFile('/app/long.txt', long)
    const archive = await exportView(ws as Workspace | ExportsRemotely, { format: 'zip', level: 9 })
    // Written after the export began: not in it.
    await fs.writeFile('/app/later.txt', 'later')
    await fs.rm('/other.txt')
    const chunks: Uint8Array[] = []
    for await (const chunk of archive) chunks.push(chunk)
    const zipped = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0))
    let at = 0
    for (const chunk of chunks) {
      zipped.set(chunk, at)
      at += chunk.byteLength
    }
    const files = unzipSync(zipped)
    expect(Object.keys(files).sort()).toEqual(['app/', 'app/a.txt', 'app/bin.dat', 'app/empty/', 'app/long.txt', 'app/main', 'app/src/', 'app/src/index.js', 'other.txt'])
    expect(text(files['app/long.txt'])).toBe(long)
    expect(zipped.byteLength).toBeLessThan(long.length / 3)
    expect(text(files['app/src/index.js'])).toBe('serve()\n')
    expect(text(files['app/main'])).toBe('src/index.js')
    expect([...files['app/bin.dat']]).toEqual([0, 1, 2, 255])
    expect(text(files['other.txt'])).toBe('outside')
    await expect(exportView(ws as Workspace | ExportsRemotely, { format: 'tar' as 'zip' })).rejects.toMatchObject({ code: expect.stringMatching(/ERR_INVALID_ARG_VALUE|ERR_REWINDFS_BAD_CALL/) })
    await expect(exportView(ws as Workspace | ExportsRemotely, { format: 'file-system-tree', path: '/app/a.txt' })).rejects.toMatchObject({ code: 'ENOTDIR' })
  },

  'answers frozen, counters, storage, verify, repair and prefetch as the in-process Workspace does': async (fresh) => {
    const ws = await fresh({ '/a.txt': 'a' })
    expect(ws.frozen).toBeUndefined()
    await ws.freeze('read-only review')
    expect(ws.frozen).toBe('read-only review')
    await ws.unfreeze()
    expect(ws.frozen).toBeUndefined()
    const before = await ws.counters
    await ws.fs.promises.writeFile('/b.txt', 'new content')
    const after = await ws.counters
    expect(after.blobsTouched).toBeGreaterThan(before.blobsTouched)
    expect((await ws.storage).blobs).toBeGreaterThan(0)
    expect(await ws.verify()).toEqual({ verified: 0, corrupt: [], broken: [], damagedPaths: [] })
    // Without a store there is nothing to repair: Node-shaped EINVAL, on both sides.
    await expect(ws.repair({ dryRun: true })).rejects.toMatchObject({ code: 'EINVAL', message: /repair needs a workspace opened on a store/ })
    expect(ws.status.corrupt).toBeUndefined()
    await ws.prefetch(['/a.txt', '/missing'])
    expect(await ws.fs.promises.readFile('/a.txt', 'utf8')).toBe('a')
  },

  'opens FileHandles and Dirs on a transaction’s staged fs': async (fresh) => {
    const ws = await fresh({ '/d/one.txt': '1' })
    await ws.transaction(async (staged) => {
      const fh = await staged.promises.open('/d/two.txt', 'w')
      await fh.write('staged two')
      await fh.close()
      const names: string[] = []
      for await (const entry of await staged.promises.opendir('/d')) names.push(entry.name)
      expect(names.sort()).toEqual(['one.txt', 'two.txt'])
    })
    expect(await ws.fs.promises.readFile('/d/two.txt', 'utf8')).toBe('staged two')
  },

  'watches the whole workspace and tells its events: a recursive fs.watch on /, ws.events for operations, undo, checkpoints and restores; both end when it closes': async (fresh) => {
    const ws = await fresh({ '/app/a.txt': 'a', '/app/lib/b.txt': 'b' })
    const fs = ws.fs
    const all: string[] = []
    const timeline: string[] = []
    const everything = fs.watch('/', { recursive: true }, (type, name) => all.push(`${type}:${String(name)}`))
    const closed = new Promise<string>((resolve) => everything.once('close', () => resolve('closed')))
    const offs = [
      ws.events.on('operation', (event) => timeline.push(`operation ${event.operation.type}`)),
      ws.events.on('undo', (event) => timeline.push(`undo ${event.operation.type}`)),
      ws.events.on('checkpoint', (event) => timeline.push(`checkpoint ${event.checkpoint.name}`)),
      ws.events.on('restore', (event) => timeline.push(`restore ${event.target} ${event.changes}`)),
      ws.events.on('change', (event) => timeline.push(`${event.cause}: ${event.changes.map((c) => `${c.kind} ${c.path}${c.from ? ` from ${c.from}` : ''}`).join(', ')}`)),
    ]
    await ws.checkpoint({ name: 'start' })
    await fs.promises.writeFile('/app/b.txt', 'b')
    await fs.promises.rename('/app/lib', '/app/src')
    await fs.promises.writeFile('/app/src/b.txt', 'B')
    await ws.undo()
    await ws.transaction(async (staged) => {
      await staged.promises.writeFile('/app/t1', '1')
      await staged.promises.rm('/app/a.txt')
    })
    await ws.restore('start')
    await fs.promises.mkdir('/app/fence')
    await until(() => all.includes('rename:app/fence') && timeline.includes('operation: created /app/fence'))
    expect(all).toEqual([
      'rename:app/b.txt',
      'change:app/b.txt',
      'rename:app/lib',
      'rename:app/src',
      'change:app/src/b.txt',
      'change:app/src/b.txt',
      'rename:app/t1',
      'change:app/t1',
      'rename:app/a.txt',
      'rename:app/a.txt',
      'change:app/a.txt',
      'rename:app/b.txt',
      'rename:app/src',
      'rename:app/lib',
      'rename:app/t1',
      'rename:app/fence',
    ])
    expect(timeline).toEqual([
      'checkpoint start',
      'operation: created /app/b.txt',
      'operation file_create',
      // A rename is high risk: the automatic checkpoint before it is told first.
      'checkpoint auto-2',
      'operation: moved /app/src from /app/lib',
      'operation rename',
      'operation: modified /app/src/b.txt',
      'operation file_edit',
      'undo: modified /app/src/b.txt',
      'undo file_edit',
      'operation: created /app/t1, deleted /app/a.txt',
      'operation transaction',
      'checkpoint guard-3',
      'operation: created /app/a.txt, deleted /app/b.txt, moved /app/lib from /app/src, deleted /app/t1',
      'operation restore',
      'restore start 7',
      'operation: created /app/fence',
      'operation mkdir',
    ])
    for (const off of offs) off()
    // A stream of events ends with its signal, without an error.
    const controller = new AbortController()
    const stream = ws.events.stream({ types: ['operation'], signal: controller.signal })
    const first = stream.next()
    await fs.promises.writeFile('/app/s.txt', 's')
    expect((await first).value).toMatchObject({ type: 'operation', operation: { type: 'file_create', paths: ['/app/s.txt'] } })
    controller.abort()
    expect(await stream.next()).toEqual({ value: undefined, done: true })
    everything.close()
    expect(await closed).toBe('closed')

    // Closing the workspace closes what still watches it.
    const left = fs.watch('/app')
    const leftClosed = new Promise<string>((resolve) => left.once('close', () => resolve('closed')))
    const waiting = fs.promises.watch('/app')[Symbol.asyncIterator]().next()
    const streaming = ws.events.stream().next()
    await ws.close()
    expect(await leftClosed).toBe('closed')
    expect(await waiting).toEqual({ value: undefined, done: true })
    expect(await streaming).toEqual({ value: undefined, done: true })
  },
}
