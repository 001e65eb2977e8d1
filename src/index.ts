/**
 * rewindfs: a virtual filesystem for agents. An overlay over a read-only lower layer, with O(1)
 * checkpoints, restore as a pointer move and reset as a discard. Browser-safe: no `node:` imports.
 */
export { Workspace } from './workspace.js'
export type {
  Checkpoint,
  CheckpointKind,
  NodeFs,
  RestoreOptions,
  RestoreReport,
  RestoreTarget,
  UndoOptions,
  UndoResult,
  HistoryFilter,
  CheckpointInfo,
  ResumePoint,
  Alert,
  AutoCheckpointOptions,
  WorkspaceCounters,
  WorkspaceOptions,
} from './workspace.js'
export type { StorageReport } from './engine/storage.js'
export type { ExecHost, ExecMode, ExecOptions, ExecResult, ExecRunner, ExecSandbox, ExecSession } from './exec.js'
export type { Change } from './diff.js'
export type {
  AsyncWorkspace,
  AsyncDir,
  AsyncFileHandle,
  AsyncFlushOptions,
  AsyncFs,
  AsyncFsMember,
  AsyncFsRoot,
  AsyncSessionState,
  AsyncSideEffect,
  AsyncTransactionOptions,
  Awaitable,
} from './async-workspace.js'
export { BisectError, type BisectErrorCode } from './engine/bisect-error.js'
export type { BisectOptions, BisectPoint, BisectProbe, BisectProgress, BisectResult, BisectState } from './engine/bisect.js'
export type { FlushTarget, FlushEntry, FlushProgress } from './flush/target.js'
export type { FlushOptions, FlushReport } from './flush/flush.js'
export { NotLoadedError, isNotLoaded } from './lower/source.js'
export type { IndexedEntry } from './lower/indexed.js'
export { FsError, isFsError } from './errors.js'
export type { ErrnoCode, NodeError, NodeErrorCode } from './errors.js'
export type { EntryType, LowerSource, LowerStat } from './lower/source.js'
export { toLowerSource, fixtureSource, fileSystemTreeSource, emptySource } from './lower/index.js'
export type { LowerInput, FileSystemTree } from './lower/index.js'
export type { IntegrityReport, LoadReport, StoreDamage } from './engine/durability.js'
export type { LostRecords, RepairOptions, RepairReport } from './engine/repair.js'
export type { BlobTotals, DurabilityEngine, JournalRead, ScrubFinding, Store, StoreChange, StoreImage, StoreItem } from './engine/store.js'
export { ValidationError } from './engine/validator.js'
export type { Validator, ValidationFailure } from './engine/validator.js'
export { ConflictError, ApprovalError } from './engine/transaction.js'
export type { TransactionOptions, TransactionType, ApprovalRequest, ApprovalHook } from './engine/transaction.js'
export type { Operation, OperationType } from './engine/journal.js'
export type { WorkspaceEvents, WorkspaceEvent, WorkspaceEventMap, WorkspaceEventType, PathChange, RestoreEvent, StoreEvent, StreamOptions as EventStreamOptions } from './engine/events.js'
export type { JsonValue } from './engine/state.js'
export type { TieredRetention } from './engine/retention.js'
export type { PurgeReport } from './engine/purge.js'
