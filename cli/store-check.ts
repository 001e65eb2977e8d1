/**
 * The store's own health commands: `verify` checks a store without opening it for writing (exit 1
 * on any damage), `repair` rebuilds a damaged one through the workspace (ws.repair with salvage),
 * keeping the old journal aside. Damage is never repaired by opening a store: only by this.
 */
import { type StoreVerification, verifyStore } from '../src/engine/verify-store.js'
import type { StoreDamage } from '../src/engine/durability.js'
import type { Options } from './arguments.js'
import { type Outcome, shellWord, suggestedCommand } from './outcome.js'
import { openProject } from './project.js'
import { openStore, storeLabel, storeOptions } from './store-option.js'
import { stdoutPalette } from './terminal.js'
import { EXIT, UsageError } from './usage.js'

function storeOption(command: string, options: Options): string {
  if (options.store === undefined) throw new UsageError(`${command} needs --store <dir> (or postgres://…, pglite:<dir>)`)
  return options.store
}

/**
 * What to do about the damage verify found. Repair rebuilds journals and metadata and sets damaged
 * bytes nothing reads aside; damaged contents something needs it keeps as they are: the user
 * writes the paths that hold them again (the same content replaces a damaged copy) or deletes them.
 */
function advice(report: StoreVerification, options: Options): string {
  // Pasteable as printed: the same store and session, quoted, the password left out (PGPASSWORD).
  const { options: named, note } = storeOptions(options.store!, options.session)
  const suggest = (command: string) =>
    `${suggestedCommand(command, [], named)} --dir ${options.dir !== undefined ? shellWord(options.dir) : '<project>'}${note ? ` (${note})` : ''}`
  const repair = suggest('repair')
  if (report.journal.damagedCount > 0 || report.meta.length > 0) return `nothing was changed; ${repair} keeps what can be kept`
  const { blobs } = report
  if (blobs.corrupt.length + blobs.unreadable.length + blobs.missing.length === 0) {
    return `nothing was changed; nothing the store needs is damaged: ${repair} sets the damaged bytes aside (kept, for inspection)`
  }
  return (
    `nothing was changed; the damaged contents are lost (repair rebuilds journals and metadata, not contents): ` +
    `${suggest('status')} names the paths that read as EIO; one written again after such a read gets its content stored anew`
  )
}

export async function verify(options: Options): Promise<Outcome> {
  const label = storeLabel(storeOption('verify', options))
  const store = await openStore(storeOption('verify', options), { session: options.session, readOnly: true, existing: true })
  try {
    const report = await verifyStore(store)
    const paint = stdoutPalette()
    const { journal, blobs } = report
    const lines = [
      `${paint.bold('store')}       ${label}`,
      `${paint.bold('journal')}     ${journal.records} record(s): ${journal.groups} group commit(s) readable, ${journal.operations} operation(s), ${journal.checkpoints} checkpoint(s)${journal.damagedCount > 0 ? `, ${paint.red(`${journal.damagedCount} damaged`)}` : ''}`,
      `${paint.bold('blobs')}       ${blobs.stored} stored, ${blobs.verified} verified${blobs.corrupt.length > 0 ? `, ${paint.red(`${blobs.corrupt.length} corrupt`)}` : ''}${blobs.missing.length > 0 ? `, ${paint.red(`${blobs.missing.length} missing`)}` : ''}${blobs.unreadable.length > 0 ? `, ${paint.red(`${blobs.unreadable.length} unreadable`)}` : ''}`,
      `${paint.bold('metadata')}    ${report.meta.length === 0 ? 'readable' : paint.red(`${report.meta.length} unreadable`)}`,
      ...(report.kept.length > 0 ? [`${paint.bold('kept aside')}  ${report.kept.join(', ')}`] : []),
      `${paint.bold('health')}      ${report.ok ? paint.green('ok') : paint.red('damaged')}`,
      ...report.problems.map((problem) => '  ' + paint.red(problem)),
      ...report.notes.map((note) => '  ' + paint.yellow(note)),
      ...(report.ok ? [] : [paint.dim(advice(report, options))]),
    ]
    return { data: { store: label, ...report }, lines, exitCode: report.ok ? EXIT.ok : EXIT.failure }
  } finally {
    await store.close?.()
  }
}

export async function repair(options: Options): Promise<Outcome> {
  const label = storeLabel(storeOption('repair', options))
  const { ws } = await openProject('repair', options, options.dryRun ? 'read' : 'write')
  try {
    const report = await ws.repair({ salvage: true, dryRun: options.dryRun })
    const paint = stdoutPalette()
    const { kept } = report
    const describe = (damage: StoreDamage) =>
      damage.part === 'meta' ? `metadata '${damage.key}': ${damage.reason}` : `journal record ${damage.record} at byte ${damage.offset}: ${damage.reason}`
    const bytes = report.damagedBytes.map(
      (entry) => `  ${paint.bold('set aside')}   ${entry.reason.replace(/; they are kept as they are$/, '')}${entry.keptAs ? `: kept as ${entry.keptAs}` : options.dryRun ? '' : ': could not be set aside'}`,
    )
    const lines =
      report.damage.length === 0 && report.damagedBytes.length === 0
        ? [`${paint.bold('nothing to repair')}: the journal and metadata of ${label} are readable`]
        : [
            `${paint.bold(options.dryRun ? 'repair (dry run)' : 'repaired')} ${label} (session ${ws.session})`,
            ...report.damage.map((damage) => `  ${paint.bold('damage')}      ${describe(damage)}`),
            ...(report.damage.length > 0
              ? [`  ${paint.bold('kept')}        ${kept.groups} group commit(s): ${kept.records} record(s), ${kept.operations} operation(s), ${kept.checkpoints} checkpoint(s); ${kept.salvaged} of them after the damage`]
              : []),
            ...bytes,
            ...report.lost.map((lost) => `  ${paint.red('lost')}        record${lost.first === lost.last ? ` ${lost.first}` : `s ${lost.first}..${lost.last}`} (byte ${lost.offset}): ${lost.reason}`),
            ...report.meta.map((meta) => `  ${paint.bold('metadata')}    '${meta.key}' set aside as ${meta.keptAs}${meta.rewritten ? ', written again' : ''}`),
            ...(report.keptAside !== undefined ? [`  ${paint.bold('kept aside')}  ${report.keptAside}: the journal as it was (remove it once you no longer need it)`] : []),
          ]
    if (report.corruptBlobs.length > 0) {
      lines.push(paint.yellow(`${report.corruptBlobs.length} blob(s) fail their checksum and are kept as they are; what needs them stays unreadable (rewindfs status names the paths: a path read, then written again, stores its content anew; or delete them)`))
    }
    return {
      data: { store: label, ...report },
      lines,
      exitCode: report.corruptBlobs.length > 0 ? EXIT.failure : EXIT.ok,
    }
  } finally {
    await ws.close()
  }
}
