/**
 * Hard links through ws.exec in copy mode (overlay mode's are among the exec scenarios, run as
 * root and as an unprivileged user): the copy holds the workspace's names of one inode as hard
 * links of one file, and links the command makes or breaks come back as they are.
 */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { hostShell } from '../adapters/node-fs/index.js'

describe('exec in copy mode', () => {
  it('links both ways: cp -al, ln, a write through one name, a link broken by a rename over it', async () => {
    const ws = await Workspace.open({ lower: { '/lib/a.txt': 'a\n', '/lib/sub/b.txt': 'b\n' }, exec: hostShell(), autoCheckpoint: false })
    const fs = ws.fs
    fs.writeFileSync('/f', 'f\n')
    fs.linkSync('/f', '/g')
    fs.writeFileSync('/p', 'p\n')
    fs.linkSync('/p', '/q')
    const ino = (path: string) => fs.statSync(path).ino
    const result = await ws.exec(
      ['stat -c %h f g', '[ "$(stat -c %i f)" = "$(stat -c %i g)" ] && echo same', 'cp -al lib lib2', 'ln f h', 'echo x >> g', 'cat f', 'cp q q.tmp && mv q.tmp q'].join(' && '),
      { mode: 'copy' },
    )
    expect(result).toMatchObject({ exitCode: 0, mode: 'copy', stdout: '2\n2\nsame\nf\nx\n', stderr: '' })
    expect(result.changes).toEqual({ added: ['/h', '/lib2', '/lib2/a.txt', '/lib2/sub', '/lib2/sub/b.txt'], modified: ['/f', '/g', '/q'], deleted: [] })
    expect([ino('/lib/a.txt') === ino('/lib2/a.txt'), fs.statSync('/lib/a.txt').nlink]).toEqual([true, 2])
    expect(['/f', '/g', '/h'].map((p) => `${fs.statSync(p).nlink} ${fs.readFileSync(p, 'utf8')}`)).toEqual(['3 f\nx\n', '3 f\nx\n', '3 f\nx\n'])
    expect(ino('/f')).toBe(ino('/h'))
    // q was replaced by a file of its own: p keeps the old inode, alone.
    expect([fs.statSync('/p').nlink, fs.statSync('/q').nlink, ino('/p') === ino('/q')]).toEqual([1, 1, false])
    fs.writeFileSync('/lib2/sub/b.txt', 'through lib2\n')
    expect(fs.readFileSync('/lib/sub/b.txt', 'utf8')).toBe('through lib2\n')
    // The whole exec is one undo step: the links go with it.
    await ws.undo()
    await ws.undo()
    expect([fs.existsSync('/lib2'), fs.existsSync('/h'), fs.statSync('/q').nlink, fs.readFileSync('/g', 'utf8')]).toEqual([false, false, 2, 'f\n'])
    await ws.close()
  })
})
