/**
 * One behaviour suite for every AsyncWorkspace: the in-process Workspace and the engine in a
 * worker must answer the same calls the same way (values, Node-shaped errors, engine reports).
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { AsyncWorkspace } from '../../src/async-workspace.js'

/** Opens a fresh workspace over `files` as its lower layer (a fixture: path → text). */
export type OpenAsyncWorkspace = (files?: Record<string, string>) => Promise<AsyncWorkspace>

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** What a member threw or rejected with: synchronous members of Workspace throw, remote ones reject. */
async function failure(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('expected the call to fail')
}

export function asyncWorkspaceSuite(name: string, open: OpenAsyncWorkspace): void {
  describe(`AsyncWorkspace: ${name}`, () => {
    const opened: AsyncWorkspace[] = []
    const fresh = async (files?: Record<string, string>) => {
      const ws = await open(files)
      opened.push(ws)
      return ws
    }
    afterEach(async () => {
      for (const ws of opened.splice(0)) await ws.close()
    })

    it('reads the lower layer and writes, lists, stats, renames and removes through fs.promises', async () => {
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
    })

    it("keeps Node's error shape: code, errno, syscall, path and message", async () => {
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
    })

    it('checkpoints, diffs and restores (also as a dry run), and refuses a duplicate name', async () => {
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
    })

    it('undoes, redoes and lists history with per-operation diffs', async () => {
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
    })

    it('resets to the lower layer and lists changes against it', async () => {
      const ws = await fresh({ '/keep.txt': 'lower\n' })
      const fs = ws.fs.promises
      await fs.writeFile('/keep.txt', 'upper\n')
      await fs.writeFile('/new.txt', 'new\n')
      expect((await ws.changes()).map((c) => `${c.type} ${c.path}`).sort()).toEqual(['added /new.txt', 'modified /keep.txt'])
      await ws.reset()
      expect(await ws.changes()).toEqual([])
      expect(await fs.readFile('/keep.txt', 'utf8')).toBe('lower\n')
      await expect(fs.access('/new.txt')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'access' })
    })

    it('commits a transaction as one operation, and leaves nothing behind when its body throws', async () => {
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
    })

    it('asks the approval hook above the risk threshold and refuses when it says no', async () => {
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
    })

    it('keeps session state with checkpoints and restores files and state together', async () => {
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
    })

    it('runs a side effect’s compensation on undo and reports it compensated', async () => {
      const ws = await fresh()
      const sent: string[] = ['hello']
      await ws.recordSideEffect({ description: 'sent email hello', compensate: () => void sent.splice(0, 1) })
      const result = await ws.undo()
      expect(result.compensated).toEqual(['sent email hello'])
      expect(sent).toEqual([])
    })

    it('marks turns, keeps the resume point, renames and deletes checkpoints', async () => {
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
    })

    it('forks a session that shares the tree at the fork and writes on its own', async () => {
      const ws = await fresh({ '/base.txt': 'base' })
      await ws.fs.promises.writeFile('/before.txt', 'shared')
      const fork = await ws.fork('experiment')
      expect(fork.session).toBe('experiment')
      await fork.fs.promises.writeFile('/before.txt', 'fork only')
      expect(await ws.fs.promises.readFile('/before.txt', 'utf8')).toBe('shared')
      expect(await fork.fs.promises.readFile('/before.txt', 'utf8')).toBe('fork only')
      await fork.close()
    })

    it('resolves relative paths against chdir, freezes writes with EROFS, and purges content', async () => {
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
    })
  })
}
