/**
 * rewindfs/worker: the engine in a Web Worker or a Node worker thread, through comlink. The page
 * imports this module; the worker runs rewindfs/worker/entry (or an entry of its own calling serve()).
 */
export { openWorkerWorkspace, WorkerWorkspace } from './client.js'
export type { BatchOp, BatchResult, OpenWorkerOptions, WorkerStatus } from './client.js'
export type { NodeWorkerLike, WorkerLike } from './channel.js'
export type { TransferOption, WorkerFs, WorkerFsPromises } from './remote-fs.js'
export type { LowerDescriptor, StoreDescriptor } from './protocol.js'
export { BAD_CALL, WORKER_CLOSED, WORKER_CRASHED } from './constants.js'
export type { AsyncWorkspace, AsyncFs, AsyncFsRoot } from '../src/async-workspace.js'
