/**
 * The Workspace API with every member awaited, so a workspace can live elsewhere (a Web Worker, a
 * Node worker thread) behind a message channel. Types only: nothing here exists at run time.
 *
 * Members that are synchronous on Workspace (checkpoints(), diff(), history()…) are typed
 * `Awaitable`, so the in-process Workspace satisfies this interface unchanged and callers simply
 * `await` every member. `fs` is reached as `fs.promises`, the shape both sides share.
 */
import type { Change } from './diff.js'
import type { Operation } from './engine/journal.js'
import type { JsonValue } from './engine/state.js'
import type { ApprovalHook } from './engine/transaction.js'
import type {
  Checkpoint,
  CheckpointInfo,
  CheckpointKind,
  HistoryFilter,
  PurgeReport,
  RestoreOptions,
  RestoreReport,
  RestoreTarget,
  ResumePoint,
  UndoOptions,
  UndoResult,
} from './workspace.js'

export type Awaitable<T> = T | Promise<T>

/** The promise-form fs members a remote workspace carries (Node's own signatures). */
export type AsyncFsMember =
  | 'access'
  | 'appendFile'
  | 'chmod'
  | 'chown'
  | 'copyFile'
  | 'cp'
  | 'lchown'
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
  | 'symlink'
  | 'truncate'
  | 'unlink'
  | 'utimes'
  | 'writeFile'

/** A type query only: nothing from Node is loaded. */
export type AsyncFs = Pick<typeof import('node:fs').promises, AsyncFsMember>

/** What `fs` must offer: Node's `fs.promises` subset, as `ws.fs.promises`. */
export interface AsyncFsRoot {
  readonly promises: AsyncFs
}

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
  approve?: ApprovalHook
  riskThreshold?: number
}

export interface AsyncSideEffect {
  description: string
  compensate: (() => unknown) | { name: string; args?: JsonValue }
  tier?: number
  group?: string
}

export interface AsyncWorkspace {
  readonly fs: AsyncFsRoot
  readonly session: string
  readonly umask: number
  /** Why a configured store is not in use, and what open repaired. */
  readonly status: { readonly degraded?: string; readonly warnings: readonly string[] }
  readonly resume: ResumePoint | undefined
  readonly state: AsyncSessionState

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

  sync(): Promise<void>
  compact(): Promise<void>
  close(): Promise<void>
}
