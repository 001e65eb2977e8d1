/**
 * The overlay's primitives, in one place: look up merged entries, read them, and put or remove a
 * node in the upper layer. Everything else (the Node fs surface, checkpoints, diff) is built on
 * these. Nothing here writes to the lower source.
 */
import type { BlobStore } from './blob/store.js'
import { type ErrnoCode, FsError } from './errors.js'
import { type EntryType, type LowerSource, type LowerStat, type WalkerEntry, isNotLoaded } from './lower/source.js'
import { changedSince, isListed, listedMark, settled } from './lower/listing.js'
import {
  type DirNode,
  type EntryNode,
  type FileNode,
  type Meta,
  type UpperNode,
  WHITEOUT,
  cloneDir,
  copiedDir,
  dirNode,
  timesChanged,
  typeBits,
  withMeta,
} from './layer/nodes.js'
import { type HardLink, INODES, INODES_PATH, type InodeRecord, hardLink, linkIds, linksIn, namesOf, recordId, recordIn, recordPath } from './layer/inodes.js'
import { type EditToken, hashString, mapDelete, mapEntries, mapGet, mapRemove, mapReplace, mapSet } from './layer/persistent-map.js'
import { components, dirname, join } from './path.js'

/** A merged entry: what a path shows, from the upper node if any, else from the lower source. */
export interface Entry {
  /** Canonical workspace path (symlinks resolved up to the entry itself). */
  readonly path: string
  readonly type: EntryType
  readonly node: EntryNode | undefined
  /** For directories, the merged lower directory (null: opaque or upper-only); else the lower path if lower-only. */
  readonly lowerPath: string | null
  readonly lowerStat: LowerStat | undefined
  /** A hard-link name: the inode's id in the table (`node` is then the inode's record). */
  readonly link?: number
  /** The inode table of the tree the entry was read from, when that is not the overlay's live tree. */
  readonly inodes?: DirNode
}

export interface StatFields {
  dev: number
  ino: number
  mode: number
  nlink: number
  uid: number
  gid: number
  rdev: number
  size: number
  blksize: number
  blocks: number
  atimeMs: number
  mtimeMs: number
  ctimeMs: number
  birthtimeMs: number
}

/** Work counters read by the complexity tests: they prove bounds without clocks. */
export interface OverlayCounters {
  /** Upper directory nodes created or copied. */
  nodesCopied: number
  /** Entries looked up (upper or lower). */
  lookups: number
}

const MAX_SYMLINKS = 40
/** What makes a path other than plain: '//', or a '.' or '..' component. */
const UNPLAIN = /\/\/|\/\.\.?(?:\/|$)/
type WalkFailure = 'ENOENT' | 'ENOTDIR' | 'ELOOP' | 'ENAMETOOLONG'

/** NAME_MAX: a component longer than this many UTF-8 bytes is ENAMETOOLONG when a directory is searched for it. */
const NAME_MAX = 255

/** Whether `name` is over NAME_MAX bytes (UTF-8 is never shorter than UTF-16, so most names answer from their length). */
function nameTooLong(name: string): boolean {
  if (name.length > NAME_MAX) return true
  if (name.length * 3 <= NAME_MAX) return false
  return new TextEncoder().encode(name).byteLength > NAME_MAX
}
/**
 * PATH_MAX less its NUL: a path given to a call of more UTF-8 bytes than this is ENAMETOOLONG
 * before anything is looked up. Linux checks the string the call is given (getname), not the path
 * it leads to: a relative path under it is looked up from a deep working directory, and a lookup
 * of a path the workspace made is never refused for its length.
 */
const PATH_MAX = 4095

/** Whether `path` is over PATH_MAX bytes (most paths answer from their length, as names do). */
export function pathTooLong(path: string): boolean {
  if (path.length > PATH_MAX) return true
  if (path.length * 3 <= PATH_MAX) return false
  return new TextEncoder().encode(path).byteLength > PATH_MAX
}

/** pathTooLong, answered from the length alone for nearly every path (a hot path of every call). */
function tooLong(path: string): boolean {
  return path.length * 3 > PATH_MAX && pathTooLong(path)
}

/** The version recorded for a lower path that had nothing when first looked up. */
export const ABSENT = ''
const DEVICE = 0x72776673 // 'rwfs'

export class Overlay {
  root: DirNode
  token: EditToken = {}
  readonly counters: OverlayCounters = { nodesCopied: 0, lookups: 0 }
  /** Lower path → version seen the first time the workspace read it (a restore's conflict base). */
  readonly observed = new Map<string, string>()
  /** First sightings not yet in the durable journal (only kept while a store is attached). */
  unrecorded: [string, string][] | undefined
  /**
   * Lower path → the version the workspace last showed there before it first changed that path: a
   * flush's conflict base (as an editor compares a file on disk with the one it loaded), so a change
   * on disk the agent read again before writing is no conflict, and one made after it is.
   */
  readonly bases = new Map<string, string>()
  /** Bases not yet in the durable journal (kept while a store is attached, as `unrecorded`). */
  unrecordedBases: [string, string][] | undefined
  /**
   * Whether first changes record bases. False for a store written before bases were recorded: its
   * changes already made have none, so a later one must not take a newer version for theirs (a
   * restore or redo brings back content that rests on the first sighting); such a store compares
   * with the first sightings only, as it always did.
   */
  rebasing = true
  /**
   * Lower path → the version of the latest read of its content outside an operation, where it
   * differs from the first sighting: what the agent was shown of a path the disk changed since it
   * was first read. A write's own look at the disk does not count: the agent did not see it.
   */
  private readonly lastShown = new Map<string, string>()
  /** Changes of `lastShown` not yet in the durable journal (kept while a store is attached, as `unrecorded`). */
  unrecordedShown: [string, string][] | undefined
  /**
   * Set on a transaction's staging overlay: every lower version its fs surface handed the body. The
   * commit shows them to the live overlay (showVersion): what the body read, the agent was shown.
   */
  shownInBody: Map<string, string> | undefined
  /**
   * Versions a transaction's commit says its changes rest on (observe) where the workspace had
   * seen another: a base taken for one of those paths in that commit is the first sighting.
   */
  private readonly claims = new Map<string, string>()
  /** Told about every change to the view, recorded or not (fs.watch and ws.events listen here). */
  observer: ChangeObserver | undefined
  /** Receives every upper-layer slot change: what the journal needs to undo and redo. */
  recorder: Recorder | undefined
  /** Changes with every change to the view (what was read from it may be kept until then). */
  version = 0

  constructor(
    readonly lower: LowerSource,
    readonly blobs: BlobStore,
    readonly inodes: { next: number },
    root?: DirNode,
  ) {
    this.root = root ?? Overlay.emptyRoot(lower)
  }

  /** An upper layer with no changes: the lower tree shows through. O(1). */
  static emptyRoot(lower: LowerSource): DirNode {
    const stat = lower.stat('/')
    if (!stat || stat.type !== 'dir') throw new TypeError(`rewindfs: the ${lower.kind} lower source has no root directory`)
    return copiedDir(metaFromLower(stat, '/'), '/', null)
  }

  /** Makes every current node immutable, so `root` can be kept as a snapshot. O(1). */
  freeze(): DirNode {
    this.token = {}
    return this.root
  }

  /** Moves the view to another tree (a restore). O(1). */
  setRoot(root: DirNode): void {
    const before = this.root
    this.token = {}
    this.root = root
    this.version++
    if (this.observer?.active) this.observer.root(before, root)
  }

  /**
   * The time of the operation being recorded, undone or replayed: every time it sets (its files',
   * the directories it touches) is one, taken at its first change or given (a replay gives the
   * record's), so a replay sets the directories' times the operation set. Undefined outside one.
   */
  private operationTime: number | undefined
  /** Whether an operation is under way (its time may not be taken yet). */
  private inOperation = false
  /**
   * Whether the operation under way is a new one (a call, a transaction's commit): only its first
   * change of a path takes a base. A replayed, undone or redone one brings back changes whose base
   * was taken when they were first made.
   */
  private newOperation = false

  now(): number {
    if (!this.inOperation) return Date.now()
    return (this.operationTime ??= Date.now())
  }

  /** An operation begins: now() answers `at`, or the time it is first asked, until endTime(). */
  beginTime(at?: number): void {
    this.inOperation = true
    this.newOperation = at === undefined
    this.operationTime = at
  }

  /** The operation ended: the time it used (undefined when it asked none). */
  endTime(): number | undefined {
    const at = this.operationTime
    this.inOperation = false
    this.newOperation = false
    this.operationTime = undefined
    if (this.claims.size > 0) this.claims.clear()
    return at
  }

  /** Runs `body` as one operation's time (an undo or redo of records): returns the time it used. */
  atOneTime(at: number | undefined, body: () => void): number | undefined {
    this.beginTime(at)
    this.newOperation = false
    let used: number | undefined
    try {
      body()
    } finally {
      used = this.endTime()
    }
    return used
  }

  newIno(): number {
    return this.inodes.next++
  }

  // ---- lookups ----------------------------------------------------------------------------------

  rootEntry(): Entry {
    // Entries are values: the root's is made again only when the root node is another one (every walk starts here).
    const root = this.root
    if (this.rootCache?.node !== root) this.rootCache = { path: '/', type: 'dir', node: root, lowerPath: root.lower, lowerStat: undefined, link: undefined, inodes: undefined }
    return this.rootCache
  }

  private rootCache: Entry | undefined

  /** The live tree's inode table (inodes.ts), if it has one. */
  table(): DirNode | undefined {
    const table = mapGet(this.root.children, INODES)
    return table?.type === 'dir' ? table : undefined
  }

  /** The entry a hard-link name shows: its inode's record, from `inodes` or the live tree's table. */
  linkEntry(path: string, id: number, inodes?: DirNode): Entry {
    const record = recordIn(inodes ?? this.table(), id)
    if (!record) throw new Error(`rewindfs: ${path} is a hard link to inode ${id}, which the tree does not have`)
    return { path, type: record.type, node: record, lowerPath: null, lowerStat: undefined, link: id, inodes }
  }

  /** The entry an upper slot value shows at `path` (undefined: a whiteout). */
  slotEntry(path: string, node: UpperNode, inodes?: DirNode): Entry | undefined {
    if (node.type === 'whiteout') return undefined
    if (node.type === 'link') return this.linkEntry(path, node.id, inodes)
    return entryFromNode(path, node, inodes)
  }

  lowerStat(path: string): LowerStat | undefined {
    const stat = this.lower.stat(path)
    if (this.looking === 0) {
      const first = this.observed.get(path)
      if (first === undefined) {
        // A source that can be flushed to also needs "seen absent": something created there later is a conflict.
        const version = stat ? stat.version : this.lower.id !== undefined ? ABSENT : undefined
        if (version !== undefined) this.observe(path, version)
      } else if (isListed(first)) this.settle(path, first, stat)
    }
    return stat
  }

  /** A listed entry's first lookup: its version, if it cannot have changed since it was listed (lower/listing.ts). */
  private settle(path: string, mark: string, stat: LowerStat | undefined): string {
    const version = settled(mark, stat, this.lower.stat(dirname(path))?.ino)
    if (version === mark) return mark
    this.observed.set(path, version)
    this.unrecorded?.push([path, version])
    return version
  }

  /**
   * The content of `entry` (a file's bytes, a link's target, a directory's names) was handed to the
   * caller of the fs surface, outside an operation: what the agent was shown there, if it is the
   * lower's. Said by the fs surface's reads only: the engine's own (a checkpoint's sizes, a diff, an
   * export, an event's changes) show the agent nothing, and a base taken from them would pass a
   * human's save the agent never saw for one its change rests on. A lookup is not a read either.
   */
  markShown(entry: Entry): void {
    if (entry.lowerPath === null || this.looking > 0 || this.inOperation) return
    // A directory copied up that holds nothing of the workspace's any more lists the disk's names.
    const stat = entry.node === undefined ? entry.lowerStat : this.rebasing ? this.diskShown(entry.path, entry.node) : undefined
    if (stat === undefined) return
    this.shownInBody?.set(entry.lowerPath, stat.version)
    this.showVersion(entry.lowerPath, stat.version)
  }

  /**
   * The disk's entry at `path` when `node` there is a directory copied up from it that holds none
   * of the workspace's changes any more (an undo took back what it was copied up for): it shows the
   * disk's names and mode as a directory never copied up would, and its next change takes its base
   * again. Its times are not compared (every entry made or removed in it moves them).
   */
  private diskShown(path: string, node: unknown): LowerStat | undefined {
    const dir = node as UpperNode | undefined
    if (dir?.type !== 'dir' || dir.lower !== path || path === '/' || !mapEntries(dir.children).next().done) return undefined
    const stat = this.lower.stat(path)
    const same = stat?.type === 'dir' && (stat.mode & 0o7777) === dir.meta.mode && (stat.uid ?? PROCESS_OWNER.uid) === dir.meta.uid && (stat.gid ?? PROCESS_OWNER.gid) === dir.meta.gid
    return same ? stat : undefined
  }

  /**
   * The agent was shown `version` of the lower path `path` (a read outside an operation, a committed
   * transaction's body's read). `record`: false while loading what the journal recorded.
   */
  showVersion(path: string, version: string, record = true): void {
    if (!this.rebasing) return
    const first = this.observed.get(path)
    const last = this.lastShown.get(path)
    if (first !== undefined && version !== first) {
      if (last === version) return
      this.lastShown.set(path, version)
    } else {
      if (last === undefined) return
      this.lastShown.delete(path)
    }
    // Kept across a reopen: a change made after it rests on what was read before it.
    if (record && this.unrecorded) (this.unrecordedShown ??= []).push([path, version])
  }

  /** Forgets what reads showed (a replay starting over). */
  forgetShown(): void {
    this.lastShown.clear()
  }

  /** The versions last shown where they differ from the first sightings (a snapshot's `shown`). */
  shownEntries(): [string, string][] {
    return [...this.lastShown]
  }

  /** Nesting of `lookingOnly`: while above 0, reading the lower records no first sighting. */
  private looking = 0

  /**
   * Runs `body` reading the lower without recording what it sees as the workspace's first sighting
   * (a flush's or status's diff against the disk as it is now: a version taken there would pass
   * for the one the agent read, and hide a change made since).
   */
  lookingOnly<T>(body: () => T): T {
    this.looking++
    try {
      return body()
    } finally {
      this.looking--
    }
  }

  /** The lower source's version at `path` was seen (unless one was already): a flush checks it for changes made since. */
  observe(path: string, version: string): void {
    let first = this.observed.get(path)
    if (first !== undefined && isListed(first) && version !== first) first = this.settle(path, first, this.lower.stat(path))
    if (first !== undefined) {
      // Said by a commit (a transaction's look at the disk, a command's "changed while it ran"):
      // where it is not what the workspace showed, a base taken in that commit is the first sighting.
      if (version !== first && !this.inOperation) this.claims.set(path, version)
      return
    }
    this.observed.set(path, version)
    this.unrecorded?.push([path, version])
  }

  /**
   * A new operation changes the upper slot `path` of a directory whose lower is `lowerDir`, the slot
   * holding `before`: a change of a path the lower source shows there takes its base, the version
   * last shown. Kept while the path holds the workspace's own changes (an undo, redo or restore of
   * them brings back changes resting on it); taken again when the path shows the disk once more
   * (an undo, reset or restore took it back there) and a new change is made on what the agent read
   * since: its base is that read, as an editor compares with the file it loaded last.
   */
  private based(path: string, lowerDir: string | null, name: string, before: unknown): void {
    if (!this.newOperation || lowerDir === null || !this.rebasing || this.lower.id === undefined) return
    const lowerPath = join(lowerDir, name)
    // In a renamed directory the slot shows another path of the disk: the flush compares its own path.
    if (lowerPath !== path) return
    if (before !== undefined && this.diskShown(path, before) === undefined) return
    this.base(path)
  }

  /**
   * A restore forced over `path`, which changed on disk since the workspace first read it, may bring
   * back changes made on that first read: the flush compares with it again (a base taken later, on
   * a read of the save, would let those changes overwrite the save unseen).
   */
  baseOnFirstSighting(path: string): void {
    const first = this.observed.get(path)
    if (first === undefined || !this.rebasing || this.bases.get(path) === first) return
    this.bases.set(path, first)
    if (this.unrecorded) (this.unrecordedBases ??= []).push([path, first])
  }

  /** Records `path`'s base (see `bases`), unless the workspace never saw it. */
  private base(path: string): void {
    const first = this.observed.get(path)
    if (first === undefined) return
    const shown = this.lastShown.get(path) ?? first
    const claim = this.claims.get(path)
    const version = claim !== undefined && claim !== shown ? first : shown
    this.bases.set(path, version)
    if (this.unrecorded) (this.unrecordedBases ??= []).push([path, version])
  }

  /**
   * The child `name` of a merged directory, or undefined. `path`: the child's path when the caller
   * holds that string already (it is the entry's path, and what the journal keeps: no copy made).
   */
  child(dir: Entry, name: string, path?: string): Entry | undefined {
    this.counters.lookups++
    const upper = dir.node?.type === 'dir' ? mapGet(dir.node.children, name) : undefined
    if (upper !== undefined) {
      if (upper.type === 'whiteout') return undefined
      if (upper.type === 'link') return this.linkEntry(path ?? join(dir.path, name), upper.id, dir.inodes)
      return entryFromNode(path ?? join(dir.path, name), upper, dir.inodes)
    }
    if (dir.lowerPath === null) return undefined
    const lowerPath = join(dir.lowerPath, name)
    const stat = this.lowerStat(lowerPath)
    if (!stat) return undefined
    return { path: path ?? join(dir.path, name), type: stat.type, node: undefined, lowerPath, lowerStat: stat, link: undefined, inodes: dir.inodes }
  }

  /**
   * Resolves a path the way the kernel does: component by component, '..' physically (after the
   * symlink before it), absolute symlink targets from the workspace root. Throws Node's errors
   * with `syscall` and the caller's `reportPath`: the path as the call was given it, refused over
   * PATH_MAX (without one, the lookup is the workspace's own).
   */
  resolve(path: string, syscall: string, follow: boolean, reportPath?: string, dest?: string, linkSyscall = syscall): Entry {
    if (reportPath !== undefined && tooLong(reportPath)) throw new FsError('ENAMETOOLONG', syscall, reportPath, dest)
    let entry: Entry | undefined
    try {
      entry = this.walk(path, follow)
    } catch (error) {
      // The source failed a lookup (EACCES under a directory this process may not search): the call's error.
      throw reportPath === undefined ? error : callersError(error, syscall, reportPath, dest)
    }
    if (entry !== undefined) return entry
    const code = this.failure
    throw new FsError(code, code !== 'ELOOP' && this.failureInLink ? linkSyscall : syscall, reportPath ?? path, dest)
  }

  /** Like resolve, but undefined instead of an error: for checks on hot paths (no exception cost). */
  lookup(path: string, follow: boolean): Entry | undefined {
    return this.walk(path, follow)
  }

  /**
   * lookup, where a lookup the source refused (EACCES under a directory this process may not
   * search) is undefined too: for checks ahead of a call (an auto-checkpoint's), which leave the
   * call to fail as Node names it. Contents not loaded yet still throw, for the caller to load.
   */
  peek(path: string, follow: boolean): Entry | undefined {
    try {
      return this.walk(path, follow)
    } catch (error) {
      if (isNotLoaded(error)) throw error
      return undefined
    }
  }

  /** Why the last walk found nothing, and whether in a symlink's target: kept here so a walk allocates no callback. */
  private failure: WalkFailure = 'ENOENT'
  private failureInLink = false

  private fail(code: WalkFailure, inLink: boolean): undefined {
    this.failure = code
    this.failureInLink = inLink
    return undefined
  }

  private walk(path: string, follow: boolean): Entry | undefined {
    // The kernel refuses an empty path (ENOENT) rather than taking it as the working directory.
    if (path === '') return this.fail('ENOENT', false)
    if (path.charCodeAt(0) === 47 && (path.length === 1 || (path.charCodeAt(path.length - 1) !== 47 && !UNPLAIN.test(path)))) {
      // An absolute path without '//', '.' or '..' components or a trailing slash (the usual one):
      // component by component, nothing but the entries made (a hot path of every call). A symlink
      // to follow sends it to the general walk, which starts over with the stack its '..' needs.
      let current = this.rootEntry()
      for (let start = 1, end = 0; start < path.length; start = end + 1) {
        end = path.indexOf('/', start)
        if (end === -1) end = path.length
        if (current.type !== 'dir') return this.fail('ENOTDIR', false)
        if (end - start > NAME_MAX / 3 && nameTooLong(path.slice(start, end))) return this.fail('ENAMETOOLONG', false)
        // The last component's path is the path itself (no symlink taken so far on this path).
        const child = this.child(current, path.slice(start, end), end === path.length ? path : undefined)
        if (!child) return this.fail('ENOENT', false)
        if (child.type === 'symlink' && (end < path.length || follow)) break
        current = child
        if (end === path.length) return current
      }
      if (path.length === 1) return current
    }
    const trailingSlash = path.endsWith('/') || path.endsWith('/.') || path.endsWith('/..')
    return this.walkFrom(components(path).reverse(), follow, trailingSlash)
  }

  /** The walk through `queue` (the components, last first) from the root, following symlinks as the kernel does. */
  private walkFrom(queue: string[], follow: boolean, trailingSlash: boolean): Entry | undefined {
    const stack: Entry[] = [this.rootEntry()]
    let links = 0
    // Components still queued that came from a symlink's target (their errors use `linkSyscall`).
    let fromLink = 0
    while (queue.length > 0) {
      const name = queue.pop()!
      const inLink = fromLink > 0
      if (inLink) fromLink--
      const current = stack[stack.length - 1]
      if (current.type !== 'dir') return this.fail('ENOTDIR', inLink)
      if (name === '.') continue
      if (name === '..') {
        if (stack.length > 1) stack.pop()
        continue
      }
      if (nameTooLong(name)) return this.fail('ENAMETOOLONG', inLink)
      const child = this.child(current, name)
      if (!child) return this.fail('ENOENT', inLink)
      if (child.type === 'symlink' && (queue.length > 0 || follow || trailingSlash)) {
        if (++links > MAX_SYMLINKS) return this.fail('ELOOP', inLink)
        const target = this.readLink(child)
        if (target === '') return this.fail('ENOENT', true)
        if (target.startsWith('/')) stack.length = 1
        const parts = components(target)
        // A target ending in '/' names a directory, as a path with the slash does: '.' after it checks that.
        if (target.endsWith('/') && parts.length > 0) {
          queue.push('.')
          fromLink++
        }
        for (let i = parts.length - 1; i >= 0; i--) queue.push(parts[i])
        fromLink += parts.length
        continue
      }
      stack.push(child)
    }
    const entry = stack[stack.length - 1]
    if (trailingSlash && entry.type !== 'dir') return this.fail('ENOTDIR', false)
    return entry
  }

  /**
   * For calls on two names in one directory (link): the directory resolved once for both, when
   * both are plain absolute paths (no '//', '.' or '..' components, no trailing slash) with the
   * same parent path, so that the lookups of each would find the same directory and fail the same
   * way. `source` is the first name's entry, its last component not followed (undefined: missing).
   * Undefined when the paths do not share a parent this way.
   */
  resolvePair(path: string, other: string, syscall: string, reportPath: string, dest: string): { source: Entry | undefined; target: ParentLookup } | undefined {
    const last = path.lastIndexOf('/')
    if (last < 0 || last !== other.lastIndexOf('/') || last === path.length - 1 || last === other.length - 1 || path.charCodeAt(0) !== 47) return undefined
    for (let i = 1; i < last; i++) if (path.charCodeAt(i) !== other.charCodeAt(i)) return undefined
    if (UNPLAIN.test(path) || UNPLAIN.test(other)) return undefined
    const target = this.resolveParent(other, syscall, reportPath, dest, dest)
    // The first name's path is `path` itself when the parent was reached without a symlink (then target.path is set).
    try {
      return { source: this.child(target.parent!, path.slice(last + 1), target.path === undefined ? undefined : path), target }
    } catch (error) {
      throw callersError(error, syscall, reportPath, dest)
    }
  }

  /**
   * Resolves everything but the last component, for calls that create or remove a name. The last
   * component is returned raw ('.', '..' included) for the caller's own rules. `given`: the string
   * the call was given for this path (a call on two paths reports the first as `reportPath`).
   */
  resolveParent(path: string, syscall: string, reportPath: string = path, dest?: string, given = reportPath): ParentLookup {
    if (path === '') throw new FsError('ENOENT', syscall, reportPath, dest)
    // The whole string, as the kernel takes it: its parent alone may be short enough.
    if (tooLong(given)) throw new FsError('ENAMETOOLONG', syscall, reportPath, dest)
    const last = path.lastIndexOf('/')
    let name: string
    let parentPath: string
    let trailingSlash = false
    let plain = false
    if (last === 0 ? path.length > 1 : last > 0 && last < path.length - 1 && path.charCodeAt(0) === 47 && !UNPLAIN.test(path)) {
      // An absolute path without '//', '.' or '..' components or a trailing slash (the usual one):
      // the same split, without arrays (a hot path of every call that creates or removes a name).
      // The parent without a trailing slash keeps resolve on its fast path; following its last
      // component and the directory check below do what the slash would make the walk do.
      name = path.slice(last + 1)
      parentPath = last === 0 ? '/' : path.slice(0, last)
      plain = true
    } else {
      const parts = components(path)
      trailingSlash = path.endsWith('/')
      if (parts.length === 0) return { parent: undefined, name: '', trailingSlash, existing: this.rootEntry(), path: undefined }
      name = parts[parts.length - 1]
      parentPath = '/' + parts.slice(0, -1).join('/') + (parts.length > 1 ? '/' : '')
    }
    const parent = this.resolve(parentPath, syscall, true, reportPath, dest)
    if (parent.type !== 'dir') throw new FsError('ENOTDIR', syscall, reportPath, dest)
    // The last component is looked up too (to create or remove it), so a name too long fails here.
    if (nameTooLong(name)) throw new FsError('ENAMETOOLONG', syscall, reportPath, dest)
    // A plain path whose parent was reached without a symlink is the name's own path.
    const named = plain && parent.path === parentPath ? path : undefined
    let existing: Entry | undefined
    try {
      existing = name === '.' || name === '..' ? undefined : this.child(parent, name, named)
    } catch (error) {
      throw callersError(error, syscall, reportPath, dest)
    }
    return { parent, name, trailingSlash, existing, path: named }
  }

  readBytes(entry: Entry): Uint8Array {
    if (entry.node?.type === 'file') {
      // A blob the integrity check dropped (its bytes were corrupt), or one missing from the store, reads as an I/O error, as a bad disk block would.
      if (!this.blobs.intact(entry.node.blob)) {
        const why = this.blobs.missing?.(entry.node.blob) ? 'is missing from the store' : 'failed its checksum'
        throw new FsError('EIO', 'read', entry.path, undefined, `i/o error: the stored content ${why}`)
      }
      try {
        return this.blobs.get(entry.node.blob)
      } catch (error) {
        // Read back from the durable store (contents on demand) and found damaged: this path's I/O error.
        if (error instanceof FsError && error.code === 'EIO' && error.path === undefined) throw new FsError('EIO', 'read', entry.path, undefined, 'i/o error: the stored content cannot be read or failed its checksum')
        throw error
      }
    }
    if (entry.lowerPath !== null && entry.type === 'file') return this.lower.readFile(entry.lowerPath)
    throw new FsError('EISDIR', 'read')
  }

  readLink(entry: Entry): string {
    if (entry.node?.type === 'symlink') return entry.node.target
    if (entry.lowerPath !== null && entry.type === 'symlink') return this.lower.readlink(entry.lowerPath)
    throw new FsError('EINVAL', 'readlink', entry.path)
  }

  /** Merged names of a directory, sorted, without whiteouts or duplicates. */
  names(dir: Entry): string[] {
    const names = new Set<string>()
    const hidden = new Set<string>()
    if (dir.node?.type === 'dir') {
      for (const [name, node] of mapEntries(dir.node.children)) if (name !== INODES) (node.type === 'whiteout' ? hidden : names).add(name)
    }
    if (dir.lowerPath !== null) {
      for (const name of this.lowerNames(dir.lowerPath)) if (!hidden.has(name)) names.add(name)
    }
    return [...names].sort()
  }

  /**
   * The merged entries of a directory with their types, sorted as names() is: what a listing shows.
   * Where the source lists types (readdirTypes), a lower entry is not looked up: one not seen before
   * is recorded as listed (lower/listing.ts), and its first lookup settles that. One stat per
   * listing (the directory's: its inode for the marks), none per entry.
   */
  listing(dir: Entry): WalkerEntry[] {
    const out: WalkerEntry[] = []
    const lowerPath = dir.lowerPath
    // Taken before the listing, so an entry changed while it lists counts as changed after it.
    const at = Date.now()
    const recording = this.looking === 0
    const typed = lowerPath !== null && this.lower.readdirTypes !== undefined
    // A directory changed in the moment before (listing.ts's changedSince): its entries are looked up.
    const dirStat = typed && recording ? this.lower.stat(lowerPath) : undefined
    if (!typed || (recording && (dirStat === undefined || changedSince(dirStat, at)))) {
      for (const name of this.names(dir)) {
        const child = this.child(dir, name)
        if (child) out.push({ name, type: child.type })
      }
      return out
    }
    const upper = dir.node?.type === 'dir' ? dir.node.children : undefined
    if (upper) {
      for (const [name, node] of mapEntries(upper)) {
        if (name === INODES || node.type === 'whiteout') continue
        out.push({ name, type: node.type === 'link' ? this.linkEntry(join(dir.path, name), node.id, dir.inodes).type : node.type })
      }
    }
    const dirIno = dirStat?.ino
    for (const entry of this.lowerList(lowerPath, (path) => this.lower.readdirTypes!(path))) {
      if (upper !== undefined && mapGet(upper, entry.name) !== undefined) continue
      out.push(entry)
      const path = join(lowerPath, entry.name)
      if (recording && !this.observed.has(path)) this.observe(path, listedMark(at, entry.type, dirIno))
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * The names a merged directory's lower half lists: none once the source no longer has it there
   * (removed or replaced on disk under the workspace, as overlayfs shows an upper directory whose
   * lower one went away), so what the workspace wrote in it stays readable, diffable and flushable.
   */
  private lowerNames(lowerPath: string): string[] {
    return this.lowerList(lowerPath, (path) => this.lower.readdir(path))
  }

  private lowerList<T>(lowerPath: string, list: (path: string) => T[]): T[] {
    try {
      return list(lowerPath)
    } catch (error) {
      const code = (error as { code?: unknown } | undefined)?.code
      if ((code === 'ENOENT' || code === 'ENOTDIR') && this.lower.stat(lowerPath)?.type !== 'dir') return []
      throw error
    }
  }

  /**
   * Whether a directory holds nothing (rmdir, a rename over it). One on disk this process may not
   * list (mode 0311: EACCES) counts as holding something: rmdir(2) removes it only when empty,
   * which no one without read permission can tell, and removed on a guess the flush could fail.
   */
  isEmptyDir(dir: Entry): boolean {
    if (dir.node?.type === 'dir') {
      for (const [name, node] of mapEntries(dir.node.children)) if (node.type !== 'whiteout' && name !== INODES) return false
    }
    if (dir.lowerPath === null) return true
    const hidden = dir.node?.type === 'dir' ? dir.node.children : undefined
    let names: string[]
    try {
      names = this.lowerNames(dir.lowerPath)
    } catch (error) {
      if ((error as { code?: unknown } | undefined)?.code === 'EACCES') return false
      throw error
    }
    return names.every((name) => hidden !== undefined && mapGet(hidden, name) !== undefined)
  }

  /**
   * Throws what reading a lower file throws (EACCES for one on disk this process may not read, mode
   * 000), for open(2) and copyFile (libuv opens the source first), which fail there before anything
   * is read or made. Only a file whose mode and owners do not say this process may read it is
   * read (mayRead): one it may is read when its bytes are wanted, not twice.
   */
  checkReadable(entry: Entry): void {
    if (entry.node !== undefined || entry.lowerPath === null || entry.type !== 'file' || entry.lowerStat === undefined) return
    if (mayRead(entry.lowerStat)) return
    try {
      this.lower.readFile(entry.lowerPath)
    } catch (error) {
      // Contents an asynchronous source has not loaded yet: the read that wants them says so.
      if (!isNotLoaded(error)) throw error
    }
  }

  /**
   * Throws what listing `dir`'s lower half throws (EACCES for one on disk this process may not
   * read, mode 0311), for opendir(2), which fails there before anything is read. Only a lower
   * directory whose mode and owners do not say this process may list it is listed (mayRead):
   * opendir of one it may costs no listing more than its reads do.
   */
  checkListable(dir: Entry): void {
    const lowerPath = dir.lowerPath
    if (lowerPath === null || dir.type !== 'dir') return
    const stat = (dir.node === undefined ? dir.lowerStat : undefined) ?? this.lower.stat(lowerPath)
    if (stat === undefined || mayRead(stat)) return
    this.lookingOnly(() => this.lowerNames(lowerPath))
  }

  /**
   * rm -r's look at a directory's tree before it goes: Linux's rm must list every directory to
   * unlink its entries, so one on disk it may not list (mode 0311: EACCES) keeps rm -r from
   * removing it, where a whiteout alone would remove what a flush then cannot. Lists each directory
   * below `dir` (itself included) that shows a lower one, once (through the source's walker where
   * it has one), recording no sighting: the first that fails, as its path below `dir` ('' for
   * `dir`, else 'a/b') and the source's error; undefined when every one lists.
   */
  unlistedBelow(dir: Entry): { readonly below: string; readonly error: unknown } | undefined {
    return this.lookingOnly(() => {
      const walker = this.lower.walker?.()
      const list = (path: string): WalkerEntry[] => {
        if (walker) return walker.list(path)
        if (this.lower.readdirTypes) return this.lower.readdirTypes(path)
        return this.lower.readdir(path).map((name) => ({ name, type: this.lower.stat(join(path, name))?.type ?? 'file' }))
      }
      const pending: [below: string, node: DirNode | undefined, lowerPath: string | null][] = [['', dir.node?.type === 'dir' ? dir.node : undefined, dir.lowerPath]]
      const under = (below: string, name: string) => (below === '' ? name : below + '/' + name)
      while (pending.length > 0) {
        const [below, node, lowerPath] = pending.pop()!
        const upper = node?.children
        if (upper) for (const [name, child] of mapEntries(upper)) if (child.type === 'dir' && name !== INODES) pending.push([under(below, name), child, child.lower])
        if (lowerPath === null) continue
        let entries: WalkerEntry[]
        try {
          entries = this.lowerList(lowerPath, list)
        } catch (error) {
          return { below, error }
        }
        for (const entry of entries) {
          if (entry.type === 'dir' && (upper === undefined || mapGet(upper, entry.name) === undefined)) pending.push([under(below, entry.name), undefined, join(lowerPath, entry.name)])
        }
      }
      return undefined
    })
  }

  meta(entry: Entry): Meta {
    if (entry.node) return entry.node.meta
    return metaFromLower(entry.lowerStat!, entry.lowerPath!)
  }

  size(entry: Entry): number {
    if (entry.node?.type === 'file') return entry.node.size
    if (entry.node?.type === 'symlink') return byteLength(entry.node.target)
    if (entry.type === 'dir') return 4096
    return entry.lowerStat!.size
  }

  stat(entry: Entry): StatFields {
    const meta = this.meta(entry)
    const size = this.size(entry)
    return {
      dev: DEVICE,
      ino: meta.ino,
      mode: typeBits[entry.type] | meta.mode,
      nlink: entry.type === 'dir' ? 2 : entry.link !== undefined ? (entry.node as InodeRecord).nlink ?? 1 : entry.node ? 1 : (entry.lowerStat?.nlink ?? 1),
      uid: meta.uid,
      gid: meta.gid,
      rdev: 0,
      size,
      blksize: 4096,
      // A symlink's target under 60 bytes lives in the inode (ext4's fast symlink): no blocks.
      blocks: entry.type === 'dir' ? 8 : entry.type === 'symlink' && size < 60 ? 0 : Math.ceil(size / 4096) * 8,
      atimeMs: meta.atimeMs,
      mtimeMs: meta.mtimeMs,
      ctimeMs: meta.ctimeMs,
      birthtimeMs: meta.birthtimeMs,
    }
  }

  // ---- mutations ---------------------------------------------------------------------------------

  /** The upper directory node at a canonical path, owned by the current token (copied up as needed). */
  private editDir(path: string): DirNode {
    if (this.root.token !== this.token) {
      this.root = cloneDir(this.root, this.token)
      this.counters.nodesCopied++
    }
    let node = this.root
    // Component by component without an array: every write edits a directory.
    for (let start = 1, end = 0; start < path.length; start = end + 1) {
      end = path.indexOf('/', start)
      if (end === -1) end = path.length
      if (end === start) continue
      const name = path.slice(start, end)
      const existing = mapGet(node.children, name)
      let child: DirNode
      if (existing?.type === 'dir') {
        if (existing.token === this.token) {
          node = existing
          continue
        }
        child = cloneDir(existing, this.token)
      } else if (existing === undefined && node === this.root && name === INODES) {
        // The inode table is made on the first hard link (it is no name of the lower layer's).
        child = dirNode(TABLE_META, null, this.token)
      } else if (existing === undefined && node.lower !== null) {
        const lowerPath = join(node.lower, name)
        const stat = this.lowerStat(lowerPath)
        // A directory the lower source no longer has (removed on disk since, as a branch switch
        // does) while the journal replays what was written in it: the writes stay, over nothing.
        child = stat?.type === 'dir' ? copiedDir(metaFromLower(stat, lowerPath), lowerPath, this.token) : dirNode(vanishedMeta(lowerPath), lowerPath, this.token)
      } else throw new Error(`rewindfs: ${path} is not a directory in the upper layer`)
      this.counters.nodesCopied++
      node.children = mapSet(node.children, name, child, this.token)
      node = child
    }
    return node
  }

  /**
   * Refuses to create `path` when the lower source keeps it to itself (its flush staging folder):
   * EINVAL with the source's reason, before anything changes.
   */
  refuseReserved(path: string, syscall: string, given: string, dest?: string): void {
    const why = this.lower.reserved?.(path)
    if (why !== undefined) throw new FsError('EINVAL', syscall, given, dest, `${why}; choose another name`)
  }

  /**
   * Puts `node` at `parent.path/name`, replacing what was there (whose hard-link names are gone:
   * their inodes lose a link); bumps the parent's times. A HardLink put here is a name its caller
   * has counted already (link, rename).
   */
  put(parent: Entry, name: string, node: EntryNode | HardLink, touchParent = true): Entry {
    const path = this.putNode(parent, name, node, touchParent, join(parent.path, name))
    return node.type === 'link' ? this.linkEntry(path, node.id) : entryFromNode(path, node)
  }

  /** put without the entry (its caller has what it needs), given the path of the name (its parent's path and `name`). */
  private putNode(parent: Entry, name: string, node: EntryNode | HardLink, touchParent: boolean, path: string): string {
    const dir = this.ownedDir(parent)
    const before = mapReplace<UpperNode>(dir, name, node, this.token)
    this.version++
    if (touchParent) this.touch(dir)
    this.based(path, dir.lower, name, before)
    this.recorder?.slot(path, before, node)
    if (this.observer?.active) this.observer.slot(path, this.shown(before), this.shown(node), lowerChild(dir, name))
    const dropped = linksIn(before)
    this.countLinks(parent.path, dir, linksIn(node) - dropped)
    if (dropped > 0) this.dropLinks(before!)
    return path
  }

  /**
   * The upper directory node of a directory entry resolved just now, owned by the current token:
   * its own node when the token owns it already (owned nodes hang from owned parents and change in
   * place, so it is that path's node), else copied up by a walk from the root.
   */
  private ownedDir(dir: Entry): DirNode {
    const node = dir.node
    return node?.type === 'dir' && node.token === this.token && this.root.token === this.token ? node : this.editDir(dir.path)
  }

  /**
   * Removes `parent.path/name`: a whiteout when the lower layer has that name, else nothing. The
   * hard-link names it held are gone (their inodes lose a link), unless they are `moving` (a rename
   * puts them back elsewhere).
   */
  remove(parent: Entry, name: string, moving = false): void {
    const dir = this.editDir(parent.path)
    const lowerHas = dir.lower !== null && this.lowerStat(join(dir.lower, name)) !== undefined
    const before = lowerHas ? mapReplace<UpperNode>(dir, name, WHITEOUT, this.token) : mapRemove(dir, name, this.token)
    this.version++
    this.touch(dir)
    if (lowerHas) this.based(join(parent.path, name), dir.lower, name, before)
    this.recorder?.slot(join(parent.path, name), before, lowerHas ? WHITEOUT : undefined)
    if (this.observer?.active) this.observer.slot(join(parent.path, name), this.shown(before), lowerHas ? WHITEOUT : undefined, lowerChild(dir, name))
    const links = linksIn(before)
    if (links === 0) return
    this.countLinks(parent.path, dir, -links)
    if (!moving) this.dropLinks(before!)
  }

  /**
   * link(2): `parent.path/name` becomes one more name of the inode at `entry` (a file or a
   * symlink), which becomes shared on its first link: its record moves into the inode table and its
   * name points there. The record is set before any name points at it (inodes.ts). `path`: the new
   * name's path (its parent's path and `name`), which it returns.
   */
  link(entry: Entry, parent: Entry, name: string, path: string = join(parent.path, name)): string {
    if (entry.type === 'dir') throw new Error('rewindfs: a directory cannot be hard-linked')
    const now = this.now()
    if (entry.link === undefined) {
      const node = this.copyUp(entry) as InodeRecord
      const id = this.newIno()
      this.setRecord(id, withMeta(node, timesChanged(node.meta, now), 2))
      // One immutable name node serves both names.
      const named = hardLink(id)
      this.setName(entry.path, named, parent)
      return this.putNode(parent, name, named, true, path)
    }
    const before = this.record(entry.link)
    this.setRecord(entry.link, withMeta(before, timesChanged(before.meta, now), (before.nlink ?? 1) + 1))
    return this.putNode(parent, name, hardLink(entry.link), true, path)
  }

  /**
   * A name of the shared inode whose inode number is `ino` (a descriptor's file once its own name
   * went), if the live tree has one. O(shared inodes): only asked when a descriptor's path fails it.
   */
  nameOfInode(ino: number): Entry | undefined {
    const table = this.table()
    if (table === undefined) return undefined
    for (const [key, record] of mapEntries<UpperNode>(table.children)) {
      if ((record.type !== 'file' && record.type !== 'symlink') || record.meta.ino !== ino) continue
      const id = Number(key)
      const path = namesOf(this.root, new Set([id])).get(id)?.[0]
      return path === undefined ? undefined : this.linkEntry(path, id)
    }
    return undefined
  }

  /** What a slot holds as a node to move elsewhere: a hard-link name stays one (rename). */
  slotNode(entry: Entry): EntryNode | HardLink {
    return entry.link !== undefined ? hardLink(entry.link) : this.copyUp(entry)
  }

  /** The live record of an inode. */
  private record(id: number): InodeRecord {
    const record = recordIn(this.table(), id)
    if (!record) throw new Error(`rewindfs: the tree has no inode ${id}`)
    return record
  }

  /** Sets (or deletes) an inode's record in the live table; recorded, not shown to watchers (names are). */
  private setRecord(id: number, record: InodeRecord | undefined): void {
    const owned = this.root.token === this.token ? mapGet(this.root.children, INODES) : undefined
    const table = owned?.type === 'dir' && owned.token === this.token ? owned : this.editDir(INODES_PATH)
    const key = String(id)
    const before = record === undefined ? mapRemove(table, key, this.token) : mapReplace<UpperNode>(table, key, record, this.token)
    this.version++
    this.recorder?.slot(recordPath(id), before, record)
  }

  /** Each hard-link name in a removed slot value takes one link from its inode; the last deletes its record. */
  private dropLinks(node: UpperNode): void {
    const now = this.now()
    for (const id of linkIds(node)) {
      const record = this.record(id)
      const nlink = (record.nlink ?? 1) - 1
      this.setRecord(id, nlink > 0 ? withMeta(record, timesChanged(record.meta, now), nlink) : undefined)
    }
  }

  /**
   * Adds `delta` hard-link names to the counts of the directories from the root to `dirPath`, whose
   * node is `dir` (all owned: just edited). Only the directories between are looked up.
   */
  private countLinks(dirPath: string, dir: DirNode, delta: number): void {
    if (delta === 0) return
    let node = this.root
    if (node !== dir) node.links += delta
    const last = dirPath.lastIndexOf('/')
    for (let start = 1, end = 0; start < last; start = end + 1) {
      end = dirPath.indexOf('/', start)
      if (end === start) continue
      node = mapGet(node.children, dirPath.slice(start, end)) as DirNode
      node.links += delta
    }
    dir.links += delta
  }

  /** A slot value as watchers see it: a hard-link name as its inode's record. */
  private shown(node: UpperNode | undefined): UpperNode | undefined {
    return node?.type === 'link' ? recordIn(this.table(), node.id) : node
  }

  /**
   * Sets one upper-layer slot to exactly `value` (undefined: nothing in the upper layer), for undo,
   * redo and replay. The parent must be a directory in the merged view. `touch`: false for a change
   * of the entry in place (a replayed write), which leaves its directory's times.
   */
  setSlot(path: string, value: UpperNode | undefined, touch = true): void {
    const parts = components(path)
    const name = parts.pop()!
    const dirPath = '/' + parts.join('/')
    const dir = this.editDir(dirPath)
    const before = mapGet(dir.children, name)
    if (before === value) return
    dir.children = value === undefined ? mapDelete(dir.children, name, this.token) : mapSet(dir.children, name, value, this.token)
    this.version++
    this.based(path, dir.lower, name, before)
    this.recorder?.slot(path, before, value)
    const id = recordId(path)
    if (id !== undefined) {
      // An inode's record: its names show the change (a record made or deleted comes with its names' own slots).
      if (this.observer?.active && before !== undefined && value !== undefined) {
        for (const name of namesOf(this.root, new Set([id])).get(id) ?? []) this.observer.slot(name, before, value, null)
      }
      return
    }
    if (touch) this.touch(dir)
    if (this.observer?.active) this.observer.slot(path, this.shown(before), this.shown(value), lowerChild(dir, name))
    this.countLinks(dirPath, dir, linksIn(value) - linksIn(before))
  }

  /** Sets a directory's metadata (undo/redo of chmod and utimes on directories). */
  setDirMeta(path: string, meta: Meta): void {
    const dir = this.editDir(path)
    const before = dir.meta
    dir.meta = meta
    this.version++
    // A directory of the disk changed itself (a chmod): its first such change takes its base.
    // Taken again when the directory showed the disk before it (an undo took back its changes).
    if (this.newOperation && this.rebasing && dir.lower === path && this.lower.id !== undefined && (!this.bases.has(path) || this.diskShown(path, { ...dir, meta: before }) !== undefined)) this.base(path)
    this.recorder?.meta(path, before, meta)
    if (this.observer?.active && before !== meta) this.observer.meta(path, before, meta)
  }

  /**
   * Replaces an entry's node in place (content or metadata change), copying it up first if
   * lower-only. For a hard-link name the inode's record changes: every name shows it.
   */
  replace(entry: Entry, node: EntryNode): Entry {
    if (entry.link !== undefined) {
      if (node.type === 'dir') throw new Error('rewindfs: an inode with hard links cannot become a directory')
      const before = this.record(entry.link)
      const record = withMeta(node, node.meta, before.nlink)
      this.setRecord(entry.link, record)
      // Watchers hear of it at the name it was made through, as inotify reports a write.
      if (this.observer?.active) this.observer.slot(entry.path, before, record, null)
      return { ...entry, type: record.type, node: record }
    }
    const parts = components(entry.path)
    if (parts.length === 0) {
      if (node.type !== 'dir') throw new Error('rewindfs: the root must stay a directory')
      this.setDirMeta('/', node.meta)
      return this.rootEntry()
    }
    this.setName(entry.path, node)
    return entryFromNode(entry.path, node)
  }

  /** Sets the slot of an existing name without touching its directory (a change to the entry itself). */
  private setName(path: string, node: EntryNode | HardLink, sibling?: Entry): void {
    // A canonical path of an existing name (not the root).
    const last = path.lastIndexOf('/')
    // A directory entry resolved just now at the name's parent path (link's other name) spares the walk to it.
    const inSibling = sibling !== undefined && (last === 0 ? sibling.path === '/' : sibling.path.length === last && path.startsWith(sibling.path))
    const parentPath = inSibling ? sibling.path : last === 0 ? '/' : path.slice(0, last)
    const dir = inSibling ? this.ownedDir(sibling) : this.editDir(parentPath)
    const name = path.slice(last + 1)
    const before = mapReplace<UpperNode>(dir, name, node, this.token)
    this.version++
    this.based(path, dir.lower, name, before)
    this.recorder?.slot(path, before, node, true)
    if (this.observer?.active) this.observer.slot(path, this.shown(before), this.shown(node), lowerChild(dir, name))
    this.countLinks(parentPath, dir, linksIn(node) - linksIn(before))
  }

  /** The entry as an upper node: lower files are read into the blob store, lower dirs merged. */
  copyUp(entry: Entry): EntryNode {
    if (entry.link !== undefined) {
      // A copy of a shared inode's content is a node of its own: without the record's link count.
      const { nlink: _nlink, ...node } = entry.node as InodeRecord
      return node
    }
    if (entry.node) return entry.node
    const meta = this.meta(entry)
    if (entry.type === 'file') {
      const bytes = this.lower.readFile(entry.lowerPath!)
      return { type: 'file', meta, blob: this.blobs.put(bytes.slice()), size: bytes.byteLength }
    }
    if (entry.type === 'symlink') return { type: 'symlink', meta, target: this.lower.readlink(entry.lowerPath!) }
    return copiedDir(meta, entry.lowerPath!, null)
  }

  /** Changes metadata (mode, times) of an entry; a lower entry is copied up. */
  setMeta(entry: Entry, change: Partial<Meta>): Entry {
    const node = this.copyUp(entry)
    const meta = { ...node.meta, ...change }
    if (node.type === 'dir') {
      this.setDirMeta(entry.path, meta)
      return entryFromNode(entry.path, this.editDir(entry.path))
    }
    return this.replace(entry, { ...node, meta })
  }

  /** New file content for an existing file entry; keeps its inode and mode. `owned`: the store may keep `bytes`. */
  setContent(entry: Entry, bytes: Uint8Array, owned = true): Entry {
    const meta = this.meta(entry)
    const now = this.now()
    const blob = owned ? this.blobs.put(bytes) : this.blobs.putCopy(bytes)
    if (entry.node?.type === 'file') this.blobs.succeeded(entry.node.blob, blob)
    return this.replace(entry, { type: 'file', meta: timesChanged(meta, now, now), blob, size: bytes.byteLength })
  }

  /** `tail` appended to a file entry whose content is `current` (its bytes, as read): O(tail) amortised (blob/growing.ts). */
  appendContent(entry: Entry, current: Uint8Array, tail: Uint8Array): Entry {
    const meta = this.meta(entry)
    const now = this.now()
    const base = entry.node?.type === 'file' ? entry.node.blob : undefined
    const blob = this.blobs.append(base, current, tail)
    if (base !== undefined) this.blobs.succeeded(base, blob)
    return this.replace(entry, { type: 'file', meta: timesChanged(meta, now, now), blob, size: current.byteLength + tail.byteLength })
  }

  newMeta(mode: number): Meta {
    const now = this.now()
    return { mode, uid: PROCESS_OWNER.uid, gid: PROCESS_OWNER.gid, atimeMs: now, mtimeMs: now, ctimeMs: now, birthtimeMs: now, ino: this.newIno() }
  }

  private touch(dir: DirNode): void {
    const now = this.now()
    dir.meta = timesChanged(dir.meta, now, now)
  }
}

/**
 * Observer of the merged view's changes, recorded or not (undo and redo write unrecorded): the
 * change feed behind fs.watch and ws.events. Called only while `active`, so an unwatched
 * workspace pays one property check per change.
 */
export interface ChangeObserver {
  readonly active: boolean
  /** One upper slot changed; `lowerPath` is the lower entry the slot shows when it holds nothing. */
  slot(path: string, before: UpperNode | undefined, after: UpperNode | undefined, lowerPath: string | null): void
  /** A directory's metadata changed in place. */
  meta(path: string, before: Meta, after: Meta): void
  /** The whole tree moved (restore, reset). */
  root(before: DirNode, after: DirNode): void
}

/** The lower path a name in an upper directory shows when the directory holds nothing for it. */
function lowerChild(dir: DirNode, name: string): string | null {
  return dir.lower === null ? null : join(dir.lower, name)
}

/** Observer of upper-layer changes (the journal). */
export interface Recorder {
  /** `inPlace`: the entry itself changed (a write, a chmod), so its directory was not touched. */
  slot(path: string, before: UpperNode | undefined, after: UpperNode | undefined, inPlace?: boolean): void
  meta(path: string, before: Meta, after: Meta): void
}

export interface ParentLookup {
  /** Undefined only for the root path itself. */
  readonly parent: Entry | undefined
  readonly name: string
  readonly trailingSlash: boolean
  readonly existing: Entry | undefined
  /** The name's canonical path when the caller's string is that path already (else undefined: `parent.path` joined with `name`). */
  readonly path: string | undefined
}

/** The entry a node shows at `path`; `inodes`: the table of the tree it is from, when not the live one. */
export function entryFromNode(path: string, node: EntryNode, inodes?: DirNode): Entry {
  return { path, type: node.type, node, lowerPath: node.type === 'dir' ? node.lower : null, lowerStat: undefined, link: undefined, inodes }
}

/**
 * Who makes what the workspace makes, as the kernel gives a new file its process's ids: on Node the
 * process's own (a program on the workspace compares `stat.uid` with `process.getuid()`, as `which`
 * does for execute bits), 0 where there is no process (a browser).
 */
const PROCESS_OWNER: { readonly uid: number; readonly gid: number } = (() => {
  const host = (globalThis as { process?: { getuid?: () => number; getgid?: () => number } }).process
  return { uid: host?.getuid?.() ?? 0, gid: host?.getgid?.() ?? 0 }
})()

/**
 * Whether this process may read an entry by its mode and owners alone, as the kernel decides for
 * an owner, its group or others (root may read anything; a supplementary group or an ACL is not
 * known here: such an entry is asked of the source).
 */
function mayRead(stat: LowerStat): boolean {
  if (PROCESS_OWNER.uid === 0 || (stat.mode & 0o444) === 0o444) return true
  if ((stat.uid ?? PROCESS_OWNER.uid) === PROCESS_OWNER.uid) return (stat.mode & 0o400) !== 0
  if ((stat.gid ?? PROCESS_OWNER.gid) === PROCESS_OWNER.gid) return (stat.mode & 0o040) !== 0
  return false
}

/** A directory's metadata where the lower source lost it: as mkdir makes one (0755), its times set again by the operation replayed. */
function vanishedMeta(lowerPath: string): Meta {
  const now = Date.now()
  return { mode: 0o755, uid: PROCESS_OWNER.uid, gid: PROCESS_OWNER.gid, atimeMs: now, mtimeMs: now, ctimeMs: now, birthtimeMs: now, ino: 2 ** 32 + hashString(lowerPath) }
}

export function metaFromLower(stat: LowerStat, lowerPath: string): Meta {
  return {
    mode: stat.mode & 0o7777,
    // A source that keeps no owners (a fixture, IndexedDB) gives its entries to whoever runs the workspace.
    uid: stat.uid ?? PROCESS_OWNER.uid,
    gid: stat.gid ?? PROCESS_OWNER.gid,
    atimeMs: stat.atimeMs ?? stat.mtimeMs,
    mtimeMs: stat.mtimeMs,
    ctimeMs: stat.ctimeMs ?? stat.mtimeMs,
    birthtimeMs: stat.birthtimeMs ?? stat.mtimeMs,
    // Lower inodes keep their number when the source has one; otherwise one derived from the path.
    ino: stat.ino ?? 2 ** 32 + hashString(lowerPath),
  }
}

/** The inode table's own metadata (it is never shown). */
const TABLE_META: Meta = Object.freeze({ mode: 0o700, uid: 0, gid: 0, atimeMs: 0, mtimeMs: 0, ctimeMs: 0, birthtimeMs: 0, ino: 0 })

const encoder = new TextEncoder()
const byteLength = (text: string) => encoder.encode(text).byteLength

export type { FileNode }

/**
 * A lower source's error as the call reports it: naming `path` (and `dest`), the caller's (Node
 * names the path it was given: relative, with its slashes), with `syscall` (default: the
 * source's), where the source named its own (the workspace's absolute path, the host's for a
 * sync-fs source, or another after a rename); its detail kept. Told by its fields, not its class:
 * an adapter may carry another copy of FsError (one built from the package's dist). Anything else
 * (a code FsError does not know, an error with no syscall such as NotLoadedError) as it is.
 */
export function callersError(error: unknown, syscall: string | undefined, path: string, dest?: string): unknown {
  if (!(error instanceof Error)) return error
  const fields = error as Error & { code?: unknown; syscall?: unknown; path?: unknown; dest?: unknown }
  const { code, message } = fields
  if (typeof code !== 'string' || typeof fields.syscall !== 'string' || fields.dest !== undefined) return error
  syscall ??= fields.syscall
  if (error instanceof FsError && fields.syscall === syscall && fields.path === path && dest === undefined) return error
  const start = `${code}: `
  const end = typeof fields.path === 'string' ? `, ${fields.syscall} '${fields.path}'` : `, ${fields.syscall}`
  const detail = message.startsWith(start) && message.endsWith(end) ? message.slice(start.length, message.length - end.length) : undefined
  try {
    return new FsError(code as ErrnoCode, syscall, path, dest, detail)
  } catch {
    return error
  }
}
