/**
 * The undo history: operations taken back newest first (selectively, refusing or cascading over
 * dependants), redone until a new one is recorded, and read back (history, one operation's diff).
 * An undo that fails twice escalates: back to the nearest checkpoint, else a safe stop.
 */
import { unifiedDiff } from '../diff.js'
import { type DirNode, type UpperNode, WHITEOUT } from '../layer/nodes.js'
import { recordId, shownAt } from '../layer/inodes.js'
import { mapGet } from '../layer/persistent-map.js'
import type { Checkpoints } from './checkpoints.js'
import type { EngineContext } from './context.js'
import { type Operation, type OperationRecord, type OperationType, type SlotChange, publicOperation, timesOnly } from './journal.js'
import { changesPending } from './pending-history.js'
import { lineCounts } from './reports.js'
import type { Compensation, SideEffects } from './side-effects.js'

/**
 * Operations over more paths than this report a directory made or removed whole as the directory
 * alone: its files' lines would cost an undo far more than the undo (a command's new node_modules
 * of 20k files: 340 ms against 1 ms).
 */
const FILES_REPORTED_INSIDE = 100

/** A path a report shows, the path its content is read at, and what it held before and after. */
type Reported = readonly [shown: string, at: string, before: UpperNode | undefined, after: UpperNode | undefined]

/** The paths of an operation's slots, for `reported`; undefined past FILES_REPORTED_INSIDE paths (nothing is reported inside). */
function ownSlots(slots: readonly { readonly path: string }[], paths: readonly string[]): ReadonlySet<string> | undefined {
  return paths.length > FILES_REPORTED_INSIDE ? undefined : new Set(slots.map((change) => change.path))
}

/**
 * What reports show of a slot change shown at `shown`: the slot itself, then, for one that makes
 * or removes a directory whole (a transaction's, a command's new directory: one slot, the files in
 * it listed in `paths`), each of the operation's paths below it with what the slot held there
 * before and after, so reports name the files and their lines, not only the directory. `own`, the
 * paths with slots of their own (ownSlots), are left to those. Under a side that was not there
 * (undefined) the lower source shows; WHITEOUT stands for nothing (a whiteout, or no entry in a
 * directory that hides or moved its lower one).
 */
function* reported(change: Extract<SlotChange, { kind: 'slot' }>, shown: string, paths: readonly string[], own: ReadonlySet<string> | undefined): Generator<Reported> {
  const { path, before, after } = change
  yield [shown, path, before, after]
  // Both directories: what changed in them has slots of its own.
  if (own === undefined || (before?.type === 'dir' && after?.type === 'dir')) return
  const prefix = path === '/' ? '/' : `${path}/`
  for (const listed of paths) {
    if (!listed.startsWith(prefix) || own.has(listed)) continue
    const names = listed.slice(prefix.length).split('/')
    yield [listed, listed, nodeAt(before, path, names), nodeAt(after, path, names)]
  }
}

/** What `node` (at `path`) holds at `names` below it: see `reported`. */
function nodeAt(node: UpperNode | undefined, path: string, names: readonly string[]): UpperNode | undefined {
  let at = node
  for (const name of names) {
    if (at === undefined) return undefined
    if (at.type !== 'dir') return WHITEOUT
    const child = mapGet(at.children, name)
    const merged = at.lower === path
    path = path === '/' ? `/${name}` : `${path}/${name}`
    at = child ?? (merged ? undefined : WHITEOUT)
  }
  return at
}

/** Files larger than this are neither line-counted nor diffed in undo's report and ws.operation(): read whole, they would cost more than the undo. */
export const REPORTED_BYTES = 8 * 1024 * 1024

/** What slotContent gives for such a file: no lines to count, no diff shown. */
const UNREAD = new Uint8Array(0)

export interface UndoOptions {
  /** How many operations, 1..50 (default 1). */
  steps?: number
  types?: readonly OperationType[]
  paths?: readonly string[]
  group?: string
  /** Also undo later operations that depend on the selected ones. */
  cascade?: boolean
  /** Report what would be undone and change nothing. */
  dryRun?: boolean
}

export interface UndoResult {
  undone: Operation[]
  filesAffected: number
  /** Per path: lines the undo brings back and lines it takes away (computed at undo time). */
  changesReverted: Record<string, { linesRestored: number; linesRemoved: number }>
  /** Side effects whose compensation ran (they are compensated, not rolled back). */
  compensated: string[]
  uncompensated: { description: string; error: string }[]
  /** The operation a further undo would take. */
  next?: Operation
}

/** ws.history()'s filter: all given conditions must hold. */
export interface HistoryFilter {
  path?: string
  type?: OperationType
  group?: string
  since?: number
  until?: number
  session?: string
  limit?: number
}

export class UndoHistory {
  /** What the last undo removed, for redo; cleared by the next new operation. */
  private redoable: OperationRecord[] = []
  private redoMark = 0
  /**
   * Operations an undo has chosen and not yet taken back: it waits for their compensations, and an
   * undo that runs meanwhile (one a compensator makes, or one made while it runs: the engine cannot
   * tell them apart) takes the next ones instead of the same again.
   */
  private readonly claimed = new Set<OperationRecord>()

  constructor(
    private readonly context: EngineContext,
    private readonly checkpoints: Checkpoints,
    private readonly sideEffects: SideEffects,
  ) {}

  async undo(options: UndoOptions): Promise<UndoResult> {
    const { ops, journal } = this.context
    this.context.assertOpen()
    ops.settle()
    // undo({ group }) takes back the whole group (up to the 50-step limit) unless steps says otherwise.
    const steps = options.steps ?? (options.group !== undefined ? 50 : 1)
    if (!Number.isInteger(steps) || steps < 1 || steps > 50) throw new RangeError(`rewindfs: undo steps must be an integer from 1 to 50; got ${String(steps)}`)
    const matches = (record: OperationRecord) =>
      !record.undone &&
      !this.claimed.has(record) &&
      (!options.types || options.types.includes(record.type)) &&
      (!options.group || record.group === options.group) &&
      (!options.paths || record.paths.some((p) => options.paths!.some((q) => p === q || p.startsWith(q.endsWith('/') ? q : q + '/'))))
    const selected: OperationRecord[] = []
    for (let i = journal.records.length - 1; i >= 0 && selected.length < steps; i--) {
      if (matches(journal.records[i])) selected.push(journal.records[i])
    }
    const chosen = new Set(selected)
    for (const record of selected) {
      const blockers = journal.dependants(record).filter((other) => !chosen.has(other) && !this.claimed.has(other))
      if (blockers.length === 0) continue
      if (!options.cascade) {
        const list = blockers.map((b) => `${b.id} (${b.type} ${b.paths.join(', ')})`).join('; ')
        throw Object.assign(new Error(`rewindfs: cannot undo ${record.id} (${record.type} ${record.paths.join(', ')}): later operations depend on it: ${list}. Pass cascade: true to undo them too.`), {
          code: 'EDEPENDENT',
          blocking: blockers.map(publicOperation),
        })
      }
      for (const blocker of blockers) chosen.add(blocker)
    }
    const ordered = [...chosen].sort((a, b) => b.seq - a.seq)
    const changesReverted: Record<string, { linesRestored: number; linesRemoved: number }> = {}
    const files = new Set<string>()
    for (const record of ordered) {
      const slots = journal.slots(record)
      const own = ownSlots(slots, record.paths)
      for (const change of slots) {
        // Files: a state key is none, nor a directory whose times alone moved (with what it holds).
        if (change.kind === 'state' || timesOnly(change)) continue
        const path = change.kind === 'slot' ? shownAt(change.path, change.before, change.after, record.paths) : change.path
        if (path === undefined) continue
        files.add(path)
        if (change.kind !== 'slot') continue
        for (const [shown, at, was, is] of reported(change, path, record.paths, own)) {
          files.add(shown)
          const before = this.slotContent(at, was)
          const after = this.slotContent(at, is)
          if (before === undefined && after === undefined) continue
          const counts = lineCounts(before, after)
          const entry = (changesReverted[shown] ??= { linesRestored: 0, linesRemoved: 0 })
          entry.linesRestored += counts.restored
          entry.linesRemoved += counts.removed
        }
      }
    }
    let compensation: Compensation = { compensated: [], uncompensated: [] }
    if (!options.dryRun) {
      for (const record of ordered) this.claimed.add(record)
      try {
        compensation = await this.sideEffects.compensate(ordered.filter((r) => r.type === 'side_effect'))
      } finally {
        for (const record of ordered) this.claimed.delete(record)
      }
      // Newest first; a revert that fails is tried once more, then the undo stops and escalates
      // (a RollbackStack's 'retry-once' policy, uncapped).
      const revert = (record: OperationRecord): { error: unknown } | undefined => {
        try {
          journal.revert(record)
          record.undone = true
          return undefined
        } catch (error) {
          return { error }
        }
      }
      let failed: { record: OperationRecord; error: unknown } | undefined
      // One time for the directories it touches, recorded: a replay touches them the same.
      const time = this.context.overlay.atOneTime(undefined, () => {
        for (const record of ordered) {
          const failure = revert(record) && revert(record)
          if (failure) {
            failed = { record, error: failure.error }
            break
          }
        }
      })
      const undone = ordered.filter((r) => r.undone)
      if (undone.length > 0) {
        // Checkpoints made after them hold them done: no longer a base for restore's replay.
        this.checkpoints.historyRewritten(Math.min(...undone.map((r) => r.seq)))
        this.context.durability?.record({ t: 'undo', ids: undone.map((r) => r.id), ...(time !== undefined ? { time } : {}) })
      }
      this.redoable = undone
      this.redoMark = journal.lastSeq
      if (failed) this.escalate(failed.record, failed.error)
    }
    const next = journal.records.findLast((r) => !r.undone && !chosen.has(r) && !this.claimed.has(r))
    return {
      undone: ordered.map(publicOperation),
      filesAffected: files.size,
      changesReverted,
      compensated: compensation.compensated,
      uncompensated: compensation.uncompensated,
      ...(next ? { next: publicOperation(next) } : {}),
    }
  }

  /**
   * The seed's escalation after an undo failed twice: restore the nearest intact checkpoint, else
   * stop safely (the workspace freezes: writes fail with EROFS naming the reason; every record is
   * kept), and alert either way.
   */
  private escalate(record: OperationRecord, failure: unknown): void {
    const { overlay, state, journal } = this.context
    const message = `undo of ${record.id} failed twice: ${(failure as Error)?.message ?? String(failure)}`
    this.context.alert({ kind: 'undo-failed', message, operations: [record.id] })
    const nearest = this.checkpoints.nearest()
    if (nearest) {
      try {
        const before = overlay.freeze()
        const stateBefore = state.freeze()
        overlay.setRoot(nearest.root)
        state.setRoot(nearest.state)
        journal.appendRoot({ type: 'restore', paths: ['/'], description: `escalation: restore ${nearest.name}` }, { before, after: nearest.root, stateBefore, stateAfter: nearest.state })
        return
      } catch {
        // Fall through to the safe stop.
      }
    }
    this.context.freeze(`${message}; no intact checkpoint could be restored`)
    throw Object.assign(new Error(`rewindfs: ${message}; the workspace is frozen (safe stop)`), { code: 'ESAFESTOP' })
  }

  redo(): { redone: Operation[] } {
    const { ops, journal } = this.context
    this.context.assertOpen()
    ops.settle()
    // The last operation's number, not the count: retention drops old records as new ones come.
    if (journal.lastSeq !== this.redoMark || this.redoable.length === 0) return { redone: [] }
    const records = [...this.redoable].sort((a, b) => a.seq - b.seq)
    const effect = records.find((r) => r.type === 'side_effect')
    if (effect) throw Object.assign(new Error(`rewindfs: redo refuses to re-run the side effect '${effect.description}'`), { code: 'EEFFECT' })
    const time = this.context.overlay.atOneTime(undefined, () => {
      for (const record of records) {
        journal.reapply(record)
        record.undone = false
      }
    })
    // Checkpoints made while they were undone lack them: no longer a base for restore's replay.
    this.checkpoints.historyRewritten(records[0].seq)
    this.context.durability?.record({ t: 'redo', ids: records.map((r) => r.id), ...(time !== undefined ? { time } : {}) })
    this.redoable = []
    return { redone: records.map(publicOperation) }
  }

  /**
   * A file's content as one slot value shows it, for a report's line counts and diffs: an upper
   * file, or the lower file it leaves visible. One larger than REPORTED_BYTES is not read (UNREAD,
   * counted as a binary file is): an undo of a deleted 512 MiB file would read and hash all of it to count lines.
   */
  private slotContent(path: string, node: UpperNode | undefined): Uint8Array | undefined {
    const { overlay, lower } = this.context
    if (node?.type === 'file') return node.size > REPORTED_BYTES ? UNREAD : overlay.blobs.get(node.blob)
    if (node !== undefined || recordId(path) !== undefined) return undefined
    const stat = lower.stat(path)
    if (stat?.type !== 'file') return undefined
    if (stat.size > REPORTED_BYTES) return UNREAD
    try {
      return lower.readFile(path)
    } catch {
      // Counted for the report only: a lower file this process may not read (mode 000, another
      // user's 0600) is still brought back, its lines uncounted.
      return undefined
    }
  }

  /** Operations, newest first. */
  history(filter: HistoryFilter = {}): (Operation & { undone?: true })[] {
    const { ops, journal } = this.context
    ops.settle()
    const out: (Operation & { undone?: true })[] = []
    for (let i = journal.records.length - 1; i >= 0; i--) {
      const r = journal.records[i]
      if (filter.type && r.type !== filter.type) continue
      if (filter.group && r.group !== filter.group) continue
      if (filter.session && r.session !== filter.session) continue
      if (filter.since !== undefined && r.time < filter.since) continue
      if (filter.until !== undefined && r.time > filter.until) continue
      if (filter.path && !r.paths.some((p) => p === filter.path || p.startsWith(filter.path + '/'))) continue
      out.push({ ...publicOperation(r), ...(r.undone ? { undone: true } : {}) })
      if (filter.limit !== undefined && out.length >= filter.limit) break
    }
    return out
  }

  /** One operation with the unified diff of each file it changed. */
  operation(id: string): (Operation & { undone: boolean; diff: { path: string; patch?: string }[] }) | undefined {
    const { journal } = this.context
    const record = journal.find(id)
    if (!record) return undefined
    const slots = journal.slots(record)
    const own = ownSlots(slots, record.paths)
    const diff = slots.flatMap((change) => {
      if (change.kind !== 'slot') return []
      const path = shownAt(change.path, change.before, change.after, record.paths)
      if (path === undefined) return []
      return [...reported(change, path, record.paths, own)].map(([shown, at, was, is]) => {
        const before = this.slotContent(at, was)
        const after = this.slotContent(at, is)
        if ((before === undefined && after === undefined) || before === UNREAD || after === UNREAD) return { path: shown }
        return { path: shown, patch: unifiedDiff(shown, before ?? new Uint8Array(0), after ?? new Uint8Array(0)) }
      })
    })
    return { ...publicOperation(record), undone: record.undone, diff }
  }

  /** Garbage-collection roots: undo and redo keep previous versions alive. */
  *roots(): Iterable<DirNode | string> {
    const { journal } = this.context
    for (const record of journal.records) {
      // Changes still in the snapshot's parts are kept through them (SessionStore.historyRoots).
      if (changesPending(record)) continue
      for (const change of record.changes) {
        if (change.kind === 'root') {
          yield change.before
          yield change.after
        } else if (change.kind === 'slot') {
          for (const node of [change.before, change.after]) {
            if (node?.type === 'file') yield node.blob
            else if (node?.type === 'dir') yield node
          }
        }
      }
    }
  }
}
