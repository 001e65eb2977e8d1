/**
 * rollback_to_checkpoint: the seed's RollbackTool over ws.restore. A preview (the default) is a
 * dry run with unified diffs; applying makes a guard checkpoint first, so the rollback itself can
 * be rolled back.
 */
import type { Change } from '../src/diff.js'
import type { RestoreOptions, RestoreTarget, Workspace } from '../src/workspace.js'
import { findCheckpoint } from './checkpoints.js'
import { isConfigPath, toMilliseconds } from './operations.js'
import { ToolFailure } from './result.js'
import { rollbackInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

/** Changes listed at most, and characters of each diff shown. */
const CHANGES_LISTED = 200
const DIFF_CHARS = 8000

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

function listed(changes: readonly Change[], withDiffs: boolean) {
  return changes.slice(0, CHANGES_LISTED).map((change) => {
    const patch = withDiffs ? change.patch : undefined
    return {
      path: change.path,
      change: change.type,
      entry: change.entry,
      ...(patch !== undefined ? { diff: patch.length > DIFF_CHARS ? patch.slice(0, DIFF_CHARS) : patch } : {}),
      ...(patch !== undefined && patch.length > DIFF_CHARS ? { diff_truncated: true } : {}),
    }
  })
}

function counts(changes: readonly Change[]) {
  const count = (type: Change['type']) => changes.filter((change) => change.type === type).length
  return { paths: changes.length, added: count('added'), modified: count('modified'), deleted: count('deleted') }
}

export function rollbackTool(ws: Workspace): AgentTool {
  return defineTool(
    'rollback_to_checkpoint',
    'Bring the workspace back to a checkpoint (id or name), a time, or the moment just after an operation. ' +
      'scope: project (everything), files (only include_files), config (only configuration files); ' +
      'exclude_files leaves paths as they are. By default this only previews: it returns each path\'s change ' +
      '(what the rollback does to it) with a unified diff and changes nothing; call again with ' +
      'preview_changes: false to apply. Applying makes a guard checkpoint, so it can be undone.',
    rollbackInput,
    async (input) => {
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
      const summary = { target: label, scope: input.scope, summary: counts(changes), ...(changes.length > CHANGES_LISTED ? { changes_not_listed: changes.length - CHANGES_LISTED } : {}) }
      if (input.preview_changes) {
        return {
          preview: true,
          applied: false,
          ...summary,
          changes: listed(changes, true),
          ...(preview.conflicts.length > 0 ? { conflicts: preview.conflicts } : {}),
          next_step: changes.length > 0 ? 'nothing was changed; call again with preview_changes: false to apply' : 'nothing to roll back: these paths already match',
        }
      }
      if (input.scope === 'config' && changes.length === 0) return { preview: false, applied: false, ...summary, changes: [], next_step: 'nothing to roll back: the configuration files already match' }
      const report = await ws.restore(point, apply)
      return {
        preview: false,
        applied: true,
        ...summary,
        changes: listed(report.changes, false),
        ...(report.guard ? { guard_checkpoint: { checkpoint_id: report.guard.id, name: report.guard.name } } : {}),
        ...(report.compensated.length > 0 ? { compensated: report.compensated } : {}),
        ...(report.uncompensated.length > 0 ? { uncompensated: report.uncompensated } : {}),
        ...(report.guard ? { next_step: `to take this rollback back, roll back to checkpoint ${report.guard.name}` } : {}),
      }
    },
  )
}
