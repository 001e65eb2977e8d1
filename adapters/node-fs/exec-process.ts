/**
 * Starting a command and waiting for it: output collected up to a cap per stream, a timeout that
 * kills everything the command started, and (for the namespace helper) a status pipe on fd 3 that
 * says whether the set-up before the command worked.
 */
import { spawn } from 'node:child_process'

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
  return new Promise((resolve, reject) => {
    const piped = spec.stdio === 'pipe'
    const stdio: ('ignore' | 'pipe' | 'inherit')[] = piped ? ['ignore', 'pipe', 'pipe'] : ['inherit', 'inherit', 'inherit']
    if (spec.status) stdio.push('pipe')
    // A piped command leads its own session and process group, so the group can be killed. An
    // interactive one must stay in this terminal's session (job control); its PID namespace ends it.
    const child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio, detached: piped })
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
      if (spec.timeout === undefined || timer !== undefined) return
      timer = setTimeout(() => {
        timedOut = true
        kill()
      }, spec.timeout)
    }
    if (statusStream) statusStream.once('data', startTimer)
    else startTimer()
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
  })
}
