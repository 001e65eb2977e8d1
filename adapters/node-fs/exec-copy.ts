/**
 * Copy mode: the view is written into a private temp directory (exec-tree.ts), the command runs
 * there, and the directory is compared with what was written. For lowers that are not a directory
 * (fixtures, IndexedDB, Docker volumes), other hosts, and kernels without overlayfs or user
 * namespaces. Where namespaces are available the command still gets them (a PID namespace, the
 * sandbox); output naming the temp copy is mapped back to the project's (or the workspace's) paths.
 *
 * A project file of the user's own that its mode keeps from the user (mode 000) is copied through a
 * user namespace, where the user's files are root's to read, as overlayfs copies it up: the command
 * sees it as on disk, refused until it changes the mode. Anyone else's stays an empty stand-in.
 */
import os from 'node:os'
import { hostFs as fs } from './host-fs.js'
import type { ExecHost } from 'rewindfs'
import type { LowerSource } from 'rewindfs/adapter-kit'
import { HELPER_SCRIPT, helperArguments } from './exec-helper.js'
import { DirectorySource } from './directory.js'
import { makeTempDir, removeLargeTree } from './exec-files.js'
import { type Launch, type Ran, SetupError } from './exec-overlay.js'
import { runProcess } from './exec-process.js'
import { type Support, run, unshareArguments } from './exec-support.js'
import { type CloneSource, type Refused, emptyScan, fillRefused, materialise, scan } from './exec-tree.js'

/** `cwd` is a workspace path here (the copy's location is known only once it is made). */
export async function runCopy(host: ExecHost, support: Support, launch: Launch, tmpdir: string | undefined): Promise<Omit<Ran, 'work'>> {
  const ws = host.workspace
  const source: LowerSource = ws.lower.source
  const lazy = source.prefetch !== undefined
  // Sources that load lazily (IndexedDB, Docker volumes) must have the view's files in memory first.
  const base = fs.realpathSync(tmpdir ?? os.tmpdir())
  if (source instanceof DirectorySource && (base === source.root || base.startsWith(source.root + '/'))) {
    throw Object.assign(new TypeError(`rewindfs: exec: the temp directory '${base}' is inside the project '${source.root}': the copy would contain itself; pass tmpdir elsewhere`), { code: 'ERR_INVALID_ARG_VALUE' })
  }
  if (lazy) await ws.prefetch(listFiles(ws))
  const temp = makeTempDir(base)
  try {
    // The tree and the copy are taken in one synchronous stretch: the same state.
    const before = host.tree()
    const lower: CloneSource | undefined = source instanceof DirectorySource ? { root: source.root, changed: new Set(ws.changes().map((c) => c.path)) } : undefined
    const view = host.view(before)
    const namespaces = support.namespaces === undefined
    // With namespaces the copy is mounted at the project's own path (exec-helper.ts): a command that
    // names the project by its path (a venv's shebang, an absolute output path) writes into the
    // copy, never onto the disk, and sees the project where it is, as in overlay mode.
    const project = namespaces && source instanceof DirectorySource ? source.root : undefined
    // Names of one workspace inode are hard links in the copy too.
    const manifest = materialise(ws.fs, `${temp}/root`, `${temp}/clock`, lower, (path) => view.lookup(path, false)?.link, project)
    await fillRefused(manifest, (files) => readAsOwner(support, files))
    const below = launch.cwd === '/' ? '' : launch.cwd
    const cwd = (project ?? manifest.root) + below
    const env = { ...launch.env, PWD: cwd }
    if (namespaces && launch.readOnlyHost) fs.mkdirSync(`${temp}/stash`)
    const outcome = namespaces
      ? await runProcess({
          file: support.tools.unshare,
          args: [
            ...unshareArguments(support, launch.network),
            '/bin/sh',
            '-c',
            HELPER_SCRIPT,
            'rewindfs-exec',
            ...helperArguments({
              root: manifest.root,
              layer: '',
              upper: '',
              work: '',
              overlayOptions: '',
              cwd,
              network: launch.network ? 'on' : 'off',
              host: launch.readOnlyHost ? 'read-only' : 'read-write',
              writable: launch.writable,
              map: support.privileged ? '' : `${process.getuid!()}:${process.getgid!()}`,
              stash: `${temp}/stash`,
              command: launch.command,
              project: project ?? '',
              // Mounted at the project's path: $PWD names it as the user gave it (a link above it).
              pwd: project !== undefined ? openedPwd(source, below) : '',
            }),
          ],
          cwd: '/',
          env,
          timeout: launch.timeout,
          stdio: launch.stdio,
          status: true,
        })
      : await runProcess({ file: '/bin/sh', args: ['-c', launch.command], cwd, env, timeout: launch.timeout, stdio: launch.stdio, status: false })
    if (namespaces && !outcome.status.startsWith('ok')) {
      throw new SetupError(`rewindfs: exec: the command's namespaces could not be set up: ${outcome.status.replace(/^error /, '').trim() || outcome.stderr.trim()}`)
    }
    // Paths in the output name the copy; people and models need the project's (or the workspace's).
    const shown = source instanceof DirectorySource ? source.root : ''
    // Links made to the project itself (by its real path or the path it was opened by) read as the directory lower shows them.
    const shownTarget = source instanceof DirectorySource ? (target: string) => source.shownTarget(target) : undefined
    const mapPaths = (text: string) => renameRoot(text, manifest.root, shown)
    return { outcome: { ...outcome, stdout: mapPaths(outcome.stdout), stderr: mapPaths(outcome.stderr) }, scan: launch.discard ? emptyScan() : scan(manifest, launch.maxFileSize, shownTarget), before }
  } finally {
    await removeLargeTree(temp)
  }
}

/** Characters that continue a path's last name: a root followed by one is another path ('/p' in '/p2'). */
const NAME_GOES_ON = String.raw`[\w.~+\-]`

/**
 * HelperArguments.pwd for a command starting at `below` (a workspace path, '' for the root) in a
 * project mounted at its real path: the directory through the path a directory lower was opened by,
 * where that is a link to it; '' (the real path itself) otherwise.
 */
export function openedPwd(source: unknown, below: string): string {
  return source instanceof DirectorySource && source.opened !== source.root ? source.opened + below : ''
}

/**
 * `text` with the host path `from` (a root, absolute, no trailing slash) and the paths below it
 * named from `to` instead ('' for the workspace's paths: `from` alone becomes '/'). Only whole
 * paths: not where `from` is the tail of a longer path or the head of a longer name.
 */
export function renameRoot(text: string, from: string, to: string): string {
  if (from === to || from === '/' || !text.includes(from)) return text
  const escaped = from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const pattern = new RegExp(`(?<!${NAME_GOES_ON}|/)${escaped}(?!${NAME_GOES_ON})`, 'g')
  return text.replace(pattern, (_match: string, offset: number) => (text[offset + from.length] === '/' ? to : to || '/'))
}

/** A shell loop over (file, stand-in) pairs: 'y' for each it copied, 'n' for each it could not. */
const COPY_PAIRS = 'while [ $# -gt 1 ]; do if cat -- "$1" > "$2" 2>/dev/null; then echo y; else echo n; fi; shift 2; done'

/**
 * Copies the user's own unreadable files into their stand-ins in a user namespace mapping the user
 * to root (its ids are mapped there, so root's read override applies to them); says which it could.
 * Where no user namespace can be made, none.
 */
async function readAsOwner(support: Support, files: readonly Refused[]): Promise<boolean[]> {
  if (support.privileged || support.namespaces !== undefined) return files.map(() => false)
  const copied: boolean[] = []
  for (let start = 0; start < files.length; start += 200) {
    const batch = files.slice(start, start + 200)
    const result = await run(support.tools.unshare, ['--user', '--map-root-user', '/bin/sh', '-c', COPY_PAIRS, 'sh', ...batch.flatMap((file) => [file.from, file.host])])
    const answers = result.stdout.split('\n')
    batch.forEach((_, index) => copied.push(answers[index] === 'y'))
  }
  return copied
}

/** The files of the current view (for a lazily loading source to fetch before materialising). */
function listFiles(ws: ExecHost['workspace']): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of ws.fs.readdirSync(dir, { withFileTypes: true })) {
      const path = dir === '/' ? '/' + entry.name : `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) files.push(path)
    }
  }
  walk('/')
  return files
}
