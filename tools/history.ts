/** operation_history: the seed's HistoryTool over ws.history, newest first. */
import type { Workspace } from '../src/workspace.js'
import { matchesType, operationSummary, resolvePath, toMilliseconds } from './operations.js'
import { operationHistoryInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

export function historyTool(ws: Workspace): AgentTool {
  return defineTool(
    'operation_history',
    'List operations on the workspace, newest first, with ids for undo_operation and rollback_to_checkpoint: ' +
      'optionally only those on a path (or under a directory), of one type, or since a time. Undone operations ' +
      'stay listed with undone: true.',
    operationHistoryInput,
    async (input) => {
      const since = input.since === undefined ? undefined : toMilliseconds(input.since, 'since')
      const operations = ws
        .history({ ...(input.path !== undefined ? { path: resolvePath(ws, input.path) } : {}), ...(since !== undefined ? { since } : {}) })
        .filter((operation) => matchesType(operation, input.operation_type))
      const shown = operations.slice(0, input.limit)
      return { operations: shown.map(operationSummary), returned: shown.length, has_more: operations.length > shown.length }
    },
  )
}
