/** rewindfs/adapters/indexeddb: the durable Store and a path-keyed tree (lower source and flush target) in IndexedDB. */
export { indexedDbStore, type IndexedDbStore, type IndexedDbStoreOptions } from './store.js'
export { indexedDbTree, IndexedDbTree, type IndexedDbTreeOptions } from './tree.js'
