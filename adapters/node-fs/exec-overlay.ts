/**
 * Overlay mode: the command runs in a private mount namespace where kernel overlayfs merges the
 * project directory with the workspace's exec layer (exec-layer.ts) and a fresh upper directory,
 * mounted at the project's own absolute path. Nothing on disk changes; what the command did is
 * exactly the upper directory's contents (exec-readback.ts). The session directory (layer,
 * uppers, work directories) lives under tmpdir for the workspace and is removed on close.
 *
 * A command's helper is started before the layer is brought to the command's state (unshare makes
 * the namespaces meanwhile, and the script waits for its arguments on stdin). A session whose
 * commands come back to back (ws.bisect's probes) keeps the next command's helper started while
 * the current one runs (a spare), and removes a command's upper and work directories while the
 * next one runs: between two commands only the layer's update and the mount remain.
 */
import os from 'node:os'
import { hostFs as fs } from './host-fs.js'
import type { ExecHost } from 'rewindfs'
import type { DirNode } from 'rewindfs/adapter-kit'
import { HELPER_SCRIPT, type HelperArguments, helperArguments, helperRequest } from './exec-helper.js'
import { removeLargeTree, removeTree } from './exec-files.js'
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
      this.dir = fs.mkdtempSync(`${fs.realpathSync(tmpdir ?? os.tmpdir())}/rewindfs-exec-`)
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
      this.layer = new ExecLayer(`${dir}/layer`, this.project, `${dir}/templates`, tools, privileged, xattrPrefix(privileged) + 'opaque')
    }
    const { root: before, writes, lookups } = await this.layer.sync(this.host, this.host.workspace.lower)
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
      const { scan, entries } = launch.discard
        ? { scan: emptyScan(), entries: 0 }
        : await readBack({
            upper,
            before: view,
            project: this.project,
            xattr: xattrPrefix(privileged),
            getfattr: tools.getfattr,
            redirects: privileged,
            owners: privileged,
            maxFileSize: launch.maxFileSize,
            ...(privileged ? { index: `${work}/index` } : {}),
          })
      return { outcome, scan, before, work: { layerWrites: writes, upperEntries: entries, lookups: lookups + view.counters.lookups } }
    } finally {
      this.leftovers.push(upper, work, stash)
      if (!this.backToBack) this.removeLeftovers()
    }
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
