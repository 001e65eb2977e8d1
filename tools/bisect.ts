/**
 * find_breaking_change: which of the agent's operations broke a command (the tests, a build). It
 * bisects the workspace's history (ws.bisect): the command runs in throwaway copies of past states,
 * so the workspace is not changed and nothing the probes write is kept. Offered with run_command
 * only, and not marked read-only: the command runs on the host as run_command's does.
 */
import type { BisectState, Workspace } from '../src/index.js'
import type { Budget } from './budget.js'
import { cutText, fitList } from './budget.js'
import type { CommandOptions } from './command.js'
import { operationSummary } from './operations.js'
import { ToolFailure } from './result.js'
import { findBreakingChangeInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

const state = (s: BisectState) => ({ state: s.label, ...(s.operation ? { operation_id: s.operation.id } : {}), ...(s.checkpoint ? { checkpoint: s.checkpoint.name } : {}) })

export function bisectTool(ws: Workspace, budget: Budget, options: CommandOptions): AgentTool {
  return defineTool(
    'find_breaking_change',
    'Find the operation that broke a command (e.g. the tests): bisects the workspace history, running the ' +
      'command (sh -c) in throwaway copies of past states, about log2(operations) runs. The workspace itself ' +
      'is not changed. The command must pass at from_checkpoint (default: the start of the kept history) and ' +
      'fail now; exit 0 means good, 125 cannot be tested (skipped), anything else bad. Returns the first bad ' +
      'operation (undo_operation or rollback_to_checkpoint can take it back) with its diff; several suspects ' +
      'when skipped states leave it open; error EFLAKY when the command gave different answers for one state.',
    findBreakingChangeInput,
    async (input) => {
      if (input.from_checkpoint !== undefined && !ws.checkpoints().some((c) => c.id === input.from_checkpoint || c.name === input.from_checkpoint)) {
        throw new ToolFailure('ENOENT', `no checkpoint '${input.from_checkpoint}' (manage_checkpoint with action list shows them)`)
      }
      const signal = options.signal?.()
      const result = await ws
        .bisect(input.command, {
          timeout: input.timeout_ms,
          ...(input.from_checkpoint !== undefined ? { from: input.from_checkpoint } : {}),
          ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
          ...(signal !== undefined ? { signal } : {}),
        })
        .catch((error: unknown) => {
          if (signal?.aborted && (error as { code?: unknown }).code === 'ABORT_ERR') {
            throw new ToolFailure('ABORT_ERR', 'the call was cancelled: the probes running were killed with everything they started; the workspace is unchanged')
          }
          throw error
        })
      const suspects = fitList(result.suspects.map(operationSummary), Math.floor(budget.chars / 4))
      const probes = result.probes.map((p) => ({ ...state(p.state), verdict: p.verdict, exit_code: p.exitCode, duration_ms: p.durationMs, ...(p.reason ? { reason: p.reason } : {}) }))
      const fitted = fitList(probes, Math.floor(budget.chars / 5))
      const head = {
        first_bad_operation: result.suspects.length === 1 ? operationSummary(result.suspects[0]) : null,
        suspects: suspects.shown,
        ...(suspects.omitted > 0 ? { suspects_not_listed: suspects.omitted } : {}),
        last_good: state(result.lastGood),
        first_bad: state(result.firstBad),
        skipped: result.skipped.slice(0, 10).map((s) => ({ ...state(s.state), reason: s.reason })),
        probes: fitted.shown,
        probe_count: result.probes.length,
      }
      const room = budget.chars - JSON.stringify(head).length - 300
      return { ...head, diff: cutText(result.diff, Math.max(0, room), 'operation_history and read_file show more').text }
    },
  )
}
