/** Runs the rewindfs CLI from source as a real child process (tsx), as a user's shell would. */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const CLI = path.join(REPO, 'cli/rewindfs.ts')

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...env },
    timeout: 60_000,
  })
  if (result.error) throw result.error
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}
