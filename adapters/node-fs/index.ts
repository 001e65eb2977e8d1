/**
 * rewindfs/adapters/node-fs: a real directory as the lower layer and flush target, and a durable
 * store in a directory. Node only (node:fs).
 */
export { directory, DirectorySource, type DirectoryOptions } from './directory.js'
export { directoryStore, DirectoryStore } from './store.js'
export type { DirectoryStoreOptions } from './store.js'
export type { PackStats } from './pack.js'
export { DEFAULT_WRITABLE, MAX_OUTPUT, hostShell, mountOver, patchFs } from './shell.js'
export type { ExecDefaults, ExecMode, ExecOptions, ExecResult, ExecRunner, ExecSandbox } from './shell.js'
