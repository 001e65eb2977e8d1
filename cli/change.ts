/** The commands that change something: restore (the workspace) and flush (the project on disk). */
import type { Options } from './arguments.js'
import { changeLines } from './inspect.js'
import { type Outcome, changeJson, checkpointJson } from './outcome.js'
import { openProject } from './project.js'
import { type ProgressBar, progressBar, stdoutPalette } from './terminal.js'

export async function restore(options: Options, checkpoint: string): Promise<Outcome> {
  const { ws } = await openProject('restore', options, options.dryRun ? 'read' : 'write')
  try {
    const target = ws.checkpoints().find((c) => c.id === checkpoint) ?? ws.checkpoints().find((c) => c.name === checkpoint)
    const report = await ws.restore(checkpoint, { dryRun: options.dryRun, force: options.force })
    await ws.sync()
    const paint = stdoutPalette()
    const what = options.dryRun ? 'would revert' : 'reverted'
    const lines = [
      `${paint.bold(options.dryRun ? 'restore (dry run)' : 'restored')} ${target ? `${target.name} (${target.id})` : checkpoint}: ${what} ${report.changes.length} path(s)`,
      ...changeLines(report.changes, options.patch, paint),
      ...(report.guard ? [paint.dim(`guard checkpoint ${report.guard.id}: rewindfs restore ${report.guard.id} takes this back`)] : []),
      ...(report.conflicts.length > 0 ? [paint.yellow(`forced over paths changed in the project since they were read: ${report.conflicts.join(', ')}`)] : []),
      ...(!options.dryRun ? [paint.dim('the project on disk is unchanged; rewindfs flush writes the workspace into it')] : []),
    ]
    return {
      data: {
        applied: report.applied,
        dryRun: options.dryRun,
        ...(target ? { checkpoint: checkpointJson(target) } : {}),
        changes: report.changes.map((c) => changeJson(c, options.patch)),
        conflicts: report.conflicts,
        ...(report.guard ? { guard: checkpointJson(report.guard) } : {}),
      },
      lines,
    }
  } finally {
    await ws.close()
  }
}

export async function flush(options: Options): Promise<Outcome> {
  const { ws, dir } = await openProject('flush', options, options.dryRun ? 'read' : 'write')
  const bar: ProgressBar = options.json ? progressBar({ write: () => true }) : progressBar(process.stderr)
  try {
    const report = await ws.flush(undefined, {
      dryRun: options.dryRun,
      force: options.force,
      onProgress: (progress) => bar.update(progress.done, progress.total, progress.path),
    })
    await ws.sync()
    const paint = stdoutPalette()
    const conflicts = report.conflicts.map((c) => c.path)
    const head = options.dryRun
      ? `${paint.bold('flush (dry run)')}: would write ${report.changes.length} path(s) into ${dir}`
      : `${paint.bold('flushed')} ${report.changes.length} path(s) into ${dir}`
    const lines = [
      report.changes.length === 0 && !options.dryRun ? `nothing to flush: ${dir} already holds the workspace` : head,
      ...changeLines(report.changes, false, paint),
      ...(conflicts.length > 0 && options.dryRun && !options.force ? [paint.yellow(`changed in the project since read (a flush would be refused without --force): ${conflicts.join(', ')}`)] : []),
      ...(conflicts.length > 0 && !options.dryRun ? [paint.yellow(`overwrote paths changed in the project since they were read: ${conflicts.join(', ')}`)] : []),
    ]
    return { data: { applied: report.applied, dryRun: options.dryRun, project: dir, changes: report.changes.map((c) => changeJson(c, false)), conflicts }, lines }
  } finally {
    bar.finish() // before anything else is printed
    await ws.close()
  }
}
