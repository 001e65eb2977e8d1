/**
 * An operation that makes or removes a directory whole records one slot for it (a transaction's,
 * a command's new directory). Its diff and undo's report still name each file in it with its
 * lines, as they do for a file made or removed on its own; the oracle is the same file written and
 * removed by plain calls, one operation each.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-diff-dirs-'))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

describe('the diff and undo report of a directory made or removed whole', () => {
  it('a transaction that makes a directory with a file: the file with its lines, as a plain write shows it', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    await ws.transaction((staged) => {
      staged.mkdirSync('/a/b', { recursive: true })
      staged.writeFileSync('/a/b/f.txt', 'one\ntwo\n')
    })
    const [made] = ws.history()
    const slots = ws.operation(made.id)!.diff
    expect(slots.map((entry) => entry.path)).toEqual(['/a', '/a/b', '/a/b/f.txt'])
    // The oracle: the same file written by a plain call, into a directory that exists.
    ws.fs.mkdirSync('/o')
    ws.fs.writeFileSync('/o/f.txt', 'one\ntwo\n')
    const plain = ws.operation(ws.history()[0].id)!.diff
    expect(slots[2].patch).toBe(plain[0].patch!.replaceAll('/o/f.txt', '/a/b/f.txt'))
    const result = await ws.undo({ steps: 3 })
    expect(result.changesReverted['/a/b/f.txt']).toEqual({ linesRestored: 0, linesRemoved: 2 })
    expect(result.changesReverted['/a/b/f.txt']).toEqual(result.changesReverted['/o/f.txt'])
    await ws.close()
  })

  it('a transaction that removes a lower directory whole: its files with the lines the undo brings back', async () => {
    const project = fs.mkdtempSync(path.join(scratch, 'project-'))
    fs.mkdirSync(path.join(project, 'lib/util'), { recursive: true })
    fs.writeFileSync(path.join(project, 'lib/util/a.ts'), 'export const a = 1\n')
    const ws = await Workspace.open({ lower: directory(project), autoCheckpoint: false })
    await ws.transaction((staged) => staged.rmSync('/lib', { recursive: true }))
    const [removed] = ws.history()
    const diff = ws.operation(removed.id)!.diff
    expect(removed.paths).toContain('/lib/util/a.ts')
    expect(diff.find((entry) => entry.path === '/lib/util/a.ts')?.patch).toContain('-export const a = 1')
    const result = await ws.undo()
    expect(result.changesReverted['/lib/util/a.ts']).toEqual({ linesRestored: 1, linesRemoved: 0 })
    expect(ws.fs.readFileSync('/lib/util/a.ts', 'utf8')).toBe('export const a = 1\n')
    await ws.close()
  })

  it("an operation over more than 100 paths reports a directory made whole as the directory alone: no file of it is read for the report", async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    await ws.transaction((staged) => {
      staged.mkdirSync('/node_modules/pkg', { recursive: true })
      for (let i = 0; i < 150; i++) staged.writeFileSync(`/node_modules/pkg/f${i}.js`, `export default ${i}\n`)
    })
    const [made] = ws.history()
    expect(made.paths.length).toBeGreaterThan(100)
    expect(ws.operation(made.id)!.diff.map((entry) => entry.path)).toEqual(['/node_modules'])
    const result = await ws.undo()
    expect(Object.keys(result.changesReverted)).toEqual([])
    expect(ws.fs.existsSync('/node_modules')).toBe(false)
    await ws.close()
  })
})
