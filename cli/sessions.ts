/**
 * `rewindfs sessions --store <postgres://…|pglite:dir>`: every session a shared store holds, most
 * recently active first, with its last activity, checkpoints, size and whether a writer holds it.
 */
import type { Options } from './arguments.js'
import type { Outcome } from './outcome.js'
import { openFleet } from './store-option.js'
import { stdoutPalette } from './terminal.js'
import { UsageError } from './usage.js'

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}

export async function sessions(options: Options): Promise<Outcome> {
  if (options.store === undefined) throw new UsageError('sessions needs --store postgres://… or --store pglite:<dir>')
  const fleet = await openFleet(options.store)
  try {
    const list = await fleet.sessions()
    const storage = await fleet.storage()
    const paint = stdoutPalette()
    const width = Math.max(7, ...list.map((s) => s.session.length))
    const lines =
      list.length === 0
        ? ['no sessions']
        : [
            paint.dim(`${'session'.padEnd(width)}  last activity             checkpoints  journal     blobs`),
            ...list.map((s) => {
              const checkpoints = `${s.checkpoints}${s.lastCheckpoint !== undefined ? ` (${s.lastCheckpoint})` : ''}`
              const marks = [s.writing ? paint.green('writing') : '', s.forkedFrom !== undefined ? paint.dim(`forked from ${s.forkedFrom}${s.forkCheckpoint !== undefined ? ` at ${s.forkCheckpoint}` : ''}`) : '']
                .filter(Boolean)
                .join(' ')
              return `${paint.bold(s.session.padEnd(width))}  ${s.lastActivity.toISOString()}  ${checkpoints.padEnd(11)}  ${size(s.journalBytes).padEnd(10)}  ${s.blobs} (${size(s.blobBytes)})${marks ? '  ' + marks : ''}`
            }),
            paint.dim(`${storage.sessions} session(s); ${storage.blobs} distinct blob(s), ${size(storage.blobBytes)} stored for ${size(storage.referencedBytes)} referenced; ${size(storage.diskBytes)} on disk`),
          ]
    return {
      data: {
        sessions: list.map((s) => ({
          session: s.session,
          lastActivity: s.lastActivity.toISOString(),
          createdAt: s.createdAt.toISOString(),
          checkpoints: s.checkpoints,
          ...(s.lastCheckpoint !== undefined ? { lastCheckpoint: s.lastCheckpoint } : {}),
          records: s.records,
          journalBytes: s.journalBytes,
          blobs: s.blobs,
          blobBytes: s.blobBytes,
          writing: s.writing,
          ...(s.forkedFrom !== undefined ? { forkedFrom: s.forkedFrom } : {}),
          ...(s.forkCheckpoint !== undefined ? { forkCheckpoint: s.forkCheckpoint } : {}),
        })),
        storage: { ...storage },
      },
      lines,
    }
  } finally {
    await fleet.close()
  }
}
