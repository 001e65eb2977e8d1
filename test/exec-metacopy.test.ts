/**
 * Overlay mode with metadata-only copy-up (metacopy=on, root): a chmod, chown or `touch -c` over
 * project files used to copy every file's content up and have the read-back read and compare it
 * (a `chmod -R` over 22k files ran 20-60x slower than on disk). Now the upper file holds only the
 * new metadata and a hole, so the read-back must take its content from the view, never from the
 * upper directory. Each scenario runs the same commands on a copy of the project on disk (the
 * oracle) and compares modes, owners, times and content through ws.fs, the next command's view,
 * undo and flush. The read-back's counter (content bytes read) proves that a metadata-only command
 * reads none.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { readbackCounters } from '../adapters/node-fs/exec-readback.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { type ExecResult, Workspace } from '../src/index.js'
import { project, tree } from './support/exec-scenarios.js'
import { capability } from './support/require.js'

const host = await support()
const here = capability('exec-overlay', host.overlay)
// Metadata-only copy-up is root's (the kernel refuses it with userxattr): as root it must be there.
const metacopy = here && (process.getuid?.() === 0 ? capability('exec-overlay', host.metacopy) : (console.log(`[rewindfs] skipping the metacopy work counts: not root (${host.metacopy})`), false))

const sha = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex')

const BIG = 'b'.repeat(200 * 1024) // held files start at 64 KiB: a metacopy one must never be held

const FILES: Record<string, string> = {
  '/a.txt': 'alpha\n',
  '/b.txt': 'beta\n',
  '/run.sh': 'echo run\n',
  '/src/main.c': 'int main;\n',
  '/src/lib/util.c': 'util\n',
  '/docs/readme.md': '# readme\n',
  '/big.bin': BIG,
}

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true })
})

/** The project and a copy of it on disk (`cp -a`: modes, owners and times kept), where the commands also run. */
function projectAndOracle(): { root: string; oracle: string } {
  const root = project(FILES)
  fs.chmodSync(`${root}/run.sh`, 0o755)
  // Fixed times, so a command that keeps them can be told from one that does not.
  for (const path of Object.keys(FILES)) fs.utimesSync(root + path, 1_500_000_000, 1_500_000_000)
  const oracle = `${root}-oracle`
  execFileSync('cp', ['-a', root, oracle])
  roots.push(root, oracle)
  return { root, oracle }
}

/** Runs a command on the oracle copy, as ws.exec runs it. */
function onDisk(oracle: string, command: string): string {
  return execFileSync('/bin/sh', ['-c', command], { cwd: oracle, encoding: 'utf8' })
}

/** A command in overlay mode, with the content bytes its read-back read. */
async function exec(ws: Workspace, command: string): Promise<ExecResult & { bytesRead: number; contentsTaken: number }> {
  const { bytesRead, contentsTaken } = readbackCounters
  const result = await ws.exec(command, { mode: 'overlay' })
  expect(result.exitCode, result.stderr).toBe(0)
  return Object.assign(result, { bytesRead: readbackCounters.bytesRead - bytesRead, contentsTaken: readbackCounters.contentsTaken - contentsTaken })
}

interface Seen {
  readonly mode: string
  readonly owner: string
  readonly mtimeMs?: number
  readonly content?: string
}

/** Every entry's mode, owner, content (files) and mtime (files, unless `times` is false). */
function snapshot(read: { readdir: (dir: string) => string[]; lstat: (path: string) => fs.Stats; read: (path: string) => Buffer }, times = true): Record<string, Seen> {
  const out: Record<string, Seen> = {}
  const walk = (dir: string) => {
    for (const name of read.readdir(dir).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stats = read.lstat(path)
      const seen = { mode: (stats.mode & 0o7777).toString(8), owner: `${stats.uid}:${stats.gid}` }
      if (stats.isDirectory()) {
        out[`${path}/`] = seen
        walk(path)
      } else {
        const bytes = read.read(path)
        out[path] = { ...seen, content: bytes.byteLength > 1024 ? `sha256 ${sha(bytes)}` : bytes.toString('utf8'), ...(times ? { mtimeMs: Math.floor(stats.mtimeMs) } : {}) }
      }
    }
  }
  walk('/')
  return out
}

const ofWorkspace = (ws: Workspace, times = true) =>
  snapshot({ readdir: (dir) => ws.fs.readdirSync(dir) as string[], lstat: (path) => ws.fs.lstatSync(path) as fs.Stats, read: (path) => ws.fs.readFileSync(path) as Buffer }, times)
const ofDisk = (root: string, times = true) =>
  snapshot({ readdir: (dir) => fs.readdirSync(root + dir), lstat: (path) => fs.lstatSync(root + path), read: (path) => fs.readFileSync(root + path) }, times)

/** What a command sees: every file's mode and content hash (run in the workspace and on disk alike). */
const LOOK = "find . -type f | LC_ALL=C sort | while read -r f; do printf '%s %s ' \"$f\" \"$(stat -c %a \"$f\")\"; sha256sum < \"$f\"; done"

describe.runIf(here)('exec: metadata-only changes in overlay mode (metacopy=on as root)', () => {
  it('reads chmod -R, chown and touch -c back as metadata: content, modes, owners and times as on disk', async () => {
    const { root, oracle } = projectAndOracle()
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const command = "chmod -R u+w,g-w,o-w . && chmod 640 a.txt && chmod 700 run.sh && touch -c -d '2001-02-03 04:05:06' b.txt src/main.c" + (process.getuid?.() === 0 ? ' && chown 1234:5678 docs/readme.md big.bin' : '')
      const ran = await exec(ws, command)
      onDisk(oracle, command)
      expect(ran.mode).toBe('overlay')
      expect(ofWorkspace(ws)).toEqual(ofDisk(oracle))
      expect(ran.changes.added).toEqual([])
      expect(ran.changes.deleted).toEqual([])
      expect(ran.changes.modified).toEqual(expect.arrayContaining(['/a.txt', '/b.txt', '/run.sh', '/src/main.c']))
      if (metacopy) {
        // The read-back read no content and gave the workspace none to store.
        expect(ran).toMatchObject({ bytesRead: 0, contentsTaken: 0 })
        // Chosen by itself, overlay mode says it copies metadata only.
        expect((await ws.exec('true')).modeReason).toMatch(/^kernel overlayfs over the lower directory \(as root, in a mount namespace; metacopy=on\)$/)
      }
      // The next command sees the modes and content (the exec layer was written from the workspace, no hole of a metacopy file).
      const look = await exec(ws, LOOK)
      expect(look.stdout).toBe(onDisk(oracle, LOOK))
      expect(look.changes).toEqual({ added: [], modified: [], deleted: [] })
    } finally {
      await ws.close()
    }
  })

  it('a no-op chmod -R over the project records nothing and reads no content', async () => {
    const { root } = projectAndOracle()
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const ran = await exec(ws, 'chmod -R u+r .')
      expect(ran.changes).toEqual({ added: [], modified: [], deleted: [] })
      if (metacopy) expect(ran).toMatchObject({ bytesRead: 0, contentsTaken: 0 })
      expect(ofWorkspace(ws)).toEqual(ofDisk(root))
    } finally {
      await ws.close()
    }
  })

  it('a write after a chmod, in the same command and in a later one, reads back as a content change', async () => {
    const { root, oracle } = projectAndOracle()
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const first = 'chmod 600 a.txt && echo more >> a.txt && chmod 640 b.txt src/main.c big.bin'
      const ran = await exec(ws, first)
      onDisk(oracle, first)
      expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('alpha\nmore\n')
      // a.txt's content is taken, nothing else's is.
      if (metacopy) expect(ran).toMatchObject({ bytesRead: Buffer.byteLength('alpha\nmore\n'), contentsTaken: 1 })
      const later = 'echo rewritten > b.txt && printf x >> src/main.c && printf y >> big.bin'
      const next = await exec(ws, later)
      onDisk(oracle, later)
      expect(next.changes.modified).toEqual(['/b.txt', '/big.bin', '/src/main.c'])
      expect(ofWorkspace(ws, false)).toEqual(ofDisk(oracle, false))
      expect(ws.fs.readFileSync('/big.bin', 'utf8')).toBe(BIG + 'y')
      const look = await exec(ws, LOOK)
      expect(look.stdout).toBe(onDisk(oracle, LOOK))
    } finally {
      await ws.close()
    }
  })

  it('a chmod of files the workspace already changed (in the exec layer) keeps their content', async () => {
    const { root, oracle } = projectAndOracle()
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      // The same changes made to the workspace (ws.fs) and to the oracle (on disk).
      ws.fs.writeFileSync('/a.txt', 'changed by the workspace\n')
      fs.writeFileSync(`${oracle}/a.txt`, 'changed by the workspace\n')
      const made = 'echo made > made.txt && head -c 100000 /dev/zero | tr "\\0" m > made.bin'
      await exec(ws, made)
      onDisk(oracle, made)
      const command = 'chmod 604 a.txt made.txt made.bin && chmod 700 src/lib/util.c'
      const ran = await exec(ws, command)
      onDisk(oracle, command)
      expect(ran.changes.modified).toEqual(['/a.txt', '/made.bin', '/made.txt', '/src/lib/util.c'])
      if (metacopy) expect(ran).toMatchObject({ bytesRead: 0, contentsTaken: 0 })
      expect(ofWorkspace(ws, false)).toEqual(ofDisk(oracle, false))
      expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('changed by the workspace\n')
      const look = await exec(ws, LOOK)
      expect(look.stdout).toBe(onDisk(oracle, LOOK))
    } finally {
      await ws.close()
    }
  })

  it('a renamed file (a metacopy with a redirect) has its content, also after a chmod', async () => {
    const { root, oracle } = projectAndOracle()
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      ws.fs.writeFileSync('/docs/readme.md', '# changed\n')
      fs.writeFileSync(`${oracle}/docs/readme.md`, '# changed\n')
      const command = 'chmod 600 src/main.c && mv src/main.c main.c && mv b.txt b2.txt && mkdir new && mv docs/readme.md new/ && mv big.bin src/lib/big.bin && mv src/lib/util.c src/lib/util2.c'
      const ran = await exec(ws, command)
      onDisk(oracle, command)
      expect(ran.changes).toEqual({
        added: ['/b2.txt', '/main.c', '/new', '/new/readme.md', '/src/lib/big.bin', '/src/lib/util2.c'],
        modified: [],
        deleted: ['/b.txt', '/big.bin', '/docs/readme.md', '/src/lib/util.c', '/src/main.c'],
      })
      expect(ofWorkspace(ws, false)).toEqual(ofDisk(oracle, false))
      const look = await exec(ws, LOOK)
      expect(look.stdout).toBe(onDisk(oracle, LOOK))
    } finally {
      await ws.close()
    }
  })

  it('hard links (the project\'s and new ones) and a truncate after metadata-only copy-ups', async () => {
    const { root: dir, oracle } = projectAndOracle()
    for (const at of [dir, oracle]) {
      fs.writeFileSync(`${at}/h1`, 'linked\n')
      fs.linkSync(`${at}/h1`, `${at}/h2`)
    }
    const ws = await Workspace.open({ lower: directory(dir) })
    try {
      // `ln` of a metacopy file leaves both names a metacopy whose redirect names the lower file.
      // The project's own links change together only as root (index=on; a user namespace has no
      // index, and the command sees the name it changed apart, as the README says).
      const root = process.getuid?.() === 0
      const command = (root ? 'chmod 600 h1 && ' : '') + 'chmod 640 a.txt && ln a.txt link.txt && ln src/main.c main-link.c && truncate -s 2 b.txt'
      const ran = await exec(ws, command)
      onDisk(oracle, command)
      expect(ran.changes.added).toEqual(['/link.txt', '/main-link.c'])
      expect(ofWorkspace(ws, false)).toEqual(ofDisk(oracle, false))
      if (root) expect(ws.fs.statSync('/h2').ino).toBe(ws.fs.statSync('/h1').ino)
      expect(ws.fs.statSync('/link.txt').ino).toBe(ws.fs.statSync('/a.txt').ino)
      const look = await exec(ws, LOOK)
      expect(look.stdout).toBe(onDisk(oracle, LOOK))
    } finally {
      await ws.close()
    }
  })

  it('undo puts the modes back, and a flush writes the modes and content the commands left', async () => {
    const { root, oracle } = projectAndOracle()
    const original = tree(root)
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const chmod = await exec(ws, 'chmod -R go-rwx .')
      if (metacopy) expect(chmod).toMatchObject({ bytesRead: 0, contentsTaken: 0 })
      expect(ws.fs.statSync('/a.txt').mode & 0o7777).toBe(0o600)
      await ws.undo()
      expect(ofWorkspace(ws)).toEqual(ofDisk(root))
      const commands = ['chmod -R go-w,o-r . && chmod 751 run.sh', 'echo appended >> b.txt && chmod 600 b.txt a.txt', "touch -c -d '2001-02-03 04:05:06' src/main.c"]
      for (const command of commands) {
        await exec(ws, command)
        onDisk(oracle, command)
      }
      expect(tree(root)).toEqual(original) // nothing on disk changed before the flush
      expect((await ws.flush()).applied).toBe(true)
      // The flush's own staging folder aside (it stays, empty, for the next flush).
      const flushed = Object.fromEntries(Object.entries(tree(root)).filter(([path]) => !path.startsWith('/.rewindfs-flush')))
      expect(flushed).toEqual(tree(oracle))
      expect(fs.statSync(`${root}/src/main.c`).mtimeMs).toBe(fs.statSync(`${oracle}/src/main.c`).mtimeMs)
    } finally {
      await ws.close()
    }
  })
})
