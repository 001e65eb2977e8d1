/**
 * `rewindfs/adapter-kit`: the contracts an adapter implements and the helpers it builds on, as one
 * public entry. rewindfs's own adapters (node-fs, indexeddb, opfs, docker-volume, postgres) import
 * only `rewindfs`, this entry and, on Node, `rewindfs/adapter-kit/node` (test/adapter-boundary.test.ts
 * holds them to it), so whatever they can do, an adapter written outside this repository can do too.
 *
 * An adapter offers one or more of:
 * - a lower source (`LowerSource`): the read-only base tree, one version string per path. A place
 *   that can only be read asynchronously builds on `IndexedSource` (an index loaded up front,
 *   contents loaded on prefetch); one with Node's sync API maps its stats with `lowerStatOf`. One
 *   that lists and reads its tree faster in bulk than path by path offers `walker()` (the agent
 *   tools' search, find and list read untouched paths through it).
 * - a durable store (`Store`): the journal, blobs and metadata, carrying the durable journal that
 *   runs over it (`durability: durableJournal`: the core never imports it, so a workspace in memory
 *   does without). `MemoryStore` is one, in memory. One that can read a blob synchronously offers
 *   `readBlobSync` (and `blobSizes`): the engine then reads contents on demand instead of loading
 *   them all on open. `storeContract(subject)` runs the
 *   contract's checks on an implementation: each check is a named async function that throws on a
 *   violation, so any test runner runs them (`for (const c of storeContract(s)) it(c.name, c.run)`);
 *   it imports no test runner. It is also exported from `rewindfs/testing`. A store on a file that
 *   can be appended to and read at an offset can write the `pack` segment format; one shared by a
 *   browser's tabs settles who writes with `TabRole`.
 * - a flush target (`FlushTarget`): a real place that takes the workspace's change set all or
 *   nothing, carrying the flush engine (`flusher: flushEngine`) as a store carries its journal.
 * - an exec runner (`ExecRunner` in `rewindfs`; a lower source may carry one as `exec`): runs
 *   commands against a workspace, reading the upper tree and the view its `ExecHost` gives, and
 *   carries the search ws.bisect runs with those commands (`bisector: bisectEngine`).
 *
 * Errors an adapter raises through fs calls are Node-shaped (`FsError`: code, errno, syscall, path).
 * Paths are the workspace's: absolute, normalised POSIX paths, '/' the root.
 */

// Lower sources: the base tree.
export type { EntryType, LowerSource, LowerStat, LowerWalker, WalkerEntry } from './lower/source.js'
export { NotLoadedError, isNotLoaded } from './lower/source.js'
// ...read asynchronously: an index answers stats and listings, contents load on prefetch.
export { IndexedSource, PRELOAD_BYTES } from './lower/indexed.js'
export type { ContentLoader, IndexedEntry } from './lower/indexed.js'
// ...read with Node's synchronous API: stats as a LowerStat and its version.
export { lowerStatOf, lowerVersionOf, syncFsSource } from './lower/sync-fs.js'
export type { SyncDirent, SyncReadableFs, SyncStats } from './lower/sync-fs.js'

// Stores: the journal, content-addressed blobs and metadata, and what is set aside.
export type { BlobTotals, DurabilityEngine, JournalRead, KeptValue, Store, ScrubFinding, StoreChange, StoreImage, StoreItem } from './engine/store.js'
export { keptName } from './engine/store.js'
// ...the durable journal a store carries (Store.durability), and the in-memory store, which carries it.
export { durableJournal } from './engine/durable-journal.js'
export { MemoryStore } from './engine/memory-store.js'
// ...and a compaction's snapshot encoded off the calling thread, from the store alone (a store passes a SnapshotEncoder).
export { snapshotOfStore } from './engine/snapshot-elsewhere.js'
export type { ElsewhereSnapshot, SnapshotEncoder, SnapshotRequest, StatsWanted } from './engine/snapshot-elsewhere.js'
export type { BlobId } from './blob/store.js'
// The id the blob store gives a content: an adapter that keeps bytes outside it can tell them by it.
export { hashBytes } from './blob/hash.js'
export type { JsonValue } from './engine/state.js'
// ...and the checks a store must pass.
export { storeContract } from '../testing/store-contract.js'
export type { ContractCheck, RawStore, StoreSubject, StoreUnderTest } from '../testing/store-contract.js'

// Flush targets: a real place that takes the change set.
export type { AppliedNotes, FlushEngine, FlushEntry, FlushProgress, FlushTarget } from './flush/target.js'
// ...carrying the flush engine the workspace runs to it (FlushTarget.flusher).
export { flushEngine } from './flush/engine.js'

// Errors shaped like Node's.
export { FsError, isFsError, rangeError, systemError, typeError } from './errors.js'
export type { ErrnoCode, NodeError, NodeErrorCode } from './errors.js'

// Workspace paths.
export { basename, dirname, isWithin, join, normalize } from './path.js'

// The classes ws.fs returns, for an adapter that hands them on with other paths (mountOver).
export { Dir, Dirent } from './fs/stats.js'

// Exec runners: the search over the history a runner carries for ws.bisect (ExecRunner.bisector).
export { bisectEngine } from './engine/bisect.js'
export type { BisectEngine, BisectHost } from './engine/bisect.js'
// ...the upper tree ExecHost.tree() gives and the view over it (ExecHost.view), read
// only. A directory's children are a persistent map: mapGet, mapEntries, and mapDiff for what
// differs between two trees in O(differences). ws.lower is the lower source as the trees saw it:
// pinnedPaths() are those a flush changed underneath them. Hard-link names hold a HardLink into the
// tree's inode table (the root's child INODES): namesOf finds an inode's names, tableOf the table.
export type { DirNode, EntryNode, FileNode, Meta, SymlinkNode, UpperNode, Whiteout } from './layer/nodes.js'
export type { HardLink, InodeRecord } from './layer/inodes.js'
export { INODES, namesOf, recordIn, tableOf } from './layer/inodes.js'
export type { MapRoot } from './layer/persistent-map.js'
export { mapDiff, mapEntries, mapGet } from './layer/persistent-map.js'
export type { Entry, Overlay } from './overlay.js'
export type { PinnedLower } from './flush/pinned-lower.js'

// Stores shared across tabs: one writer (a Web Lock), followers told of its commits and next in line.
export { TabRole } from './store/tab-role.js'
export type { TabRoleOptions } from './store/tab-role.js'
// The pack segment format (checksummed records appended to segment files), pure functions over bytes.
export * as pack from './store/pack-format.js'
