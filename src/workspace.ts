/**
 * A workspace: one session's upper layer over a lower source, with checkpoints. A checkpoint keeps
 * the current upper tree (frozen by switching the edit token), so it costs O(1); restore moves the
 * tree pointer back; reset swaps in an empty upper layer. The Node-compatible `fs` is generated from
 * FsOperations over the overlay.
 */
import { Collector } from './blob/collector.js'
import { BlobStore } from './blob/store.js'
import { type Change, type ChangeRecord, diffTrees, unifiedDiff } from './diff.js'
import { decode, isProbablyText } from './bytes.js'
import { FsError } from './errors.js'
import { Journal, type Operation, type OperationRecord, type OperationType, publicOperation } from './engine/journal.js'
import { FsOperations } from './fs/operations.js'
import { createFs } from './fs/surface.js'
import { type DirNode, dirNode } from './layer/nodes.js'
import { type LowerInput, toLowerSource } from './lower/index.js'
import type { LowerSource } from './lower/source.js'
import { Overlay } from './overlay.js'
import { absolute, dirname, basename, pathMatcher } from './path.js'

export type CheckpointKind = 'manual' | 'auto' | 'turn' | 'compact' | 'guard'

export interface Checkpoint {
  readonly id: string
  readonly name: string
  readonly kind: CheckpointKind
  readonly seq: number
  /** Milliseconds since the epoch. */
  readonly createdAt: number
}

export interface RestoreOptions {
  /** Globs: restore only matching paths (a directory pattern covers what is under it). */
  include?: readonly string[]
  exclude?: readonly string[]
  /** Report what would change, with patches, and change nothing. */
  dryRun?: boolean
}

export interface RestoreReport {
  applied: boolean
  changes: Change[]
}

export interface WorkspaceOptions {
  /** The read-only base: a fixture object, a WebContainers FileSystemTree, a sync fs (memfs Volume), or a LowerSource. */
  lower?: LowerInput
  /** File-creation mask, 0o022 by default as on most Linux systems. */
  umask?: number
  /** The session's name (checkpoint names are unique per session). */
  session?: string
  retention?: {
    /** Operations kept for undo and history (default 10 000); older ones can no longer be undone. */
    operations?: number
  }
}

/** The Node fs shape we implement. A type query only: nothing from Node is loaded by the core. */
export type NodeFs = typeof import('node:fs')

export interface WorkspaceCounters {
  /** Upper directory nodes created or copied (path copying). */
  readonly nodesCopied: number
  /** Merged lookups performed. */
  readonly lookups: number
  /** Blob store reads and writes. */
  readonly blobsTouched: number
}

interface CheckpointRecord extends Checkpoint {
  readonly root: DirNode
}

let workspaceCount = 0

export class Workspace {
  readonly fs: NodeFs
  readonly session: string
  private readonly overlay: Overlay
  private readonly ops: FsOperations
  private readonly records: CheckpointRecord[] = []
  private readonly collector: Collector
  private readonly unregister: () => void
  private readonly journal: Journal
  /** What the last undo removed, for redo; cleared by the next new operation. */
  private redoable: OperationRecord[] = []
  private redoMark = 0
  private seq = 0
  private closed = false
  private readonly idPrefix = `${(++workspaceCount).toString(36)}${Math.random().toString(36).slice(2, 6)}`

  private constructor(readonly lower: LowerSource, options: WorkspaceOptions) {
    const blobs = new BlobStore()
    this.session = options.session ?? 'main'
    this.overlay = new Overlay(lower, blobs, { next: 1 })
    this.ops = new FsOperations(this.overlay)
    if (options.umask !== undefined) this.ops.umask = options.umask & 0o777
    this.journal = new Journal(this.overlay, this.session, this.idPrefix, options.retention?.operations)
    this.ops.journal = this.journal
    this.fs = createFs(this.ops) as unknown as NodeFs
    this.collector = new Collector(blobs)
    this.unregister = this.collector.register({ roots: () => this.gcRoots() })
  }

  static async open(options: WorkspaceOptions = {}): Promise<Workspace> {
    return new Workspace(toLowerSource(options.lower), options)
  }

  /** Relative paths given to `fs` resolve against this directory ('/' at first). */
  chdir(path: string): void {
    const entry = this.overlay.resolve(absolute(path, this.ops.cwd), 'chdir', true, path)
    if (entry.type !== 'dir') throw new FsError('ENOTDIR', 'chdir', path)
    this.ops.cwd = entry.path
  }

  cwd(): string {
    return this.ops.cwd
  }

  get umask(): number {
    return this.ops.umask
  }

  /** Records the whole environment as it is now. O(1) in the size of the tree. */
  async checkpoint(options: { name?: string; kind?: Exclude<CheckpointKind, 'guard'> } = {}): Promise<Checkpoint> {
    this.assertOpen()
    const kind = options.kind ?? 'manual'
    if (!['manual', 'auto', 'turn', 'compact'].includes(kind)) {
      throw new TypeError(`rewindfs: checkpoint kind must be manual, auto, turn or compact (guard checkpoints are made by restore); got ${String(kind)}`)
    }
    return this.addCheckpoint(kind, options.name)
  }

  private addCheckpoint(kind: CheckpointKind, name?: string): Checkpoint {
    this.ops.settle()
    const seq = ++this.seq
    const checkpointName = name ?? `${kind}-${seq}`
    if (typeof checkpointName !== 'string' || checkpointName === '') throw new TypeError('rewindfs: a checkpoint name must be a non-empty string')
    if (this.records.some((record) => record.name === checkpointName)) {
      throw new FsError('EEXIST', 'checkpoint', checkpointName, undefined, 'a checkpoint with this name already exists in this session')
    }
    const record: CheckpointRecord = {
      id: `ckpt-${this.idPrefix}-${seq.toString(36)}`,
      name: checkpointName,
      kind,
      seq,
      createdAt: Date.now(),
      root: this.overlay.freeze(),
    }
    this.records.push(record)
    return publicCheckpoint(record)
  }

  /** Checkpoints of this session, oldest first. */
  checkpoints(): Checkpoint[] {
    return this.records.map(publicCheckpoint)
  }

  private find(idOrName: string): CheckpointRecord {
    const record = this.records.find((r) => r.id === idOrName) ?? this.records.find((r) => r.name === idOrName)
    if (!record) throw new FsError('ENOENT', 'restore', idOrName, undefined, 'no such checkpoint')
    return record
  }

  /**
   * Brings the tree back to a checkpoint. Without include/exclude this is a pointer move; the
   * report lists what changed (cost proportional to the paths that differ).
   */
  async restore(idOrName: string, options: RestoreOptions = {}): Promise<RestoreReport> {
    this.assertOpen()
    this.ops.settle()
    const target = this.find(idOrName)
    const filtered = options.include !== undefined || options.exclude !== undefined
    const matches = pathMatcher(options.include, options.exclude)
    const records = diffTrees(this.overlay, this.overlay.root, target.root).filter((r) => !filtered || matches(r.change.path))
    const changes = records.map((r) => r.change)
    if (options.dryRun) return { applied: false, changes }
    if (changes.length === 0) return { applied: true, changes }
    const paths = changes.map((c) => c.path)
    if (!filtered) {
      const before = this.overlay.freeze()
      this.overlay.setRoot(target.root)
      this.journal.appendRoot({ type: 'restore', paths, description: `restore ${target.name}` }, before, target.root)
    } else {
      this.journal.run({ type: 'restore', paths, description: `restore ${target.name} (filtered)` }, () => this.applyRecords(records))
    }
    this.collector.maybeSchedule()
    return { applied: true, changes }
  }

  /** Applies selected differences one path at a time: parents before children, deletions deepest first. */
  private applyRecords(records: ChangeRecord[]): void {
    const overlay = this.overlay
    const parentOf = (path: string) => {
      const dir = dirname(path)
      const existing = this.tryResolve(dir)
      if (existing?.type === 'dir') return existing
      this.ops.mkdir(dir, { recursive: true })
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
    this.ops.rm(path, { recursive: true, force: true })
  }

  private tryResolve(path: string) {
    try {
      return this.overlay.resolve(path, 'restore', false)
    } catch {
      return undefined
    }
  }

  /** Differences between two checkpoints, or from a checkpoint to now. */
  diff(from: string, to?: string): Change[] {
    this.ops.settle()
    const start = this.find(from).root
    const end = to === undefined ? this.overlay.root : this.find(to).root
    return diffTrees(this.overlay, start, end).map((r) => r.change)
  }

  /** The upper layer's changes against the lower source. */
  changes(): Change[] {
    this.ops.settle()
    return diffTrees(this.overlay, Overlay.emptyRoot(this.lower), this.overlay.root).map((r) => r.change)
  }

  /** Discards the upper layer: the lower tree shows again. O(1); checkpoints are kept. */
  async reset(): Promise<void> {
    this.assertOpen()
    this.ops.settle()
    const before = this.overlay.freeze()
    const empty = Overlay.emptyRoot(this.lower)
    this.overlay.setRoot(empty)
    this.journal.appendRoot({ type: 'reset', paths: ['/'], description: 'reset to the lower layer' }, before, empty)
    this.collector.maybeSchedule()
  }

  /**
   * Undoes the last matching operations, newest first. Selective undo (types, paths, group) refuses
   * when a later operation depends on a selected one (same path, ancestor or descendant), listing
   * the blockers, unless `cascade` undoes them too.
   */
  async undo(options: UndoOptions = {}): Promise<UndoResult> {
    this.assertOpen()
    this.ops.settle()
    const steps = options.steps ?? 1
    if (!Number.isInteger(steps) || steps < 1 || steps > 50) throw new RangeError(`rewindfs: undo steps must be an integer from 1 to 50; got ${String(steps)}`)
    const matches = (record: OperationRecord) =>
      !record.undone &&
      (!options.types || options.types.includes(record.type)) &&
      (!options.group || record.group === options.group) &&
      (!options.paths || record.paths.some((p) => options.paths!.some((q) => p === q || p.startsWith(q.endsWith('/') ? q : q + '/'))))
    const selected: OperationRecord[] = []
    for (let i = this.journal.records.length - 1; i >= 0 && selected.length < steps; i--) {
      if (matches(this.journal.records[i])) selected.push(this.journal.records[i])
    }
    const chosen = new Set(selected)
    for (const record of selected) {
      const blockers = this.journal.dependants(record).filter((other) => !chosen.has(other))
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
      for (const change of this.journal.slots(record)) {
        files.add(change.path)
        if (change.kind !== 'slot') continue
        const before = change.before?.type === 'file' ? this.overlay.blobs.get(change.before.blob) : undefined
        const after = change.after?.type === 'file' ? this.overlay.blobs.get(change.after.blob) : undefined
        if (before === undefined && after === undefined) continue
        const counts = lineCounts(before, after)
        const entry = (changesReverted[change.path] ??= { linesRestored: 0, linesRemoved: 0 })
        entry.linesRestored += counts.restored
        entry.linesRemoved += counts.removed
      }
    }
    if (!options.dryRun) {
      for (const record of ordered) {
        this.journal.revert(record)
        record.undone = true
      }
      this.redoable = ordered
      this.redoMark = this.journal.records.length
    }
    const next = this.journal.records.findLast((r) => !r.undone && !chosen.has(r))
    return {
      undone: ordered.map(publicOperation),
      filesAffected: files.size,
      changesReverted,
      compensated: [],
      ...(next ? { next: publicOperation(next) } : {}),
    }
  }

  /** Re-applies what the last undo removed, until a new operation is recorded. */
  async redo(): Promise<{ redone: Operation[] }> {
    this.assertOpen()
    this.ops.settle()
    if (this.journal.records.length !== this.redoMark || this.redoable.length === 0) return { redone: [] }
    const records = [...this.redoable].sort((a, b) => a.seq - b.seq)
    for (const record of records) {
      this.journal.reapply(record)
      record.undone = false
    }
    this.redoable = []
    return { redone: records.map(publicOperation) }
  }

  /** Operations, newest first. */
  history(filter: HistoryFilter = {}): Operation[] {
    this.ops.settle()
    const out: Operation[] = []
    for (let i = this.journal.records.length - 1; i >= 0; i--) {
      const r = this.journal.records[i]
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
    const record = this.journal.find(id)
    if (!record) return undefined
    const diff = this.journal.slots(record).flatMap((change) => {
      if (change.kind !== 'slot') return []
      const before = change.before?.type === 'file' ? this.overlay.blobs.get(change.before.blob) : new Uint8Array(0)
      const after = change.after?.type === 'file' ? this.overlay.blobs.get(change.after.blob) : new Uint8Array(0)
      if (change.before?.type !== 'file' && change.after?.type !== 'file') return [{ path: change.path }]
      return [{ path: change.path, patch: unifiedDiff(change.path, before, after) }]
    })
    return { ...publicOperation(record), undone: record.undone, diff }
  }

  /** Work counters, for complexity tests and diagnostics. */
  get counters(): WorkspaceCounters {
    return { ...this.overlay.counters, blobsTouched: this.overlay.blobs.counters.touched }
  }

  /** Blob store occupancy. */
  get storage(): { blobs: number; bytes: number } {
    return { blobs: this.overlay.blobs.count, bytes: this.overlay.blobs.bytes }
  }

  /** Runs a full garbage collection cycle now (normally it runs in the background). */
  collectGarbage(): void {
    this.collector.collect()
  }

  async close(): Promise<void> {
    if (this.closed) return
    for (const file of [...this.ops.descriptors.all()]) this.ops.close(file.fd)
    this.closed = true
    this.collector.stop()
    this.unregister()
    await this.lower.close?.()
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('rewindfs: this workspace is closed')
  }

  private *gcRoots(): Iterable<DirNode | string> {
    yield this.overlay.freeze()
    for (const record of this.records) yield record.root
    // Undo and redo keep previous versions alive.
    for (const record of this.journal.records) {
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
  compensated: string[]
  /** The operation a further undo would take. */
  next?: Operation
}

export interface HistoryFilter {
  path?: string
  type?: OperationType
  group?: string
  since?: number
  until?: number
  session?: string
  limit?: number
}

/** Lines an undo restores (present before, gone after) and removes (added by the operation). */
function lineCounts(before: Uint8Array | undefined, after: Uint8Array | undefined): { restored: number; removed: number } {
  const lines = (bytes: Uint8Array | undefined) => (bytes && isProbablyText(bytes) ? decode(bytes).split('\n') : [])
  const a = lines(before)
  const b = lines(after)
  const counts = new Map<string, number>()
  for (const line of a) counts.set(line, (counts.get(line) ?? 0) + 1)
  let common = 0
  for (const line of b) {
    const n = counts.get(line) ?? 0
    if (n > 0) {
      counts.set(line, n - 1)
      common++
    }
  }
  return { restored: a.length - common, removed: b.length - common }
}

function publicCheckpoint(record: CheckpointRecord): Checkpoint {
  return { id: record.id, name: record.name, kind: record.kind, seq: record.seq, createdAt: record.createdAt }
}
