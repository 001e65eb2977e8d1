/** rewindfs/adapters/opfs: the durable Store on the Origin Private File System, for the engine in a Web Worker. */
export { opfsStore, removeOpfsStore, type OpfsStore, type OpfsStoreOptions } from './store.js'
export type { LogStats as OpfsStoreStats } from './log.js'
