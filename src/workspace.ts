/**
 * A workspace: one session's upper layer over a lower source, with checkpoints, restore, undo and
 * an optional durable store. This class is the public façade: it makes the session's overlay, fs
 * layer and journal, wires the engine's parts to them (src/engine/: checkpoints, restore, undo,
 * side effects, transactions, flushes and the session store, sharing one EngineContext) and
 * delegates to them. The Node-compatible `fs` is generated from FsOperations over the overlay.
 */
import { Collector } from './blob/collector.js'
import { BlobStore } from './blob/store.js'
import { type Change, diffTrees } from './diff.js'
import { FsError } from './errors.js'
import type { ExecOptions, ExecResult, ExecRunner, ExecSession } from './exec.js'
import { FlushBook } from './flush/book.js'
import type { FlushOptions, FlushReport } from './flush/flush.js'
import { PinnedLower } from './flush/pinned-lower.js'
import type { FlushTarget } from './flush/target.js'
import { FsOperations, MAX_FILE_SIZE } from './fs/operations.js'
import { createFs } from './fs/surface.js'
import type { DirNode } from './layer/nodes.js'
import { FIRST_UPPER_INO } from './layer/inodes.js'
import { type MapRoot, emptyMap } from './layer/persistent-map.js'
import { toLowerSource } from './lower/index.js'
import type { LowerSource } from './lower/source.js'
import { Overlay } from './overlay.js'
import { absolute, normalize } from './path.js'
import type { AutoCheckpointOptions } from './engine/auto-checkpoint.js'
import type { BisectOptions, BisectResult, ProbeTarget } from './engine/bisect.js'
import { type Checkpoint, type CheckpointInfo, type CheckpointKind, Checkpoints, type ResumePoint } from './engine/checkpoints.js'
import { type Alert, type EngineContext, type WorkspaceOptions, engineContext } from './engine/context.js'
import type { IntegrityReport } from './engine/durability.js'
import { WorkspaceEvents, feedEvents } from './engine/events.js'
import { Flushes } from './engine/flushes.js'
import { Journal, type Operation, type OperationType } from './engine/journal.js'
import { type PurgeHost, type PurgeReport, purge } from './engine/purge.js'
import type { RepairOptions, RepairReport } from './engine/repair.js'
import { type RestoreOptions, type RestoreReport, type RestoreTarget, Restores } from './engine/restore.js'
import { SerialQueue } from './engine/serial.js'
import { SessionStore, type StoreStatus } from './engine/session-store.js'
import { type StorageReport, cacheBytesOf, storageReport } from './engine/storage.js'
import { type SideEffectOptions, SideEffects, registerCompensator } from './engine/side-effects.js'
import { type JsonValue, SessionState } from './engine/state.js'
import { sessionOver } from './engine/store.js'
import { type StagedFs, type TransactionOptions, Transactions } from './engine/transaction.js'
import { type HistoryFilter, UndoHistory, type UndoOptions, type UndoResult } from './engine/undo.js'

export type { Alert, AutoCheckpointOptions, WorkspaceOptions, Checkpoint, CheckpointInfo, CheckpointKind, HistoryFilter, PurgeReport, ResumePoint }
export type { RestoreOptions, RestoreReport, RestoreTarget, UndoOptions, UndoResult }
export type { ExecOptions, ExecResult } from './exec.js'

/** The Node fs shape we implement. A type query only: nothing from Node is loaded by the core. */
export type NodeFs = typeof import('node:fs')

export interface WorkspaceCounters {
  /** Upper directory nodes created or copied (path copying). */
  readonly nodesCopied: number
  /** Merged lookups performed. */
  readonly lookups: number
  /** Blob store reads and writes. */
  readonly blobsTouched: number
  /** Blob contents read back from the durable store (contents on demand). */
  readonly blobsRead: number
  /** Bytes of contents hashed (and copied) as they were stored. */
  readonly bytesStored: number
}

/** The engine's parts, each owning its state (src/engine/). */
interface Engine {
  readonly checkpoints: Checkpoints
  readonly sideEffects: SideEffects
  readonly undo: UndoHistory
  readonly restore: Restores
  readonly flushes: Flushes
  readonly store: SessionStore
  readonly transactions: Transactions
}

/** What the sessions of one workspace share: content, inode numbers, the collector, the lower source and its flushes. */
interface Shared {
  readonly blobs: BlobStore
  readonly inodes: { next: number }
  readonly sessions: Set<string>
  collector: Collector | undefined
  lower?: PinnedLower
  readonly book: FlushBook
}

let workspaceCount = 0

export class Workspace {
  readonly fs: NodeFs
  /** Operations, undo/redo, checkpoints, restores and changed paths, for timelines (engine/events.ts). */
  readonly events: WorkspaceEvents
  readonly session: string
  private readonly overlay: Overlay
  private readonly ops: FsOperations
  private readonly collector: Collector
  private readonly unregister: () => void
  private readonly journal: Journal
  /** The agent's session state; captured by every checkpoint together with the files. */
  readonly state: SessionState
  /**
   * Why the configured store is not in use (the workspace runs in memory), what open repaired, and
   * `corrupt`: the damage that made open read-only (the workspace is frozen; see `repair()`).
   */
  readonly status: StoreStatus
  /** What the engine's parts share: the trees, the journal, the queue, the store, the gates (engine/context.ts). */
  private readonly context: EngineContext
  /** ws.exec's runner state (overlay mode keeps its exec layer here), closed with the workspace. */
  private execSession: ExecSession | undefined
  private readonly engine: Engine
  private readonly idPrefix = `${(++workspaceCount).toString(36)}${Math.random().toString(36).slice(2, 6)}`

  /** The lower source, as this workspace's trees see it (old states pinned by flushes into it). */
  readonly lower: PinnedLower

  private constructor(
    lower: LowerSource,
    options: WorkspaceOptions,
    private readonly shared: Shared = { blobs: new BlobStore(), inodes: { next: FIRST_UPPER_INO }, sessions: new Set(), collector: undefined, book: new FlushBook() },
    from?: { root: DirNode; state: MapRoot<JsonValue>; cwd: string },
  ) {
    this.lower = shared.lower ??= new PinnedLower(lower, shared.blobs)
    this.session = options.session ?? 'main'
    if (shared.sessions.has(this.session)) throw new Error(`rewindfs: a session named '${this.session}' is already open on this store`)
    shared.sessions.add(this.session)
    this.overlay = new Overlay(this.lower, shared.blobs, shared.inodes, from?.root)
    this.ops = new FsOperations(this.overlay)
    if (options.umask !== undefined) this.ops.umask = options.umask & 0o777
    if (options.maxFileSize !== undefined) {
      if (!Number.isInteger(options.maxFileSize) || options.maxFileSize < 0 || options.maxFileSize > MAX_FILE_SIZE) {
        throw new RangeError(`rewindfs: maxFileSize must be an integer from 0 to ${MAX_FILE_SIZE} bytes; got ${String(options.maxFileSize)}`)
      }
      this.ops.maxFileSize = options.maxFileSize
    }
    if (from) this.ops.cwd = from.cwd
    cacheBytesOf(options.cacheBytes)
    this.state = new SessionState()
    this.state.guard = (syscall) => this.context.assertWritable(syscall)
    if (from) this.state.setRoot(from.state)
    this.journal = new Journal(this.overlay, this.session, this.idPrefix, options.retention?.operations, this.state)
    this.ops.journal = this.journal
    this.collector = shared.collector ??= new Collector(shared.blobs)
    this.context = engineContext({
      session: this.session,
      overlay: this.overlay,
      ops: this.ops,
      journal: this.journal,
      state: this.state,
      lower: this.lower,
      book: shared.book,
      collector: this.collector,
      serial: new SerialQueue(() => this.sync()),
      options,
      origin: from ? { root: from.root, state: from.state } : { root: Overlay.emptyRoot(this.lower), state: emptyMap<JsonValue>() },
    })
    const context = this.context
    const checkpoints = new Checkpoints(context, this.idPrefix)
    const sideEffects = new SideEffects(context, (type, paths) => this.autoCheckpoint(type, paths))
    const undo = new UndoHistory(context, checkpoints, sideEffects)
    const restore = new Restores(context, checkpoints, sideEffects, undo)
    const flushes = new Flushes(context)
    const store = new SessionStore(context, checkpoints, sideEffects, flushes)
    const transactions = new Transactions(context, () => this.sync())
    this.engine = { checkpoints, sideEffects, undo, restore, flushes, store, transactions }
    this.status = this.engine.store.status
    this.ops.beforeOperation = (type, paths) => this.autoCheckpoint(type, paths)
    this.fs = createFs(this.ops, { load: (missing) => this.lower.prefetch([missing.path]), ...(options.watch ? { watch: options.watch } : {}) }) as unknown as NodeFs
    this.events = new WorkspaceEvents(feedEvents(this.ops.changes), this.ops.changes.deriver !== undefined)
    this.unregister = this.collector.register({ roots: () => this.gcRoots() })
  }

  static async open(options: WorkspaceOptions = {}): Promise<Workspace> {
    // A store opened for one session (postgres) names the workspace's session, or refuses another.
    const session = sessionOver(options.store, options.session)
    const ws = new Workspace(toLowerSource(options.lower), session === options.session ? options : { ...options, session })
    if (options.store) await ws.engine.store.attach(options.store)
    return ws
  }

  /**
   * A new session branching from the current state: it shares the lower layer and the blob store
   * (so nothing is copied) and has its own upper layer, history and checkpoints. O(1).
   */
  async fork(session?: string): Promise<Workspace> {
    this.context.assertOpen()
    this.ops.settle()
    const name = session ?? `${this.session}-fork-${this.shared.sessions.size}`
    return new Workspace(this.lower, { ...this.context.options, session: name }, this.shared, {
      root: this.overlay.freeze(),
      state: this.state.freeze(),
      cwd: this.ops.cwd,
    })
  }

  async close(): Promise<void> {
    if (this.context.closed) return
    await this.context.serial.idle() // calls already made finish first
    await this.ops.closeAll()
    await this.execSession?.close().catch(() => undefined)
    await this.sync().catch(() => undefined)
    await this.context.durability?.finishCompaction()
    await this.context.durability?.store.close?.()
    this.context.closed = true
    this.ops.changes.close()
    this.events.close()
    this.unregister()
    this.shared.sessions.delete(this.session)
    // The lower source and the collector belong to every session sharing them: the last one closes them.
    if (this.shared.sessions.size === 0) {
      this.collector.stop()
      await this.lower.close?.()
    }
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

  /** Loads the contents of these paths from an asynchronous lower source, so sync reads work. */
  async prefetch(paths: readonly string[]): Promise<void> {
    this.context.assertOpen()
    const lowerPaths: string[] = []
    for (const path of paths) {
      const entry = this.overlay.lookup(absolute(path, this.ops.cwd), true)
      if (entry?.type === 'file' && entry.node === undefined && entry.lowerPath !== null) lowerPaths.push(entry.lowerPath)
    }
    await this.lower.prefetch(lowerPaths)
  }

  /** Records the whole environment as it is now. O(1) in the size of the tree. */
  async checkpoint(options: { name?: string; kind?: Exclude<CheckpointKind, 'guard'>; description?: string } = {}): Promise<Checkpoint> {
    return this.recording('checkpoint', async () => this.engine.checkpoints.create(options))
  }

  /** Checkpoints of this session, oldest first. */
  checkpoints(): Checkpoint[] {
    return this.engine.checkpoints.list()
  }

  async renameCheckpoint(idOrName: string, newName: string): Promise<Checkpoint> {
    return this.recording('renameCheckpoint', async () => this.engine.checkpoints.rename(idOrName, newName))
  }

  async deleteCheckpoint(idOrName: string): Promise<void> {
    return this.recording('deleteCheckpoint', async () => this.engine.checkpoints.delete(idOrName))
  }

  /** Size of the tree at a checkpoint and what changed since the one before it: O(paths changed) after a first call. */
  async checkpointInfo(idOrName: string): Promise<CheckpointInfo> {
    return this.engine.checkpoints.info(idOrName)
  }

  /** Differences between two checkpoints, or from a checkpoint to now. */
  diff(from: string, to?: string): Change[] {
    return this.engine.checkpoints.diff(from, to)
  }

  /** Marks the start of agent turn `n`: a 'turn' checkpoint, and later operations carry the turn. */
  async beginTurn(turn: number): Promise<Checkpoint> {
    return this.recording('beginTurn', async () => this.engine.checkpoints.beginTurn(turn))
  }

  /** The resume point of this session (phase and turn to continue from), if one was set. */
  get resume(): ResumePoint | undefined {
    return this.engine.checkpoints.resume
  }

  async setResume(point: ResumePoint): Promise<void> {
    return this.recording('setResume', async () => this.engine.checkpoints.setResume(point))
  }

  /**
   * Brings files and state back to a checkpoint (or to a time, or to just after an operation).
   * Without include/exclude this is a pointer move; the report lists what changed, at a cost
   * proportional to the paths that differ. A guard checkpoint is made first, side effects recorded
   * after the target are compensated, and later checkpoints are marked superseded.
   */
  async restore(target: RestoreTarget, options: RestoreOptions = {}): Promise<RestoreReport> {
    return this.recording('restore', () => this.context.atomically(() => this.engine.restore.restore(target, options)), options.dryRun === true)
  }

  /** Undoes the last restore; called again before a new operation is recorded, re-applies it (EDEPENDENT after one). */
  async undoRestore(): Promise<{ undone?: Operation; redone?: Operation }> {
    return this.recording('undoRestore', () => this.engine.restore.undoRestore())
  }

  /** Discards the upper layer: the lower tree shows again. O(1); checkpoints are kept. */
  async reset(): Promise<void> {
    return this.recording('reset', async () => this.engine.restore.reset())
  }

  /**
   * Undoes the last matching operations, newest first. Selective undo (types, paths, group) refuses
   * when a later operation depends on a selected one (same path, ancestor or descendant), listing
   * the blockers, unless `cascade` undoes them too.
   */
  async undo(options: UndoOptions = {}): Promise<UndoResult> {
    return this.recording('undo', () => this.context.atomically(() => this.engine.undo.undo(options)), options.dryRun === true)
  }

  /** Re-applies what the last undo removed, until a new operation is recorded. */
  async redo(): Promise<{ redone: Operation[] }> {
    return this.recording('redo', async () => this.engine.undo.redo())
  }

  /** Operations, newest first. */
  history(filter: HistoryFilter = {}): (Operation & { undone?: true })[] {
    return this.engine.undo.history(filter)
  }

  /** One operation with the unified diff of each file it changed. */
  operation(id: string): (Operation & { undone: boolean; diff: { path: string; patch?: string }[] }) | undefined {
    return this.engine.undo.operation(id)
  }

  /**
   * Records an effect outside the workspace (an API call, a message sent). Undo and restore run its
   * compensation; it is reported as compensated, never as rolled back.
   */
  async recordSideEffect(effect: SideEffectOptions): Promise<Operation> {
    return this.recording('recordSideEffect', async () => this.engine.sideEffects.record(effect))
  }

  /** Registers a named compensation, so side effects recorded with `{ name, args }` can be compensated after a reopen. */
  static registerCompensator(name: string, compensate: (args: JsonValue | undefined) => unknown): void {
    registerCompensator(name, compensate)
  }

  /**
   * Runs `body` against a staging fs: its writes are invisible to `ws.fs` until validators pass
   * and the whole change set commits as one operation. Each transaction, one started inside another's
   * body included, stages and commits on its own (the engine cannot tell nested from concurrent).
   */
  async transaction<T>(body: (fs: NodeFs) => T | Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.engine.transactions.run(body as unknown as (fs: StagedFs) => T | Promise<T>, options)
  }

  /** The upper layer's changes against the lower source. */
  changes(): Change[] {
    return this.engine.flushes.changes()
  }

  /**
   * Applies the change set to a real place (a FlushTarget: a directory, an IndexedDB tree, a Docker
   * volume), all or nothing, after checking that nothing changed there since we read or last wrote
   * it (refused with the list unless `force`). Into the workspace's own lower source it is a rebase:
   * the old states are pinned first, so history, undo and restore stay exact. Several targets with
   * `canary: k` apply to k first, `verify`, then the rest; a failed verify rolls the canaries back.
   * Without a target, flushes into the lower source (when it is a FlushTarget, e.g. directory()).
   */
  async flush(target?: FlushTarget | readonly FlushTarget[], options: FlushOptions = {}): Promise<FlushReport> {
    return this.recording('flush', () => this.engine.flushes.flush(target, options), options.dryRun === true)
  }

  /**
   * Runs a shell command against the workspace; what it created, changed or deleted comes back as
   * one transaction (validators apply, one undo step). The runner is the `exec` option or the lower
   * source's own (a directory from rewindfs/adapters/node-fs); the core cannot start processes.
   */
  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const runner = this.runner()
    this.execSession ??= runner.open({
      workspace: this,
      tree: () => this.overlay.freeze(),
      view: (root) => new Overlay(this.lower, this.shared.blobs, this.shared.inodes, root),
      changed: (from, to) => diffTrees(this.overlay, from, to).map((record) => record.change.path),
      maxFileSize: this.ops.maxFileSize,
    })
    return this.execSession.run(command, options)
  }

  /**
   * Finds the first operation (or checkpoint) after which `command` fails, by bisecting the
   * history; each probe runs in a throwaway view of a past state, so nothing here moves or is
   * recorded. The search comes with the exec runner (ExecRunner.bisector, engine/bisect.ts).
   */
  async bisect(command: string, options: BisectOptions = {}): Promise<BisectResult> {
    const bisector = this.runner().bisector
    if (!bisector) throw Object.assign(new Error('rewindfs: ws.bisect needs an exec runner that carries the search (runner.bisector: bisectEngine from rewindfs/adapter-kit)'), { code: 'ENOSYS' })
    this.ops.settle()
    const point = (target: ProbeTarget) =>
      target === 'now' ? { root: this.overlay.freeze(), state: this.state.freeze() } : target === 'origin' ? this.context.origin : this.engine.restore.point('checkpoint' in target ? target.checkpoint : target)
    const shared = { ...this.shared, inodes: { next: this.shared.inodes.next } } // a probe's writes take no inode numbers from this session
    const { exec } = this.context.options
    const probeOptions = { autoCheckpoint: false, umask: this.ops.umask, maxFileSize: this.ops.maxFileSize, ...(exec ? { exec } : {}) } as const
    return bisector.bisect(
      {
        workspace: this,
        point,
        view: (session) => new Workspace(this.lower, { ...probeOptions, session }, shared, { ...point('now'), cwd: this.ops.cwd }),
        show: (view, at) => (view.overlay.setRoot(at.root), view.state.setRoot(at.state)),
        changes: (from, to) => diffTrees(this.overlay, from.root, to.root).map((record) => record.change),
      },
      command,
      options,
    )
  }

  /** Resolves when every change so far is durable in the store (a group commit). */
  async sync(): Promise<void> {
    return this.engine.store.sync()
  }

  /**
   * Waits for the background check of the store's blob checksums started by open: what it checked,
   * the blobs that did not match (dropped) and the checkpoints it marked broken. With contents on
   * demand nothing was loaded to check on open: it reads and checks every blob the store holds
   * (keeping none in memory), as `git fsck` would.
   */
  async verify(): Promise<IntegrityReport> {
    return this.engine.store.verify()
  }

  /**
   * Rewrites the store's journal as one snapshot of the live state and kept history, and drops
   * store blobs nothing refers to. Runs by itself as the journal grows (see compactEvery); open time then
   * stays proportional to the live state plus a bounded tail.
   */
  async compact(): Promise<void> {
    return this.engine.store.compact()
  }

  /**
   * Repairs a damaged store (journal or metadata; blobs that fail their checksum stay, reported):
   * keeps the journal aside, writes a fresh one of the last state it proves — with `salvage`, plus
   * every later group commit that still applies — and switches to it atomically. The workspace
   * is rebuilt from it and writable again. Reports what was kept and what was lost.
   */
  async repair(options: RepairOptions = {}): Promise<RepairReport> {
    return this.engine.store.repair(options)
  }

  /** Safe stop: keeps every record and refuses writes until `unfreeze()`. */
  freeze(reason: string): void {
    this.context.freeze(reason)
  }

  /** Lifts a freeze; EROFS while the store is open read-only (its freeze is the store's, not the caller's to lift). */
  unfreeze(): void {
    const durability = this.context.durability
    if (durability?.readOnly) throw new FsError('EROFS', 'unfreeze', undefined, undefined, `the ${durability.store.kind} store is open read-only: reopen the workspace on it to write`)
    this.ops.frozenReason = undefined
  }

  /** Why the workspace is frozen, if it is. */
  get frozen(): string | undefined {
    return this.ops.frozenReason
  }

  /**
   * Removes a file's contents (a leaked secret) from the live tree, every checkpoint and every undo
   * record: references become an empty file, and the bytes are overwritten and dropped unless
   * another path holds the same content.
   */
  async purge(path: string): Promise<PurgeReport> {
    return this.recording('purge', async () => {
      const { ops, overlay, lower, journal, collector } = this.context
      this.context.assertOpen()
      ops.settle()
      const checkpoints = this.engine.checkpoints.records
      const store = this.context.durability?.store
      const host: PurgeHost = {
        overlay,
        lower,
        journal,
        checkpoints,
        reachable: () => {
          // Purge has decoded and scrubbed every checkpoint and operation: the snapshot's parts'
          // lists of what undecoded ones need are stale now, and would keep the purged content.
          this.purging = true
          try {
            return collector.reachable()
          } finally {
            this.purging = false
          }
        },
        // What the compaction keeps is asked the same way: the parts it replaces were written
        // before this purge, and their lists still name the content (a second purge's, say).
        compact: (erase: ReadonlySet<string>) => this.engine.store.compactNow(erase, host.reachable),
        storeOverwrites: store === undefined ? undefined : typeof store.eraseBlobs === 'function',
      }
      return purge(host, normalize(absolute(path, ops.cwd)))
    })
  }

  /** Work counters, for complexity tests and diagnostics. */
  get counters(): WorkspaceCounters {
    return { ...this.overlay.counters, blobsTouched: this.overlay.blobs.counters.touched, blobsRead: this.overlay.blobs.counters.read, bytesStored: this.overlay.blobs.counters.stored }
  }

  /** Where file contents are: in memory (resident) and in the durable store, and how they get there. */
  get storage(): StorageReport {
    return storageReport(this.overlay.blobs, this.context.durability?.store)
  }

  /** Runs a full garbage collection cycle now (normally it runs in the background). */
  collectGarbage(): void {
    this.collector.collect()
  }

  /** The exec runner: the `exec` option or the lower source's own; ENOSYS without one. */
  private runner(): ExecRunner {
    this.context.assertOpen()
    const runner = this.context.options.exec ?? this.lower.source.exec
    if (runner) return runner
    throw Object.assign(
      new Error("rewindfs: ws.exec needs a runner: open the workspace over directory(path) from 'rewindfs/adapters/node-fs', or pass Workspace.open({ exec: hostShell() }) (Node only)"),
      { code: 'ENOSYS' },
    )
  }

  /** Recording calls run in turn, are refused while frozen (but dry runs) and resolve once durable (engine/context.ts). */
  private recording<T>(syscall: string, body: () => Promise<T>, dryRun = false): Promise<T> {
    return this.context.recording(syscall, body, dryRun)
  }

  /** Called by the fs layer before each mutating call: automatic checkpoints (see engine/auto-checkpoint.ts). */
  private autoCheckpoint(type: OperationType, paths: readonly string[]): void {
    if (this.engine.transactions.running) return
    this.engine.checkpoints.beforeOperation(type, paths)
  }

  /** Set while purge asks what is reachable (gcRoots). */
  private purging = false

  private *gcRoots(): Iterable<DirNode | string> {
    yield this.overlay.freeze()
    yield* this.lower.pinnedBlobs()
    yield* this.shared.book.blobs()
    yield* this.engine.checkpoints.roots()
    yield* this.engine.undo.roots()
    if (!this.purging) yield* this.engine.store.historyRoots()
  }
}
