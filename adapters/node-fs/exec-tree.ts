/**
 * Copy mode's round trip through a real directory. `materialise` writes the workspace's current
 * view into a host directory and remembers, per path, what it wrote (host stats to the nanosecond,
 * a content hash or the lower file it cloned); `scan` walks the directory after the command and
 * turns what differs into edits for one transaction. `apply` lands a Scan (copy mode's or overlay
 * mode's, see exec-readback.ts) in a transaction's staging fs.
 *
 * Owners: as root the copy carries the view's owners and groups, so a command sees them and its
 * chown comes back; a normal user cannot give its files away, so the copy is the user's and only
 * what the command itself changed there is read back (the workspace keeps the owners it had).
 */
import crypto from 'node:crypto'
import type { BigIntStats, Stats } from 'node:fs'
import { hostFs as fs } from './host-fs.js'
import { openPrivateDirectory, readNames, readPrivateFile } from './exec-files.js'
import { Confinement } from './confine.js'
import type { NodeFs } from 'rewindfs'

type Kind = 'file' | 'dir' | 'symlink'

/** An owner and group, as a command left them. */
export interface Owner {
  readonly uid: number
  readonly gid: number
}

const ownerOf = (stats: BigIntStats): Owner => ({ uid: Number(stats.uid), gid: Number(stats.gid) })
const sameOwner = (a: BigIntStats, b: BigIntStats) => a.uid === b.uid && a.gid === b.gid

/** A path as materialised: how it looked on the host right after, so any later change shows. */
interface Written {
  readonly kind: Kind
  readonly mode: number
  stats?: BigIntStats
  /** Files written from the workspace's bytes: their SHA-1. */
  readonly sha1?: string
  /** Files cloned from the lower directory: the host path they came from. */
  readonly clonedFrom?: string
  /**
   * Files cloned from the lower directory: that file's inode, size, mtime and ctime before the
   * clone. While it still has them its bytes are what the copy got; once changed (a person's edit
   * while the command ran) it no longer tells what the copy held.
   */
  readonly clonedStamp?: string
  /** Symlinks: the target as written on the host. */
  readonly target?: string
  /** Names of one workspace inode (hard links): its id; they were written as hard links of one file. */
  readonly link?: number
  /**
   * Names of one lower file (hard links in the project the workspace shows unchanged): its inode
   * number on disk; they were written as hard links of one file, as the command sees them on disk.
   */
  readonly lowerLink?: number
  /**
   * A lower file or directory this user cannot read (a root-owned 0600 file, a 0700 directory):
   * written as an empty stand-in with no permissions, which the command cannot read either. Read
   * back only if the command put something else in its place.
   */
  readonly standIn?: true
  /**
   * A lower file of the user's own that its mode keeps from the user (mode 000), copied through a
   * user namespace (`Manifest.refused`): the workspace cannot read it either, so a change of its
   * mode or times comes back with its content.
   */
  readonly unreadable?: true
}

/** A stand-in for a file of the user's own that a user namespace may read (its ids map there). */
export interface Refused {
  readonly path: string
  /** The stand-in in the copy. */
  readonly host: string
  /** The file in the lower directory. */
  readonly from: string
  readonly stats: Stats
}

/** Whether `error` is a permission refusal (what an unprivileged copy meets at a file it may not read). */
function isRefusal(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'EACCES'
}

export interface Manifest {
  /** The host directory standing for the workspace's '/'. */
  readonly root: string
  readonly written: Map<string, Written>
  /** The host clock (ctime of a file made after materialising): a path whose ctime is not older is compared by content. */
  readonly since: bigint
  /** Stand-ins that `fillRefused` may replace with the file's content. */
  readonly refused: Refused[]
}

/** Where a lower directory's unchanged files can be cloned from instead of copied out of memory. */
export interface CloneSource {
  /** Real path of the lower directory. */
  readonly root: string
  /** Workspace paths whose upper layer differs from the lower (ws.changes()). */
  readonly changed: ReadonlySet<string>
}

/** `owner`: the owner and group the command left, where they are read back (else the workspace's stay). */
export type Edit =
  | { readonly op: 'dir'; readonly path: string; readonly mode: number; readonly owner?: Owner }
  /** Removes a subtree at this point of the order (overlay mode: a delete under a renamed directory). */
  | { readonly op: 'remove'; readonly path: string }
  /** Puts the directory stashed as `stash[source]` at `path`, replacing what is there (a renamed directory). */
  | { readonly op: 'place'; readonly path: string; readonly source: number }
  /** A directory's new mode or owner, or a symlink's new owner (`mode` undefined: it stays). */
  | { readonly op: 'meta'; readonly path: string; readonly mode?: number; readonly owner?: Owner }
  | { readonly op: 'symlink'; readonly path: string; readonly target: string; readonly owner?: Owner }
  /** A file made or changed: `content` undefined when only its mode, times or owner changed. */
  | { readonly op: 'file'; readonly path: string; readonly content: Uint8Array | undefined; readonly mode: number; readonly mtimeMs: number; readonly owner?: Owner }
  /** A hard link the command made: `path` (replaced if there) becomes another name of `existing`'s inode. */
  | { readonly op: 'link'; readonly path: string; readonly existing: string }

export interface Scan {
  added: string[]
  modified: string[]
  deleted: string[]
  /** FIFOs, sockets and devices the command made, and names that are not UTF-8: a workspace cannot hold them. */
  skipped: string[]
  /** Subtrees to remove first (topmost only), then the edits in order (parents before children). */
  removals: string[]
  edits: Edit[]
  /** Directories moved aside before anything else (renamed directories' sources), for 'place' edits. */
  stash?: string[]
}

/** What a command whose writes are discarded hands back: nothing. */
export function emptyScan(): Scan {
  return { added: [], modified: [], deleted: [], skipped: [], removals: [], edits: [] }
}

const join = (dir: string, name: string) => (dir === '/' ? '/' + name : `${dir}/${name}`)
const sha1 = (data: Uint8Array) => crypto.createHash('sha1').update(data).digest('hex')

/**
 * A workspace link's target as a command on the host sees it. The workspace reads an absolute
 * target from its own '/', which on the host is `root`, unless the workspace holds nothing there
 * and the host does: a system path a command linked to (a Python venv's `bin/python3 ->
 * /usr/bin/python3`), which the workspace cannot hold, stays as the command wrote it, so the venv
 * works in the next command too.
 */
export function hostTarget(target: string, root: string, holds: (path: string) => boolean): string {
  if (!target.startsWith('/')) return target
  return holds(target) || !fs.existsSync(target) ? root + target : target
}

/**
 * How a link target a command wrote reads in the workspace: one under the copy's `root` as the
 * workspace path it names; any other as the lower source reads such a target on disk (`shown`: a
 * directory lower maps its root's real path and the path it was opened by), which keeps the two
 * modes alike, as overlay mode runs at the project's own path.
 */
function linkTargets(root: string, shown: (target: string) => string): (target: string) => string {
  const copy = new Confinement(root)
  return (target) => (target.startsWith('/') ? copy.targetInside(target) : undefined) ?? shown(target)
}

function kindOf(stats: Stats | BigIntStats): Kind | undefined {
  if (stats.isFile()) return 'file'
  if (stats.isDirectory()) return 'dir'
  if (stats.isSymbolicLink()) return 'symlink'
  return undefined
}

/** A lower file's inode, size, mtime and ctime: what moves with any change of it. */
const stampOf = (stats: Stats) => `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`

/**
 * The lower file behind `path`, if the view shows exactly it: not changed in the upper layer, the
 * same inode, size and mtime on disk, and no symlink among the host directories on the way (so the
 * clone cannot be led outside the lower directory); and its stamp (stampOf) as it is before the clone.
 */
function cloneable(source: CloneSource, path: string, view: Stats, realDirs: Map<string, boolean>): { from: string; stamp: string } | undefined {
  if (source.changed.has(path)) return undefined
  const host = source.root + path
  const dir = host.slice(0, host.lastIndexOf('/'))
  let direct = realDirs.get(dir)
  if (direct === undefined) {
    try {
      direct = fs.realpathSync.native(dir) === dir
    } catch {
      direct = false
    }
    realDirs.set(dir, direct)
  }
  if (!direct) return undefined
  const disk = fs.lstatSync(host, { throwIfNoEntry: false })
  if (!disk?.isFile() || disk.ino !== view.ino || disk.size !== view.size || disk.mtimeMs !== view.mtimeMs) return undefined
  return { from: host, stamp: stampOf(disk) }
}

/**
 * Writes the view of `view` into `root` (which must not exist) and returns what it wrote. Lower
 * files the view shows unchanged are cloned with FICLONE (copy-on-write where the file system
 * has reflinks, a plain copy elsewhere): a distinct inode either way, so nothing the command does
 * reaches the lower directory. Hard links would share the inode: `echo >> file` would write
 * straight into the lower layer, and read-only modes do not stop root. Names of one workspace inode
 * (`linkOf` gives its id) are written as hard links of one file in the copy, so the command sees
 * them linked; so are the names of one lower file the view shows unchanged (hard links in the
 * project), as the command would see them on disk: a clone of the first, the others linked to it.
 * `shownAt`: where the command will see the copy (the project's path, where the copy is mounted
 * there), which absolute link targets into the workspace name; default `root`.
 */
export function materialise(view: NodeFs, root: string, clock: string, lower: CloneSource | undefined, linkOf?: (path: string) => number | undefined, shownAt = root): Manifest {
  const written = new Map<string, Written>()
  /** `mode`: a stand-in's, instead of the directory's own. */
  const dirs: { path: string; stats: Stats; mode?: number }[] = []
  const realDirs = new Map<string, boolean>()
  /** The first name written of each workspace inode (by id) or lower file (by inode number); the others are linked to it. */
  const firstName = new Map<number, { host: string; origin: { sha1: string } }>()
  const firstLowerName = new Map<number, { host: string }>()
  const linkedPaths: string[] = []
  const uid = process.getuid?.()
  const gid = process.getgid?.()
  // Root gives the copy the view's owners (chown before chmod: it drops set-user-ID); a normal user cannot.
  const own = (host: string, stats: Stats) => {
    if (uid === 0 && (stats.uid !== uid || stats.gid !== gid)) fs.lchownSync(host, stats.uid, stats.gid)
  }
  const refused: Refused[] = []
  const visit = (path: string) => {
    const stats = view.lstatSync(path)
    const host = root + (path === '/' ? '' : path)
    const mode = stats.mode & 0o7777
    if (stats.isDirectory()) {
      // Owner-writable until its children are in; the real mode is set afterwards.
      fs.mkdirSync(host, { mode: 0o700 })
      let names: string[]
      try {
        names = view.readdirSync(path)
      } catch (error) {
        if (!isRefusal(error)) throw error
        written.set(path, { kind: 'dir', mode: 0, standIn: true })
        dirs.push({ path, stats, mode: 0 })
        return
      }
      written.set(path, { kind: 'dir', mode })
      dirs.push({ path, stats })
      for (const name of names.sort()) visit(join(path, name))
    } else if (stats.isSymbolicLink()) {
      const target = hostTarget(view.readlinkSync(path), shownAt, (at) => view.existsSync(at))
      fs.symlinkSync(target, host)
      own(host, stats)
      written.set(path, { kind: 'symlink', mode, target, stats: fs.lstatSync(host, { bigint: true }) })
    } else {
      const link = linkOf?.(path)
      const first = link === undefined ? undefined : firstName.get(link)
      if (link !== undefined) linkedPaths.push(path)
      if (first !== undefined) {
        fs.linkSync(first.host, host)
        written.set(path, { kind: 'file', mode, ...first.origin, link })
        return
      }
      const clone = link === undefined && lower ? cloneable(lower, path, stats, realDirs) : undefined
      // A lower file with other names: the names the view shows unchanged are one file in the copy.
      const lowerLink = clone !== undefined && stats.nlink > 1 ? stats.ino : undefined
      const firstLower = lowerLink === undefined ? undefined : firstLowerName.get(lowerLink)
      if (firstLower !== undefined) {
        fs.linkSync(firstLower.host, host)
        written.set(path, { kind: 'file', mode, clonedFrom: clone!.from, clonedStamp: clone!.stamp, lowerLink })
        linkedPaths.push(path)
        return
      }
      let origin: { clonedFrom: string; clonedStamp: string } | { sha1: string }
      try {
        if (clone) {
          fs.copyFileSync(clone.from, host, fs.constants.COPYFILE_FICLONE)
          origin = { clonedFrom: clone.from, clonedStamp: clone.stamp }
        } else {
          const data = view.readFileSync(path)
          fs.writeFileSync(host, data, { mode: 0o600 })
          origin = { sha1: sha1(data) }
        }
      } catch (error) {
        if (!isRefusal(error)) throw error
        fs.rmSync(host, { force: true })
        fs.writeFileSync(host, '', { mode: 0 })
        fs.utimesSync(host, stats.atime, stats.mtime)
        written.set(path, { kind: 'file', mode: 0, standIn: true, stats: fs.lstatSync(host, { bigint: true }) })
        if (lower && stats.uid === uid && stats.gid === gid) refused.push({ path, host, from: lower.root + path, stats })
        return
      }
      own(host, stats)
      fs.chmodSync(host, mode)
      fs.utimesSync(host, stats.atime, stats.mtime)
      written.set(path, { kind: 'file', mode, ...origin, ...(link !== undefined ? { link } : {}), ...(lowerLink !== undefined ? { lowerLink } : {}), stats: fs.lstatSync(host, { bigint: true }) })
      if (link !== undefined) firstName.set(link, { host, origin: origin as { sha1: string } })
      if (lowerLink !== undefined) {
        firstLowerName.set(lowerLink, { host })
        linkedPaths.push(path)
      }
    }
  }
  visit('/')
  // Linking changes an inode's ctime: each name's stats are taken once all are made.
  for (const path of linkedPaths) written.get(path)!.stats = fs.lstatSync(root + path, { bigint: true })
  // Children before their parent: a directory's mode and times are set once nothing more is made
  // in it, and while its parent can still be searched (even if its own mode forbids that).
  for (const { path, stats, mode } of dirs.reverse()) {
    const host = root + (path === '/' ? '' : path)
    own(host, stats)
    fs.chmodSync(host, mode ?? stats.mode & 0o7777)
    fs.utimesSync(host, stats.atime, stats.mtime)
    written.get(path)!.stats = fs.lstatSync(host, { bigint: true })
  }
  fs.writeFileSync(clock, '')
  return { root, written, since: fs.lstatSync(clock, { bigint: true }).ctimeNs, refused }
}

/**
 * Stand-ins of the user's own unreadable files become the files: `copy` wrote their contents into
 * the stand-ins (through a user namespace, where the user's files are root's to read) and says
 * which it could; those get the file's mode and times back. The command then sees them as on disk
 * (and as overlayfs shows them): refused until it changes their mode.
 */
export async function fillRefused(manifest: Manifest, copy: (pairs: readonly Refused[]) => Promise<boolean[]>): Promise<void> {
  if (manifest.refused.length === 0) return
  const copied = await copy(manifest.refused)
  manifest.refused.forEach((file, index) => {
    if (!copied[index]) return
    const data = readPrivateFile(file.host)
    fs.chmodSync(file.host, file.stats.mode & 0o7777)
    fs.utimesSync(file.host, file.stats.atime, file.stats.mtime)
    manifest.written.set(file.path, { kind: 'file', mode: file.stats.mode & 0o7777, sha1: sha1(data), unreadable: true, stats: fs.lstatSync(file.host, { bigint: true }) })
  })
}

/**
 * Whether the file at `host` holds what was written there (asked when its stats changed, or were
 * taken in the clock's own tick). A clone is compared with its lower file while that is as it was
 * cloned; changed since (a person's edit while the command ran), it no longer tells: the copy holds
 * what was written when its own stats are as written (`asWritten`).
 */
function sameContent(host: string, before: Written, asWritten: boolean): boolean {
  if (before.sha1 === undefined) {
    let lower: Stats | undefined
    try {
      lower = fs.lstatSync(before.clonedFrom!, { throwIfNoEntry: false })
    } catch {
      lower = undefined
    }
    if (lower === undefined || stampOf(lower) !== before.clonedStamp) return asWritten
  }
  const data = readPrivateFile(host)
  if (before.sha1 !== undefined) return sha1(data) === before.sha1
  try {
    return Buffer.compare(data, fs.readFileSync(before.clonedFrom!)) === 0
  } catch {
    return false
  }
}

/**
 * Walks `manifest.root` and says what the command changed. A file whose inode, size, mtime and
 * ctime are as written (and whose ctime is older than the clock, so a write in the same clock tick
 * cannot hide) is unchanged without being read; otherwise same-size contents are compared. An
 * owner or group other than the one written is read back: the command changed it.
 */
export function scan(manifest: Manifest, maxFileSize: number, shown: (target: string) => string = (target) => target): Scan {
  const { root, written } = manifest
  const linkTarget = linkTargets(root, shown)
  const out: Scan = { added: [], modified: [], deleted: [], skipped: [], removals: [], edits: [] }
  const seen = new Set<string>()
  const links = new LinkGroups()
  const create = (path: string, host: string, kind: Kind, stats: BigIntStats) => {
    const mode = Number(stats.mode) & 0o7777
    const owner = ownerOf(stats)
    if (kind === 'dir') out.edits.push({ op: 'dir', path, mode, owner })
    else if (kind === 'symlink') out.edits.push({ op: 'symlink', path, target: linkTarget(fs.readlinkSync(host, 'utf8')), owner })
    else out.edits.push({ op: 'file', path, content: readPrivateFile(host), mode, mtimeMs: Number(stats.mtimeNs / 1_000_000n), owner })
  }
  const visit = (path: string) => {
    const host = root + (path === '/' ? '' : path)
    const stats = fs.lstatSync(host, { bigint: true })
    const kind = kindOf(stats)
    const before = written.get(path)
    if (!kind) {
      out.skipped.push(path)
      return // left unseen: what was there before counts as deleted
    }
    if (kind === 'file' && stats.size > maxFileSize) {
      // The workspace cannot hold it (over 2 GiB, or its own limit): not read, and what it had there stays.
      out.skipped.push(path)
      for (const at of written.keys()) if (at === path || at.startsWith(path + '/')) seen.add(at)
      return
    }
    seen.add(path)
    const mode = Number(stats.mode) & 0o7777
    const edits = out.edits.length
    if (!before) {
      out.added.push(path)
      create(path, host, kind, stats)
    } else if (
      before.kind !== kind ||
      (kind === 'symlink' && fs.readlinkSync(host) !== before.target) ||
      ((before.link !== undefined || before.lowerLink !== undefined || before.standIn) && stats.ino !== before.stats!.ino)
    ) {
      // Replaced by another type, another link, or (a name of a shared inode) by a file of its own:
      // remove, then make anew.
      out.modified.push(path)
      out.removals.push(path)
      create(path, host, kind, stats)
    } else {
      const old = before.stats!
      const owner = sameOwner(stats, old) ? undefined : ownerOf(stats)
      if (kind !== 'file') {
        if (mode !== before.mode || owner) {
          out.modified.push(path)
          out.edits.push({ op: 'meta', path, mode: kind === 'dir' && mode !== before.mode ? mode : undefined, owner })
        }
      } else if (!before.standIn) {
        const asWritten = stats.ino === old.ino && stats.size === old.size && stats.mtimeNs === old.mtimeNs && stats.ctimeNs === old.ctimeNs
        if (!(asWritten && old.ctimeNs < manifest.since)) {
          const contentChanged = stats.size !== old.size || !sameContent(host, before, asWritten)
          if (contentChanged || mode !== before.mode || stats.mtimeNs !== old.mtimeNs || owner) {
            out.modified.push(path)
            // The workspace cannot copy up a file it may not read: a change of its mode comes with its content.
            out.edits.push({ op: 'file', path, content: contentChanged || before.unreadable ? readPrivateFile(host) : undefined, mode, mtimeMs: Number(stats.mtimeNs / 1_000_000n), owner })
          }
        }
      }
    }
    // A name of a lower file the command left unchanged is that lower file still (quiet): it anchors
    // names linked to it, but is not made a workspace inode itself.
    if (kind === 'file' && stats.nlink > 1n) links.add(stats.ino, path, before?.link, before?.lowerLink !== undefined && out.edits.length === edits)
    if (kind === 'dir') {
      openPrivateDirectory(host, mode)
      const { names, undecodable } = readNames(host)
      for (const name of undecodable) out.skipped.push(join(path, name))
      for (const name of names.sort()) visit(join(path, name))
    }
  }
  // The command may remove the directory it ran in, root included: the workspace's root stays, empty.
  if (fs.lstatSync(root, { throwIfNoEntry: false })?.isDirectory()) visit('/')
  else seen.add('/')
  const replaced = new Set(out.removals)
  for (const path of written.keys()) {
    if (seen.has(path)) continue
    out.deleted.push(path)
    const parent = path.slice(0, path.lastIndexOf('/')) || '/'
    // Only the topmost removed path: removing it takes its subtree along.
    if (seen.has(parent) && !replaced.has(parent)) out.removals.push(path)
  }
  links.apply(out, (path) => written.has(path))
  for (const list of [out.added, out.modified, out.deleted, out.skipped]) list.sort()
  return out
}

/**
 * Hard links a command left (files sharing an inode, by the inode number it found): each group
 * becomes names of one workspace inode. The anchor is a name of a lower file the command left
 * unchanged (quiet: it stays that lower file, and is never relinked), else one that already is one
 * of a workspace inode's, else the first; every other name not already of that inode drops its
 * file edits and is linked to the anchor, after everything else is made. A group of quiet names
 * only (a lower file's names, unchanged) stays as it is.
 */
export class LinkGroups {
  private readonly groups = new Map<bigint, { path: string; link: number | undefined; quiet: boolean }[]>()

  /** A file with more than one name; `link`: the workspace inode its name was before the command. */
  add(ino: bigint, path: string, link: number | undefined, quiet = false): void {
    const group = this.groups.get(ino)
    if (group) group.push({ path, link, quiet })
    else this.groups.set(ino, [{ path, link, quiet }])
  }

  /** Rewrites the scan's edits; `existed`: whether the workspace had the path before. */
  apply(scan: Scan, existed: (path: string) => boolean): void {
    const linked: Edit[] = []
    const relinked = new Set<string>()
    for (const group of this.groups.values()) {
      if (group.length < 2 || group.every((member) => member.quiet)) continue
      group.sort((a, b) => (a.path < b.path ? -1 : 1))
      const anchor = group.find((member) => member.quiet) ?? group.find((member) => member.link !== undefined) ?? group[0]
      for (const member of group) {
        if (member === anchor || member.quiet || (member.link !== undefined && member.link === anchor.link)) continue
        relinked.add(member.path)
        linked.push({ op: 'link', path: member.path, existing: anchor.path })
        if (existed(member.path) && !scan.modified.includes(member.path)) scan.modified.push(member.path)
      }
    }
    if (relinked.size === 0) return
    scan.edits = scan.edits.filter((edit) => !(edit.op === 'file' && relinked.has(edit.path)))
    scan.edits.push(...linked)
  }
}

/**
 * The owner and group a command left, where they differ from the staging fs's (a file it made
 * belongs to the process already). Set before the mode: chown drops set-user-ID, as Linux's does.
 */
function setOwner(target: NodeFs, path: string, owner: Owner | undefined): void {
  if (owner === undefined) return
  const now = target.lstatSync(path)
  if (now.uid !== owner.uid || now.gid !== owner.gid) target.lchownSync(path, owner.uid, owner.gid)
}

/** Applies a scan's edits to a staging fs (a transaction's). */
export function apply(target: NodeFs, result: Scan): void {
  // Renamed directories' sources move aside first (deepest first, so a source inside another one
  // goes with its own name), before anything is removed or made where they land.
  const stash = result.stash ?? []
  const temps: string[] = []
  for (let index = 0; index < stash.length; index++) {
    let temp: string
    do temp = `/.rewindfs-exec-move-${index}-${Math.random().toString(36).slice(2, 8)}`
    while (target.existsSync(temp))
    temps.push(temp)
  }
  const order = stash.map((_, index) => index).sort((a, b) => stash[b].split('/').length - stash[a].split('/').length)
  for (const index of order) target.renameSync(stash[index], temps[index])
  for (const path of result.removals) target.rmSync(path, { recursive: true, force: true })
  for (const edit of result.edits) {
    if (edit.op === 'remove') target.rmSync(edit.path, { recursive: true, force: true })
    else if (edit.op === 'place') {
      target.rmSync(edit.path, { recursive: true, force: true })
      target.renameSync(temps[edit.source], edit.path)
    } else if (edit.op === 'dir') {
      target.mkdirSync(edit.path)
      setOwner(target, edit.path, edit.owner)
      target.chmodSync(edit.path, edit.mode)
    } else if (edit.op === 'meta') {
      setOwner(target, edit.path, edit.owner)
      if (edit.mode !== undefined) target.chmodSync(edit.path, edit.mode)
    } else if (edit.op === 'symlink') {
      target.symlinkSync(edit.target, edit.path)
      setOwner(target, edit.path, edit.owner)
    } else if (edit.op === 'link') {
      target.rmSync(edit.path, { recursive: true, force: true })
      target.linkSync(edit.existing, edit.path)
    } else {
      if (edit.content) target.writeFileSync(edit.path, edit.content)
      setOwner(target, edit.path, edit.owner)
      target.chmodSync(edit.path, edit.mode)
      // The command's times, so make and friends see what they left.
      const mtime = new Date(edit.mtimeMs)
      target.utimesSync(edit.path, mtime, mtime)
    }
  }
}
