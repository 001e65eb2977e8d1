/**
 * The checkpoints of one session and its resume point. A checkpoint keeps the frozen tree and
 * session state of its moment, so making one is O(1); this module names them, finds them, prunes
 * the rolling ones by retention and makes the automatic ones the policy asks for. Restore and undo
 * read them; the durable journal replays into them; the collector keeps their trees alive.
 */
import { diffTrees, type Change } from '../diff.js'
import { FsError } from '../errors.js'
import type { DirNode } from '../layer/nodes.js'
import { Overlay } from '../overlay.js'
import { AutoCheckpoints } from './auto-checkpoint.js'
import type { EngineContext } from './context.js'
import type { CheckpointRecord, DurableHost } from './durability.js'
import { type Operation, type OperationType, publicOperation } from './journal.js'
import { rootPending } from './pending-history.js'
import { treeSize } from './reports.js'
import { retained } from './retention.js'
import type { JsonValue } from './state.js'

export type CheckpointKind = 'manual' | 'auto' | 'turn' | 'compact' | 'guard'

export interface Checkpoint {
  readonly id: string
  readonly name: string
  readonly kind: CheckpointKind
  readonly seq: number
  /** The seq of the last operation before it: orders checkpoints among `history()`. */
  readonly operationSeq: number
  /** Milliseconds since the epoch. */
  readonly createdAt: number
  readonly session: string
  readonly description?: string
  /** A later restore went back before this checkpoint; it is still restorable. */
  readonly superseded?: boolean
  /** Content it needs is missing from the store: kept, but restore refuses it. */
  readonly broken?: boolean
}

export interface CheckpointInfo {
  files: number
  totalLines: number
  bytes: number
  lastOperation?: Operation
  changesSincePrevious: number
}

export interface ResumePoint {
  phase: 'plan' | 'execute' | 'verify' | 'stopped'
  turn: number
  data?: JsonValue
}

export class Checkpoints {
  /** Oldest first. The durable journal replays into this array and purge scrubs it. */
  readonly records: CheckpointRecord[] = []
  private seq = 0
  private resumePoint: ResumePoint | undefined
  private readonly autoCheckpoints: AutoCheckpoints<CheckpointRecord>

  constructor(
    private readonly context: EngineContext,
    private readonly idPrefix: string,
  ) {
    const { overlay, journal, options } = context
    this.autoCheckpoints = new AutoCheckpoints(options.autoCheckpoint, {
      isDirectory: (path) => overlay.peek(path, false)?.type === 'dir',
      isLowerFile: (path) => {
        const entry = overlay.peek(path, true)
        return entry?.type === 'file' && entry.node === undefined
      },
      lastCheckpoint: () => {
        for (let i = this.records.length - 1; i >= 0; i--) if (this.records[i].kind !== 'guard') return this.records[i]
        return undefined
      },
      unchangedSince: (checkpoint) => checkpoint.root === overlay.root && checkpoint.opSeq === journal.lastSeq,
      hasOperations: () => journal.lastSeq > 0,
    })
  }

  /** ws.checkpoint(): a checkpoint of a kind the user may make. */
  create(options: { name?: string; kind?: Exclude<CheckpointKind, 'guard'>; description?: string }): Checkpoint {
    this.context.assertOpen()
    const kind = options.kind ?? 'manual'
    if (!['manual', 'auto', 'turn', 'compact'].includes(kind)) {
      throw new TypeError(`rewindfs: checkpoint kind must be manual, auto, turn or compact (guard checkpoints are made by restore); got ${String(kind)}`)
    }
    if (options.description !== undefined && typeof options.description !== 'string') throw new TypeError('rewindfs: a checkpoint description must be a string')
    return this.add(kind, options.name, options.description)
  }

  /** A checkpoint of any kind (restore's guard, the automatic ones): the tree and state of now, kept. */
  add(kind: CheckpointKind, name?: string, description?: string): Checkpoint {
    const { ops, overlay, state, journal } = this.context
    ops.settle()
    const seq = ++this.seq
    const checkpointName = name ?? `${kind}-${seq}`
    this.assertNameFree(checkName(checkpointName, 'checkpoint'))
    const record: CheckpointRecord = {
      id: `ckpt-${this.idPrefix}-${seq.toString(36)}`,
      name: checkpointName,
      kind,
      seq,
      createdAt: Date.now(),
      ...(description !== undefined ? { description } : {}),
      superseded: false,
      root: overlay.freeze(),
      state: state.freeze(),
      opSeq: journal.lastSeq,
    }
    this.records.push(record)
    this.context.durability?.record({
      t: 'checkpoint',
      id: record.id,
      name: record.name,
      kind: record.kind,
      seq: record.seq,
      createdAt: record.createdAt,
      ...(description !== undefined ? { description } : {}),
      opSeq: record.opSeq,
    })
    this.prune()
    const checkpoint = this.publicCheckpoint(record)
    ops.changes.post('checkpoint', checkpoint)
    return checkpoint
  }

  private assertNameFree(name: string): void {
    if (this.records.some((record) => record.name === name)) {
      throw new FsError('EEXIST', 'checkpoint', name, undefined, 'a checkpoint with this name already exists in this session')
    }
    // Looked up by id first: a name that is another checkpoint's id could never be used.
    if (this.records.some((record) => record.id === name)) throw new FsError('EEXIST', 'checkpoint', name, undefined, "another checkpoint's id is this name")
  }

  /**
   * Retention: the last N automatic checkpoints and, counted apart, the last N turn checkpoints
   * (the automatic ones a tool makes, one per undo_operation call, never push out an agent's
   * turns); manual, compact and guard ones stay.
   */
  prune(): void {
    const policy = this.context.options.retention?.checkpoints ?? 10
    const now = Date.now()
    const drop = new Set<CheckpointRecord>()
    for (const kind of ['auto', 'turn']) {
      const rolling = this.records.filter((r) => r.kind === kind)
      const keep = retained(rolling, policy, now)
      for (const record of rolling) if (!keep.has(record)) drop.add(record)
    }
    if (drop.size === 0) return
    for (let i = this.records.length - 1; i >= 0; i--) {
      if (!drop.has(this.records[i])) continue
      this.context.durability?.record({ t: 'checkpoint-delete', id: this.records[i].id })
      this.records.splice(i, 1)
    }
    this.context.collector.maybeSchedule()
  }

  /** Before a mutating call: the automatic checkpoint the policy asks for, if any (auto-checkpoint.ts). */
  beforeOperation(type: OperationType, paths: readonly string[]): void {
    const reason = this.autoCheckpoints.before(type, paths)
    if (reason !== undefined) this.add('auto', undefined, reason)
  }

  list(): Checkpoint[] {
    return this.records.map((r) => this.publicCheckpoint(r))
  }

  private publicCheckpoint(record: CheckpointRecord): Checkpoint {
    return {
      id: record.id,
      name: record.name,
      kind: record.kind,
      seq: record.seq,
      operationSeq: record.opSeq,
      createdAt: record.createdAt,
      session: this.context.session,
      ...(record.description !== undefined ? { description: record.description } : {}),
      ...(record.superseded ? { superseded: true } : {}),
      ...(record.broken ? { broken: true } : {}),
    }
  }

  /** The checkpoint of that id or name; ENOENT names `syscall`, the call that looked for it. */
  find(idOrName: string, syscall: string): CheckpointRecord {
    if (typeof idOrName !== 'string') throw new TypeError('rewindfs: a checkpoint is named by its id or name (a string)')
    const record = this.records.find((r) => r.id === idOrName) ?? this.records.find((r) => r.name === idOrName)
    if (!record) throw new FsError('ENOENT', syscall, idOrName, undefined, 'no such checkpoint')
    return record
  }

  /** The newest checkpoint made at or before operation `opSeq`. */
  latestAt(opSeq: number): CheckpointRecord | undefined {
    return this.records.findLast((r) => r.opSeq <= opSeq)
  }

  /** The newest checkpoint made at or before operation `opSeq` whose tree the history still reads as its state there. */
  replayBaseAt(opSeq: number): CheckpointRecord | undefined {
    return this.records.findLast((r) => r.opSeq <= opSeq && r.replayBase !== false)
  }

  /** Operations from `fromSeq` on were undone or redone: see markHistoryRewritten. */
  historyRewritten(fromSeq: number): void {
    markHistoryRewritten(this.records, fromSeq)
  }

  /** The newest checkpoint an escalation can go back to. */
  nearest(): CheckpointRecord | undefined {
    return this.records.findLast((r) => r.seq > 0)
  }

  /** A restore went back before these: marks the later ones (but the restore's own guard) superseded. */
  supersedeAfter(seq: number, guard: Checkpoint): void {
    const superseded = this.records.filter((r) => r.seq > seq && r.id !== guard.id && !r.superseded)
    for (const record of superseded) record.superseded = true
    if (superseded.length > 0) this.context.durability?.record({ t: 'superseded', ids: superseded.map((r) => r.id) })
  }

  rename(idOrName: string, newName: string): Checkpoint {
    const record = this.find(idOrName, 'renameCheckpoint')
    if (record.name !== checkName(newName, 'renameCheckpoint')) this.assertNameFree(newName)
    record.name = newName
    this.context.durability?.record({ t: 'checkpoint-rename', id: record.id, name: newName })
    return this.publicCheckpoint(record)
  }

  delete(idOrName: string): void {
    const record = this.find(idOrName, 'deleteCheckpoint')
    this.records.splice(this.records.indexOf(record), 1)
    this.context.durability?.record({ t: 'checkpoint-delete', id: record.id })
    this.context.collector.maybeSchedule()
  }

  async info(idOrName: string): Promise<CheckpointInfo> {
    const { overlay, lower, journal } = this.context
    const record = this.find(idOrName, 'checkpointInfo')
    const index = this.records.indexOf(record)
    const lowerRoot = Overlay.emptyRoot(lower)
    const previous = index > 0 ? this.records[index - 1].root : lowerRoot
    const last = journal.records.findLast((r) => r.seq <= record.opSeq)
    return {
      ...treeSize(overlay, lower, lowerRoot, record.root),
      ...(last ? { lastOperation: publicOperation(last) } : {}),
      changesSincePrevious: diffTrees(overlay, previous, record.root).length,
    }
  }

  /** Differences between two checkpoints, or from a checkpoint to now. */
  diff(from: string, to?: string): Change[] {
    const { ops, overlay } = this.context
    ops.settle()
    const start = this.find(from, 'diff').root
    const end = to === undefined ? overlay.root : this.find(to, 'diff').root
    return diffTrees(overlay, start, end).map((r) => r.change)
  }

  beginTurn(turn: number): Checkpoint {
    if (!Number.isInteger(turn) || turn < 0) throw new TypeError('rewindfs: a turn is a non-negative integer')
    this.context.journal.turn = turn
    this.autoCheckpoints.newBurst()
    const name = this.records.some((r) => r.name === `turn-${turn}`) ? undefined : `turn-${turn}`
    return this.add('turn', name)
  }

  get resume(): ResumePoint | undefined {
    return this.resumePoint && structuredClone(this.resumePoint)
  }

  setResume(point: ResumePoint): void {
    if (!point || !['plan', 'execute', 'verify', 'stopped'].includes(point.phase) || !Number.isInteger(point.turn)) {
      throw new TypeError("rewindfs: a resume point is { phase: 'plan'|'execute'|'verify'|'stopped', turn: integer, data? }")
    }
    this.resumePoint = structuredClone(point)
    this.context.durability?.record({ t: 'resume', point: this.resumePoint as unknown as JsonValue })
  }

  /** What the durable journal reads and replays of them (durability.ts). */
  durable(): Pick<DurableHost, 'checkpoints' | 'setResume' | 'getResume' | 'checkpointSeq' | 'seenCheckpointSeq'> {
    return {
      checkpoints: this.records,
      setResume: (point) => {
        this.resumePoint = point as unknown as ResumePoint
      },
      getResume: () => this.resumePoint as unknown as JsonValue | undefined,
      checkpointSeq: () => this.seq,
      seenCheckpointSeq: (seq) => {
        this.seq = Math.max(this.seq, seq)
      },
    }
  }

  /** Garbage-collection roots: every checkpoint's tree (one still in the snapshot's parts is kept through them: SessionStore.historyRoots). */
  *roots(): Iterable<DirNode> {
    for (const record of this.records) if (!rootPending(record)) yield record.root
  }
}

/**
 * An undo or redo flipped operations from `fromSeq` on: a checkpoint made after any of them
 * (opSeq >= fromSeq) holds the tree of when they were (or were not) undone, which is no state of
 * the history any more, so it stops being a replay base. The live engine and the journal's
 * replay both mark here, in the order of the records, so a reopened session agrees.
 */
export function markHistoryRewritten(records: readonly CheckpointRecord[], fromSeq: number): void {
  for (const record of records) if (record.opSeq >= fromSeq) record.replayBase = false
}

/** Most characters a checkpoint name may have (as a session name). */
const NAME_MAX_CHARS = 200

/**
 * A checkpoint name as listings print it on a line of their own: 1 to 200 characters, no control
 * characters (a newline would forge a line of `rewindfs checkpoints`) and no lone surrogates.
 */
function checkName(name: unknown, syscall: string): string {
  if (typeof name !== 'string' || name === '') throw new TypeError('rewindfs: a checkpoint name must be a non-empty string')
  // Characters are code points: an emoji is one, two UTF-16 units.
  const characters = name.length > NAME_MAX_CHARS ? [...name].length : name.length
  if (characters > NAME_MAX_CHARS) throw new FsError('EINVAL', syscall, undefined, undefined, `a checkpoint name is 1 to ${NAME_MAX_CHARS} characters, this one ${characters}`)
  if (/[\u0000-\u001f\u007f]|\p{Surrogate}/u.test(name)) {
    throw new FsError('EINVAL', syscall, JSON.stringify(name), undefined, 'a checkpoint name must not hold control characters (a newline, a tab, NUL) or lone surrogates')
  }
  return name
}
