/**
 * The page's (or main thread's) side: an AsyncWorkspace whose engine runs in a Web Worker or a Node
 * worker thread. Calls travel through comlink as validated messages and come back as Outcomes, so
 * fs errors keep Node's fields; a worker that dies rejects every pending call and is reported.
 */
import * as Comlink from 'comlink'
import type { AsyncFlushOptions, AsyncFsMember, AsyncFsRoot, AsyncSessionState, AsyncSideEffect, AsyncTransactionOptions, AsyncWorkspace } from '../src/async-workspace.js'
import type { Change } from '../src/diff.js'
import type { BisectOptions, BisectResult } from '../src/engine/bisect.js'
import { type EventSource, type WorkspaceEvent, WorkspaceEvents } from '../src/engine/events.js'
import type { Operation } from '../src/engine/journal.js'
import type { JsonValue } from '../src/engine/state.js'
import type { ApprovalHook } from '../src/engine/transaction.js'
import type { Validator } from '../src/engine/validator.js'
import type { IntegrityReport, StoreDamage } from '../src/engine/durability.js'
import type { StorageReport } from '../src/engine/storage.js'
import type { RepairOptions, RepairReport } from '../src/engine/repair.js'
import type { ExportOptions, FileSystemTreeExportOptions, ZipExportOptions } from '../src/export.js'
import type { FlushReport } from '../src/flush/flush.js'
import type { FileSystemTree } from '../src/lower/file-system-tree.js'
import type {
  Alert,
  Checkpoint,
  CheckpointInfo,
  CheckpointKind,
  ExecOptions,
  ExecResult,
  HistoryFilter,
  PurgeReport,
  RestoreOptions,
  RestoreReport,
  RestoreTarget,
  ResumePoint,
  UndoOptions,
  UndoResult,
  WorkspaceCounters,
} from '../src/workspace.js'
import { Channel, type EventReceiver, type WorkerLike, coded, serveTimeout } from './channel.js'
import { WORKER_CLOSED } from './constants.js'
import type { CallCallbacks, StagedServer } from './host.js'
import type { EventItem, FlushTargetDescriptor, LowerDescriptor, Member, Opened, Outcome, StatusRecord, StoreDescriptor } from './protocol.js'
import { type WorkerFs, createWorkerFs, withoutTransfer } from './remote-fs.js'
import { RemoteWatches } from './remote-watch.js'
import { type BatchWire, cursorId, decodeValue, errorRecord, packBatch, unpackResults } from './values.js'

export interface OpenWorkerOptions {
  lower?: LowerDescriptor
  store?: StoreDescriptor
  session?: string
  umask?: number
  retention?: { operations?: number; checkpoints?: number }
  autoCheckpoint?: { highRisk?: boolean; interval?: number } | false
  compactEvery?: number
  /** Over a store that reads synchronously (directory, opfs): bytes of durable contents kept in the worker's memory (default 256 MiB); `ws.storage` reports them. */
  cacheBytes?: number
  /** Names registered in the worker's entry (registerValidator), or validators that run on this side. */
  validators?: readonly (string | Validator)[]
  approve?: ApprovalHook
  onAlert?: (alert: Alert) => void
  /** Told once when the worker dies or throws uncaught; every pending and later call rejects. */
  onCrash?: (error: Error) => void
  /**
   * How long to wait for the worker's entry to call serve() (its script loaded and run), in ms;
   * default 30 000, 0: no limit. Past it the open rejects with ETIMEDOUT and the worker is terminated.
   */
  serveTimeoutMs?: number
}

export interface BatchOp {
  op: AsyncFsMember
  args: readonly unknown[]
}

export type BatchResult = { ok: true; value: unknown } | { ok: false; error: Error }

/** flush() across the channel: canary targets are checked by `verify`, given the ids of those written. */
export interface WorkerFlushOptions extends AsyncFlushOptions {
  canary?: number
  verify?: (targets: readonly { id: string }[]) => unknown
}

export interface WorkerStatus {
  readonly degraded?: string
  readonly warnings: readonly string[]
  readonly corrupt?: StoreDamage
  readonly frozen?: string
  /**
   * Over a store the tabs of an origin share: 'writer', or 'follower' (frozen; reloads the writer's
   * commits, told by a 'reload' event; becomes the writer when that tab goes away, told by a
   * 'writer' event). Kept current by the worker, not only by calls.
   */
  readonly tab?: 'writer' | 'follower'
  /** Set when the worker died: why. */
  readonly crashed?: string
  readonly closed: boolean
}

export class WorkerWorkspace implements AsyncWorkspace, EventReceiver {
  readonly fs: WorkerFs
  /** The worker's ws.events, relayed one message per delivery of its change feed. */
  readonly events: WorkspaceEvents
  readonly session: string
  readonly umask: number
  resume: ResumePoint | undefined
  readonly state: AsyncSessionState
  private mirrored: StatusRecord
  private readonly forks = new Set<WorkerWorkspace>()
  private closed = false
  /** The close() under way or done. */
  private closing: Promise<void> | undefined
  private readonly watches: RemoteWatches
  /** Where the relayed ws.events go while this side listens. */
  private emitEvent: ((event: WorkspaceEvent) => void) | undefined

  constructor(
    private readonly channel: Channel,
    private readonly handle: number,
    opened: Opened,
    private readonly parent?: WorkerWorkspace,
  ) {
    this.session = opened.session
    this.umask = opened.umask
    this.mirrored = opened.status
    this.resume = opened.resume as ResumePoint | undefined
    this.watches = new RemoteWatches((message) => this.send({ ...message, handle }))
    this.fs = createWorkerFs((message, transfers) => this.send({ ...message, handle }, undefined, transfers), this.watches.start)
    this.events = new WorkspaceEvents(this.eventSource)
    channel.listen(handle, this)
    this.state = {
      get: (key) => this.call('stateGet', [key]) as Promise<JsonValue | undefined>,
      set: async (key, value) => void (await this.call('stateSet', [key, value])),
      delete: (key) => this.call('stateDelete', [key]) as Promise<boolean>,
      entries: () => this.call('stateEntries', []) as Promise<[string, JsonValue][]>,
    }
  }

  /** Tells the worker which ws.events types to relay (sent in order with the calls, so nothing after this is missed). */
  private readonly eventSource: EventSource = (types, emit) => {
    this.emitEvent = emit
    this.send({ t: 'events', handle: this.handle, types: [...types] }).catch(() => undefined)
    return () => {
      if (this.emitEvent !== emit) return // a newer subscription took over
      this.emitEvent = undefined
      this.send({ t: 'events', handle: this.handle, types: [] }).catch(() => undefined)
    }
  }

  /** An item of the worker's event messages for this session. */
  receive(item: EventItem): void {
    if ('watch' in item) this.watches.deliver(item.watch, item.events)
    else if ('status' in item) this.mirrored = item.status
    else this.emitEvent?.(item.event)
  }

  /** The worker died: watches end with the error, event streams end. */
  crashed(error: Error): void {
    this.watches.end(error)
    this.events.close()
  }

  /** The engine's status as of the last engine call (fs calls do not carry it; sync() does), and whether the worker crashed or closed. */
  get status(): WorkerStatus {
    return {
      ...this.mirrored,
      ...(this.channel.crashed ? { crashed: this.channel.crashed.message } : {}),
      closed: this.closed || this.channel.closed,
    }
  }

  /** Why writes are refused (freeze()), as of the last engine call. */
  get frozen(): string | undefined {
    return this.mirrored.frozen
  }

  /** The engine's work counters, now (a round trip). */
  get counters(): Promise<WorkspaceCounters> {
    return this.call('counters', []) as Promise<WorkspaceCounters>
  }

  /** Where file contents are, now (a round trip). */
  get storage(): Promise<StorageReport> {
    return this.call('storage', []) as Promise<StorageReport>
  }

  /** A closed session (a fork closed on its own) refuses calls here, as the whole worker does once closed. */
  private send(message: object, callbacks?: CallCallbacks, transfers?: Transferable[]): Promise<unknown> {
    if (this.closed) return Promise.reject(coded(WORKER_CLOSED, `rewindfs: the workspace session '${this.session}' is closed`))
    return this.channel.send(message, callbacks, undefined, transfers)
  }

  private async call(member: Member, args: unknown[], callbacks?: CallCallbacks): Promise<unknown> {
    const value = (await this.send({ t: 'call', handle: this.handle, member, args }, callbacks)) as { result: unknown; status: StatusRecord; resume?: ResumePoint }
    this.mirrored = value.status
    this.resume = value.resume
    return value.result
  }

  /**
   * Many fs calls in one round trip; each result is its value or its error (Node-shaped), in order.
   * Contents travel packed in one buffer each way (one copy; `transfer` is not needed here), and
   * contents read come back as views of one transferred buffer, each over its own range.
   */
  async batch(ops: readonly BatchOp[]): Promise<BatchResult[]> {
    const request = packBatch(ops.map(({ op, args }) => ({ op, args: Array.isArray(args) ? withoutTransfer(op, args) : args })))
    const wire = (await this.send({ t: 'batch', handle: this.handle, ...request }, undefined, [request.bytes])) as BatchWire
    return unpackResults(wire)
  }

  chdir(path: string): Promise<void> {
    return this.call('chdir', [path]) as Promise<void>
  }
  cwd(): Promise<string> {
    return this.call('cwd', []) as Promise<string>
  }
  checkpoint(options?: { name?: string; kind?: Exclude<CheckpointKind, 'guard'>; description?: string }): Promise<Checkpoint> {
    return this.call('checkpoint', [options]) as Promise<Checkpoint>
  }
  checkpoints(): Promise<Checkpoint[]> {
    return this.call('checkpoints', []) as Promise<Checkpoint[]>
  }
  checkpointInfo(idOrName: string): Promise<CheckpointInfo> {
    return this.call('checkpointInfo', [idOrName]) as Promise<CheckpointInfo>
  }
  renameCheckpoint(idOrName: string, newName: string): Promise<Checkpoint> {
    return this.call('renameCheckpoint', [idOrName, newName]) as Promise<Checkpoint>
  }
  deleteCheckpoint(idOrName: string): Promise<void> {
    return this.call('deleteCheckpoint', [idOrName]) as Promise<void>
  }
  restore(target: RestoreTarget, options?: RestoreOptions): Promise<RestoreReport> {
    return this.call('restore', [target, options]) as Promise<RestoreReport>
  }
  undoRestore(): Promise<{ undone?: Operation; redone?: Operation }> {
    return this.call('undoRestore', []) as Promise<{ undone?: Operation; redone?: Operation }>
  }
  diff(from: string, to?: string): Promise<Change[]> {
    return this.call('diff', to === undefined ? [from] : [from, to]) as Promise<Change[]>
  }
  changes(): Promise<Change[]> {
    return this.call('changes', []) as Promise<Change[]>
  }
  reset(): Promise<void> {
    return this.call('reset', []) as Promise<void>
  }
  undo(options?: UndoOptions): Promise<UndoResult> {
    return this.call('undo', [options]) as Promise<UndoResult>
  }
  redo(): Promise<{ redone: Operation[] }> {
    return this.call('redo', []) as Promise<{ redone: Operation[] }>
  }
  history(filter?: HistoryFilter): Promise<Operation[]> {
    return this.call('history', [filter]) as Promise<Operation[]>
  }
  operation(id: string): Promise<(Operation & { undone: boolean; diff: { path: string; patch?: string }[] }) | undefined> {
    return this.call('operation', [id]) as Promise<(Operation & { undone: boolean; diff: { path: string; patch?: string }[] }) | undefined>
  }

  /**
   * Runs `body` here against the worker's staging fs (each call a round trip); the worker commits
   * or refuses the change set as one operation. Its result must be cloneable.
   */
  transaction<T>(body: (fs: AsyncFsRoot) => T | Promise<T>, options: AsyncTransactionOptions = {}): Promise<T> {
    const { approve, ...rest } = options
    const channel = this.channel
    const callbacks: CallCallbacks = {
      async body(server: StagedServer): Promise<Outcome> {
        const staged = createWorkerFs((message, transfers) => channel.settle(server.request(transfers.length > 0 ? Comlink.transfer(message, transfers) : message)))
        try {
          return { ok: true, value: await body(staged) }
        } catch (error) {
          return { ok: false, error: errorRecord(error) }
        }
      },
      ...(approve ? { approve: async (request) => approve(request) } : {}),
    }
    return this.call('transaction', [{ ...rest, ...(approve ? { approve: true } : {}) }], callbacks) as Promise<T>
  }

  beginTurn(turn: number): Promise<Checkpoint> {
    return this.call('beginTurn', [turn]) as Promise<Checkpoint>
  }
  setResume(point: ResumePoint): Promise<void> {
    return this.call('setResume', [point]) as Promise<void>
  }
  /** A function `compensate` runs here, for the life of this page; `{ name, args }` names a compensator registered in the worker. */
  recordSideEffect(effect: AsyncSideEffect): Promise<Operation> {
    const { compensate } = effect
    if (typeof compensate === 'function') {
      return this.call('recordSideEffect', [{ ...effect, compensate: 'callback' }], { compensate: async () => compensate() }) as Promise<Operation>
    }
    return this.call('recordSideEffect', [effect]) as Promise<Operation>
  }
  purge(path: string): Promise<PurgeReport> {
    return this.call('purge', [path]) as Promise<PurgeReport>
  }
  freeze(reason: string): Promise<void> {
    return this.call('freeze', [reason]) as Promise<void>
  }
  unfreeze(): Promise<void> {
    return this.call('unfreeze', []) as Promise<void>
  }
  collectGarbage(): Promise<void> {
    return this.call('collectGarbage', []) as Promise<void>
  }
  /** A session in the same worker, sharing the lower layer and blobs. */
  async fork(session?: string): Promise<WorkerWorkspace> {
    const opened = (await this.call('fork', [session])) as Opened
    const fork = new WorkerWorkspace(this.channel, opened.handle, opened, this)
    this.forks.add(fork)
    return fork
  }
  sync(): Promise<void> {
    return this.call('sync', []) as Promise<void>
  }
  verify(): Promise<IntegrityReport> {
    return this.call('verify', []) as Promise<IntegrityReport>
  }
  repair(options?: RepairOptions): Promise<RepairReport> {
    return this.call('repair', [options]) as Promise<RepairReport>
  }
  prefetch(paths: readonly string[]): Promise<void> {
    return this.call('prefetch', [[...paths]]) as Promise<void>
  }
  /** Runs a shell command against the worker's workspace (a Node worker only: a browser's answers ENOSYS). */
  exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    return this.call('exec', options === undefined ? [command] : [command, options]) as Promise<ExecResult>
  }

  /** Bisects the worker's history (ws.bisect); onProbe and isGood run here, called from the worker. */
  bisect(command: string, options: BisectOptions = {}): Promise<BisectResult> {
    const { onProbe, isGood, ...rest } = options
    const callbacks: CallCallbacks = {
      ...(onProbe ? { probe: async (probe, progress) => onProbe(probe, progress) } : {}),
      ...(isGood ? { judge: async (result) => isGood(result) } : {}),
    }
    return this.call('bisect', [command, { ...rest, ...(onProbe ? { probe: true } : {}), ...(isGood ? { judge: true } : {}) }], onProbe || isGood ? callbacks : undefined) as Promise<BisectResult>
  }

  /**
   * Flushes into the worker's lower source, or into targets the worker opens by descriptor (a
   * directory in a Node worker, an IndexedDB tree in a browser's). Progress and a canary's verify
   * run here.
   */
  flush(target?: FlushTargetDescriptor | readonly FlushTargetDescriptor[], options: WorkerFlushOptions = {}): Promise<FlushReport> {
    const { onProgress, verify, ...rest } = options
    const callbacks: CallCallbacks = {
      ...(onProgress ? { progress: async (progress) => onProgress(progress) } : {}),
      ...(verify ? { verify: async (targets) => verify(targets) } : {}),
    }
    const args = [target === undefined ? undefined : Array.isArray(target) ? [...target] : target, { ...rest, ...(onProgress ? { progress: true } : {}), ...(verify ? { verify: true } : {}) }]
    return this.call('flush', args, onProgress || verify ? callbacks : undefined) as Promise<FlushReport>
  }

  /**
   * The worker's view as a FileSystemTree (one message), or a zip pulled chunk by chunk as it is
   * iterated: exportView from rewindfs/export, run in the worker (exportView(ws) here calls this).
   */
  export(options: FileSystemTreeExportOptions): Promise<FileSystemTree>
  export(options: ZipExportOptions): Promise<AsyncIterable<Uint8Array>>
  export(options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>>
  async export(options: ExportOptions): Promise<FileSystemTree | AsyncIterable<Uint8Array>> {
    const result = await this.call('export', [options])
    const id = cursorId(result)
    return id === undefined ? (result as FileSystemTree) : this.cursor(id)
  }

  /** A worker cursor as an async iterable: each step pulls one value; breaking off ends it in the worker. */
  private cursor(id: number): AsyncIterable<Uint8Array> {
    const pull = (op: 'next' | 'return') => this.send({ t: 'cursor', handle: this.handle, op, id }) as Promise<{ done: boolean; value?: unknown }>
    return {
      [Symbol.asyncIterator]: () => {
        let done = false
        return {
          async next(): Promise<IteratorResult<Uint8Array>> {
            if (done) return { done: true, value: undefined }
            const step = await pull('next')
            if (step.done) done = true
            return step.done ? { done: true, value: undefined } : { done: false, value: decodeValue(step.value) as Uint8Array }
          },
          async return(): Promise<IteratorResult<Uint8Array>> {
            if (!done) {
              done = true
              await pull('return')
            }
            return { done: true, value: undefined }
          },
        }
      },
    }
  }
  compact(): Promise<void> {
    return this.call('compact', []) as Promise<void>
  }

  /** Closes this session (and its forks); the workspace that opened the worker also terminates it. A second call waits for the first. */
  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async shutdown(): Promise<void> {
    try {
      for (const fork of [...this.forks]) await fork.close()
      if (!this.channel.crashed && !this.channel.closed) await this.channel.send({ t: 'close', handle: this.handle })
    } finally {
      this.closed = true
      this.channel.unlisten(this.handle)
      this.watches.end()
      this.events.close()
      this.parent?.forks.delete(this)
      if (!this.parent) await this.channel.terminate()
    }
  }
}

/**
 * Opens a workspace in `worker`, which must run a rewindfs worker entry (rewindfs/worker/entry or
 * one of yours calling serve()). The workspace owns the worker from here on: close() terminates
 * it, and so does a failed open (a worker that never calls serve(): ETIMEDOUT after serveTimeoutMs).
 */
export async function openWorkerWorkspace(worker: WorkerLike, options: OpenWorkerOptions = {}): Promise<WorkerWorkspace> {
  const { validators = [], approve, onAlert, onCrash, serveTimeoutMs, ...descriptor } = options
  const local = validators.filter((v): v is Validator => typeof v !== 'string')
  const hooks = {
    ...(approve ? { approve: async (request: Parameters<ApprovalHook>[0]) => approve(request) } : {}),
    ...(onAlert ? { alert: async (alert: Alert) => onAlert(alert) } : {}),
    validate: async (name: string, content: Uint8Array, path: string) => {
      const validator = local.find((v) => v.name === name)
      if (!validator) throw new Error(`rewindfs: no validator named '${name}' on this side`)
      return validator.validate(content, path)
    },
  }
  const channel = new Channel(worker, onCrash)
  try {
    // The open itself may take long (a large store); the worker's start may not.
    await channel.serving(serveTimeout(serveTimeoutMs))
    const opened = (await channel.send(
      {
        t: 'open',
        options: {
          ...descriptor,
          validators: validators.filter((v): v is string => typeof v === 'string'),
          remoteValidators: local.map(({ name, match, cost }) => ({ name, match, ...(cost !== undefined ? { cost } : {}) })),
          hooks: { approve: approve !== undefined, alert: onAlert !== undefined },
        },
      },
      undefined,
      hooks,
    )) as Opened
    return new WorkerWorkspace(channel, opened.handle, opened)
  } catch (error) {
    await channel.terminate()
    throw error
  }
}
