/**
 * Overlay mode's scenarios with real commands, written once and run twice: in the test process
 * (as root in CI) and, through test/support/exec-user.ts, as an unprivileged user (a user
 * namespace with overlayfs's userxattr). Each returns what it observed as JSON; the test asserts.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import { directory, directoryStore } from '../../adapters/node-fs/index.js'
import { Workspace } from '../../src/index.js'
import type { ExecOptions, ExecResult } from '../../src/index.js'

export type Observation = { [key: string]: unknown }

/** A fresh directory of this user's (under os.tmpdir()), with files. */
export function project(files: Record<string, string> = {}): string {
  const root = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-scenario-`)
  for (const [path, content] of Object.entries(files)) {
    fs.mkdirSync(`${root}${path.slice(0, path.lastIndexOf('/'))}`, { recursive: true })
    fs.writeFileSync(root + path, content)
  }
  return root
}

/** Everything under a host directory: type, mode, content or target. */
export function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const host = `${dir}/${name}`
      const stats = fs.lstatSync(host)
      const mode = (stats.mode & 0o7777).toString(8)
      if (stats.isDirectory()) {
        out[`${prefix}/${name}/`] = mode
        walk(host, `${prefix}/${name}`)
      } else if (stats.isSymbolicLink()) out[`${prefix}/${name}`] = '-> ' + fs.readlinkSync(host)
      else out[`${prefix}/${name}`] = `${mode} ${fs.readFileSync(host, 'utf8')}`
    }
  }
  walk(root, '')
  return out
}

/** The workspace's view in the same form (`skip`: subtrees left out, e.g. a .git directory). */
export function view(ws: Workspace, skip: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of ws.fs.readdirSync(dir).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      if (skip.includes(path)) continue
      const stats = ws.fs.lstatSync(path)
      const mode = (stats.mode & 0o7777).toString(8)
      if (stats.isDirectory()) {
        out[`${path}/`] = mode
        walk(path)
      } else if (stats.isSymbolicLink()) out[path] = '-> ' + ws.fs.readlinkSync(path)
      else out[path] = `${mode} ${ws.fs.readFileSync(path, 'utf8')}`
    }
  }
  walk('/')
  return out
}

/** This process's children that are exec's namespace helper (by its argv[0]), still running. */
function childHelpers(): number[] {
  const out: number[] = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      // The fields after the command's name: state, then the parent's pid.
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8')
      const [, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(parent) === process.pid && fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('rewindfs-exec')) out.push(Number(name))
    } catch {
      // Gone meanwhile.
    }
  }
  return out
}

const overlay: ExecOptions = { mode: 'overlay' }
const brief = (result: ExecResult) => ({ exitCode: result.exitCode, mode: result.mode, stdout: result.stdout, stderr: result.stderr, changes: result.changes })

async function withWorkspace<T>(files: Record<string, string>, body: (ws: Workspace, root: string) => Promise<T>): Promise<T> {
  const root = project(files)
  const ws = await Workspace.open({ lower: directory(root) })
  try {
    return await body(ws, root)
  } finally {
    await ws.close()
    fs.rmSync(root, { recursive: true, force: true })
  }
}

export const scenarios = {
  /** git init, add and commit inside the workspace: the repository lands in the workspace, not on disk. */
  async git(): Promise<Observation> {
    return withWorkspace({ '/README.md': 'hello\n', '/src/main.c': 'int main;\n' }, async (ws, root) => {
      const identity = '-c user.email=agent@example.com -c user.name=agent -c init.defaultBranch=main'
      const result = await ws.exec(`git ${identity} init -q && git add -A && git ${identity} commit -qm first && echo more >> README.md && git ${identity} commit -qam second && git log --format=%s`, overlay)
      const status = await ws.exec('git status --porcelain', overlay)
      return {
        ...brief(result),
        status: status.stdout,
        head: ws.fs.readFileSync('/.git/HEAD', 'utf8'),
        objects: ws.fs.readdirSync('/.git/objects').length > 2,
        disk: tree(root),
      }
    })
  },

  /** npm pack: a tarball of the package made inside the workspace. */
  async npmPack(): Promise<Observation> {
    return withWorkspace({ '/package.json': JSON.stringify({ name: 'demo-pack', version: '1.2.3', files: ['index.js'] }), '/index.js': 'module.exports = 1\n' }, async (ws, root) => {
      const result = await ws.exec('npm pack --silent --offline 2>/dev/null', { ...overlay, timeout: 60_000 })
      return { exitCode: result.exitCode, stdout: result.stdout, added: result.changes.added, size: ws.fs.statSync('/demo-pack-1.2.3.tgz').size > 0, disk: Object.keys(tree(root)) }
    })
  },

  /** tar x of an archive on disk, sed -i of lower files, chmod +x. */
  async tarSedChmod(): Promise<Observation> {
    const source = project({ '/pkg/a.txt': 'alpha\n', '/pkg/sub/b.txt': 'beta\n' })
    execFileSync('tar', ['-cf', `${source}/pkg.tar`, '-C', source, 'pkg'])
    const archive = fs.readFileSync(`${source}/pkg.tar`)
    fs.rmSync(source, { recursive: true, force: true })
    return withWorkspace({ '/config.ini': 'mode=debug\nlevel=1\n', '/run.sh': 'echo run\n' }, async (ws, root) => {
      fs.writeFileSync(`${root}/pkg.tar`, archive)
      const result = await ws.exec("tar -xf pkg.tar && sed -i 's/debug/release/' config.ini && chmod +x run.sh && ./run.sh", overlay)
      return { ...brief(result), view: view(ws, ['/pkg.tar']), disk: tree(root)['/config.ini'] }
    })
  },

  /** mv of a lower directory, rm -rf of a lower tree then re-created, symlinks in and out. */
  async treeSurgery(): Promise<Observation> {
    return withWorkspace({ '/src/main.c': 'main\n', '/src/lib/util.c': 'util\n', '/docs/a.md': 'a\n', '/docs/b.md': 'b\n', '/keep.txt': 'k\n' }, async (ws, root) => {
      const outside = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-outside-`)
      fs.writeFileSync(`${outside}/shared.txt`, 'shared\n')
      const result = await ws.exec(
        [
          'mv src lib',
          'rm -rf docs',
          'mkdir docs',
          'echo new > docs/new.md',
          'ln -s lib/main.c in-link',
          `ln -s ${outside}/shared.txt out-link`,
          'ln -s "$PWD/keep.txt" abs-link',
          'cat in-link out-link abs-link',
        ].join(' && '),
        overlay,
      )
      const after = view(ws)
      // The next command sees the result, through the exec layer.
      const listing = await ws.exec('find . -mindepth 1 | sort', overlay)
      fs.rmSync(outside, { recursive: true, force: true })
      return { ...brief(result), view: after, listing: listing.stdout, outLinkTarget: ws.fs.readlinkSync('/out-link').startsWith(outside), disk: tree(root) }
    })
  },

  /** A daemon started with setsid dies when the command ends; a timeout kills everything. */
  async lifetime(): Promise<Observation> {
    return withWorkspace({ '/a': 'a' }, async (ws) => {
      const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-marks-`)
      try {
        const daemon = await ws.exec(`setsid sh -c 'sleep 0.6; echo alive > ${scratch}/daemon' > /dev/null 2>&1 & echo started`, overlay)
        const started = Date.now()
        const slow = await ws.exec(`echo early > early.txt; (sleep 0.6; echo alive > ${scratch}/child) & sleep 5`, { ...overlay, timeout: 300 })
        const elapsed = Date.now() - started
        await new Promise((resolve) => setTimeout(resolve, 1000))
        return { daemon: daemon.stdout, timedOut: slow.timedOut, signal: slow.signal, quick: elapsed < 4500, added: slow.changes.added, marks: fs.readdirSync(scratch) }
      } finally {
        fs.rmSync(scratch, { recursive: true, force: true })
      }
    })
  },

  /** host: 'read-only': writes outside the project fail with EROFS; the project, /tmp and the allow-list stay writable. */
  async readOnlyHost(): Promise<Observation> {
    return withWorkspace({ '/a': 'a' }, async (ws) => {
      // Outside the project and outside /tmp (which the sandbox replaces with a private one).
      const outside = fs.mkdtempSync(`${os.homedir()}/rewindfs-exec-host-`)
      const allowed = fs.mkdtempSync(`${os.homedir()}/rewindfs-exec-allowed-`)
      const result = await ws.exec(
        [
          `echo x > ${outside}/blocked.txt; echo "blocked: $?"`,
          'echo y > /tmp/rewindfs-private.txt && echo "tmp: ok"',
          `echo z > ${allowed}/cache.txt && echo "allowed: ok"`,
          'echo w > inside.txt && echo "project: ok"',
        ].join('; '),
        { ...overlay, sandbox: { host: 'read-only', writable: [allowed] } },
      )
      const observed = {
        stdout: result.stdout,
        erofs: result.stderr.includes('Read-only file system'),
        outside: fs.readdirSync(outside),
        allowed: fs.readdirSync(allowed),
        privateTmp: fs.existsSync('/tmp/rewindfs-private.txt'),
        added: result.changes.added,
      }
      fs.rmSync(outside, { recursive: true, force: true })
      fs.rmSync(allowed, { recursive: true, force: true })
      return observed
    })
  },

  /** network: false: a connect to a port listening on the host's 127.0.0.1 fails; with the network it works. */
  async noNetwork(): Promise<Observation> {
    const server = net.createServer((socket) => socket.end('hello\n'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as net.AddressInfo).port
    const probe = `node -e "const s=require('net').connect(${port},'127.0.0.1');s.on('data',d=>{process.stdout.write('connected '+d);process.exit(0)});s.on('error',e=>{console.log('failed '+e.code);process.exit(0)})"`
    try {
      return await withWorkspace({ '/a': 'a' }, async (ws) => {
        const open = await ws.exec(probe, overlay)
        const closed = await ws.exec(probe, { ...overlay, sandbox: { network: false } })
        // /proc/net is the process's own network namespace (/sys would show the host's).
        const loopback = await ws.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", { ...overlay, sandbox: { network: false } })
        return { open: open.stdout, closed: closed.stdout, loopback: loopback.stdout }
      })
    } finally {
      server.close()
    }
  },

  /**
   * The exec layer follows the workspace: renames, replaced directories and deletes made through
   * ws.fs, a flush and an undo after it (the view then shows pinned old content the disk no longer
   * has), the flush's staging folder. The command's listing must equal the view.
   */
  async layerFollowsWorkspace(): Promise<Observation> {
    return withWorkspace({ '/src/main.c': 'main\n', '/src/lib/util.c': 'util\n', '/docs/a.md': 'a\n', '/old.txt': 'old\n', '/keep.txt': 'k\n' }, async (ws, root) => {
      const listing = async () => (await ws.exec("find . -mindepth 1 -printf '%y %m %p %l\\n' | sort", overlay)).stdout
      const expected = () => {
        const lines: string[] = []
        for (const [path, value] of Object.entries(view(ws))) {
          const isDir = path.endsWith('/')
          const name = '.' + (isDir ? path.slice(0, -1) : path)
          if (isDir) lines.push(`d ${value} ${name} `)
          else if (value.startsWith('-> ')) lines.push(`l 777 ${name} ${value.slice(3)}`)
          else lines.push(`f ${value.slice(0, value.indexOf(' '))} ${name} `)
        }
        return lines.sort().join('\n') + '\n'
      }
      const steps: { listing: string; expected: string }[] = []
      const step = async () => steps.push({ listing: await listing(), expected: expected() })
      await step()
      ws.fs.renameSync('/src', '/lib')
      ws.fs.writeFileSync('/lib/added.c', 'added\n')
      ws.fs.rmSync('/docs', { recursive: true })
      ws.fs.mkdirSync('/docs')
      ws.fs.writeFileSync('/docs/b.md', 'b\n')
      ws.fs.rmSync('/old.txt')
      ws.fs.symlinkSync('keep.txt', '/link')
      ws.fs.chmodSync('/keep.txt', 0o600)
      await step()
      ws.fs.renameSync('/lib', '/src') // back where it was: merged with the project's again
      await step()
      ws.fs.writeFileSync('/keep.txt', 'changed\n')
      await ws.flush()
      const afterFlush = (await ws.exec('cat keep.txt; ls -A', overlay)).stdout
      await ws.undo() // the write to keep.txt: the view shows the old content, the disk the new
      const pinned = (await ws.exec('cat keep.txt', overlay)).stdout
      await step()
      await ws.reset()
      await step()
      return { steps, afterFlush, pinned, diskKeep: fs.readFileSync(`${root}/keep.txt`, 'utf8') }
    })
  },

  /**
   * O(1) work for exec #2 after touching 1 file in a 10k-file project, and after many earlier
   * changes: the layer is brought up to date with only what changed since the last exec.
   */
  async incremental(): Promise<Observation> {
    const root = project()
    for (let d = 0; d < 100; d++) {
      fs.mkdirSync(`${root}/d${d}`)
      for (let f = 0; f < 100; f++) fs.writeFileSync(`${root}/d${d}/f${f}.txt`, `${d}/${f}\n`)
    }
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const first = await ws.exec('echo one > d1/new.txt', overlay)
      ws.fs.writeFileSync('/d2/f2.txt', 'touched\n')
      const second = await ws.exec('cat d2/f2.txt d1/new.txt', overlay)
      for (let i = 0; i < 500; i++) ws.fs.writeFileSync(`/d${i % 100}/w${i}.txt`, 'many\n')
      const many = await ws.exec('true', overlay)
      ws.fs.writeFileSync('/d3/f3.txt', 'one more\n')
      const after = await ws.exec('cat d3/f3.txt', overlay)
      const idle = await ws.exec('true', overlay)
      return { first: first.work, second: { ...second.work, stdout: second.stdout }, many: many.work, after: { ...after.work, stdout: after.stdout }, idle: idle.work }
    } finally {
      await ws.close()
      fs.rmSync(root, { recursive: true, force: true })
    }
  },

  /**
   * Hard links both ways: names linked in the workspace are linked for the command, and links the
   * command makes (ln, cp -al, git clone --local's object store) come back as shared inodes.
   */
  async hardLinks(): Promise<Observation> {
    return withWorkspace({ '/lib/a.txt': 'a\n', '/lib/sub/b.txt': 'b\n' }, async (ws) => {
      ws.fs.writeFileSync('/f', 'f\n')
      ws.fs.linkSync('/f', '/g')
      const ino = (path: string) => ws.fs.statSync(path).ino
      const identity = '-c user.email=agent@example.com -c user.name=agent -c init.defaultBranch=main'
      const result = await ws.exec(
        [
          'stat -c %h f g',
          '[ "$(stat -c %i f)" = "$(stat -c %i g)" ] && echo same',
          'cp -al lib lib2',
          'ln f h',
          'echo x >> g',
          'cat f',
          `git ${identity} init -q repo && echo hi > repo/hi && git -C repo add hi && git ${identity} -C repo commit -qm one && git clone -q --local repo clone`,
        ].join(' && '),
        overlay,
      )
      const object = ws.fs.readdirSync('/repo/.git/objects', { recursive: true }).find((p) => /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(String(p))) as string
      ws.fs.appendFileSync('/lib2/sub/b.txt', 'through lib2\n')
      const clone = await ws.exec('git -C clone fsck --no-progress 2>&1 && git -C clone log --format=%s && cat lib/sub/b.txt', overlay)
      return {
        privileged: process.getuid?.() === 0,
        exitCode: result.exitCode,
        stdout: result.stdout,
        stderr: result.stderr,
        added: result.changes.added.filter((p) => !p.startsWith('/repo') && !p.startsWith('/clone')),
        lib: [ino('/lib/a.txt') === ino('/lib2/a.txt'), ws.fs.statSync('/lib/sub/b.txt').nlink, ws.fs.readFileSync('/lib/sub/b.txt', 'utf8')],
        names: ['/f', '/g', '/h'].map((p) => `${ws.fs.statSync(p).nlink} ${ws.fs.readFileSync(p, 'utf8').replace('\n', '|')}`),
        fh: ino('/f') === ino('/h'),
        fg: ino('/f') === ino('/g'),
        objectShared: ino(`/repo/.git/objects/${object}`) === ino(`/clone/.git/objects/${object}`),
        clone: clone.stdout,
        cloneExit: clone.exitCode,
        cloneErr: clone.stderr,
      }
    })
  },

  /**
   * ws.bisect's probes run back to back: from the second on, each runs in a helper started while
   * the one before ran, its arguments sent on stdin. A command with quotes, backslashes, newlines
   * and non-ASCII text prints exactly what it says at every state; a timeout in such a helper
   * still kills the command (a skipped state); no helper is left running afterwards.
   */
  async backToBack(): Promise<Observation> {
    return withWorkspace({ '/state.txt': 'good 0\n' }, async (ws) => {
      for (const state of ['good 1', 'good 2', 'good 3', 'good 4', 'good 5', 'slow 6', 'bad 7', 'bad 8']) ws.fs.writeFileSync('/state.txt', state + '\n')
      const command = `s=$(cat state.txt)\nprintf '%s|%s|%s\\n' "it's" 'a "quote" \\n $HOME é✓' "$s"\ncase $s in slow*) sleep 30 ;; bad*) exit 1 ;; esac`
      const result = await ws.bisect(command, { mode: 'overlay', timeout: 2000 })
      const helpers = async () => {
        for (let tries = 0; ; tries++) {
          const left = childHelpers()
          if (left.length === 0 || tries === 40) return left
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      return {
        probes: result.probes.map((p) => [p.state.operationSeq, p.verdict, p.stdoutTail, p.repeat === true]),
        firstBad: result.firstBad.operationSeq,
        lastGood: result.lastGood.operationSeq,
        skipped: result.skipped.map((s) => [s.state.operationSeq, s.reason]),
        helpers: await helpers(),
        live: ws.fs.readFileSync('/state.txt', 'utf8'),
      }
    })
  },

  /** The workspace's durable store and several execs: undo and redo of an exec are seen by the next one. */
  async undoRedo(): Promise<Observation> {
    const store = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-store-`)
    try {
      return await withWorkspace({ '/a.txt': 'a\n' }, async (ws0, root) => {
        await ws0.close()
        const ws = await Workspace.open({ lower: directory(root), store: directoryStore(store) })
        await ws.exec('echo b > b.txt && rm a.txt', overlay)
        await ws.undo()
        const undone = (await ws.exec('ls', overlay)).stdout
        await ws.redo()
        const redone = (await ws.exec('ls', overlay)).stdout
        await ws.close()
        return { undone, redone }
      })
    } finally {
      fs.rmSync(store, { recursive: true, force: true })
    }
  },

  /**
   * Copy mode over a project holding a file and a directory this user may not read (mode 000; root
   * reads them anyway): the command meets them as it would on disk, and the rest of what it did is
   * taken back, where a copy that stopped at the first one failed whole.
   */
  async unreadableInCopy(): Promise<Observation> {
    const root = project({ '/pub.txt': 'pub\n', '/secret.txt': 'secret\n', '/private/inner.txt': 'inner\n' })
    fs.chmodSync(`${root}/secret.txt`, 0)
    fs.chmodSync(`${root}/private`, 0)
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const result = await ws.exec('cat pub.txt; cat secret.txt; ls private; echo new > new.txt; echo more >> pub.txt', { mode: 'copy' })
      const again = await ws.exec('cat new.txt pub.txt', { mode: 'copy' })
      return { uid: process.getuid?.(), ...brief(result), again: again.stdout, againChanges: again.changes }
    } finally {
      await ws.close()
      fs.chmodSync(`${root}/secret.txt`, 0o600)
      fs.chmodSync(`${root}/private`, 0o755)
      fs.rmSync(root, { recursive: true, force: true })
    }
  },
} satisfies Record<string, () => Promise<Observation>>

export type ScenarioName = keyof typeof scenarios
