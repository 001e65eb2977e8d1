/**
 * Overlay mode with real commands (git, npm pack, tar, sed -i, mv and rm -rf of lower trees,
 * chmod, symlinks, a setsid daemon, a timeout, the sandbox), the exec layer following the
 * workspace, and the work counters that prove exec #2 costs O(paths changed). Every scenario runs
 * twice: in this process (root in CI: a mount namespace) and as an unprivileged user (a user
 * namespace with overlayfs's userxattr), spawned with runuser against the same sources.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { support } from '../adapters/node-fs/exec-support.js'
import { type Observation, type ScenarioName, scenarios } from './support/exec-scenarios.js'
import { EXEC_USER, runAsUser, userProblem } from './support/exec-user-run.js'
import { capability } from './support/require.js'

const host = await support()
const overlayHere = capability('exec-overlay', host.overlay)
const problem = userProblem()
const asUser = process.getuid?.() === 0 ? capability('exec-user', problem) : false

/** The assertions, the same for both users. */
const checks: Record<ScenarioName, (seen: Observation) => void> = {
  unreadableInCopy(seen) {
    expect(seen).toMatchObject({ mode: 'copy', changes: { added: ['/new.txt'], modified: ['/pub.txt'], deleted: [] }, again: 'new\npub\nmore\n', againChanges: { added: [], modified: [], deleted: [] } })
    // Root reads what mode 000 keeps from anyone else; the unprivileged user is refused, as on disk.
    if (seen.uid === 0) expect(seen.stdout).toBe('pub\nsecret\ninner.txt\n')
    else {
      expect(seen.stdout).toBe('pub\n')
      expect(seen.stderr).toMatch(/secret\.txt: Permission denied/)
      expect(seen.stderr).toMatch(/private.*Permission denied/)
    }
  },
  git(seen) {
    expect(seen).toMatchObject({ exitCode: 0, mode: 'overlay', stdout: 'second\nfirst\n', status: '', head: 'ref: refs/heads/main\n', objects: true })
    expect((seen.changes as { added: string[] }).added).toContain('/.git/HEAD')
    expect((seen.changes as { modified: string[] }).modified).toEqual(['/README.md'])
    expect(seen.disk).toEqual({ '/README.md': '644 hello\n', '/src/': '755', '/src/main.c': '644 int main;\n' })
  },
  npmPack(seen) {
    expect(seen).toMatchObject({ exitCode: 0, stdout: 'demo-pack-1.2.3.tgz\n', added: ['/demo-pack-1.2.3.tgz'], size: true })
    expect(seen.disk).toEqual(['/index.js', '/package.json'])
  },
  tarSedChmod(seen) {
    expect(seen).toMatchObject({ exitCode: 0, stdout: 'run\n', disk: '644 mode=debug\nlevel=1\n' })
    expect(seen.view).toEqual({
      '/config.ini': '644 mode=release\nlevel=1\n',
      '/pkg/': '755',
      '/pkg/a.txt': '644 alpha\n',
      '/pkg/sub/': '755',
      '/pkg/sub/b.txt': '644 beta\n',
      '/run.sh': '755 echo run\n',
    })
    expect(seen.changes).toEqual({ added: ['/pkg', '/pkg/a.txt', '/pkg/sub', '/pkg/sub/b.txt'], modified: ['/config.ini', '/run.sh'], deleted: [] })
  },
  treeSurgery(seen) {
    expect(seen).toMatchObject({ exitCode: 0, stdout: 'main\nshared\nk\n', outLinkTarget: true })
    const view = seen.view as Record<string, string>
    expect(view).toMatchObject({ '/abs-link': '-> /keep.txt', '/docs/': '755', '/docs/new.md': '644 new\n', '/in-link': '-> lib/main.c', '/keep.txt': '644 k\n', '/lib/': '755', '/lib/lib/': '755', '/lib/lib/util.c': '644 util\n', '/lib/main.c': '644 main\n' })
    expect(Object.keys(view).filter((p) => p.startsWith('/src') || p.startsWith('/docs/a') || p.startsWith('/docs/b'))).toEqual([])
    expect(seen.changes).toEqual({
      added: ['/abs-link', '/docs/new.md', '/in-link', '/lib', '/lib/lib', '/lib/lib/util.c', '/lib/main.c', '/out-link'],
      modified: [],
      deleted: ['/docs/a.md', '/docs/b.md', '/src', '/src/lib', '/src/lib/util.c', '/src/main.c'],
    })
    expect(seen.listing).toBe('./abs-link\n./docs\n./docs/new.md\n./in-link\n./keep.txt\n./lib\n./lib/lib\n./lib/lib/util.c\n./lib/main.c\n./out-link\n')
    expect(seen.disk).toEqual({ '/docs/': '755', '/docs/a.md': '644 a\n', '/docs/b.md': '644 b\n', '/keep.txt': '644 k\n', '/src/': '755', '/src/lib/': '755', '/src/lib/util.c': '644 util\n', '/src/main.c': '644 main\n' })
  },
  lifetime(seen) {
    expect(seen).toEqual({ daemon: 'started\n', timedOut: true, signal: 'SIGKILL', quick: true, added: ['/early.txt'], marks: [] })
  },
  readOnlyHost(seen) {
    expect(seen).toEqual({ stdout: 'blocked: 2\ntmp: ok\nallowed: ok\nproject: ok\n', erofs: true, outside: [], allowed: ['cache.txt'], privateTmp: false, added: ['/inside.txt'] })
  },
  noNetwork(seen) {
    expect(seen.open).toBe('connected hello\n')
    expect(seen.closed).toMatch(/^failed (ECONNREFUSED|ENETUNREACH)\n$/)
    expect(seen.loopback).toBe('lo\n') // a fresh namespace: loopback only
  },
  layerFollowsWorkspace(seen) {
    for (const step of seen.steps as { listing: string; expected: string }[]) expect(step.listing).toBe(step.expected)
    expect(seen.afterFlush).toBe('changed\ndocs\nkeep.txt\nlink\nsrc\n') // the flush's staging folder stays hidden
    expect(seen.pinned).toBe('k\n')
    expect(seen.diskKeep).toBe('changed\n')
  },
  incremental(seen) {
    const work = seen as Record<string, { layerWrites: number; upperEntries: number; lookups: number; stdout?: string }>
    // The first command wrote d1/new.txt: the command's upper held it and its directory.
    expect(work.first).toMatchObject({ layerWrites: 0, upperEntries: 2 })
    // Since then: that command's file and one workspace write, each with its directory. 10 000
    // files in the project, and the work is four layer entries and a few lookups.
    expect(work.second).toMatchObject({ layerWrites: 4, upperEntries: 0, stdout: 'touched\none\n' })
    expect(work.second.lookups).toBeLessThan(10)
    // 500 writes in 100 directories (98 new to the layer)...
    expect(work.many.layerWrites).toBe(598)
    // ...and then one more (its directory is in the layer already): one write, not O(all earlier changes).
    expect(work.after).toMatchObject({ layerWrites: 1, upperEntries: 0, stdout: 'one more\n' })
    expect(work.after.lookups).toBeLessThan(10)
    expect(work.idle).toEqual({ layerWrites: 0, upperEntries: 0, lookups: 0 })
  },
  backToBack(seen) {
    const line = (state: string) => `it's|a "quote" \\n $HOME é✓|${state}\n`
    // The middle (4), then 6: slow, killed at the timeout in a helper started ahead, and skipped.
    expect(seen.probes).toEqual([
      [4, 'good', line('good 4'), false],
      [6, 'skip', line('slow 6'), false],
      [5, 'good', line('good 5'), false],
      [7, 'bad', line('bad 7'), false],
      [7, 'bad', line('bad 7'), true],
    ])
    expect(seen).toMatchObject({ firstBad: 7, lastGood: 5, skipped: [[6, 'timed out after 2000 ms']], helpers: [], live: 'bad 8\n' })
  },
  undoRedo(seen) {
    expect(seen).toEqual({ undone: 'a.txt\n', redone: 'b.txt\n' })
  },
  hardLinks(seen) {
    // The command sees the workspace's names of one inode as one inode.
    expect(seen).toMatchObject({ exitCode: 0, stderr: '', cloneExit: 0, clone: 'one\nb\nthrough lib2\n', objectShared: true, fh: true })
    expect(seen.added).toEqual(['/h', '/lib2', '/lib2/a.txt', '/lib2/sub', '/lib2/sub/b.txt'])
    expect(seen.lib).toEqual([true, 2, 'b\nthrough lib2\n'])
    if (seen.privileged) {
      // overlayfs's index (root): a write through g is the inode's, as on a plain file system.
      expect(seen.stdout).toBe('2\n2\nsame\nf\nx\n')
      expect(seen.names).toEqual(['3 f|x\n', '3 f|x\n', '3 f|x\n'])
      expect(seen.fg).toBe(true)
    } else {
      // No index in a user namespace: overlayfs copied g up on its own; the command saw it apart, and so does the workspace.
      expect(seen.stdout).toBe('2\n2\nsame\nf\n')
      expect(seen.names).toEqual(['2 f|', '1 f|x\n', '2 f|'])
      expect(seen.fg).toBe(false)
    }
  },
}

const names = Object.keys(scenarios) as ScenarioName[]

describe.skipIf(!overlayHere)(`overlay mode in this process (${process.getuid?.() === 0 ? 'root: a mount namespace' : 'a user namespace'})`, () => {
  for (const name of names) {
    it(name, { timeout: 180_000 }, async () => {
      checks[name](await scenarios[name]())
    })
  }
})

describe.skipIf(!asUser)(`overlay mode as the unprivileged user ${EXEC_USER} (a user namespace, userxattr)`, () => {
  let seen: Awaited<ReturnType<typeof runAsUser>> = {}
  // One process for all of them (tsx starts once).
  beforeAll(async () => {
    seen = await runAsUser(names)
  }, 900_000)
  for (const name of names) {
    it(name, () => {
      const result = seen[name]
      if (result?.error !== undefined) throw new Error(result.error)
      checks[name](result?.value as Observation)
    })
  }
})
