/**
 * The agent tools given the project's host paths. Commands see the project at its host path (pwd,
 * a compiler's errors), so a model copies '/home/me/app/src/a.ts' into read_file or edit_file.
 * With hostPath (as `rewindfs mcp` passes it) such a path names the workspace file it stands for:
 * read_file answered ENOENT for a file that exists, and write_file made /home/me/app/src/a.ts
 * inside the workspace, which a commit would have written to <project>/home/me/app/src/a.ts.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

let tmp: string
let project: string
let ws: Workspace
let tools: AgentTool[]

beforeEach(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-host-paths-'))
  project = path.join(fs.realpathSync(tmp), 'app')
  fs.mkdirSync(path.join(project, 'src'), { recursive: true })
  fs.writeFileSync(path.join(project, 'src/a.ts'), 'export const a = 1\n')
  fs.symlinkSync(project, path.join(tmp, 'alias'))
  // Opened through a link, as a user's --dir may be: both the link's path and the real one are the project.
  const lower = directory(path.join(tmp, 'alias'))
  ws = await Workspace.open({ lower, autoCheckpoint: false })
  tools = createAgentTools(ws, { flushTarget: lower, hostPath: (given) => lower.shownTarget(given) })
})

afterEach(async () => {
  await ws.close()
  fs.rmSync(tmp, { recursive: true, force: true })
})

async function ok(name: string, input: Record<string, unknown>): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  return outcome.result
}

describe('host paths of the project', () => {
  it('read, edit and write the workspace file the host path stands for', async () => {
    expect((await ok('read_file', { path: `${project}/src/a.ts` })).content).toBe('export const a = 1')
    expect((await ok('read_file', { path: `${tmp}/alias/src/a.ts` })).path).toBe('/src/a.ts')
    await ok('edit_file', { path: `${project}/src/a.ts`, old_string: '= 1', new_string: '= 2' })
    const written = await ok('write_file', { path: `${project}/src/b.ts`, content: 'b\n' })
    expect(written.path).toBe('/src/b.ts')
    expect(ws.fs.readFileSync('/src/a.ts', 'utf8')).toBe('export const a = 2\n')
    expect(ws.fs.existsSync(`${project}/src/b.ts`)).toBe(false) // no copy of the host's folders inside the project
    expect(ws.fs.readdirSync('/').sort()).toEqual(['src'])
  })

  it('lists, finds, searches, moves and undoes by host paths, globs included', async () => {
    expect((await ok('list_directory', { path: project })).entries).toEqual([{ path: 'src/', type: 'directory' }])
    expect((await ok('find_files', { pattern: `${project}/src/*.ts` })).files).toEqual(['/src/a.ts'])
    expect((await ok('find_files', { pattern: '*.ts', path: `${project}/src` })).files).toEqual(['/src/a.ts'])
    expect((await ok('search_files', { pattern: 'const', path: project, include: [`${project}/src/**`] })).returned).toBe(1)
    await ok('move_path', { from: `${project}/src/a.ts`, to: `${project}/lib/a.ts` })
    expect(ws.fs.existsSync('/lib/a.ts')).toBe(true)
    expect((await ok('undo_operation', { target_files: [`${project}/lib`] })).undo_summary.operations_undone).toBe(1)
    expect(ws.fs.existsSync('/src/a.ts')).toBe(true)
  })

  it('leaves workspace paths, relative paths and paths outside the project as they are', async () => {
    expect((await ok('read_file', { path: '/src/a.ts' })).path).toBe('/src/a.ts')
    expect((await ok('read_file', { path: 'src/a.ts' })).path).toBe('/src/a.ts')
    const outside = await callTool(tools, 'read_file', { path: '/etc/hostname' })
    expect(outside).toMatchObject({ isError: true, error: { code: 'ENOENT' } })
    // A hostile input still comes back as the tool's own input error.
    const hostile = await callTool(tools, 'read_file', Object.defineProperty({}, 'path', { enumerable: true, get: () => { throw new Error('no') } }))
    expect(hostile.isError).toBe(true)
  })
})
