/**
 * Overlay mode: the command runs in a private mount namespace where kernel overlayfs merges the
 * project directory with the workspace's exec layer (exec-layer.ts) and a fresh upper directory,
 * mounted at the project's own absolute path. Nothing on disk changes; what the command did is
 * exactly the upper directory's contents (exec-readback.ts). The session directory (layer,
 * uppers, work directories) lives under tmpdir for the workspace and is removed on close. As root
 * the overlay copies up metadata only on a chmod, chown or `touch -c` where the host allows it
 * (metacopy=on, exec-support.ts): such a command no longer copies, reads back and stores again the
 * content of every file it touched.
 *
 * A command's helper is started before the layer is brought to the command's state (unshare makes
 * the namespaces meanwhile, and the script waits for its arguments on stdin). A session whose
 * commands come back to back (ws.bisect's probes) keeps the next command's helper started while
 * the current one runs (a spare), and removes a command's upper and work directories while the
 * next one runs: between two commands only the layer's update and the mount remain.
 *
 * A user namespace maps only the user's own uid and gid, and overlayfs cannot copy up a file or
 * directory whose owner or group it cannot map (EOVERFLOW): a write, a rename or a new entry there
 * fails where it would work on disk (a file of the user's with the group 'users', a tree after
 * `sudo chown -R me`). So an unprivileged session looks for such entries in the project once per
 * lower source (one `find`) and, where the view still shows one from the project, refuses to set up
 * (SetupError: the command runs in copy mode, which has no such limit, and says why).
 */
import { spawn } from 'node:child_process'
import os from 'node:os'
import { hostFs as fs } from './host-fs.js'
import type { ExecHost } from 'rewindfs'
import type { DirNode, Overlay } from 'rewindfs/adapter-kit'
import { hashBytes } from 'rewindfs/adapter-kit'
import { RESERVED_PREFIX } from './confine.js'
import { DirectorySource } from './directory.js'
import { HELPER_SCRIPT, type HelperArguments, helperArguments, helperRequest } from './exec-helper.js'
import { makeTempDir, removeLargeTree, removeTree } from './exec-files.js'
import { ExecLayer } from './exec-layer.js'
import { type ProcessOutcome, SpareProcess, type SpareSpec, runProcess } from './exec-process.js'
import { readBack } from './exec-readback.js'
import { type Support, overlayOptions, unshareArguments, xattrPrefix } from './exec-support.js'
import { type Scan, emptyScan } from './exec-tree.js'

/** How the command runs, resolved from its options. */
export interface Launch {
  readonly command: string
  /** The host directory the command starts in. */
  readonly cwd: string
  /** `cwd` as the user names it (HelperArguments.pwd); '' for `cwd` itself. */
  readonly pwd: string
  readonly env: NodeJS.ProcessEnv
  readonly timeout: number | undefined
  readonly stdio: 'pipe' | 'inherit'
  readonly network: boolean
  readonly readOnlyHost: boolean
  readonly writable: readonly string[]
  /** What the command writes is thrown away unread (an empty scan). */
  readonly discard: boolean
  /** Files larger than this are not read back (skipped): the workspace holds none. */
  readonly maxFileSize: number
}

export interface Ran {
  readonly outcome: ProcessOutcome
  readonly scan: Scan
  /** The tree the command started from (conflicts are what changed since). */
  readonly before: DirNode
  readonly work: { layerWrites: number; upperEntries: number; lookups: number }
}

/** The helper could not set the namespaces or the overlay up: nothing ran. */
export class SetupError extends Error {
  readonly code = 'ENOTSUP'
}

/** Characters overlayfs's mount options cannot carry in a path (they separate options and layers). */
export function mountPathProblem(path: string): string | undefined {
  return /[,:\\\n]/.test(path) ? `the path '${path}' has a character (',', ':', '\\' or a newline) overlayfs's mount options cannot carry` : undefined
}

/**
 * Files a command wrote of at least this size are moved into the exec layer, not written there
 * again from the workspace; smaller ones cost about as much to write as to check and move.
 */
const HOLD_FROM = 64 * 1024

/** Session directories of workspaces not closed yet: removed when the process exits, if still there. */
const live = new Set<string>()
let exitHook = false
function track(dir: string): void {
  live.add(dir)
  if (exitHook) return
  exitHook = true
  process.once('exit', () => {
    for (const path of live) {
      try {
        removeTree(path)
      } catch {
        // Best effort at exit.
      }
    }
  })
}

/** Entries of a project whose owner or group is not this user's, up to a bound ('more': there were others). */
interface Unmapped {
  readonly paths: readonly string[]
  readonly more: boolean
  /** Why they could not be looked for (the search did not run). */
  readonly problem?: string
}

/** Listed up to this many: past it, the project is taken to have them wherever a command looks. */
const UNMAPPED_LIST = 1000

/** One search per lower source (a project's workspaces and ws.bisect's views share it). */
const unmappedBySource = new WeakMap<object, Promise<Unmapped>>()

/**
 * The project's entries below its root (the mount's root is the upper directory, never copied up)
 * whose owner or group is not this user's: one `find`, on the project's own file system (overlayfs
 * shows no mount below its lower directory), the flush's staging area left out.
 */
function findUnmapped(project: string, uid: number, gid: number): Promise<Unmapped> {
  const args = [project, '-xdev', '-mindepth', '1', '(', '-name', RESERVED_PREFIX, '-o', '-name', `${RESERVED_PREFIX}.*`, ')', '-prune', '-o', '(', '!', '-user', String(uid), '-o', '!', '-group', String(gid), ')', '-print0']
  return new Promise((resolve) => {
    const child = spawn('find', args, { cwd: '/', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C' } })
    const paths: string[] = []
    let rest = Buffer.alloc(0)
    let more = false
    child.stdout.on('data', (chunk: Buffer) => {
      if (more) return
      rest = Buffer.concat([rest, chunk])
      for (let end = rest.indexOf(0); end >= 0; end = rest.indexOf(0)) {
        const path = rest.subarray(0, end).toString('utf8')
        rest = rest.subarray(end + 1)
        if (paths.length === UNMAPPED_LIST) {
          more = true
          child.kill()
          return
        }
        if (path.startsWith(project + '/')) paths.push(path.slice(project.length))
      }
    })
    child.on('error', (error) => resolve({ paths: [], more: false, problem: `the project's owners cannot be checked (find: ${error.message})` }))
    // Status 1 when a directory could not be read: what the command cannot read either; the rest was listed.
    child.on('close', (code, signal) => resolve(code === null && !more ? { paths: [], more: false, problem: `the project's owners cannot be checked (find ended with ${signal})` } : { paths, more }))
  })
}

/**
 * Why this user namespace cannot run commands over the view (undefined: it can): an entry of the
 * project it cannot map that the view still shows from the project (not deleted, replaced or
 * written by the workspace, whose own copy in the exec layer is the user's).
 */
function unmappedProblem(found: Unmapped, view: Overlay, project: string, uid: number, gid: number): string | undefined {
  if (found.problem !== undefined) return found.problem
  const shown = found.paths.filter((path) => {
    // A name that is not UTF-8 has no workspace path: the view cannot hide it.
    if (path.includes('\uFFFD')) return true
    const entry = view.lookup(path, false)
    return entry !== undefined && entry.node === undefined && entry.link === undefined && entry.lowerPath === path
  })
  if (shown.length === 0 && !found.more) return undefined
  const first = shown[0] ?? found.paths[0]
  const stats = fs.lstatSync(project + first, { throwIfNoEntry: false })
  const ids = stats ? `uid ${stats.uid}, gid ${stats.gid}` : 'another owner'
  const others = found.more ? ` and over ${UNMAPPED_LIST} more` : shown.length > 1 ? ` and ${shown.length - 1} more` : ''
  return `'${first}'${others} in the project belongs to ${ids}, and a user namespace maps only this user's ${uid}:${gid}: overlayfs could not copy it up (EOVERFLOW) for a command that writes, renames or creates in it`
}

function sameSpec(a: SpareSpec, b: SpareSpec): boolean {
  if (a.file !== b.file || a.cwd !== b.cwd || a.args.length !== b.args.length || a.args.some((arg, i) => arg !== b.args[i])) return false
  const names = Object.keys(a.env)
  return names.length === Object.keys(b.env).length && names.every((name) => a.env[name] === b.env[name])
}

export class OverlaySession {
  private dir: string | undefined
  private layer: ExecLayer | undefined
  private serial = 0
  private queue: Promise<unknown> = Promise.resolve()
  /** The next command's helper, started while this one runs (back-to-back sessions only). */
  private spare: SpareProcess | undefined
  /** Upper, work and stash directories of the last command, removed while the next one runs. */
  private leftovers: string[] = []

  constructor(
    private readonly host: ExecHost,
    private readonly support: Support,
    /** The project directory's real path: the lowerdir and the mount point. */
    readonly project: string,
    /** Commands follow each other at once (ws.bisect's probes): keep the next one's helper started. */
    private readonly backToBack = false,
  ) {}

  /** Why this session's temp directory cannot hold an overlay for the project, if it cannot. */
  placeProblem(tmpdir: string | undefined): string | undefined {
    const base = this.dir ?? fs.realpathSync(tmpdir ?? os.tmpdir())
    // The session directory is made inside `base`: inside the project, the layers would nest.
    if (base === this.project || base.startsWith(this.project + '/')) {
      return `the temp directory '${base}' is inside the project '${this.project}' (overlayfs refuses nested layers); pass tmpdir elsewhere`
    }
    return mountPathProblem(this.project) ?? mountPathProblem(base)
  }

  /** Runs one command; commands of one workspace take turns (the layer is their shared lowerdir). */
  run(launch: Launch, tmpdir: string | undefined): Promise<Ran> {
    const turn = this.queue.then(() => this.runNow(launch, tmpdir))
    this.queue = turn.catch(() => undefined)
    return turn
  }

  private async runNow(launch: Launch, tmpdir: string | undefined): Promise<Ran> {
    if (this.dir === undefined) {
      this.dir = makeTempDir(fs.realpathSync(tmpdir ?? os.tmpdir()))
      track(this.dir)
    }
    const { tools } = this.support
    const spec: SpareSpec = { file: tools.unshare, args: [...unshareArguments(this.support, launch.network), '/bin/sh', '-c', HELPER_SCRIPT, 'rewindfs-exec'], cwd: '/', env: launch.env }
    // The helper starts first (or was started while the last command ran): unshare makes the
    // namespaces while the layer is brought to this state, and the helper then waits for its
    // arguments on stdin. A request travels as text: one with a NUL byte goes to spawn, which
    // refuses it as Node does.
    const helperProcess = launch.stdio === 'pipe' && ![launch.command, launch.cwd, ...launch.writable].some((arg) => arg.includes('\0')) ? (this.takeSpare(spec) ?? new SpareProcess(spec)) : undefined
    try {
      return await this.runWith(launch, spec, helperProcess)
    } finally {
      // Unused when the set-up before it failed.
      helperProcess?.discard()
    }
  }

  private async runWith(launch: Launch, spec: SpareSpec, helperProcess: SpareProcess | undefined): Promise<Ran> {
    const dir = this.dir!
    const { privileged, tools } = this.support
    if (!this.layer) {
      fs.mkdirSync(`${dir}/layer`)
      fs.mkdirSync(`${dir}/templates`)
      fs.mkdirSync(`${dir}/kept`)
      this.layer = new ExecLayer(`${dir}/layer`, this.project, `${dir}/templates`, tools, privileged, xattrPrefix(privileged) + 'opaque', `${dir}/kept`)
    }
    const unmapped = privileged ? undefined : await this.unmapped()
    const { root: before, writes, lookups } = await this.layer.sync(this.host, this.host.workspace.lower)
    if (unmapped !== undefined) {
      const problem = unmappedProblem(unmapped, this.host.view(before), this.project, process.getuid!(), process.getgid!())
      if (problem !== undefined) throw new SetupError(`rewindfs: exec: overlay mode could not be set up: ${problem}`)
    }
    const id = ++this.serial
    const upper = `${dir}/upper-${id}`
    const work = `${dir}/work-${id}`
    const stash = `${dir}/stash-${id}`
    // The mount's root directory is the upper's: it carries the view's root mode and times.
    fs.mkdirSync(upper)
    fs.mkdirSync(work)
    if (launch.readOnlyHost) fs.mkdirSync(stash)
    try {
      const view = this.host.view(before)
      const rootMeta = view.meta(view.rootEntry())
      // Root gives it the view's owner and group too (before the mode: chown drops set-user-ID).
      if (privileged) fs.chownSync(upper, rootMeta.uid, rootMeta.gid)
      fs.chmodSync(upper, rootMeta.mode & 0o7777)
      fs.utimesSync(upper, rootMeta.atimeMs / 1000, rootMeta.mtimeMs / 1000)
      const helper: HelperArguments = {
        root: this.project,
        layer: `${dir}/layer`,
        upper,
        work,
        overlayOptions: overlayOptions(this.support),
        cwd: launch.cwd,
        network: launch.network ? 'on' : 'off',
        host: launch.readOnlyHost ? 'read-only' : 'read-write',
        writable: launch.writable,
        map: privileged ? '' : `${process.getuid!()}:${process.getgid!()}`,
        stash,
        command: launch.command,
        project: '',
        pwd: launch.pwd,
      }
      // Once the command runs (this process waits then): the next command's helper, and what the last one left.
      // Told from an event handler: a failure here must not end the process, and costs only the head start.
      const started = () => {
        try {
          if (this.backToBack && launch.stdio === 'pipe') this.spare ??= new SpareProcess(spec)
          this.removeLeftovers()
        } catch {
          // What was not removed goes with the session directory.
        }
      }
      const outcome = await (helperProcess
        ? helperProcess.run(helperRequest(helper), launch.timeout, started)
        : runProcess({ ...spec, args: [...spec.args, ...helperArguments(helper)], timeout: launch.timeout, stdio: launch.stdio, status: true, started }))
      if (!outcome.status.startsWith('ok')) {
        const why = outcome.status.replace(/^error /, '').trim() || (outcome.timedOut ? 'timed out while setting up' : `the namespace helper ended with ${outcome.signal ?? `exit status ${outcome.exitCode}`}: ${outcome.stderr.trim()}`)
        throw new SetupError(`rewindfs: exec: overlay mode could not be set up: ${why}`)
      }
      const { scan, entries, written } = launch.discard
        ? { scan: emptyScan(), entries: 0, written: [] }
        : await readBack({
            upper,
            before: view,
            project: this.project,
            shownTarget: this.shownTarget,
            xattr: xattrPrefix(privileged),
            getfattr: tools.getfattr,
            redirects: privileged,
            // Metadata-only copy-ups (root, where the probe found them): upper files whose content is the lower's.
            metacopy: privileged && this.support.metacopy === undefined,
            owners: privileged,
            maxFileSize: launch.maxFileSize,
            ...(privileged ? { index: `${work}/index` } : {}),
            // Only where everything the command started is dead (its PID namespace): nothing writes them any more.
            ...(this.support.pid ? { hold: HOLD_FROM } : {}),
          })
      // Out of the upper directory before it is removed: the next sync moves them into the layer.
      if (written.length > 0) await this.layer.hold(written.map((file) => ({ path: file.path, host: file.host, blob: hashBytes(file.bytes), size: file.bytes.byteLength, ctimeNs: file.ctimeNs })))
      return { outcome, scan, before, work: { layerWrites: writes, upperEntries: entries, lookups: lookups + view.counters.lookups } }
    } finally {
      this.leftovers.push(upper, work, stash)
      if (!this.backToBack) this.removeLeftovers()
    }
  }

  /**
   * The last command's transaction committed (or it had nothing to record): the layer keeps the
   * files it held that the workspace now shows as the command wrote them.
   */
  recorded(): void {
    this.layer?.confirm(this.host.view(this.host.tree()))
  }

  /**
   * Absolute link targets the command wrote, as the workspace reads them: through the directory
   * lower's own mapping, which knows the path the project was opened by as well as its real path
   * (a link made through the opened-by path would otherwise come back naming the host).
   */
  private readonly shownTarget = (target: string): string => {
    const source = this.host.workspace.lower.source
    return source instanceof DirectorySource ? source.shownTarget(target) : target
  }

  /** The project's entries a user namespace cannot map, searched for once per lower source. */
  private unmapped(): Promise<Unmapped> {
    const source = this.host.workspace.lower.source
    let found = unmappedBySource.get(source)
    if (found === undefined) {
      found = findUnmapped(this.project, process.getuid!(), process.getgid!())
      unmappedBySource.set(source, found)
    }
    return found
  }

  /** The spare, if it was started for a command like this one (same program, arguments, environment) and still waits. */
  private takeSpare(spec: SpareSpec): SpareProcess | undefined {
    const spare = this.spare
    this.spare = undefined
    if (spare === undefined) return undefined
    if (spare.ready && sameSpec(spare.spec, spec)) return spare
    spare.discard()
    return undefined
  }

  private removeLeftovers(): void {
    const paths = this.leftovers
    this.leftovers = []
    for (const path of paths) removeTree(path)
  }

  async close(): Promise<void> {
    await this.queue
    this.spare?.discard()
    this.spare = undefined
    this.removeLeftovers()
    if (this.dir !== undefined) {
      // A few hundred entries usually (what the workspace changed): in-process is faster than rm.
      await removeLargeTree(this.dir, 1000)
      live.delete(this.dir)
    }
    this.dir = undefined
    this.layer = undefined
  }
}
