/**
 * ws.flush against real directories: the rebase into the workspace's own lower directory (history
 * stays exact, pre-flush checkpoints stay restorable without touching the disk), conflicts, dry
 * runs, canaries with rollback, and a durable store across a reopen.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { capability } from './support/require.js'

type Tree = Record<string, string>

/** Every entry under `root` of an fs-like object: files by content, links by target, dirs as '/'. */
function snapshot(host: Pick<typeof fs, 'readdirSync' | 'lstatSync' | 'readFileSync' | 'readlinkSync'>, root: string): Tree {
  const out: Tree = {}
  const walk = (dir: string, rel: string) => {
    for (const name of (host.readdirSync(dir) as string[]).sort()) {
      if (name.startsWith('.rewindfs')) continue
      const full = dir === '/' ? `/${name}` : `${dir}/${name}`
      const key = `${rel}/${name}`
      const stat = host.lstatSync(full)
      if (stat.isSymbolicLink()) out[key] = `-> ${String(host.readlinkSync(full))}`
      else if (stat.isDirectory()) {
        out[key] = '/'
        walk(full, key)
      } else out[key] = String(host.readFileSync(full, 'utf8'))
    }
  }
  walk(root, '')
  return out
}

function write(root: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(root, rel)
    fs.mkdirSync(path.dirname(full), { recursive: true })
    if (rel.endsWith('/')) fs.mkdirSync(full, { recursive: true })
    else fs.writeFileSync(full, content)
  }
}

const ORIGINAL = {
  '/app/config.json': '{ "port": 8080 }\n',
  '/app/server.js': 'serve()\n',
  '/app/old/legacy.txt': 'legacy\n',
  '/README.md': '# app\n',
}

let tmp: string
let project: string

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-flush-'))
  project = path.join(tmp, 'project')
  fs.mkdirSync(project)
  write(project, ORIGINAL)
})

afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** The agent's edits used by several cases. */
function edit(ws: Workspace): void {
  ws.fs.writeFileSync('/app/config.json', '{ "port": 9090 }\n')
  ws.fs.rmSync('/app/old', { recursive: true })
  ws.fs.mkdirSync('/app/new')
  ws.fs.writeFileSync('/app/new/module.js', 'export {}\n')
  ws.fs.symlinkSync('new/module.js', '/app/current.js')
  ws.fs.unlinkSync('/README.md')
}

describe('flush into the lower directory (a rebase)', () => {
  it('makes the directory what the workspace shows, leaves no changes, and keeps pre-flush history exact', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    const before = await ws.checkpoint({ name: 'before' })
    edit(ws)
    const view = snapshot(ws.fs as unknown as typeof fs, '/')
    const report = await ws.flush(lower)
    expect(report.applied).toBe(true)
    expect(report.changes.map((c) => `${c.type} ${c.path}`).sort()).toEqual(
      ['modified /app/config.json', 'deleted /app/old', 'deleted /app/old/legacy.txt', 'added /app/new', 'added /app/new/module.js', 'added /app/current.js', 'deleted /README.md'].sort(),
    )
    expect(snapshot(fs, project)).toEqual(view)
    expect(ws.changes()).toEqual([])
    // Flushing again has nothing to send.
    expect((await ws.flush(lower)).changes).toEqual([])

    // The pre-flush checkpoint still shows the old files, read from the pins, not the disk.
    const diskAfterFlush = snapshot(fs, project)
    await ws.restore(before.id)
    expect(ws.fs.readFileSync('/app/old/legacy.txt', 'utf8')).toBe('legacy\n')
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
    expect(ws.fs.existsSync('/app/new')).toBe(false)
    expect(snapshot(fs, project)).toEqual(diskAfterFlush) // restore changes the view only
    expect(ws.changes().map((c) => c.path)).toContain('/app/config.json')

    // Until the next flush, which writes the old generation back.
    await ws.flush(lower)
    expect(snapshot(fs, project)).toEqual(snapshot(ws.fs as unknown as typeof fs, '/'))
    expect(fs.readFileSync(path.join(project, 'app/old/legacy.txt'), 'utf8')).toBe('legacy\n')
    await ws.close()
  })

  it('undo after a flush brings back the pre-flush content without reading the disk', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    ws.fs.writeFileSync('/app/server.js', 'serve({ fast: true })\n')
    await ws.flush(lower)
    await ws.undo()
    expect(ws.fs.readFileSync('/app/server.js', 'utf8')).toBe('serve()\n')
    expect(fs.readFileSync(path.join(project, 'app/server.js'), 'utf8')).toBe('serve({ fast: true })\n')
    expect(ws.changes().map((c) => `${c.type} ${c.path}`)).toEqual(['modified /app/server.js'])
    await ws.close()
  })

  it('refuses paths changed on disk since they were read, lists them, writes nothing; force overwrites', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe(ORIGINAL['/app/config.json'])
    ws.fs.writeFileSync('/app/config.json', '{ "port": 1 }\n')
    ws.fs.writeFileSync('/app/extra.txt', 'extra\n')
    // Someone else edits the file underneath.
    fs.writeFileSync(path.join(project, 'app/config.json'), '{ "port": 2, "theirs": true }\n')
    const disk = snapshot(fs, project)
    await expect(ws.flush(lower)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [{ target: lower.id, path: '/app/config.json' }] })
    expect(snapshot(fs, project)).toEqual(disk)
    const dry = await ws.flush(lower, { dryRun: true })
    expect(dry.applied).toBe(false)
    expect(dry.conflicts).toEqual([{ target: lower.id, path: '/app/config.json' }])
    expect(snapshot(fs, project)).toEqual(disk)
    await ws.flush(lower, { force: true })
    expect(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8')).toBe('{ "port": 1 }\n')
    expect(fs.readFileSync(path.join(project, 'app/extra.txt'), 'utf8')).toBe('extra\n')
    await ws.close()
  })

  it('a transaction (and so a command ws.exec ran) that replaced or deleted project files unread: changes made on disk since are conflicts too', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower, store: directoryStore(path.join(tmp, 'store')) })
    await ws.transaction((staged) => {
      staged.writeFileSync('/app/config.json', '{ "port": 1 }\n')
      staged.rmSync('/app/server.js')
      staged.writeFileSync('/app/created.txt', 'ours\n')
    })
    fs.writeFileSync(path.join(project, 'app/config.json'), '{ "theirs": true }\n')
    fs.writeFileSync(path.join(project, 'app/server.js'), 'theirs()\n')
    fs.writeFileSync(path.join(project, 'app/created.txt'), 'theirs\n')
    const disk = snapshot(fs, project)
    const conflicts = ['/app/config.json', '/app/created.txt', '/app/server.js'].map((p) => ({ target: lower.id, path: p }))
    await expect(ws.flush(lower)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts })
    await ws.close()
    expect(snapshot(fs, project)).toEqual(disk)
    // What the transaction saw is journaled: a reopened session refuses the same.
    const again = await Workspace.open({ lower, store: directoryStore(path.join(tmp, 'store')) })
    await expect(again.flush(lower)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts })
    await again.close()
    expect(snapshot(fs, project)).toEqual(disk)
  })

  it('a path created on disk where the workspace adds one is a conflict', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    ws.fs.writeFileSync('/app/new.txt', 'ours\n')
    fs.writeFileSync(path.join(project, 'app/new.txt'), 'theirs\n')
    await expect(ws.flush(lower)).rejects.toMatchObject({ code: 'ECONFLICT' })
    expect(fs.readFileSync(path.join(project, 'app/new.txt'), 'utf8')).toBe('theirs\n')
    await ws.close()
  })

  it('reports progress per entry', async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    for (let i = 0; i < 5; i++) ws.fs.writeFileSync(`/f${i}.txt`, String(i))
    const seen: number[] = []
    await ws.flush(lower, { onProgress: (p) => seen.push(p.done) })
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.at(-1)).toBe(5)
    await ws.close()
  })
})

describe('what the workspace never showed', () => {
  it('a deleted directory holding a name that is not UTF-8 or a FIFO refuses the flush, naming them, and nothing on disk changes', async () => {
    const dir = path.join(project, 'hidden')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'shown.txt'), 'shown')
    fs.writeFileSync(Buffer.concat([Buffer.from(dir + '/a'), Buffer.from([0xff])]), 'bytes the workspace cannot name')
    execFileSync('mkfifo', [path.join(dir, 'pipe')])
    const ws = await Workspace.open({ lower: directory(project) })
    // The workspace shows the one file, so the directory deletes as if that were all.
    expect(ws.fs.readdirSync('/hidden')).toEqual(['shown.txt'])
    ws.fs.rmSync('/hidden', { recursive: true })
    ws.fs.writeFileSync('/elsewhere.txt', 'x')
    await expect(ws.flush()).rejects.toMatchObject({ code: 'EINVAL', path: '/hidden', message: expect.stringContaining("('a\\xff', a name that is not UTF-8, 'pipe', a FIFO)") })
    expect(fs.readdirSync(dir).length).toBe(3)
    expect(fs.existsSync(path.join(project, 'elsewhere.txt'))).toBe(false)
    await ws.close()
  })
})

describe('symlink targets', () => {
  it("writes an absolute target the workspace holds relative to the link (the workspace reads it from its root, the directory would from the host's); refuses one it does not hold, with nothing written", async () => {
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    ws.fs.symlinkSync('/app/config.json', '/app/config-link')
    ws.fs.symlinkSync('/app', '/app/new-root')
    ws.fs.symlinkSync('/', '/top')
    await ws.flush(lower)
    expect(fs.readlinkSync(path.join(project, 'app/config-link'))).toBe('config.json')
    expect(fs.readlinkSync(path.join(project, 'app/new-root'))).toBe('.')
    expect(fs.readlinkSync(path.join(project, 'top'))).toBe('.')
    expect(fs.readFileSync(path.join(project, 'app/config-link'), 'utf8')).toBe(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8'))
    // Flushed: the workspace has nothing left to write, and reads the same through the links.
    expect((await ws.flush(lower, { dryRun: true })).changes).toEqual([])
    expect(ws.fs.readFileSync('/app/config-link', 'utf8')).toBe(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8'))

    ws.fs.symlinkSync('/usr/bin/env', '/env')
    ws.fs.writeFileSync('/also.txt', 'x')
    await expect(ws.flush(lower)).rejects.toMatchObject({ code: 'EACCES', path: '/usr/bin/env', dest: '/env' })
    expect(fs.existsSync(path.join(project, 'also.txt'))).toBe(false)
    await ws.close()
  })

  it('a directory opened with allowLinksOutside takes links out of the root as they are', async () => {
    const lower = directory(project, { allowLinksOutside: true })
    const ws = await Workspace.open({ lower })
    ws.fs.symlinkSync('/usr/bin/env', '/env')
    ws.fs.symlinkSync('../../elsewhere', '/app/up')
    await ws.flush(lower)
    expect(fs.readlinkSync(path.join(project, 'env'))).toBe('/usr/bin/env')
    expect(fs.readlinkSync(path.join(project, 'app/up'))).toBe('../../elsewhere')
    // The workspace still never follows one out of the root.
    expect(() => ws.fs.readFileSync('/app/up/x')).toThrow()
    await ws.close()
  })
})

describe('absolute links the project holds', () => {
  it('one into the project reads as the workspace path it names, so the workspace follows it where a command does; one out of it stays as it is; a flush leaves them alone', async () => {
    const real = fs.realpathSync(project)
    fs.symlinkSync(path.join(real, 'app/config.json'), path.join(project, 'config-link'))
    fs.symlinkSync(real, path.join(project, 'root-link'))
    fs.symlinkSync('/usr/bin/env', path.join(project, 'env'))
    const ws = await Workspace.open({ lower: directory(project) })
    expect(ws.fs.readlinkSync('/config-link')).toBe('/app/config.json')
    expect(ws.fs.readFileSync('/config-link', 'utf8')).toBe('{ "port": 8080 }\n')
    expect(ws.fs.readlinkSync('/root-link')).toBe('/')
    expect(ws.fs.readdirSync('/root-link/app')).toContain('config.json')
    expect(ws.fs.readlinkSync('/env')).toBe('/usr/bin/env')
    expect(ws.changes()).toEqual([])
    ws.fs.writeFileSync('/app/config.json', '{ "port": 9090 }\n')
    expect(ws.fs.readFileSync('/config-link', 'utf8')).toBe('{ "port": 9090 }\n')
    await ws.flush(undefined)
    expect(fs.readlinkSync(path.join(project, 'config-link'))).toBe(path.join(real, 'app/config.json'))
    await ws.close()
  })
})

describe('flush with a durable store', () => {
  it('reopens clean after a flush, and a pre-flush checkpoint still restores the old content', async () => {
    const storeDir = path.join(tmp, 'store')
    const open = () => Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    let ws = await open()
    const before = await ws.checkpoint({ name: 'before' })
    edit(ws)
    await ws.flush() // no target: the lower directory
    await ws.close()

    ws = await open()
    expect(ws.changes()).toEqual([])
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe('{ "port": 9090 }\n')
    await ws.restore(before.id)
    expect(ws.fs.readFileSync('/app/old/legacy.txt', 'utf8')).toBe('legacy\n')
    expect(ws.fs.readFileSync('/README.md', 'utf8')).toBe('# app\n')
    expect(fs.existsSync(path.join(project, 'README.md'))).toBe(false)
    await ws.close()
  })

  it('a project directory removed on disk under the workspace: what was written in it stays, lists, reopens and flushes as a conflict', async () => {
    const storeDir = path.join(tmp, 'store')
    const open = () => Workspace.open({ lower: directory(project), store: directoryStore(storeDir), autoCheckpoint: false })
    let ws = await open()
    ws.fs.writeFileSync('/app/config.json', '{ "port": 9090 }\n')
    ws.fs.writeFileSync('/NOTES.md', 'notes\n')
    await ws.sync()
    // Another process removes the directory (a branch switch): the live workspace keeps its write.
    fs.rmSync(path.join(project, 'app'), { recursive: true })
    expect(ws.fs.readdirSync('/app')).toEqual(['config.json'])
    expect(ws.changes().map((c) => `${c.type} ${c.path}`)).toEqual(['added /NOTES.md', 'added /app', 'added /app/config.json'])
    await ws.close()
    // Reopened, the journal replays over the lower directory as it is now: nothing is damage.
    ws = await open()
    expect(ws.status.corrupt).toBeUndefined()
    expect(ws.frozen).toBeUndefined()
    expect(ws.history().map((op) => op.paths)).toEqual([['/NOTES.md'], ['/app/config.json']])
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe('{ "port": 9090 }\n')
    expect(ws.fs.readdirSync('/app')).toEqual(['config.json'])
    expect(ws.changes().map((c) => `${c.type} ${c.path}`)).toEqual(['added /NOTES.md', 'added /app', 'added /app/config.json'])
    await expect(ws.flush(undefined)).rejects.toMatchObject({ code: 'ECONFLICT' })
    expect(fs.existsSync(path.join(project, 'NOTES.md'))).toBe(false)
    await ws.flush(undefined, { force: true })
    expect(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8')).toBe('{ "port": 9090 }\n')
    expect(fs.readdirSync(path.join(project, 'app'))).toEqual(['config.json'])
    await ws.close()
  })

  it('refuses to reopen a store over another lower directory', async () => {
    const storeDir = path.join(tmp, 'store')
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    await ws.close()
    const other = path.join(tmp, 'other')
    fs.mkdirSync(other)
    await expect(Workspace.open({ lower: directory(other), store: directoryStore(storeDir) })).rejects.toMatchObject({ code: 'ELOWERMISMATCH' })
  })
})

describe('canary flush to several targets', () => {
  const servers = (n: number) =>
    Array.from({ length: n }, (_, i) => {
      const dir = path.join(tmp, `server-${i}`)
      fs.mkdirSync(dir)
      write(dir, ORIGINAL)
      return dir
    })

  it('applies to the canaries, verifies, then to the rest', async () => {
    const dirs = servers(3)
    const projectBefore = snapshot(fs, project)
    const ws = await Workspace.open({ lower: directory(project) })
    edit(ws)
    const verified: string[][] = []
    const report = await ws.flush(dirs.map((root) => directory(root)), {
      canary: 1,
      verify: (targets) => {
        verified.push(targets.map((t) => t.id))
        // Only the canary has the new config at this point.
        expect(fs.readFileSync(path.join(dirs[0], 'app/config.json'), 'utf8')).toBe('{ "port": 9090 }\n')
        expect(fs.readFileSync(path.join(dirs[1], 'app/config.json'), 'utf8')).toBe(ORIGINAL['/app/config.json'])
        return true
      },
    })
    expect(verified).toEqual([[directory(dirs[0]).id]])
    expect(report.targets.every((t) => t.applied)).toBe(true)
    const view = snapshot(ws.fs as unknown as typeof fs, '/')
    for (const dir of dirs) expect(snapshot(fs, dir)).toEqual(view)
    // The lower directory is not a target here: untouched.
    expect(snapshot(fs, project)).toEqual(projectBefore)
    await ws.close()
  })

  it('a failed verify rolls the canaries back and leaves the rest untouched', async () => {
    const dirs = servers(3)
    const original = snapshot(fs, dirs[0])
    const ws = await Workspace.open({ lower: directory(project) })
    edit(ws)
    await expect(ws.flush(dirs.map((root) => directory(root)), { canary: 2, verify: () => false })).rejects.toMatchObject({ code: 'ECANARY', rolledBack: dirs.slice(0, 2).map((d) => directory(d).id) })
    for (const dir of dirs) expect(snapshot(fs, dir)).toEqual(original)
    // A later successful flush still sends everything.
    await ws.flush(directory(dirs[2]))
    expect(snapshot(fs, dirs[2])).toEqual(snapshot(ws.fs as unknown as typeof fs, '/'))
    await ws.close()
  })

  it('refuses a canary count without enough targets or a verify function', async () => {
    const dirs = servers(2)
    const ws = await Workspace.open({ lower: directory(project) })
    await expect(ws.flush(dirs.map((root) => directory(root)), { canary: 2, verify: () => true })).rejects.toThrow(/more targets than canaries/)
    await expect(ws.flush(dirs.map((root) => directory(root)), { canary: 1 })).rejects.toThrow(/verify function/)
    await expect(ws.flush({} as never)).rejects.toThrow(/FlushTarget/)
    await ws.close()
  })
})

describe('restore and other sessions', () => {
  it('refuses to restore over paths another session flushed after the restore point, unless forced', async () => {
    const lower = directory(project)
    const a = await Workspace.open({ lower, session: 'a', autoCheckpoint: false })
    const start = await a.checkpoint({ name: 'start' })
    const b = await a.fork('b')
    b.fs.writeFileSync('/app/config.json', '{ "port": 2 }\n')
    await b.flush()
    a.fs.writeFileSync('/app/config.json', '{ "port": 1 }\n')
    a.fs.writeFileSync('/app/server.js', 'serve(1)\n')
    // a's restore would take config.json back over b's flushed work; server.js is a's alone.
    await expect(a.restore(start.id)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: ['/app/config.json'] })
    expect(a.fs.readFileSync('/app/server.js', 'utf8')).toBe('serve(1)\n')
    // b restoring its own view, and a restoring only what b did not touch, are fine.
    await a.restore(start.id, { include: ['/app/server.js'] })
    expect(a.fs.readFileSync('/app/server.js', 'utf8')).toBe('serve()\n')
    const forced = await a.restore(start.id, { force: true })
    expect(forced.applied).toBe(true)
    expect(a.fs.readFileSync('/app/config.json', 'utf8')).toBe(ORIGINAL['/app/config.json'])
    expect(b.fs.readFileSync('/app/config.json', 'utf8')).toBe('{ "port": 2 }\n')
    await b.close()
    await a.close()
  })
})

describe('purge after a flush', () => {
  it('also removes the old lower content a flush pinned', async () => {
    write(project, { '/secrets.env': 'API_KEY=sk-live-123\n' })
    const lower = directory(project)
    const ws = await Workspace.open({ lower })
    const before = await ws.checkpoint({ name: 'before' })
    ws.fs.writeFileSync('/secrets.env', 'API_KEY=\n')
    await ws.flush() // the old file, with the key, is pinned so 'before' still shows it
    await ws.restore(before.id)
    expect(ws.fs.readFileSync('/secrets.env', 'utf8')).toBe('API_KEY=sk-live-123\n')
    const report = await ws.purge('/secrets.env')
    expect(report.erased).toBeGreaterThanOrEqual(1)
    expect(ws.fs.readFileSync('/secrets.env', 'utf8')).toBe('')
    await ws.restore(before.id, { force: true })
    expect(ws.fs.readFileSync('/secrets.env', 'utf8')).toBe('')
    // The disk holds what was flushed, which never had the key.
    expect(fs.readFileSync(path.join(project, 'secrets.env'), 'utf8')).toBe('API_KEY=\n')
    await ws.close()
  })
})

describe('conflict bases across a reopen', () => {
  it('a path read in an earlier run and changed on disk since is still a conflict after reopening from the store', async () => {
    const storeDir = path.join(tmp, 'store')
    const open = () => Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    let ws = await open()
    expect(ws.fs.readFileSync('/app/config.json', 'utf8')).toBe(ORIGINAL['/app/config.json'])
    ws.fs.writeFileSync('/app/config.json', '{ "port": 1 }\n')
    await ws.close()
    fs.writeFileSync(path.join(project, 'app/config.json'), '{ "theirs": true }\n')
    ws = await open()
    await expect(ws.flush()).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [{ path: '/app/config.json' }] })
    expect(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8')).toBe('{ "theirs": true }\n')
    await ws.close()
  })

  it('refuses a store of another directory before replaying anything, even when that directory is empty', async () => {
    const storeDir = path.join(tmp, 'store')
    const ws = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    ws.fs.writeFileSync('/app/new.txt', 'x')
    ws.fs.rmSync('/app/old', { recursive: true })
    await ws.close()
    const empty = path.join(tmp, 'empty')
    fs.mkdirSync(empty)
    await expect(Workspace.open({ lower: directory(empty), store: directoryStore(storeDir) })).rejects.toMatchObject({ code: 'ELOWERMISMATCH' })
  })

  it('a read-only store gives a frozen workspace: reads work, writes fail with EROFS', async () => {
    const storeDir = path.join(tmp, 'store')
    const writer = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    writer.fs.writeFileSync('/app/new.txt', 'x')
    await writer.sync()
    const reader = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir, { readOnly: true }) })
    expect(reader.fs.readFileSync('/app/new.txt', 'utf8')).toBe('x')
    expect(() => reader.fs.writeFileSync('/app/other.txt', 'y')).toThrow(expect.objectContaining({ code: 'EROFS' }))
    await reader.close()
    await writer.close()
  })

  it('a read-only workspace that reads project files it never saw keeps working: sync, a dry-run flush, close (the sightings wait for a writer)', async () => {
    const storeDir = path.join(tmp, 'store')
    const writer = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir) })
    writer.fs.writeFileSync('/app/new.txt', 'x')
    await writer.close()
    const journal = () => fs.readdirSync(path.join(storeDir, 'packs')).map((name) => fs.statSync(path.join(storeDir, 'packs', name)).size)
    const before = journal()
    // `rewindfs flush --dry-run` after a command renamed a directory: the plan reads what the workspace never had.
    const reader = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir, { readOnly: true }), compactEvery: Number.POSITIVE_INFINITY })
    expect(reader.fs.readFileSync('/app/config.json', 'utf8')).toBe('{ "port": 8080 }\n')
    expect(reader.fs.readdirSync('/app').sort()).toEqual(['config.json', 'new.txt', 'old', 'server.js'])
    await reader.sync()
    const plan = await reader.flush(undefined, { dryRun: true })
    expect(plan.changes.map((c) => c.path)).toEqual(['/app/new.txt'])
    expect(reader.status.degraded).toBeUndefined()
    await reader.close()
    expect(journal()).toEqual(before)
  })
})

describe('a flush that died', () => {
  for (const stop of ['staged', 'committed'] as const) {
    it(`before the target's commit point or after it (${stop}): the next run ends with the workspace on disk`, async () => {
      const storeDir = path.join(tmp, 'store')
      const lower = directory(project)
      let ws = await Workspace.open({ lower, store: directoryStore(storeDir) })
      ws.fs.writeFileSync('/app/config.json', '{ "port": 7 }\n')
      ws.fs.rmSync('/README.md')
      // The process dies inside the apply: it stops where a crash would and never returns to the workspace.
      const crashing = Object.create(lower) as typeof lower
      crashing.apply = async (entries) => {
        lower.stopAfter = stop
        await lower.apply(entries)
        throw new Error('killed')
      }
      await expect(ws.flush(crashing)).rejects.toThrow('killed')
      await ws.close()
      // A dry run beside it (rewindfs flush --dry-run: the store read-only) reports what a flush would write, saving nothing.
      const reader = await Workspace.open({ lower: directory(project), store: directoryStore(storeDir, { readOnly: true }) })
      const dry = await reader.flush(undefined, { dryRun: true })
      expect(dry.conflicts).toEqual([])
      expect(dry.changes.map((c) => c.path).sort()).toEqual(stop === 'committed' ? [] : ['/README.md', '/app/config.json'])
      await reader.close()
      // A new process: the directory recovers on open (rolls a committed manifest forward).
      const again = directory(project)
      ws = await Workspace.open({ lower: again, store: directoryStore(storeDir) })
      await ws.flush()
      expect(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8')).toBe('{ "port": 7 }\n')
      expect(fs.existsSync(path.join(project, 'README.md'))).toBe(false)
      expect(ws.changes()).toEqual([])
      await ws.close()
    })
  }
})

/** Why a file cannot be made immutable here (chattr +i needs root and a filesystem that keeps the flag), or undefined. */
function immutableProblem(): string | undefined {
  const probe = path.join(os.tmpdir(), `rewindfs-immutable-${process.pid}`)
  fs.writeFileSync(probe, '')
  try {
    execFileSync('chattr', ['+i', probe], { stdio: 'pipe' })
    execFileSync('chattr', ['-i', probe], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return `chattr +i failed: ${(error as Error).message.split('\n')[0]}`
  } finally {
    fs.rmSync(probe, { force: true })
  }
}

describe.runIf(capability('immutable', immutableProblem()))('a flush whose step keeps failing past its commit point', () => {
  it('says the directory holds part of it and what to do; the open after the cause is gone finishes it', async () => {
    const locked = path.join(project, 'app/server.js')
    // Made immutable before the workspace reads it (the flag moves its ctime: made later, a conflict).
    execFileSync('chattr', ['+i', locked])
    const ws = await Workspace.open({ lower: directory(project) })
    ws.fs.writeFileSync('/app/config.json', '{ "port": 7 }\n')
    ws.fs.writeFileSync('/app/server.js', 'listen(7)\n')
    // The flush's temps wait beside the files they replace until renamed.
    const staged = () => fs.readdirSync(path.join(project, 'app')).filter((name) => name.startsWith('.rewindfs'))
    try {
      // The first rename lands, the second is refused by the kernel: no later open can finish the flush either.
      const failure = { code: 'EPERM', syscall: 'rename', message: expect.stringContaining("stopped at '/app/server.js', 1 of 2 paths written") }
      // The flush names workspace paths; the open below, given the host path, names host paths.
      await expect(ws.flush()).rejects.toMatchObject({ ...failure, dest: '/app/server.js' })
      expect(fs.readFileSync(path.join(project, 'app/config.json'), 'utf8')).toBe('{ "port": 7 }\n')
      expect(staged()).toHaveLength(1)
      expect(() => directory(project)).toThrow(expect.objectContaining({ ...failure, dest: locked, message: expect.stringContaining('the next open of the directory or flush finishes it') }))
    } finally {
      execFileSync('chattr', ['-i', locked])
    }
    await ws.close()
    directory(project)
    expect(fs.readFileSync(locked, 'utf8')).toBe('listen(7)\n')
    expect(staged()).toEqual([])
  })
})
