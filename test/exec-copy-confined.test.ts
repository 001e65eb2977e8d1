/**
 * Copy mode runs a command in a private copy of the workspace. A command that names the project by
 * its own path (a venv's shebang, a build's absolute output path, an agent copying `pwd`) must
 * reach that copy, not the project on disk: nothing reaches the project before a flush, in both
 * modes. Where the host gives namespaces, the copy is mounted at the project's path.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, hostShell } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-confined-`))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const namespaces = (await support()).namespaces === undefined

let serial = 0
function project(): string {
  const root = `${scratch}/proj${serial++}`
  fs.mkdirSync(`${root}/src`, { recursive: true })
  fs.writeFileSync(`${root}/src/a.ts`, 'export const a = 1\n')
  return root
}

describe.skipIf(!namespaces)('copy mode where the host gives namespaces', () => {
  it.each(['read-write', 'read-only'] as const)("a write through the project's own path lands in the workspace, never on disk (host %s)", async (host) => {
    const root = project()
    const temps = fs.mkdtempSync(`${scratch}/tmp-`)
    const ws = await Workspace.open({ lower: directory(root), exec: hostShell({ mode: 'copy', tmpdir: temps }), autoCheckpoint: false })
    const result = await ws.exec(`echo agent > ${root}/new.txt && echo changed > ${root}/src/a.ts && mkdir ${root}/out && cat src/a.ts && pwd`, {
      cwd: '/',
      sandbox: { host },
    })
    expect(result).toMatchObject({ exitCode: 0, mode: 'copy', stdout: `changed\n${root}\n`, stderr: '' })
    // On disk: nothing (it was: new.txt, out/ and the changed a.ts, unrecorded).
    expect(fs.readdirSync(root).sort()).toEqual(['src'])
    expect(fs.readFileSync(`${root}/src/a.ts`, 'utf8')).toBe('export const a = 1\n')
    // In the workspace, recorded: what the command wrote.
    expect(ws.fs.readFileSync('/new.txt', 'utf8')).toBe('agent\n')
    expect(ws.fs.readFileSync('/src/a.ts', 'utf8')).toBe('changed\n')
    expect(ws.fs.statSync('/out').isDirectory()).toBe(true)
    expect(result.changes).toEqual({ added: ['/new.txt', '/out'], modified: ['/src/a.ts'], deleted: [] })
    await ws.close()
  })
})
