/**
 * undo_operation: the seed's UndoTool over ws.undo. The seed's types map onto the engine's
 * (config_change by path), and each undone operation reports the line numbers it brings back and
 * takes away, read from the operation's own diff.
 */
import type { Operation } from '../src/engine/journal.js'
import type { UndoResult, Workspace } from '../src/workspace.js'
import { patchLines } from './lines.js'
import { type HistoryEntry, engineTypes, isConfigPath, isoTime, operationSummary, resolvePath, under } from './operations.js'
import { ToolFailure } from './result.js'
import { undoOperationInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

interface Reverted {
  lines_restored: number[]
  lines_removed: number[]
  truncated?: true
}

/** Per file: undo brings back what the operation removed and takes away what it added. */
function reverted(ws: Workspace, operation: Operation): Map<string, Reverted> {
  const out = new Map<string, Reverted>()
  for (const { path, patch } of ws.operation(operation.id)?.diff ?? []) {
    const lines = patch === undefined ? { removed: [], added: [], truncated: false } : patchLines(patch)
    out.set(path, { lines_restored: lines.removed, lines_removed: lines.added, ...(lines.truncated ? { truncated: true as const } : {}) })
  }
  return out
}

function undoneEntry(ws: Workspace, operation: Operation) {
  const files = reverted(ws, operation)
  const main = operation.paths.find((path) => files.has(path)) ?? [...files.keys()][0] ?? operation.paths[0]
  const others = [...files].filter(([path]) => path !== main)
  const { undone: _undone, ...summary } = operationSummary(operation)
  return {
    ...summary,
    file_path: main ?? null,
    changes_reverted: files.get(main) ?? { lines_restored: [], lines_removed: [] },
    ...(others.length > 0 ? { other_files: Object.fromEntries(others) } : {}),
  }
}

export function undoTool(ws: Workspace): AgentTool {
  return defineTool(
    'undo_operation',
    'Undo your last operations on the workspace, newest first: all kinds, or only file_edit, file_create, ' +
      'file_delete or config_change (.json/.yaml/.yml/.toml/.ini/.conf/.env files), optionally only on ' +
      'target_files. dry_run reports what would be undone. Refuses, naming them, when later operations ' +
      'on the same files depend on the ones selected.',
    undoOperationInput,
    async (input) => {
      const targets = input.target_files?.map((path) => resolvePath(ws, path))
      const types = engineTypes(input.operation_type)
      const live = ws.history().filter((operation: HistoryEntry) => !operation.undone)
      let paths = targets
      if (input.operation_type === 'config_change') {
        // ws.undo selects by path: every config file a live operation touched (within the targets).
        const config = new Set(live.flatMap((operation) => operation.paths.filter((path) => isConfigPath(path) && (!targets || under(path, targets)))))
        paths = [...config]
      }
      const selects = (operation: Operation) =>
        (!types || types.includes(operation.type)) && (!paths || operation.paths.some((path) => under(path, paths)))
      if ((paths && paths.length === 0) || !live.some(selects)) {
        const filter = [input.operation_type !== 'all' ? input.operation_type : '', targets ? `on ${targets.join(', ')}` : ''].filter(Boolean).join(' ')
        throw new ToolFailure('ENOTHINGTOUNDO', `there is no operation ${filter ? filter + ' ' : ''}left to undo; operation_history lists what was done`)
      }
      let result: UndoResult
      try {
        result = await ws.undo({ steps: input.steps, dryRun: input.dry_run, ...(types ? { types } : {}), ...(paths ? { paths } : {}) })
      } catch (error) {
        const { code, blocking } = error as { code?: unknown; blocking?: Operation[] }
        if (code !== 'EDEPENDENT' || !blocking) throw error
        const list = blocking.map((operation) => `${operation.id} (${operation.type} ${operation.paths.join(', ')})`).join('; ')
        throw new ToolFailure(
          'EDEPENDENT',
          `cannot undo that alone: later operations on the same files depend on it: ${list}. ` +
            'Undo those first, or widen the selection (operation_type: "all" or more steps).',
          { blocking: blocking.map((operation) => operation.id) },
        )
      }
      const chosen = new Set(result.undone.map((operation) => operation.id))
      const undone = result.undone.map((operation) => undoneEntry(ws, operation))
      const files = new Set(undone.flatMap((entry) => [entry.file_path, ...Object.keys(entry.other_files ?? {})].filter((path): path is string => path !== null)))
      const next = live.find((operation) => !chosen.has(operation.id) && selects(operation))
      return {
        dry_run: input.dry_run,
        undo_summary: { operations_undone: undone.length, files_affected: [...files].sort(), timestamp: isoTime(Date.now()) },
        undone_operations: undone,
        current_state: result.next ? `reverted_to_${result.next.id}` : 'reverted_to_start',
        next_available_undo: next?.id ?? null,
        ...(result.compensated.length > 0 ? { compensated: result.compensated } : {}),
        ...(result.uncompensated.length > 0 ? { uncompensated: result.uncompensated } : {}),
      }
    },
  )
}
