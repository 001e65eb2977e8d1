/**
 * The exec layer: the workspace's upper tree written in overlayfs's own format (files, symlinks,
 * directories, whiteouts as 0/0 character devices, opaque directories by xattr) into a host
 * directory that overlay mode mounts as the lowerdir above the project. It lives for the workspace
 * and is brought up to date before each command by diffing the tree it was last written from
 * against the live one: persistent maps share unchanged subtrees, so the cost is O(paths changed
 * since the last exec), never O(files in the project) or O(all earlier changes).
 *
 * What the layer holds at a path is whatever makes (layer over project) show the workspace's view:
 * an upper node as itself; a directory the project's own directory at that path merges with
 * stays a plain directory; a directory that must hide the project's (replaced, or renamed here
 * from elsewhere: overlayfs cannot follow redirects in a user namespace) is opaque and, when
 * renamed, holds its whole view. Paths a flush pinned (the view shows their old state while the
 * project on disk has the new one) are written out explicitly. The names of one inode (hard links)
 * are hard links in the layer too, so a command sees them linked (overlayfs shows a lower file's
 * links; a command's write copies up the name it wrote, as overlayfs does without index=on).
 * As root every entry carries the view's owner and group, so the command sees them and its read-back
 * can tell a chown; a normal user's layer is the user's own (it can give nothing away).
 */
import { hostFs as fs } from './host-fs.js'
import type { ExecHost } from 'rewindfs'
import { type DirNode, type Entry, INODES, mapDiff, mapEntries, mapGet, type Meta, namesOf, type Overlay, type PinnedLower, tableOf, type UpperNode } from 'rewindfs/adapter-kit'
import { RESERVED_PREFIX } from './confine.js'
import { hostTarget } from './exec-tree.js'
import { batches, removeTree } from './exec-files.js'
import { run } from './exec-support.js'

const join = (dir: string, name: string) => (dir === '/' ? '/' + name : `${dir}/${name}`)

/** `was` for a path the layer has nothing at yet (a directory just made). */
const FRESH = Symbol('fresh')

function dirEntry(path: string, node: DirNode): Entry {
  return { path, type: 'dir', node, lowerPath: node.lower, lowerStat: undefined }
}

const parentOf = (path: string) => path.slice(0, path.lastIndexOf('/')) || '/'

export interface LayerTools {
  readonly mknod: string
  readonly setfattr: string
  readonly getfattr: string
}


/**
 * What exec layers wrote in this process, for tests and probes: bytes of file content written, and
 * files a command wrote moved in instead. (`result.work` keeps its documented fields.)
 */
export const layerCounters = { bytesWritten: 0, filesMoved: 0 }

/** A file a command wrote (its upper directory's `host`), read back for `path` with content of blob id `blob`. */
export interface HeldFile {
  readonly path: string
  readonly host: string
  readonly blob: string
  readonly size: number
  /** Its change time when read back: a file changed since is not kept. */
  readonly ctimeNs: bigint
}

export class ExecLayer {
  /** The tree the layer was last written from (frozen); undefined: the layer is empty. */
  private synced: DirNode | undefined
  private template: string | undefined
  private templateSerial = 0
  /** Entries written or removed by the sync in progress. */
  private writes = 0
  private reader!: Overlay
  private dirMeta: { host: string; meta: Meta }[] = []
  private opaque: string[] = []
  private whiteouts: string[] = []
  /** Inodes whose names the sync in progress must (re)write, as hard links of one file. */
  private linked = new Set<number>()
  /** Files of the last command held until its transaction commits (`hold`), then kept by blob id (`confirm`). */
  private pending: { path: string; blob: string; size: number; host: string }[] = []
  private readonly kept = new Map<string, string>()
  private keptSerial = 0
  /** 'trusted.overlay.' or 'user.overlay.' */
  private readonly overlayXattr: string

  constructor(
    /** The host directory of the layer (created by the caller, empty). */
    readonly dir: string,
    /** The project directory (the lowerdir under the layer). */
    readonly project: string,
    /** A private directory for the whiteout templates (on the layer's file system, for hard links). */
    private readonly templates: string,
    private readonly tools: LayerTools,
    private readonly privileged: boolean,
    private readonly opaqueXattr: string,
    /** A private directory for files kept from the last command (on the layer's file system, to be moved in). */
    private readonly keep: string,
  ) {
    this.overlayXattr = opaqueXattr.slice(0, -'opaque'.length)
  }

  /** The tree the layer now shows, after bringing it up to date; and how many entries that took. */
  async sync(host: ExecHost, lower: PinnedLower): Promise<{ root: DirNode; writes: number; lookups: number }> {
    // Held files whose transaction did not commit (refused, failed, or not confirmed yet).
    this.dropPending()
    try {
      return await this.syncNow(host, lower)
    } finally {
      this.dropKept()
    }
  }

  private async syncNow(host: ExecHost, lower: PinnedLower): Promise<{ root: DirNode; writes: number; lookups: number }> {
    const now = host.tree()
    this.writes = 0
    this.dirMeta = []
    this.opaque = []
    this.whiteouts = []
    this.linked = new Set()
    this.reader = host.view(now)
    const before = this.synced
    // Until the sync completes the layer is in between: a failure leaves it to be written afresh.
    this.synced = undefined
    if (before === undefined) this.clearRoot()
    this.placeRoot(before, now)
    if (lower.pinned > 0) this.writePins(lower, now)
    this.changedInodes(before, now)
    this.writeLinks(now)
    this.hideStaging(now)
    await this.linkWhiteouts()
    if (this.opaque.length > 0) await this.setOpaque()
    // Directory modes and times last, deepest first: a directory may forbid writing into it.
    for (const { host: path, meta } of this.dirMeta.sort((a, b) => b.host.length - a.host.length)) this.setMeta(path, meta)
    this.synced = now
    return { root: now, writes: this.writes, lookups: this.reader.counters.lookups }
  }

  // ---- the tree walk ------------------------------------------------------------------------------

  private placeRoot(before: DirNode | undefined, after: DirNode): void {
    const entry = dirEntry('/', after)
    this.dirMeta.push({ host: this.dir, meta: after.meta })
    if (before !== undefined && before.lower === after.lower) {
      this.openUp(this.dir)
      mapDiff(before.children, after.children, (name, was, now) => this.place(join('/', name), true, was, now, entry, name))
      return
    }
    if (before !== undefined) this.clearRoot()
    // The layer's root is never opaque (overlayfs keeps lower roots merged): an opaque workspace root
    // hides the project's entries with whiteouts instead.
    const names = new Set(after.lower === '/' ? [] : this.diskNames('/'))
    if (after.lower === '/') for (const [name] of mapEntries(after.children)) names.add(name)
    else for (const name of this.reader.names(entry)) names.add(name)
    for (const name of [...names].sort()) this.place(join('/', name), true, FRESH, mapGet(after.children, name), entry, name)
  }

  /**
   * Makes the layer at `path` show the view, given what it showed (`was`: the old tree's node, or
   * FRESH when the layer has nothing there yet) and the new tree's node. `parentMerges`: the
   * layer's parent directory is merged with the project's directory at the same path (not
   * opaque), so the project shows through where the layer has nothing.
   */
  private place(path: string, parentMerges: boolean, was: UpperNode | undefined | typeof FRESH, now: UpperNode | undefined, parent: Entry, name: string): void {
    if (was === now || (path === '/' + INODES)) return
    if (now === undefined) {
      const entry = this.reader.child(parent, name)
      this.clear(path)
      if (!entry) {
        if (parentMerges) this.whiteout(path)
      } else if (!(parentMerges && entry.node === undefined && entry.lowerPath === path)) this.materialise(entry, path, parentMerges)
      return
    }
    if (now.type === 'whiteout') {
      this.clear(path)
      if (parentMerges) this.whiteout(path)
      return
    }
    if (now.type === 'link') {
      // Written with the inode's other names once the walk is done.
      this.clear(path)
      this.linked.add(now.id)
      return
    }
    if (now.type === 'file') {
      this.putFile(path, { path, type: 'file', node: now, lowerPath: null, lowerStat: undefined }, now.meta)
      return
    }
    if (now.type === 'symlink') {
      this.clear(path)
      this.writeLink(path, now.target, now.meta)
      return
    }
    const merges = parentMerges && now.lower === path
    const entry = dirEntry(path, now)
    if (was !== FRESH && was?.type === 'dir' && was.lower === now.lower) {
      this.dirMeta.push({ host: this.host(path), meta: now.meta })
      this.openUp(this.host(path))
      mapDiff(was.children, now.children, (child, before, after) => this.place(join(path, child), merges, before, after, entry, child))
      return
    }
    this.clear(path)
    this.makeDir(path, now.meta, parentMerges && !merges && this.diskIsDir(path))
    if (merges || now.lower === null) {
      for (const [child, node] of mapEntries(now.children)) this.place(join(path, child), merges, FRESH, node, entry, child)
    } else {
      // Renamed from elsewhere (or merged with a path the layer hides): its whole view.
      for (const child of this.reader.names(entry)) this.place(join(path, child), false, FRESH, mapGet(now.children, child), entry, child)
    }
  }

  /** Writes the view's entry (and, for a directory, its whole subtree) at `path`. */
  private materialise(entry: Entry, path: string, parentMerges: boolean): void {
    if (entry.link !== undefined) {
      this.linked.add(entry.link)
      return
    }
    const meta = this.reader.meta(entry)
    if (entry.type === 'file') this.writeFile(path, entry, meta)
    else if (entry.type === 'symlink') this.writeLink(path, this.reader.readLink(entry), meta)
    else {
      this.makeDir(path, meta, parentMerges && this.diskIsDir(path))
      for (const name of this.reader.names(entry)) this.materialise(this.reader.child(entry, name)!, join(path, name), false)
    }
  }

  /**
   * Paths a flush pinned show their old state in the view while the project has the new one: where
   * the view reads them from the lower layer through merged directories, the layer gets them
   * explicitly. O(pinned paths), only once a flush has pinned any.
   */
  private writePins(lower: PinnedLower, root: DirNode): void {
    for (const path of lower.pinnedPaths()) {
      if (path === '/' || !this.readsLower(root, path) || fs.lstatSync(this.host(path), { throwIfNoEntry: false })) continue
      this.makeParents(path)
      const entry = this.reader.lookup(path, false)
      if (!entry) this.whiteout(path)
      else if (entry.type === 'dir') this.makeDir(path, this.reader.meta(entry), false)
      else this.materialise(entry, path, true)
    }
  }

  /** Inodes whose records changed since the last sync: every name shows the change. */
  private changedInodes(before: DirNode | undefined, now: DirNode): void {
    const was = before && tableOf(before)
    const is = tableOf(now)
    if (was === is || is === undefined) return
    if (was === undefined) for (const [key] of mapEntries(is.children)) this.linked.add(Number(key))
    else mapDiff(was.children, is.children, (key, _before, after) => after !== undefined && this.linked.add(Number(key)))
  }

  /**
   * The names of each inode the walk met (or whose record changed): the first written with the
   * content, the others hard links of it. O(names of those inodes).
   */
  private writeLinks(now: DirNode): void {
    if (this.linked.size === 0) return
    for (const paths of namesOf(now, this.linked).values()) {
      const [first, ...others] = paths
      const entry = this.reader.lookup(first, false)!
      const meta = this.reader.meta(entry)
      this.enterParent(first)
      if (entry.type === 'file') this.putFile(first, entry, meta)
      else {
        this.clear(first)
        this.writeLink(first, this.reader.readLink(entry), meta)
      }
      for (const path of others) {
        this.enterParent(path)
        this.clear(path)
        fs.linkSync(this.host(first), this.host(path))
        this.writes++
      }
    }
  }

  /** Lets the layer write into the directory above `path` (its mode is set back with the others). */
  private enterParent(path: string): void {
    if (this.privileged) return
    const parent = parentOf(path)
    const entry = this.reader.lookup(parent, false)
    if (entry) this.dirMeta.push({ host: this.host(parent), meta: this.reader.meta(entry) })
    this.openUp(this.host(parent))
  }

  /** Whether the view at `path` is the lower layer's `path`, through directories merged with the project's. */
  private readsLower(root: DirNode, path: string): boolean {
    let node: DirNode = root
    let at = '/'
    for (const name of path.slice(1).split('/')) {
      if (node.lower !== at) return false
      const child = mapGet(node.children, name)
      at = join(at, name)
      if (child === undefined) return true
      if (at === path || child.type !== 'dir') return false
      node = child
    }
    return false
  }

  /** The flush's staging folder in the project is not part of the view. */
  private hideStaging(root: DirNode): void {
    const path = '/' + RESERVED_PREFIX
    if (mapGet(root.children, RESERVED_PREFIX) !== undefined || !fs.lstatSync(this.project + path, { throwIfNoEntry: false })) return
    if (fs.lstatSync(this.host(path), { throwIfNoEntry: false })) return
    this.whiteout(path)
  }

  // ---- writing the layer --------------------------------------------------------------------------

  private host(path: string): string {
    return path === '/' ? this.dir : this.dir + path
  }

  private diskIsDir(path: string): boolean {
    return fs.lstatSync(this.project + path, { throwIfNoEntry: false })?.isDirectory() ?? false
  }

  private diskNames(path: string): string[] {
    try {
      return fs.readdirSync(this.project + (path === '/' ? '' : path))
    } catch {
      return []
    }
  }

  private clearRoot(): void {
    for (const name of fs.readdirSync(this.dir)) removeTree(`${this.dir}/${name}`)
  }

  private clear(path: string): void {
    const host = this.host(path)
    const stats = fs.lstatSync(host, { throwIfNoEntry: false })
    if (!stats) return
    this.writes++
    removeTree(host)
  }

  /**
   * A file at `path`, whatever the layer held there. One the layer holds alone (a regular file with
   * one link, which this process may write) is written over in place: on ext4 a truncate and a
   * write cost a third of an unlink and a create. A file the last command wrote itself is moved in
   * (`kept`), not written.
   */
  private putFile(path: string, entry: Entry, meta: Meta): void {
    const host = this.host(path)
    const stats = fs.lstatSync(host, { throwIfNoEntry: false })
    const kept = this.takeKept(entry)
    if (kept === undefined && stats?.isFile() && stats.nlink === 1 && (this.privileged || (stats.mode & 0o200) !== 0)) {
      const bytes = this.reader.readBytes(entry)
      fs.writeFileSync(host, bytes)
      layerCounters.bytesWritten += bytes.byteLength
      // chown drops set-user-ID: the mode is set again after it.
      const chowned = this.privileged && (stats.uid !== meta.uid || stats.gid !== meta.gid)
      if (chowned) fs.chownSync(host, meta.uid, meta.gid)
      if (chowned || (stats.mode & 0o7777) !== (meta.mode & 0o7777)) fs.chmodSync(host, meta.mode & 0o7777)
      fs.utimesSync(host, meta.atimeMs / 1000, meta.mtimeMs / 1000)
      this.writes++
      return
    }
    if (stats) {
      this.writes++
      removeTree(host)
    }
    this.writeFile(path, entry, meta, kept)
  }

  private writeFile(path: string, entry: Entry, meta: Meta, kept = this.takeKept(entry)): void {
    const host = this.host(path)
    if (kept !== undefined) {
      fs.renameSync(kept, host)
      layerCounters.filesMoved++
    } else {
      const bytes = this.reader.readBytes(entry)
      fs.writeFileSync(host, bytes, { mode: 0o600 })
      layerCounters.bytesWritten += bytes.byteLength
    }
    this.setMeta(host, meta)
    this.writes++
  }

  // ---- files kept from the last command -----------------------------------------------------------

  /**
   * Files the last command wrote, moved out of its upper directory before that is removed: the
   * next sync moves such a file into the layer where the workspace shows its content, instead of
   * reading the content back from the workspace and writing it again (a 512 MiB file cost the next
   * command 7 s). `hold` takes them (by the id the workspace's blob store gives their content),
   * `confirm` keeps those the workspace took in, under their blob; the next sync uses or removes them.
   */
  async hold(files: readonly HeldFile[]): Promise<void> {
    this.dropPending()
    const candidates = await this.withoutXattrs(files.filter((file) => fs.lstatSync(file.host, { bigint: true, throwIfNoEntry: false })?.ctimeNs === file.ctimeNs))
    for (const file of candidates) {
      const to = `${this.keep}/${this.keptSerial++}`
      fs.renameSync(file.host, to)
      this.pending.push({ path: file.path, blob: file.blob, size: file.size, host: to })
    }
  }

  /**
   * Keeps the held files the workspace (`view`, its tree once the command's transaction committed)
   * shows at their paths as the blob their content was stored as; the others go.
   */
  confirm(view: Overlay): void {
    for (const file of this.pending) {
      const node = view.lookup(file.path, false)?.node
      if (node?.type === 'file' && node.blob === file.blob && node.size === file.size && !this.kept.has(file.blob)) this.kept.set(file.blob, file.host)
      else removeTree(file.host)
    }
    this.pending = []
  }

  /** The kept file holding `entry`'s content, taken (a file is moved in once). */
  private takeKept(entry: Entry): string | undefined {
    const node = entry.node
    if (node?.type !== 'file' || this.kept.size === 0) return undefined
    const host = this.kept.get(node.blob)
    if (host !== undefined) this.kept.delete(node.blob)
    return host
  }

  private dropPending(): void {
    for (const file of this.pending) removeTree(file.host)
    this.pending = []
  }

  /** Kept files no sync moved in: only the sync right after their command uses them. */
  private dropKept(): void {
    for (const host of this.kept.values()) removeTree(host)
    this.kept.clear()
  }

  /**
   * The files that carry no extended attributes but overlayfs's own (removed here: the layer is a
   * lower layer to the next mount) and a security label: one a command gave others (setfattr, an
   * ACL, a capability) is written from the workspace, which does not hold them.
   */
  private async withoutXattrs<T extends { host: string }>(files: T[]): Promise<T[]> {
    // getfattr escapes names with other bytes (as \\ooo): such a file is not kept.
    const byHost = new Map(files.filter((file) => /^[\x20-\x5b\x5d-\x7e]*$/.test(file.host)).map((file) => [file.host, file]))
    if (byHost.size === 0) return []
    const kept: T[] = []
    const strip = new Map<string, string[]>()
    for (const batch of batches([...byHost.keys()])) {
      const result = await run(this.tools.getfattr, ['--absolute-names', '-h', '-d', '-m', '-', '-e', 'hex', '--', ...batch])
      if (result.code !== 0) return []
      const names = new Map<string, string[]>()
      let current: string[] | undefined
      for (const line of result.stdout.split('\n')) {
        if (line.startsWith('# file: ')) names.set(line.slice(8), (current = []))
        else if (current && line !== '') current.push(line.split('=', 1)[0])
      }
      for (const host of batch) {
        const file = byHost.get(host)!
        const found = names.get(host)
        if (found === undefined) {
          kept.push(file) // getfattr lists a file only when it has some
          continue
        }
        // A metadata-only copy-up (metacopy=on) holds a hole where its content would be: never
        // moved into the layer, where it would show as that hole (the read-back holds none, this
        // is the last guard). overlayfs's other xattrs (origin, a rename's redirect) are stripped.
        if (found.some((name) => !(name.startsWith(this.overlayXattr) && name !== `${this.overlayXattr}metacopy`) && name !== 'security.selinux')) continue
        for (const name of found.filter((name) => name.startsWith(this.overlayXattr))) {
          const list = strip.get(name) ?? []
          list.push(file.host)
          strip.set(name, list)
        }
        kept.push(file)
      }
    }
    for (const [name, hosts] of strip) {
      for (const batch of batches(hosts)) {
        const result = await run(this.tools.setfattr, ['-h', '-x', name, '--', ...batch])
        if (result.code !== 0) return []
      }
    }
    return kept
  }

  private writeLink(path: string, target: string, meta: Meta): void {
    const host = this.host(path)
    fs.symlinkSync(hostTarget(target, this.project, (at) => this.reader.lookup(at, true) !== undefined), host)
    if (this.privileged) fs.lchownSync(host, meta.uid, meta.gid)
    fs.lutimesSync(host, meta.atimeMs / 1000, meta.mtimeMs / 1000)
    this.writes++
  }

  private makeDir(path: string, meta: Meta, opaque: boolean): void {
    const host = this.host(path)
    fs.mkdirSync(host, { mode: 0o700 })
    if (opaque) this.opaque.push(host)
    this.dirMeta.push({ host, meta })
    this.writes++
  }

  /** Directories above a pinned path, as plain (merged) directories with the view's metadata. */
  private makeParents(path: string): void {
    const parts = path.slice(1).split('/').slice(0, -1)
    let at = '/'
    for (const name of parts) {
      at = join(at, name)
      if (fs.lstatSync(this.host(at), { throwIfNoEntry: false })) {
        this.openUp(this.host(at))
        continue
      }
      const entry = this.reader.lookup(at, false)
      if (entry?.type !== 'dir') return
      this.makeDir(at, this.reader.meta(entry), false)
    }
  }

  private whiteout(path: string): void {
    this.whiteouts.push(this.host(path))
    this.writes++
  }

  /**
   * Every whiteout is a hard link of one made with mknod (as overlayfs does itself): one process
   * per session, not one per whiteout; a new template when a file system's link limit is reached.
   */
  private async linkWhiteouts(): Promise<void> {
    for (const host of this.whiteouts) {
      for (;;) {
        this.template ??= await this.makeTemplate()
        try {
          fs.linkSync(this.template, host)
          break
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'EEXIST') break // written twice in one sync (a pinned path the tree also removes)
          if (code !== 'EMLINK') throw error
          this.template = undefined
        }
      }
    }
  }

  private async makeTemplate(): Promise<string> {
    const path = `${this.templates}/whiteout-${this.templateSerial++}`
    const made = await run(this.tools.mknod, [path, 'c', '0', '0'])
    if (made.code !== 0) throw Object.assign(new Error(`rewindfs: exec: cannot make a whiteout (mknod: ${made.stderr.trim()})`), { code: 'ENOTSUP' })
    return path
  }

  private async setOpaque(): Promise<void> {
    for (const batch of batches(this.opaque)) {
      const result = await run(this.tools.setfattr, ['-n', this.opaqueXattr, '-v', 'y', '--', ...batch])
      if (result.code !== 0) throw new Error(`rewindfs: exec: cannot mark directories opaque (setfattr: ${result.stderr.trim()})`)
    }
  }

  /** A directory the layer writes into must let its owner in (a non-root user is bound by modes). */
  private openUp(host: string): void {
    if (this.privileged) return
    const mode = fs.lstatSync(host).mode & 0o7777
    if ((mode & 0o700) !== 0o700) fs.chmodSync(host, mode | 0o700)
  }

  /** Owner (root only; before the mode, as chown drops set-user-ID), mode and times (to the microsecond: seconds as a float). */
  private setMeta(host: string, meta: Meta): void {
    if (this.privileged) fs.chownSync(host, meta.uid, meta.gid)
    fs.chmodSync(host, meta.mode & 0o7777)
    fs.utimesSync(host, meta.atimeMs / 1000, meta.mtimeMs / 1000)
  }
}
