/**
 * Large project files read through descriptors a part at a time (LowerSource.readInto): a stream
 * or a positional read of a file on disk reads the parts asked for, not the whole file, so a file
 * of more than 2 GiB (which no readFile can hold) reads as node:fs reads it. A real directory is
 * the oracle; what the source was asked is counted.
 */
import { randomBytes } from 'node:crypto'
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { type LowerSource, Workspace } from '../src/index.js'

const root = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-lower-parts-'))
afterAll(() => nodeFs.rmSync(root, { recursive: true, force: true }))

/** The directory source at `root`, counting its whole-file reads and its part reads. */
function counted(): { source: LowerSource; counts: { readFile: number; readInto: number } } {
  const inner = directory(root)
  const counts = { readFile: 0, readInto: 0 }
  const source: LowerSource = {
    kind: 'counted',
    stat: (path) => inner.stat(path),
    readdir: (path) => inner.readdir(path),
    readFile: (path) => (counts.readFile++, inner.readFile(path)),
    readInto: (path, target, offset, length, position) => (counts.readInto++, inner.readInto!(path, target, offset, length, position)),
    readlink: (path) => inner.readlink(path),
  }
  return { source, counts }
}

describe('a large file on disk, read through a descriptor', () => {
  it('streams a part at a time, never whole (a 64 KiB chunk of a 1 GB file read all of it), and gives the bytes on disk', async () => {
    const bytes = randomBytes(12 * 1024 * 1024)
    nodeFs.writeFileSync(join(root, 'big.bin'), bytes)
    const { source, counts } = counted()
    const ws = await Workspace.open({ lower: source })
    const chunks: Buffer[] = []
    await new Promise((resolve, reject) => ws.fs.createReadStream('/big.bin').on('data', (chunk) => chunks.push(chunk as Buffer)).on('end', () => resolve(undefined)).on('error', reject))
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true)
    expect(counts.readFile).toBe(0)
    expect(counts.readInto).toBe(chunks.length)
    // A smaller file is read whole once, its next reads copied from it.
    nodeFs.writeFileSync(join(root, 'small.bin'), bytes.subarray(0, 1024 * 1024))
    const fd = ws.fs.openSync('/small.bin', 'r')
    const buffer = Buffer.alloc(4096)
    for (let at = 0; at < 16; at++) ws.fs.readSync(fd, buffer, 0, 4096, at * 4096)
    ws.fs.closeSync(fd)
    expect(counts.readFile).toBe(1)
    await ws.close()
  })

  it('of more than 2 GiB reads where it is asked, as node:fs does (it failed ERR_FS_FILE_TOO_LARGE)', async () => {
    const file = join(root, 'huge.bin')
    const size = 3 * 1024 ** 3
    // Sparse: three GiB on disk in a few blocks, a marker written near its end.
    nodeFs.writeFileSync(file, '')
    nodeFs.truncateSync(file, size)
    const marker = Buffer.from('tail!')
    const host = nodeFs.openSync(file, 'r+')
    nodeFs.writeSync(host, marker, 0, marker.length, size - 10)
    nodeFs.closeSync(host)
    const read = (fs: typeof nodeFs, path: string, position: number) => {
      const fd = fs.openSync(path, 'r')
      try {
        const buffer = Buffer.alloc(16, 1)
        const n = fs.readSync(fd, buffer, 0, 16, position)
        return [n, buffer.toString('latin1')]
      } finally {
        fs.closeSync(fd)
      }
    }
    const ws = await Workspace.open({ lower: directory(root) })
    const fs = ws.fs as unknown as typeof nodeFs
    for (const position of [0, size - 12, size - 3, size, size + 5]) expect(read(fs, '/huge.bin', position)).toEqual(read(nodeFs, file, position))
    expect(read(fs, '/huge.bin', size - 12)[1]).toContain('tail!')
    await ws.close()
  })

  it('changed on disk between two reads is read whole from then on, the new bytes (as any file the tree shows changed)', async () => {
    const file = join(root, 'changing.bin')
    nodeFs.writeFileSync(file, Buffer.alloc(9 * 1024 * 1024, 0x61))
    const { source, counts } = counted()
    const ws = await Workspace.open({ lower: source })
    const fd = ws.fs.openSync('/changing.bin', 'r')
    const buffer = Buffer.alloc(4)
    ws.fs.readSync(fd, buffer, 0, 4, 0)
    expect([buffer.toString('latin1'), counts.readInto, counts.readFile]).toEqual(['aaaa', 1, 0])
    await new Promise((resolve) => setTimeout(resolve, 15))
    nodeFs.writeFileSync(file, Buffer.alloc(10 * 1024 * 1024, 0x62))
    // The workspace sees the change at its next lookup of the path.
    expect(ws.fs.statSync('/changing.bin').size).toBe(10 * 1024 * 1024)
    ws.fs.readSync(fd, buffer, 0, 4, 0)
    expect(buffer.toString('latin1')).toBe('bbbb')
    expect(counts.readFile).toBe(1)
    ws.fs.closeSync(fd)
    await ws.close()
  })
})
