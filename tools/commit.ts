/** commit_changes: writes the workspace's changes to the real place the host chose (ws.flush). */
import type { FlushTarget } from '../src/flush/target.js'
import type { Workspace } from '../src/workspace.js'
import { type Budget, fitList } from './budget.js'
import { commitChangesInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

export function commitTool(ws: Workspace, target: FlushTarget, budget: Budget): AgentTool {
  return defineTool(
    'commit_changes',
    `Write every change made in the workspace to the real ${target.kind} (${target.id}), all or nothing. ` +
      'Refuses, listing them, when paths changed there since they were read, unless force is true. Answers ' +
      `within the result budget (${budget.chars} characters): summary counts every change, changes lists the first.`,
    commitChangesInput,
    async (input) => {
      const report = await ws.flush(target, input.force !== undefined ? { force: input.force } : {})
      const count = (type: string) => report.changes.filter((change) => change.type === type).length
      const conflicts = fitList(report.conflicts.map((conflict) => conflict.path), Math.floor(budget.chars / 4))
      const changes = fitList(
        report.changes.map((change) => ({ path: change.path, change: change.type, entry: change.entry })),
        budget.chars - 400 - conflicts.shown.reduce((size, path) => size + path.length + 3, 0),
      )
      return {
        applied: report.applied,
        target: target.id,
        summary: { paths: report.changes.length, added: count('added'), modified: count('modified'), deleted: count('deleted') },
        changes: changes.shown,
        ...(changes.omitted > 0 ? { changes_not_listed: changes.omitted } : {}),
        ...(report.conflicts.length > 0 ? { overwritten_conflicts: conflicts.shown } : {}),
        ...(conflicts.omitted > 0 ? { overwritten_conflicts_not_listed: conflicts.omitted } : {}),
      }
    },
  )
}
