/**
 * Hard links already in the project (names of one file on disk, which the workspace shows as the
 * lower file until written) through ws.exec: a command that writes through one name sees every
 * name change, as on disk (overlayfs's index as root; copy mode links them in the copy), and the
 * workspace agrees afterwards: the names the view showed from that file become names of one
 * workspace inode holding the change. Both modes give the command the same view and the workspace
 * the same result. Overlay mode as root only: a user namespace's overlayfs has no index (README).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-exec-hardlinks-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0
const host = await support()
const overlayHere = capability('exec-overlay', host.overlay)
/** Closed after each test, passed or failed: a session's temp directory goes with it. */
const opened: Workspace[] = []
afterEach(async () => {
  for (const ws of opened.splice(0)) await ws.close()
})
async function open(dir: string): Promise<Workspace> {
  const ws = await Workspace.open({ lower: directory(dir), autoCheckpoint: false })
  opened.push(ws)
  return ws
}

/** A project where f, g and sub/k are names of one file. */
function project(name: string): string {
  const dir = path.join(root, name)
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'f'), '1\n')
  fs.linkSync(path.join(dir, 'f'), path.join(dir, 'g'))
  fs.linkSync(path.join(dir, 'f'), path.join(dir, 'sub/k'))
  fs.writeFileSync(path.join(dir, 'other'), 'o\n')
  return dir
}

const SHOW = 'for n in f g sub/k; do printf "%s %s %s|" $n $(stat -c %h $n) "$(tr "\\n" , < $n)"; done; [ f -ef sub/k ] && echo same'

describe('hard links in the project through exec', () => {
  for (const mode of ['overlay', 'copy'] as const) {
    it.skipIf(mode === 'overlay' && (!overlayHere || !asRoot))(`${mode} mode: a write through one name is every name's, for the command and in the workspace after`, async () => {
      const dir = project(`write-${mode}`)
      const ws = await open(dir)
      const ino = (p: string) => ws.fs.statSync(p).ino
      const quiet = await ws.exec(SHOW, { mode })
      expect(quiet).toMatchObject({ stdout: 'f 3 1,|g 3 1,|sub/k 3 1,|same\n', changes: { added: [], modified: [], deleted: [] } })

      const run = await ws.exec(`echo 2 >> f && ${SHOW}`, { mode })
      expect(run).toMatchObject({ exitCode: 0, mode, stdout: 'f 3 1,2,|g 3 1,2,|sub/k 3 1,2,|same\n', stderr: '' })
      expect(run.changes).toEqual({ added: [], modified: ['/f', '/g', '/sub/k'], deleted: [] })
      expect(['/f', '/g', '/sub/k'].map((p) => `${ws.fs.statSync(p).nlink} ${ws.fs.readFileSync(p, 'utf8')}`)).toEqual(['3 1\n2\n', '3 1\n2\n', '3 1\n2\n'])
      expect([ino('/f') === ino('/g'), ino('/f') === ino('/sub/k')]).toEqual([true, true])
      // One inode in the workspace too: a write there reaches every name.
      ws.fs.appendFileSync('/g', '3\n')
      expect(ws.fs.readFileSync('/sub/k', 'utf8')).toBe('1\n2\n3\n')

      const next = await ws.exec(SHOW, { mode })
      expect(next).toMatchObject({ stdout: 'f 3 1,2,3,|g 3 1,2,3,|sub/k 3 1,2,3,|same\n', changes: { added: [], modified: [], deleted: [] } })

      await ws.undo()
      await ws.undo()
      expect(['/f', '/g', '/sub/k'].map((p) => ws.fs.readFileSync(p, 'utf8'))).toEqual(['1\n', '1\n', '1\n'])
      expect(ws.changes()).toEqual([])
      expect(fs.readFileSync(path.join(dir, 'g'), 'utf8')).toBe('1\n')
      expect(fs.statSync(path.join(dir, 'g')).nlink).toBe(3)
    })

    it.skipIf(mode === 'overlay' && (!overlayHere || !asRoot))(`${mode} mode: names the workspace changed stay apart; a new link and a chmod through a name`, async () => {
      const dir = project(`apart-${mode}`)
      const ws = await open(dir)
      const ino = (p: string) => ws.fs.statSync(p).ino
      // The workspace wrote g: it is a file of its own, for the command too.
      ws.fs.writeFileSync('/g', 'ws\n')
      // (Its link count the command sees differs: overlayfs counts the project's names, copy mode the copy's.)
      const run = await ws.exec('chmod 600 sub/k && echo 2 >> f && cat g && stat -c %a f sub/k', { mode })
      expect(run).toMatchObject({ exitCode: 0, stdout: 'ws\n600\n600\n' })
      expect(run.changes).toEqual({ added: [], modified: ['/f', '/sub/k'], deleted: [] })
      expect([ws.fs.readFileSync('/f', 'utf8'), ws.fs.readFileSync('/sub/k', 'utf8'), ws.fs.readFileSync('/g', 'utf8')]).toEqual(['1\n2\n', '1\n2\n', 'ws\n'])
      expect([ino('/f') === ino('/sub/k'), ws.fs.statSync('/f').nlink, ws.fs.statSync('/g').nlink, (ws.fs.statSync('/f').mode & 0o777).toString(8)]).toEqual([true, 2, 1, '600'])

      // A new name of a project file the command does not change: linked to it, the others untouched.
      const fresh = await open(project(`link-${mode}`))
      const linked = await fresh.exec('ln f n && stat -c %h n', { mode })
      expect(linked).toMatchObject({ exitCode: 0, stdout: '4\n', changes: { added: ['/n'], modified: [], deleted: [] } })
      expect(fresh.fs.statSync('/n').ino).toBe(fresh.fs.statSync('/f').ino)
      expect(fresh.fs.readFileSync('/n', 'utf8')).toBe('1\n')
    })
  }
})
