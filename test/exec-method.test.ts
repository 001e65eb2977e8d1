/**
 * ws.exec: the core's method runs the node-fs adapter's runner once that adapter is imported, and
 * says what to import where it is not.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'

describe('ws.exec', () => {
  it('refuses with a clear error until a runner is installed, then runs the command as one undoable step', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-ws-exec-'))
    fs.writeFileSync(path.join(root, 'notes.txt'), 'one\n')
    try {
      const before = await Workspace.open({ lower: { '/a': 'x' } })
      // No adapter imported yet in this test file's module graph.
      await expect(before.exec('true')).rejects.toMatchObject({ code: 'ENOSYS', message: expect.stringContaining('rewindfs/adapters/node-fs') })
      await before.close()

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
})
