/**
 * ws.export() against real tools: the zip is read by Info-ZIP's unzip and zipinfo and by Python's
 * zipfile, and unzipping it must give the same directory (contents, modes, symlinks, times) as
 * flushing the workspace into a real directory; the FileSystemTree must read back as the same view.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
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
  for await (const chunk of await ws.export({ format: 'zip', ...options })) chunks.push(chunk)
  return { bytes: Buffer.concat(chunks), chunks: chunks.length, largest: Math.max(...chunks.map((c) => c.byteLength)) }
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

describe('ws.export as a zip', () => {
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
    expect(python.trim().split('\n')).toEqual([
      'build 3 0o120777 False 0',
      'index.js 3 0o100640 False 8',
      'lib/ 3 0o40755 True 0',
      'lib/a.js 3 0o100644 False 8',
      'lib/b.js 3 0o100644 False 8',
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

  it('refuses a tree a zip without zip64 cannot hold, before writing anything', async () => {
    const ws = await Workspace.open()
    for (let i = 0; i < 65_536; i++) ws.fs.writeFileSync(`/f${i}`, '')
    await expect(ws.export({ format: 'zip' })).rejects.toMatchObject({ code: 'ERR_REWINDFS_EXPORT_TOO_LARGE' })
    await expect(ws.export({ format: 'zip', level: 10 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    await ws.close()
  })

  it('is read once, and returning early closes the fork it reads', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a', '/b.txt': 'b' } })
    const archive = await ws.export({ format: 'zip' })
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

describe('ws.export as a FileSystemTree', () => {
  it('reads back as the same view when mounted as a lower layer', async () => {
    const { ws } = await project()
    const tree = await ws.export({ format: 'file-system-tree' })
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
