/**
 * Every Node fs operation, written once, synchronously, on the overlay's primitives. The callback
 * and promise forms are generated from these (surface.ts). Argument handling and errors follow
 * Node on Linux exactly; a real directory is the oracle in the differential tests.
 */
import { type Encoding, concatBytes, decode, isEncoding, toCallerBytes } from '../bytes.js'
import { FsError, rangeError, systemError, typeError } from '../errors.js'
import { HostBuffer } from '../host.js'
import { type Entry, type Overlay, type StatFields, callersError, pathTooLong } from '../overlay.js'
import { type WalkerEntry, isNotLoaded } from '../lower/source.js'
import { isListed } from '../lower/listing.js'
import { absolute, basename, components, dirname, isWithin, join, joinLexically, normalize } from '../path.js'
import {
  accessModeArgument,
  codedTypeError,
  constants,
  dataArgument,
  decodeRead,
  describeReceived,
  encodingOption,
  fileOffset,
  flagsArgument,
  incompatibleOptions,
  modeArgument,
  pathArgument,
  timeArgument,
  unknownEncoding,
  validateBoolean,
  validateFunction,
  validateInteger,
  validateObject,
} from './arguments.js'
import { type Meta, dirNode } from '../layer/nodes.js'
import { FIRST_UPPER_INO } from '../layer/inodes.js'
import { ChangeFeed, type NotificationKind } from '../engine/change-feed.js'
import type { Journal, OperationType } from '../engine/journal.js'
import { type OpenFile, type Orphan, DescriptorTable } from './descriptors.js'
import { Dir, Dirent, StatFs, createStats } from './stats.js'

const { O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW } = constants
const ACCMODE = 3

export type PathLike = string | Uint8Array | URL
export type FileArgument = PathLike | number
type Options = Record<string, unknown>

export interface CpOptions {
  recursive?: boolean
  force?: boolean
  errorOnExist?: boolean
  dereference?: boolean
  preserveTimestamps?: boolean
  verbatimSymlinks?: boolean
  /**
   * May return a promise in the callback and promise forms (they await it); cpSync refuses one.
   * Strings, but at the top a path the caller gave as a Buffer, as Node gives it.
   */
  filter?: (source: string | Uint8Array, destination: string | Uint8Array) => boolean | Promise<boolean>
}

/** Calls that create a path: which argument names it, and the syscall Node reports. */
const CREATES: Partial<Record<string, readonly [index: number, syscall: string]>> = {
  appendFile: [0, 'open'],
  copyFile: [1, 'copyfile'],
  cp: [1, 'cp'],
  link: [1, 'link'],
  mkdir: [0, 'mkdir'],
  mkdtemp: [0, 'mkdtemp'],
  open: [0, 'open'],
  rename: [1, 'rename'],
  symlink: [1, 'symlink'],
  writeFile: [0, 'open'],
}

/** Calls that can take a file's last name: an inode open in a descriptor then lives on in it. */
const TAKES_NAMES: ReadonlySet<string> = new Set(['unlink', 'rm', 'rmdir', 'rename', 'cp', 'copyFile'])

/** Whether open's flags may create the file (w, a, x forms, or O_CREAT). */
function createsFile(flags: unknown): boolean {
  if (typeof flags === 'number') return (flags & 0o100) !== 0
  return typeof flags === 'string' && /[wax]/.test(flags)
}

/** A directory opendir opened: the path that names it now, and its inode. */
interface OpenedDir {
  path: string
  readonly ino: number
}

export class FsOperations {
  readonly descriptors = new DescriptorTable()
  /**
   * Directories opendir opened and has not listed yet (it lists on the first read), by the path
   * that names them now: a rename moves it along, as a descriptor follows its inode. Weak: a Dir
   * dropped unread is forgotten.
   */
  private readonly unreadDirs = new Set<WeakRef<OpenedDir>>()
  /** FileHandles not closed yet: the workspace's close closes them as their owners would. */
  readonly handles = new Set<{ close(): Promise<void> }>()
  /**
   * Descriptors the workspace's close closed under their owners: closing one again later (a
   * stream's autoClose, a handle's close) finds the work done, not EBADF thrown from a callback.
   */
  private readonly closedUnder = new Set<number>()
  cwd = '/'
  umask = 0o022
  /** The largest file a write may make (EFBIG above it, nothing written): Node's own I/O limit by default. */
  maxFileSize = MAX_FILE_SIZE

  /** Every change to this overlay's view, for fs.watch and ws.events (paths collected only while watched). */
  readonly changes: ChangeFeed

  constructor(readonly overlay: Overlay) {
    this.changes = new ChangeFeed(overlay)
  }

  /**
   * Access times set by reads, by inode. Kept beside the tree: a read is never an operation, a
   * copy-up of a lower file or a change in a diff, and access times are not part of checkpoints.
   */
  private readonly accessTimes = new Map<number, number>()

  private currentJournal: Journal | undefined
  /** Records mutating calls as operations (the rollback engine); absent, nothing is recorded. */
  get journal(): Journal | undefined {
    return this.currentJournal
  }
  set journal(journal: Journal | undefined) {
    this.currentJournal = journal
    // The journal closes each operation's batch of changes.
    if (journal) journal.feed = this.changes
  }
  /** Set by the engine's safe stop: every mutating call then fails with EROFS naming the reason. */
  frozenReason: string | undefined
  /** Called before each mutating call starts (automatic checkpoints by risk). */
  beforeOperation: ((type: OperationType, paths: readonly string[]) => void) | undefined

  /** Settles descriptors' pending writes so every other call sees them. */
  settle(keep?: OpenFile): void {
    // Indexed: asked several times per call, nearly always of an empty list (no iterator made).
    const pending = this.descriptors.pending(keep)
    for (let i = 0; i < pending.length; i++) this.flushDescriptor(pending[i])
  }

  /**
   * Settles, before a mutating call starts, what descriptors wrote that it may see or change (its
   * paths: settleFor), so those writes are operations of their own, never this call's. A call
   * whose paths are not plain strings (Buffer, URL) settles everything. While watched, everything
   * but a large file's writes not due yet (markDirty) is settled first: watchers hear the changes in
   * the order they were made, as inotify tells them.
   */
  private settleForCall(name: string, args: readonly unknown[], fd: OpenFile | undefined): void {
    const pending = this.descriptors.pending(fd)
    if (pending.length === 0) return
    const paths = this.operationPaths(name, args, fd)
    if (paths.length === 0 || (fd === undefined && typeof args[0] !== 'string')) return this.settle(fd)
    this.settleFor(paths, fd, this.changes.active ? dueForWatchers : undefined)
  }

  /**
   * Settles what descriptors (but `keep`) wrote that a call on `paths` (absolute, normalised) may
   * see or change (and those `also` picks): a descriptor whose file is at, under or above one of them, lexically or once
   * resolved (a symlink on the way, another name of the same inode). A program that writes a log
   * through a descriptor while it stats or reads other files settled the log at each of those
   * calls, a new version of the whole file each time (8000 lines: 4.5 s).
   */
  private settleFor(paths: readonly string[], keep?: OpenFile, also?: (open: OpenFile) => boolean): void {
    const pending = this.descriptors.pending(keep)
    for (let i = 0; i < pending.length; i++) if (also?.(pending[i]) || paths.some((path) => this.concerns(path, pending[i]))) this.flushDescriptor(pending[i])
  }

  private concerns(path: string, open: OpenFile): boolean {
    if (path === '') return false
    if (isWithin(path, open.path) || isWithin(open.path, path)) return true
    let entry: Entry | undefined
    try {
      entry = this.overlay.lookingOnly(() => this.overlay.peek(path, true))
    } catch {
      return true
    }
    if (entry === undefined) return false
    return isWithin(entry.path, open.path) || isWithin(open.path, entry.path) || this.overlay.meta(entry).ino === open.ino
  }

  /**
   * Settles what other descriptors wrote to `open`'s file, which a read or write through `open`
   * must see; writes to other files stay pending. Settling is a new version of the whole file (its
   * hash, its working copy made again at the next write): a copy reading one file and writing
   * another through descriptors, a chunk at a time (a stream's pipe), settled the file it wrote at
   * every read, so a copy of n bytes cost n²/chunk.
   */
  private settleOn(open: OpenFile): void {
    const pending = this.descriptors.pendingOn(open)
    for (let i = 0; i < pending.length; i++) this.flushDescriptor(pending[i])
  }

  /**
   * Runs a mutating call as one journaled operation. Pending descriptor writes are settled first,
   * as operations of their own, so they are never attributed to this call.
   */
  journaled<T>(type: OperationType, name: string, args: unknown[], body: (...args: unknown[]) => T): T {
    if (this.frozenReason !== undefined) {
      const target = typeof args[0] === 'string' ? args[0] : undefined
      throw new FsError('EROFS', name, target, undefined, `read-only file system: the workspace is frozen (${this.frozenReason})`)
    }
    if (this.overlay.lower.reserved) this.refuseReserved(name, args)
    const journal = this.journal
    const fd = typeof args[0] === 'number' ? this.descriptors.find(args[0]) : undefined
    this.settleForCall(name, args, fd)
    // A call that can take a file's last name leaves that inode to the descriptors open on it.
    if (this.descriptors.size > 0 && TAKES_NAMES.has(name)) return this.keepingOpenInodes(() => this.record(journal, type, name, args, fd, body))
    return this.record(journal, type, name, args, fd, body)
  }

  /** The call itself, as one operation of the journal (when there is one). */
  private record<T>(journal: Journal | undefined, type: OperationType, name: string, args: unknown[], fd: OpenFile | undefined, body: (...args: unknown[]) => T): T {
    if (!journal) return body.apply(this, args)
    const paths = this.operationPaths(name, args, fd)
    if (!journal.running) this.beforeOperation?.(type, paths)
    return journal.runCall({ type, paths }, body, this, args)
  }

  /**
   * Runs a call that can take names: a descriptor whose file has no name left after it keeps its
   * inode (the contents as they were, its metadata), as Linux keeps an open inode with no links.
   * What it writes then goes nowhere else; its fstat shows no links.
   */
  private keepingOpenInodes<T>(call: () => T): T {
    const open = this.openInodes()
    try {
      return call()
    } finally {
      this.keepUnnamed(open)
    }
  }

  /**
   * The files and directories open in descriptors now, as entries (each still its descriptor's
   * inode). Directories too: one removed under its descriptor was fstat's ENOENT (naming a path,
   * which fstat never does), where Linux keeps the inode with no links.
   */
  private openInodes(): [OpenFile, Entry][] {
    const out: [OpenFile, Entry][] = []
    for (const open of this.descriptors.all()) {
      if (open.orphan) continue
      const entry = this.inodeEntry(open)
      if (entry?.type === (open.directory ? 'dir' : 'file')) out.push([open, entry!])
    }
    return out
  }

  /** Descriptors of `open` whose file has no name left keep its inode. */
  private keepUnnamed(open: [OpenFile, Entry][]): void {
    for (const [file, entry] of open) {
      if (this.inodeEntry(file) !== undefined) continue
      if (file.directory) {
        // Nothing is read or written through it: its metadata is all it keeps (no links, as rmdir(2) leaves it).
        file.orphan = { entry, meta: { ...this.overlay.meta(entry), ctimeMs: this.overlay.now() } }
        continue
      }
      const bytes = this.overlay.readBytes(entry)
      file.buffer = workingMemory(Math.max(bytes.byteLength, 64))
      file.buffer.set(bytes)
      file.length = bytes.byteLength
      file.lastRead = undefined
      // Its last link went: the inode changed (ctime), as unlink(2) sets it.
      file.orphan = { entry, meta: { ...this.overlay.meta(entry), ctimeMs: this.overlay.now() } }
    }
  }

  /** The entry that is a descriptor's inode (by its path, or another of its names), if it still has a name. */
  private inodeEntry(open: OpenFile): Entry | undefined {
    const entry = this.overlay.lookup(open.path, false)
    if (entry !== undefined && this.overlay.meta(entry).ino === open.ino) return entry
    return this.overlay.nameOfInode(open.ino)
  }

  /** The paths an operation names, for its record (an array of their exact number: records keep it). */
  private operationPaths(name: string, args: readonly unknown[], fd: OpenFile | undefined): string[] {
    // A path with a NUL byte is left to the call, whose error names the argument as Node's does.
    const usable = (value: unknown): value is string => typeof value === 'string' && !value.includes('\0')
    const first = name === 'symlink' ? args[1] : args[0]
    const a = usable(first) ? normalize(absolute(first, this.cwd)) : undefined
    const b = (name === 'rename' || name === 'copyFile' || name === 'cp' || name === 'link') && usable(args[1]) ? normalize(absolute(args[1], this.cwd)) : undefined
    const named = a === undefined ? (b === undefined ? [] : [b]) : b === undefined ? [a] : [a, b]
    return fd ? [fd.path, ...named] : named
  }

  /** A call that would create a path the lower source keeps to itself fails with EINVAL before it starts. */
  private refuseReserved(name: string, args: readonly unknown[]): void {
    const created = CREATES[name]
    if (created === undefined) return
    const [index, syscall] = created
    if (name === 'open' && !createsFile(args[1])) return
    let given: string
    try {
      given = pathArgument(args[index], 'path', syscall) + (name === 'mkdtemp' ? 'XXXXXX' : '')
    } catch {
      return // the call itself reports a bad argument
    }
    this.overlay.refuseReserved(normalize(absolute(given, this.cwd)), syscall, given)
  }

  /**
   * The caller's path as given (for errors) and as an absolute path; '' stays '' (the kernel's
   * ENOENT). `syscall`: what a path refused as such (bytes that are not UTF-8) is reported as.
   */
  private path(value: unknown, syscall: string, name = 'path'): { given: string; path: string } {
    const given = pathArgument(value, name, syscall)
    const path = given === '' ? '' : absolute(given, this.cwd)
    if (this.descriptors.pending().length > 0) this.settleFor([normalize(path)])
    return { given, path }
  }

  // ---- reading -----------------------------------------------------------------------------------

  /**
   * A read of `entry` (file content, a listing, a link): Linux's default relatime updates the access
   * time when it is not later than the modification or change time, or is a day old.
   */
  private accessed(entry: Entry): void {
    // What a read hands the caller is what the agent was shown (a flush's conflict base).
    this.overlay.markShown(entry)
    if (this.frozenReason !== undefined) return // a read-only file system keeps its access times
    const meta = this.overlay.meta(entry)
    const atime = this.accessTimes.get(meta.ino) ?? meta.atimeMs
    if (atime > meta.mtimeMs && atime > meta.ctimeMs) {
      const now = this.overlay.now()
      if (now - atime >= DAY_MS) this.accessTimes.set(meta.ino, now)
      return
    }
    this.accessTimes.set(meta.ino, Math.max(atime, this.overlay.now()))
  }

  /** stat(2) of an entry: the tree's fields with the access time reads have set. */
  private statFields(entry: Entry): StatFields {
    const fields = this.overlay.stat(entry)
    const atime = this.accessTimes.get(fields.ino)
    if (atime !== undefined) fields.atimeMs = atime
    return fields
  }

  /** Times set explicitly (utimes) replace any access time reads set. */
  private setTimes(entry: Entry, change: { atimeMs: number; mtimeMs: number; ctimeMs: number }): void {
    this.accessTimes.delete(this.overlay.meta(entry).ino)
    this.changeMeta(entry, change)
  }

  /** chmod, chown, utimes: the kernel reports an attribute change even when nothing differs. */
  private changeMeta(entry: Entry, change: Partial<Meta>): void {
    const mark = this.changes.mark()
    this.overlay.setMeta(entry, change)
    this.changes.override(mark, entry.path, ['attrib'])
  }

  readFile(file: unknown, options?: unknown): Uint8Array | string {
    const encoding = encodingOption(options, null)
    const flag = typeof options === 'object' && options !== null ? (options as Options).flag : undefined
    let bytes: Uint8Array
    if (isDescriptor(file)) {
      const open = this.descriptors.get(validateFd(file), 'read')
      this.settleOn(open)
      if (!open.readable) throw new FsError('EBADF', 'read')
      const all = this.descriptorBytes(open, true)
      bytes = all.slice(Math.min(open.position, all.byteLength))
      open.position += bytes.byteLength
      return encoding ? decodeRead(bytes, encoding) : toCallerBytes(bytes)
    }
    const { given, path } = this.path(file, 'open')
    const flags = flagsArgument(flag, 'r')
    const entry = flags === constants.O_RDONLY ? this.overlay.resolve(path, 'open', true, given) : this.openEntry(path, given, flags, 0o666)
    if (entry.type === 'dir') throw new FsError('EISDIR', 'read')
    // Node opens with the flag, then reads: a write-only open ('w', 'a') fails there.
    if ((flags & ACCMODE) === O_WRONLY) throw new FsError('EBADF', 'read')
    try {
      bytes = this.overlay.readBytes(entry)
    } catch (error) {
      // A file on disk this process may not read (EACCES), named as Node names it.
      throw callersError(error, undefined, given)
    }
    this.accessed(entry)
    return encoding ? decodeRead(bytes, encoding) : toCallerBytes(bytes)
  }

  /**
   * readdir as Node does it. Recursive listings walk as Node's own JS does: the sync and callback
   * forms breadth first (a queue), the promise form from a stack (`stack`), so entries come in the
   * same order. Names mode descends into whatever stat()s as a directory (links too); withFileTypes
   * only into real directories. Dirents carry the parent path as Node builds it: the caller's path
   * at the top, path.join of it below.
   */
  readdir(dirPath: unknown, options?: unknown, stack = false): (string | Uint8Array | Dirent<string | Uint8Array>)[] {
    const { given, path } = this.path(dirPath, 'scandir')
    const encoding = encodingOption(options, 'utf8')
    const opts = objectOptions(options)
    if (opts.recursive !== undefined && opts.recursive !== null) validateBoolean(opts.recursive, 'options.recursive')
    const root = this.overlay.resolve(path, 'scandir', true, given)
    if (root.type !== 'dir') throw new FsError('ENOTDIR', 'scandir', given)
    this.accessed(root)
    // Any true value, as Node tests it.
    const withTypes = Boolean(opts.withFileTypes)
    const results: (string | Uint8Array | Dirent<string | Uint8Array>)[] = []
    // A directory to list: its entry, its path relative to the top, the parent path Dirents show,
    // and its lexical absolute path (Node descends by joining names, so 'link/..' is not physical).
    // `above`: the directories it was reached through, so a link back into them is not entered (Node
    // enters it until the path holds 40 links: 40 copies of the tree for one such link, 2^40 for
    // two); the same directory reached by two ways is listed twice, as Node does.
    // `direct`: `dir` is what `lexical` resolves to, so a directory in it is looked up there (one
    // lookup), not resolved from the root again (every ancestor again: quadratic in the depth).
    // `linked`: a symlink may have been entered on the way; without one, every directory's path is
    // longer than those above it, so none can be one of them.
    type Above = { path: string; above: Above | undefined }
    type Pending = { dir: Entry; relative: string; parentPath: string; lexical: string; above: Above; direct: boolean; linked: boolean }
    const lexicalTop = normalize(path)
    const pending: Pending[] = [{ dir: root, relative: '', parentPath: given, lexical: lexicalTop, above: { path: root.path, above: undefined }, direct: lexicalTop === path, linked: false }]
    const inside = (target: string, chain: Above | undefined): boolean => chain !== undefined && (chain.path === target || inside(target, chain.above))
    while (pending.length > 0) {
      const { dir, relative, parentPath, lexical, above, direct, linked } = stack ? pending.pop()! : pending.shift()!
      if (dir !== root) this.overlay.markShown(dir)
      let listed: WalkerEntry[]
      try {
        // Types as the listing gives them: no lookup per entry (a lower directory's d_type).
        listed = this.overlay.listing(dir)
      } catch (error) {
        // One on disk this process may not list (EACCES), named as Node names it.
        throw callersError(error, 'scandir', parentPath)
      }
      for (const { name, type } of listed) {
        const childRelative = relative ? relative + '/' + name : name
        if (withTypes) results.push(new Dirent(encodedName(name, encoding), type, parentPath))
        else results.push(encodedName(childRelative, encoding))
        if (opts.recursive !== true || (withTypes ? type !== 'dir' : direct && type === 'file')) continue
        const childLexical = join(lexical, name)
        const childParentPath = joinLexically(parentPath, name)
        const found = direct && type === 'dir' ? this.overlay.child(dir, name) : undefined
        let target: Entry | undefined
        if (found?.type === 'dir') target = found
        else if (withTypes) {
          target = this.overlay.resolve(childLexical, 'scandir', true, childParentPath)
          if (target.type !== 'dir') throw new FsError('ENOTDIR', 'scandir', childParentPath)
        } else target = this.tryResolveDir(childLexical)
        const viaLink = linked || type === 'symlink' || !direct
        if (!target || (viaLink && inside(target.path, above))) continue
        pending.push({ dir: target, relative: childRelative, parentPath: childParentPath, lexical: childLexical, above: { path: target.path, above }, direct: true, linked: viaLink })
      }
    }
    return results
  }

  opendir(dirPath: unknown, options?: unknown): Dir {
    const { given, path } = this.path(dirPath, 'opendir')
    const encoding = encodingOption(options, 'utf8')
    const opts = objectOptions(options)
    const entry = this.overlay.resolve(path, 'opendir', true, given)
    if (entry.type !== 'dir') throw new FsError('ENOTDIR', 'opendir', given)
    try {
      // opendir(2) fails on one on disk this process may not list (EACCES), named as Node names it.
      this.overlay.checkListable(entry)
    } catch (error) {
      throw callersError(error, 'opendir', given)
    }
    // Node's Dir checks its buffer size after the directory is opened.
    if (opts.bufferSize !== undefined) validateInteger(opts.bufferSize, 'options.bufferSize', 1, 4294967295)
    const opened: OpenedDir = { path: entry.path, ino: this.overlay.meta(entry).ino }
    const unread = new WeakRef(opened)
    this.unreadDirs.add(unread)
    // The directory it opened, wherever it is now: one renamed is listed where it went; one removed
    // (or replaced by another at its path) lists nothing, as the handle Node reads holds the inode.
    // It listed whatever the path named on the first read: ENOENT after a rename or rm, another directory's names after a replace.
    const top = (): Dirent<string | Uint8Array>[] => {
      this.unreadDirs.delete(unread)
      const dir = this.tryResolveDir(opened.path)
      if (!dir || this.overlay.meta(dir).ino !== opened.ino) return []
      this.accessed(dir)
      return this.overlay.listing(dir).map(({ name, type }) => new Dirent(encodedName(name, encoding), type, given))
    }
    // Below the top (recursive) Node opens each directory by its joined path when it gets to it: opendir's errors.
    const below = (dir: string): Dirent<string | Uint8Array>[] => {
      try {
        return this.readdir(dir, { withFileTypes: true, encoding }) as Dirent<string | Uint8Array>[]
      } catch (error) {
        if (error instanceof FsError && error.syscall === 'scandir') throw new FsError(error.code, 'opendir', error.path)
        throw error
      }
    }
    return new Dir(given, top, below, Boolean(opts.recursive))
  }

  /** Unread opendir directories under `from` now named under `to`. */
  private dirsMoved(from: string, to: string): void {
    for (const unread of this.unreadDirs) {
      const opened = unread.deref()
      if (!opened) this.unreadDirs.delete(unread)
      else if (opened.path === from) opened.path = to
      else if (opened.path.startsWith(from + '/')) opened.path = to + opened.path.slice(from.length)
    }
  }

  /** `synchronous`: statSync, whose throwIfNoEntry: false gives undefined (Node's callback and promise stat fail with ENOENT). */
  stat(file: unknown, options?: unknown, synchronous = true) {
    return this.statWith(file, options, true, 'stat', synchronous)
  }

  lstat(file: unknown, options?: unknown, synchronous = true) {
    return this.statWith(file, options, false, 'lstat', synchronous)
  }

  private statWith(file: unknown, options: unknown, follow: boolean, syscall: string, synchronous: boolean) {
    const { given, path } = this.path(file, syscall)
    const opts = objectOptions(options)
    try {
      const entry = this.overlay.resolve(path, syscall, follow, given)
      return createStats(this.statFields(entry), opts.bigint === true)
    } catch (error) {
      if (synchronous && opts.throwIfNoEntry === false && error instanceof FsError && error.code === 'ENOENT') return undefined
      throw error
    }
  }

  exists(file: unknown): boolean {
    try {
      const { given, path } = this.path(file, 'access')
      // access(2) refuses a path over PATH_MAX as given; a lookup checks no length.
      return !pathTooLong(given) && this.overlay.lookup(path, true) !== undefined
    } catch {
      return false // invalid arguments: Node's existsSync returns false rather than throwing
    }
  }

  access(file: unknown, mode?: unknown): void {
    const { given, path } = this.path(file, 'access')
    const bits = accessModeArgument(mode, constants.F_OK)
    const entry = this.overlay.resolve(path, 'access', true, given)
    // Root may read and write anything, but may execute only what has an execute bit.
    if (bits & constants.X_OK && entry.type !== 'dir' && (this.overlay.meta(entry).mode & 0o111) === 0) {
      throw new FsError('EACCES', 'access', given)
    }
    // What is on disk is read with this process's permissions: R_OK is refused where the read would be.
    if (bits & constants.R_OK) this.named('access', given, undefined, () => (entry.type === 'dir' ? this.overlay.checkListable(entry) : this.overlay.checkReadable(entry)))
  }

  readlink(file: unknown, options?: unknown): string | Uint8Array {
    const { given, path } = this.path(file, 'readlink')
    const encoding = encodingOption(options, 'utf8')
    const entry = this.overlay.resolve(path, 'readlink', false, given)
    if (entry.type !== 'symlink') throw new FsError('EINVAL', 'readlink', given)
    const target = this.named('readlink', given, undefined, () => this.overlay.readLink(entry))
    this.accessed(entry)
    return encodedName(target, encoding)
  }

  /**
   * realpath: `syscall` 'realpath' is the native one (realpath(3): the kernel's resolution, errors
   * name the path as given); 'lstat' is Node's JS realpath, reproduced step for step.
   */
  realpath(file: unknown, options?: unknown, syscall = 'lstat'): string | Uint8Array {
    const { given, path } = this.path(file, syscall)
    const encoding = encodingOption(options, 'utf8')
    const resolved = syscall === 'lstat' ? this.realpathLexical(given) : this.overlay.resolve(path, syscall, true, given).path
    return encodedName(resolved, encoding)
  }

  /**
   * Node's JS realpathSync: resolve the path lexically (path.resolve), then lstat each prefix; a
   * link is stat()ed, read, and the rest of the path is resolved lexically against its target.
   * Errors name the prefix being looked at ('lstat', or 'stat' for a link that leads nowhere).
   */
  private realpathLexical(given: string): string {
    let path = normalize(absolute(given, this.cwd))
    let done = '/'
    let rest = components(path)
    while (rest.length > 0) {
      const base = join(done, rest[0])
      const entry = this.overlay.resolve(base, 'lstat', false, base)
      if (entry.type !== 'symlink') {
        done = base
        rest = rest.slice(1)
        continue
      }
      this.overlay.resolve(base, 'stat', true, base)
      const link = this.overlay.readLink(entry)
      path = normalize((link.startsWith('/') ? link : join(done, link)) + '/' + rest.slice(1).join('/'))
      done = '/'
      rest = components(path)
    }
    return done
  }

  /**
   * statfs(2) of the workspace: one in-memory file system, so every path reports the same. Sizes are
   * nominal (4 KiB blocks; 'used' is the content the blob store holds): memory is the real limit.
   */
  statfs(file: unknown, options?: unknown): StatFs {
    const { given, path } = this.path(file, 'statfs')
    const opts = objectOptions(options)
    this.overlay.resolve(path, 'statfs', true, given)
    const used = Math.ceil(this.overlay.blobs.bytes / STATFS_BLOCK)
    // Inode numbers given so far (a store from before FIRST_UPPER_INO gave them from 1).
    const next = this.overlay.inodes.next
    const files = next >= FIRST_UPPER_INO ? next - FIRST_UPPER_INO : next
    return new StatFs(
      [STATFS_TYPE, STATFS_BLOCK, STATFS_BLOCKS, STATFS_BLOCKS - used, STATFS_BLOCKS - used, STATFS_FILES, STATFS_FILES - files],
      opts.bigint === true,
    )
  }

  /**
   * fs.openAsBlob: the file's content now, as a Blob (Node 20 throws synchronously when it cannot
   * stat it). One it may not read now (a lower file of mode 000, a directory) is still a Blob of its
   * size, as Node's is: Node reads the file only when the Blob is read, which fails then
   * (NotReadableError), or reads it if it may by then. `later` makes that Blob (./async-forms.ts),
   * given the read to try: the file as it was at the call (changed since, Node's read fails too).
   */
  openAsBlob(file: unknown, options: unknown, later: (size: number, type: string, read: () => Uint8Array) => Promise<Blob>): Promise<Blob> {
    const opts = options === undefined ? {} : options
    if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be of type object.${describeReceived(opts)}`)
    }
    const type = (opts as Options).type || ''
    if (typeof type !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', `The "options.type" property must be of type string.${describeReceived(type)}`)
    const { given, path } = this.path(file, 'open')
    let entry: Entry | undefined
    try {
      entry = pathTooLong(given) ? undefined : this.overlay.lookup(path, true)
    } catch (error) {
      // A lookup the source refused (EACCES under a directory it may not search): Node's stat fails so too.
      if (isNotLoaded(error)) throw error
      entry = undefined
    }
    if (!entry) throw typeError('ERR_INVALID_ARG_VALUE', 'Unable to open file as blob')
    // Node's Blob reads the file when it is read; this one reads it now where it may.
    const opened = this.statFields(entry)
    const read = (found: Entry): Uint8Array => {
      if (found.type === 'dir') throw new FsError('EISDIR', 'read')
      const bytes = this.named('open', given, undefined, () => this.overlay.readBytes(found))
      this.accessed(found)
      return bytes
    }
    try {
      const blob = new Blob([read(entry) as Uint8Array<ArrayBuffer>], { type })
      // Node keeps the type as given; the Blob constructor lowercases it, or drops one with a character outside U+0020–U+007E.
      if (blob.type !== type) Object.defineProperty(blob, 'type', { value: type })
      return Promise.resolve(blob)
    } catch (error) {
      if (!(error instanceof FsError) || isNotLoaded(error)) throw error
    }
    return later(opened.size, type, () => {
      const now = this.overlay.lookup(path, true)
      if (!now) throw new FsError('ENOENT', 'open', given)
      const fields = this.statFields(now)
      if (fields.ino !== opened.ino || fields.size !== opened.size || fields.mtimeMs !== opened.mtimeMs) throw new FsError('EIO', 'read', given, undefined, 'i/o error: the file changed since openAsBlob')
      return read(now)
    })
  }

  // ---- writing -----------------------------------------------------------------------------------

  writeFile(file: unknown, data: unknown, options?: unknown, defaultFlag = 'w'): void {
    const opts = typeof options === 'string' ? { encoding: options } : ((options ?? {}) as Options)
    if (opts.flush !== undefined && opts.flush !== null) validateBoolean(opts.flush, 'options.flush')
    const encoding = encodingOption(options, 'utf8')
    // Node encodes string data with Buffer.from(data, encoding), which knows no 'buffer'.
    if (encoding === 'buffer' && typeof data === 'string') throw unknownEncoding(encoding)
    const bytes = dataArgument(data, encoding === 'buffer' ? null : encoding, 'data')
    if (isDescriptor(file)) {
      const open = this.descriptors.get(file, 'write')
      this.writeDescriptor(open, bytes, 0, bytes.byteLength, null)
      return
    }
    const { given, path } = this.path(file, 'open')
    const flags = flagsArgument(opts.flag, defaultFlag)
    const mode = modeArgument(opts.mode, 'mode', 0o666)
    this.checkSize(bytes.byteLength, 'write', given)
    let created = false
    // Truncation is folded into the one content change below: one blob, one journal slot.
    const entry = this.openEntry(path, given, flags & ~O_TRUNC, mode, () => {
      created = true
      return bytes
    })
    if (created) return
    // Node opens with the flag, then writes: a read-only open ('r', 'rs') fails there, when there is anything to write.
    if ((flags & ACCMODE) === constants.O_RDONLY) {
      if (bytes.byteLength > 0) throw new FsError('EBADF', 'write')
      return
    }
    if (entry.type === 'dir') throw new FsError('EISDIR', 'open', given)
    // Writing nothing without truncating changes nothing: not the content, the times or a watcher.
    if (bytes.byteLength === 0 && (flags & O_TRUNC) === 0) return
    const append = (flags & O_APPEND) !== 0
    const current = append || (flags & O_TRUNC) === 0 ? this.named('open', given, undefined, () => this.overlay.readBytes(entry)) : new Uint8Array(0)
    this.checkSize(append ? current.byteLength + bytes.byteLength : Math.max(current.byteLength, bytes.byteLength), 'write', given)
    // The caller's bytes are copied only if the store does not hold that content already.
    if (append) this.overlay.appendContent(entry, current, bytes)
    else if (current.byteLength > bytes.byteLength) this.overlay.setContent(entry, concatBytes([bytes, current.subarray(bytes.byteLength)]))
    else this.overlay.setContent(entry, bytes, false)
  }

  appendFile(file: unknown, data: unknown, options?: unknown): void {
    this.writeFile(file, data, options, 'a')
  }

  mkdir(dirPath: unknown, options?: unknown): string | undefined {
    const { given, path } = this.path(dirPath, 'mkdir')
    const opts = objectOptions(options)
    if (opts.recursive !== undefined) validateBoolean(opts.recursive, 'options.recursive')
    const mode = modeArgument(typeof options === 'number' || typeof options === 'string' ? options : opts.mode, 'mode', 0o777)
    if (opts.recursive) return this.mkdirRecursive(given, given, mode)
    const { parent, name, existing } = this.overlay.resolveParent(path, 'mkdir', given)
    if (!parent || existing || name === '.' || name === '..') throw new FsError('EEXIST', 'mkdir', given)
    this.overlay.put(parent, name, this.newDir(mode, parent))
    return undefined
  }

  /** mkdir(2)'s mode: the umask applied, set-id bits dropped, set-group-id inherited from the parent. */
  private newDir(mode: number, parent: Entry) {
    const inherited = this.overlay.meta(parent).mode & 0o2000
    return dirNode(this.overlay.newMeta((mode & ~this.umask & 0o1777) | inherited), null, null)
  }

  /**
   * Node's mkdirp (its C++ MKDirpSync), step for step, on the path as given: mkdir it; on ENOENT
   * push it back and make its parent (the string up to the last '/') first; on EEXIST accept only a
   * directory (stat follows links, so a dangling one is ENOENT; a non-directory is ENOTDIR while a
   * longer path waits on the stack, EEXIST at the end). Returns the first directory it
   * made, as the caller named it ('./a/b' stays relative, 'w//v' makes 'w/').
   */
  private mkdirRecursive(target: string, given: string, mode: number): string | undefined {
    const stack = [target]
    let first: string | undefined
    while (stack.length > 0) {
      const next = stack.pop()!
      const path = next === '' ? '' : absolute(next, this.cwd)
      try {
        this.mkdirOne(path, given, mode)
        first ??= next
        continue
      } catch (error) {
        if (!(error instanceof FsError)) throw error
        if (error.code === 'ENOENT') {
          const parent = next.slice(0, Math.max(0, next.lastIndexOf('/')))
          if (next.includes('/') && parent !== next) {
            stack.push(next, parent)
            continue
          }
        }
        if (error.code !== 'EEXIST') throw new FsError(error.code, 'mkdir', given)
      }
      let entry: Entry
      try {
        entry = this.overlay.resolve(path, 'mkdir', true, given)
      } catch (statError) {
        throw statError instanceof FsError ? new FsError(statError.code, 'mkdir', given) : statError
      }
      // Something not a directory where a parent of the path should be: ENOTDIR, as MKDirpSync says it.
      if (entry.type !== 'dir') throw new FsError(stack.length > 0 ? 'ENOTDIR' : 'EEXIST', 'mkdir', given)
    }
    return first
  }

  /** mkdir(2) of one directory, with the kernel's errors. */
  private mkdirOne(path: string, given: string, mode: number): void {
    const { parent, name, existing } = this.overlay.resolveParent(path, 'mkdir', given)
    if (!parent || existing || name === '.' || name === '..') throw new FsError('EEXIST', 'mkdir', given)
    this.overlay.put(parent, name, this.newDir(mode, parent))
  }


  mkdtemp(prefix: unknown, options?: unknown): string | Uint8Array {
    const given = pathArgument(prefix, 'prefix', 'mkdtemp')
    const encoding = encodingOption(options, 'utf8')
    // Node 20 refuses an empty prefix so, its template one 'X' short.
    if (given === '') throw new FsError('EINVAL', 'mkdtemp', 'XXXXX')
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
    for (;;) {
      let suffix = ''
      for (let i = 0; i < 6; i++) suffix += alphabet[Math.floor(Math.random() * alphabet.length)]
      try {
        this.mkdir(given + suffix, { mode: 0o700 })
        return encodedName(given + suffix, encoding)
      } catch (error) {
        if (!(error instanceof FsError && error.code === 'EEXIST')) {
          throw new FsError(error instanceof FsError ? error.code : 'EIO', 'mkdtemp', given + 'XXXXXX')
        }
      }
    }
  }

  rmdir(dirPath: unknown, options?: unknown): void {
    // Node's validateRmdirOptions: rm's checks but for `force`, which rmdir does not take.
    const opts = rmOptions(typeof options === 'object' && options !== null ? { ...options, force: false } : options)
    if (opts.recursive) return this.rm(dirPath, { recursive: true })
    const { given, path } = this.path(dirPath, 'rmdir')
    const { parent, name, existing } = this.overlay.resolveParent(path, 'rmdir', given)
    if (!parent) throw new FsError('EBUSY', 'rmdir', given)
    if (name === '.') throw new FsError('EINVAL', 'rmdir', given)
    if (name === '..') throw new FsError('ENOTEMPTY', 'rmdir', given)
    if (!existing) throw new FsError('ENOENT', 'rmdir', given)
    if (existing.type !== 'dir') throw new FsError('ENOTDIR', 'rmdir', given)
    if (!this.overlay.isEmptyDir(existing)) throw new FsError('ENOTEMPTY', 'rmdir', given)
    this.overlay.remove(parent, name)
  }

  unlink(file: unknown): void {
    const { given, path } = this.path(file, 'unlink')
    const { parent, name, existing, trailingSlash } = this.overlay.resolveParent(path, 'unlink', given)
    if (!parent || name === '.' || name === '..') throw new FsError('EISDIR', 'unlink', given)
    if (!existing) throw new FsError('ENOENT', 'unlink', given)
    if (existing.type === 'dir') throw new FsError('EISDIR', 'unlink', given)
    if (trailingSlash) throw new FsError('ENOTDIR', 'unlink', given)
    this.overlay.remove(parent, name)
  }

  /**
   * `asynchronous`: the callback and promise forms, whose rimraf (Node's async one) differs from
   * rmSync's in two places, marked below.
   */
  rm(file: unknown, options?: unknown, asynchronous = false): void {
    const { given, path } = this.path(file, 'lstat')
    const opts = rmOptions(options)
    let entry: Entry
    try {
      entry = this.overlay.resolve(path, 'lstat', false, given)
    } catch (error) {
      if (opts.force && error instanceof FsError && error.code === 'ENOENT') return
      // With force, rmSync's rimraf skips the failed lstat and reports the unlink that follows (the async one reports the lstat).
      if (!asynchronous && opts.force && opts.recursive && error instanceof FsError && error.code === 'ENOTDIR') throw new FsError('ENOTDIR', 'unlink', given)
      throw error
    }
    if (entry.type === 'dir' && !opts.recursive) throw systemError('ERR_FS_EISDIR', 'Path is a directory', 'EISDIR', 'rm', given, 'is a directory')
    // 'link/' names the directory behind the link; rimraf's first rmdir('link/') fails at once:
    // rmSync reports it, the async rimraf takes ENOTDIR as done (nothing is removed).
    if (path.endsWith('/') && this.overlay.resolveParent(path, 'rmdir', given).existing?.type === 'symlink') {
      if (asynchronous) return
      throw new FsError('ENOTDIR', 'rmdir', given)
    }
    const last = components(path).pop()
    // rimraf's rmdir: 'x/.' is EINVAL at once; 'x/..' empties the directory it names, then the
    // final rmdir finds 'x' gone (ENOENT, ignored), so the directory itself stays.
    if (last === '..') {
      for (const child of this.overlay.names(entry)) this.overlay.remove(entry, child)
      return
    }
    if (last === '.' || entry.path === '/') throw new FsError(last === '.' ? 'EINVAL' : 'EBUSY', 'rmdir', given)
    // A directory below that this process may not list (mode 0311) fails rm -r as Linux's does
    // (it cannot unlink what it cannot list), nothing removed. (A filtered restore's rm -r of what
    // it replaces never gets here over one: its diff lists the tree first and fails the same way.)
    if (entry.type === 'dir') {
      const unlisted = this.overlay.unlistedBelow(entry)
      // Named as rimraf names it: the caller's path, with '/' and the names below appended.
      if (unlisted) throw callersError(unlisted.error, 'scandir', unlisted.below === '' ? given : given + '/' + unlisted.below)
    }
    if (entry.type === 'dir') this.journal?.classify('rmdir')
    const parent = this.overlay.resolve(dirname(entry.path), 'rm', true, given)
    this.overlay.remove(parent, basename(entry.path))
  }

  rename(oldPath: unknown, newPath: unknown): void {
    const from = this.path(oldPath, 'rename', 'oldPath')
    const to = this.path(newPath, 'rename', 'newPath')
    const source = this.overlay.resolveParent(from.path, 'rename', from.given, to.given)
    const target = this.overlay.resolveParent(to.path, 'rename', from.given, to.given, to.given)
    const fail = (code: 'ENOENT' | 'ENOTDIR' | 'EISDIR' | 'ENOTEMPTY' | 'EINVAL' | 'EBUSY') => new FsError(code, 'rename', from.given, to.given)
    if (!source.parent || !target.parent || isDots(source.name) || isDots(target.name)) throw fail('EBUSY')
    const moving = source.existing
    if (!moving) throw fail('ENOENT')
    if ((source.trailingSlash || target.trailingSlash) && moving.type !== 'dir') throw fail('ENOTDIR')
    // Ancestry before types, as renameat2 does with lock_rename's trap: the source may not be an
    // ancestor of the target's directory (EINVAL), the target not one of the source's (ENOTEMPTY).
    if (target.parent.path !== source.parent.path) {
      if (isWithin(target.parent.path, moving.path)) throw fail('EINVAL')
      if (isWithin(source.parent.path, join(target.parent.path, target.name))) throw fail('ENOTEMPTY')
    }
    const replaced = target.existing
    if (replaced) {
      // Two names of one inode: rename(2) does nothing and succeeds.
      if (replaced.path === moving.path || (moving.link !== undefined && replaced.link === moving.link)) return
      if (moving.type === 'dir') {
        if (replaced.type !== 'dir') throw fail('ENOTDIR')
        if (!this.overlay.isEmptyDir(replaced)) throw fail('ENOTEMPTY')
      } else if (replaced.type === 'dir') throw fail('EISDIR')
    }
    const mark = this.changes.mark()
    const ino = this.overlay.meta(moving).ino
    // The slot moves as it is: a hard-link name stays a name of its inode, a directory keeps its links.
    const node = this.named('rename', from.given, to.given, () => this.overlay.slotNode(moving))
    this.overlay.remove(source.parent, source.name, true)
    this.overlay.put(target.parent, target.name, node)
    const gone = replaced && { type: replaced.type, ino: this.overlay.meta(replaced).ino }
    const moved = join(target.parent.path, target.name)
    this.descriptors.moved(moving.path, moved)
    if (this.unreadDirs.size > 0) this.dirsMoved(moving.path, moved)
    this.changes.moved(mark, moving.path, moved, moving.type, ino, gone)
  }

  copyFile(src: unknown, dest: unknown, mode?: unknown): void {
    const from = this.path(src, 'copyfile', 'src')
    const to = this.path(dest, 'copyfile', 'dest')
    const flags = accessModeArgument(mode, 0)
    const source = this.overlay.resolve(from.path, 'copyfile', true, from.given, to.given)
    // libuv opens the source first: one on disk this process may not read fails before the destination is touched.
    this.named('copyfile', from.given, to.given, () => this.overlay.checkReadable(source))
    // The kernel opens the destination before it finds the source is a directory.
    const target = this.overlay.resolveParent(to.path, 'copyfile', from.given, to.given, to.given)
    // open(2) with O_CREAT refuses a trailing slash before anything else; O_EXCL does not follow
    // links, so '.', '..' and a dangling link all count as existing.
    if (isDots(target.name) || !target.parent) throw new FsError(flags & constants.COPYFILE_EXCL ? 'EEXIST' : 'EISDIR', 'copyfile', from.given, to.given)
    if (target.trailingSlash) throw new FsError('EISDIR', 'copyfile', from.given, to.given)
    if (target.existing && flags & constants.COPYFILE_EXCL) throw new FsError('EEXIST', 'copyfile', from.given, to.given)
    const mark = this.changes.mark()
    let existing = target.existing
    if (existing?.type === 'symlink') existing = this.followForCreate(existing, 'copyfile', from.given, to.given)
    // Nothing there, or a dangling link: open(O_CREAT) creates the file (where the link points).
    const created = !existing
    if (target.existing?.type === 'symlink' && !existing && source.type !== 'dir') {
      existing = this.openEntry(to.path, to.given, O_WRONLY | O_CREAT, this.overlay.meta(source).mode)
    }
    if (existing?.type === 'dir') throw new FsError('EISDIR', 'copyfile', from.given, to.given)
    if (source.type === 'dir') {
      // libuv opens (creating through links) the destination, fails to read the source, then
      // unlinks the destination name: a dangling link leaves an empty target behind.
      const opened = this.openEntry(to.path, to.given, O_WRONLY | O_CREAT | O_TRUNC, this.overlay.meta(source).mode)
      this.overlay.setMeta(opened, { mode: this.overlay.meta(source).mode }) // libuv's fchmod to the source mode
      const steps: NotificationKind[] = created ? ['create'] : []
      if ((flags & constants.COPYFILE_EXCL) === 0) steps.push('modify')
      this.changes.override(mark, opened.path, [...steps, 'attrib'])
      this.overlay.remove(target.parent, target.name)
      throw new FsError('EISDIR', 'copyfile', from.given, to.given)
    }
    // libuv stops once it finds the destination is the source (a link to it, another of its names): nothing changes.
    if (existing && (flags & constants.COPYFILE_EXCL) === 0 && this.overlay.meta(existing).ino === this.overlay.meta(source).ino) return
    this.named('copyfile', from.given, to.given, () => this.copyFileEntry(source, existing, target.parent!, target.name))
    // What libuv's copy does, step by step, as watchers see it: open (O_CREAT), ftruncate (not with
    // COPYFILE_EXCL), fchmod, then the data.
    const steps: NotificationKind[] = created ? ['create'] : []
    if ((flags & constants.COPYFILE_EXCL) === 0) steps.push('modify')
    steps.push('attrib')
    if (this.overlay.size(source) > 0) steps.push('modify')
    this.changes.override(mark, existing?.path ?? join(target.parent.path, target.name), steps)
  }

  /** Shares the blob: copying a file costs no bytes. */
  private copyFileEntry(source: Entry, existing: Entry | undefined, parent: Entry, name: string, preserveTimes = false): void {
    const node = this.overlay.copyUp(source)
    this.accessed(source)
    if (node.type !== 'file') throw new Error('rewindfs: copyFileEntry expects a file')
    const sourceMeta = node.meta
    const now = this.overlay.now()
    if (existing) {
      const meta = { ...this.overlay.meta(existing), mode: sourceMeta.mode, mtimeMs: now, ctimeMs: now }
      if (preserveTimes) Object.assign(meta, { atimeMs: sourceMeta.atimeMs, mtimeMs: sourceMeta.mtimeMs })
      this.overlay.blobs.retain(node.blob)
      this.overlay.replace(existing, { type: 'file', meta, blob: node.blob, size: node.size })
      return
    }
    let meta = this.overlay.newMeta(sourceMeta.mode)
    if (preserveTimes) {
      const [atime, mtime] = copiedTimes(this.statFields(source))
      meta = { ...meta, atimeMs: timeArgument(atime, 'atime'), mtimeMs: timeArgument(mtime, 'mtime') }
    }
    this.overlay.blobs.retain(node.blob)
    this.overlay.put(parent, name, { type: 'file', meta, blob: node.blob, size: node.size })
  }

  /** Where a create through `link` lands: the existing target, or undefined for a dangling link. */
  private followForCreate(link: Entry, syscall: string, reportPath: string, dest?: string): Entry | undefined {
    return this.resolveIfThere(link.path, syscall, true, reportPath, dest)
  }

  /** overlay.resolve, undefined where nothing is (ENOENT); other errors are thrown. */
  private resolveIfThere(path: string, syscall: string, follow: boolean, given: string, dest?: string): Entry | undefined {
    try {
      return this.overlay.resolve(path, syscall, follow, given, dest)
    } catch (error) {
      if (error instanceof FsError && error.code === 'ENOENT') return undefined
      throw error
    }
  }

  cp(src: unknown, dest: unknown, options?: unknown): void {
    const opts = cpOptions(options)
    const stat = opts.dereference === true ? 'stat' : 'lstat'
    const from = this.path(src, stat, 'src')
    const to = this.path(dest, stat, 'dest')
    // Node asks the filter before it looks at either path, with the paths as checked (a Buffer stays one).
    if (opts.filter && !filterAnswer(opts.filter, filterPath(src, from.given), filterPath(dest, to.given))) return
    // Node resolves both paths lexically first, then checks them in this order.
    const sourcePath = normalize(from.path)
    const destPath = normalize(to.path)
    const follow = opts.dereference === true
    const source = this.overlay.resolve(from.path, follow ? 'stat' : 'lstat', follow, from.given)
    const target = this.resolveIfThere(to.path, follow ? 'stat' : 'lstat', follow, to.given)
    const invalid = (detail: string) => systemError('ERR_FS_CP_EINVAL', 'Invalid src or dest', 'EINVAL', 'cp', to.given, detail)
    // Node compares the entries (inodes), not the strings: 'link' and 'link/' are different.
    if (target && target.path === source.path && target.type === source.type) throw invalid('src and dest cannot be the same')
    checkKinds(source, target, from.given, to.given)
    // Node 20's copy takes the paths on to node:path, which takes strings only: a Buffer path, which
    // its argument checks let through, fails there, after the checks above and before anything is
    // copied (path.resolve's 'paths[0]' for a directory, path.dirname's 'path' for anything else).
    const bytesPath = src instanceof Uint8Array ? src : dest instanceof Uint8Array ? dest : undefined
    if (bytesPath !== undefined) {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "${source.type === 'dir' ? 'paths[0]' : 'path'}" argument must be of type string.${describeReceived(bytesPath)}`)
    }
    if (source.type === 'dir' && isWithin(destPath, sourcePath)) throw invalid(`cannot copy ${from.given} to a subdirectory of self ${to.given}`)
    const destParent = this.tryResolveDir(dirname(destPath))
    const canonicalDest = target?.path ?? (destParent ? join(destParent.path, basename(destPath)) : destPath)
    if (source.type === 'dir' && (isWithin(destPath, source.path) || isWithin(canonicalDest, source.path) || this.parentIsSource(source, from.path, to.path))) {
      // Also through a link into the source (Node recurses until its stack overflows there).
      throw invalid(`cannot copy ${from.given} to a subdirectory of self ${to.given}`)
    }
    if (source.type === 'dir' && !opts.recursive) {
      throw systemError('ERR_FS_EISDIR', 'Recursive option is required to copy a directory', 'EISDIR', 'cp', from.given, `${from.given} is a directory (not copied)`)
    }
    // Missing parents of the destination are created, as Node does: mkdir -p of path.dirname(dest).
    const parent = dirnameOf(to.given)
    if (!this.tryResolveDir(absolute(parent, this.cwd))) this.mkdirRecursive(parent, parent, 0o777)
    if (source.type === 'dir' && !target) {
      // The top directory is made with mkdir(2) on the path as given ('b/.' fails with EEXIST), with
      // mkdir's default mode: it takes the source's once its entries are copied (one it may not list
      // fails the copy before, leaving what was made as mkdir made it).
      this.mkdirOne(to.path, to.given, 0o777)
    }
    if (source.type === 'file' && !target) {
      // Node's onFile without a destination: copyFile(2) on the paths as given, then chmod.
      this.copyFile(from.given, to.given)
      if (opts.preserveTimestamps) this.utimes(to.given, ...copiedTimes(this.statFields(source)))
      const copied = this.overlay.lookup(to.path, true)
      if (copied) this.changes.override(this.changes.mark(), copied.path, ['attrib'])
      return
    }
    if (source.type === 'symlink' && !target) {
      // Node's onLink without a destination: symlink(2) on the path as given.
      const link = this.named('readlink', from.given, undefined, () => this.overlay.readLink(source))
      this.symlink(opts.verbatimSymlinks || link.startsWith('/') ? link : normalize(join(dirname(source.path), link)), to.given)
      return
    }
    this.copyTree(source, to.path.endsWith('/') && source.type === 'dir' ? destPath : to.path, opts, from.given, to.given, true, source.type === 'dir' && !target)
  }

  /**
   * Node's checkParentPaths: the destination's parents, taken lexically from the path as given
   * ('/e/..' has the parent '/e'), followed up to the source's parent; one that is the source refuses.
   */
  private parentIsSource(source: Entry, sourcePath: string, destPath: string): boolean {
    const sourceParent = normalize(dirnameOf(sourcePath))
    for (let parent = normalize(dirnameOf(destPath)); parent !== sourceParent && parent !== '/'; parent = normalize(dirnameOf(parent))) {
      const entry = this.tryResolveDir(parent)
      if (!entry) return false
      if (entry.path === source.path) return true
    }
    return false
  }

  private tryResolveDir(path: string): Entry | undefined {
    const entry = this.overlay.lookup(path, true)
    return entry?.type === 'dir' ? entry : undefined
  }

  /** `src` and `dest` name this entry as Node does: the caller's paths at the top, path.join of them below. */
  private copyTree(source: Entry, destPath: string, opts: CpOptions, src: string, dest: string, top = false, made = false): void {
    if (!top && opts.filter && !filterAnswer(opts.filter, src, dest)) return
    // Only the caller's own path can carry a trailing slash.
    const trailingSlash = top && dest.endsWith('/')
    if (trailingSlash && source.type !== 'dir') destPath = destPath.replace(/\/+$/, '')
    // Node lstat()s the destination as given: 'link/' follows the link to the directory it names.
    const existing = this.resolveIfThere(trailingSlash && source.type === 'dir' ? `${destPath}/` : destPath, 'lstat', false, dest)
    checkKinds(source, existing, src, dest)
    const parent = this.overlay.resolve(dirname(destPath), 'cp', true, dest)
    const name = basename(destPath)
    if (source.type === 'dir') {
      const dir = existing ?? this.overlay.put(parent, name, this.newDir(0o777, parent))
      let names: string[]
      try {
        names = this.overlay.names(source)
      } catch (error) {
        // Node's cp lists each directory with opendir: one on disk this process may not list (EACCES) named as there.
        throw callersError(error, 'opendir', src)
      }
      for (const child of names) {
        // dereference: every entry is stat()ed, so links inside are copied as what they point to.
        // Node stats path.join(src, name), so the links the path went through count toward ELOOP: a
        // link back up the tree ends in ELOOP at 40 (it went on until the destination's path was too
        // long, ENAMETOOLONG after copying the tree some 600 levels deep).
        const srcChild = joinLexically(src, child)
        const entry = opts.dereference ? this.overlay.resolve(absolute(srcChild, this.cwd), 'stat', true, srcChild) : this.overlay.child(source, child)!
        this.copyTree(entry, join(destPath, child), opts, srcChild, joinLexically(dest, child))
      }
      // A directory cp made takes the source's mode (a chmod after its entries); one that was there keeps its own.
      if (!existing || made) {
        const mark = this.changes.mark()
        const copied = this.overlay.resolve(dir.path, 'cp', false, dest)
        this.overlay.setMeta(copied, { mode: this.overlay.meta(source).mode, ctimeMs: this.overlay.now() })
        this.changes.override(mark, copied.path, ['attrib'])
      }
      return
    }
    // force and errorOnExist are about files: a link goes through Node's onLink whatever they say.
    if (existing && !opts.force && source.type === 'file') {
      if (opts.errorOnExist) throw systemError('ERR_FS_CP_EEXIST', 'Target already exists', 'EEXIST', 'cp', dest, `${dest} already exists`)
      return
    }
    if (source.type === 'symlink') {
      const link = this.named('readlink', src, undefined, () => this.overlay.readLink(source))
      // Like Node: a relative target is made absolute against the source's directory.
      const target = opts.verbatimSymlinks || link.startsWith('/') ? link : normalize(join(dirname(source.path), link))
      if (existing) {
        // Node's onLink: over a non-link it tries symlink() and fails; over a link it checks the
        // link's target (stat), then replaces it.
        if (existing.type !== 'symlink') throw new FsError('EEXIST', 'symlink', target, dest)
        const destLink = this.overlay.readLink(existing)
        const resolvedDest = destLink.startsWith('/') ? destLink : normalize(join(dirname(existing.path), destLink))
        if (isWithin(resolvedDest, target)) {
          throw systemError('ERR_FS_CP_EINVAL', 'Invalid src or dest', 'EINVAL', 'cp', dest, `cannot copy ${target} to a subdirectory of self ${resolvedDest}`)
        }
        const destTarget = this.overlay.resolve(existing.path, 'stat', true, dest)
        if (destTarget.type === 'dir' && isWithin(target, resolvedDest)) {
          throw systemError('ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY', 'Cannot overwrite symlink in subdirectory of self', 'EINVAL', 'cp', dest, `cannot overwrite ${resolvedDest} with ${target}`)
        }
        this.overlay.remove(parent, name)
      }
      if (trailingSlash) throw new FsError('ENOENT', 'symlink', target, dest)
      this.overlay.put(parent, name, { type: 'symlink', meta: this.overlay.newMeta(0o777), target })
      return
    }
    if (trailingSlash) throw new FsError('EISDIR', 'copyfile', src, dest)
    // Node's onFile: with force it unlinks what is there, then copyFile(2) and chmod: a new inode.
    if (existing) this.overlay.remove(parent, name)
    const mark = this.changes.mark()
    this.named('copyfile', src, dest, () => this.copyFileEntry(source, undefined, parent, name, opts.preserveTimestamps === true))
    const steps: NotificationKind[] = ['create', 'modify', 'attrib']
    if (this.overlay.size(source) > 0) steps.push('modify')
    this.changes.override(mark, join(parent.path, name), [...steps, 'attrib'])
  }

  symlink(target: unknown, file: unknown, type?: unknown): void {
    const linkTarget = pathArgument(target, 'target', 'symlink')
    const { given, path } = this.path(file, 'symlink')
    // Node reads a string type ('dir', 'file', 'junction': all one on Linux) and ignores any other value.
    if (typeof type === 'string' && type !== 'dir' && type !== 'file' && type !== 'junction') {
      throw codedTypeError('ERR_FS_INVALID_SYMLINK_TYPE', `Symlink type must be one of "dir", "file", or "junction". Received "${type}"`, Error)
    }
    // The kernel refuses an empty target, or one over PATH_MAX, before it looks at the new name.
    if (linkTarget === '') throw new FsError('ENOENT', 'symlink', linkTarget, given)
    if (pathTooLong(linkTarget)) throw new FsError('ENAMETOOLONG', 'symlink', linkTarget, given)
    const { parent, name, existing, trailingSlash } = this.overlay.resolveParent(path, 'symlink', linkTarget, given, given)
    if (!parent || existing || isDots(name)) throw new FsError('EEXIST', 'symlink', linkTarget, given)
    if (trailingSlash) throw new FsError('ENOENT', 'symlink', linkTarget, given)
    this.overlay.put(parent, name, { type: 'symlink', meta: this.overlay.newMeta(0o777), target: linkTarget })
  }

  /**
   * link(2): `newPath` becomes another name of the inode `existingPath` names (not followed: a
   * symlink is linked itself, unless a trailing slash resolves it). Errors in Linux's order: the
   * existing path's lookup, then the new name's (taken, a dangling link too: EEXIST; a trailing
   * slash: ENOENT), then a directory to link: EPERM.
   */
  link(existingPath: unknown, newPath: unknown): void {
    const from = this.path(existingPath, 'link', 'existingPath')
    const to = this.path(newPath, 'link', 'newPath')
    // Names in one directory (the usual link) resolve it once.
    const pair = this.overlay.resolvePair(from.path, to.path, 'link', from.given, to.given)
    if (pair && !pair.source) throw new FsError('ENOENT', 'link', from.given, to.given)
    const source = pair?.source ?? this.overlay.resolve(from.path, 'link', false, from.given, to.given)
    const target = pair?.target ?? this.overlay.resolveParent(to.path, 'link', from.given, to.given, to.given)
    if (!target.parent || target.existing || isDots(target.name)) throw new FsError('EEXIST', 'link', from.given, to.given)
    if (target.trailingSlash) throw new FsError('ENOENT', 'link', from.given, to.given)
    if (source.type === 'dir') throw new FsError('EPERM', 'link', from.given, to.given)
    const mark = this.changes.mark()
    const linkPath = this.named('link', from.given, to.given, () => this.overlay.link(source, target.parent!, target.name, target.path))
    // inotify: IN_CREATE for the new name; the inode's link count is an IN_ATTRIB only on the inode.
    this.changes.override(mark, source.path, [])
    this.changes.override(mark, linkPath, ['create'])
  }

  chmod(file: unknown, mode: unknown): void {
    const { given, path } = this.path(file, 'chmod')
    const bits = modeArgument(mode, 'mode')
    const entry = this.overlay.resolve(path, 'chmod', true, given)
    this.named('chmod', given, undefined, () => this.changeMeta(entry, { mode: bits & 0o7777, ctimeMs: this.overlay.now() }))
  }

  chown(file: unknown, uid: unknown, gid: unknown, follow = true): void {
    const { given, path } = this.path(file, follow ? 'chown' : 'lchown')
    const u = validateInteger(uid, 'uid', -1, 4294967295)
    const g = validateInteger(gid, 'gid', -1, 4294967295)
    const entry = this.overlay.resolve(path, follow ? 'chown' : 'lchown', follow, given)
    this.named(follow ? 'chown' : 'lchown', given, undefined, () => this.changeMeta(entry, owner(this.overlay.meta(entry), u, g, this.overlay.now(), entry.type === 'dir')))
  }

  lchown(file: unknown, uid: unknown, gid: unknown): void {
    this.chown(file, uid, gid, false)
  }

  utimes(file: unknown, atime: unknown, mtime: unknown, follow = true): void {
    const { given, path } = this.path(file, follow ? 'utime' : 'lutime')
    // Node names either 'time' here (futimes names them).
    const atimeMs = timeArgument(atime, 'time')
    const mtimeMs = timeArgument(mtime, 'time')
    const entry = this.overlay.resolve(path, follow ? 'utime' : 'lutime', follow, given)
    this.named(follow ? 'utime' : 'lutime', given, undefined, () => this.setTimes(entry, { atimeMs, mtimeMs, ctimeMs: this.overlay.now() }))
  }

  lutimes(file: unknown, atime: unknown, mtime: unknown): void {
    this.utimes(file, atime, mtime, false)
  }

  truncate(file: unknown, len?: unknown): void {
    if (typeof file === 'number') return this.ftruncate(file, len)
    const { given, path } = this.path(file, 'open')
    const length = truncateLength(len)
    const entry = this.overlay.resolve(path, 'open', true, given)
    if (entry.type === 'dir') throw new FsError('EISDIR', 'open', given)
    this.checkSize(length, 'ftruncate', given)
    // Node's truncate opens the file 'r+' first: one on disk this process may not read fails there.
    this.overlay.setContent(entry, resize(this.named('open', given, undefined, () => this.overlay.readBytes(entry)), length))
  }

  // ---- descriptors -------------------------------------------------------------------------------

  open(file: unknown, flags?: unknown, mode?: unknown): number {
    const { given, path } = this.path(file, 'open')
    const bits = flagsArgument(flags, 'r')
    const perm = modeArgument(mode, 'mode', 0o666)
    const entry = this.openEntry(path, given, bits, perm)
    const access = bits & ACCMODE
    return this.descriptors.add({
      path: entry.path,
      ino: this.overlay.meta(entry).ino,
      flags: bits,
      readable: access !== O_WRONLY,
      writable: access === O_WRONLY || access === O_RDWR,
      append: (bits & O_APPEND) !== 0,
      directory: entry.type === 'dir',
    }).fd
  }

  /** open(2): applies O_CREAT/O_EXCL/O_TRUNC/O_DIRECTORY/O_NOFOLLOW and returns the file's entry. */
  private openEntry(path: string, given: string, flags: number, mode: number, content?: () => Uint8Array): Entry {
    // Linux refuses the pair before it looks at the path (since 6.4; a file was made before).
    if ((flags & (O_CREAT | O_DIRECTORY)) === (O_CREAT | O_DIRECTORY)) throw new FsError('EINVAL', 'open', given)
    const writable = (flags & ACCMODE) !== 0
    let target = path
    for (let links = 0; ; links++) {
      if (!(flags & O_CREAT)) {
        const entry = this.overlay.resolve(target, 'open', (flags & O_NOFOLLOW) === 0, given)
        return this.checkOpen(entry, given, flags, writable)
      }
      const { parent, name, existing, trailingSlash } = this.overlay.resolveParent(target, 'open', given)
      if (!parent || isDots(name)) throw new FsError(flags & O_EXCL ? 'EEXIST' : 'EISDIR', 'open', given)
      // Linux refuses to create through a trailing slash, whatever is there.
      if (trailingSlash) throw new FsError('EISDIR', 'open', given)
      if (existing?.type === 'symlink') {
        if (flags & O_EXCL) throw new FsError('EEXIST', 'open', given)
        if (flags & O_NOFOLLOW) throw new FsError('ELOOP', 'open', given)
        if (links >= 40) throw new FsError('ELOOP', 'open', given)
        const link = this.named('open', given, undefined, () => this.overlay.readLink(existing))
        target = link.startsWith('/') ? link : join(parent.path, link)
        continue
      }
      if (existing) {
        if (flags & O_EXCL) throw new FsError('EEXIST', 'open', given)
        if (existing.type === 'dir') throw new FsError('EISDIR', 'open', given)
        return this.checkOpen(existing, given, flags, writable)
      }
      const meta = this.overlay.newMeta(mode & ~this.umask & 0o7777)
      // A file created with its content (writeFile) is stored once, not empty first; the caller's
      // bytes are copied only when the store does not hold that content already.
      const bytes = content?.() ?? new Uint8Array(0)
      this.journal?.classify('file_create')
      return this.overlay.put(parent, name, { type: 'file', meta, blob: this.overlay.blobs.putCopy(bytes), size: bytes.byteLength })
    }
  }

  private checkOpen(entry: Entry, given: string, flags: number, writable: boolean): Entry {
    if (entry.type === 'symlink') throw new FsError('ELOOP', 'open', given)
    // O_TRUNC asks for write access, as a write mode does (open(2)): a directory is EISDIR.
    if (entry.type === 'dir' && (writable || flags & (O_CREAT | O_TRUNC))) throw new FsError('EISDIR', 'open', given)
    if (flags & O_DIRECTORY && entry.type !== 'dir') throw new FsError('ENOTDIR', 'open', given)
    // open(2) for reading fails on a file on disk this process may not read (EACCES), not the first read.
    if ((flags & ACCMODE) !== O_WRONLY) this.named('open', given, undefined, () => this.overlay.checkReadable(entry))
    // O_TRUNC truncates (and sets the times) even an empty file, and on Linux even opened read-only.
    if (flags & O_TRUNC && entry.type === 'file') return this.overlay.setContent(entry, new Uint8Array(0))
    return entry
  }

  close(fd: unknown): void {
    if (this.closedUnder.size > 0 && this.closedUnder.delete(validateFd(fd))) return
    const open = this.descriptors.get(validateFd(fd), 'close')
    if (open.dirty) this.flushDescriptor(open)
    this.descriptors.delete(open.fd)
  }

  /** The workspace closes: every FileHandle closed (fd -1, 'close' emitted), then every other descriptor. */
  async closeAll(): Promise<void> {
    for (const handle of [...this.handles]) await handle.close().catch(() => undefined)
    for (const file of [...this.descriptors.all()]) {
      this.close(file.fd)
      this.closedUnder.add(file.fd)
    }
  }

  fsync(fd: unknown): void {
    const open = this.descriptors.get(validateFd(fd), 'fsync')
    if (open.dirty) this.flushDescriptor(open)
  }

  fdatasync(fd: unknown): void {
    const open = this.descriptors.get(validateFd(fd), 'fdatasync')
    if (open.dirty) this.flushDescriptor(open)
  }

  fstat(fd: unknown, options?: unknown) {
    const open = this.descriptors.get(validateFd(fd), 'fstat')
    this.settle()
    if (open.dirty) this.flushDescriptor(open)
    const opts = objectOptions(options)
    return createStats(open.orphan ? this.orphanFields(open, open.orphan) : this.statFields(this.descriptorEntry(open, 'fstat')), opts.bigint === true)
  }

  /** The stat of an inode with no name left: its metadata, the descriptor's contents, no links. */
  private orphanFields(open: OpenFile, orphan: Orphan): StatFields {
    const { meta } = orphan
    const fields = this.overlay.stat(orphan.entry)
    return {
      ...fields,
      mode: (fields.mode & ~0o7777) | meta.mode,
      nlink: 0,
      uid: meta.uid,
      gid: meta.gid,
      size: open.length,
      blocks: Math.ceil(open.length / 4096) * 8,
      atimeMs: meta.atimeMs,
      mtimeMs: meta.mtimeMs,
      ctimeMs: meta.ctimeMs,
      birthtimeMs: meta.birthtimeMs,
    }
  }

  ftruncate(fd: unknown, len?: unknown): void {
    const open = this.descriptors.get(validateFd(fd), 'ftruncate')
    const length = truncateLength(len)
    if (!open.writable) throw new FsError('EINVAL', 'ftruncate')
    this.checkSize(length, 'ftruncate')
    this.settle(open)
    const bytes = this.workingBuffer(open, length)
    if (length > open.length) bytes.fill(0, open.length, length)
    open.length = length
    this.markDirty(open)
  }

  futimes(fd: unknown, atime: unknown, mtime: unknown): void {
    const open = this.descriptors.get(validateFd(fd), 'futime')
    const atimeMs = timeArgument(atime, 'atime')
    const mtimeMs = timeArgument(mtime, 'mtime')
    this.settle()
    if (open.orphan) return this.changeOrphan(open.orphan, { atimeMs, mtimeMs, ctimeMs: this.overlay.now() })
    if (open.dirty) this.flushDescriptor(open)
    this.setTimes(this.descriptorEntry(open, 'futime'), { atimeMs, mtimeMs, ctimeMs: this.overlay.now() })
  }

  /** fchmod, fchown, futimes of an inode with no name: the descriptor's own (nothing in the tree changes). */
  private changeOrphan(orphan: Orphan, change: Partial<Meta>): void {
    orphan.meta = { ...orphan.meta, ...change }
  }

  fchmod(fd: unknown, mode: unknown): void {
    // Node checks the arguments before it uses the descriptor.
    const descriptor = validateFd(fd)
    const bits = modeArgument(mode, 'mode')
    const open = this.descriptors.get(descriptor, 'fchmod')
    this.settle()
    if (open.orphan) return this.changeOrphan(open.orphan, { mode: bits & 0o7777, ctimeMs: this.overlay.now() })
    if (open.dirty) this.flushDescriptor(open)
    this.changeMeta(this.descriptorEntry(open, 'fchmod'), { mode: bits & 0o7777, ctimeMs: this.overlay.now() })
  }

  fchown(fd: unknown, uid: unknown, gid: unknown): void {
    const open = this.descriptors.get(validateFd(fd), 'fchown')
    const u = validateInteger(uid, 'uid', -1, 4294967295)
    const g = validateInteger(gid, 'gid', -1, 4294967295)
    this.settle()
    if (open.orphan) return this.changeOrphan(open.orphan, owner(open.orphan.meta, u, g, this.overlay.now(), open.directory))
    if (open.dirty) this.flushDescriptor(open)
    const entry = this.descriptorEntry(open, 'fchown')
    this.changeMeta(entry, owner(this.overlay.meta(entry), u, g, this.overlay.now(), entry.type === 'dir'))
  }

  /**
   * read(fd, buffer, offset?, length?, position?) and read(fd, buffer, { offset, length, position }).
   * Returns the number of bytes read; `position` null reads at (and advances) the file position.
   * `positional`: the offset is never options (null is 0), as in Node's callback read given all
   * its arguments and FileHandle.read; readSync takes any object there, null too, as options.
   */
  read(fd: unknown, buffer: unknown, offsetOrOptions?: unknown, length?: unknown, position?: unknown, positional = false): number {
    const descriptor = validateFd(fd)
    const { target, offset, count, at } = readArguments(buffer, offsetOrOptions, length, position, positional)
    // Node answers a read of nothing itself, before the descriptor is looked at.
    if (count === 0) return 0
    const open = this.descriptors.get(descriptor, 'read')
    if (open.directory) throw new FsError('EISDIR', 'read')
    if (!open.readable) throw new FsError('EBADF', 'read')
    this.settleOn(open)
    const start = at ?? open.position
    const part = this.readPart(open, target, offset, count, start)
    let n: number
    if (part !== undefined) n = part
    else {
      const bytes = this.descriptorBytes(open, true)
      n = Math.max(0, Math.min(count, bytes.byteLength - start))
      if (n > 0) target.set(bytes.subarray(start, start + n), offset)
    }
    if (at === null) open.position += n
    return n
  }

  /**
   * A read of a large file the workspace never changed, straight from the lower source at its
   * position (where the source reads parts: LowerSource.readInto), or undefined for a whole read:
   * a descriptor read such a file whole (a stream's 64 KiB of a 1 GB file took 1 GB of memory, one
   * of more than 2 GiB failed), as it still reads a smaller one (then its next reads are copies).
   * While the file on disk keeps the version seen at the descriptor's first such read; once it
   * changed, the descriptor reads it whole, as it reads any file after a change.
   */
  private readPart(open: OpenFile, target: Uint8Array, offset: number, count: number, start: number): number | undefined {
    const readInto = this.overlay.lower.readInto
    if (readInto === undefined || open.buffer !== undefined || open.lastRead !== undefined) return undefined
    const entry = this.descriptorEntry(open, 'read')
    const stat = entry.node === undefined && entry.type === 'file' && entry.lowerPath !== null ? entry.lowerStat : undefined
    if (stat === undefined || stat.size < READ_PARTS_FROM || (open.partsOf !== undefined && open.partsOf !== stat.version)) return undefined
    open.partsOf = stat.version
    this.accessed(entry)
    if (start >= stat.size) return 0
    const lowerPath = entry.lowerPath!
    return this.named('read', open.path, undefined, () => readInto.call(this.overlay.lower, lowerPath, target, offset, Math.min(count, stat.size - start), start))
  }

  /** readv(fd, buffers, position?): fills the buffers in order until the file ends; a non-number position reads at the file position. */
  readv(fd: unknown, buffers: unknown, position?: unknown): number {
    const open = this.descriptors.get(validateFd(fd), 'read')
    const views = bufferArray(buffers)
    if (views.length === 0) throw new FsError('EINVAL', 'read')
    if (!open.readable) throw new FsError('EBADF', 'read')
    // libuv reads one buffer with read(2), which asks the file (a directory says EISDIR even for
    // no bytes); several with readv(2), which returns 0 for no bytes in all before asking it.
    if (views.length > 1 && views.every((view) => view.byteLength === 0)) return 0
    if (open.directory) throw new FsError('EISDIR', 'read')
    let at = fileOffset(position)
    let total = 0
    for (const view of views) {
      if (view.byteLength === 0) continue
      const n = this.read(open.fd, view, 0, view.byteLength, at)
      total += n
      if (at !== null) at += n
      if (n < view.byteLength) break
    }
    return total
  }

  /** writev(fd, buffers, position?): writes the buffers in order, at `position` or the file position. */
  writev(fd: unknown, buffers: unknown, position?: unknown): number {
    const open = this.descriptors.get(validateFd(fd), 'write')
    const views = bufferArray(buffers)
    if (views.length === 0) return 0 // Node answers it itself
    if (!open.writable) throw new FsError('EBADF', 'write')
    let at = fileOffset(position)
    let total = 0
    for (const view of views) {
      const n = this.writeDescriptor(open, view, 0, view.byteLength, at)
      total += n
      if (at !== null) at += n
    }
    return total
  }

  /** write(fd, buffer, offset?, length?, position?) and write(fd, string, position?, encoding?). */
  write(fd: unknown, data: unknown, offsetOrPosition?: unknown, lengthOrEncoding?: unknown, position?: unknown): number {
    const open = this.descriptors.get(validateFd(fd), 'write')
    let bytes: Uint8Array
    let at: number | null
    if (typeof data === 'string') {
      // Node's C++ takes an encoding it does not know as UTF-8; only odd-length hex is refused first.
      const encoding = isEncoding(lengthOrEncoding) ? lengthOrEncoding : 'utf8'
      if (encoding.toLowerCase() === 'hex' && data.length % 2 !== 0) {
        throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'encoding' is invalid for data of length ${data.length}. Received '${encoding}'`)
      }
      bytes = dataArgument(data, encoding, 'buffer')
      at = fileOffset(offsetOrPosition)
    } else {
      const parsed = writeArguments(data, offsetOrPosition, lengthOrEncoding, position)
      bytes = parsed.target.subarray(parsed.offset, parsed.offset + parsed.count)
      at = parsed.at
    }
    return this.writeDescriptor(open, bytes, 0, bytes.byteLength, at)
  }

  private writeDescriptor(open: OpenFile, bytes: Uint8Array, offset: number, count: number, at: number | null): number {
    if (!open.writable) throw new FsError('EBADF', 'write')
    // Writing nothing changes nothing: not the file, its times or (with O_APPEND) the position.
    if (count === 0) return 0
    this.settleOn(open)
    const start = open.append ? (open.buffer ? open.length : this.overlay.size(this.descriptorEntry(open, 'write'))) : (at ?? open.position)
    const end = start + count
    this.checkSize(end, 'write')
    const buffer = this.workingBuffer(open, end)
    if (start > open.length) buffer.fill(0, open.length, start)
    buffer.set(bytes.subarray(offset, offset + count), start)
    open.length = Math.max(open.length, end)
    // pwrite() never moves the file position, not even with O_APPEND (where it writes at the end).
    if (at === null) open.position = end
    open.written += count
    this.markDirty(open)
    return count
  }

  private settleScheduled = false
  private settleTimer: ReturnType<typeof setTimeout> | undefined

  /**
   * A descriptor has unsettled writes; while watched, they are settled soon so watchers see them:
   * on a microtask, but a file of WATCHED_LARGE bytes or more only once the bytes written since its
   * last settle are half its size, else within WATCH_SETTLE_MS. A settle is a new version of the
   * whole file (hashed whole): settled at every write, a stream's copy of a big file under a
   * watcher cost n²/chunk (32 MB: 28 s); so its settles cost O(size) in all.
   */
  private markDirty(open: OpenFile): void {
    // An inode with no name keeps its writes: there is nothing to settle them into.
    if (open.orphan) {
      const now = this.overlay.now()
      return this.changeOrphan(open.orphan, { mtimeMs: now, ctimeMs: now })
    }
    this.descriptors.markDirty(open)
    if (!this.changes.active) return
    if (dueForWatchers(open) && !this.settleScheduled) {
      this.settleScheduled = true
      queueMicrotask(() => {
        this.settleScheduled = false
        this.settleForWatchers(dueForWatchers)
      })
    }
    if (!dueForWatchers(open) && this.settleTimer === undefined) {
      this.settleTimer = setTimeout(() => {
        this.settleTimer = undefined
        this.settleForWatchers(() => true)
      }, WATCH_SETTLE_MS)
      ;(this.settleTimer as { unref?: () => void }).unref?.()
    }
  }

  /**
   * Settles, for watchers, the pending descriptors `due` picks. Off any call, nothing may throw
   * here (a frozen or closed workspace): a write that cannot settle stays pending, and the next
   * call that needs it settles it and fails as it fails.
   */
  private settleForWatchers(due: (open: OpenFile) => boolean): void {
    const pending = this.descriptors.pending()
    for (let i = 0; i < pending.length; i++) {
      if (!due(pending[i])) continue
      try {
        this.flushDescriptor(pending[i])
      } catch {
        // Left pending (above).
      }
    }
  }

  /**
   * Runs `read`, a read of the lower source for a call: what the source throws (EACCES for a file
   * on disk this process may not read) names the call's syscall and the paths as the caller gave
   * them, as Node does, never the workspace's absolute path or the host's.
   */
  private named<T>(syscall: string, path: string, dest: string | undefined, read: () => T): T {
    try {
      return read()
    } catch (error) {
      throw callersError(error, syscall, path, dest)
    }
  }

  /** Refuses, before anything changes, a file that would grow past `maxFileSize`. */
  private checkSize(size: number, syscall: string, path?: string): void {
    if (size > this.maxFileSize) {
      throw new FsError('EFBIG', syscall, path, undefined, `file too large: ${size} bytes is over the workspace's limit of ${this.maxFileSize}`)
    }
  }

  /** The descriptor's working copy, grown to hold at least `size` bytes. */
  private workingBuffer(open: OpenFile, size: number): Uint8Array {
    if (!open.buffer) {
      const current = this.overlay.readBytes(this.descriptorEntry(open, 'write'))
      open.buffer = workingMemory(Math.max(size, current.byteLength, 64))
      open.buffer.set(current)
      open.length = current.byteLength
    }
    if (open.buffer.byteLength < size) {
      const grown = workingMemory(Math.min(Math.max(size, open.buffer.byteLength * 2), Math.max(size, this.maxFileSize)))
      grown.set(open.buffer.subarray(0, open.length))
      open.buffer = grown
    }
    return open.buffer
  }

  /** What a descriptor reads: its unsettled working copy, else the file; `reading` counts as an access. */
  private descriptorBytes(open: OpenFile, reading = false): Uint8Array {
    if (open.buffer) return open.buffer.subarray(0, open.length)
    // Nothing changed since the last read (its access time is set already): the same bytes.
    const version = this.overlay.version
    if (open.lastRead !== undefined && open.lastRead.version === version) return open.lastRead.bytes
    const entry = this.descriptorEntry(open, 'read')
    if (reading) this.accessed(entry)
    const content = contentOf(entry)
    if (content !== undefined && open.lastRead?.content === content) {
      open.lastRead.version = version
      return open.lastRead.bytes
    }
    const bytes = this.overlay.readBytes(entry)
    if (reading) open.lastRead = { version, content, bytes }
    return bytes
  }

  /** The entry an open descriptor names; EBADF-free: a vanished file reads as empty. */
  private descriptorEntry(open: OpenFile, syscall: string): Entry {
    let entry: Entry | undefined
    let failure: unknown
    try {
      entry = this.overlay.resolve(open.path, syscall, false)
    } catch (error) {
      failure = error
    }
    if (entry !== undefined && this.overlay.meta(entry).ino === open.ino) return entry
    // Its name was removed or replaced: a hard-linked inode lives on under its other names, as on Linux.
    const other = this.overlay.nameOfInode(open.ino)
    if (other !== undefined) return other
    if (entry !== undefined) return entry
    throw failure
  }

  private flushDescriptor(open: OpenFile): void {
    if (this.journal && open.dirty) {
      this.journal.run({ type: 'file_edit', paths: [open.path] }, () => this.settleInto(open))
      return
    }
    this.settleInto(open)
  }

  private settleInto(open: OpenFile): void {
    if (open.buffer && open.dirty) {
      let entry: Entry | undefined
      try {
        entry = this.descriptorEntry(open, 'write')
      } catch {
        entry = undefined
      }
      // The file was unlinked or replaced since open (and has no other name): like an orphaned inode, its writes go nowhere.
      if (entry && entry.type === 'file' && this.overlay.meta(entry).ino === open.ino) {
        // The working copy is handed over, not copied (the descriptor lets go of it): copying a big file
        // into fresh memory costs as much as writing it. Its spare room (under half, as the buffer
        // doubles: what memfs keeps too) stays with it; a copy is made only of a mostly empty buffer.
        const { buffer, length } = open
        this.overlay.setContent(entry, buffer.byteLength - length <= length ? buffer.subarray(0, length) : new Uint8Array(buffer.subarray(0, length)))
      }
    }
    this.descriptors.settled(open)
  }
}

/**
 * The mutating calls, each with its operation type: whoever makes one (the fs surface, a
 * FileHandle, a stream, the engine), it runs as one journaled operation of that type (refined by
 * the call: a write may create). Wrapped on the prototype below the class.
 */
const JOURNALED = {
  writeFile: 'file_edit',
  appendFile: 'file_edit',
  mkdir: 'mkdir',
  mkdtemp: 'mkdir',
  rmdir: 'rmdir',
  unlink: 'file_delete',
  rm: 'file_delete',
  rename: 'rename',
  copyFile: 'copy',
  cp: 'copy',
  symlink: 'symlink',
  link: 'link',
  chmod: 'chmod',
  chown: 'chmod',
  lchown: 'chmod',
  utimes: 'chmod',
  lutimes: 'chmod',
  truncate: 'truncate',
  open: 'file_edit',
  close: 'file_edit',
  fsync: 'file_edit',
  fdatasync: 'file_edit',
  ftruncate: 'truncate',
  futimes: 'chmod',
  fchmod: 'chmod',
  fchown: 'chmod',
} as const satisfies Partial<Record<keyof FsOperations, OperationType>>

for (const [name, type] of Object.entries(JOURNALED)) {
  const prototype = FsOperations.prototype as unknown as Record<string, (...args: unknown[]) => unknown>
  const body = prototype[name]
  prototype[name] = function (this: FsOperations, ...args: unknown[]) {
    return this.journaled(type, name, args, body)
  }
}

/**
 * The times cp's preserveTimestamps sets on a copy: the source's stat Dates (its access time after
 * the copy read it, as Node stats it again), which Node rounds to the millisecond.
 */
function copiedTimes(source: StatFields): [Date, Date] {
  return [new Date(Math.round(source.atimeMs)), new Date(Math.round(source.mtimeMs))]
}

/** Lower files from this size on are read by descriptors a part at a time (readPart). */
const READ_PARTS_FROM = 8 * 1024 * 1024

/** Files from this size on are settled for watchers as their size grows by half, or after WATCH_SETTLE_MS (markDirty). */
const WATCHED_LARGE = 1024 * 1024
const WATCH_SETTLE_MS = 50

function dueForWatchers(open: OpenFile): boolean {
  return open.length < WATCHED_LARGE || 2 * open.written >= open.length
}

/**
 * What names a file's bytes: its blob (same id, same bytes), or its lower file's version (a file
 * changed on disk has another); undefined where neither tells (a lower entry without a version).
 */
function contentOf(entry: Entry): string | undefined {
  if (entry.node?.type === 'file') return `blob:${entry.node.blob}`
  const version = entry.node === undefined && entry.type === 'file' ? entry.lowerStat?.version : undefined
  return version && !isListed(version) ? `lower:${entry.lowerPath}:${version}` : undefined
}

/** A name or path as Node returns it in `encoding`: its UTF-8 bytes as a Buffer, or those bytes decoded ('hex', 'base64', …). */
function encodedName(name: string, encoding: Encoding | 'buffer' | null): string | Uint8Array {
  if (encoding === null || encoding === 'utf8' || encoding === 'utf-8') return name
  const bytes = new TextEncoder().encode(name)
  return encoding === 'buffer' ? toCallerBytes(bytes) : decode(bytes, encoding)
}

/** Node's validateRmOptions: an object (or nothing), its flags booleans, its retry settings integers. */
export function rmOptions(options: unknown): Options {
  if (options === undefined) return {}
  validateObject(options, 'options')
  const opts = { recursive: false, force: false, retryDelay: 100, maxRetries: 0, ...options }
  validateBoolean(opts.recursive, 'options.recursive')
  validateInteger(opts.retryDelay, 'options.retryDelay', 0, 2147483647)
  validateInteger(opts.maxRetries, 'options.maxRetries', 0, 4294967295)
  validateBoolean(opts.force, 'options.force')
  return opts
}

/** Node's validateCpOptions: its defaults (force on), booleans, a filter function, dereference without verbatimSymlinks. */
function cpOptions(options: unknown): CpOptions {
  if (options === undefined) return { force: true }
  validateObject(options, 'options')
  const opts: Record<string, unknown> = { dereference: false, errorOnExist: false, force: true, preserveTimestamps: false, recursive: false, verbatimSymlinks: false, ...options }
  for (const name of ['dereference', 'errorOnExist', 'force', 'preserveTimestamps', 'recursive', 'verbatimSymlinks']) validateBoolean(opts[name], `options.${name}`)
  if (opts.dereference === true && opts.verbatimSymlinks === true) {
    throw incompatibleOptions('dereference', 'verbatimSymlinks')
  }
  if (opts.filter !== undefined) validateFunction(opts.filter, 'options.filter')
  return opts as CpOptions
}

/** cp's filter answer; cpSync refuses a promise (the async forms await it: see cpFilterAnswers). */
function filterAnswer(filter: NonNullable<CpOptions['filter']>, source: string | Uint8Array, destination: string | Uint8Array): boolean {
  const answer: unknown = filter(source, destination)
  if (answer instanceof Promise) throw codedTypeError('ERR_INVALID_RETURN_VALUE', 'Expected boolean to be returned from the "filter" function but got an instance of Promise.')
  return Boolean(answer)
}

/** A path as cp's filter is given it at the top: as Node's argument check leaves it, a Buffer as it is, a URL as its path. */
function filterPath(value: unknown, given: string): string | Uint8Array {
  return value instanceof Uint8Array ? value : given
}

/**
 * cp's arguments, checked at once as Node does before its copy starts: the options and both
 * paths; for the filter, the paths as it is given them at the top (see filterPath).
 */
export function cpArguments(args: unknown[]): { opts: CpOptions; src: string; dest: string; filterSrc: string | Uint8Array; filterDest: string | Uint8Array } {
  const opts = cpOptions(args[2])
  const stat = opts.dereference === true ? 'stat' : 'lstat'
  const src = pathArgument(args[0], 'src', stat)
  const dest = pathArgument(args[1], 'dest', stat)
  return { opts, src, dest, filterSrc: filterPath(args[0], src), filterDest: filterPath(args[1], dest) }
}

/** Options given as an object, else none. */
function objectOptions(options: unknown): Options {
  return typeof options === 'object' && options !== null ? (options as Options) : {}
}

/** chown's change: -1 keeps an id. */
/**
 * chown's change, as Linux makes it (chown_common): on anything but a directory it also drops
 * set-user-ID, and set-group-ID where group execute is set (without it, the bit marks mandatory
 * locking, which stays), whoever asks, root included, and whatever ids are given.
 */
function owner(meta: Meta, uid: number, gid: number, now: number, directory: boolean): Partial<Meta> {
  const change: Partial<Meta> = { uid: uid === -1 ? meta.uid : uid, gid: gid === -1 ? meta.gid : gid, ctimeMs: now }
  if (directory) return change
  let mode = meta.mode & ~0o4000
  if ((mode & 0o2010) === 0o2010) mode &= ~0o2000
  return mode === meta.mode ? change : { ...change, mode }
}

/** cp refuses a directory over a non-directory and the reverse (`src` and `dest` as Node names them). */
function checkKinds(source: Entry, existing: Entry | undefined, src: string, dest: string): void {
  if (!existing || (source.type === 'dir') === (existing.type === 'dir')) return
  throw source.type === 'dir'
    ? systemError('ERR_FS_CP_DIR_TO_NON_DIR', 'Cannot overwrite non-directory with directory', 'EISDIR', 'cp', dest, `cannot overwrite non-directory ${dest} with directory ${src}`)
    : systemError('ERR_FS_CP_NON_DIR_TO_DIR', 'Cannot overwrite directory with non-directory', 'ENOTDIR', 'cp', dest, `cannot overwrite directory ${dest} with non-directory ${src}`)
}

/** Node's path.dirname: trailing slashes ignored, '.' when there is no directory part. */
function dirnameOf(path: string): string {
  const trimmed = path.replace(/\/+$/, '')
  if (trimmed === '') return path.startsWith('/') ? '/' : '.'
  const slash = trimmed.lastIndexOf('/')
  if (slash < 0) return '.'
  return trimmed.slice(0, slash).replace(/\/+$/, '') || '/'
}

function isDots(name: string): boolean {
  return name === '.' || name === '..'
}


const DAY_MS = 24 * 60 * 60 * 1000
/** statfs: the device magic ('rwfs', as st_dev), 4 KiB blocks, nominal totals of 4 TiB and 2^31 inodes. */
const STATFS_TYPE = 0x72776673
const STATFS_BLOCK = 4096
const STATFS_BLOCKS = 2 ** 30
const STATFS_FILES = 2 ** 31 - 1

/** Node's kIoMaxLength: readFile refuses larger files, so no write may make one. */
export const MAX_FILE_SIZE = 2 ** 31 - 1

/**
 * Memory for a descriptor's working copy, left uninitialised where the host can (Node): every byte
 * below the file's length is written before it is read (a gap is zero-filled), so nothing stale shows.
 */
function workingMemory(size: number): Uint8Array {
  return HostBuffer !== undefined && size >= 4096 ? HostBuffer.allocUnsafe(size) : new Uint8Array(size)
}

function resize(bytes: Uint8Array, length: number): Uint8Array {
  if (length === bytes.byteLength) return bytes.slice()
  const out = new Uint8Array(length)
  out.set(bytes.subarray(0, Math.min(length, bytes.byteLength)))
  return out
}

/** Node's validateBufferArray: an array of ArrayBufferViews, as byte views. */
function bufferArray(buffers: unknown): Uint8Array[] {
  if (!Array.isArray(buffers) || !buffers.every((b) => ArrayBuffer.isView(b))) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "buffers" argument must be an ArrayBufferView[].${describeReceived(buffers)}`)
  }
  return buffers.map((b: ArrayBufferView) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength))
}

/** Node's ftruncate length: an integer (0 when left out), a negative one taken as 0. */
function truncateLength(len: unknown): number {
  return len === undefined ? 0 : Math.max(0, validateInteger(len, 'len'))
}

/** Whether readFile and writeFile take `file` as a descriptor: an int32, as Node's isFd (other numbers are refused as paths). */
function isDescriptor(file: unknown): file is number {
  return typeof file === 'number' && (file | 0) === file
}

function validateFd(fd: unknown): number {
  return validateInteger(fd, 'fd', 0, 2147483647)
}

interface ReadWriteArguments {
  target: Uint8Array
  offset: number
  count: number
  at: number | null
}

function bufferView(buffer: unknown, name: string, expected = 'an instance of Buffer, TypedArray, or DataView'): Uint8Array {
  if (!ArrayBuffer.isView(buffer)) throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" argument must be ${expected}.${describeReceived(buffer)}`)
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
}

const outOfRange = (name: string, range: string, value: unknown) =>
  rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be ${range}. Received ${typeof value === 'bigint' ? groupDigits(String(value)) + 'n' : value}`)

/** Node prints big numbers with underscores: 9_223_372_036_854_775_808. */
function groupDigits(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, '_')
}

/**
 * readSync's arguments as Node 20 takes them: (buffer, offset, length, position) or (buffer,
 * options); a length given is cut to an int32 (`length |= 0`, so '2' is 2 and 1.5 is 1), a position
 * is an integer or bigint from -1 up (-1, null and a negative bigint: the file position).
 * `positional`: (buffer, offset, length, position) only, a null offset 0 (see FsOperations.read).
 */
function readArguments(buffer: unknown, offsetOrOptions: unknown, length: unknown, position: unknown, positional: boolean): ReadWriteArguments {
  const target = bufferView(buffer, 'buffer')
  let offset: unknown = offsetOrOptions
  // Options (null: the defaults: all of the buffer, at the file position), or the buffer alone.
  if (!positional && (typeof offsetOrOptions === 'object' || (length === undefined && position === undefined))) {
    if (offsetOrOptions !== undefined && offsetOrOptions !== null) validateObject(offsetOrOptions, 'options')
    const opts = (offsetOrOptions ?? {}) as Options
    offset = opts.offset === undefined ? 0 : opts.offset
    length = opts.length === undefined ? target.byteLength - (offset as number) : opts.length
    position = opts.position === undefined ? null : opts.position
  }
  const start = offset === undefined || offset === null ? 0 : validateInteger(offset, 'offset', 0)
  const count = (length as number) | 0
  if (count === 0) return { target, offset: start, count: 0, at: null }
  if (target.byteLength === 0) {
    throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'buffer' is empty and cannot be written. Received ${HostBuffer ? '<Buffer >' : 'Uint8Array(0) []'}`)
  }
  if (count < 0) throw outOfRange('length', '>= 0', count)
  if (start + count > target.byteLength) throw outOfRange('length', `<= ${target.byteLength - start}`, count)
  let at: number | null = null
  if (typeof position === 'bigint') {
    if (position < -(2n ** 63n) || position > 2n ** 63n - 1n) throw outOfRange('position', '>= -9223372036854775808 && <= 9223372036854775807', position)
    at = position >= 0n ? Number(position) : null
  } else if (typeof position === 'number') {
    at = validateInteger(position, 'position', -1) === -1 ? null : position
  } else if (position !== undefined && position !== null) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "position" argument must be of type bigint or integer.${describeReceived(position)}`)
  }
  return { target, offset: start, count, at }
}

/**
 * writeSync's buffer arguments as Node 20 takes them: (buffer, offset, length, position) or
 * (buffer, options); a length that is not a number is the rest of the buffer.
 */
function writeArguments(buffer: unknown, offsetOrOptions: unknown, length: unknown, position: unknown): ReadWriteArguments {
  const target = bufferView(buffer, 'buffer', 'of type string or an instance of Buffer, TypedArray, or DataView')
  let offset: unknown = offsetOrOptions
  if (typeof offsetOrOptions === 'object') {
    const opts = (offsetOrOptions ?? {}) as Options
    offset = opts.offset === undefined ? 0 : opts.offset
    length = opts.length === undefined ? target.byteLength - (offset as number) : opts.length
    position = opts.position === undefined ? null : opts.position
  }
  const start = offset === undefined || offset === null ? 0 : validateInteger(offset, 'offset', 0)
  const count = typeof length === 'number' ? length : target.byteLength - start
  if (start > target.byteLength) throw outOfRange('offset', `<= ${target.byteLength}`, start)
  if (count > target.byteLength - start) throw outOfRange('length', `<= ${target.byteLength - start}`, count)
  if (count < 0) throw outOfRange('length', '>= 0', count)
  validateInteger(count, 'length', 0, 2147483647)
  return { target, offset: start, count, at: fileOffset(position) }
}

