/**
 * The Workspace API with every member awaited, so a workspace can live elsewhere (a Web Worker, a
 * Node worker thread) behind a message channel. Types only: nothing here exists at run time.
 *
 * Members that are synchronous on Workspace (checkpoints(), diff(), history()…) are typed
 * `Awaitable`, so the in-process Workspace satisfies this interface unchanged and callers simply
 * `await` every member. `fs` is reached as `fs.promises`, the shape both sides share.
 */
import type { Change } from './diff.js'
import type { BisectOptions, BisectResult } from './engine/bisect.js'
import type { WorkspaceEvents } from './engine/events.js'
import type { Operation } from './engine/journal.js'
import type { JsonValue } from './engine/state.js'
import type { ApprovalHook, TransactionType } from './engine/transaction.js'
import type { IntegrityReport, StoreDamage } from './engine/durability.js'
import type { RepairOptions, RepairReport } from './engine/repair.js'
import type { FlushOptions, FlushReport } from './flush/flush.js'
import type {
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
} from './workspace.js'
import type { StorageReport } from './engine/storage.js'

export type Awaitable<T> = T | Promise<T>

/** The promise-form fs members that take paths, carried as they are (Node's own signatures). */
export type AsyncFsMember =
  | 'access'
  | 'appendFile'
  | 'chmod'
  | 'chown'
  | 'copyFile'
  | 'cp'
  | 'lchmod'
  | 'lchown'
  | 'link'
  | 'lstat'
  | 'lutimes'
  | 'mkdir'
  | 'mkdtemp'
  | 'readdir'
  | 'readFile'
  | 'readlink'
  | 'realpath'
  | 'rename'
  | 'rm'
  | 'rmdir'
  | 'stat'
  | 'statfs'
  | 'symlink'
  | 'truncate'
  | 'unlink'
  | 'utimes'
  | 'writeFile'

/** A type query only: nothing from Node is loaded. */
type NodePromises = typeof import('node:fs').promises
type NodeFileHandle = import('node:fs/promises').FileHandle

/** FileHandle members both sides carry (Node's own signatures). */
export type AsyncFileHandleMember =
  | 'fd'
  | 'read'
  | 'write'
  | 'readv'
  | 'writev'
  | 'readFile'
  | 'writeFile'
  | 'appendFile'
  | 'stat'
  | 'truncate'
  | 'chmod'
  | 'chown'
  | 'utimes'
  | 'sync'
  | 'datasync'
  | 'close'
  | 'readableWebStream'
  | 'createReadStream'
  | 'createWriteStream'

/** fs/promises FileHandle as both sides offer it; `readLines` yields the lines (Node's readline.Interface is one such iterable). */
export interface AsyncFileHandle extends Pick<NodeFileHandle, AsyncFileHandleMember> {
  readLines(options?: Parameters<NodeFileHandle['readLines']>[0]): AsyncIterable<string>
  [Symbol.asyncDispose](): Promise<void>
}

/** fs.Dir as both sides offer it: read, close and async iteration. */
export type AsyncDir = Pick<import('node:fs').Dir, 'path' | 'read' | 'close' | typeof Symbol.asyncIterator>

/** Node's fs.promises as both sides offer it (`watch`: events of the whole workspace, whichever side made them). */
export interface AsyncFs extends Pick<NodePromises, AsyncFsMember | 'constants' | 'watch'> {
  open(path: import('node:fs').PathLike, flags?: string | number, mode?: import('node:fs').Mode): Promise<AsyncFileHandle>
  opendir(path: import('node:fs').PathLike, options?: import('node:fs').OpenDirOptions): Promise<AsyncDir>
}

/**
 * What `fs` must offer: Node's `fs.promises` (as `ws.fs.promises`), `exists`, the streams and
 * `watch`. A host without Node streams (a browser page) gets web streams from createReadStream and
 * createWriteStream instead. Across a worker, `watch` cannot throw at once: a watch that cannot
 * start emits 'error', as Node's FSWatcher does when its handle fails.
 */
export interface AsyncFsRoot {
  readonly promises: AsyncFs
  exists(path: import('node:fs').PathLike, callback: (exists: boolean) => void): void
  createReadStream: typeof import('node:fs').createReadStream
  createWriteStream: typeof import('node:fs').createWriteStream
  watch: typeof import('node:fs').watch
}

/** flush() options that can cross a message channel (canary targets are the worker's, by descriptor). */
export type AsyncFlushOptions = Pick<FlushOptions, 'force' | 'dryRun' | 'onProgress'>

export interface AsyncSessionState {
  get(key: string): Promise<JsonValue | undefined>
  set(key: string, value: JsonValue): Promise<void>
  delete(key: string): Promise<boolean>
  entries(): Promise<[string, JsonValue][]>
}

/** Transaction options that can cross a message channel (validators are named when the workspace opens). */
export interface AsyncTransactionOptions {
  label?: string
  group?: string
  type?: TransactionType
  approve?: ApprovalHook
  riskThreshold?: number
}

export interface AsyncSideEffect {
  description: string
  compensate: (() => unknown) | { name: string; args?: JsonValue }
  tier?: number
  group?: string
}

/**
 * The promise every implementation keeps (README, "What each call promises"): with a durable
 * store, a member that records something (checkpoint, restore, undo, redo, undoRestore, reset,
 * transaction, flush, renameCheckpoint, deleteCheckpoint, beginTurn, setResume, recordSideEffect,
 * purge, compact) resolves only once that is durable, and such calls run one at a time; an fs call
 * is durable at the next group commit or once `sync()` resolves.
 */
export interface AsyncWorkspace {
  readonly fs: AsyncFsRoot
  /** Operations, undo/redo, checkpoints, restores and changed paths (in a page: the worker's, one message per delivery). */
  readonly events: WorkspaceEvents
  readonly session: string
  readonly umask: number
  /** Why a configured store is not in use, and what open repaired. */
  readonly status: { readonly degraded?: string; readonly warnings: readonly string[]; readonly corrupt?: StoreDamage }
  readonly resume: ResumePoint | undefined
  readonly state: AsyncSessionState
  /** Why writes are refused (freeze()), if they are. */
  readonly frozen: string | undefined
  /** Work counters and blob store occupancy (a worker answers them in a round trip: await them). */
  readonly counters: Awaitable<WorkspaceCounters>
  readonly storage: Awaitable<StorageReport>

  chdir(path: string): Awaitable<void>
  cwd(): Awaitable<string>

  checkpoint(options?: { name?: string; kind?: Exclude<CheckpointKind, 'guard'>; description?: string }): Promise<Checkpoint>
  checkpoints(): Awaitable<Checkpoint[]>
  checkpointInfo(idOrName: string): Promise<CheckpointInfo>
  renameCheckpoint(idOrName: string, newName: string): Promise<Checkpoint>
  deleteCheckpoint(idOrName: string): Promise<void>
  restore(target: RestoreTarget, options?: RestoreOptions): Promise<RestoreReport>
  undoRestore(): Promise<{ undone?: Operation; redone?: Operation }>
  diff(from: string, to?: string): Awaitable<Change[]>
  changes(): Awaitable<Change[]>
  reset(): Promise<void>

  undo(options?: UndoOptions): Promise<UndoResult>
  redo(): Promise<{ redone: Operation[] }>
  history(filter?: HistoryFilter): Awaitable<Operation[]>
  operation(id: string): Awaitable<(Operation & { undone: boolean; diff: { path: string; patch?: string }[] }) | undefined>
  transaction<T>(body: (fs: AsyncFsRoot) => T | Promise<T>, options?: AsyncTransactionOptions): Promise<T>

  beginTurn(turn: number): Promise<Checkpoint>
  setResume(point: ResumePoint): Promise<void>
  recordSideEffect(effect: AsyncSideEffect): Promise<Operation>
  purge(path: string): Promise<PurgeReport>
  freeze(reason: string): Awaitable<void>
  unfreeze(): Awaitable<void>
  collectGarbage(): Awaitable<void>
  fork(session?: string): Promise<AsyncWorkspace>

  /** Into the workspace's own lower source (a worker also takes target descriptors). */
  flush(target?: undefined, options?: AsyncFlushOptions): Promise<FlushReport>
  exec(command: string, options?: ExecOptions): Promise<ExecResult>
  /** Finds the operation after which a command fails (a worker: onProbe and isGood run in the page). */
  bisect(command: string, options?: BisectOptions): Promise<BisectResult>
  prefetch(paths: readonly string[]): Promise<void>
  verify(): Promise<IntegrityReport>
  /** Rebuilds a damaged store (the old journal kept aside). */
  repair(options?: RepairOptions): Promise<RepairReport>
  sync(): Promise<void>
  compact(): Promise<void>
  close(): Promise<void>
}
