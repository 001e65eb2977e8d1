/** The commands that change something: restore (the workspace) and flush (the project on disk). */
import type { Change } from '../src/diff.js'
import { normalize } from '../src/path.js'
import type { Options } from './arguments.js'
import { changeLines, patchLines } from './inspect.js'
import { type Json, type Outcome, changeJson, checkpointJson, suggestedCommand } from './outcome.js'
import { openProject } from './project.js'
import { storeOptions } from './store-option.js'
import { type Palette, type ProgressBar, progressBar, stdoutPalette } from './terminal.js'
import { UsageError } from './usage.js'

/** Diff lines restore --patch prints by default: enough to read, where a whole library's diff ran to 5 MB. */
export const PATCH_LINES = 400

/** Each change's patch cut so that all of them together keep to `limit` lines; what was cut, per change. */
function cutPatches(changes: readonly Change[], limit: number): { patches: Map<Change, { text: string; cut: number }>; cut: number } {
  const patches = new Map<Change, { text: string; cut: number }>()
  let left = limit
  let cut = 0
  for (const change of changes) {
    const patch = change.patch
    if (patch === undefined) continue
    const lines = patch.split('\n')
    if (lines[lines.length - 1] === '') lines.pop()
    const shown = lines.slice(0, Math.max(0, left))
    left -= shown.length
    cut += lines.length - shown.length
    patches.set(change, { text: shown.length > 0 ? shown.join('\n') + '\n' : '', cut: lines.length - shown.length })
  }
  return { patches, cut }
}

function restoreLines(changes: readonly Change[], patches: Map<Change, { text: string; cut: number }> | undefined, paint: Palette): string[] {
  if (!patches) return changeLines(changes, false, paint)
  return changes.flatMap((change) => {
    const patch = patches.get(change)
    return [
      ...changeLines([change], false, paint),
      ...(patch && patch.text ? patchLines(patch.text, paint) : []),
      ...(patch && patch.cut > 0 ? [paint.dim(`    … ${patch.cut} more diff line(s)`)] : []),
    ]
  })
}

export async function restore(options: Options, checkpoint: string): Promise<Outcome> {
  if (options.path !== undefined && !options.dryRun) throw new UsageError('restore: --path narrows what a dry run shows (with --dry-run); a restore brings back every path')
  if (options.limit !== undefined && !options.patch) throw new UsageError('restore: --limit sets how many diff lines --patch shows; add --patch')
  const { ws, dir } = await openProject('restore', options, options.dryRun ? 'read' : 'write')
  try {
    const target = ws.checkpoints().find((c) => c.id === checkpoint) ?? ws.checkpoints().find((c) => c.name === checkpoint)
    const report = await ws.restore(checkpoint, { dryRun: options.dryRun, force: options.force })
    await ws.sync()
    const paint = stdoutPalette()
    const what = options.dryRun ? 'would revert' : 'reverted'
    const under = options.path === undefined ? undefined : normalize('/' + options.path)
    const shown = under === undefined ? report.changes : report.changes.filter((c) => c.path === under || under === '/' || c.path.startsWith(under + '/'))
    const { patches, cut } = options.patch ? cutPatches(shown, options.limit ?? PATCH_LINES) : { patches: undefined, cut: 0 }
    const changeData = (change: Change): { [key: string]: Json | undefined } => {
      const patch = patches?.get(change)
      return { ...changeJson(change, false), ...(patch ? { patch: patch.text } : {}), ...(patch && patch.cut > 0 ? { patchLinesCut: patch.cut } : {}) }
    }
    const lines = [
      `${paint.bold(options.dryRun ? 'restore (dry run)' : 'restored')} ${target ? `${target.name} (${target.id})` : checkpoint}: ${what} ${report.changes.length} path(s)` +
        (under !== undefined ? `, ${shown.length} under ${under}` : ''),
      ...restoreLines(shown, patches, paint),
      ...(cut > 0
        ? [paint.dim(`${cut} diff line(s) not shown (at most ${options.limit ?? PATCH_LINES}): --limit <lines> shows more, --path <path> only what is under a path`)]
        : []),
      ...(report.guard ? [paint.dim(`guard checkpoint ${report.guard.id}: ${takeBack(report.guard.id, dir, options)} takes this back`)] : []),
      ...(report.conflicts.length > 0 ? [paint.yellow(`forced over paths changed in the project since they were read: ${report.conflicts.join(', ')}`)] : []),
      ...(!options.dryRun ? [paint.dim('the project on disk is unchanged; rewindfs flush writes the workspace into it')] : []),
    ]
    return {
      data: {
        applied: report.applied,
        dryRun: options.dryRun,
        ...(target ? { checkpoint: checkpointJson(target) } : {}),
        changes: shown.map(changeData),
        ...(cut > 0 ? { patchLinesCut: cut } : {}),
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
    const changedInTarget = (report.changedInTarget ?? []).map((c) => c.path)
    const head = options.dryRun
      ? `${paint.bold('flush (dry run)')}: would write ${report.changes.length} path(s) into ${dir}`
      : `${paint.bold('flushed')} ${report.changes.length} path(s) into ${dir}`
    const lines = [
      report.changes.length === 0 && !options.dryRun ? `nothing to flush: ${dir} already holds the workspace` : head,
      ...changeLines(report.changes, false, paint),
      ...(conflicts.length > 0 && options.dryRun && !options.force ? [paint.yellow(`changed in the project since read (a flush would be refused without --force): ${conflicts.join(', ')}`)] : []),
      ...(conflicts.length > 0 && !options.dryRun ? [paint.yellow(`overwrote paths changed in the project since they were read: ${conflicts.join(', ')}`)] : []),
      // Someone else's edit of what we flushed: the workspace still shows our version, and a flush leaves theirs alone.
      ...(changedInTarget.length > 0 ? [paint.yellow(`changed in the project since flushed (kept there; the workspace still shows what it flushed): ${changedInTarget.join(', ')}`)] : []),
    ]
    return { data: { applied: report.applied, dryRun: options.dryRun, project: dir, changes: report.changes.map((c) => changeJson(c, false)), conflicts, ...(options.dryRun ? { changedInTarget } : {}) }, lines }
  } finally {
    bar.finish() // before anything else is printed
    await ws.close()
  }
}

/** `rewindfs restore <checkpoint>` for the same project, store and session, pasteable as printed (the store's password left out). */
export function takeBack(checkpoint: string, dir: string, options: Options): string {
  const { options: named, note } = storeOptions(options.store!, options.session)
  return suggestedCommand('restore', [checkpoint], [['dir', dir], ...named]) + (note ? ` (${note})` : '')
}
