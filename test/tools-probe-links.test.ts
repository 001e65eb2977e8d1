/**
 * A link the workspace does not follow, named in the error. data -> /mnt/data (out of the project),
 * up -> ../.. (past its root) and gone -> nowhere read as missing to the tools while ls shows them and
 * a command follows them on the host: read_file answered a bare "no such file" and write_file
 * "ENOENT ... mkdir '/data'". Now the error names the link and its target and says why.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

let tmp: string
let outside: string
let ws: Workspace
let tools: AgentTool[]

beforeEach(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-links-')))
  const project = path.join(tmp, 'app')
  outside = path.join(tmp, 'outside')
  fs.mkdirSync(path.join(project, 'src'), { recursive: true })
  fs.mkdirSync(outside)
  fs.writeFileSync(path.join(outside, 'x.csv'), 'x\n')
  fs.writeFileSync(path.join(project, 'src/a.ts'), 'a\n')
  fs.symlinkSync(outside, path.join(project, 'data'))
  fs.symlinkSync('../..', path.join(project, 'src/up'))
  fs.symlinkSync('nowhere', path.join(project, 'gone'))
  ws = await Workspace.open({ lower: directory(project), autoCheckpoint: false })
  tools = createAgentTools(ws)
})

afterEach(async () => {
  await ws.close()
  fs.rmSync(tmp, { recursive: true, force: true })
})

async function enoent(name: string, input: Record<string, unknown>) {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded`)
  expect(outcome.error.code).toBe('ENOENT')
  return outcome.error
}

describe('a link the workspace does not follow', () => {
  it('is named, with its target, in the ENOENT of every tool that met it', async () => {
    const read = await enoent('read_file', { path: 'data/x.csv' })
    expect(read.message).toContain(`'/data' is a symbolic link to '${outside}', which the workspace does not hold`)
    expect(read.details).toEqual({ link: '/data', target: outside })
    expect((await enoent('write_file', { path: 'data/new.csv', content: 'n\n' })).details).toEqual({ link: '/data', target: outside })
    expect((await enoent('list_directory', { path: 'data' })).details).toEqual({ link: '/data', target: outside })
    expect((await enoent('read_file', { path: 'src/up/etc/hostname' })).details).toEqual({ link: '/src/up', target: '../..' })
    expect((await enoent('read_file', { path: 'gone' })).details).toEqual({ link: '/gone', target: 'nowhere' })
    expect((await enoent('move_path', { from: 'data/x.csv', to: 'x.csv' })).details).toEqual({ link: '/data', target: outside })
  })

  it('leaves a plain missing path as it was', async () => {
    const missing = await enoent('read_file', { path: 'src/missing.ts' })
    expect(missing.message).not.toContain('symbolic link')
    expect(missing.details).toBeUndefined()
    expect(ws.fs.readFileSync('/src/a.ts', 'utf8')).toBe('a\n')
  })
})
