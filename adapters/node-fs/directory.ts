/**
 * A real directory as the workspace's lower layer and as a flush target. Reads are lazy and
 * synchronous (nothing is scanned on open; every call asks the disk, so a change underneath shows
 * in `version`), confined to the root (see confine.ts), and never show the flush's staging area
 * or names that are not UTF-8 (a workspace name is a string: see walker.ts's utf8Entries).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Stats } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { hostFs as fs } from './host-fs.js'
import type { ExecRunner } from 'rewindfs'
import { type FlushEntry, type FlushProgress, type FlushTarget, FsError, type LowerSource, type LowerStat, type WalkerEntry, flushEngine, lowerStatOf, lowerVersionOf, normalize } from 'rewindfs/adapter-kit'
import { LockFile } from 'rewindfs/adapter-kit/node'
import { Confinement, READ_FLAGS, RESERVED_PREFIX, checkPath, codeOf, isReserved, lstatOrUndefined, regularFile } from './confine.js'
import { hostShell } from './exec.js'
import { type XattrsNotKept, changedUnder, clearStaging, flushError, plan, readManifest, rollBack, rollForward, stage, stagingFolder } from './flush.js'
import { syncDirectory } from './files.js'
import { readFully } from './pack-io.js'
import { DirectoryWalker, typedEntries } from './walker.js'

/** How long a flush waits for another process's flush into the same directory before EBUSY. */
const LOCK_WAIT_MS = 60_000

/**
 * The flush locks the running flush holds (inside `exclusive`): its own `apply` and `recover` then
 * run under that lock instead of taking it again, whichever DirectorySource object of the root they
 * are called on. A grant ends with its section: work the section started that outlives it (a timer
 * its callback set) keeps the context but not the lock.
 */
interface Grant {
  readonly root: string
  live: boolean
  /** An apply ran under it (the staging folder is then kept). */
  applied: boolean
}
const held = new AsyncLocalStorage<readonly Grant[]>()

function isHidden(path: string): boolean {
  return path.includes(RESERVED_PREFIX) && path.split('/').some(isReserved)
}

export class DirectorySource implements LowerSource, FlushTarget {
  readonly kind = 'directory'
  readonly flusher = flushEngine
  readonly id: string
  /** Flushed names of one inode become hard links of one file. */
  readonly hardLinks = true
  /** The real path of the root. */
  readonly root: string
  /**
   * The project's absolute host path as the user gave it, where it leads to the root through a link
   * above it (the alias shownTarget knows); otherwise the root. ws.exec's output names the project by it.
   */
  readonly opened: string
  private readonly confinement: Confinement
  private queue: Promise<unknown> = Promise.resolve()
  /** ws.exec over this directory: overlay mode where the host allows, else copy mode (see exec.ts). */
  readonly exec: ExecRunner = hostShell()
  /** Work counters (tests prove listings' costs by them): paths looked up (stat, a flush's versions) and directories listed. */
  readonly counters = { stats: 0, listings: 0 }
  /** Tests only: stop an apply where a crash would (after staging, or right after the commit point). */
  stopAfter?: 'staged' | 'committed'

  constructor(
    path: string,
    private readonly options: DirectoryOptions = {},
  ) {
    checkPath(path)
    this.root = fs.realpathSync.native(path)
    if (!fs.statSync(this.root).isDirectory()) throw new FsError('ENOTDIR', 'directory', path, undefined, 'the lower directory is not a directory')
    this.id = 'directory:' + this.root
    // The path given, when it reaches the root through a link above it: absolute links below it lead inside.
    const given = resolvePath(path)
    this.opened = given !== this.root && realOrUndefined(given) === this.root ? given : this.root
    this.confinement = new Confinement(this.root, this.opened === this.root ? [] : [given])
    this.recoverNow()
  }

  /** Reads for one walk over the tree: lexical paths, one reused buffer (see walker.ts). */
  walker(): DirectoryWalker {
    return new DirectoryWalker(this.confinement)
  }

  /**
   * A link target as the workspace reads it (as readlink shows it): an absolute one under the root,
   * by its real path or by the path the directory was opened by, as the workspace path it names.
   * ws.exec reads back the links a command made through it: one mapping, here.
   */
  shownTarget(target: string): string {
    return this.confinement.shownTarget(target)
  }

  /** Names starting with '.rewindfs-flush', in any directory: the flush's staging folder and temp files. */
  reserved(path: string): string | undefined {
    return isHidden(path) ? `names starting with '${RESERVED_PREFIX}' are reserved for the directory's flush staging area` : undefined
  }

  stat(path: string): LowerStat | undefined {
    const stats = this.entry(path)
    return stats && lowerStatOf(stats)
  }

  /** lstat of what is at `path` in the root, of any type (a FIFO too); undefined when nothing is, or it is reserved. */
  private entry(path: string): Stats | undefined {
    const normal = normalize(checkPath(path))
    if (isHidden(normal)) return undefined
    this.counters.stats++
    return this.onDisk(() => {
      try {
        // Looked up through the parent's descriptor (see lookup): a directory on the way swapped
        // for a link meanwhile is not followed out of the root.
        return this.confinement.lookup(normal, 'lstat', lstatOrUndefined)
      } catch (error) {
        const code = codeOf(error)
        if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
        throw error
      }
    })
  }

  /** Runs host calls for a read: what they throw names workspace paths, not host ones (see hostError). */
  private onDisk<T>(read: () => T): T {
    try {
      return read()
    } catch (error) {
      throw this.confinement.hostError(error)
    }
  }

  readdir(path: string): string[] {
    return this.readdirTypes(path).map((entry) => entry.name)
  }

  /** readdir with the types the disk lists (d_type): one listing, no stat per entry. */
  readdirTypes(path: string): WalkerEntry[] {
    return this.onDisk(() => this.readdirNow(path))
  }

  private readdirNow(path: string): WalkerEntry[] {
    const normal = this.visible(path, 'scandir')
    const host = this.confinement.resolve(normal, 'scandir', true)
    this.counters.listings++
    // Listed through the directory's descriptor, checked to be inside the root: a component
    // swapped for a link on the way cannot make the names come from elsewhere.
    // Names that are not UTF-8 are left out (see utf8Entries): a workspace name is a string.
    return this.confinement.inDirectory(host, 'scandir', normal, (at) => typedEntries(fs, at ?? host))
  }

  readFile(path: string): Uint8Array {
    return this.onDisk(() =>
      this.openedFile(path, (fd) => {
        const data = fs.readFileSync(fd)
        return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      }),
    )
  }

  /** Runs `read` on a descriptor of the regular file at `path`, opened inside the root. */
  private openedFile<T>(path: string, read: (fd: number) => T): T {
    const normal = this.visible(path, 'open')
    const host = this.confinement.resolve(normal, 'open', true)
    // Not opened at all when it is no file: opening a device can do things (a tape rewinds).
    const before = lstatOrUndefined(host)
    if (before && !before.isSymbolicLink()) regularFile(before, path)
    const fd = fs.openSync(host, READ_FLAGS)
    try {
      this.confinement.checkDescriptor(fd, 'open', normal)
      regularFile(fs.fstatSync(fd), path)
      return read(fd)
    } finally {
      fs.closeSync(fd)
    }
  }

  readInto(path: string, target: Uint8Array, offset: number, length: number, position: number): number {
    return this.onDisk(() => this.openedFile(path, (fd) => readFully(fd, target.subarray(offset, offset + length), length, position)))
  }

  /**
   * An absolute target inside the directory reads as the workspace path it names (the workspace
   * resolves absolute targets from its own root), as a command's link is read back: so the agent's
   * tools follow a link the project committed as `/home/me/app/config/app.ini` where its commands do.
   */
  readlink(path: string): string {
    const normal = this.visible(path, 'readlink')
    return this.onDisk(() => this.confinement.shownTarget(this.confinement.lookup(normal, 'readlink', (at) => fs.readlinkSync(at, 'utf8'))))
  }

  /** The normalised path; the staging area is not there for readers (ENOENT, as stat says). */
  private visible(path: string, syscall: string): string {
    const normal = normalize(checkPath(path))
    if (isHidden(normal)) throw new FsError('ENOENT', syscall, normal)
    return normal
  }

  /**
   * Versions of what is on disk, FIFOs, sockets and devices included, which the source does not
   * show: the workspace saw nothing there, so a flush that would put a file in the place of one is a
   * conflict (unless forced), not a silent replacement of the project's named pipe or device node.
   */
  async versions(paths: readonly string[]): Promise<(string | undefined)[]> {
    return paths.map((path) => {
      const stats = this.entry(path)
      return stats && lowerVersionOf(stats)
    })
  }

  async changedSince(path: string, sinceMs: number): Promise<string[]> {
    return this.flushing(async () => changedUnder(this.confinement, normalize(path), sinceMs))
  }

  /**
   * Rejects with why the flush failed. One that failed before its commit point and then could not
   * take its temps back carries that failure as `rollbackError` (Node-shaped, workspace paths); the
   * staged manifest stays, and the next open or flush into the directory takes the rest back.
   */
  apply(entries: readonly FlushEntry[], onProgress?: (progress: FlushProgress) => void, beforeCommit?: () => Promise<void>): Promise<(string | undefined)[] & { xattrsNotKept?: XattrsNotKept }> {
    if (this.holding()) return this.flushing(() => this.applyNow(entries, onProgress, true, beforeCommit))
    return this.flushing(() => this.queued(() => this.applyNow(entries, onProgress, false, beforeCommit)))
  }

  async recover(): Promise<void> {
    if (this.holding()) return this.flushing(async () => this.settle())
    return this.flushing(() => this.queued(() => this.recoverNow()))
  }

  /** A flush's work on the disk: what it rejects with names workspace paths, never the root's place on the host (flushError). */
  private async flushing<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      throw flushError(this.confinement, error)
    }
  }

  /**
   * Runs `section` holding the directory's flush lock: first in line in this process, then across
   * processes through the lock file, waited for (polled, up to a minute; a dead owner's lock is
   * taken over at once). The flush engine runs its recovery, conflict check and apply in one
   * section, so two processes flushing into this directory never both check before either applies.
   */
  exclusive<T>(section: () => Promise<T>): Promise<T> {
    if (this.holding()) return section()
    return this.queued(async () => {
      const lock = await this.flushing(() => this.waitForLock())
      const made = this.madeFolder
      const grant: Grant = { root: this.root, live: true, applied: false }
      try {
        return await held.run([...(held.getStore() ?? []), grant], section)
      } finally {
        grant.live = false
        lock.release()
        // A refused flush leaves the target as it found it: the staging folder it made for the lock
        // goes, unless another process is taking the lock in it (not empty). Kept once a flush applied.
        if (made && !grant.applied) this.removeFolder()
      }
    })
  }

  private removeFolder(): void {
    try {
      fs.rmdirSync(stagingFolder(this.confinement))
      syncDirectory(this.root)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw error
    }
  }

  private holding(): boolean {
    return this.grant() !== undefined
  }

  private grant(): Grant | undefined {
    return held.getStore()?.find((grant) => grant.live && grant.root === this.root)
  }

  private queued<T>(run: () => T | Promise<T>): Promise<T> {
    const result = this.queue.then(run)
    this.queue = result.catch(() => undefined)
    return result
  }

  private async waitForLock(): Promise<LockFile> {
    const deadline = Date.now() + LOCK_WAIT_MS
    for (let wait = 2; ; wait = Math.min(wait * 2, 100)) {
      try {
        return this.lock(true)!
      } catch (error) {
        if ((error as FsError).code !== 'EBUSY' || Date.now() + wait > deadline) throw error
      }
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }

  /** `locked`: the caller holds the flush lock (inside `exclusive`). */
  private async applyNow(
    entries: readonly FlushEntry[],
    onProgress: ((progress: FlushProgress) => void) | undefined,
    locked: boolean,
    beforeCommit?: () => Promise<void>,
  ): Promise<(string | undefined)[] & { xattrsNotKept?: XattrsNotKept }> {
    if (!Array.isArray(entries)) throw new TypeError(`rewindfs: apply(entries) needs an array of flush entries, got ${typeof entries}`)
    if (entries.length === 0) return []
    // The staging folder is made by the first flush (a bare apply: once it passes the checks) and then
    // kept: making and removing it each time would move the root's mtime, and so its version, with no
    // file changed.
    const grant = locked ? this.grant() : undefined
    let lock = locked ? undefined : this.lock(false)
    try {
      if (lock || locked) this.settle()
      const planned = plan(entries, this.confinement, this.options)
      if (grant) grant.applied = true
      if (!locked) lock ??= this.lock(true)!
      let xattrsNotKept: XattrsNotKept | undefined
      try {
        xattrsNotKept = await stage(this.confinement, planned, (progress) => onProgress?.(progress), this.stopAfter, beforeCommit)
      } catch (error) {
        // Not committed yet: take the temps back. Committed: the manifest stays for recover().
        if (readManifest(this.confinement)?.state === 'staged') {
          try {
            rollBack(this.confinement, planned.manifest)
          } catch (rollbackError) {
            // Why the flush failed stays the rejection; the rollback's failure rides along. The staged
            // manifest is still there (rollBack removes it last), so the next open or flush undoes the rest.
            if (typeof error === 'object' && error !== null) Object.defineProperty(error, 'rollbackError', { value: rollbackError, enumerable: true, configurable: true, writable: true })
          }
        }
        throw error
      }
      // The parents were just checked to be real directories: a plain lstat gives what stat would.
      const versions = entries.map((entry) => {
        const stats = entry.kind === 'delete' ? undefined : lstatOrUndefined(this.confinement.lexical(entry.path))
        return stats && lowerVersionOf(stats)
      })
      // Files written anew whose extended attributes could not be carried over: the flush reports them.
      return xattrsNotKept ? Object.assign(versions, { xattrsNotKept }) : versions
    } finally {
      lock?.release()
    }
  }

  /** Runs on open and before every flush: finishes or undoes an interrupted one, unless another holder is at it. */
  private recoverNow(): void {
    let lock: LockFile | undefined
    try {
      lock = this.lock(false)
    } catch (error) {
      if ((error as FsError).code === 'EBUSY') return // another flush is running: it is not interrupted
      throw error
    }
    if (!lock) return
    try {
      this.settle()
    } finally {
      lock.release()
    }
  }

  private settle(): void {
    const manifest = readManifest(this.confinement)
    if (manifest?.state === 'staged') rollBack(this.confinement, manifest)
    else if (manifest) rollForward(this.confinement, manifest)
    else clearStaging(this.confinement)
  }

  /** The flush lock in the staging folder; undefined when there is no folder and `create` is false. */
  private lock(create: boolean): LockFile | undefined {
    const folder = stagingFolder(this.confinement)
    this.madeFolder = false
    for (let attempt = 0; ; attempt++) {
      const stats = lstatOrUndefined(folder)
      if (stats && !stats.isDirectory()) throw new FsError('EEXIST', 'flush', folder, undefined, `'${RESERVED_PREFIX}' in the root is not the flush staging folder; move it away`)
      if (!stats && !create) return undefined
      if (!stats) {
        try {
          fs.mkdirSync(folder)
          this.madeFolder = true
          syncDirectory(this.root)
        } catch (error) {
          if ((error as { code?: string }).code !== 'EEXIST') throw error // another process made it meanwhile
        }
      }
      let result: ReturnType<typeof LockFile.tryAcquire>
      try {
        result = LockFile.tryAcquire(folder + '/lock', { fs, predecessors: true })
      } catch (error) {
        // A refused flush of another process removed the folder it had made, just now: make it again.
        if ((error as { code?: string }).code === 'ENOENT' && create && attempt < 5) continue
        throw error
      }
      if ('owner' in result) throw new FsError('EBUSY', 'flush', this.root, undefined, `another flush into this directory is running (process ${result.owner.pid})`)
      return result.lock
    }
  }

  /** Whether the last lock() made the staging folder. */
  private madeFolder = false

  toString(): string {
    return `directory(${this.root})`
  }
}

/**
 * The directory at `path` as a lower source and flush target. Finishes or undoes a flush a crash
 * interrupted before it returns.
 */
export interface DirectoryOptions {
  /**
   * Let a flush write symlinks whose targets leave the root (`/usr/bin/python3`, `../shared`) as
   * they are: what a command run natively leaves, a Python venv's `bin/python3` say. By default
   * such a link refuses the flush (EACCES), so that a workspace cannot plant a link to a place
   * outside the project; the workspace itself never follows one out of the root either way.
   */
  readonly allowLinksOutside?: boolean
}

function realOrUndefined(path: string): string | undefined {
  try {
    return fs.realpathSync.native(path)
  } catch {
    return undefined
  }
}

export function directory(path: string, options?: DirectoryOptions): DirectorySource {
  return new DirectorySource(path, options)
}
