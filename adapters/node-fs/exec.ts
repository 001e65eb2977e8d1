/**
 * ws.exec's runner for Node: `hostShell()` runs `sh -c command` on this host against a workspace
 * and records everything it created, changed or deleted as one `ws.transaction` labelled
 * `exec: <command>` (validators and the approve hook apply; one undo takes it all back). A
 * `directory(path)` lower carries one, so `ws.exec` works over it without configuration; other
 * lowers get it through `Workspace.open({ exec: hostShell() })`.
 *
 * Overlay mode (Linux, a directory lower) runs the command on kernel overlayfs at the project's own
 * path; copy mode (everything else) in a temporary copy of the view. Both yield the same changes.
 * An aborted `signal` kills the command as the timeout does, and nothing of it is recorded: the
 * caller has withdrawn the call, so no one would learn of the operation.
 */
import os from 'node:os'
import { hostFs as fs, onHost } from './host-fs.js'
import { ConflictError, type ExecHost, type ExecMode, type ExecOptions, type ExecResult, type ExecRunner, type ExecSandbox, type ExecSession, type Workspace } from 'rewindfs'
import { type BisectEngine, type DirNode, FsError, bisectEngine } from 'rewindfs/adapter-kit'
import { DirectorySource } from './directory.js'
import { openedPwd, renameRoot, runCopy } from './exec-copy.js'
import { type Launch, OverlaySession, type Ran, SetupError } from './exec-overlay.js'
import { abortError, withSignal } from './exec-process.js'
import { type Support, support } from './exec-support.js'
import { type Scan, apply } from './exec-tree.js'

export type { ExecMode, ExecOptions, ExecResult, ExecRunner, ExecSandbox } from 'rewindfs'
export { MAX_OUTPUT } from './exec-process.js'

/** Defaults for every command of the workspaces a runner serves; each call's options override them. */
export type ExecDefaults = Pick<ExecOptions, 'mode' | 'sandbox' | 'tmpdir' | 'timeout' | 'env'>

/** Tool caches a read-only host leaves writable by default (those that exist). */
export const DEFAULT_WRITABLE: readonly string[] = ['~/.cache', '~/.npm', '~/.yarn', '~/.local/share/pnpm', '~/.cargo/registry', '~/go/pkg/mod']

function invalid(message: string): TypeError {
  return Object.assign(new TypeError(`rewindfs: exec: ${message}`), { code: 'ERR_INVALID_ARG_VALUE' })
}

/** Node's shape for a system error, with Linux's ENOTSUP (95). */
function unsupported(message: string): Error {
  return Object.assign(new Error(`ENOTSUP: ${message}, exec`), { errno: -95, code: 'ENOTSUP', syscall: 'exec' })
}

/** Text that reaches a process's arguments or environment: spawn refuses a NUL byte there, naming only its own argument's index. */
function checkNoNul(text: string, what: string): void {
  if (text.includes('\0')) throw invalid(`${what} must be a string without null bytes (a command line, path or environment cannot carry one)`)
}

function checkOptions(options: unknown, what = 'options'): asserts options is ExecOptions {
  if (typeof options !== 'object' || options === null) throw invalid(`${what} must be an object`)
  const { cwd, env, timeout, tmpdir, mode, sandbox, stdio, label, discard, signal } = options as ExecOptions
  if (cwd !== undefined && typeof cwd !== 'string') throw invalid('cwd must be a string')
  if (cwd !== undefined) checkNoNul(cwd, 'cwd')
  if (tmpdir !== undefined && typeof tmpdir !== 'string') throw invalid('tmpdir must be a string')
  if (tmpdir !== undefined) checkNoNul(tmpdir, 'tmpdir')
  // As Node's validateAbortSignal: anything with a boolean `aborted` (another realm's AbortSignal too).
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof (signal as { aborted?: unknown }).aborted !== 'boolean' || typeof signal.addEventListener !== 'function')) {
    throw invalid('signal must be an AbortSignal')
  }
  if (label !== undefined && (typeof label !== 'string' || label.trim() === '')) throw invalid('label must be a non-empty string')
  if (discard !== undefined && typeof discard !== 'boolean') throw invalid('discard must be a boolean')
  if (timeout !== undefined && !(typeof timeout === 'number' && timeout > 0 && Number.isFinite(timeout))) throw invalid('timeout must be a positive number of milliseconds')
  if (mode !== undefined && mode !== 'overlay' && mode !== 'copy') throw invalid(`mode must be 'overlay' or 'copy', not ${JSON.stringify(mode)}`)
  if (stdio !== undefined && stdio !== 'pipe' && stdio !== 'inherit') throw invalid(`stdio must be 'pipe' or 'inherit', not ${JSON.stringify(stdio)}`)
  if (env !== undefined) {
    if (typeof env !== 'object' || env === null) throw invalid('env must be an object of strings')
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined && typeof value !== 'string') throw invalid(`env.${name} must be a string or undefined`)
      checkNoNul(name, `env names (${JSON.stringify(name)})`)
      if (value !== undefined) checkNoNul(value, `env.${name}`)
    }
  }
  if (sandbox !== undefined) {
    if (typeof sandbox !== 'object' || sandbox === null) throw invalid('sandbox must be an object ({ network?, host?, writable? })')
    const { network, host, writable } = sandbox
    if (network !== undefined && typeof network !== 'boolean') throw invalid('sandbox.network must be a boolean')
    if (host !== undefined && host !== 'read-write' && host !== 'read-only') throw invalid(`sandbox.host must be 'read-write' or 'read-only', not ${JSON.stringify(host)}`)
    if (writable !== undefined) {
      if (!Array.isArray(writable)) throw invalid('sandbox.writable must be an array of absolute paths')
      for (const path of writable) {
        if (typeof path !== 'string' || !(path.startsWith('/') || path === '~' || path.startsWith('~/'))) throw invalid(`sandbox.writable entries must be absolute paths (or start with ~/), not ${JSON.stringify(path)}`)
        if (path.includes('\n')) throw invalid('sandbox.writable entries cannot contain a newline')
        checkNoNul(path, 'sandbox.writable entries')
      }
    }
  }
}

/** The writable allow-list as existing real host paths. */
function writablePaths(list: readonly string[]): string[] {
  const home = process.env.HOME ?? os.homedir()
  const out = new Set<string>()
  for (const path of list) {
    const expanded = path === '~' ? home : path.startsWith('~/') ? `${home}/${path.slice(2)}` : path
    try {
      const real = fs.realpathSync(expanded)
      if (fs.statSync(real).isDirectory() || fs.statSync(real).isFile()) out.add(real)
    } catch {
      // Not there: nothing to keep writable.
    }
  }
  return [...out]
}

/** A runner for commands on this host (Node), carrying ws.bisect's search. `defaults` apply to every command it runs. */
export function hostShell(defaults: ExecDefaults = {}): ExecRunner {
  checkOptions(defaults, 'hostShell defaults')
  // A signal is one call's: a runner's commands are not all withdrawn at once.
  if ((defaults as ExecOptions).signal !== undefined) throw invalid('hostShell defaults cannot hold a signal (pass it to each ws.exec)')
  // The search's throwaway views run their probes back to back: their sessions keep the next helper
  // started. What the host supports is found out while the search picks its first state.
  const probeViews = new WeakSet<Workspace>()
  const bisector: BisectEngine = {
    bisect: (host, command, options) => {
      support().catch(() => undefined)
      return bisectEngine.bisect({ ...host, view: (name) => addTo(probeViews, host.view(name)) }, command, options)
    },
  }
  return { open: (host) => new HostShellSession(host, defaults, probeViews.has(host.workspace)), bisector }
}

function addTo<T extends object>(set: WeakSet<T>, value: T): T {
  set.add(value)
  return value
}

class HostShellSession implements ExecSession {
  private overlay: OverlaySession | undefined
  /** Why overlay mode failed to set up in this session: later commands go straight to copy mode. */
  private overlayFailed: string | undefined

  constructor(
    private readonly host: ExecHost,
    private readonly defaults: ExecDefaults,
    /** Its commands come back to back (a bisect probe's view). */
    private readonly backToBack: boolean,
  ) {}

  run(command: string, options: ExecOptions): Promise<ExecResult> {
    // Host access throughout: with a mount patched over fs, the lower directory's reads and the
    // workspace's own work still reach the disk (validators and approve hooks run inside too).
    return onHost(() => this.execute(command, options))
  }

  async close(): Promise<void> {
    await this.overlay?.close()
  }

  private async execute(command: string, given: ExecOptions): Promise<ExecResult> {
    if (typeof command !== 'string' || command.trim() === '') throw invalid('the command must be a non-empty string')
    checkNoNul(command, 'the command')
    checkOptions(given)
    const { signal } = given
    if (signal?.aborted) throw abortError(signal)
    // Every process the command's run starts (the helper, a spare taken) is killed when it aborts.
    return withSignal(signal, () => this.executeWith(command, given, signal))
  }

  private async executeWith(command: string, given: ExecOptions, signal: AbortSignal | undefined): Promise<ExecResult> {
    const options: ExecOptions = { ...this.defaults, ...given, env: { ...this.defaults.env, ...given.env }, sandbox: { ...this.defaults.sandbox, ...given.sandbox } }
    const ws = this.host.workspace
    const view = ws.fs
    const cwd = view.realpathSync(options.cwd ?? ws.cwd())
    if (!view.statSync(cwd).isDirectory()) throw new FsError('ENOTDIR', 'exec', options.cwd ?? ws.cwd())

    const host = await support()
    const sandbox: Required<ExecSandbox> = { network: true, host: 'read-write', writable: DEFAULT_WRITABLE, ...options.sandbox }
    const confined = sandbox.network === false || sandbox.host === 'read-only'
    if (confined && host.namespaces !== undefined) {
      throw unsupported(`the sandbox (${[sandbox.network === false ? 'network: false' : '', sandbox.host === 'read-only' ? "host: 'read-only'" : ''].filter(Boolean).join(', ')}) cannot be honoured: ${host.namespaces}`)
    }
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name]
      else env[name] = value
    }
    const launch: Launch = {
      command,
      cwd,
      pwd: '',
      env,
      timeout: options.timeout,
      stdio: options.stdio ?? 'pipe',
      network: sandbox.network !== false,
      readOnlyHost: sandbox.host === 'read-only',
      writable: sandbox.host === 'read-only' ? writablePaths(sandbox.writable) : [],
      discard: options.discard === true,
      maxFileSize: this.host.maxFileSize,
    }

    const { mode, reason } = this.chooseMode(options, host)
    const source = ws.lower.source
    // From here on the command may see the lower directory: what changes there later is not what it saw.
    const started = fileClock(options.tmpdir, this.host.workspace.lower.source)
    let ran: Ran | Omit<Ran, 'work'>
    let modeReason = reason
    try {
      if (mode === 'overlay') {
        const overlay = this.overlay!
        try {
          const below = cwd === '/' ? '' : cwd
          // The process starts at the real path (the mount point); its $PWD names the project as the user gave it.
          ran = await overlay.run({ ...launch, cwd: overlay.project + below, pwd: openedPwd(source, below) }, options.tmpdir)
        } catch (error) {
          // Killed while its namespaces were being set up: an abort, not a host without overlay mode.
          if (!(error instanceof SetupError) || options.mode === 'overlay' || signal?.aborted) throw error
          this.overlayFailed = error.message.replace(/^rewindfs: exec: overlay mode could not be set up: /, '')
          modeReason = `overlay mode could not be set up: ${this.overlayFailed}`
          ran = await runCopy(this.host, host, launch, options.tmpdir)
        }
      } else ran = await runCopy(this.host, host, launch, options.tmpdir)
    } catch (error) {
      if (signal?.aborted) throw abortError(signal)
      throw error
    }
    // Withdrawn before its changes were recorded: none are (once the transaction runs, they land).
    if (signal?.aborted) throw abortError(signal)

    const { status: _status, ...ranOutcome } = ran.outcome
    // The project as the user gave it (directory's opened): a command run over a project opened
    // through a link prints that path, in either mode, as a shell started there on the host does.
    const named = source instanceof DirectorySource ? (text: string) => renameRoot(text, source.root, source.opened) : (text: string) => text
    const outcome = { ...ranOutcome, stdout: named(ranOutcome.stdout), stderr: named(ranOutcome.stderr) }
    const found = ran.scan
    const result: ExecResult = {
      ...outcome,
      changes: { added: found.added, modified: found.modified, deleted: found.deleted },
      skipped: found.skipped,
      mode: 'work' in ran ? 'overlay' : 'copy',
      modeReason,
      ...('work' in ran ? { work: ran.work } : {}),
    }
    try {
      if (found.removals.length + found.edits.length + (found.stash?.length ?? 0) > 0) await record(this.host, ran.before, found, options.label ?? `exec: ${command}`, started)
    } catch (error) {
      throw Object.assign(error as Error, { result })
    }
    if (result.mode === 'overlay') this.overlay?.recorded()
    return result
  }

  private chooseMode(options: ExecOptions, host: Support): { mode: ExecMode; reason: string } {
    const problem = this.overlayProblem(options, host)
    if (options.mode === 'overlay') {
      if (problem !== undefined) throw unsupported(`overlay mode cannot run: ${problem}`)
      return { mode: 'overlay', reason: 'options.mode is overlay' }
    }
    if (options.mode === 'copy') return { mode: 'copy', reason: 'options.mode is copy' }
    if (problem !== undefined) return { mode: 'copy', reason: problem }
    const where = host.privileged ? 'as root, in a mount namespace' : 'in an unprivileged user namespace'
    return { mode: 'overlay', reason: `kernel overlayfs over the lower directory (${where}; ${host.metacopy === undefined ? 'metacopy=on' : `metacopy off: ${host.metacopy}`})` }
  }

  private overlayProblem(options: ExecOptions, host: Support): string | undefined {
    const source = this.host.workspace.lower.source
    if (!(source instanceof DirectorySource)) return `the lower source is ${source.kind === 'directory' ? 'another adapter\'s directory' : `a ${source.kind}`}, not a directory(path): overlay mode needs the project on this host's disk`
    if (this.overlayFailed !== undefined) return `overlay mode could not be set up earlier in this workspace: ${this.overlayFailed}`
    if (host.overlay !== undefined) return host.overlay
    this.overlay ??= new OverlaySession(this.host, host, source.root, this.backToBack)
    return this.overlay.placeProblem(options.tmpdir)
  }
}

const parent = (path: string): string | undefined => (path === '/' ? undefined : path.slice(0, path.lastIndexOf('/')) || '/')

/**
 * The conflict base of a path the command changed whose entry in the lower directory changed while
 * the command ran (a person's edit, a file they made there): a version no lower source reports. What
 * the entry was when the command started is not known (overlay mode shows the project to the command
 * as it is on disk; a copy holds no name the command went on to create), only that it is not what is
 * there now, so a flush finds the path changed (ECONFLICT) whatever the disk holds then, as it does
 * for a path the workspace read before such a change. A path the workspace had seen keeps that base.
 */
const CHANGED_WHILE_RUNNING = 'rewindfs-exec:changed-while-the-command-ran'

/** Time as the kernel stamps files (ns): a file's ctime once the command's view may be taken. */
type FileClock = bigint

/**
 * The host's file clock now: the ctime of a file made for the purpose in the temp directory, so a
 * change made later on this host is stamped no earlier (the kernel stamps files from a coarse clock,
 * up to a tick behind the time Node reads). Never in the project (a temp directory there is refused
 * before the command runs), nor where no file can be made: then the time less a margin for that tick.
 */
function fileClock(tmpdir: string | undefined, source: unknown): FileClock {
  const margin = () => BigInt(Date.now() - 50) * 1_000_000n
  let base: string
  try {
    base = fs.realpathSync(tmpdir ?? os.tmpdir())
  } catch {
    return margin()
  }
  if (source instanceof DirectorySource && (base === source.root || base.startsWith(source.root + '/'))) return margin()
  const path = `${base}/.rewindfs-exec-clock-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  try {
    fs.writeFileSync(path, '', { flag: 'wx' })
  } catch {
    return margin()
  }
  try {
    return fs.lstatSync(path, { bigint: true }).ctimeNs
  } finally {
    // Not rmSync: its first call loads Node's rimraf, which keeps the fs members of that moment (a mount's patch).
    fs.unlinkSync(path)
  }
}

/** Whether a ctime is not older than the clock: a stamp in whole seconds is a file system that keeps no finer (FAT: two). */
function stampedSince(ctimeNs: bigint, clock: FileClock): boolean {
  return ctimeNs + (ctimeNs % 1_000_000_000n === 0n ? 2_000_000_000n : 0n) >= clock
}

/**
 * Conflict bases for the command's paths whose lower entry changed since it started, found from
 * their ctime: one lstat per path the command changed, nothing per project file. Where the entry is
 * as it was (or absent), the transaction's own look at the lower directory finds the version the
 * command started from; in copy mode the copy read every entry it holds through the workspace, so
 * only the names the command made can take a base from here.
 */
function changedWhileRunning(host: ExecHost, paths: Iterable<string>, started: FileClock): Map<string, string> {
  const bases = new Map<string, string>()
  const source = host.workspace.lower.source
  if (!(source instanceof DirectorySource)) return bases
  for (const path of paths) {
    let ctimeNs: bigint | undefined
    try {
      ctimeNs = fs.lstatSync(source.root + (path === '/' ? '' : path), { bigint: true, throwIfNoEntry: false })?.ctimeNs
    } catch {
      continue // not a directory on the way, or not ours to search: no entry the workspace shows there
    }
    if (ctimeNs !== undefined && stampedSince(ctimeNs, started)) bases.set(path, CHANGED_WHILE_RUNNING)
  }
  return bases
}

/**
 * One transaction, refused when the workspace changed a path the command changed since it started.
 * A path whose lower entry changed meanwhile gets a base that makes the next flush a conflict there.
 */
async function record(host: ExecHost, before: DirNode, found: Scan, label: string, started: FileClock): Promise<void> {
  const touched = new Set([...found.added, ...found.modified, ...found.deleted])
  // Filled once the staging has looked at the disk (the commit reads it): a change made on disk
  // before that look is stamped, so it cannot pass for the state the command started from.
  const seen = new Map<string, string>()
  // A path is related to what the command touched when it is one of them, above one or below one.
  const above = new Set<string>()
  for (const path of touched) for (let at = parent(path); at !== undefined && !above.has(at); at = parent(at)) above.add(at)
  const related = (path: string) => {
    for (let at: string | undefined = path; at !== undefined; at = parent(at)) if (touched.has(at)) return true
    return above.has(path)
  }
  await host.workspace.transaction(
    (staged) => {
      const conflicts = host.changed(before, host.tree()).filter(related)
      if (conflicts.length > 0) throw new ConflictError(conflicts)
      apply(staged, found)
      for (const [path, version] of changedWhileRunning(host, touched, started)) seen.set(path, version)
    },
    { label, seen },
  )
}
