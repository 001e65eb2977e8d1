/**
 * The workspace's side of flushing (the algorithm is in src/flush/): which targets a flush goes
 * to, the flush ledgers and pins it persists in the store and loads back on open, and the change
 * set against the lower source, whose base a flush into it moves. The flush algorithm comes with
 * the targets (FlushTarget.flusher) and its records are read and written by the store's durable
 * journal (Durability.saveFlushState): most workspaces never flush, and the core carries neither.
 */
import { type Change, diffTrees } from '../diff.js'
import type { FlushOptions, FlushReport } from '../flush/flush.js'
import { type FlushTarget, isFlushTarget } from '../flush/target.js'
import { Overlay } from '../overlay.js'
import type { EngineContext } from './context.js'
import type { Durability } from './durability.js'

export class Flushes {
  constructor(private readonly context: EngineContext) {}

  async flush(target: FlushTarget | readonly FlushTarget[] | undefined, options: FlushOptions): Promise<FlushReport> {
    const { ops, overlay, lower, book, session, serial } = this.context
    this.context.assertOpen()
    ops.settle()
    // No target, or ws.lower: the lower source itself, when it can take a flush.
    const own = (t: unknown) => (t === undefined || t === lower ? lower.source : t) as FlushTarget
    const targets = Array.isArray(target) ? (target as readonly FlushTarget[]).map(own) : [own(target)]
    if (targets.length === 0) throw new TypeError('rewindfs: flush needs a target')
    for (const t of targets) if (!isFlushTarget(t)) throw new TypeError('rewindfs: flush needs a FlushTarget (versions, apply, id, flusher), e.g. directory(path) from rewindfs/adapters/node-fs')
    const durability = this.context.durability
    return targets[0].flusher.flush(
      {
        overlay,
        lower,
        book,
        session,
        persist: async (blobs) => durability?.saveFlushState(lower, book, blobs),
        replacedAt: (path) => this.replacedAt(path),
      },
      targets,
      // The verify callback is user code on behalf of this call: engine calls it makes join it.
      typeof options.verify === 'function' ? { ...options, verify: (done) => serial.lend(() => options.verify!(done)) } : options,
    )
  }

  /**
   * Since when the live tree may have stopped showing the directory at `path` as the disk holds it:
   * the earliest operation in effect naming it or an ancestor (the flush takes the later of this and
   * its own last write there). Past what retention kept, the oldest kept operation's time.
   */
  private replacedAt(path: string): number | undefined {
    const records = this.context.journal.records
    for (const record of records) {
      if (!record.undone && record.paths.some((named) => named === path || named === '/' || path.startsWith(named + '/'))) return record.time
    }
    return records[0]?.time
  }

  /** The upper layer's changes against the lower source. */
  changes(): Change[] {
    const { ops, overlay, lower, book } = this.context
    ops.settle()
    // After a flush into the lower source, what it holds now is the base: flushed paths are clean.
    const flushed = lower.id !== undefined ? book.ledgers.get(lower.id) : undefined
    // Only a lower source that is a flush target has a ledger: its engine tells what differs.
    const engine = flushed && flushed.size > 0 ? (lower.source as Partial<FlushTarget>).flusher : undefined
    if (engine) return engine.differences(overlay, lower, flushed!).map((p) => p.change)
    // Status looks at the disk as it is now: nothing it sees counts as the workspace's first sighting.
    // A file's time counts, as in a flush (a `touch` is a change make sees); a directory's does not.
    return overlay.lookingOnly(() => diffTrees(overlay, Overlay.emptyRoot(lower), overlay.root, { times: true }).map((r) => r.change))
  }

  /** On open: loads pins and flush ledgers; unreadable ones are damage (reported, left in the store). */
  async load(durability: Durability): Promise<void> {
    await durability.loadFlushState(this.context.lower, this.context.book)
  }
}
