/**
 * Running exec scenarios as the unprivileged test user that scripts/provision-exec-user.sh makes:
 * `runuser -u rewindfs-exec -- node --import tsx test/support/exec-user.ts name…`, one process for
 * all of them, its JSON answer parsed.
 */
import { execFileSync, spawn } from 'node:child_process'
import os from 'node:os'

export const EXEC_USER = 'rewindfs-exec'

/** Why the scenarios cannot run as the unprivileged user, if they cannot. */
export function userProblem(): string | undefined {
  if (process.getuid?.() !== 0) return 'this process is not root (it cannot switch users; the in-process run is already unprivileged)'
  try {
    execFileSync('id', ['-u', EXEC_USER], { stdio: 'ignore' })
  } catch {
    return `the user ${EXEC_USER} does not exist (run scripts/provision-exec-user.sh as root)`
  }
  // The scenarios run from this checkout: the user must be able to read it and its node_modules.
  const script = new URL('exec-user.ts', import.meta.url).pathname
  try {
    execFileSync('runuser', ['-u', EXEC_USER, '--', 'test', '-r', script], { stdio: 'ignore' })
  } catch {
    return `${EXEC_USER} cannot read ${script} (the checkout must be readable by other users)`
  }
  return undefined
}

/** Runs scenarios as the unprivileged user in one process; resolves to name → observation. */
export function runAsUser(names: readonly string[], env: Record<string, string> = {}): Promise<Record<string, { value?: unknown; error?: string }>> {
  const home = execFileSync('sh', ['-c', `getent passwd ${EXEC_USER} | cut -d: -f6`], { encoding: 'utf8' }).trim()
  return new Promise((resolve, reject) => {
    const child = spawn('runuser', ['-u', EXEC_USER, '--', process.execPath, '--import', 'tsx', 'test/support/exec-user.ts', ...names], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: os.tmpdir(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (status, signal) => {
      if (status !== 0) reject(new Error(`the scenarios as ${EXEC_USER} failed (status ${status}, ${signal ?? 'no signal'}): ${stderr}`))
      else resolve(JSON.parse(stdout) as Record<string, { value?: unknown; error?: string }>)
    })
  })
}
