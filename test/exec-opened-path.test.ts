/**
 * A project opened through a link (`directory('/tmp/link-to-proj')` where that is a link to the
 * real project): an absolute link a command makes through either path reads back as the workspace
 * path it names, as the directory lower itself shows such a link on disk, in both exec modes.
 * The oracle is the directory lower: the same link made on disk reads the same through it.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, hostShell } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import type { ExecMode } from '../src/index.js'
import { capability } from './support/require.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-opened-`))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const overlayProblem = (await support()).overlay
const modes: ExecMode[] = capability('exec-overlay', overlayProblem) ? ['overlay', 'copy'] : ['copy']

let serial = 0
/** A real project and a link to it beside it: the path the project is opened by. */
function linkedProject(): { real: string; link: string } {
  const real = `${scratch}/real-proj${serial}`
  const link = `${scratch}/link-to-proj${serial++}`
  fs.mkdirSync(`${real}/src`, { recursive: true })
  fs.writeFileSync(`${real}/src/a.ts`, 'export const a = 1\n')
  fs.symlinkSync(real, link)
  return { real, link }
}

describe.each(modes)('exec in %s mode over a project opened through a link', (mode) => {
  it('absolute links through the opened-by path or the real path read back as workspace paths', async () => {
    const { real, link } = linkedProject()
    const temps = fs.mkdtempSync(`${scratch}/tmp-`)
    const ws = await Workspace.open({ lower: directory(link), exec: hostShell({ mode, tmpdir: temps }), autoCheckpoint: false })
    const result = await ws.exec(
      [`ln -s ${link}/src/a.ts by-link`, `ln -s ${link} root-by-link`, `ln -s ${real}/src/a.ts by-real`, 'ln -s /etc/hostname outside', 'ln -s src/a.ts relative', 'cat by-link'].join(' && '),
    )
    expect(result).toMatchObject({ exitCode: 0, mode, stdout: 'export const a = 1\n', stderr: '' })
    const shown = Object.fromEntries(['/by-link', '/root-by-link', '/by-real', '/outside', '/relative'].map((path) => [path, ws.fs.readlinkSync(path)]))
    expect(shown).toEqual({ '/by-link': '/src/a.ts', '/root-by-link': '/', '/by-real': '/src/a.ts', '/outside': '/etc/hostname', '/relative': 'src/a.ts' })
    // No host path of the project reaches the workspace.
    expect(JSON.stringify(shown)).not.toContain(scratch)
    expect(ws.fs.readFileSync('/by-link', 'utf8')).toBe('export const a = 1\n')
    await ws.close()
    // The oracle: the same links made on disk read the same through the directory lower.
    for (const [name, target] of [['by-link', `${link}/src/a.ts`], ['root-by-link', link], ['by-real', `${real}/src/a.ts`]]) fs.symlinkSync(target, `${real}/${name}`)
    const lower = await Workspace.open({ lower: directory(link) })
    expect(['/by-link', '/root-by-link', '/by-real'].map((path) => lower.fs.readlinkSync(path))).toEqual([shown['/by-link'], shown['/root-by-link'], shown['/by-real']])
    await lower.close()
  })
})

describe.each(modes)('exec in %s mode over a project opened through a link: what the command prints', (mode) => {
  it('names the project by the path it was opened by: pwd, $PWD, realpath, and host paths in stderr', async () => {
    const { real, link } = linkedProject()
    const temps = fs.mkdtempSync(`${scratch}/tmp-`)
    const ws = await Workspace.open({ lower: directory(link), exec: hostShell({ mode, tmpdir: temps }), autoCheckpoint: false })
    const result = await ws.exec(['pwd', 'pwd -P', 'echo "$PWD"', 'realpath a.ts', `ls ${real}/src`, `ls ${real}/nope`].join('; '), { cwd: '/src' })
    // The oracle: a shell started in the project as the user gave it, on the host.
    const native = spawnSync('/bin/sh', ['-c', `cd ${link}/src && pwd && echo "$PWD" && ls ${link}/nope`], { encoding: 'utf8' })
    expect(native.stdout).toBe(`${link}/src\n${link}/src\n`)
    expect(result).toMatchObject({ mode, exitCode: 2 })
    expect(result.stdout.split('\n')).toEqual([`${link}/src`, `${link}/src`, `${link}/src`, `${link}/src/a.ts`, 'a.ts', ''])
    expect(result.stderr).toBe(native.stderr)
    // A project whose path has the real one as a prefix is not renamed with it.
    const { real: other } = linkedProject()
    const cousin = `${real}0`
    fs.mkdirSync(cousin)
    const beside = await ws.exec(`echo ${cousin} ${other}`)
    expect(beside.stdout).toBe(`${cousin} ${other}\n`)
    await ws.close()
  })
})

describe.each(modes)('exec in %s mode over a project opened through a link: what the command writes', (mode) => {
  it('$PWD and pwd written into a file name the path the project was opened by, pwd -P the real one, as on the host', async () => {
    const { real, link } = linkedProject()
    const temps = fs.mkdtempSync(`${scratch}/tmp-`)
    const ws = await Workspace.open({ lower: directory(link), exec: hostShell({ mode, tmpdir: temps }), autoCheckpoint: false })
    const script = 'echo "$PWD" > env.txt; pwd > pwd.txt; pwd -P > physical.txt'
    const result = await ws.exec(script, { cwd: '/src' })
    expect(result).toMatchObject({ mode, exitCode: 0, stderr: '' })
    // The oracle: the same script in a shell started in the project as the user gave it, on the host.
    const native = fs.mkdtempSync(`${scratch}/native-`)
    fs.mkdirSync(`${native}/real/src`, { recursive: true })
    fs.symlinkSync(`${native}/real`, `${native}/link`)
    spawnSync('/bin/sh', ['-c', `cd ${native}/link/src && ${script}`])
    const read = (root: string, name: string) => fs.readFileSync(`${root}/src/${name}`, 'utf8')
    expect(read(`${native}/link`, 'env.txt')).toBe(`${native}/link/src\n`)
    expect(ws.fs.readFileSync('/src/env.txt', 'utf8')).toBe(`${link}/src\n`)
    expect(ws.fs.readFileSync('/src/pwd.txt', 'utf8')).toBe(read(`${native}/link`, 'pwd.txt').replace(`${native}/link`, link))
    expect(ws.fs.readFileSync('/src/physical.txt', 'utf8')).toBe(`${real}/src\n`)
    await ws.close()
  })
})
