/**
 * The directory walker opens a directory's files through the directory's descriptor, checked
 * inside the root once (a search read each file, then read its descriptor's link to check it: a
 * syscall as costly as the open). What it reads is the same as the source's own reads, its errors
 * name workspace paths, a directory swapped for a link out of the root leads nowhere outside, and
 * the descriptor is not kept past the walk.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'

const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-walker-')))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

let serial = 0
function project(files: Record<string, string>): string {
  const root = path.join(scratch, `p${serial++}`)
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(root + name), { recursive: true })
    fs.writeFileSync(root + name, text)
  }
  return root
}

const decoder = new TextDecoder()
const openDescriptors = () => fs.readdirSync('/proc/self/fd').length
const turn = () => new Promise((resolve) => setImmediate(resolve))

describe.skipIf(!fs.existsSync('/proc/self/fd'))('the directory walker reads through a checked directory descriptor', () => {
  it('reads what the source reads, names workspace paths in its errors, and holds no descriptor past the walk', async () => {
    const root = project({ '/d/a.txt': 'a', '/d/b.txt': 'bb', '/e/c.txt': 'ccc' })
    const source = directory(root)
    await turn()
    const before = openDescriptors()
    const walker = source.walker()
    for (const file of ['/d/a.txt', '/d/b.txt', '/e/c.txt', '/d/a.txt']) expect(decoder.decode(walker.read(file))).toBe(decoder.decode(source.readFile(file)))
    fs.rmSync(root + '/d/b.txt')
    let gone: unknown
    try {
      walker.read('/d/b.txt')
    } catch (error) {
      gone = error
    }
    expect(gone).toMatchObject({ code: 'ENOENT', path: '/d/b.txt' })
    expect((gone as Error).message).not.toContain('/proc/')
    fs.mkdirSync(root + '/d/sub')
    expect(() => walker.read('/d/sub')).toThrow(expect.objectContaining({ code: 'EISDIR', path: '/d/sub' }))
    fs.symlinkSync('a.txt', root + '/d/link')
    expect(() => walker.read('/d/link')).toThrow(expect.objectContaining({ code: 'ELOOP', path: '/d/link' }))
    await turn()
    expect(openDescriptors()).toBe(before)
  })

  it('a directory swapped for a link out of the root is refused, not followed', async () => {
    const root = project({ '/d/a.txt': 'inside' })
    const outside = project({ '/a.txt': 'outside' })
    const source = directory(root)
    const walker = source.walker()
    expect(decoder.decode(walker.read('/d/a.txt'))).toBe('inside')
    await turn()
    fs.renameSync(root + '/d', root + '/moved')
    fs.symlinkSync(outside, root + '/d')
    expect(() => walker.read('/d/a.txt')).toThrow(expect.objectContaining({ code: 'EACCES' }))
  })
})
