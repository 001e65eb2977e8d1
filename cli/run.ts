/**
 * `rewindfs run --dir <project> [--store <dir>] -- <command…>`: one command in the workspace over
 * the project (overlay mode where the kernel allows it), its changes printed and, with --store,
 * recorded for diff, undo and flush. The project on disk never changes. The exit code is the
 * command's. shell.ts opens an interactive shell the same way. SIGTERM or SIGHUP (a closed
 * terminal) kills the command, removes the temp directory and ends this process by that signal.
 */
import fs from 'node:fs'
import os from 'node:os'
import { directory } from '../adapters/node-fs/directory.js'
import type { ExecOptions, ExecResult, ExecSandbox, Workspace } from '../src/index.js'
import type { Options } from './arguments.js'
import { changeLines } from './inspect.js'
import { pathsText, shellWord, suggestedCommand } from './outcome.js'
import { openWorkspace } from './project.js'
import { storeLabel, storeOptions } from './store-option.js'
import { colourful, palette } from './terminal.js'
import { UsageError } from './usage.js'

/** A workspace over --dir, durable in --store when given (made if missing, its lock taken). */
export async function openForExec(command: string, options: Options): Promise<Workspace> {
  if (options.dir === undefined) throw new UsageError(`${command} needs --dir <project>`)
  const lower = directory(options.dir)
  const { ws } = await openWorkspace(lower, options)
  if (ws.status.degraded !== undefined) {
    await ws.close()
    throw Object.assign(new Error(`${ws.status.degraded}; nothing was run (rewindfs status shows the store's health)`), { code: 'ESTOREUNAVAILABLE' })
  }
  return ws
}

/**
 * The caller's working directory as a workspace path when it lies inside the project: a wrapper
 * keeps it, as time, nice and git bisect run do. Elsewhere (or where it cannot be told) the root.
 */
function callerDirectory(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined
  try {
    const root = fs.realpathSync.native(dir)
    const here = fs.realpathSync.native(process.cwd())
    return here.startsWith(root + '/') ? here.slice(root.length) : undefined
  } catch {
    return undefined
  }
}

/** ws.exec's options from the command line. */
export function execOptions(options: Options, stdio: 'pipe' | 'inherit', label?: string): ExecOptions {
  const cwd = callerDirectory(options.dir)
  return {
    stdio,
    ...(cwd !== undefined ? { cwd } : {}),
    ...(label !== undefined ? { label } : {}),
    ...(options.mode ? { mode: options.mode } : {}),
    sandbox: sandboxOptions(options),
  }
}

/** ws.exec's sandbox from the command line (--no-network, --read-only-host, --writable). */
export function sandboxOptions(options: Options): ExecSandbox {
  const writable = options.writable.map((path) => (path.startsWith('/') || path.startsWith('~') ? path : `${process.cwd()}/${path}`))
  return {
    ...(options.noNetwork ? { network: false } : {}),
    ...(options.readOnlyHost ? { host: 'read-only' as const } : {}),
    ...(writable.length > 0 ? { writable } : {}),
  }
}

/** The words after `--`: one is a shell command line as written; several are quoted into one. */
export function commandLine(words: readonly string[]): string {
  return words.length === 1 ? words[0] : words.map(shellWord).join(' ')
}

/** The summary people see on stderr after the command (stdout stays the command's). */
export function summaryLines(result: ExecResult, recorded: string): string[] {
  const paint = palette(colourful(process.stderr))
  const { added, modified, deleted } = result.changes
  const total = added.length + modified.length + deleted.length
  const entries = [
    ...added.map((path) => ({ path, type: 'added' as const })),
    ...modified.map((path) => ({ path, type: 'modified' as const })),
    ...deleted.map((path) => ({ path, type: 'deleted' as const })),
  ].sort((a, b) => (a.path < b.path ? -1 : 1))
  const shown = entries.slice(0, 50).map((e) => ({ ...e, entry: 'file' as const }))
  return [
    paint.bold(`rewindfs: ${total === 0 ? 'no changes' : `${total} change(s)`}`) + paint.dim(` (${result.mode} mode: ${result.modeReason})`),
    ...changeLines(shown, false, paint).map((line) => line.replace(/ file {4}/, ' ')),
    ...(entries.length > shown.length ? [paint.dim(`  … and ${entries.length - shown.length} more`)] : []),
    ...(result.skipped.length > 0 ? [paint.yellow(`  not kept (FIFOs, sockets, devices, files over the workspace's size limit, names that are not UTF-8 or reserved for the flush): ${pathsText(result.skipped)}`)] : []),
    ...(total > 0 ? [paint.dim(recorded)] : []),
  ]
}

/** Where the command's operation was recorded, and the commands that show it, take it back or flush it, for the same session. */
function recordedIn(store: string, options: Options): string {
  const { options: named, note } = storeOptions(store, options.session)
  const next = suggestedCommand(['diff', 'undo', 'flush'], [], [['dir', options.dir!], ...named])
  return `recorded as one operation in ${storeLabel(store)} (${next}${note ? `; ${note}` : ''})`
}

/** The exit code a shell would give: the command's, or 128 + the signal's number. */
export function exitCodeOf(result: ExecResult): number {
  if (result.exitCode !== null) return result.exitCode
  const number = result.signal ? os.constants.signals[result.signal as NodeJS.Signals] : undefined
  return number !== undefined ? 128 + number : 1
}

/**
 * Runs the command with the terminal handed over (stdin, stdout, stderr), or collected for --json.
 * The terminal's Ctrl-C goes to the command; this process waits for it and records what it did.
 * Told to end (SIGTERM, SIGHUP), it kills the command, records nothing of it, closes the workspace
 * (its temp directory goes) and then ends by the same signal, as the command would have.
 */
export async function runInWorkspace(options: Options, command: string, json: boolean, label?: string): Promise<{ result: ExecResult; lines: string[] }> {
  const ws = await openForExec('run', options)
  const ignore = () => undefined
  const ended = new AbortController()
  const end = (signal: NodeJS.Signals) => ended.abort(signal)
  process.on('SIGINT', ignore)
  process.on('SIGQUIT', ignore)
  process.on('SIGTERM', end)
  process.on('SIGHUP', end)
  try {
    const result = await ws.exec(command, { ...execOptions(options, json ? 'pipe' : 'inherit', label), signal: ended.signal }).catch((error: unknown) => {
      // Refused (a validator, a conflict): the command ran; say so with the error.
      const ran = (error as { result?: ExecResult }).result
      if (ran) Object.assign(error as object, { message: `${(error as Error).message} (the command exited with ${exitCodeOf(ran)}; nothing it did was kept)` })
      throw error
    })
    await ws.sync()
    // A PostgreSQL URL's password never reaches the output; the command shown is pasteable as it is.
    const recorded = options.store === undefined ? 'in memory only: pass --store <dir> to keep it' : recordedIn(options.store, options)
    return { result, lines: summaryLines(result, recorded) }
  } finally {
    process.off('SIGINT', ignore)
    process.off('SIGQUIT', ignore)
    await ws.close()
    process.off('SIGTERM', end)
    process.off('SIGHUP', end)
    // With no listener left, the signal's default action ends this process (128 + its number to a shell).
    if (ended.signal.aborted) process.kill(process.pid, ended.signal.reason as NodeJS.Signals)
  }
}

export async function run(options: Options, words: readonly string[]): Promise<number> {
  const { result, lines } = await runInWorkspace(options, commandLine(words), options.json)
  if (options.json) {
    const { stdout, stderr, exitCode, signal, timedOut, truncated, changes, skipped, mode, modeReason } = result
    process.stdout.write(JSON.stringify({ exitCode, signal, timedOut, stdout, stderr, truncated, changes, skipped, mode, modeReason, stored: options.store !== undefined }, null, 2) + '\n')
  } else for (const line of lines) process.stderr.write(line + '\n')
  return exitCodeOf(result)
}
