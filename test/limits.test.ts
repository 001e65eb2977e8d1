import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'

describe('per-file size limit', () => {
  it('refuses with EFBIG and writes nothing when a file would grow past maxFileSize', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'x'.repeat(100) }, maxFileSize: 1024 })
    const { fs } = ws
    const before = ws.history().length
    expect(() => fs.writeFileSync('/big.bin', new Uint8Array(1025))).toThrow(expect.objectContaining({ code: 'EFBIG', syscall: 'write', path: '/big.bin' }))
    expect(fs.existsSync('/big.bin')).toBe(false)
    expect(() => fs.appendFileSync('/a.txt', 'y'.repeat(925))).toThrow(expect.objectContaining({ code: 'EFBIG' }))
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('x'.repeat(100))
    expect(() => fs.truncateSync('/a.txt', 4096)).toThrow(expect.objectContaining({ code: 'EFBIG', syscall: 'ftruncate' }))
    const fd = fs.openSync('/a.txt', 'r+')
    expect(() => fs.writeSync(fd, new Uint8Array(10), 0, 10, 1020)).toThrow(expect.objectContaining({ code: 'EFBIG', syscall: 'write' }))
    expect(() => fs.ftruncateSync(fd, 2048)).toThrow(expect.objectContaining({ code: 'EFBIG' }))
    fs.closeSync(fd)
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('x'.repeat(100))
    expect(ws.history().length).toBe(before)
    // Exactly at the limit is fine.
    fs.writeFileSync('/edge.bin', new Uint8Array(1024))
    expect(fs.statSync('/edge.bin').size).toBe(1024)
    await ws.close()
  })

  it('holds a transaction to it too: EFBIG in the body, nothing committed', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'x'.repeat(100) }, maxFileSize: 1024 })
    const before = ws.history().length
    await expect(ws.transaction((staged) => staged.writeFileSync('/big.bin', new Uint8Array(1025)))).rejects.toMatchObject({ code: 'EFBIG', syscall: 'write', path: '/big.bin' })
    await expect(ws.transaction((staged) => staged.appendFileSync('/a.txt', 'y'.repeat(925)))).rejects.toMatchObject({ code: 'EFBIG' })
    expect(ws.fs.existsSync('/big.bin')).toBe(false)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('x'.repeat(100))
    expect(ws.history().length).toBe(before)
    await ws.transaction((staged) => staged.writeFileSync('/edge.bin', new Uint8Array(1024)))
    expect(ws.fs.statSync('/edge.bin').size).toBe(1024)
    await ws.close()
  })

  it('checks the option', async () => {
    await expect(Workspace.open({ maxFileSize: -1 })).rejects.toThrow(/maxFileSize must be an integer/)
    await expect(Workspace.open({ maxFileSize: 2 ** 31 })).rejects.toThrow(/maxFileSize/)
  })
})
