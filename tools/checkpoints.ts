/** manage_checkpoint: the seed's CheckpointTool over ws.checkpoint and friends. */
import type { Checkpoint, Workspace } from '../src/workspace.js'
import { type Budget, fitList } from './budget.js'
import { isoTime } from './operations.js'
import { ToolFailure } from './result.js'
import { manageCheckpointInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

/** A checkpoint by id or name, or a refusal that says where to look. */
export function findCheckpoint(ws: Workspace, idOrName: string): Checkpoint {
  const checkpoints = ws.checkpoints()
  const found = checkpoints.find((c) => c.id === idOrName) ?? checkpoints.find((c) => c.name === idOrName)
  if (!found) throw new ToolFailure('ENOENT', `no checkpoint has the id or name '${idOrName}'; manage_checkpoint with action "list" lists them`)
  return found
}

function summary(checkpoint: Checkpoint) {
  const text = checkpoint.description
  return {
    checkpoint_id: checkpoint.id,
    name: checkpoint.name,
    kind: checkpoint.kind,
    created_at: isoTime(checkpoint.createdAt),
    ...(text !== undefined ? { description: text } : {}),
    ...(checkpoint.superseded ? { superseded: true } : {}),
    ...(checkpoint.broken ? { broken: true } : {}),
  }
}

export function checkpointTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'manage_checkpoint',
    'Checkpoints of the whole workspace (O(1) to create). action: create (checkpoint_name and description ' +
      'optional), list, info (files, lines, last operation), rename (new_name) or delete; delete, info and ' +
      'rename take checkpoint_name as an id or a name. Roll back to one with rollback_to_checkpoint. list ' +
      `answers within the result budget (${budget.chars} characters): the newest that fit, oldest first.`,
    manageCheckpointInput,
    async (input) => {
      switch (input.action) {
        case 'create': {
          // The description is the checkpoint's, stored with it (it survives a restart).
          const checkpoint = await ws.checkpoint({
            ...(input.checkpoint_name !== undefined ? { name: input.checkpoint_name } : {}),
            ...(input.description !== undefined ? { description: input.description } : {}),
          })
          return { action: 'create', checkpoint: summary(checkpoint) }
        }
        case 'list': {
          const checkpoints = ws.checkpoints()
          // The newest matter most: fitted from the end, shown oldest first.
          const { shown, omitted } = fitList(checkpoints.map(summary).reverse(), budget.chars - 200)
          return { action: 'list', count: checkpoints.length, checkpoints: shown.reverse(), ...(omitted > 0 ? { older_not_listed: omitted } : {}) }
        }
        case 'info': {
          const checkpoint = findCheckpoint(ws, input.checkpoint_name!)
          const info = await ws.checkpointInfo(checkpoint.id)
          return {
            action: 'info',
            checkpoint: summary(checkpoint),
            project_state: {
              files_count: info.files,
              total_lines: info.totalLines,
              bytes: info.bytes,
              last_operation: info.lastOperation?.id ?? null,
              changes_since_previous: info.changesSincePrevious,
            },
          }
        }
        case 'rename': {
          const checkpoint = findCheckpoint(ws, input.checkpoint_name!)
          const renamed = await ws.renameCheckpoint(checkpoint.id, input.new_name!)
          return { action: 'rename', previous_name: checkpoint.name, checkpoint: summary(renamed) }
        }
        case 'delete': {
          const checkpoint = findCheckpoint(ws, input.checkpoint_name!)
          await ws.deleteCheckpoint(checkpoint.id)
          return { action: 'delete', deleted: summary(checkpoint) }
        }
      }
    },
  )
}
