/**
 * ws.exec: the core's method runs the workspace's runner (the `exec` option, or the lower
 * source's own: a directory(path) carries one), and says what to pass where there is none.
 * Nothing is installed by importing a module.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import type { ExecRunner } from '../src/index.js'

describe('ws.exec', () => {
  it('refuses with a clear error without a runner, even after the node-fs adapter is imported', async () => {
    const before = await Workspace.open({ lower: { '/a': 'x' } })
    await expect(before.exec('true')).rejects.toMatchObject({ code: 'ENOSYS', message: expect.stringContaining('rewindfs/adapters/node-fs') })
    await import('../adapters/node-fs/index.js')
    await expect(before.exec('true')).rejects.toMatchObject({ code: 'ENOSYS' })
    await before.close()
  })

  it("runs the lower directory's own runner as one undoable step", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-ws-exec-'))
    fs.writeFileSync(path.join(root, 'notes.txt'), 'one\n')
    try {
      const { directory } = await import('../adapters/node-fs/index.js')
      const ws = await Workspace.open({ lower: directory(root) })
      const result = await ws.exec('echo two >> notes.txt && mkdir out && echo built > out/app.js')
      expect(result.exitCode).toBe(0)
      expect(result.changes).toEqual({ added: ['/out', '/out/app.js'], modified: ['/notes.txt'], deleted: [] })
      expect(ws.fs.readFileSync('/notes.txt', 'utf8')).toBe('one\ntwo\n')
      expect(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('one\n') // the lower directory is untouched
      expect(fs.existsSync(path.join(root, 'out'))).toBe(false)
      await ws.undo()
      expect(ws.fs.readFileSync('/notes.txt', 'utf8')).toBe('one\n')
      expect(ws.fs.existsSync('/out')).toBe(false)
      await ws.close()
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it('opens one session per workspace on the first exec, passes the options through, and closes it with the workspace', async () => {
    const calls: string[] = []
    const runner: ExecRunner = {
      open: (host) => {
        calls.push(`open ${host.workspace === ws}`)
        return {
          run: async (command, options) => {
            calls.push(`run ${command} ${JSON.stringify(options)}`)
            return { exitCode: 0, signal: null, timedOut: false, stdout: '', stderr: '', truncated: false, changes: { added: [], modified: [], deleted: [] }, skipped: [], mode: 'copy', modeReason: 'test' }
          },
          close: async () => {
            calls.push('close')
          },
        }
      },
    }
    const ws = await Workspace.open({ lower: { '/a': 'x' }, exec: runner })
    await ws.exec('one', { timeout: 5 })
    await ws.exec('two')
    await ws.close()
    expect(calls).toEqual(['open true', 'run one {"timeout":5}', 'run two {}', 'close'])
    await expect(ws.exec('three')).rejects.toThrow(/closed/)
  })
})
