/**
 * Runs the rewindfs CLI as a real child process, as a user's shell would. The source is bundled
 * once per test file with esbuild (as the published dist is built from it), since starting tsx for
 * every one of dozens of runs costs seconds each on a small machine. The bundle lives under
 * node_modules/.cache so its dependencies resolve from the repo's node_modules.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SOURCE = path.join(REPO, 'cli/rewindfs.ts')
const OUT = path.join(REPO, 'node_modules/.cache/rewindfs-cli', String(process.pid))

/** The bundled CLI's path; call once (beforeAll), and removeCli() after. */
export let CLI = ''

export async function buildCli(): Promise<string> {
  CLI = path.join(OUT, 'rewindfs.mjs')
  // Split, so the MCP SDK loads only for `mcp`, as in the dist build.
  await build({ entryPoints: { rewindfs: SOURCE }, bundle: true, splitting: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outdir: OUT, outExtension: { '.js': '.mjs' }, logLevel: 'error' })
  return CLI
}

export function removeCli(): void {
  fs.rmSync(OUT, { recursive: true, force: true })
}

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = REPO): CliResult {
  if (!CLI) throw new Error('buildCli() first')
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...env },
    timeout: 60_000,
  })
  if (result.error) throw result.error
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}
