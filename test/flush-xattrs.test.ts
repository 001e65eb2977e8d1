/**
 * A file a flush writes anew (a temp renamed over it: a new inode) keeps the `user.*` extended
 * attributes and the ACL of the file it replaces, as an editor that saves by rename carries them
 * over; a times-only change sets the time in place and keeps them as they are. Without getfattr
 * and setfattr they are lost, and the flush report names the files (xattrsNotKept). The oracle is
 * getfattr on the real directory; skipped where the tools or user xattrs are missing.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { humanProjects, open } from './support/human-project.js'
import { capability } from './support/require.js'

const project = humanProjects('flush-xattrs')

/** An ACL giving user 1000 read (system.posix_acl_access's binary form: version 2, then tag, perm, id entries). */
const ACL = '0x0200000001000600ffffffff02000400e803000004000400ffffffff10000400ffffffff20000400ffffffff'

/** Why user xattrs and ACLs cannot be set here (no tools, a file system without them), or undefined. */
function xattrProblem(): string | undefined {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-xattr-probe-'))
  try {
    fs.writeFileSync(`${probe}/f`, '')
    execFileSync('setfattr', ['-n', 'user.probe', '-v', 'y', `${probe}/f`], { stdio: 'pipe' })
    execFileSync('setfattr', ['-n', 'system.posix_acl_access', '-v', ACL, `${probe}/f`], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return `setfattr failed: ${(error as Error).message.split('\n')[0]}`
  } finally {
    fs.rmSync(probe, { recursive: true, force: true })
  }
}

/** The file's extended attributes as getfattr dumps them (name → hex value). */
function xattrs(file: string): Record<string, string> {
  const out: Record<string, string> = {}
  const text = execFileSync('getfattr', ['--absolute-names', '-d', '-m', '-', '-e', 'hex', file], { encoding: 'utf8' })
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.indexOf('=')
    out[line.slice(0, at)] = line.slice(at + 1)
  }
  return out
}

const set = (file: string, name: string, value: string) => execFileSync('setfattr', ['-n', name, '-v', value, file])

describe.skipIf(!capability('xattrs', xattrProblem()))('extended attributes of a file the flush replaces', () => {
  it('are carried over to the new file: user.* and the ACL, the mode as the workspace gives it', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' })
    const a = path.join(root, 'a.txt')
    set(a, 'user.origin', 'human')
    set(a, 'user.other', '0x00ff01')
    set(a, 'system.posix_acl_access', ACL)
    const before = fs.statSync(a)
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    ws.fs.writeFileSync('/b.txt', 'agent b\n')
    const report = await ws.flush()
    expect(report.applied).toBe(true)
    expect(report.xattrsNotKept).toBeUndefined()
    const after = fs.statSync(a)
    expect(after.ino).not.toBe(before.ino) // written anew
    expect(fs.readFileSync(a, 'utf8')).toBe('agent\n')
    expect(xattrs(a)).toEqual({ 'user.origin': '0x68756d616e', 'user.other': '0x00ff01', 'system.posix_acl_access': ACL })
    expect(after.mode & 0o7777).toBe(before.mode & 0o7777)
    expect(xattrs(path.join(root, 'b.txt'))).toEqual({})
    await ws.close()
  })

  it('stay on the file when only its time changed (set in place)', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n' })
    const a = path.join(root, 'a.txt')
    set(a, 'user.origin', 'human')
    const ws = await open(root, store)
    ws.fs.utimesSync('/a.txt', 1_000_000_000, 1_000_000_000)
    await ws.flush()
    expect(fs.statSync(a).mtimeMs).toBe(1_000_000_000_000)
    expect(xattrs(a)).toEqual({ 'user.origin': '0x68756d616e' })
    await ws.close()
  })

  it('are lost without getfattr and setfattr, and the report names the files', async () => {
    const { root, store } = project({ 'a.txt': 'alpha\n', 'dir/b.txt': 'beta\n' })
    set(path.join(root, 'a.txt'), 'user.origin', 'human')
    const ws = await open(root, store)
    ws.fs.writeFileSync('/a.txt', 'agent\n')
    ws.fs.writeFileSync('/dir/b.txt', 'agent b\n')
    ws.fs.writeFileSync('/new.txt', 'new\n')
    const PATH = process.env.PATH
    process.env.PATH = '/nonexistent'
    let report
    try {
      report = await ws.flush()
    } finally {
      process.env.PATH = PATH
    }
    expect(report.applied).toBe(true)
    // The files it replaced (a new file replaced none).
    expect(report.xattrsNotKept).toEqual([{ target: `directory:${fs.realpathSync(root)}`, paths: ['/a.txt', '/dir/b.txt'], why: expect.stringContaining('getfattr') }])
    expect(xattrs(path.join(root, 'a.txt'))).toEqual({})
    await ws.close()
  })
})
