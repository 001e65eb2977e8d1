/** commit_changes: writes the workspace's changes to the real place the host chose (ws.flush). */
import type { FlushTarget } from '../src/flush/target.js'
import type { Workspace } from '../src/workspace.js'
import { commitChangesInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

export function commitTool(ws: Workspace, target: FlushTarget): AgentTool {
  return defineTool(
    'commit_changes',
    `Write every change made in the workspace to the real ${target.kind} (${target.id}), all or nothing. ` +
      'Refuses, listing them, when paths changed there since they were read, unless force is true.',
    commitChangesInput,
    async (input) => {
      const report = await ws.flush(target, input.force !== undefined ? { force: input.force } : {})
      return {
        applied: report.applied,
        target: target.id,
        changes: report.changes.map((change) => ({ path: change.path, change: change.type, entry: change.entry })),
        ...(report.conflicts.length > 0 ? { overwritten_conflicts: report.conflicts.map((conflict) => conflict.path) } : {}),
      }
    },
  )
}
