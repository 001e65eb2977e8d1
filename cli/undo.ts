/**
 * `rewindfs undo --dir <project> --store <dir> [--steps <n>] [--dry-run]`: takes back the session's
 * newest operations (a `run`, a `shell` session, an agent's edit) in the workspace, as ws.undo does:
 * the project on disk changes only at flush. An operation later ones depend on is refused
 * (EDEPENDENT) with the blockers named. A checkpoint of the workspace before the undo is made
 * first, as restore makes its guard: the undo is taken back by restoring it in a later process
 * (ws.redo lasts only as long as the process that undid).
 */
import type { Operation } from '../src/index.js'
import type { Options } from './arguments.js'
import { type Json, type Outcome, checkpointJson, iso, pathsText } from './outcome.js'
import { openProject } from './project.js'
import { takeBack } from './change.js'
import { stdoutPalette } from './terminal.js'

function operationJson(op: Operation): { [key: string]: Json | undefined } {
  return { id: op.id, seq: op.seq, type: op.type, time: iso(op.time), paths: [...op.paths], ...(op.description !== undefined ? { description: op.description } : {}) }
}

export async function undo(options: Options): Promise<Outcome> {
  const { ws, dir } = await openProject('undo', options, options.dryRun ? 'read' : 'write')
  try {
    const steps = options.steps ?? 1
    // What it would undo first: a refusal (EDEPENDENT) or nothing to undo makes no checkpoint.
    const preview = await ws.undo({ steps, dryRun: true })
    const undoing = !options.dryRun && preview.undone.length > 0
    const guard = undoing ? await ws.checkpoint({ kind: 'auto', description: `before rewindfs undo of ${preview.undone.map((op) => op.id).join(', ')}` }) : undefined
    const report = undoing ? await ws.undo({ steps }) : preview
    await ws.sync()
    const paint = stdoutPalette()
    const what = options.dryRun ? 'would undo' : 'undid'
    const lines =
      report.undone.length === 0
        ? ['nothing to undo']
        : [
            `${paint.bold(what)} ${report.undone.length} operation(s):`,
            ...report.undone.map((op) => `  ${paint.bold(op.id)} ${op.type.padEnd(12)} ${pathsText(op.paths)}${op.description ? paint.dim(` (${op.description})`) : ''}`),
            ...(report.next ? [paint.dim(`next: ${report.next.id} ${report.next.type} ${pathsText(report.next.paths)}${report.next.description ? ` (${report.next.description})` : ''}`)] : []),
            ...(guard ? [paint.dim(`checkpoint ${guard.id} holds the workspace as it was: ${takeBack(guard.id, dir, options)} takes this undo back`)] : []),
            ...(!options.dryRun ? [paint.dim('the project on disk is unchanged; rewindfs flush writes the workspace into it')] : []),
          ]
    return {
      data: {
        dryRun: options.dryRun,
        undone: report.undone.map(operationJson),
        filesAffected: report.filesAffected,
        ...(report.next ? { next: operationJson(report.next) } : {}),
        ...(guard ? { guard: checkpointJson(guard) } : {}),
      },
      lines,
    }
  } finally {
    await ws.close()
  }
}
