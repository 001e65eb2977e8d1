/**
 * undo_operation: the seed's UndoTool over ws.undo. The seed's types map onto the engine's
 * (config_change by path), and each undone operation reports the line numbers it brings back and
 * takes away, read from the operation's own diff.
 */
import type { Operation } from '../src/engine/journal.js'
import type { UndoResult, Workspace } from '../src/workspace.js'
import { patchLines } from './lines.js'
import { type Budget, fitList, jsonSize } from './budget.js'
import { type HistoryEntry, describe, engineTypes, isConfigPath, isRollback, isoTime, operationSummary, resolvePath, under } from './operations.js'
import { ToolFailure } from './result.js'
import { undoOperationInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

interface Reverted {
  lines_restored: number[]
  lines_removed: number[]
  truncated?: true
}

/** Per file: undo brings back what the operation removed and takes away what it added; `diffed`, the files whose lines it has. */
function reverted(ws: Workspace, operation: Operation): { files: Map<string, Reverted>; diffed: Set<string> } {
  const files = new Map<string, Reverted>()
  const diffed = new Set<string>()
  for (const { path, patch } of ws.operation(operation.id)?.diff ?? []) {
    if (patch !== undefined) diffed.add(path)
    const lines = patch === undefined ? { removed: [], added: [], truncated: false } : patchLines(patch)
    files.set(path, { lines_restored: lines.removed, lines_removed: lines.added, ...(lines.truncated ? { truncated: true as const } : {}) })
  }
  return { files, diffed }
}

/** Operations over more paths than this are reported without per-file line numbers (each would need a diff). */
const DETAILED_PATHS = 20

function undoneEntry(ws: Workspace, operation: Operation) {
  const { undone: _undone, ...summary } = operationSummary(operation)
  if (operation.paths.length > DETAILED_PATHS) return { ...summary, file_path: operation.paths[0] ?? null, files_reverted: operation.paths.length }
  const { files, diffed } = reverted(ws, operation)
  // A file whose lines changed first: a write into new directories lists the directories ahead of it.
  const main = operation.paths.find((path) => diffed.has(path)) ?? operation.paths.find((path) => files.has(path)) ?? [...files.keys()][0] ?? operation.paths[0]
  const others = [...files].filter(([path]) => path !== main)
  return {
    ...summary,
    file_path: main ?? null,
    changes_reverted: files.get(main) ?? { lines_restored: [], lines_removed: [] },
    ...(others.length > 0 ? { other_files: Object.fromEntries(others) } : {}),
  }
}

/** The line a model reads first: what was (or would be) undone, and what was out of reach. */
function summaryLine(undone: readonly Operation[], files: number, dryRun: boolean, asked: number, wall: Operation | undefined): string {
  const verb = dryRun ? 'Would undo' : 'Undid'
  const rollbacks = undone.filter(isRollback)
  const listed = undone.slice(0, 3).map((operation) => `${operation.id} (${describe(operation)})`).join('; ')
  const more = undone.length > 3 ? `; and ${undone.length - 3} more` : ''
  let line =
    rollbacks.length > 0 && rollbacks.length === undone.length
      ? `${verb} the rollback ${listed}${more}: ${files} path(s) ${dryRun ? 'would go' : 'went'} back to how they were just before it.`
      : `${verb} ${undone.length} operation(s): ${listed}${more}; ${files} path(s) ${dryRun ? 'would change' : 'changed'} back.`
  if (dryRun) line += ' Nothing was changed (dry run).'
  if (wall && undone.length < asked) {
    line +=
      ` Asked for ${asked} step(s); older operations are behind the rollback ${wall.id} (${describe(wall)}), which already took them back.` +
      ' To undo that rollback itself, call undo_operation with operation_type "restore".'
  }
  return line
}

export function undoTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'undo_operation',
    'Undo your last operations on the workspace, newest first: all kinds, or only file_edit, file_create, ' +
      'file_delete or config_change (.json/.yaml/.yml/.toml/.ini/.conf/.env files), optionally only on ' +
      'target_files. A rollback (rollback_to_checkpoint) is only undone with operation_type "restore"; other ' +
      'types stop at it, since the operations before it were already taken back. dry_run reports what would be ' +
      'undone. An undo keeps a guard checkpoint first: rolling back to it takes the undo back. The result starts with a summary line. Refuses, naming them, when later operations on the same ' +
      `files depend on the ones selected. Answers within the result budget (${budget.chars} characters).`,
    undoOperationInput,
    async (input) => {
      const targets = input.target_files?.map((path) => resolvePath(ws, path))
      const types = engineTypes(input.operation_type)
      const live = ws.history().filter((operation: HistoryEntry) => !operation.undone)
      // Unless a rollback is what is asked for, the newest live one is a wall: what came before it it already took back.
      const wall = input.operation_type === 'restore' ? undefined : live.find(isRollback)
      const reachable = wall ? live.slice(0, live.indexOf(wall)) : live
      let paths = targets
      if (input.operation_type === 'config_change') {
        // ws.undo selects by path: every config file a reachable operation touched (within the targets).
        const config = new Set(reachable.flatMap((operation) => operation.paths.filter((path) => isConfigPath(path) && (!targets || under(path, targets)))))
        paths = [...config]
      }
      const selects = (operation: Operation) =>
        (!types || types.includes(operation.type)) && (!paths || operation.paths.some((path) => under(path, paths)))
      const candidates = paths && paths.length === 0 ? [] : reachable.filter(selects)
      if (candidates.length === 0) {
        const filter = [input.operation_type !== 'all' ? input.operation_type : '', targets ? `on ${targets.join(', ')}` : ''].filter(Boolean).join(' ')
        const behind = wall
          ? ` since the rollback ${wall.id} (${describe(wall)}); to undo that rollback itself, call undo_operation with operation_type "restore"`
          : ''
        throw new ToolFailure('ENOTHINGTOUNDO', `there is no operation ${filter ? filter + ' ' : ''}left to undo${behind}; operation_history lists what was done`)
      }
      let result: UndoResult
      // The workspace as it is, kept first as a rollback keeps its guard: the undo can be taken back (ws.redo would not outlive the process).
      const guard = input.dry_run ? undefined : await ws.checkpoint({ kind: 'auto', description: 'before undo_operation' })
      try {
        // With at least `steps` candidates after the wall, the newest matching operations are all candidates.
        result = await ws.undo({ steps: Math.min(input.steps, candidates.length), dryRun: input.dry_run, ...(types ? { types } : {}), ...(paths ? { paths } : {}) })
      } catch (error) {
        if (guard) await ws.deleteCheckpoint(guard.id)
        const { code, blocking } = error as { code?: unknown; blocking?: Operation[] }
        if (code !== 'EDEPENDENT' || !blocking) throw error
        const list = blocking
          .slice(0, 10)
          .map((operation) => `${operation.id} (${operation.type} ${operation.paths.slice(0, 3).join(', ')}${operation.paths.length > 3 ? ', …' : ''})`)
          .join('; ')
        throw new ToolFailure(
          'EDEPENDENT',
          `cannot undo that alone: later operations on the same files depend on it: ${list}. ` +
            'Undo those first, or widen the selection (operation_type: "all" or more steps).',
          { blocking: blocking.map((operation) => operation.id) },
        )
      }
      const chosen = new Set(result.undone.map((operation) => operation.id))
      const files = new Set(result.undone.flatMap((operation) => operation.paths))
      const next = reachable.find((operation) => !chosen.has(operation.id) && selects(operation))
      const room = budget.chars - 1500
      const affected = fitList([...files].sort(), Math.floor(room / 3))
      const undone = fitList(result.undone.map((operation) => undoneEntry(ws, operation)), room - jsonSize(affected.shown))
      return {
        summary: summaryLine(result.undone, files.size, input.dry_run, input.steps, wall),
        dry_run: input.dry_run,
        undo_summary: {
          operations_undone: result.undone.length,
          files_affected: affected.shown,
          ...(affected.omitted > 0 ? { files_affected_total: files.size } : {}),
          timestamp: isoTime(Date.now()),
        },
        undone_operations: undone.shown,
        ...(undone.omitted > 0 ? { undone_operations_not_listed: undone.omitted } : {}),
        current_state: result.next ? `reverted_to_${result.next.id}` : 'reverted_to_start',
        next_available_undo: next?.id ?? null,
        ...(result.compensated.length > 0 ? { compensated: result.compensated } : {}),
        ...(result.uncompensated.length > 0 ? { uncompensated: result.uncompensated } : {}),
        ...(guard
          ? { guard_checkpoint: { checkpoint_id: guard.id, name: guard.name }, next_step: `to take this undo back, roll back to checkpoint ${guard.name} (rollback_to_checkpoint)` }
          : {}),
      }
    },
  )
}
