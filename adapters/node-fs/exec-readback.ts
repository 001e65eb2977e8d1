/**
 * Overlay mode's take-back: the command ran with a fresh, empty upper directory over (exec layer +
 * project), so that directory holds exactly what the command changed, in overlayfs's format: new
 * and copied-up files, symlinks and directories, whiteouts (deletes), opaque directories (a
 * directory replaced) and, as root with redirect_dir=on, renamed directories (a redirect xattr
 * naming the source). Reading it back costs O(entries the command changed); the workspace view the
 * command started from (`before`) says what each entry replaced. The result is a Scan for apply().
 * Hard links: files of the upper directory that share an inode become names of one workspace inode
 * (LinkGroups); a name of a workspace inode that the upper directory holds with one link is a file
 * of its own now (replaced, or copied up without the index: the command saw it apart).
 *
 * Metadata-only copy-up (root, metacopy=on): a chmod, chown or `touch -c` leaves an upper file that
 * carries the `metacopy` xattr and only the new metadata; its content is the lower file it came
 * from (at its own path, or where its `redirect` xattr names: a renamed file), which the upper
 * directory holds only as a hole of that length. Such a file is read back as a change of mode,
 * owner or times, its content never read; it is taken from the view only where it lands on another
 * path (a rename). Once the command writes to it, overlayfs copies the data up and drops the xattr:
 * an ordinary file again.
 */
import type { BigIntStats } from 'node:fs'
import { hostFs as fs } from './host-fs.js'
import type { Entry, Overlay } from 'rewindfs/adapter-kit'
import { RESERVED_PREFIX, isReserved } from './confine.js'
import { batches, openPrivateDirectory, readNames, readPrivateFile } from './exec-files.js'
import { run } from './exec-support.js'
import { type Edit, LinkGroups, type Owner, type Scan } from './exec-tree.js'

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0

/** Content read to compare or to take (readbackCounters). */
function counted(bytes: Uint8Array): Uint8Array {
  readbackCounters.bytesRead += bytes.byteLength
  return bytes
}

/** Content the workspace is given to store (readbackCounters). */
function taken(bytes: Uint8Array): Uint8Array {
  readbackCounters.contentsTaken++
  return bytes
}

const join = (dir: string, name: string) => (dir === '/' ? '/' + name : `${dir}/${name}`)

type Kind = 'file' | 'dir' | 'symlink' | 'whiteout' | 'other'

interface UpperEntry {
  readonly name: string
  readonly path: string
  readonly host: string
  readonly stats: BigIntStats
  readonly kind: Kind
  children?: Map<string, UpperEntry>
  opaque?: boolean
  redirect?: string
  /** Copied up as metadata only: the content is the lower file's (ReadbackOptions.metacopy). */
  metacopy?: boolean
}

/**
 * What read-backs in this process did, for tests and probes: bytes of file content read (from the
 * upper directory or the view, to compare or to take) and files whose content the workspace was
 * given to store. A command that changed only metadata costs neither.
 */
export const readbackCounters = { bytesRead: 0, contentsTaken: 0 }

export interface ReadbackOptions {
  /** The command's upper directory. */
  readonly upper: string
  /** A read-only view of the tree the command started from (what the exec layer showed). */
  readonly before: Overlay
  /** The project directory's real path (the lowerdir and the mount point). */
  readonly project: string
  /**
   * A link target the command wrote as the workspace reads it: the lower source's own mapping
   * (DirectorySource.shownTarget), which knows the project's real path and the path it was opened by.
   */
  readonly shownTarget: (target: string) => string
  /** 'trusted.overlay.' as root, 'user.overlay.' in a user namespace. */
  readonly xattr: string
  readonly getfattr: string
  /** Whether renamed directories can carry a redirect (root, redirect_dir=on). */
  readonly redirects: boolean
  /** Whether the overlay copied up metadata only (root, metacopy=on): upper files may carry no content. */
  readonly metacopy?: boolean
  /**
   * Whether owners are read back (root: the layer carries the view's, so one that differs is the
   * command's chown). In a user namespace only the user's own ids exist: a command cannot change them.
   */
  readonly owners: boolean
  /** Files larger than this are skipped, not read: the workspace keeps what it had there. */
  readonly maxFileSize: number
  /**
   * overlayfs's index directory (root, index=on): a file copied up through it was every name of its
   * lower file for the command, so the project's other names of that file changed with it.
   */
  readonly index?: string
  /** Files of at least this size whose content the workspace takes are listed (`written`), for the exec layer to hold. */
  readonly hold?: number
}

/** A file of the upper directory whose content (`bytes`) the workspace takes at `path`. */
export interface WrittenFile {
  readonly path: string
  readonly host: string
  readonly bytes: Uint8Array
  readonly ctimeNs: bigint
}

function kindOf(stats: BigIntStats): Kind {
  if (stats.isFile()) return 'file'
  if (stats.isDirectory()) return 'dir'
  if (stats.isSymbolicLink()) return 'symlink'
  if (stats.isCharacterDevice() && stats.rdev === 0n) return 'whiteout'
  return 'other'
}

/** Whole milliseconds, as copy mode records them. */
const mtimeOf = (stats: BigIntStats) => Number(stats.mtimeNs / 1_000_000n)
/** Times closer than this are the same: the layer writes them from float milliseconds. */
const sameTime = (a: number, b: number) => Math.abs(a - b) < 1
const ownerOf = (stats: BigIntStats): Owner => ({ uid: Number(stats.uid), gid: Number(stats.gid) })

export async function readBack(options: ReadbackOptions): Promise<{ scan: Scan; entries: number; written: WrittenFile[] }> {
  const reader = new Readback(options)
  const root = reader.load()
  await reader.readXattrs()
  reader.walkRoot(root)
  await reader.linkLowerNames(root)
  return { scan: reader.result(), entries: reader.entries, written: reader.written }
}

/**
 * The project's names of the given inodes, as workspace paths: one `find` over the project, run
 * only when a command changed a lower file through the index. On its own file system only
 * (overlayfs shows no mount below its lower directory), the flush's staging area left out; a
 * directory it may not read ends it with status 1, not the rest.
 */
async function projectNames(project: string, inodes: readonly number[]): Promise<Map<number, string[]>> {
  const found = new Map<number, string[]>()
  const tests = inodes.flatMap((ino, i) => [...(i > 0 ? ['-o'] : []), '-inum', String(ino)])
  const result = await run('find', [project, '-xdev', '(', '-name', RESERVED_PREFIX, '-o', '-name', `${RESERVED_PREFIX}.*`, ')', '-prune', '-o', '-type', 'f', '(', ...tests, ')', '-print0'])
  for (const host of result.stdout.split('\0')) {
    if (!host.startsWith(project + '/')) continue
    const ino = fs.lstatSync(host, { throwIfNoEntry: false })?.ino
    if (ino === undefined) continue
    const names = found.get(ino)
    const path = host.slice(project.length)
    if (names) names.push(path)
    else found.set(ino, [path])
  }
  return found
}

class Readback {
  entries = 0
  /** Directories that can carry overlayfs's xattrs. */
  private readonly dirs: UpperEntry[] = []
  /** Files that can carry overlayfs's metacopy and redirect xattrs (metacopy=on). */
  private readonly files: UpperEntry[] = []
  private readonly added = new Set<string>()
  private readonly modified = new Set<string>()
  private readonly deleted = new Set<string>()
  private readonly skipped: string[] = []
  private readonly edits: Edit[] = []
  private readonly stash: string[] = []
  private readonly links = new LinkGroups()
  private readonly before: Overlay
  /** Inodes of the upper directory that overlayfs's index holds (lower files with other names, copied up once). */
  private readonly indexed = new Set<bigint>()
  /** Upper files that changed a lower file through the index: their lower inode. */
  private readonly lowerWrites: { path: string; ino: number }[] = []
  /** Names of those lower files the command saw change with them, linked after the rest. */
  private readonly lowerLinks: Edit[] = []
  /** Files whose content the workspace takes from the upper directory (ReadbackOptions.hold). */
  readonly written: WrittenFile[] = []

  constructor(private readonly options: ReadbackOptions) {
    this.before = options.before
    if (options.index !== undefined && fs.existsSync(options.index)) {
      for (const name of fs.readdirSync(options.index)) this.indexed.add(fs.lstatSync(`${options.index}/${name}`, { bigint: true }).ino)
    }
  }

  // ---- the upper directory ------------------------------------------------------------------------

  load(): UpperEntry {
    const stats = fs.lstatSync(this.options.upper, { bigint: true })
    const root: UpperEntry = { name: '', path: '/', host: this.options.upper, stats, kind: 'dir' }
    this.loadChildren(root)
    return root
  }

  private loadChildren(dir: UpperEntry): void {
    dir.children = new Map()
    openPrivateDirectory(dir.host, Number(dir.stats.mode & 0o7777n))
    const { names, undecodable } = readNames(dir.host)
    for (const name of undecodable) this.skipped.push(join(dir.path, name))
    for (const name of names) {
      const host = `${dir.host}/${name}`
      const stats = fs.lstatSync(host, { bigint: true })
      const entry: UpperEntry = { name, path: join(dir.path, name), host, stats, kind: kindOf(stats) }
      this.entries++
      dir.children.set(name, entry)
      // Any file may be a metadata-only copy-up (a new one never is, but only its xattr tells).
      if (entry.kind === 'file' && this.options.metacopy === true) this.files.push(entry)
      if (entry.kind === 'dir') {
        // Only a directory that replaced or merges with one below can be opaque; any can be a
        // renamed one (its old name's whiteout may be gone: a file made there since replaces it).
        if (this.options.redirects || this.before.lookup(entry.path, false) !== undefined) this.dirs.push(entry)
        this.loadChildren(entry)
      }
    }
  }

  /**
   * overlayfs's opaque and redirect xattrs of the directories that can have them, and the metacopy
   * and redirect xattrs of files: one getfattr per batch, never one process per file.
   */
  async readXattrs(): Promise<void> {
    const { xattr, getfattr } = this.options
    const byHost = new Map([...this.dirs, ...this.files].map((entry) => [entry.host, entry]))
    if (byHost.size === 0) return
    const pattern = `^${xattr.replaceAll('.', '\\.')}(opaque|redirect${this.files.length > 0 ? '|metacopy' : ''})$`
    for (const batch of batches([...byHost.keys()])) {
      const result = await run(getfattr, ['--absolute-names', '-h', '-d', '-e', 'hex', '-m', pattern, '--', ...batch])
      if (result.code !== 0 && result.stdout === '') throw new Error(`rewindfs: exec: cannot read overlayfs's xattrs (getfattr: ${result.stderr.trim()})`)
      let current: UpperEntry | undefined
      for (const line of result.stdout.split('\n')) {
        if (line.startsWith('# file: ')) current = byHost.get(unescapeName(line.slice(8)))
        else if (current && line.startsWith(xattr)) {
          const [name, value] = line.slice(xattr.length).split('=', 2)
          const text = value?.startsWith('0x') ? Buffer.from(value.slice(2), 'hex').toString('utf8') : ''
          if (name === 'opaque' && text === 'y') current.opaque = true
          else if (name === 'redirect') current.redirect = text
          // Its value is empty, or a digest of the content (fs-verity): present is what counts.
          else if (name === 'metacopy' && current.kind === 'file') current.metacopy = true
        }
      }
    }
  }

  // ---- the walk -----------------------------------------------------------------------------------

  walkRoot(root: UpperEntry): void {
    const old = this.before.lookup('/', false)!
    const mode = Number(root.stats.mode & 0o7777n)
    const owner = this.ownerChange(root, old)
    if (mode !== this.before.meta(old).mode || owner) {
      this.edits.push({ op: 'meta', path: '/', mode, owner })
      this.modified.add('/')
    }
    this.walkDir(root, old, old)
  }

  /** The upper entry's owner where it is read back and differs from the view entry's (a chown). */
  private ownerChange(entry: UpperEntry, was: Entry | undefined): Owner | undefined {
    if (!this.options.owners) return undefined
    if (was === undefined) return ownerOf(entry.stats)
    const meta = this.before.meta(was)
    return BigInt(meta.uid) === entry.stats.uid && BigInt(meta.gid) === entry.stats.gid ? undefined : ownerOf(entry.stats)
  }

  /**
   * An upper directory at `dir.path`: `old` is what the view had there (for the report), `through`
   * the view's directory whose entries show through where the upper directory has none (the same
   * one when merged, a rename's source, none when opaque or new). What the transaction's staging
   * fs holds there before the edits is `through`'s contents, so edits are made against it.
   */
  private walkDir(dir: UpperEntry, old: Entry | undefined, through: Entry | undefined): void {
    const upper = dir.children!
    const same = through !== undefined && through === old
    let names: string[]
    if (same) names = [...upper.keys()]
    else {
      const all = new Set(upper.keys())
      if (through) for (const name of this.before.names(through)) all.add(name)
      if (old) for (const name of this.before.names(old)) all.add(name)
      names = [...all]
    }
    for (const name of names.sort()) {
      const path = join(dir.path, name)
      const childOld = old ? this.before.child(old, name) : undefined
      const childThrough = same ? childOld : through ? this.before.child(through, name) : undefined
      const entry = upper.get(name)
      if (entry) this.entry(entry, childOld, childThrough, through?.path ?? dir.path)
      else this.compareViews(path, childOld, childThrough)
    }
  }

  private entry(entry: UpperEntry, old: Entry | undefined, base: Entry | undefined, lowerParent: string): void {
    const { path } = entry
    if (entry.kind === 'file' && entry.stats.size > this.options.maxFileSize) {
      // The workspace cannot hold it (over 2 GiB, or its own limit): not read, and what it had there stays.
      this.skipped.push(path)
      return
    }
    if (entry.kind === 'whiteout' || entry.kind === 'other' || isReserved(entry.name)) {
      if (entry.kind !== 'whiteout') this.skipped.push(path)
      if (base) this.edits.push({ op: 'remove', path })
      this.removed(path, old)
      return
    }
    const mode = Number(entry.stats.mode & 0o7777n)
    if (entry.kind === 'file') {
      // A metadata-only copy-up holds a hole: its content is the view's file it was copied up from.
      const source = entry.metacopy === true ? this.metacopySource(entry, base, lowerParent) : undefined
      let bytes: Uint8Array | undefined
      const content = () => (bytes ??= counted(source !== undefined ? this.before.readBytes(source) : readPrivateFile(entry.host)))
      const differs = (was: Entry) => this.fileDiffers(entry, content, was, source)
      // A name of a shared inode held with one link: not the shared inode any more.
      const detached = base?.link !== undefined && entry.stats.nlink === 1n
      const change = base?.type === 'file' && !detached ? differs(base) : undefined
      const edits = this.edits.length
      if (base?.type === 'file' && !detached) {
        if (change!.content || change!.meta) this.edits.push({ op: 'file', path, content: change!.content ? taken(content()) : undefined, mode, mtimeMs: mtimeOf(entry.stats), owner: this.ownerChange(entry, base) })
      } else {
        if (base) this.edits.push({ op: 'remove', path })
        this.edits.push({ op: 'file', path, content: taken(content()), mode, mtimeMs: mtimeOf(entry.stats), owner: this.ownerChange(entry, undefined) })
      }
      const edited = this.edits.length > edits
      // The command's own file, now the workspace's: the exec layer may take it as it is (held).
      const last = this.edits.at(-1)
      // Never a metadata-only copy-up: the upper directory holds no content of it to move into the layer.
      const held = edited && last?.op === 'file' && source === undefined ? (last.content ?? bytes) : undefined
      if (held !== undefined && this.options.hold !== undefined && entry.stats.nlink === 1n && entry.stats.size >= BigInt(this.options.hold)) {
        this.written.push({ path, host: entry.host, bytes: held, ctimeNs: entry.stats.ctimeNs })
      }
      // The view showed the project's own file here, one with other names on disk.
      const lowerLinked = base?.type === 'file' && base.node === undefined && base.link === undefined && (base.lowerStat?.nlink ?? 1) > 1
      if (entry.stats.nlink > 1n) this.links.add(entry.stats.ino, path, base?.link, lowerLinked && !edited)
      // Changed through the index (root): every name of the lower file showed the change.
      if (lowerLinked && edited && this.indexed.has(entry.stats.ino) && base.lowerStat?.ino !== undefined) this.lowerWrites.push({ path, ino: base.lowerStat.ino })
      if (!old) this.added.add(path)
      else if (old.type !== 'file') this.replaced(path, old)
      else if (detached && old === base) this.modified.add(path)
      else {
        const versusOld = old === base ? change! : differs(old)
        if (versusOld.content || versusOld.meta) this.modified.add(path)
      }
      return
    }
    if (entry.kind === 'symlink') {
      const target = this.options.shownTarget(fs.readlinkSync(entry.host, 'utf8'))
      if (!(base?.type === 'symlink' && this.before.readLink(base) === target)) {
        if (base) this.edits.push({ op: 'remove', path })
        this.edits.push({ op: 'symlink', path, target, owner: this.ownerChange(entry, undefined) })
      } else {
        const owner = this.ownerChange(entry, base)
        if (owner) this.edits.push({ op: 'meta', path, owner })
      }
      if (!old) this.added.add(path)
      else if (old.type !== 'symlink') this.replaced(path, old)
      else if (this.before.readLink(old) !== target || this.ownerChange(entry, old)) this.modified.add(path)
      return
    }
    // A directory.
    let through: Entry | undefined
    if (entry.redirect !== undefined) {
      // Renamed: the source moves aside first and lands here; the entries below edit it.
      const source = entry.redirect.startsWith('/') ? entry.redirect : join(lowerParent, entry.redirect)
      through = this.before.lookup(source, false)
      if (through?.type !== 'dir') throw new Error(`rewindfs: exec: '${path}' was renamed from '${source}', which the view it started from does not have as a directory`)
      this.edits.push({ op: 'place', path, source: this.stash.push(source) - 1 })
      this.metaEdit(entry, through, mode)
    } else if (entry.opaque || base?.type !== 'dir') {
      if (base) this.edits.push({ op: 'remove', path })
      this.edits.push({ op: 'dir', path, mode, owner: this.ownerChange(entry, undefined) })
      through = undefined
    } else {
      this.metaEdit(entry, base, mode)
      through = base
    }
    if (!old) this.added.add(path)
    else if (old.type !== 'dir') this.replaced(path, old)
    else if (this.before.meta(old).mode !== mode || this.ownerChange(entry, old)) this.modified.add(path)
    this.walkDir(entry, old?.type === 'dir' ? old : undefined, through)
  }

  /**
   * The project's other names of lower files the command changed through the index: the command
   * saw them change too (one inode), so they become names of the file the upper directory holds.
   * Only names the view showed as that same lower file and the command left where they were.
   */
  async linkLowerNames(root: UpperEntry): Promise<void> {
    if (this.lowerWrites.length === 0) return
    const names = await projectNames(this.options.project, [...new Set(this.lowerWrites.map((write) => write.ino))])
    for (const { path, ino } of this.lowerWrites) {
      for (const name of names.get(ino) ?? []) {
        if (name === path || this.modified.has(name) || !this.untouched(root, name)) continue
        const entry = this.before.lookup(name, false)
        if (entry?.type !== 'file' || entry.node !== undefined || entry.link !== undefined || entry.lowerPath !== name || entry.lowerStat?.ino !== ino) continue
        this.lowerLinks.push({ op: 'link', path: name, existing: path })
        this.modified.add(name)
      }
    }
  }

  /** Whether the upper directory holds nothing at `path` and only merged directories above it. */
  private untouched(root: UpperEntry, path: string): boolean {
    let dir: UpperEntry | undefined = root
    for (const name of path.slice(1).split('/')) {
      if (dir.opaque || dir.redirect !== undefined) return false
      const child: UpperEntry | undefined = dir.children?.get(name)
      if (child === undefined) return true
      if (child.kind !== 'dir') return false
      dir = child
    }
    return false
  }

  /** A directory's new mode or owner against the view's directory it shows (`was`). */
  private metaEdit(entry: UpperEntry, was: Entry, mode: number): void {
    const owner = this.ownerChange(entry, was)
    const modeChanged = this.before.meta(was).mode !== mode
    if (modeChanged || owner) this.edits.push({ op: 'meta', path: entry.path, mode: modeChanged ? mode : undefined, owner })
  }

  /**
   * The view's file a metadata-only copy-up shows the content of: the one its redirect names (a
   * rename; a relative name is in the lower directory of its parent, `lowerParent`), else the one
   * it replaced at its own path (`base`).
   */
  private metacopySource(entry: UpperEntry, base: Entry | undefined, lowerParent: string): Entry {
    const at = entry.redirect === undefined ? undefined : entry.redirect.startsWith('/') ? entry.redirect : join(lowerParent, entry.redirect)
    const source = at === undefined ? base : this.before.lookup(at, false)
    if (source?.type !== 'file') throw new Error(`rewindfs: exec: '${entry.path}' was copied up as metadata only from '${at ?? entry.path}', which the view it started from does not have as a file`)
    return source
  }

  /**
   * Content and metadata differences of an upper file against a view entry. `source`: the file is
   * a metadata-only copy-up of that view entry, whose content it has.
   */
  private fileDiffers(entry: UpperEntry, content: () => Uint8Array, was: Entry, source?: Entry): { content: boolean; meta: boolean } {
    const meta = this.before.meta(was)
    const changedMeta = Number(entry.stats.mode & 0o7777n) !== meta.mode || !sameTime(Number(entry.stats.mtimeNs) / 1e6, meta.mtimeMs) || this.ownerChange(entry, was) !== undefined
    // Copied up from this very entry: its content is the same, and is not read.
    if (source !== undefined && source.path === was.path) return { content: false, meta: changedMeta }
    const size = source !== undefined ? BigInt(this.before.size(source)) : entry.stats.size
    if (BigInt(this.before.size(was)) !== size) return { content: true, meta: changedMeta }
    let same: boolean
    try {
      same = sameBytes(content(), counted(this.before.readBytes(was)))
    } catch {
      same = false // the old content is unreadable (changed underneath): take the new one
    }
    return { content: !same, meta: changedMeta }
  }

  /** Two view entries (a rename's contents against what was at its target before). */
  private compareViews(path: string, old: Entry | undefined, now: Entry | undefined): void {
    if (!old && !now) return
    if (!now) return this.removed(path, old)
    if (!old) return this.addedTree(path, now)
    if (old.type !== now.type) {
      this.replaced(path, old)
      if (now.type === 'dir') for (const name of this.before.names(now)) this.addedTree(join(path, name), this.before.child(now, name)!)
      return
    }
    const a = this.before.meta(old)
    const b = this.before.meta(now)
    if (now.type === 'dir') {
      if (a.mode !== b.mode) this.modified.add(path)
      const names = new Set([...this.before.names(old), ...this.before.names(now)])
      for (const name of [...names].sort()) this.compareViews(join(path, name), this.before.child(old, name), this.before.child(now, name))
    } else if (now.type === 'symlink') {
      if (this.before.readLink(old) !== this.before.readLink(now)) this.modified.add(path)
    } else if (a.mode !== b.mode || !sameTime(a.mtimeMs, b.mtimeMs) || this.before.size(old) !== this.before.size(now) || !sameBytes(this.before.readBytes(old), this.before.readBytes(now))) {
      this.modified.add(path)
    }
  }

  // ---- the report ---------------------------------------------------------------------------------

  private removed(path: string, old: Entry | undefined): void {
    if (!old) return
    this.deleted.add(path)
    if (old.type === 'dir') for (const name of this.before.names(old)) this.removed(join(path, name), this.before.child(old, name))
  }

  private replaced(path: string, old: Entry): void {
    this.modified.add(path)
    if (old.type === 'dir') for (const name of this.before.names(old)) this.removed(join(path, name), this.before.child(old, name))
  }

  private addedTree(path: string, entry: Entry): void {
    this.added.add(path)
    if (entry.type === 'dir') for (const name of this.before.names(entry)) this.addedTree(join(path, name), this.before.child(entry, name)!)
  }

  result(): Scan {
    const sorted = (set: Set<string>) => [...set].sort()
    const scan: Scan = {
      added: sorted(this.added),
      modified: sorted(this.modified),
      deleted: sorted(this.deleted),
      skipped: this.skipped.sort(),
      removals: [],
      edits: this.edits,
      ...(this.stash.length > 0 ? { stash: this.stash } : {}),
    }
    this.links.apply(scan, (path) => this.before.lookup(path, false) !== undefined)
    scan.edits.push(...this.lowerLinks)
    scan.modified.sort()
    return scan
  }
}

/** getfattr (in the C locale) writes names with backslash-octal escapes per byte: \012 for a newline, \\ for a backslash. */
function unescapeName(name: string): string {
  // Most names have nothing escaped: a chmod -R lists every file, and byte by byte cost seconds.
  if (!name.includes('\\')) return name
  const bytes: number[] = []
  for (let i = 0; i < name.length; i++) {
    if (name[i] === '\\' && name[i + 1] === '\\') {
      bytes.push(0x5c)
      i++
    } else if (name[i] === '\\' && /^[0-7]{3}$/.test(name.slice(i + 1, i + 4))) {
      bytes.push(parseInt(name.slice(i + 1, i + 4), 8))
      i += 3
    } else bytes.push(...Buffer.from(name[i], 'utf8'))
  }
  return Buffer.from(bytes).toString('utf8')
}
