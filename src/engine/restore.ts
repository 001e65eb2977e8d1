/**
 * Restore: the files and session state brought back to a checkpoint, a time, or just after an
 * operation, as a pointer move (or path by path when filtered), after a guard checkpoint, with the
 * later side effects compensated and conflicts with the lower source refused; undoRestore takes
 * the last one back and, called again before anything else is recorded, re-applies it. Reset, the
 * restore to the lower layer, too.
 */
import { type Change, type ChangeRecord, diffTrees } from '../diff.js'
import { FsError } from '../errors.js'
import { pathMatcher } from '../glob.js'
import { type DirNode, dirNode } from '../layer/nodes.js'
import { type MapRoot, mapEntries } from '../layer/persistent-map.js'
import { ABSENT, Overlay } from '../overlay.js'
import { versionHolds } from '../lower/source.js'
import { basename, dirname } from '../path.js'
import type { Checkpoint, Checkpoints } from './checkpoints.js'
import type { EngineContext } from './context.js'
import { type Operation, type OperationRecord, publicOperation } from './journal.js'
import type { SideEffects } from './side-effects.js'
import { type JsonValue, SessionState } from './state.js'
import type { UndoHistory } from './undo.js'

export type RestoreTarget = string | { time: number } | { operation: string }

export interface RestoreOptions {
  /** Globs: restore only matching paths (a directory pattern covers what is under it). */
  include?: readonly string[]
  exclude?: readonly string[]
  /** Report what would change, with patches, and change nothing. */
  dryRun?: boolean
  /** Restore even when paths conflict (the lower source changed underneath since it was read). */
  force?: boolean
}

export interface RestoreReport {
  applied: boolean
  changes: Change[]
  /** Paths whose lower-source version changed since the workspace first read them. */
  conflicts: string[]
  /** The checkpoint made just before the restore (undoRestore goes back to it). */
  guard?: Checkpoint
  /** Side effects recorded after the target whose compensations ran (newest first). */
  compensated: string[]
  /** Compensations that failed, with their errors. */
  uncompensated: { description: string; error: string }[]
  /** The session state as restored. */
  state: Record<string, JsonValue>
}

export class Restores {
  /**
   * The restore record the last undoRestore() reverted, so a second call re-applies it, and the
   * journal's last operation then: as redo, it is re-applied only while no operation followed.
   */
  private undoneRestore: { record: OperationRecord; lastSeq: number } | undefined

  constructor(
    private readonly context: EngineContext,
    private readonly checkpoints: Checkpoints,
    private readonly sideEffects: SideEffects,
    private readonly undo: UndoHistory,
  ) {}

  async restore(target: RestoreTarget, options: RestoreOptions): Promise<RestoreReport> {
    const { ops, overlay, state, journal, collector } = this.context
    this.context.assertOpen()
    ops.settle()
    const point = this.point(target)
    const filtered = options.include !== undefined || options.exclude !== undefined
    const matches = pathMatcher(options.include, options.exclude)
    const records = diffTrees(overlay, overlay.root, point.root).filter((r) => !filtered || matches(r.change.path))
    const changes = records.map((r) => r.change)
    const conflicts = this.conflicts(changes.map((c) => c.path), point.time)
    const effects = journal.records.filter((r) => r.seq > point.opSeq && !r.undone && r.type === 'side_effect')
    const stateAfter = filtered ? state.root : point.state
    const report = (applied: boolean, extra: Partial<RestoreReport> = {}): RestoreReport => ({
      applied,
      changes,
      conflicts,
      compensated: [],
      uncompensated: [],
      state: Object.fromEntries(mapEntries(applied ? state.root : stateAfter)),
      ...extra,
    })
    if (options.dryRun) return report(false)
    if (conflicts.length > 0 && !options.force) {
      throw Object.assign(new Error(`rewindfs: restore refused: ${conflicts.join(', ')} changed in the lower source since read, or were flushed there by another session after the restore point; pass force: true to restore anyway`), {
        code: 'ECONFLICT',
        conflicts,
      })
    }
    const guard = this.checkpoints.add('guard', undefined, `before restoring ${point.label}`)
    const { compensated, uncompensated } = await this.sideEffects.compensate(effects)
    const paths = changes.map((c) => c.path)
    if (!filtered) {
      const before = overlay.freeze()
      const stateBefore = state.freeze()
      overlay.setRoot(point.root)
      state.setRoot(point.state)
      journal.appendRoot(
        { type: 'restore', paths, description: `restore ${point.label}` },
        { before, after: point.root, stateBefore, stateAfter: point.state },
      )
    } else if (records.length > 0) {
      journal.run({ type: 'restore', paths, description: `restore ${point.label} (filtered)` }, () => this.applyRecords(records))
    }
    // Forced over paths changed on disk since first read: what it brought back may rest on that
    // read, though a change made since took a later base (Overlay.based). Never a missed conflict.
    for (const path of conflicts) overlay.baseOnFirstSighting(path)
    this.undoneRestore = undefined
    this.checkpoints.supersedeAfter(point.seq, guard)
    collector.maybeSchedule()
    ops.changes.post('restore', { target: point.label, applied: true, changes: changes.length, guard })
    return report(true, { guard, compensated, uncompensated })
  }

  async undoRestore(): Promise<{ undone?: Operation; redone?: Operation }> {
    const { ops, journal } = this.context
    this.context.assertOpen()
    ops.settle()
    const undone = this.undoneRestore
    if (undone && undone.record.undone) {
      const { record } = undone
      if (journal.lastSeq !== undone.lastSeq) {
        // Its slots would silently overwrite what was written since (redo stops there too).
        const later = journal.records.filter((r) => r.seq > undone.lastSeq)
        const list = later.map((r) => `${r.id} (${r.type} ${r.paths.join(', ')})`).join('; ')
        throw Object.assign(
          new Error(`rewindfs: cannot re-apply ${record.id} (${record.description ?? 'restore'}): operations were recorded after undoRestore took it back: ${list}. Restore its target again to bring it back.`),
          { code: 'EDEPENDENT', blocking: later.map(publicOperation) },
        )
      }
      const time = this.context.overlay.atOneTime(undefined, () => journal.reapply(record))
      record.undone = false
      // Checkpoints made while it was undone lack it: no longer a base for restore's replay.
      this.checkpoints.historyRewritten(record.seq)
      this.context.durability?.record({ t: 'redo', ids: [record.id], ...(time !== undefined ? { time } : {}) })
      this.undoneRestore = undefined
      return { redone: publicOperation(record) }
    }
    const record = journal.records.findLast((r) => r.type === 'restore' && !r.undone)
    if (!record) throw Object.assign(new Error('rewindfs: there is no restore to undo'), { code: 'ENOENT' })
    const result = await this.context.atomically(() => this.undo.undo({ types: ['restore'] }))
    this.undoneRestore = { record, lastSeq: journal.lastSeq }
    return { undone: result.undone[0] }
  }

  /** What a restore target names: a checkpoint, the state at a time, or just after an operation (also bisect's probes). */
  point(target: RestoreTarget): { root: DirNode; state: MapRoot<JsonValue>; seq: number; opSeq: number; label: string; time: number } {
    const { overlay, lower, journal } = this.context
    if (typeof target === 'string') {
      const record = this.checkpoints.find(target, 'restore')
      // Its tree first: one still in the snapshot's parts is decoded now, and checked (broken) then.
      const root = record.root
      if (record.broken) throw Object.assign(new Error(`rewindfs: checkpoint ${record.name} is broken (content missing from the store) and cannot be restored`), { code: 'EBROKEN' })
      return { root, state: record.state, seq: record.seq, opSeq: record.opSeq, label: record.name, time: record.createdAt }
    }
    if (typeof target !== 'object' || target === null) throw new TypeError('rewindfs: restore target must be a checkpoint id or name, { time } or { operation }')
    let untilSeq: number
    let label: string
    let time: number
    if ('operation' in target) {
      const operation = journal.find(target.operation)
      if (!operation) throw new FsError('ENOENT', 'restore', target.operation, undefined, 'no such operation')
      untilSeq = operation.seq
      label = `after ${operation.id}`
      time = operation.time
    } else if ('time' in target && typeof target.time === 'number') {
      if (Number.isNaN(new Date(target.time).getTime())) throw new FsError('EINVAL', 'restore', String(target.time), undefined, 'a time is epoch milliseconds within what a Date holds (±8.64e15)')
      untilSeq = journal.records.findLast((r) => r.time <= target.time)?.seq ?? 0
      label = `at ${new Date(target.time).toISOString()}`
      time = target.time
    } else throw new TypeError('rewindfs: restore target must be a checkpoint id or name, { time } or { operation }')
    // Retention dropped operations 1…dropped. Forward from the nearest checkpoint at or before the
    // point, replaying the operations since it (O(operations since it)), when none of those was
    // dropped; else back from the live tree, taking back the operations after the point (O(operations
    // after it), all kept). A point before the kept operations is no longer restorable: its
    // operations are gone, as a pruned reflog's. A checkpoint made after an operation undone or
    // redone since holds a state the history no longer has: it is no base (replayBaseAt).
    const base = this.checkpoints.replayBaseAt(untilSeq)
    const dropped = journal.records.length > 0 ? journal.records[0].seq - 1 : journal.lastSeq
    // The checkpoints after the point are those made after the newest one at or before it, base or not (supersedeAfter).
    const seq = this.checkpoints.latestAt(untilSeq)?.seq ?? 0
    if ((base?.opSeq ?? 0) >= dropped) {
      // Without a checkpoint, from where the session's history starts (a fork's: its source's tree).
      const { origin } = this.context
      const scratch = new Overlay(lower, overlay.blobs, overlay.inodes, base ? base.root : origin.root)
      const state = new SessionState()
      state.setRoot(base ? base.state : origin.state)
      const fromSeq = base?.opSeq ?? 0
      for (const record of journal.records) {
        if (record.seq <= fromSeq || record.seq > untilSeq || record.undone) continue
        for (const change of journal.slots(record)) {
          if (change.kind === 'slot') scratch.setSlot(change.path, change.after)
          else if (change.kind === 'state') state.write(change.key, change.after)
          else scratch.setDirMeta(change.path, change.after)
        }
      }
      return { root: scratch.freeze(), state: state.freeze(), seq, opSeq: untilSeq, label, time }
    }
    if (untilSeq < dropped) {
      throw new FsError(
        'ENOENT',
        'restore',
        label,
        undefined,
        `that point is no longer restorable: retention dropped the operations up to #${dropped} (retention.operations) and no checkpoint holds it; the oldest restorable point is just before ${journal.records[0]?.id ?? 'the next operation'}`,
      )
    }
    const scratch = new Overlay(lower, overlay.blobs, overlay.inodes, overlay.freeze())
    const state = new SessionState()
    state.setRoot(this.context.state.freeze())
    for (let i = journal.records.length - 1; i >= 0 && journal.records[i].seq > untilSeq; i--) {
      const record = journal.records[i]
      if (record.undone) continue
      // In reverse within the operation too, as undo takes it back.
      const changes = journal.slots(record)
      for (let j = changes.length - 1; j >= 0; j--) {
        const change = changes[j]
        if (change.kind === 'slot') scratch.setSlot(change.path, change.before)
        else if (change.kind === 'state') state.write(change.key, change.before)
        else scratch.setDirMeta(change.path, change.before)
      }
    }
    return { root: scratch.freeze(), state: state.freeze(), seq, opSeq: untilSeq, label, time }
  }

  /**
   * Paths whose lower-source version differs from the one recorded when first read, or that
   * another session flushed into the lower source after `since` (restoring would undo its work).
   */
  private conflicts(paths: readonly string[], since: number): string[] {
    const { overlay, lower, book, session } = this.context
    const out: string[] = []
    const flushed = lower.id !== undefined ? book.ledgers.get(lower.id) : undefined
    for (const path of paths) {
      const other = flushed?.get(path)
      if (other?.by !== undefined && other.by !== session && (other.at ?? 0) > since) {
        out.push(path)
        continue
      }
      const seen = overlay.observed.get(path)
      if (seen === undefined) continue
      if (!versionHolds(seen, lower.stat(path)?.version ?? ABSENT)) out.push(path)
    }
    return out
  }

  /** Applies selected differences one path at a time: parents before children, deletions deepest first. */
  private applyRecords(records: ChangeRecord[]): void {
    const { ops, overlay } = this.context
    const parentOf = (path: string) => {
      const dir = dirname(path)
      const existing = this.tryResolve(dir)
      if (existing?.type === 'dir') return existing
      ops.mkdir(dir, { recursive: true })
      return overlay.resolve(dir, 'restore', false)
    }
    for (const record of records) {
      const { after } = record
      if (!after) continue
      const current = this.tryResolve(after.path)
      const parent = parentOf(after.path)
      const name = basename(after.path)
      if (after.type === 'dir') {
        if (current?.type === 'dir') overlay.setMeta(current, { mode: overlay.meta(after).mode })
        else {
          if (current) this.removeTree(current.path)
          overlay.put(parent, name, dirNode(overlay.meta(after), null, null))
        }
      } else {
        if (current?.type === 'dir') this.removeTree(current.path)
        const node = overlay.copyUp(after)
        if (node.type === 'file') overlay.blobs.retain(node.blob)
        overlay.put(parent, name, node)
      }
    }
    for (const record of [...records].reverse()) {
      if (record.after || !record.before) continue
      const current = this.tryResolve(record.before.path)
      if (!current) continue
      if (current.type === 'dir' && !overlay.isEmptyDir(current)) continue
      overlay.remove(overlay.resolve(dirname(current.path), 'restore', false), basename(current.path))
    }
  }

  private removeTree(path: string): void {
    this.context.ops.rm(path, { recursive: true, force: true })
  }

  private tryResolve(path: string) {
    return this.context.overlay.lookup(path, false)
  }

  /** Discards the upper layer: the lower tree shows again. */
  reset(): void {
    const { ops, overlay, lower, journal, collector } = this.context
    this.context.assertOpen()
    ops.settle()
    const before = overlay.freeze()
    const empty = Overlay.emptyRoot(lower)
    overlay.setRoot(empty)
    journal.appendRoot({ type: 'reset', paths: ['/'], description: 'reset to the lower layer' }, { before, after: empty })
    collector.maybeSchedule()
  }
}
