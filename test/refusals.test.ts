/**
 * Inputs refused up front, before anything changes, found by attacking the tools
 * (../shared/repros/README.md): a path with a NUL byte that a later '..' folds away (Node's fs
 * refuses any NUL: the oracle is node:fs itself), and a name the lower source or a flush target
 * keeps to itself (`.rewindfs-flush`, the directory adapter's staging area), which was accepted and
 * then made every commit fail.
 */
import nodeFs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { normalize } from '../src/path.js'
import { callTool, createAgentTools } from '../tools/index.js'

let root: string
let project: string
beforeEach(() => {
  root = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-refusals-'))
  project = path.join(root, 'project')
  nodeFs.mkdirSync(path.join(project, 'sub'), { recursive: true })
  nodeFs.writeFileSync(path.join(project, 'a.txt'), 'a')
  nodeFs.writeFileSync(path.join(project, 'sub/x'), 'x')
})
afterEach(() => nodeFs.rmSync(root, { recursive: true, force: true }))

/** What node:fs throws for a call, as code and message. */
function nodeError(call: () => unknown): { code: unknown; message: string } {
  try {
    call()
  } catch (error) {
    return { code: (error as { code?: unknown }).code, message: (error as Error).message }
  }
  throw new Error('node:fs accepted it')
}

describe('a NUL byte in a path is refused as node:fs refuses it, even when a later .. folds it away', () => {
  const sneaky = ['a.txt\0/../../sub/x', '/a.txt\0/..', 'sub/\0/../x']

  it('normalize throws exactly what node:fs throws', () => {
    for (const given of sneaky) {
      const expected = nodeError(() => nodeFs.readFileSync(given))
      expect(expected.code).toBe('ERR_INVALID_ARG_VALUE')
      expect(nodeError(() => normalize(given.startsWith('/') ? given : '/' + given))).toEqual(
        nodeError(() => nodeFs.readFileSync(given.startsWith('/') ? given : '/' + given)),
      )
    }
  })

  it('the tools refuse it and write nothing', async () => {
    const ws = await Workspace.open({ lower: directory(project) })
    const tools = createAgentTools(ws)
    const calls: [string, Record<string, unknown>][] = [
      ['read_file', { path: 'a.txt\0/../../sub/x' }],
      ['write_file', { path: 'a.txt\0/../../sub/y', content: 'y' }],
      ['edit_file', { path: 'a.txt\0/../../sub/x', old_string: 'x', new_string: 'z' }],
      ['delete_path', { path: 'a.txt\0/../../sub/x' }],
      ['move_path', { from: 'sub/x', to: 'a.txt\0/../../sub/z' }],
      ['list_directory', { path: 'sub\0/..' }],
    ]
    for (const [name, input] of calls) {
      expect([name, await callTool(tools, name, input)]).toMatchObject([name, { isError: true, error: { code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('without null bytes') } }])
    }
    expect(ws.history()).toEqual([])
    expect(ws.fs.readFileSync('/sub/x', 'utf8')).toBe('x')
    await ws.close()
  })
})

describe('names the lower source or a flush target keeps to itself are refused when written', () => {
  it('every call that would create one fails with EINVAL naming the path, and records nothing', async () => {
    const ws = await Workspace.open({ lower: directory(project) })
    const fs = ws.fs
    const refused: [string, () => unknown][] = [
      ['writeFileSync', () => fs.writeFileSync('/.rewindfs-flush', 'x')],
      ['mkdirSync', () => fs.mkdirSync('/.rewindfs-flush')],
      ['mkdirSync recursive', () => fs.mkdirSync('/.rewindfs-flush/a/b', { recursive: true })],
      ['deeper staged temp name', () => fs.writeFileSync('/sub/.rewindfs-flush.3.1', 'x')],
      ['appendFileSync', () => fs.appendFileSync('/sub/.rewindfs-flush', 'x')],
      ['openSync w', () => fs.openSync('/.rewindfs-flush', 'w')],
      ['renameSync', () => fs.renameSync('/a.txt', '/.rewindfs-flush')],
      ['copyFileSync', () => fs.copyFileSync('/a.txt', '/sub/.rewindfs-flush')],
      ['cpSync', () => fs.cpSync('/sub', '/.rewindfs-flush', { recursive: true })],
      ['symlinkSync', () => fs.symlinkSync('a.txt', '/.rewindfs-flush')],
      ['mkdtempSync', () => fs.mkdtempSync('/.rewindfs-flush.')],
    ]
    for (const [what, call] of refused) {
      let thrown: unknown
      try {
        call()
      } catch (error) {
        thrown = error
      }
      expect([what, thrown]).toMatchObject([what, { code: 'EINVAL', message: expect.stringContaining("names starting with '.rewindfs-flush' are reserved") }])
    }
    expect(ws.history()).toEqual([])
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('a')
    // Reading one is no error of its own: there is nothing there.
    expect(() => fs.readFileSync('/.rewindfs-flush')).toThrow(expect.objectContaining({ code: 'ENOENT' }))
    // Names that merely look alike are fine.
    fs.writeFileSync('/.rewindfs-flushed', 'ok')
    fs.writeFileSync('/sub/x.rewindfs-flush', 'ok')
    // Inside a transaction too.
    await expect(ws.transaction((staged) => staged.writeFileSync('/.rewindfs-flush', 'x'))).rejects.toMatchObject({ code: 'EINVAL' })
    await ws.close()
  })

  it('write_file .rewindfs-flush/x is a tool error, and commit_changes keeps working (it failed with EINVAL, even with force)', async () => {
    const ws = await Workspace.open({ lower: directory(project) })
    const tools = createAgentTools(ws, { flushTarget: directory(project) })
    expect(await callTool(tools, 'write_file', { path: '.rewindfs-flush/x', content: 'x' })).toMatchObject({
      isError: true,
      error: { code: 'EINVAL', message: expect.stringContaining('reserved') },
    })
    expect(await callTool(tools, 'write_file', { path: 'b.txt', content: 'b' })).toMatchObject({ isError: false })
    expect(await callTool(tools, 'commit_changes', {})).toMatchObject({ isError: false, result: { applied: true } })
    expect(nodeFs.readFileSync(path.join(project, 'b.txt'), 'utf8')).toBe('b')
    await ws.close()
  })

  it('a flush into a target that reserves a path the workspace holds is refused before anything is written', async () => {
    // A fixture lower reserves nothing, so the workspace can hold the name; the directory target cannot take it.
    const ws = await Workspace.open({ lower: {} })
    ws.fs.mkdirSync('/.rewindfs-flush')
    ws.fs.writeFileSync('/.rewindfs-flush/x', 'x')
    ws.fs.writeFileSync('/ok.txt', 'ok')
    const target = path.join(root, 'target')
    nodeFs.mkdirSync(target)
    await expect(ws.flush(directory(target))).rejects.toMatchObject({ code: 'EINVAL', path: '/.rewindfs-flush', message: expect.stringContaining('rename or delete it in the workspace') })
    expect(nodeFs.readdirSync(target)).toEqual([])
    ws.fs.rmSync('/.rewindfs-flush', { recursive: true })
    expect((await ws.flush(directory(target))).applied).toBe(true)
    expect(nodeFs.readFileSync(path.join(target, 'ok.txt'), 'utf8')).toBe('ok')
    expect(nodeFs.existsSync(path.join(target, '.rewindfs-flush/x'))).toBe(false)
  })

  it('one made before the refusal existed (an older store) can still be deleted, and then commits work', async () => {
    // A store written over a lower that reserves nothing, reopened over the project directory.
    const store = path.join(root, 'store')
    const before = await Workspace.open({ lower: {}, store: directoryStore(store) })
    before.fs.mkdirSync('/.rewindfs-flush')
    before.fs.writeFileSync('/.rewindfs-flush/x', 'x')
    await before.close()
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store) })
    expect(ws.fs.readFileSync('/.rewindfs-flush/x', 'utf8')).toBe('x')
    await expect(ws.flush()).rejects.toMatchObject({ code: 'EINVAL' })
    ws.fs.rmSync('/.rewindfs-flush', { recursive: true })
    ws.fs.writeFileSync('/c.txt', 'c')
    expect((await ws.flush()).applied).toBe(true)
    expect(nodeFs.readFileSync(path.join(project, 'c.txt'), 'utf8')).toBe('c')
    await ws.close()
  })
})
