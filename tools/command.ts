/**
 * run_command: a shell command in the workspace (ws.exec), for tests, builds, linters and git. What it
 * changes in the workspace lands as one operation, which undo_operation takes back; its output is cut
 * in the middle to the result budget (the start and the end of a build log are what matter). Only
 * offered when the host enables it, since the command runs on the host and can reach anything there
 * the sandbox (when there is one) leaves open. A host can withdraw a call (an MCP client's
 * cancellation): the command is killed and nothing of it lands.
 */
import type { ExecOptions, ExecResult, Workspace } from '../src/workspace.js'
import { type Budget, cutMiddle, fitPathGroups, jsonSize } from './budget.js'
import { lastSeq, recordedSince, resolvePath } from './operations.js'
import { ToolFailure, toToolError } from './result.js'
import { runCommandInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

/** ws.exec's sandbox options, as the exec runner defines them (none where it has no sandbox). */
export type CommandSandbox = ExecOptions extends { sandbox?: infer S } ? S : never

export interface CommandOptions {
  /** Passed to every ws.exec (network, host access): see ws.exec. */
  sandbox?: CommandSandbox
  /**
   * Asked as each run_command or find_breaking_change call starts: the host's signal for that call
   * (an MCP request's cancellation, the server's shutdown), or undefined. A tool's `run` takes the
   * input alone, so the host answers from its own context of the call (an AsyncLocalStorage).
   * Aborted, the commands running and everything they started are killed, nothing of them lands,
   * and the call fails with ABORT_ERR.
   */
  signal?: () => AbortSignal | undefined
}

/**
 * The input as the schema reads it, refusing a NUL byte where it would reach the process (a command
 * line, an environment cannot carry one), with the field named as for any other input problem.
 */
const commandInput = runCommandInput.superRefine((input, context) => {
  const nul = 'must not contain a NUL byte (a command line and an environment cannot carry one)'
  if (input.command.includes('\0')) context.addIssue({ code: 'custom', path: ['command'], message: nul })
  if (input.cwd?.includes('\0')) context.addIssue({ code: 'custom', path: ['cwd'], message: nul })
  for (const [name, value] of Object.entries(input.env ?? {})) {
    if (name.includes('\0') || value.includes('\0')) context.addIssue({ code: 'custom', path: ['env', name], message: nul })
  }
})

/** Both streams within `chars`: each gets half, and what one does not need goes to the other. */
function outputs(stdout: string, stderr: string, chars: number): { stdout: string; stderr: string; cut: boolean } {
  const half = Math.floor(chars / 2)
  const outRoom = stderr.length < half ? chars - stderr.length : stdout.length < half ? stdout.length : half
  const out = cutMiddle(stdout, outRoom)
  const err = cutMiddle(stderr, chars - out.text.length)
  return { stdout: out.text, stderr: err.text, cut: out.omitted + err.omitted > 0 }
}

export function commandTool(ws: Workspace, budget: Budget, options: CommandOptions): AgentTool {
  return defineTool(
    'run_command',
    'Run a shell command (sh -c) in the workspace: tests, builds, linters, git. It sees the workspace as it ' +
      'is now; the files it creates, changes or deletes there land as one operation (undo_operation takes ' +
      'them all back) and nothing reaches the real project before commit_changes. Returns exit_code, signal, ' +
      'timed_out, stdout, stderr and the paths changed; output is cut in the middle with a marker to fit the ' +
      `result budget (${budget.chars} characters). timeout_ms (default 2 minutes) kills the command and ` +
      'everything it started. Each call starts afresh in cwd (default the working directory): a cd or export does ' +
      'not carry over to the next call, so chain them (cd app && npm test) or pass cwd. Processes it leaves in the ' +
      'background (&, nohup, setsid) are killed when it returns and what they would write later is lost: start a ' +
      'server and use it in the same command. ' +
      'The command runs on the host as this user: outside the workspace it can do what the user can.',
    commandInput,
    async (input) => {
      const mark = lastSeq(ws)
      const signal = options.signal?.()
      const exec = {
        cwd: resolvePath(ws, input.cwd ?? '.'),
        timeout: input.timeout_ms,
        ...(input.env ? { env: input.env } : {}),
        ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
        ...(signal !== undefined ? { signal } : {}),
      } as ExecOptions
      let result: ExecResult
      try {
        result = await ws.exec(input.command, exec)
      } catch (error) {
        if (signal?.aborted && (error as { code?: unknown }).code === 'ABORT_ERR') {
          throw new ToolFailure('ABORT_ERR', 'the call was cancelled: the command was killed with everything it started, and nothing it did was kept')
        }
        const ran = (error as { result?: ExecResult }).result
        if (ran === undefined) throw error
        // It ran, but a validator refused its changes or the workspace changed under it: nothing landed.
        const { code, message } = toToolError(error)
        const output = outputs(ran.stdout, ran.stderr, Math.floor(budget.chars / 2))
        throw new ToolFailure(code, `${message}; the command ran (exit code ${ran.exitCode}) but none of its changes were kept`, {
          exit_code: ran.exitCode,
          stdout: output.stdout,
          stderr: output.stderr,
        })
      }
      const operations = recordedSince(ws, mark)
      const changes = fitPathGroups(result.changes, Math.floor(budget.chars / 5))
      const answer = (chars: number) => {
        const output = outputs(result.stdout, result.stderr, chars)
        return {
          exit_code: result.exitCode,
          signal: result.signal,
          timed_out: result.timedOut,
          stdout: output.stdout,
          stderr: output.stderr,
          truncated: result.truncated || output.cut,
          changes,
          ...(result.skipped.length > 0 ? { skipped: result.skipped.slice(0, 20) } : {}),
          operation_id: operations.at(-1) ?? null,
          mode: result.mode,
          mode_reason: result.modeReason,
        }
      }
      // Escapes (newlines, quotes, control characters) make the JSON longer than the text: shrink by the excess.
      let chars = budget.chars - 600 - jsonSize(changes)
      let shaped = answer(chars)
      for (let excess = jsonSize(shaped) - budget.chars; excess > 0 && chars > 0; excess = jsonSize(shaped) - budget.chars) {
        chars = Math.max(0, chars - excess - 100)
        shaped = answer(chars)
      }
      return shaped
    },
  )
}
