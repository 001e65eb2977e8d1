/**
 * `rewindfs/adapter-kit/node`: the helpers for adapters that run on Node's file system (node-fs,
 * postgres's PGlite directory). Apart from `rewindfs/adapter-kit`, which browser adapters (indexeddb,
 * opfs) share and which must load where there is no node:fs.
 */

// A pid lock file, created whole; a dead owner's is stale and taken over.
export { LockFile, isAlive } from './node/lock-file.js'
export type { LockFileOptions, LockFs, LockOwner } from './node/lock-file.js'
