/**
 * When the workspace makes an 'auto' checkpoint before a write: the policy, apart from the
 * Workspace that asks it. Checkpoints come before risky writes, coalesced by burst so that an agent
 * editing ten files in a row makes one checkpoint, not ten, and the list stays worth reading.
 *
 * A burst is a run of writes with no pause longer than `burstGap` (default 60 s) between two of them;
 * a new turn (`beginTurn`) also starts one. Within a burst:
 * - the first overwrite of a lower file gets a checkpoint before it, unless a checkpoint of any kind
 *   (a turn's, a manual one, an earlier automatic one) was already made in the burst: it covers the rest;
 * - deleting or renaming a directory, and recording a side effect, always get one;
 * - any write does when the last checkpoint is older than `interval` (default 30 minutes).
 * Never two for one state: when nothing changed since the last checkpoint, it stands for this one.
 */
import type { OperationType } from './journal.js'

export interface AutoCheckpointOptions {
  /** Checkpoint before high-risk operations (directory deletes and renames, lower overwrites, side effects). Default true. */
  highRisk?: boolean
  /** Checkpoint before any write when the last checkpoint is older than this (ms). Default 30 minutes; 0 turns it off. */
  interval?: number
  /** The pause (ms) that ends a burst of writes; one lower-overwrite checkpoint per burst. Default 60 000; 0: every write is its own burst. */
  burstGap?: number
}

/** What the policy reads from the workspace (asked before every write: its answers allocate nothing). */
export interface AutoCheckpointView<Checkpoint extends { readonly createdAt: number }> {
  isDirectory(path: string): boolean
  /** A file only the lower layer has (a write to it is its first overwrite). */
  isLowerFile(path: string): boolean
  /** The last checkpoint that is not a restore's guard. */
  lastCheckpoint(): Checkpoint | undefined
  /** Whether nothing changed since `checkpoint`. */
  unchangedSince(checkpoint: Checkpoint): boolean
  /** Whether any operation was recorded yet. */
  hasOperations(): boolean
}

const DEFAULT_INTERVAL = 30 * 60_000
const DEFAULT_BURST_GAP = 60_000

export class AutoCheckpoints<Checkpoint extends { readonly createdAt: number }> {
  private burstStart = Number.NEGATIVE_INFINITY
  private lastWrite = Number.NEGATIVE_INFINITY

  constructor(
    private readonly settings: AutoCheckpointOptions | false | undefined,
    private readonly view: AutoCheckpointView<Checkpoint>,
  ) {
    if (settings) {
      for (const key of ['interval', 'burstGap'] as const) {
        const value = settings[key]
        if (value !== undefined && !(typeof value === 'number' && value >= 0)) throw new TypeError(`rewindfs: autoCheckpoint.${key} must be a number of milliseconds, 0 or more; got ${String(value)}`)
      }
    }
  }

  /** A new turn began: the writes after it are a new burst. */
  newBurst(now = Date.now()): void {
    this.burstStart = now
    this.lastWrite = now
  }

  /** Before a mutating operation: why to checkpoint first, or undefined for no checkpoint. */
  before(type: OperationType, paths: readonly string[], now = Date.now()): string | undefined {
    const settings = this.settings
    if (settings === false) return undefined
    const gap = settings?.burstGap ?? DEFAULT_BURST_GAP
    if (gap === 0 || now - this.lastWrite > gap) this.burstStart = now
    this.lastWrite = now
    const last = this.view.lastCheckpoint()
    // Nothing changed since the last checkpoint: it marks this burst's start as well as one made now would.
    if (last !== undefined && this.view.unchangedSince(last)) {
      this.burstStart = Math.min(this.burstStart, last.createdAt)
      return undefined
    }
    const highRisk = settings?.highRisk !== false
    const structural =
      highRisk && (type === 'side_effect' || ((type === 'rmdir' || type === 'file_delete' || type === 'rename') && paths.some((path) => this.view.isDirectory(path))))
    const covered = last !== undefined && last.createdAt >= this.burstStart
    const overwrite = highRisk && !covered && type === 'file_edit' && paths.some((path) => this.view.isLowerFile(path))
    const interval = settings?.interval ?? DEFAULT_INTERVAL
    const stale = interval > 0 && (last === undefined || now - last.createdAt > interval) && this.view.hasOperations()
    if (!structural && !overwrite && !stale) return undefined
    return `before ${type} ${paths.join(', ')}`.trim()
  }
}
