/**
 * The operation journal: every mutating call becomes one Operation before it returns, holding the
 * upper-layer slots it changed (previous and next node by reference: blobs are shared, never
 * copied). Undo puts the previous slots back, redo the next ones. Because slot values are upper
 * nodes over an immutable lower layer, putting a slot back restores the merged view exactly.
 */
import { upperSlotDiff } from '../diff.js'
import type { ChangeFeed } from './change-feed.js'
import type { JsonValue, SessionState, StateRecorder } from './state.js'
import type { DirNode, Meta, UpperNode } from '../layer/nodes.js'
import { type MapRoot, mapDiff } from '../layer/persistent-map.js'
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
  | 'link'
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
  /** `inPlace`: the entry itself changed (its directory was not touched: a replay leaves its times). */
  | { readonly kind: 'slot'; readonly path: string; readonly before: UpperNode | undefined; readonly after: UpperNode | undefined; readonly inPlace?: true }
  | { readonly kind: 'meta'; readonly path: string; readonly before: Meta; readonly after: Meta }

/** A session-state key set or removed. */
export interface StateChange {
  readonly kind: 'state'
  readonly path: string
  readonly key: string
  readonly before: JsonValue | undefined
  readonly after: JsonValue | undefined
}

/** A side effect outside the workspace: undone by running its compensation, never rolled back. */
export interface EffectChange {
  readonly kind: 'effect'
  readonly path: string
  readonly effect: SideEffect
}

export interface SideEffect {
  readonly description: string
  /** A function (lives as long as the process) or a compensator registered by name. */
  readonly compensate: (() => unknown) | { name: string; args?: JsonValue }
  readonly tier?: number
  readonly group?: string
  compensated: boolean
}

export type Change = SlotChange | RootChange | StateChange | EffectChange

/** A whole-tree move (restore, reset): O(1) to record, expanded to slots only when undo needs it. */
export interface RootChange {
  readonly kind: 'root'
  readonly path: '/'
  readonly before: DirNode
  readonly after: DirNode
  readonly stateBefore?: MapRoot<JsonValue>
  readonly stateAfter?: MapRoot<JsonValue>
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
  readonly changes: readonly Change[]
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
const NO_ARGUMENTS: unknown[] = []

export class Journal implements Recorder, StateRecorder {
  readonly records: OperationRecord[] = []
  /** The running operation (undefined: none). */
  private current: OperationContext | undefined
  /**
   * Its changes so far: the first `changeCount` of one array kept for every operation (emptying an
   * array by its length frees its room, so every operation would grow a new one); a record keeps a
   * copy of its own length.
   */
  private readonly changes: (Change | undefined)[] = []
  private changeCount = 0
  /** Whether its record holds a directory node the tree's edit token owns (one a later write would change in place). */
  private needsFreeze = false
  private depth = 0
  private seq = 0
  /** Suppresses recording (undo and redo write through the same primitives). */
  private muted = 0
  turn: number | undefined
  group: string | undefined
  /** Told when an operation ends (or is undone or redone): its changes form one batch for watchers. */
  feed: ChangeFeed | undefined

  /** What every operation id of this journal begins with ('op-<prefix>-'): one string, not made again per id. */
  private readonly idStart: string

  constructor(
    private readonly overlay: Overlay,
    readonly session: string,
    idPrefix: string,
    /** Operations kept for undo and history; older ones are dropped (their content can be collected). */
    readonly limit = 10_000,
    private readonly sessionState?: SessionState,
  ) {
    this.idStart = `op-${idPrefix}-`
    overlay.recorder = this
    if (sessionState) sessionState.recorder = this
  }

  state(key: string, before: JsonValue | undefined, after: JsonValue | undefined): void {
    if (this.muted > 0) return
    if (this.current) this.push({ kind: 'state', path: `state:${key}`, key, before, after })
    else this.append({ type: 'state_set', paths: [`state:${key}`] }, [{ kind: 'state', path: `state:${key}`, key, before, after }])
  }

  effect(effect: SideEffect, context: Omit<OperationContext, 'type' | 'paths'>): OperationRecord {
    return this.append(
      { type: 'side_effect', paths: [`effect:${effect.description}`], ...context },
      [{ kind: 'effect', path: `effect:${effect.description}`, effect }],
      { kind: 'compensation', reason: 'an effect outside the workspace cannot be rolled back, only compensated' },
    )
  }

  slot(path: string, before: UpperNode | undefined, after: UpperNode | undefined, inPlace?: boolean): void {
    if (this.muted > 0 || !this.current) return
    this.push(inPlace ? { kind: 'slot', path, before, after, inPlace } : { kind: 'slot', path, before, after })
    // A directory no token owns (mkdir's new one) is copied before any change: only an owned one needs the tree frozen.
    const token = this.overlay.token
    if ((before?.type === 'dir' && before.token === token) || (after?.type === 'dir' && after.token === token)) this.needsFreeze = true
  }

  meta(path: string, before: Meta, after: Meta): void {
    if (this.muted > 0 || !this.current) return
    this.push({ kind: 'meta', path, before, after })
  }

  /** Whether an operation is being recorded right now (nested calls join it). */
  get running(): boolean {
    return this.depth > 0
  }

  /** Sequence number of the newest operation (0 before any). */
  get lastSeq(): number {
    return this.seq
  }

  /** Replaces the kept history (loading a snapshot). */
  load(records: OperationRecord[], seq: number): void {
    this.records.splice(0, this.records.length, ...records)
    this.seq = Math.max(this.seq, seq)
  }

  /** Told about every new operation (the durable store's persister). */
  onAppend: ((record: OperationRecord) => void) | undefined
  private identity: Omit<Operation, 'type' | 'paths' | 'description' | 'parent'> | undefined

  /**
   * Replays a persisted operation with its original identity: `apply` makes the changes through
   * the usual primitives (which record the "before" side from the replayed tree) and pushes the
   * ones that bypass them (root moves, effects).
   */
  replay(operation: Operation, apply: (push: (change: Change) => void) => void): void {
    this.identity = operation
    this.begin({ type: operation.type, paths: operation.paths, description: operation.description })
    this.depth = 1
    try {
      apply((change) => this.push(change))
    } finally {
      this.depth = 0
      this.finish()
      this.identity = undefined
    }
  }

  /** Refines the running operation's type once the call knows it (a write that created the file). */
  classify(type: OperationType): void {
    if (this.current && this.depth === 1) this.current = { ...this.current, type }
  }

  /** Runs `body` as one operation; nested calls join the outermost one. */
  run<T>(context: OperationContext, body: () => T): T {
    return this.runCall(context, body, undefined, NO_ARGUMENTS)
  }

  /** run for a method call: `body` called on `self` with `args` (the fs layer's calls, without a closure each). */
  runCall<T>(context: OperationContext, body: (...args: unknown[]) => T, self: unknown, args: unknown[]): T {
    if (this.muted > 0) return body.apply(self, args)
    if (this.depth++ === 0) this.begin(context)
    try {
      return body.apply(self, args)
    } finally {
      if (--this.depth === 0) this.finish()
    }
  }

  private begin(context: OperationContext): void {
    this.current = context
    // A replayed operation's changes take its recorded time; a new one's, the time of its first.
    this.overlay.beginTime(this.identity?.time)
    if (this.changeCount > 0) this.takeChanges() // none: the last operation took its own
    this.needsFreeze = false
  }

  private push(change: Change): void {
    this.changes[this.changeCount++] = change
  }

  /** The running operation's changes, in an array of their own length; the kept array lets go of them. */
  private takeChanges(): Change[] {
    const count = this.changeCount
    const taken = this.changes.slice(0, count) as Change[]
    for (let i = 0; i < count; i++) this.changes[i] = undefined
    this.changeCount = 0
    return taken
  }

  private finish(): OperationRecord | undefined {
    const context = this.current
    this.current = undefined
    const time = this.overlay.endTime()
    if (!context) return undefined
    const recorded = this.takeChanges()
    if (this.identity) {
      if (this.needsFreeze) this.overlay.freeze()
      return this.append(context, recorded, this.identity.strategy)
    }
    // Rewriting a file with the same bytes and mode changes nothing an undo could bring back but the
    // times the write itself set (the operation's); setting other times (utimes, cp's preserved ones) does.
    const kept = withoutRewrites(recorded, time)
    const changes = kept === recorded ? recorded : kept.slice()
    if (changes.length === 0) {
      this.feed?.seal() // no-op writes record nothing, but watchers still see them (as on Linux)
      return undefined
    }
    // Directory nodes held by the record must never change in place afterwards.
    if (this.needsFreeze) this.overlay.freeze()
    return this.append(context, changes, snapshot, undefined, time)
  }

  /** `time`: the time the operation's changes took (Overlay.now), its record's. */
  append(context: OperationContext, changes: readonly Change[], strategy = snapshot, parent?: string, time = Date.now()): OperationRecord {
    const identity = this.identity
    const seq = identity ? identity.seq : ++this.seq
    if (identity) this.seq = Math.max(this.seq, seq)
    const turn = identity ? identity.turn : this.turn
    const group = identity ? identity.group : (context.group ?? this.group)
    const id = identity?.id ?? this.idStart + seq.toString(36)
    if (identity) time = identity.time
    const session = identity?.session ?? this.session
    const description = context.description
    let record: OperationRecord
    if (turn === undefined && group === undefined && description === undefined && parent === undefined) {
      // The usual record, as one literal: its fields all in the object (added one by one, the later ones go to a second array).
      record = { id, seq, type: context.type, paths: context.paths, time, session, strategy: identity?.strategy ?? strategy, changes, undone: false }
    } else {
      const built = { id, seq, type: context.type, paths: context.paths, time, session } as { -readonly [K in keyof OperationRecord]: OperationRecord[K] }
      // Optional fields only when set, in this order (as records read back from a store have them); no spread temporaries.
      if (turn !== undefined) built.turn = turn
      if (group !== undefined) built.group = group
      if (description !== undefined) built.description = description
      built.strategy = identity?.strategy ?? strategy
      if (parent !== undefined) built.parent = parent
      built.changes = changes
      built.undone = false
      record = built
    }
    this.records.push(record)
    if (!identity) this.onAppend?.(record)
    this.feed?.seal(record)
    // Dropped in batches so trimming stays amortised O(1) per operation.
    if (this.records.length > this.limit + Math.max(16, this.limit >> 3)) this.records.splice(0, this.records.length - this.limit)
    return record
  }

  /** Records a whole-tree move as one operation. */
  appendRoot(context: OperationContext, change: Omit<RootChange, 'kind' | 'path'>): OperationRecord {
    return this.append(context, [{ kind: 'root', path: '/', ...change }])
  }

  /** The record's changes as slots (root moves expanded; cost proportional to what differs). */
  slots(record: OperationRecord): (SlotChange | StateChange)[] {
    const out: (SlotChange | StateChange)[] = []
    for (const change of record.changes) {
      if (change.kind === 'effect') continue
      if (change.kind !== 'root') out.push(change)
      else {
        upperSlotDiff(
          change.before,
          change.after,
          (path, before, after) => out.push({ kind: 'slot', path, before, after }),
          (path, before, after) => out.push({ kind: 'meta', path, before, after }),
        )
        if (change.stateBefore && change.stateAfter) {
          mapDiff(change.stateBefore, change.stateAfter, (key, before, after) => out.push({ kind: 'state', path: `state:${key}`, key, before, after }))
        }
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
        else if (change.kind === 'state') this.sessionState?.write(change.key, change.before)
        else this.overlay.setDirMeta(change.path, change.before)
      }
    })
    this.overlay.freeze()
    this.feed?.seal(record, 'undo')
  }

  /** Applies an operation's slots again (redo). */
  reapply(record: OperationRecord): void {
    const changes = this.slots(record)
    this.overlay.freeze()
    this.silently(() => {
      for (const change of changes) {
        if (change.kind === 'slot') this.overlay.setSlot(change.path, change.after)
        else if (change.kind === 'state') this.sessionState?.write(change.key, change.after)
        else this.overlay.setDirMeta(change.path, change.after)
      }
    })
    this.overlay.freeze()
    this.feed?.seal(record, 'redo')
  }

  /** Runs `body` without recording it (undo, redo, purge). */
  silently(body: () => void): void {
    this.muted++
    try {
      body()
    } finally {
      this.muted--
    }
  }

  /**
   * Later live operations whose paths overlap with `record`'s: the same path, an ancestor or a
   * descendant. A directory's metadata is that directory alone: it overlaps its own path and an
   * entry that replaced the directory or one above, not everything below it. Its times alone (what
   * a transaction records for each directory it wrote in) are no dependency: two transactions
   * writing files side by side in one directory undo apart, as two writes do.
   */
  dependants(record: OperationRecord): OperationRecord[] {
    const mine = this.slots(record).filter((change) => !timesOnly(change))
    const overlap = (a: SlotChange | StateChange, b: SlotChange | StateChange) => {
      if (timesOnly(b)) return false
      if (a.kind === 'meta' && b.kind === 'meta') return a.path === b.path
      if (a.kind === 'meta') return isWithin(a.path, b.path)
      if (b.kind === 'meta') return isWithin(b.path, a.path)
      return isWithin(a.path, b.path) || isWithin(b.path, a.path)
    }
    return this.records.filter((other) => other.seq > record.seq && !other.undone && this.slots(other).some((c) => mine.some((m) => overlap(m, c))))
  }

  find(id: string): OperationRecord | undefined {
    return this.records.find((r) => r.id === id)
  }
}

export function publicOperation(record: OperationRecord): Operation {
  // `changes` is not read: an operation's changes still in the snapshot's parts stay there (lazy-history.ts).
  const { undone: _undone, ...operation } = record as Omit<OperationRecord, 'changes'> & { changes?: unknown }
  delete operation.changes
  return operation
}

/**
 * The changes without rewrites of a file with its own bytes, mode and times (but those the operation
 * itself set at `time`, a write's); the same array when there are none (the usual case).
 */
function withoutRewrites(changes: Change[], time: number | undefined): Change[] {
  for (const c of changes) if (c.kind === 'slot' && sameFile(c.before, c.after, time)) return changes.filter((c) => !(c.kind === 'slot' && sameFile(c.before, c.after, time)))
  return changes
}

function sameFile(a: UpperNode | undefined, b: UpperNode | undefined, time: number | undefined): boolean {
  return (
    a?.type === 'file' &&
    b?.type === 'file' &&
    a.blob === b.blob &&
    a.meta.mode === b.meta.mode &&
    a.meta.uid === b.meta.uid &&
    a.meta.gid === b.meta.gid &&
    a.nlink === b.nlink &&
    (b.meta.mtimeMs === a.meta.mtimeMs || b.meta.mtimeMs === time) &&
    (b.meta.atimeMs === a.meta.atimeMs || b.meta.atimeMs === time)
  )
}

/** A directory metadata change of its times alone. */
export function timesOnly(change: SlotChange | StateChange): boolean {
  if (change.kind !== 'meta') return false
  const { before, after } = change
  return before.mode === after.mode && before.uid === after.uid && before.gid === after.gid
}
