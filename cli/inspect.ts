/** The read-only commands: status, log, checkpoints, diff. They open the store without its lock. */
import type { Change } from '../src/diff.js'
import type { Options } from './arguments.js'
import { type Outcome, changeJson, checkpointJson, iso, pathsText, shownPath } from './outcome.js'
import { openProject } from './project.js'
import { EXIT } from './usage.js'
import { type Palette, stdoutPalette } from './terminal.js'

export function changeLines(changes: readonly Change[], withPatch: boolean, paint: Palette = stdoutPalette()): string[] {
  const colour = { added: paint.green, modified: paint.yellow, deleted: paint.red }
  const lines: string[] = []
  for (const change of changes) {
    lines.push(`  ${colour[change.type](change.type.padEnd(8))} ${change.entry.padEnd(7)} ${shownPath(change.path)}`)
    if (withPatch && change.patch) lines.push(...patchLines(change.patch, paint))
  }
  return lines
}

export function patchLines(patch: string, paint: Palette): string[] {
  return patch
    .split('\n')
    .filter((line, index, all) => line !== '' || index < all.length - 1)
    .map((line) => {
      if (line.startsWith('+++') || line.startsWith('---')) return '    ' + paint.bold(line)
      if (line.startsWith('+')) return '    ' + paint.green(line)
      if (line.startsWith('-')) return '    ' + paint.red(line)
      if (line.startsWith('@@')) return '    ' + paint.dim(line)
      return '    ' + line
    })
}

export async function status(options: Options): Promise<Outcome> {
  const { ws, dir, label } = await openProject('status', options, 'read')
  try {
    // Integrity first: status is what one runs on a damaged store, so a change list that cannot be
    // computed (its content is gone) is reported as a problem, not thrown.
    const integrity = await ws.verify()
    let changes: Change[] | undefined
    let unreadable: string | undefined
    try {
      changes = ws.changes()
    } catch (error) {
      unreadable = `the changes cannot be listed: ${(error instanceof Error ? error.message : String(error)).replace(/^rewindfs: /, '')}`
    }
    const checkpoints = ws.checkpoints()
    const loaded = ws.status.loaded
    const warnings = [...ws.status.warnings]
    const brokenCheckpoints = checkpoints.filter((c) => c.broken).map((c) => c.id)
    const problems = [
      ...(ws.status.degraded !== undefined ? [ws.status.degraded] : []),
      ...(unreadable !== undefined ? [unreadable] : []),
      ...(brokenCheckpoints.length > 0 ? [`broken checkpoints (content missing, restore refuses them): ${brokenCheckpoints.join(', ')}`] : []),
      ...(integrity.damagedPaths.length > 0
        ? [`content damaged in the store, reads fail with EIO (write a path again to store its content anew, or delete it): ${pathsText(integrity.damagedPaths)}`]
        : []),
    ]
    const health = {
      ok: problems.length === 0 && warnings.length === 0 && integrity.corrupt.length === 0,
      problems,
      warnings,
      operations: loaded?.operations ?? 0,
      droppedTail: loaded?.droppedTail ?? 0,
      brokenCheckpoints,
      damagedPaths: integrity.damagedPaths,
      blobsVerified: integrity.verified,
      corruptBlobs: integrity.corrupt.length,
    }
    const paint = stdoutPalette()
    const lines = [
      `${paint.bold('project')}     ${dir}`,
      `${paint.bold('store')}       ${label} (session ${ws.session})`,
      `${paint.bold('changes')}     ${changes === undefined ? paint.red('unavailable') : changes.length === 0 ? 'none: the workspace matches the project' : changes.length}`,
      ...changeLines(changes ?? [], false, paint),
      `${paint.bold('checkpoints')} ${checkpoints.length}`,
      `${paint.bold('health')}      ${health.ok ? paint.green('ok') : paint.red('problems')} (${health.operations} operations, ${health.blobsVerified} blobs verified)`,
      ...problems.map((problem) => '  ' + paint.red(problem)),
      ...warnings.map((warning) => '  ' + paint.yellow(warning)),
      ...(health.droppedTail > 0 ? [`  ${paint.yellow(`${health.droppedTail} torn record(s) dropped from the end of the journal`)}`] : []),
    ]
    return {
      data: {
        project: dir,
        store: label,
        session: ws.session,
        changes: changes === undefined ? null : changes.map((c) => changeJson(c, false)),
        checkpoints: checkpoints.length,
        health,
      },
      lines,
      exitCode: health.ok ? EXIT.ok : EXIT.failure,
    }
  } finally {
    await ws.close()
  }
}

export async function log(options: Options): Promise<Outcome> {
  const { ws } = await openProject('log', options, 'read')
  try {
    const operations = ws.history({ ...(options.path !== undefined ? { path: options.path } : {}), ...(options.limit !== undefined ? { limit: options.limit } : {}) })
    const paint = stdoutPalette()
    const data = operations.map((op) => ({
      id: op.id,
      seq: op.seq,
      type: op.type,
      time: iso(op.time),
      session: op.session,
      paths: [...op.paths],
      ...(op.description !== undefined ? { description: op.description } : {}),
      ...(op.group !== undefined ? { group: op.group } : {}),
      ...(op.turn !== undefined ? { turn: op.turn } : {}),
      ...((op as { undone?: boolean }).undone ? { undone: true } : {}),
    }))
    const lines =
      data.length === 0
        ? ['no operations']
        : data.map((op) => {
            const what = `${paint.dim(op.time)} ${paint.bold(op.id)} ${op.type.padEnd(12)} ${pathsText(op.paths)}`
            return `${what}${op.description ? paint.dim(` (${op.description})`) : ''}${op.undone ? paint.yellow(' [undone]') : ''}`
          })
    return { data: { operations: data }, lines }
  } finally {
    await ws.close()
  }
}

export async function checkpoints(options: Options): Promise<Outcome> {
  const { ws } = await openProject('checkpoints', options, 'read')
  try {
    const list = ws.checkpoints()
    const paint = stdoutPalette()
    const lines =
      list.length === 0
        ? ['no checkpoints']
        : list.map((c) => {
            const marks = [c.superseded ? paint.yellow('superseded') : '', c.broken ? paint.red('broken') : ''].filter(Boolean).join(' ')
            return `${paint.dim(iso(c.createdAt))} ${paint.bold(c.id)} ${c.name} ${paint.dim(c.kind)}${c.description ? ` ${c.description}` : ''}${marks ? ' ' + marks : ''}`
          })
    return { data: { checkpoints: list.map(checkpointJson) }, lines }
  } finally {
    await ws.close()
  }
}

export async function diff(options: Options, checkpoint: string | undefined): Promise<Outcome> {
  const { ws } = await openProject('diff', options, 'read')
  try {
    const changes = checkpoint === undefined ? ws.changes() : ws.diff(checkpoint)
    const found = checkpoint === undefined ? undefined : ws.checkpoints().find((c) => c.id === checkpoint || c.name === checkpoint)
    const from = found ? checkpointJson(found) : 'project'
    const lines = changes.length === 0 ? [`no changes since the ${checkpoint === undefined ? 'project on disk' : `checkpoint '${checkpoint}'`}`] : changeLines(changes, options.patch)
    return { data: { from, changes: changes.map((c) => changeJson(c, options.patch)) }, lines }
  } finally {
    await ws.close()
  }
}
