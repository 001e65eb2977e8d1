/**
 * Starting a command and waiting for it: output collected up to a cap per stream, a timeout (or an
 * aborted signal) that kills everything the command started, and (for the namespace helper) a
 * status pipe on fd 3 that says whether the set-up before the command worked. What runs dies with
 * this process too, however it ends: a watcher outside it kills what is still listed when this
 * process's end of a pipe closes.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { type ChildProcess, spawn } from 'node:child_process'

/** Per stream: an agent needs the gist, and a runaway command must not exhaust memory. */
export const MAX_OUTPUT = 16 * 1024 * 1024

/** After the process exits, how long its output pipes may stay open (held by a process that escaped). */
const DRAIN_MS = 1000

export interface ProcessSpec {
  readonly file: string
  readonly args: readonly string[]
  readonly cwd: string
  readonly env: NodeJS.ProcessEnv
  readonly timeout: number | undefined
  /** 'inherit' hands the terminal over (an interactive shell): no new session, output not collected. */
  readonly stdio: 'pipe' | 'inherit'
  /**
   * Open fd 3 as a pipe and collect what is written to it (the helper's set-up report). The timeout
   * then starts when the set-up reports 'ok': it is the command's time, not the namespaces'.
   */
  readonly status: boolean
  /** Told when the status pipe first speaks: the command starts (or the set-up failed). */
  readonly started?: () => void
  /** Aborted: the process is killed as at the timeout. Default: the signal of the ws.exec call this runs for (withSignal). */
  readonly signal?: AbortSignal
}

export interface ProcessOutcome {
  exitCode: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  stdout: string
  stderr: string
  truncated: boolean
  /** What the process wrote on fd 3. */
  status: string
}

/** Node's AbortError: name 'AbortError', code 'ABORT_ERR', the signal's reason as its cause. */
export function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' })
}

/**
 * The signal of the ws.exec call a process starts for. The runners between exec.ts and here
 * (overlay and copy mode) pass options through as they are; the call's async context carries it.
 */
const callSignal = new AsyncLocalStorage<AbortSignal | undefined>()

/** Runs `body` (and what it starts) with `signal` as the signal of every process it starts. */
export function withSignal<T>(signal: AbortSignal | undefined, body: () => T): T {
  return callSignal.run(signal, body)
}

/**
 * The watcher: `sh` reading lines on stdin, `+g<pgid>`/`+p<pid>` when a process group (or a process,
 * one sharing this terminal's group) starts and `-…` when it is gone. At the end of its stdin (this
 * process exited, a SIGKILL included, or closed the pipe) it kills what is still listed. It leads a
 * session of its own, so a terminal's Ctrl-C or hang-up does not end it before it is needed.
 */
const WATCHER_SCRIPT = String.raw`
live=' '
while IFS= read -r line; do
  case $line in
    +*) live="$live%{line#+} " ;;
    -*) id=%{line#-}
        case $live in *" $id "*) live="%{live%%" $id "*} %{live#*" $id "}" ;; esac ;;
  esac
done
for id in $live; do
  case $id in
    g*) kill -s KILL -- "-%{id#g}" 2>/dev/null ;;
    p*) kill -s KILL -- "%{id#p}" 2>/dev/null ;;
  esac
done
`.replaceAll('%{', '${')

/** This thread's watcher (a worker's commands die with the worker), and what it must kill. */
let watcher: ChildProcess | undefined
let watcherFailed = false
const listed = new Set<string>()

function tellWatcher(line: string): void {
  if (watcherFailed) return
  if (watcher === undefined) {
    // Spawned from this thread: its pipe is this thread's, as the processes it guards are. Its name
    // is not a helper's ('rewindfs-exec'): it stays for the life of this process, by design.
    const started = spawn('/bin/sh', ['-c', WATCHER_SCRIPT, 'rewindfs-command-watcher'], { cwd: '/', env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, stdio: ['pipe', 'ignore', 'ignore'], detached: true })
    started.on('error', () => {
      // No /bin/sh to watch with: commands still die at their end and timeout, not with this process.
      watcherFailed = true
      if (watcher === started) watcher = undefined
    })
    started.on('exit', () => {
      // Killed from outside: the next command starts another, told everything still running.
      if (watcher === started) watcher = undefined
    })
    started.stdin!.on('error', () => undefined)
    // It keeps nothing alive: this process may exit, which is what it waits for.
    started.unref()
    ;(started.stdin as { unref?: () => void }).unref?.()
    watcher = started
    if (listed.size > 0) started.stdin!.write([...listed].map((id) => `+${id}\n`).join(''))
  }
  watcher.stdin!.write(line)
}

/** Lists a started process with the watcher until it exits: its group when it leads one, else itself. */
function guard(child: ChildProcess, group: boolean): void {
  if (child.pid === undefined) return
  const id = `${group ? 'g' : 'p'}${child.pid}`
  // Told before it is listed: a watcher started now is told the list, and must not get it twice.
  tellWatcher(`+${id}\n`)
  listed.add(id)
  child.once('exit', () => {
    listed.delete(id)
    tellWatcher(`-${id}\n`)
  })
}

/** Kills the whole process group (the child was made its leader), so nothing it started keeps writing. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // ESRCH: the group is already gone.
  }
}

function killProcess(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // ESRCH: already gone.
  }
}

export function runProcess(spec: ProcessSpec): Promise<ProcessOutcome> {
  const signal = spec.signal ?? callSignal.getStore()
  if (signal?.aborted) return Promise.reject(abortError(signal))
  // Set by the executor, which runs at once (a spawn that throws leaves nothing to kill).
  let kill: () => void = () => undefined
  const outcome = new Promise<ProcessOutcome>((resolve, reject) => {
    const piped = spec.stdio === 'pipe'
    const stdio: ('ignore' | 'pipe' | 'inherit')[] = piped ? ['ignore', 'pipe', 'pipe'] : ['inherit', 'inherit', 'inherit']
    if (spec.status) stdio.push('pipe')
    // A piped command leads its own session and process group, so the group can be killed. An
    // interactive one must stay in this terminal's session (job control); its PID namespace ends it.
    const child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio, detached: piped })
    kill = watch(child, spec, () => spec.timeout, resolve, reject)
    // After watch: at the exit its group is killed first, then struck off the list.
    guard(child, piped)
  })
  killOnAbort(signal, kill, outcome)
  return outcome
}

/** Kills when `signal` aborts, until `settled` settles (a long-lived signal keeps no listener of a finished process). */
function killOnAbort(signal: AbortSignal | undefined, kill: () => void, settled: Promise<unknown>): void {
  if (signal === undefined) return
  if (signal.aborted) return kill()
  signal.addEventListener('abort', kill, { once: true })
  const off = () => signal.removeEventListener('abort', kill)
  settled.then(off, off)
}

/** What a spare is started with: its program, arguments and environment are fixed then. */
export type SpareSpec = Pick<ProcessSpec, 'file' | 'args' | 'cwd' | 'env'>

/**
 * A process started before its command is known, which waits for its request on stdin (the
 * namespace helper started ahead: HELPER_SCRIPT without arguments). Its output is piped and its
 * status read on fd 3, as runProcess with `status`. While it waits it keeps nothing alive: this
 * process may exit, which ends its stdin and so the spare.
 */
export class SpareProcess {
  private readonly child: ChildProcess
  private readonly outcome: Promise<ProcessOutcome>
  private readonly kill: () => void
  private timeout: number | undefined
  private started: (() => void) | undefined
  private ended = false
  private taken = false

  constructor(readonly spec: SpareSpec) {
    this.child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true })
    // A spare that died before its request reports it in its outcome; a write to it must not throw.
    this.child.stdin!.on('error', () => undefined)
    let kill: () => void = () => undefined
    this.outcome = new Promise((resolve, reject) => (kill = watch(this.child, { stdio: 'pipe', status: true, started: () => this.started?.() }, () => this.timeout, resolve, reject)))
    this.kill = kill
    guard(this.child, true)
    this.outcome.then(
      () => (this.ended = true),
      () => (this.ended = true),
    )
    this.setRef(false)
  }

  /** Whether it can still take a request (started, not ended, not used). */
  get ready(): boolean {
    return !this.ended && !this.taken && this.child.exitCode === null && this.child.signalCode === null
  }

  /**
   * Sends the request (the end of stdin ends it) and waits as runProcess does; the timeout starts
   * when the status says so. `signal` (default: the ws.exec call's) kills it when aborted.
   */
  run(request: string, timeout: number | undefined, started?: () => void, signal: AbortSignal | undefined = callSignal.getStore()): Promise<ProcessOutcome> {
    if (this.taken) throw new Error('rewindfs: exec: a spare process runs one request')
    if (signal?.aborted) {
      this.discard()
      return Promise.reject(abortError(signal))
    }
    this.taken = true
    this.timeout = timeout
    this.started = started
    this.setRef(true)
    this.child.stdin!.end(request)
    killOnAbort(signal, this.kill, this.outcome)
    return this.outcome
  }

  /** Ends it unused: the end of stdin lets it exit by itself; a kill makes sure. */
  discard(): void {
    if (this.taken) return
    this.taken = true
    this.child.stdin!.end()
    killGroup(this.child.pid)
  }

  private setRef(on: boolean): void {
    for (const stream of this.child.stdio) {
      const handle = stream as { ref?: () => void; unref?: () => void } | null
      if (on) handle?.ref?.()
      else handle?.unref?.()
    }
    if (on) this.child.ref()
    else this.child.unref()
  }
}

/**
 * Collects a started process's output, kills it (and all it started) when its timeout runs out,
 * and settles when it has exited and its pipes are drained. `timeout` is read when the timer
 * starts: at the first status output (when `started` is told too), or at once without a status pipe.
 * Returns the kill, for an aborted signal (any time, the set-up included).
 */
function watch(
  child: ChildProcess,
  spec: Pick<ProcessSpec, 'stdio' | 'status' | 'started'>,
  timeout: () => number | undefined,
  resolve: (outcome: ProcessOutcome) => void,
  reject: (error: Error) => void,
): () => void {
  const piped = spec.stdio === 'pipe'
  let truncated = false
  const collect = (stream: NodeJS.ReadableStream | null | undefined, cap: number) => {
    const chunks: Buffer[] = []
    let size = 0
    stream?.on('data', (chunk: Buffer) => {
      if (size + chunk.length > cap) {
        truncated = true
        chunk = chunk.subarray(0, Math.max(0, cap - size))
      }
      size += chunk.length
      if (chunk.length > 0) chunks.push(chunk)
    })
    return () => Buffer.concat(chunks).toString('utf8')
  }
  const stdout = collect(child.stdout, MAX_OUTPUT)
  const stderr = collect(child.stderr, MAX_OUTPUT)
  const statusStream = spec.status ? (child.stdio[3] as NodeJS.ReadableStream) : undefined
  const status = collect(statusStream, 64 * 1024)
  const kill = () => (piped ? killGroup(child.pid) : killProcess(child.pid))
  let timedOut = false
  let timer: NodeJS.Timeout | undefined
  const startTimer = () => {
    const ms = timeout()
    if (ms === undefined || timer !== undefined) return
    timer = setTimeout(() => {
      timedOut = true
      kill()
    }, ms)
  }
  if (statusStream) {
    statusStream.once('data', () => {
      startTimer()
      spec.started?.()
    })
  } else startTimer()
  child.on('error', (error) => {
    clearTimeout(timer)
    reject(error)
  })
  child.on('exit', (exitCode, signal) => {
    clearTimeout(timer)
    // Background processes would keep writing into what is about to be read back.
    if (piped) killGroup(child.pid)
    let done = false
    const finish = () => {
      if (done) return
      done = true
      resolve({ exitCode, signal, timedOut, stdout: stdout(), stderr: stderr(), truncated: truncated, status: status() })
    }
    const drained = setTimeout(() => {
      for (const stream of child.stdio) stream?.destroy()
      finish()
    }, DRAIN_MS)
    child.on('close', () => {
      clearTimeout(drained)
      finish()
    })
  })
  return kill
}
