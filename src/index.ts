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
  WorkspaceCounters,
  WorkspaceOptions,
} from './workspace.js'
export type { Change } from './diff.js'
export { FsError, isFsError } from './errors.js'
export type { ErrnoCode, NodeError, NodeErrorCode } from './errors.js'
export type { EntryType, LowerSource, LowerStat } from './lower/source.js'
export { toLowerSource, fixtureSource, fileSystemTreeSource, syncFsSource, emptySource } from './lower/index.js'
export type { LowerInput, FileSystemTree } from './lower/index.js'
