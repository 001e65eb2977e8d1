/**
 * What a flush into a real directory rejects with when the disk refuses a step: Node's shape (code,
 * errno, syscall) with workspace paths, never where the project lies on the host (an agent sees
 * these errors). The steps are made to fail for real: a directory the flush may not write into
 * (immutable as root, read-only as the unprivileged exec test user), a directory that became a
 * file while the flush staged, a file where the staging folder must be; and a step after the
 * commit point. Before the commit point the project is left as it was (the oracle: its files).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { EXEC_USER, userProblem } from './support/exec-user-run.js'
import { capability } from './support/require.js'

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-flush-errors-`))
/** Immutable directories to clear before the scratch directory can go. */
const immutable = new Set<string>()
afterAll(() => {
  for (const dir of immutable) spawnSync('chattr', ['-i', dir])
  fs.rmSync(scratch, { recursive: true, force: true })
})

const isRoot = process.getuid?.() === 0
/** As root nothing is read-only by its mode: the immutable attribute (ext4, xfs, btrfs) refuses root too. */
const immutableProblem = (() => {
  if (!isRoot) return undefined
  const probe = fs.mkdtempSync(`${scratch}/probe-`)
  const result = spawnSync('chattr', ['+i', probe])
  spawnSync('chattr', ['-i', probe])
  return result.status === 0 ? undefined : `chattr +i failed here (${String(result.stderr ?? result.error).trim()})`
})()
const readOnlyHere = capability('chattr', immutableProblem)

let serial = 0
function project(): string {
  const root = `${scratch}/project${serial++}`
  for (const [path, content] of Object.entries({ '/src/a.ts': 'a\n', '/src/b.ts': 'b\n', '/docs/readme.md': 'r\n', '/z.txt': 'z\n' })) {
    fs.mkdirSync(root + path.slice(0, path.lastIndexOf('/')), { recursive: true })
    fs.writeFileSync(root + path, content)
  }
  return root
}

/** Everything under `root` but the flush's reserved names: files by content, directories as '/'. */
function tree(root: string, at = ''): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of fs.readdirSync(root + at).sort()) {
    if (name.startsWith('.rewindfs-flush')) continue
    const path = `${at}/${name}`
    const stats = fs.lstatSync(root + path)
    if (stats.isDirectory()) Object.assign(out, { [path]: '/' }, tree(root, path))
    else out[path] = fs.readFileSync(root + path, 'utf8')
  }
  return out
}

/** Makes a directory refuse new entries: immutable as root, mode 0555 otherwise. */
function readOnly(dir: string): void {
  if (isRoot) {
    execFileSync('chattr', ['+i', dir])
    immutable.add(dir)
  } else fs.chmodSync(dir, 0o555)
}

function writable(dir: string): void {
  if (isRoot) {
    execFileSync('chattr', ['-i', dir])
    immutable.delete(dir)
  } else fs.chmodSync(dir, 0o755)
}

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<NodeJS.ErrnoException & { dest?: string }> {
  try {
    await promise
  } catch (error) {
    return error as NodeJS.ErrnoException & { dest?: string }
  }
  throw new Error('the flush did not reject')
}

/** No host path in what the error (and every cause it carries) names: message, path, dest. */
function namesNoHostPath(error: unknown): void {
  for (let at = error as { message?: unknown; path?: unknown; dest?: unknown; cause?: unknown } | undefined, depth = 0; at !== undefined && depth < 5; at = at.cause as typeof at, depth++) {
    expect(JSON.stringify({ message: at.message, path: at.path, dest: at.dest })).not.toContain(scratch)
  }
}

describe('flush errors into a real directory name workspace paths', () => {
  it.skipIf(!readOnlyHere)(`a directory the flush may not write into (${isRoot ? 'immutable, as root' : 'mode 0555'}): refused before the commit point, nothing changed`, async () => {
    const root = project()
    const before = tree(root)
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    ws.fs.writeFileSync('/src/new.ts', 'new\n')
    ws.fs.writeFileSync('/z.txt', 'changed\n')
    readOnly(`${root}/src`)
    const error = await rejection(ws.flush(directory(root)))
    writable(`${root}/src`)
    expect(error).toMatchObject({ code: isRoot ? 'EPERM' : 'EACCES', syscall: 'open', path: expect.stringMatching(/^\/src\/\.rewindfs-flush\./) })
    expect(typeof error.errno).toBe('number')
    namesNoHostPath(error)
    expect(tree(root)).toEqual(before)
    // Once the directory takes writes again, the same flush goes through.
    await ws.flush(directory(root))
    expect(tree(root)).toMatchObject({ '/src/new.ts': 'new\n', '/z.txt': 'changed\n' })
    await ws.close()
  })

  it('a directory made a file while the flush staged its temps: ENOTDIR before the commit point, nothing else changed', async () => {
    const root = project()
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    ws.fs.writeFileSync('/docs/new.md', 'n\n')
    ws.fs.writeFileSync('/src/new.ts', 'new\n')
    let swapped = false
    const error = await rejection(
      ws.flush(directory(root), {
        onProgress: () => {
          if (swapped) return
          swapped = true
          // Someone else's hand on disk, after the first temp is written: src becomes a file.
          fs.rmSync(`${root}/src`, { recursive: true })
          fs.writeFileSync(`${root}/src`, 'a file now\n')
        },
      }),
    )
    expect(swapped).toBe(true)
    expect(error).toMatchObject({ code: 'ENOTDIR', path: expect.stringMatching(/^\/src\/\.rewindfs-flush\./) })
    namesNoHostPath(error)
    expect(tree(root)).toEqual({ '/docs': '/', '/docs/readme.md': 'r\n', '/src': 'a file now\n', '/z.txt': 'z\n' })
    await ws.close()
  })

  it.skipIf(!readOnlyHere)('a flush refused before the commit point whose rollback is refused too: the flush\'s own error, the rollback\'s as rollbackError, and the next open takes the temps back', async () => {
    const root = project()
    const before = tree(root)
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    ws.fs.writeFileSync('/docs/new.md', 'n\n')
    ws.fs.writeFileSync('/src/new.ts', 'new\n')
    let swapped = false
    const error = await rejection(
      ws.flush(directory(root), {
        onProgress: () => {
          if (swapped) return
          swapped = true
          // After /docs's temp is written: src becomes a file (the flush fails staging there), and
          // docs takes no more changes (its temp cannot be removed).
          fs.rmSync(`${root}/src`, { recursive: true })
          fs.writeFileSync(`${root}/src`, 'a file now\n')
          readOnly(`${root}/docs`)
        },
      }),
    )
    const temps = fs.readdirSync(`${root}/docs`).filter((name) => name.startsWith('.rewindfs-flush.'))
    writable(`${root}/docs`)
    expect(swapped).toBe(true)
    expect(error).toMatchObject({ code: 'ENOTDIR', path: expect.stringMatching(/^\/src\/\.rewindfs-flush\./) })
    const rollback = (error as { rollbackError?: NodeJS.ErrnoException }).rollbackError
    expect(rollback).toMatchObject({ code: isRoot ? 'EPERM' : 'EACCES', syscall: 'unlink', path: expect.stringMatching(/^\/docs\/\.rewindfs-flush\./) })
    expect(typeof rollback?.errno).toBe('number')
    namesNoHostPath(error)
    namesNoHostPath(rollback)
    // The rollback stopped with the temp still there; the staged manifest tells the next open.
    expect(temps).toHaveLength(1)
    await ws.close()
    const again = await Workspace.open({ lower: directory(root) })
    expect(fs.readdirSync(`${root}/docs`).filter((name) => name.startsWith('.rewindfs-flush.'))).toEqual([])
    expect(tree(root)).toEqual({ ...Object.fromEntries(Object.entries(before).filter(([path]) => !path.startsWith('/src'))), '/src': 'a file now\n' })
    await again.close()
  })

  it('a file where the staging folder must be: EEXIST naming the workspace path', async () => {
    const root = project()
    // Opened before the file is there (an open over it refuses at once, with the path it was given).
    const target = directory(root)
    const ws = await Workspace.open({ lower: target, autoCheckpoint: false })
    ws.fs.writeFileSync('/z.txt', 'changed\n')
    fs.writeFileSync(`${root}/.rewindfs-flush`, 'not a folder\n')
    const error = await rejection(ws.flush(target))
    expect(error).toMatchObject({ code: 'EEXIST', path: '/.rewindfs-flush' })
    namesNoHostPath(error)
    expect(fs.readFileSync(`${root}/z.txt`, 'utf8')).toBe('z\n')
    fs.rmSync(`${root}/.rewindfs-flush`)
    await ws.close()
  })

  it.skipIf(!readOnlyHere)('a step refused after the commit point: the cause with workspace paths, and the next open finishes the flush', async () => {
    const root = project()
    const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
    ws.fs.rmSync('/docs/readme.md')
    ws.fs.writeFileSync('/src/new.ts', 'new\n')
    const error = await rejection(
      ws.flush(directory(root), {
        onProgress: ({ path }) => {
          // A delete is reported once it is done, past the commit point (the steps go in path order,
          // /docs before /src): then src refuses the rename of the staged file into place.
          if (path === '/docs/readme.md' && !immutable.has(`${root}/src`)) readOnly(`${root}/src`)
        },
      }),
    )
    writable(`${root}/src`)
    expect(error).toMatchObject({ code: isRoot ? 'EPERM' : 'EACCES', syscall: 'rename', path: expect.stringMatching(/^\/src\/\.rewindfs-flush\./), dest: '/src/new.ts' })
    expect(error.message).toMatch(/stopped at '\/src\/new\.ts'/)
    namesNoHostPath(error)
    await ws.close()
    // The next open finishes what the flush committed.
    const again = await Workspace.open({ lower: directory(root) })
    expect(tree(root)).toEqual({ '/docs': '/', '/src': '/', '/src/a.ts': 'a\n', '/src/b.ts': 'b\n', '/src/new.ts': 'new\n', '/z.txt': 'z\n' })
    await again.close()
  })
})

/** A flush into a directory the unprivileged user may not write: run as that user, its error as JSON. */
const SCRIPT = `
const { directory } = await import('./adapters/node-fs/index.ts')
const { Workspace } = await import('./src/index.ts')
const root = process.argv[1]
const ws = await Workspace.open({ lower: directory(root), autoCheckpoint: false })
ws.fs.writeFileSync('/src/new.ts', 'new\\n')
try {
  await ws.flush(directory(root))
  console.log(JSON.stringify({ flushed: true }))
} catch (error) {
  console.log(JSON.stringify({ code: error.code, errno: error.errno, syscall: error.syscall, path: error.path, dest: error.dest, message: error.message, cause: error.cause?.message }))
}
await ws.close()
`

const asUser = isRoot ? capability('exec-user', userProblem()) : false

describe.skipIf(!asUser)(`as the unprivileged user ${EXEC_USER}`, () => {
  it('a read-only directory: EACCES before the commit point, naming workspace paths', () => {
    const root = project()
    fs.chmodSync(scratch, 0o755)
    execFileSync('chown', ['-R', EXEC_USER, root])
    fs.chmodSync(`${root}/src`, 0o555)
    const before = tree(root)
    const result = spawnSync('runuser', ['-u', EXEC_USER, '--', process.execPath, '--import', 'tsx', '--input-type=module', '-e', SCRIPT, root], {
      cwd: new URL('..', import.meta.url).pathname,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', TMPDIR: os.tmpdir() },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(result.stderr).toBe('')
    const error = JSON.parse(result.stdout) as Record<string, unknown>
    expect(error).toMatchObject({ code: 'EACCES', errno: -13, syscall: 'open', path: expect.stringMatching(/^\/src\/\.rewindfs-flush\./) })
    expect(JSON.stringify(error)).not.toContain(scratch)
    expect(tree(root)).toEqual(before)
  }, 60_000)
})
