/**
 * exportView (rewindfs/export) against real tools: the zip is read by Info-ZIP's unzip and zipinfo and by Python's
 * zipfile, and unzipping it must give the same directory (contents, modes, symlinks, times) as
 * flushing the workspace into a real directory; the FileSystemTree must read back as the same view.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { type ZipEntry, compressionStreamDeflate, crc32Table, nativeDeflate, writeZip } from '../src/zip.js'
import { exportView } from '../src/export.js'
import { Workspace } from '../src/index.js'

const scratch: string[] = []
const tmp = (label: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rewindfs-export-${label}-`))
  scratch.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of scratch.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

async function zipOf(ws: Workspace, options: { path?: string; level?: number } = {}): Promise<{ bytes: Buffer; chunks: number; largest: number }> {
  const chunks: Uint8Array[] = []
  for await (const chunk of await exportView(ws, { format: 'zip', ...options })) chunks.push(chunk)
  return { bytes: Buffer.concat(chunks), chunks: chunks.length, largest: Math.max(...chunks.map((c) => c.byteLength)) }
}

/** What the end of an archive says: whether zip64 end records precede the classic one, and the classic one's entry count. */
function ends(bytes: Uint8Array): { zip64: boolean; count: number } {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const end = view.length - 22
  expect(view.readUInt32LE(end)).toBe(0x06054b50)
  return { zip64: view.readUInt32LE(end - 20) === 0x07064b50 && view.readUInt32LE(end - 20 - 56) === 0x06064b50, count: view.readUInt16LE(end + 10) }
}

/** Every entry under `root`: kind, permission bits, contents or target (files' mtimes in whole seconds in `times`). */
function picture(root: string, times?: Record<string, number>): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, rel: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      // The flush's own bookkeeping is no part of the view.
      if (name.startsWith('.rewindfs')) continue
      const full = path.join(dir, name)
      const key = `${rel}${name}`
      const stat = fs.lstatSync(full)
      const mode = (stat.mode & 0o7777).toString(8)
      if (stat.isSymbolicLink()) out[key] = `link -> ${fs.readlinkSync(full)}`
      else if (stat.isDirectory()) {
        out[`${key}/`] = `dir ${mode}`
        walk(full, `${key}/`)
      } else {
        out[key] = `file ${mode} ${fs.readFileSync(full, 'utf8')}`
        if (times) times[key] = Math.floor(stat.mtimeMs / 1000)
      }
    }
  }
  walk(root, '')
  return out
}

async function project(): Promise<{ root: string; ws: Workspace }> {
  const root = tmp('project')
  fs.mkdirSync(path.join(root, 'src/lib'), { recursive: true })
  fs.writeFileSync(path.join(root, 'src/index.js'), 'import "./lib/a.js"\n')
  fs.writeFileSync(path.join(root, 'src/lib/a.js'), 'export const a = 1\n')
  fs.writeFileSync(path.join(root, 'build.sh'), '#!/bin/sh\necho build\n', { mode: 0o755 })
  fs.writeFileSync(path.join(root, 'secret.key'), 'k', { mode: 0o600 })
  fs.symlinkSync('src/index.js', path.join(root, 'main.js'))
  fs.mkdirSync(path.join(root, 'empty'))
  const ws = await Workspace.open({ lower: directory(root) })
  ws.fs.writeFileSync('/src/lib/b.js', 'export const b = 2\n')
  ws.fs.chmodSync('/src/index.js', 0o640)
  ws.fs.writeFileSync('/run.sh', '#!/bin/sh\n', { mode: 0o750 })
  ws.fs.symlinkSync('../build.sh', '/src/build')
  ws.fs.mkdirSync('/dist', { mode: 0o700 })
  ws.fs.rmSync('/secret.key')
  ws.fs.utimesSync('/src/lib/a.js', 1_600_000_000, 1_600_000_000)
  return { root, ws }
}

describe('exportView as a zip', () => {
  it('unzips into the same directory a flush writes (contents, modes, symlinks), with the workspace’s times', async () => {
    const { root, ws } = await project()
    const { bytes } = await zipOf(ws)
    const archive = path.join(tmp('zip'), 'view.zip')
    fs.writeFileSync(archive, bytes)
    const unzipped = tmp('unzipped')
    execFileSync('unzip', ['-q', archive, '-d', unzipped])
    const times: Record<string, number> = {}
    const fromZip = picture(unzipped, times)
    const viewTimes = Object.fromEntries(Object.keys(times).map((key) => [key, Math.floor(ws.fs.statSync(`/${key}`).mtimeMs / 1000)]))
    await ws.flush()
    const flushed = picture(root)
    expect(fromZip).toEqual(flushed)
    expect(flushed).toMatchObject({ 'run.sh': 'file 750 #!/bin/sh\n', 'src/build': 'link -> ../build.sh', 'dist/': 'dir 700', 'src/index.js': expect.stringMatching(/^file 640 /) })
    expect(flushed['secret.key']).toBeUndefined()
    expect(times).toEqual(viewTimes)
    expect(times['src/lib/a.js']).toBe(1_600_000_000)
    await ws.close()
  })

  it('stores Unix modes and symlinks as Info-ZIP and Python read them', async () => {
    const { ws } = await project()
    ws.fs.writeFileSync('/src/lib/long.js', 'export const x = 1\n'.repeat(50))
    const archive = path.join(tmp('zip'), 'view.zip')
    fs.writeFileSync(archive, (await zipOf(ws, { path: '/src' })).bytes)
    const zipinfo = execFileSync('unzip', ['-Z', archive], { encoding: 'utf8' })
    expect(zipinfo).toMatch(/^lrwxrwxrwx .* unx +11 .* build$/m)
    expect(zipinfo).toMatch(/^-rw-r----- .* unx .* index\.js$/m)
    expect(zipinfo).toMatch(/^drwxr-xr-x .* unx .* lib\/$/m)
    const python = execFileSync(
      'python3',
      ['-c', 'import sys, zipfile\nfor i in zipfile.ZipFile(sys.argv[1]).infolist(): print(i.filename, i.create_system, oct(i.external_attr >> 16), i.is_dir(), i.compress_type)', archive],
      { encoding: 'utf8' },
    )
    // Deflated where that makes it smaller, else stored, as Info-ZIP's zip does.
    expect(python.trim().split('\n')).toEqual([
      'build 3 0o120777 False 0',
      'index.js 3 0o100640 False 0',
      'lib/ 3 0o40755 True 0',
      'lib/a.js 3 0o100644 False 0',
      'lib/b.js 3 0o100644 False 0',
      'lib/long.js 3 0o100644 False 8',
    ])
    execFileSync('unzip', ['-tq', archive])
    await ws.close()
  })

  it('streams a big tree in many bounded chunks, and level 0 stores files uncompressed', async () => {
    const ws = await Workspace.open()
    const content = new Uint8Array(64 * 1024)
    for (let i = 0; i < 400; i++) {
      for (let k = 0; k < content.length; k += 997) content[k] = (i * 31 + k) & 0xff
      ws.fs.mkdirSync(`/d${i % 20}`, { recursive: true })
      ws.fs.writeFileSync(`/d${i % 20}/f${i}.bin`, content)
    }
    const stored = await zipOf(ws, { level: 0 })
    expect(stored.bytes.byteLength).toBeGreaterThan(400 * 64 * 1024)
    // No whole-archive buffer: each chunk is at most one slice of a file plus headers.
    expect(stored.chunks).toBeGreaterThan(400)
    expect(stored.largest).toBeLessThanOrEqual(1024 * 1024 + 1024)
    const archive = path.join(tmp('zip'), 'big.zip')
    fs.writeFileSync(archive, stored.bytes)
    const listed = execFileSync('python3', ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1]); print(len(z.infolist()), sum(i.file_size for i in z.infolist()), {i.compress_type for i in z.infolist()})', archive], { encoding: 'utf8' })
    expect(listed.trim()).toBe(`420 ${400 * 64 * 1024} {0}`)
    await ws.close()
  })

  it('writes zip64 end records for 70 000 entries, which unzip and Python read back whole', async () => {
    const ws = await Workspace.open()
    for (let d = 0; d < 70; d++) {
      ws.fs.mkdirSync(`/d${d}`)
      for (let i = 0; i < 999; i++) ws.fs.writeFileSync(`/d${d}/f${i}`, `${d}/${i}`)
    }
    const archive = path.join(tmp('zip'), 'many.zip')
    const { bytes } = await zipOf(ws)
    fs.writeFileSync(archive, bytes)
    expect(ends(bytes)).toEqual({ zip64: true, count: 0xffff })
    expect(execFileSync('unzip', ['-tq', archive], { encoding: 'utf8' })).toMatch(/No errors detected in compressed data/)
    const python = execFileSync(
      'python3',
      ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1]); names = z.namelist(); print(len(names), names[0], names[-1], z.read("d69/f998").decode(), z.read("d0/f0").decode(), len(set(names)))', archive],
      { encoding: 'utf8' },
    )
    expect(python.trim()).toBe('70000 d0/ d9/f998 69/998 0/0 70000')
    await expect(exportView(ws, { format: 'zip', level: 10 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    await ws.close()
  }, 120_000)

  it('reads a file of several slices through a FileHandle, deflated as a stream or stored after a CRC pass, and unzip gives it back byte for byte', async () => {
    const ws = await Workspace.open()
    const big = new Uint8Array(3 * 1024 * 1024 + 12345)
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 27
    ws.fs.writeFileSync('/big.bin', big)
    ws.fs.writeFileSync('/é and ü.txt', 'unicode name')
    const sizes: Record<number, number> = {}
    for (const level of [0, 1, 9]) {
      const archive = path.join(tmp('zip'), `big-${level}.zip`)
      const { bytes } = await zipOf(ws, { level })
      sizes[level] = bytes.byteLength
      fs.writeFileSync(archive, bytes)
      expect(Buffer.from(execFileSync('unzip', ['-p', archive, 'big.bin'], { maxBuffer: 1 << 26 })).equals(Buffer.from(big))).toBe(true)
      const python = execFileSync('python3', ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor i in z.infolist(): print(i.filename, i.compress_type, i.file_size, len(z.read(i)))', archive], { encoding: 'utf8' })
      expect(python.trim().split('\n')).toEqual([`big.bin ${level === 0 ? 0 : 8} ${big.length} ${big.length}`, 'é and ü.txt 0 12 12'])
    }
    // node:zlib is given the level.
    expect(sizes[9]).toBeLessThan(sizes[1])
    expect(sizes[1]).toBeLessThan(sizes[0])
    await ws.close()
  })

  it('is read once, and returning early closes the fork it reads', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a', '/b.txt': 'b' } })
    const archive = await exportView(ws, { format: 'zip' })
    for await (const chunk of archive) {
      expect(chunk.byteLength).toBeGreaterThan(0)
      break
    }
    await expect(
      (async () => {
        for await (const chunk of archive) void chunk
      })(),
    ).rejects.toMatchObject({ code: 'ERR_REWINDFS_EXPORT_CONSUMED' })
    await ws.close()
  })
})

describe('exportView as a FileSystemTree', () => {
  it('reads back as the same view when mounted as a lower layer', async () => {
    const { ws } = await project()
    const tree = await exportView(ws, { format: 'file-system-tree' })
    const copy = await Workspace.open({ lower: tree })
    const walk = (w: Workspace, dir: string): string[] =>
      (w.fs.readdirSync(dir) as string[]).sort().flatMap((name) => {
        const full = dir === '/' ? `/${name}` : `${dir}/${name}`
        const stat = w.fs.lstatSync(full)
        if (stat.isSymbolicLink()) return [`${full} -> ${w.fs.readlinkSync(full)}`]
        if (stat.isDirectory()) return [`${full}/`, ...walk(w, full)]
        return [`${full} ${w.fs.readFileSync(full, 'utf8')}`]
      })
    expect(walk(copy, '/')).toEqual(walk(ws, '/'))
    expect(walk(copy, '/')).toContain('/src/build -> ../build.sh')
    await copy.close()
    await ws.close()
  })
})

describe('the zip writer (src/zip.ts)', () => {
  const text = (value: string) => new TextEncoder().encode(value)
  const file = (name: string, contents: string | (() => AsyncIterable<Uint8Array> | Iterable<Uint8Array>), size?: number): ZipEntry => ({
    name,
    kind: 'file',
    mode: 0o100644,
    mtimeMs: 1_700_000_000_000,
    size: typeof contents === 'string' ? text(contents).byteLength : size,
    contents: typeof contents === 'string' ? () => [text(contents)] : contents,
  })

  /** Writes the archive to `archive`; a chunk that is the `hole` buffer itself (all zeros) is left as a hole in a sparse file, which reads back as the same zeros. */
  async function writeTo(archive: string, chunks: AsyncIterable<Uint8Array>, hole?: Uint8Array): Promise<{ size: number; peakRss: number }> {
    const fd = fs.openSync(archive, 'w')
    let size = 0
    let peakRss = 0
    let count = 0
    try {
      for await (const chunk of chunks) {
        if (chunk !== hole) fs.writeSync(fd, chunk, 0, chunk.byteLength, size)
        size += chunk.byteLength
        if (++count % 64 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss)
      }
      fs.ftruncateSync(fd, size)
    } finally {
      fs.closeSync(fd)
    }
    return { size, peakRss }
  }

  const tail = (archive: string): Buffer => {
    const fd = fs.openSync(archive, 'r')
    try {
      const size = fs.fstatSync(fd).size
      const bytes = Buffer.alloc(Math.min(200, size))
      fs.readSync(fd, bytes, 0, bytes.length, size - bytes.length)
      return bytes
    } finally {
      fs.closeSync(fd)
    }
  }

  it('passes 4 GiB: a 4.1 GiB file streamed at level 0 gets zip64 sizes, the entries after it zip64 offsets, and the end zip64 records', async () => {
    // The contents are generated a slice at a time and written as a sparse file, so neither memory
    // nor the disk holds 4 GiB; Python's zipfile then reads every byte of it and checks the CRC.
    const zeros = new Uint8Array(1 << 20)
    const big = Math.floor(4.1 * 2 ** 30)
    const lazyZeros = async function* () {
      for (let left = big; left > 0; left -= zeros.byteLength) yield left >= zeros.byteLength ? zeros : zeros.subarray(0, left)
    }
    const entries: ZipEntry[] = [
      file('before.txt', 'before'),
      { ...file('big.bin', lazyZeros, big), mode: 0o100600 },
      { name: 'after', kind: 'directory', mode: 0o040750, mtimeMs: 1_700_000_000_000 },
      file('after/tail.txt', 'the tail, past 4 GiB'),
      { name: 'after/link', kind: 'symlink', mode: 0o120777, mtimeMs: 1_700_000_000_000, contents: () => [text('../big.bin')] },
    ]
    const archive = path.join(tmp('zip64'), 'big.zip')
    const rssBefore = process.memoryUsage().rss
    const { size, peakRss } = await writeTo(archive, writeZip(entries), zeros)
    expect(size).toBeGreaterThan(big)
    // Streamed: the writer never held the file (or the archive) whole.
    expect(peakRss - rssBefore).toBeLessThan(256 * 2 ** 20)
    const end = tail(archive)
    expect(ends(end)).toEqual({ zip64: true, count: 5 })
    // The classic record says "see zip64" for the central directory's offset only.
    expect(end.readUInt32LE(end.length - 22 + 16)).toBe(0xffffffff)

    const python = execFileSync(
      'python3',
      [
        '-c',
        `import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist(): print(i.filename, i.file_size, i.compress_size, i.header_offset > 2**32, oct(i.external_attr >> 16))
with z.open('big.bin') as f:
    n = 0
    while True:
        b = f.read(1 << 20)
        if not b: break
        n += len(b)
print(n, z.read('after/tail.txt').decode(), z.read('after/link').decode())`,
        archive,
      ],
      { encoding: 'utf8' },
    )
    // Reading an entry to its end checks its CRC (zipfile raises BadZipFile on a mismatch).
    expect(python.trim().split('\n')).toEqual([
      'before.txt 6 6 False 0o100644',
      `big.bin ${big} ${big} False 0o100600`,
      'after/ 0 0 True 0o40750',
      'after/tail.txt 20 20 True 0o100644',
      'after/link 10 10 True 0o120777',
      `${big} the tail, past 4 GiB ../big.bin`,
    ])
    // Info-ZIP follows the zip64 records too: its listing and the entries after 4 GiB (testing big.bin
    // as well would read 4 GiB through its byte-wise CRC, a minute on CI; Python did read it above).
    const zipinfo = execFileSync('unzip', ['-Z', archive], { encoding: 'utf8' })
    expect(zipinfo).toMatch(new RegExp(`^-rw------- +4\\.5 unx +${big} .* stor .* big\\.bin$`, 'm'))
    expect(zipinfo).toMatch(/^lrwxrwxrwx .* unx +10 .* after\/link$/m)
    expect(execFileSync('unzip', ['-p', archive, 'after/tail.txt'], { encoding: 'utf8' })).toBe('the tail, past 4 GiB')
    expect(execFileSync('unzip', ['-tq', archive, 'before.txt', 'after/*'], { encoding: 'utf8' })).toMatch(/No errors detected/)
  }, 120_000)

  it('writes zip64 end records exactly from 65 535 entries on', async () => {
    const directories = (count: number) =>
      Array.from({ length: count }, (_, i): ZipEntry => ({ name: `d${i}`, kind: 'directory', mode: 0o040755, mtimeMs: 1_700_000_000_000 }))
    for (const [count, zip64] of [
      [65_534, false],
      [65_535, true],
    ] as const) {
      const archive = path.join(tmp('count'), 'dirs.zip')
      await writeTo(archive, writeZip(directories(count)))
      expect(ends(tail(archive))).toEqual({ zip64, count: Math.min(count, 0xffff) })
      const python = execFileSync('python3', ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1]); print(len(z.infolist()), z.infolist()[-1].filename)', archive], { encoding: 'utf8' })
      expect(python.trim()).toBe(`${count} d${count - 1}/`)
      // Info-ZIP must take 0xffff in the classic record as "see the zip64 record".
      if (zip64) expect(execFileSync('unzip', ['-tq', archive], { encoding: 'utf8' })).toMatch(/No errors detected in compressed data/)
    }
  }, 60_000)

  it('computes CRC-32 with its table as node:zlib does, in one call or continued slice by slice', () => {
    const random = new Uint8Array(1 << 20)
    for (let i = 0; i < random.length; i++) random[i] = (Math.imul(i, 2654435761) >>> 13) & 0xff
    for (const length of [0, 1, 7, 8, 9, 15, 16, 17, 100, 4095, random.length]) {
      expect(crc32Table(random.subarray(0, length))).toBe(zlib.crc32(random.subarray(0, length)))
    }
    let continued = 0
    for (let at = 0; at < random.length; at += 1000) continued = crc32Table(random.subarray(at, at + 1000), continued)
    expect(continued).toBe(zlib.crc32(random))
  })

  /** Several slices of text that deflates well, and its bytes whole. */
  const slicedText = (slices: number) => {
    const parts = Array.from({ length: slices }, (_, i) => text(`slice ${i}: ${'the quick brown fox jumps over the lazy dog. '.repeat(1500)}\n`))
    return { parts, whole: Buffer.concat(parts) }
  }

  it('deflates a file of several slices with node:zlib and with CompressionStream, read back by unzip, Python and a streaming reader (Java’s ZipInputStream)', async () => {
    const { parts, whole } = slicedText(5)
    const entries = (): ZipEntry[] => [
      { name: 'dir', kind: 'directory', mode: 0o040700, mtimeMs: 1_700_000_000_000 },
      file('dir/small.txt', 'small'),
      file('dir/sliced.txt', () => parts, whole.byteLength),
      { name: 'dir/link', kind: 'symlink', mode: 0o120777, mtimeMs: 1_700_000_000_000, contents: () => [text('sliced.txt')] },
      file('dir/repeat.txt', 'repeat '.repeat(100)),
    ]
    const expected = (sliced: number) => [
      `dir/ 0 0 ${zlib.crc32(new Uint8Array(0)).toString(16)}`,
      `dir/small.txt 0 5 ${zlib.crc32('small').toString(16)}`,
      `dir/sliced.txt ${sliced} ${whole.byteLength} ${zlib.crc32(whole).toString(16)}`,
      `dir/link 0 10 ${zlib.crc32('sliced.txt').toString(16)}`,
      `dir/repeat.txt ${sliced} 700 ${zlib.crc32('repeat '.repeat(100)).toString(16)}`,
    ]
    for (const [label, deflate] of [
      ['zlib', nativeDeflate(6)],
      ['CompressionStream', compressionStreamDeflate],
      ['stored', undefined],
    ] as const) {
      const archive = path.join(tmp('sliced'), `${label}.zip`)
      await writeTo(archive, writeZip(entries(), deflate))
      expect(Buffer.from(execFileSync('unzip', ['-p', archive, 'dir/sliced.txt'], { maxBuffer: 1 << 26 })).equals(whole)).toBe(true)
      expect(execFileSync('unzip', ['-tq', archive], { encoding: 'utf8' })).toMatch(/No errors detected/)
      const python = execFileSync('python3', ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor i in z.infolist(): print(i.filename, i.compress_type, len(z.read(i)), format(i.CRC, "x"))', archive], { encoding: 'utf8' })
      expect(python.trim().split('\n')).toEqual(expected(deflate ? 8 : 0))
      const streaming = javaStreaming(archive)
      if (streaming === undefined) console.log('[rewindfs] no JDK: the streaming reader check is skipped')
      else expect(streaming.trim().split('\n')).toEqual(expected(deflate ? 8 : 0))
    }
  }, 120_000)

  it('gives a file of unknown size a zip64 local header and an 8-byte descriptor', async () => {
    const { parts, whole } = slicedText(3)
    const archive = path.join(tmp('unknown'), 'unknown.zip')
    const stored = path.join(tmp('unknown'), 'stored.zip')
    await writeTo(archive, writeZip([file('unknown.txt', () => parts)], nativeDeflate(6)))
    await writeTo(stored, writeZip([file('unknown.txt', () => parts)]))
    const bytes = fs.readFileSync(archive)
    // The local header: version 4.5, the descriptor flag, sizes 0xffffffff, and a zip64 field with sizes to come.
    expect([bytes.readUInt16LE(4), bytes.readUInt16LE(6) & 8, bytes.readUInt32LE(18), bytes.readUInt32LE(22)]).toEqual([45, 8, 0xffffffff, 0xffffffff])
    const extra = bytes.subarray(30 + 'unknown.txt'.length, 30 + 'unknown.txt'.length + bytes.readUInt16LE(28))
    expect(extra.readUInt16LE(9)).toBe(0x0001)
    expect(extra.readUInt16LE(11)).toBe(16)
    for (const zip of [archive, stored]) {
      expect(Buffer.from(execFileSync('unzip', ['-p', zip, 'unknown.txt'], { maxBuffer: 1 << 26 })).equals(whole)).toBe(true)
      const python = execFileSync('python3', ['-c', 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1]); i = z.infolist()[0]; print(i.file_size, len(z.read(i)))', zip], { encoding: 'utf8' })
      expect(python.trim()).toBe(`${whole.byteLength} ${whole.byteLength}`)
    }
    // The descriptor, last before the central directory, has 8-byte sizes.
    const directory = bytes.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    const descriptor = bytes.subarray(directory - 24, directory)
    expect(descriptor.readUInt32LE(0)).toBe(0x08074b50)
    expect(descriptor.readUInt32LE(4)).toBe(zlib.crc32(whole))
    expect(Number(descriptor.readBigUInt64LE(16))).toBe(whole.byteLength)
  })

  it('closes a file’s contents when the archive is abandoned part way, and refuses contents that change between two readings', async () => {
    for (const deflate of [nativeDeflate(1), undefined]) {
      let closed = 0
      const contents = async function* () {
        try {
          for (let i = 0; i < 100; i++) yield new Uint8Array(256 * 1024).fill(i)
        } finally {
          closed++
        }
      }
      const archive = writeZip([file('a.bin', contents, 100 * 256 * 1024)], deflate)
      for await (const chunk of archive) {
        expect(chunk.byteLength).toBeGreaterThan(0)
        break
      }
      // Stored, it was read once whole for its CRC, then again until abandoned.
      expect(closed).toBe(deflate ? 1 : 2)
    }
    let readings = 0
    const changing = () => (++readings === 1 ? [text('one'), text('two')] : [text('one'), text('three')])
    await expect((async () => {
      for await (const chunk of writeZip([file('changing.txt', changing, 6)])) void chunk
    })()).rejects.toMatchObject({ code: 'ERR_REWINDFS_ZIP_SIZE' })
  })
})

let javaClasses: string | null | undefined

/** What Java's ZipInputStream, which reads an archive front to back as a stream (no central directory), reads from it; undefined without a JDK. */
function javaStreaming(archive: string): string | undefined {
  if (javaClasses === undefined) {
    javaClasses = null
    if (spawnSync('javac', ['-version']).status !== 0) return undefined
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-export-java-'))
    fs.writeFileSync(
      path.join(dir, 'StreamRead.java'),
      `import java.io.*;
import java.util.zip.*;
public class StreamRead {
  public static void main(String[] args) throws Exception {
    try (ZipInputStream zip = new ZipInputStream(new BufferedInputStream(new FileInputStream(args[0])))) {
      byte[] buffer = new byte[65536];
      for (ZipEntry entry; (entry = zip.getNextEntry()) != null; ) {
        CRC32 crc = new CRC32();
        long size = 0;
        for (int n; (n = zip.read(buffer)) > 0; size += n) crc.update(buffer, 0, n);
        System.out.println(entry.getName() + " " + entry.getMethod() + " " + size + " " + Long.toHexString(crc.getValue()));
      }
    }
  }
}
`,
    )
    execFileSync('javac', ['-d', dir, path.join(dir, 'StreamRead.java')])
    javaClasses = dir
  }
  if (javaClasses === null) return undefined
  return execFileSync('java', ['-cp', javaClasses, 'StreamRead', archive], { encoding: 'utf8' })
}

afterAll(() => {
  if (javaClasses) fs.rmSync(javaClasses, { recursive: true, force: true })
})
