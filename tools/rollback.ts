/**
 * rollback_to_checkpoint: the seed's RollbackTool over ws.restore. A preview (the default) is a
 * dry run with unified diffs; applying makes a guard checkpoint first, so the rollback itself can
 * be rolled back.
 */
import type { Change } from '../src/diff.js'
import type { RestoreOptions, RestoreTarget, Workspace } from '../src/workspace.js'
import { findCheckpoint } from './checkpoints.js'
import { type Budget, Room } from './budget.js'
import { isConfigPath, resolvePath, toMilliseconds, under } from './operations.js'
import { ToolFailure } from './result.js'
import { rollbackInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

/** The most of one diff shown in a preview; each gets a third of what is left of the budget, up to this. */
const DIFF_MAX_CHARS = 4000

/** An exact path as a glob of the engine's matcher (braces quote the special characters). */
function literalGlob(path: string): string {
  return path.replace(/[*?{]/g, (c) => `{${c}}`)
}

function target(ws: Workspace, input: { checkpoint_id?: string; timestamp?: string | number; operation_id?: string }): { target: RestoreTarget; label: string } {
  if (input.checkpoint_id !== undefined) {
    const checkpoint = findCheckpoint(ws, input.checkpoint_id)
    return { target: checkpoint.id, label: `checkpoint ${checkpoint.name} (${checkpoint.id})` }
  }
  if (input.operation_id !== undefined) {
    if (!ws.history().some((operation) => operation.id === input.operation_id)) {
      throw new ToolFailure('ENOENT', `no operation has the id '${input.operation_id}'; operation_history lists them`)
    }
    return { target: { operation: input.operation_id }, label: `just after operation ${input.operation_id}` }
  }
  const time = toMilliseconds(input.timestamp!, 'target.timestamp')
  return { target: { time }, label: `the state at ${new Date(time).toISOString()}` }
}

/**
 * The changes from `offset` that fit in `room`, each diff (from `diffOffset`) cut to its share with
 * a marker saying how to read on. Stops at the first change that does not fit.
 */
function listed(changes: readonly Change[], room: Room, options: { diffs: boolean; offset: number; diffOffset: number }) {
  const out: { path: string; change: Change['type']; entry: Change['entry']; diff?: string; diff_truncated?: { shown_from: number; total_chars: number; next_diff_offset: number } }[] = []
  for (const change of changes.slice(options.offset)) {
    const item: (typeof out)[number] = { path: change.path, change: change.type, entry: change.entry }
    const patch = options.diffs ? change.patch : undefined
    if (patch !== undefined) {
      const share = Math.max(100, Math.min(DIFF_MAX_CHARS, Math.floor(room.left / 3)))
      const rest = patch.slice(options.diffOffset)
      if (rest.length <= share) item.diff = rest
      else {
        item.diff = rest.slice(0, share) + `\n… [diff cut: ${rest.length - share} more characters; preview again with path: '${change.path}' and diff_offset: ${options.diffOffset + share}]`
        item.diff_truncated = { shown_from: options.diffOffset, total_chars: patch.length, next_diff_offset: options.diffOffset + share }
      }
    }
    if (!room.take(item)) break
    out.push(item)
  }
  return out
}

function counts(changes: readonly Change[]) {
  const count = (type: Change['type']) => changes.filter((change) => change.type === type).length
  return { paths: changes.length, added: count('added'), modified: count('modified'), deleted: count('deleted') }
}

export function rollbackTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'rollback_to_checkpoint',
    'Bring the workspace back to a checkpoint (id or name), a time, or the moment just after an operation. ' +
      'scope: project (everything), files (only include_files), config (only configuration files); ' +
      'exclude_files leaves paths as they are. By default this only previews: it returns each path\'s change ' +
      '(what the rollback does to it) with a unified diff and changes nothing; call again with ' +
      'preview_changes: false to apply. Applying makes a guard checkpoint, so it can be undone. Answers within ' +
      `the result budget (${budget.chars} characters): a preview lists the changes that fit, each diff cut with a ` +
      'marker; page on with offset (next_offset), or read one path\'s whole diff with path and diff_offset.',
    rollbackInput,
    async (input) => {
      const paging = input.path !== undefined || input.offset > 0 || input.diff_offset > 0
      if (paging && !input.preview_changes) {
        throw new ToolFailure(
          'EINVALIDINPUT',
          'path, offset and diff_offset page through a preview and do not limit what is applied; to roll back only some paths use scope "files" with include_files',
        )
      }
      const { target: point, label } = target(ws, input.target)
      if (input.scope === 'files' && !input.include_files?.length) {
        throw new ToolFailure('EINVALIDINPUT', 'scope "files" needs include_files (globs of the paths to roll back)')
      }
      const filters: RestoreOptions = {
        ...(input.include_files ? { include: input.include_files } : {}),
        ...(input.exclude_files ? { exclude: input.exclude_files } : {}),
      }
      const preview = await ws.restore(point, { ...filters, dryRun: true })
      let changes = preview.changes
      let apply = filters
      if (input.scope === 'config') {
        // The engine's filter is a union of globs: the config files are picked here and named exactly.
        changes = changes.filter((change) => change.entry !== 'dir' && isConfigPath(change.path))
        apply = { include: changes.map((change) => literalGlob(change.path)) }
      }
      const summary = { target: label, scope: input.scope, summary: counts(changes) }
      const room = new Room(budget.chars - 700)
      if (input.preview_changes) {
        const view = input.path !== undefined ? changes.filter((change) => under(change.path, [resolvePath(ws, input.path!)])) : changes
        const shown = listed(view, room, { diffs: true, offset: input.offset, diffOffset: input.diff_offset })
        const end = input.offset + shown.length
        return {
          preview: true,
          applied: false,
          ...summary,
          changes: shown,
          ...(end < view.length ? { changes_not_listed: view.length - end, next_offset: end } : {}),
          ...(preview.conflicts.length > 0 ? { conflicts: preview.conflicts.slice(0, 50) } : {}),
          next_step: changes.length > 0 ? 'nothing was changed; call again with preview_changes: false to apply' : 'nothing to roll back: these paths already match',
        }
      }
      if (input.scope === 'config' && changes.length === 0) return { preview: false, applied: false, ...summary, changes: [], next_step: 'nothing to roll back: the configuration files already match' }
      const report = await ws.restore(point, apply)
      const shown = listed(report.changes, room, { diffs: false, offset: 0, diffOffset: 0 })
      return {
        preview: false,
        applied: true,
        ...summary,
        changes: shown,
        ...(shown.length < report.changes.length ? { changes_not_listed: report.changes.length - shown.length } : {}),
        ...(report.guard ? { guard_checkpoint: { checkpoint_id: report.guard.id, name: report.guard.name } } : {}),
        ...(report.compensated.length > 0 ? { compensated: report.compensated } : {}),
        ...(report.uncompensated.length > 0 ? { uncompensated: report.uncompensated } : {}),
        ...(report.guard
          ? { next_step: `to take this rollback back, undo_operation with operation_type "restore", or roll back to checkpoint ${report.guard.name}` }
          : {}),
      }
    },
  )
}
