/**
 * A lock file holding its owner's pid, for adapters on Node's file system: node-fs's store and
 * flush locks and the Postgres adapter's PGlite data-directory lock are this one. It is created
 * whole (written under a temp name, then hard-linked into place, which fails if the lock exists), so
 * a reader never sees a lock without a pid. A lock whose pid is no longer alive (gone, or a zombie
 * its parent has not reaped yet) is stale and taken over.
 */
import nodeFs from 'node:fs'
import nodePath from 'node:path'

/** The node:fs calls a lock makes: node:fs itself, or a wrapper of it. */
export type LockFs = Pick<typeof nodeFs, 'writeFileSync' | 'linkSync' | 'readFileSync' | 'renameSync' | 'unlinkSync'>

export interface LockFileOptions {
  /** The fs to make the calls through (default node:fs). */
  readonly fs?: LockFs
  /**
   * This machine's name (os.hostname()), written after the pid. Pids are per machine (per
   * container): a lock naming another host cannot be checked here and counts as held.
   */
  readonly host?: string
  /**
   * A lock naming this pid that this process does not hold is a predecessor's that had the same
   * pid (a container restarted), and is taken over. The lock then also names when its process
   * started (Linux's /proc/self/stat), the same in every thread: one that another worker thread of
   * this process holds is held. Without it, a lock naming this pid counts as held by this process.
   */
  readonly predecessors?: boolean
}

/** Who holds a lock: its pid (0 when the file holds none), the host it names and when its process started, if it says. */
export interface LockOwner {
  readonly pid: number
  readonly host?: string
  readonly started?: string
}

let startedHere: string | undefined | null = null

/** When this process started, in clock ticks after boot (the 22nd field of /proc/self/stat); undefined without /proc. */
function processStart(): string | undefined {
  if (startedHere === null) {
    try {
      const stat = nodeFs.readFileSync('/proc/self/stat', 'utf8')
      // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
      const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
      startedHere = start && /^\d+$/.test(start) ? start : undefined
    } catch {
      startedHere = undefined
    }
  }
  return startedHere
}

/** The locks this process holds, by resolved path. */
const held = new Set<string>()
let counter = 0

/** `<file>.tmp-<pid>-<n>`: the pid tells a cleanup whether the temp's maker still lives. */
function tempName(file: string): string {
  return `${file}.tmp-${process.pid}-${(counter++).toString(36)}`
}

function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
}

/**
 * Whether a process with this pid exists (EPERM: it does, under another user) and has not exited.
 * One killed (a crash, SIGKILL) whose parent has not reaped it yet is a zombie: kill(pid, 0) still
 * finds it, but it holds nothing, and a restart right after the crash must not be refused (EBUSY)
 * until its parent gets round to waiting for it.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if (codeOf(error) !== 'EPERM') return false
  }
  return !hasExited(pid)
}

/** How long a check waits for the last threads of a process whose main thread is a zombie to go (see hasExited). */
const THREADS_GO_MS = 1000
const pause = new Int32Array(new SharedArrayBuffer(4))

/** State (field 3) and num_threads (field 20) of /proc/<pid>/stat; undefined where it cannot be read. */
function procState(pid: number): { state: string; threads: number } | undefined {
  let stat: string
  try {
    stat = nodeFs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { state: fields[0], threads: Number(fields[17]) }
}

/**
 * Linux: the process exited and waits to be reaped, its main thread a zombie (state Z, or X while
 * being reaped) with no other thread left. A process killed whole shows Z while its other threads
 * are still on their way out (num_threads above 1 for a moment): waited for, up to THREADS_GO_MS,
 * since a main thread that ended alone (pthread_exit) shows Z too while the rest run on. Where
 * /proc says nothing (none: not Linux; hidepid hiding another user's processes), false: kill's
 * answer stands.
 */
function hasExited(pid: number): boolean {
  let seen = false
  for (let waited = 0; ; waited++) {
    const proc = procState(pid)
    // Gone once seen exiting: reaped meanwhile.
    if (proc === undefined) return seen
    if (proc.state !== 'Z' && proc.state !== 'X') return false
    if (proc.threads <= 1) return true
    if (waited >= THREADS_GO_MS) return false
    seen = true
    Atomics.wait(pause, 0, 0, 1)
  }
}

/** The owner a lock file names; undefined when there is no file. */
function ownerOf(fs: LockFs, file: string): LockOwner | undefined {
  try {
    const [first, host, started] = fs.readFileSync(file, 'utf8').split('\n')
    const pid = Number.parseInt(first, 10)
    return { pid: Number.isSafeInteger(pid) && pid > 0 ? pid : 0, ...(host ? { host } : {}), ...(started ? { started } : {}) }
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  }
}

function removeIfPresent(fs: LockFs, file: string): void {
  try {
    fs.unlinkSync(file)
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
}

export class LockFile {
  private released = false

  private constructor(
    readonly path: string,
    private readonly fs: LockFs,
  ) {}

  /** Takes the lock at `path`, or says who holds it (another process, another host, or this process). */
  static tryAcquire(path: string, options: LockFileOptions = {}): { lock: LockFile } | { owner: LockOwner } {
    const fs = options.fs ?? nodeFs
    const key = nodePath.resolve(path)
    const started = options.predecessors ? processStart() : undefined
    const content = options.host === undefined && started === undefined ? `${process.pid}\n` : `${process.pid}\n${options.host ?? ''}\n${started === undefined ? '' : `${started}\n`}`
    for (let attempt = 0; attempt < 5; attempt++) {
      const temp = tempName(path)
      try {
        fs.writeFileSync(temp, content, { flag: 'wx' })
      } catch (error) {
        // Made but not written (a full disk): nothing of a failed attempt is left behind.
        removeIfPresent(fs, temp)
        throw error
      }
      try {
        fs.linkSync(temp, path)
        held.add(key)
        return { lock: new LockFile(path, fs) }
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error
      } finally {
        removeIfPresent(fs, temp)
      }
      const owner = ownerOf(fs, path)
      if (owner === undefined) continue // released meanwhile: try again
      if (options.host !== undefined && owner.host !== undefined && owner.host !== options.host) return { owner }
      const live = owner.pid === process.pid ? !options.predecessors || held.has(key) || (started !== undefined && owner.started === started) : owner.pid !== 0 && isAlive(owner.pid)
      if (live) return { owner }
      takeOver(fs, path, owner.pid)
    }
    return { owner: ownerOf(fs, path) ?? { pid: 0 } }
  }

  /** Removes the lock if it is still this process's. */
  release(): void {
    if (this.released) return
    this.released = true
    held.delete(nodePath.resolve(this.path))
    if (ownerOf(this.fs, this.path)?.pid === process.pid) removeIfPresent(this.fs, this.path)
  }
}

/**
 * Moves a stale lock aside (`<file>.stale.tmp-<pid>-<n>`); if what was moved turns out to be a fresh
 * lock another process took over meanwhile, it is put back.
 */
function takeOver(fs: LockFs, file: string, stale: number): void {
  const aside = tempName(file + '.stale')
  try {
    fs.renameSync(file, aside)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return
    throw error
  }
  if (ownerOf(fs, aside)?.pid !== stale) {
    try {
      fs.linkSync(aside, file)
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
    }
  }
  removeIfPresent(fs, aside)
}
