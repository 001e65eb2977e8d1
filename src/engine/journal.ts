/**
 * The operation journal: every mutating call becomes one Operation before it returns, holding the
 * upper-layer slots it changed (previous and next node by reference: blobs are shared, never
 * copied). Undo puts the previous slots back, redo the next ones. Because slot values are upper
 * nodes over an immutable lower layer, putting a slot back restores the merged view exactly.
 */
import { upperSlotDiff } from '../diff.js'
import type { DirNode, Meta, UpperNode } from '../layer/nodes.js'
import type { Overlay, Recorder } from '../overlay.js'
import { isWithin } from '../path.js'

export type OperationType =
  | 'file_create'
  | 'file_edit'
  | 'file_delete'
  | 'rename'
  | 'mkdir'
  | 'rmdir'
  | 'chmod'
  | 'symlink'
  | 'truncate'
  | 'copy'
  | 'state_set'
  | 'side_effect'
  | 'transaction'
  | 'restore'
  | 'reset'

export interface UndoStrategy {
  kind: 'snapshot' | 'reverse-patch' | 'compensation'
  reason: string
}

export type SlotChange =
  | { readonly kind: 'slot'; readonly path: string; readonly before: UpperNode | undefined; readonly after: UpperNode | undefined }
  | { readonly kind: 'meta'; readonly path: string; readonly before: Meta; readonly after: Meta }

/** A whole-tree move (restore, reset): O(1) to record, expanded to slots only when undo needs it. */
export interface RootChange {
  readonly kind: 'root'
  readonly path: '/'
  readonly before: DirNode
  readonly after: DirNode
}

export interface Operation {
  readonly id: string
  readonly seq: number
  readonly type: OperationType
  readonly paths: readonly string[]
  readonly time: number
  readonly session: string
  readonly turn?: number
  readonly group?: string
  readonly description?: string
  readonly strategy: UndoStrategy
  /** The operation this one undid or redid, for undo/redo records. */
  readonly parent?: string
}

export interface OperationRecord extends Operation {
  readonly changes: readonly (SlotChange | RootChange)[]
  /** Set once the operation has been undone (it stays in history). */
  undone: boolean
}

export interface OperationContext {
  type: OperationType
  paths: readonly string[]
  group?: string
  description?: string
}

const snapshot: UndoStrategy = { kind: 'snapshot', reason: 'previous entries kept by blob reference' }

export class Journal implements Recorder {
  readonly records: OperationRecord[] = []
  private current: { context: OperationContext; changes: SlotChange[]; needsFreeze: boolean } | undefined
  private depth = 0
  private seq = 0
  /** Suppresses recording (undo and redo write through the same primitives). */
  private muted = 0
  turn: number | undefined
  group: string | undefined

  constructor(
    private readonly overlay: Overlay,
    readonly session: string,
    private readonly idPrefix: string,
    /** Operations kept for undo and history; older ones are dropped (their content can be collected). */
    private readonly limit = 10_000,
  ) {
    overlay.recorder = this
  }

  slot(path: string, before: UpperNode | undefined, after: UpperNode | undefined): void {
    if (this.muted > 0 || !this.current) return
    this.current.changes.push({ kind: 'slot', path, before, after })
    if (before?.type === 'dir' || after?.type === 'dir') this.current.needsFreeze = true
  }

  meta(path: string, before: Meta, after: Meta): void {
    if (this.muted > 0 || !this.current) return
    this.current.changes.push({ kind: 'meta', path, before, after })
  }

  /** Refines the running operation's type once the call knows it (a write that created the file). */
  classify(type: OperationType): void {
    if (this.current && this.depth === 1) this.current.context = { ...this.current.context, type }
  }

  /** Runs `body` as one operation; nested calls join the outermost one. */
  run<T>(context: OperationContext, body: () => T): T {
    if (this.muted > 0) return body()
    if (this.depth++ === 0) this.current = { context, changes: [], needsFreeze: false }
    try {
      return body()
    } finally {
      if (--this.depth === 0) this.finish()
    }
  }

  private finish(): OperationRecord | undefined {
    const current = this.current
    this.current = undefined
    if (!current) return undefined
    // Rewriting a file with the same bytes and mode changes nothing an undo could bring back.
    const changes = current.changes.filter((c) => !(c.kind === 'slot' && sameFile(c.before, c.after)))
    if (changes.length === 0) return undefined // no-op writes record nothing
    // Directory nodes held by the record must never change in place afterwards.
    if (current.needsFreeze) this.overlay.freeze()
    return this.append(current.context, changes)
  }

  append(context: OperationContext, changes: readonly (SlotChange | RootChange)[], strategy = snapshot, parent?: string): OperationRecord {
    const seq = ++this.seq
    const record: OperationRecord = {
      id: `op-${this.idPrefix}-${seq.toString(36)}`,
      seq,
      type: context.type,
      paths: context.paths,
      time: Date.now(),
      session: this.session,
      ...(this.turn !== undefined ? { turn: this.turn } : {}),
      ...((context.group ?? this.group) !== undefined ? { group: context.group ?? this.group } : {}),
      ...(context.description !== undefined ? { description: context.description } : {}),
      strategy,
      ...(parent !== undefined ? { parent } : {}),
      changes,
      undone: false,
    }
    this.records.push(record)
    // Dropped in batches so trimming stays amortised O(1) per operation.
    if (this.records.length > this.limit + Math.max(16, this.limit >> 3)) this.records.splice(0, this.records.length - this.limit)
    return record
  }

  /** Records a whole-tree move as one operation. */
  appendRoot(context: OperationContext, before: DirNode, after: DirNode): OperationRecord {
    return this.append(context, [{ kind: 'root', path: '/', before, after }])
  }

  /** The record's changes as slots (root moves expanded; cost proportional to what differs). */
  slots(record: OperationRecord): SlotChange[] {
    const out: SlotChange[] = []
    for (const change of record.changes) {
      if (change.kind !== 'root') out.push(change)
      else {
        upperSlotDiff(
          change.before,
          change.after,
          (path, before, after) => out.push({ kind: 'slot', path, before, after }),
          (path, before, after) => out.push({ kind: 'meta', path, before, after }),
        )
      }
    }
    return out
  }

  /** Puts back the slots an operation changed (LIFO within it). */
  revert(record: OperationRecord): void {
    const changes = this.slots(record)
    this.overlay.freeze()
    this.silently(() => {
      for (let i = changes.length - 1; i >= 0; i--) {
        const change = changes[i]
        if (change.kind === 'slot') this.overlay.setSlot(change.path, change.before)
        else this.overlay.setDirMeta(change.path, change.before)
      }
    })
    this.overlay.freeze()
  }

  /** Applies an operation's slots again (redo). */
  reapply(record: OperationRecord): void {
    const changes = this.slots(record)
    this.overlay.freeze()
    this.silently(() => {
      for (const change of changes) {
        if (change.kind === 'slot') this.overlay.setSlot(change.path, change.after)
        else this.overlay.setDirMeta(change.path, change.after)
      }
    })
    this.overlay.freeze()
  }

  private silently(body: () => void): void {
    this.muted++
    try {
      body()
    } finally {
      this.muted--
    }
  }

  /** Later live operations whose paths overlap (same path, ancestor or descendant) with `record`. */
  dependants(record: OperationRecord): OperationRecord[] {
    const mine = this.slots(record).map((c) => c.path)
    return this.records.filter(
      (other) =>
        other.seq > record.seq &&
        !other.undone &&
        this.slots(other).some((c) => mine.some((path) => isWithin(c.path, path) || isWithin(path, c.path))),
    )
  }

  find(id: string): OperationRecord | undefined {
    return this.records.find((r) => r.id === id)
  }
}

export function publicOperation(record: OperationRecord): Operation {
  const { changes: _changes, undone: _undone, ...operation } = record
  return operation
}

function sameFile(a: UpperNode | undefined, b: UpperNode | undefined): boolean {
  return a?.type === 'file' && b?.type === 'file' && a.blob === b.blob && a.meta.mode === b.meta.mode && a.meta.uid === b.meta.uid && a.meta.gid === b.meta.gid
}
