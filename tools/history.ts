/** operation_history: the seed's HistoryTool over ws.history, newest first. */
import type { Workspace } from '../src/workspace.js'
import { type Budget, fitList } from './budget.js'
import { matchesType, operationSummary, resolvePath, toMilliseconds } from './operations.js'
import { operationHistoryInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

export function historyTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'operation_history',
    'List operations on the workspace, newest first, with ids for undo_operation and rollback_to_checkpoint: ' +
      'optionally only those on a path (or under a directory), of one type, or since a time. Undone operations ' +
      'stay listed with undone: true. Each lists its first 10 paths (paths_total counts them all). Answers ' +
      `within the result budget (${budget.chars} characters); has_more and next_offset say where to go on.`,
    operationHistoryInput,
    async (input) => {
      const since = input.since === undefined ? undefined : toMilliseconds(input.since, 'since')
      const operations = ws
        .history({ ...(input.path !== undefined ? { path: resolvePath(ws, input.path) } : {}), ...(since !== undefined ? { since } : {}) })
        .filter((operation) => matchesType(operation, input.operation_type))
      const page = operations.slice(input.offset, input.offset + input.limit).map(operationSummary)
      const { shown } = fitList(page, budget.chars - 200)
      const end = input.offset + shown.length
      return { operations: shown, returned: shown.length, has_more: operations.length > end, ...(operations.length > end ? { next_offset: end } : {}) }
    },
  )
}
