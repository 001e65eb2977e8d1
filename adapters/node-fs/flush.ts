/**
 * All-or-nothing flush into a directory. Three steps, each durable before the next:
 *  1. the manifest (`.rewindfs-flush/manifest.json`) is written as `staged`, naming every temp;
 *  2. every new file and symlink is written to a temp name (`.rewindfs-flush.<generation>.<n>`) in
 *     the nearest directory that survives the flush, and made durable with its directory;
 *  3. the manifest is rewritten as `committed` (the commit point), then its steps run in order:
 *     deletes rename the path to a trash name, directories are made, temps are renamed into place;
 *     the directories are made durable, the manifest becomes `done`, the trash is removed, and the
 *     manifest goes.
 * A crash before 3 leaves the old generation (recovery deletes the temps); after it, recovery
 * repeats the steps, which are idempotent: a delete whose trash exists happened, a move whose temp
 * is gone happened, and nothing is created at or under a deleted path unless the set names it anew.
 * A file entry that is a link of an earlier one (a hard link in the workspace) is staged as a hard
 * link of that entry's temp, so the renames put one inode under every name. A file whose content
 * and mode the directory holds already (a touch in the workspace) only has its time set, in place,
 * after the commit point (a `times` step): its inode, hard links and extended attributes stay.
 * A file written anew over one gets that file's `user.*` extended attributes and its ACL on the
 * temp before the rename (getfattr and setfattr, one process each per flush batch: Node has no
 * API for them); without the tools they are lost, and the apply says which files it wrote so.
 */
import { hostFs as fs } from './host-fs.js'
import * as z from 'zod/mini'
import { basename, dirname, type FlushEntry, type FlushProgress, FsError, normalize } from 'rewindfs/adapter-kit'
import { isAlive } from 'rewindfs/adapter-kit/node'
import type { DirectoryOptions } from './directory.js'
import { Confinement, RESERVED_PREFIX, checkPath, codeOf, isReserved, lstatOrUndefined } from './confine.js'
import { batches } from './exec-files.js'
import { run, which } from './exec-support.js'
import { makeDirectoriesDurable, makeDurable, removeIfPresent, syncDirectory, tempOwner, writeAtomically } from './files.js'

const MANIFEST_VERSION = 1
const pathSchema = z.string().check(z.refine((path) => normalize(path) === path && !path.includes('\0'), 'a normalised absolute path'))

const stepSchema = z.union([
  z.object({ op: z.literal('delete'), path: pathSchema, trash: pathSchema }),
  z.object({ op: z.literal('dir'), path: pathSchema, mode: z.number(), mtimeMs: z.number() }),
  z.object({ op: z.literal('move'), path: pathSchema, temp: pathSchema }),
  // Setting a time again is harmless: a crash after the commit point repeats it.
  z.object({ op: z.literal('times'), path: pathSchema, mtimeMs: z.number() }),
])

const manifestSchema = z.object({
  v: z.literal(MANIFEST_VERSION),
  generation: z.string(),
  state: z.enum(['staged', 'committed', 'done']),
  steps: z.array(stepSchema),
})

export type Step = z.infer<typeof stepSchema>
export type Manifest = z.infer<typeof manifestSchema>

/** Where the staging folder and its manifest live, inside the target. */
export function stagingFolder(confinement: Confinement): string {
  return confinement.lexical('/' + RESERVED_PREFIX)
}

function manifestFile(confinement: Confinement): string {
  return stagingFolder(confinement) + '/manifest.json'
}

/** Names that are not UTF-8. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Entries under a directory on disk that a directory lower leaves out of its listings (names that
 * are not UTF-8; FIFOs, sockets, devices), as the workspace would name them: the first few.
 */
function unseen(directory: string, found: string[] = [], shown = ''): string[] {
  for (const entry of fs.readdirSync(directory, { withFileTypes: true, encoding: 'buffer' })) {
    if (found.length >= 3) break
    const bytes = entry.name as unknown as Buffer
    let name: string
    try {
      name = strictUtf8.decode(bytes)
    } catch {
      // Its bytes as a shell's $'…' shows them: printable ASCII as it is, the rest escaped.
      const escaped = [...bytes].map((byte) => (byte >= 0x20 && byte < 0x7f && byte !== 0x5c && byte !== 0x27 ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`)).join('')
      found.push(`'${shown}${shown ? '/' : ''}${escaped}', a name that is not UTF-8`)
      continue
    }
    const at = `${shown}${shown ? '/' : ''}${name}`
    if (entry.isDirectory()) unseen(`${directory}/${name}`, found, at)
    else if (!entry.isFile() && !entry.isSymbolicLink()) found.push(`'${at}', ${entry.isFIFO() ? 'a FIFO' : entry.isSocket() ? 'a socket' : 'a device'}`)
  }
  return found
}

/**
 * Workspace paths under the directory at `path` whose entry changed after `sinceMs`: a ctime later
 * than it (content, mode, owner, a rename in or out), symlinks not followed, the staging folder
 * left out. What a flush that deletes or replaces the directory would take with it unseen.
 */
export function changedUnder(confinement: Confinement, path: string, sinceMs: number): string[] {
  const found: string[] = []
  const walk = (host: string, shown: string) => {
    let names: string[]
    try {
      names = fs.readdirSync(host)
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return
      throw error
    }
    for (const name of names) {
      if (isReserved(name)) continue
      const stats = lstatOrUndefined(`${host}/${name}`)
      if (!stats) continue
      const at = `${shown === '/' ? '' : shown}/${name}`
      if (stats.ctimeMs > sinceMs) found.push(at)
      if (stats.isDirectory()) walk(`${host}/${name}`, at)
    }
  }
  const top = lstatOrUndefined(confinement.lexical(path))
  if (top?.isDirectory()) walk(confinement.lexical(path), path)
  return found
}

/**
 * `error` as a flush into the directory rejects with it, in place: the host paths inside the root
 * that it names, in `path` and `dest` and quoted in its message and stack, and the same in the
 * errors it carries as `cause` or `rollbackError`, become workspace paths ('/src/a.ts'), as ws.fs's errors name them.
 * Whoever flushes (an agent through the tools among them) is promised workspace paths; where the
 * project lies on the host is not theirs to see. Paths outside the root stay as they are.
 */
export function flushError<E>(confinement: Confinement, error: E): E {
  const seen = new Set<unknown>()
  // The causes, and a failed rollback's error (directory.ts's applyNow), with theirs.
  const pending: unknown[] = [error]
  while (pending.length > 0) {
    const at = pending.pop()
    if (typeof at !== 'object' || at === null || seen.has(at)) continue
    seen.add(at)
    pending.push((at as { cause?: unknown }).cause, (at as { rollbackError?: unknown }).rollbackError)
    confinement.hostError(at)
    const named = at as { message?: unknown; stack?: unknown }
    // Node's messages quote the paths of the call ('open '/srv/app/src/.rewindfs-flush.x.0''); ours quote the root.
    const shown = (text: string) => text.replace(/'([^'\n]*)'/g, (quoted, host: string) => (host.startsWith('/') ? `'${confinement.inside(host) ?? host}'` : quoted))
    if (typeof named.message === 'string') named.message = shown(named.message)
    if (typeof named.stack === 'string') named.stack = shown(named.stack)
  }
  return error
}

function refuse(path: string, detail: string): FsError {
  return new FsError('EINVAL', 'flush', path, undefined, detail)
}

/** A staged file or symlink: its entry and the temp it is written to first. */
interface Staged {
  readonly entry: Extract<FlushEntry, { kind: 'file' | 'symlink' }>
  readonly temp: string
}

export interface Plan {
  readonly manifest: Manifest
  readonly staged: readonly Staged[]
}

/** Whether a symlink target stays inside the root when followed from the link's directory. */
function targetLeaves(path: string, target: string): boolean {
  if (target.startsWith('/')) return true
  let depth = dirname(path).split('/').filter(Boolean).length
  for (const part of target.split('/')) {
    if (part === '..') depth--
    else if (part !== '' && part !== '.') depth++
    if (depth < 0) return true
  }
  return false
}

/**
 * Checks the whole change set before anything is written (a bad entry refuses the flush, with
 * nothing changed) and assigns every file and symlink a temp, and every delete a trash name, in a
 * directory that survives the flush. A path may be named twice only as a delete followed by its
 * new entry (a change of type).
 */
export function plan(entries: readonly FlushEntry[], confinement: Confinement, options: DirectoryOptions = {}): Plan {
  const generation = Date.now().toString(36) + Math.random().toString(36).slice(2, 8)
  const deleted = new Map<string, number>()
  const created = new Map<string, { kind: FlushEntry['kind']; index: number }>()
  /** Paths a later file entry is a link of: written anew, so the link is made of their temp. */
  const linkedTo = new Set<string>()
  entries.forEach((entry, index) => {
    if (typeof entry !== 'object' || entry === null) throw refuse(String(entry), `flush entry ${index} is not an object`)
    const path = checkPath(entry.path, `entries[${index}].path`)
    if (normalize(path) !== path) throw refuse(path, 'flush paths must be normalised absolute paths')
    if (path.split('/').some(isReserved)) throw refuse(path, `names starting with '${RESERVED_PREFIX}' are reserved for the flush staging area`)
    if (!['file', 'dir', 'symlink', 'delete'].includes(entry.kind)) throw refuse(path, `unknown flush entry kind ${JSON.stringify(entry.kind)}`)
    if (path === '/' && entry.kind !== 'dir') throw refuse(path, 'the root can only change its mode or time')
    if (entry.kind === 'file' && !(entry.content instanceof Uint8Array)) throw refuse(path, 'a file entry needs its content as a Uint8Array')
    if (entry.kind === 'file' && entry.link !== undefined && created.get(entry.link)?.kind !== 'file') {
      throw refuse(path, `it is a link of '${String(entry.link)}', which no earlier file entry of the change set writes`)
    }
    if (entry.kind === 'symlink') {
      checkPath(entry.target, `entries[${index}].target`)
      if (options.allowLinksOutside !== true && targetLeaves(path, entry.target)) {
        throw new FsError(
          'EACCES',
          'symlink',
          entry.target,
          path,
          `refusing to flush the symlink ${path}: its target leaves the directory root (remove it from the workspace, or let the directory take such links: directory(path, { allowLinksOutside: true }), rewindfs flush or mcp --allow-links-outside)`,
        )
      }
    }
    if (created.has(path) || (entry.kind === 'delete' && deleted.has(path))) {
      throw refuse(path, 'the change set names this path twice (only a delete followed by the new entry may)')
    }
    if (entry.kind === 'delete') deleted.set(path, index)
    else created.set(path, { kind: entry.kind, index })
    if (entry.kind === 'file' && entry.link !== undefined) linkedTo.add(entry.link)
  })

  const realDirectories = new Map<string, boolean>()
  const isRealDirectory = (path: string): boolean => {
    let known = realDirectories.get(path)
    if (known === undefined) {
      const host = confinement.lexical(path)
      try {
        known = fs.realpathSync.native(host) === host && fs.statSync(host).isDirectory()
      } catch (error) {
        const code = codeOf(error)
        if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') throw error
        known = false
      }
      realDirectories.set(path, known)
    }
    return known
  }
  /** The first ancestor-or-self of `path` the set deletes or gives another type than a directory. */
  const removed = (path: string): string | undefined => {
    for (let at = path; ; at = dirname(at)) {
      const kind = created.get(at)?.kind
      if (deleted.has(at) || (kind !== undefined && kind !== 'dir')) return at
      if (at === '/') return undefined
    }
  }
  /** Where a temp or trash name for something in `directory` can live through the whole flush. */
  const stagingDirectory = (directory: string): string => {
    while (removed(directory) !== undefined || !isRealDirectory(directory)) directory = dirname(directory)
    return directory === '/' ? '' : directory
  }

  const steps: Step[] = []
  const staged: Staged[] = []
  let names = 0
  entries.forEach((entry, index) => {
    const path = entry.path
    if (path !== '/') {
      const parent = dirname(path)
      const made = created.get(parent)
      const madeBefore = made?.kind === 'dir' && made.index < index
      // An ancestor the set removes, unless it also makes that ancestor (a directory) before this entry.
      for (let at = parent; ; at = dirname(at)) {
        const kind = created.get(at)
        if (kind && kind.kind !== 'dir') throw refuse(path, `its ancestor '${at}' is replaced by a ${kind.kind} in the same change set`)
        if (deleted.has(at) && !(kind && kind.index < index)) throw refuse(path, `its ancestor '${at}' is deleted in the same change set`)
        if (at === '/') break
      }
      if (!madeBefore && (removed(parent) !== undefined || !isRealDirectory(parent))) {
        // Nothing to delete where the parent is missing; anything else needs the parent made first.
        if (entry.kind === 'delete' && !lstatOrUndefined(confinement.lexical(parent))) return
        if (made?.kind === 'dir') throw refuse(path, `its parent '${parent}' comes after it (parents must come first)`)
        throw new FsError('ENOENT', 'flush', path, undefined, `its parent '${parent}' is not a directory inside the root and the change set does not create it`)
      }
    }
    // A delete of nothing is left out: repeated after a crash it could take what a later step made there.
    const onDisk = entry.kind === 'delete' ? lstatOrUndefined(confinement.lexical(path)) : undefined
    if (entry.kind === 'delete' && !onDisk) return
    // A directory the workspace deleted holds only what it showed: anything else would go unseen.
    if (onDisk?.isDirectory()) {
      const hidden = unseen(confinement.lexical(path))
      if (hidden.length > 0) {
        throw refuse(
          path,
          `deleting it would remove what the workspace never showed (${hidden.join(', ')}): a workspace name is UTF-8, and FIFOs, sockets and devices are not read; move or remove them on disk first`,
        )
      }
    }
    const name = () => `${stagingDirectory(dirname(path))}/${RESERVED_PREFIX}.${generation}.${names++}`
    switch (entry.kind) {
      case 'delete':
        steps.push({ op: 'delete', path, trash: name() })
        break
      case 'dir':
        steps.push({ op: 'dir', path, mode: entry.mode & 0o7777, mtimeMs: entry.mtimeMs })
        break
      case 'file':
        if (entry.link === undefined && !linkedTo.has(path) && !deleted.has(path) && holdsContent(confinement, entry)) {
          steps.push({ op: 'times', path, mtimeMs: entry.mtimeMs })
          break
        }
      // falls through: written to a temp
      case 'symlink': {
        const temp = name()
        staged.push({ entry, temp })
        steps.push({ op: 'move', path, temp })
        break
      }
    }
  })
  return { manifest: { v: MANIFEST_VERSION, generation, state: 'staged', steps }, staged }
}

/** Who we run as: a time is set in place only on a file we own (or as root), which cannot then refuse it. */
const OWNER = process.getuid?.()

/**
 * Whether the directory holds `entry`'s content and mode at its path already, in a regular file of
 * one name that we may set the time of: then only its time is set, in place (a `times` step). A
 * file with other names keeps being written anew, as the workspace shows it (its own inode).
 */
function holdsContent(confinement: Confinement, entry: Extract<FlushEntry, { kind: 'file' }>): boolean {
  const host = confinement.lexical(entry.path)
  const stats = lstatOrUndefined(host)
  if (!stats?.isFile() || stats.nlink !== 1 || stats.size !== entry.content.byteLength || (stats.mode & 0o7777) !== (entry.mode & 0o7777)) return false
  if (OWNER === undefined || (OWNER !== 0 && stats.uid !== OWNER)) return false
  let fd: number
  try {
    fd = fs.openSync(host, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0))
  } catch {
    return false // unreadable, or changed since the lstat: written anew
  }
  try {
    confinement.checkDescriptor(fd, 'open', entry.path)
    const opened = fs.fstatSync(fd)
    if (!opened.isFile() || opened.ino !== stats.ino || opened.size !== stats.size) return false
    const bytes = fs.readFileSync(fd)
    return Buffer.compare(bytes, entry.content) === 0
  } finally {
    fs.closeSync(fd)
  }
}

function writeManifest(confinement: Confinement, manifest: Manifest): void {
  writeAtomically(manifestFile(confinement), JSON.stringify(manifest))
}

/** Staged files written between yields to the event loop (the writes themselves are synchronous: cheaper per file). */
const CHUNK = 256

function writeTemp(confinement: Confinement, { entry, temp }: Staged, temps: ReadonlyMap<string, string>): string {
  const host = confinement.lexical(temp)
  if (entry.kind === 'symlink') {
    fs.symlinkSync(entry.target, host)
    return host
  }
  const first = entry.link === undefined ? undefined : temps.get(entry.link)
  if (first !== undefined) {
    try {
      fs.linkSync(first, host)
      return host
    } catch (error) {
      // Another file system below (a mount point): the name gets a copy, as a target without links would.
      if (codeOf(error) !== 'EXDEV' && codeOf(error) !== 'EMLINK') throw error
    }
  }
  const fd = fs.openSync(host, 'wx', entry.mode & 0o777)
  try {
    try {
      confinement.checkDescriptor(fd, 'open', temp)
    } catch (error) {
      fs.unlinkSync(host)
      throw error
    }
    fs.writeFileSync(fd, entry.content)
    fs.fchmodSync(fd, entry.mode & 0o7777) // the mode given, not the umask's
    const time = entry.mtimeMs / 1000
    fs.futimesSync(fd, time, time)
  } finally {
    fs.closeSync(fd)
  }
  return host
}

/** Files written anew whose extended attributes were not carried over, and why (FlushTarget's AppliedNotes). */
export interface XattrsNotKept {
  readonly paths: string[]
  readonly why: string
}

/** The extended attributes a flush carries from a replaced file to its temp: the user's, and the ACL (a default ACL is a directory's). */
const KEPT_XATTRS = '^(user\\.|system\\.posix_acl_access$)'

/** getfattr and setfattr on PATH (package attr), looked up once per PATH; undefined when either is missing. */
const attrTools = new Map<string, { getfattr: string; setfattr: string } | undefined>()

function findAttrTools(): { getfattr: string; setfattr: string } | undefined {
  const path = process.env.PATH ?? ''
  if (!attrTools.has(path)) {
    // On PATH only: a host that hides the tools there means them to be absent.
    const getfattr = which('getfattr', false)
    const setfattr = which('setfattr', false)
    attrTools.set(path, getfattr && setfattr ? { getfattr, setfattr } : undefined)
  }
  return attrTools.get(path)
}

/**
 * Copies the kept extended attributes (KEPT_XATTRS) of each file a staged file replaces onto its
 * temp, before the rename puts the temp's new inode there: read with getfattr (one process per
 * batch of files), written with one setfattr --restore. What could not be carried over is returned.
 */
async function keepXattrs(confinement: Confinement, staged: readonly Staged[], generation: string): Promise<XattrsNotKept | undefined> {
  const replaced: { path: string; host: string; temp: string; mode: number }[] = []
  for (const { entry, temp } of staged) {
    if (entry.kind !== 'file' || entry.link !== undefined) continue
    const host = confinement.lexical(entry.path)
    if (lstatOrUndefined(host)?.isFile()) replaced.push({ path: entry.path, host, temp: confinement.lexical(temp), mode: entry.mode & 0o7777 })
  }
  if (replaced.length === 0) return undefined
  const tools = findAttrTools()
  if (!tools) return { paths: replaced.map((file) => file.path), why: "getfattr and setfattr (package attr) are not on PATH" }
  const notKept: string[] = []
  let why = ''
  const miss = (paths: string[], reason: string) => {
    if (paths.length === 0) return
    notKept.push(...paths)
    why ||= shownPaths(confinement, reason, replaced)
  }
  // getfattr escapes names with other bytes (as \ooo): such a file's attributes are not read.
  const plain = (host: string) => /^[\x20-\x5b\x5d-\x7e]*$/.test(host)
  const readable = replaced.filter((file) => plain(file.host) && plain(file.temp))
  miss(replaced.filter((file) => !plain(file.host) || !plain(file.temp)).map((file) => file.path), 'a name getfattr would escape')
  const byHost = new Map(readable.map((file) => [file.host, file]))
  const dump: string[] = []
  const withAcl: typeof replaced = []
  const restored: typeof replaced = []
  for (const batch of batches([...byHost.keys()])) {
    const result = await run(tools.getfattr, ['--absolute-names', '-d', '-m', KEPT_XATTRS, '-e', 'hex', '--', ...batch])
    // A file it could not read (gone, no permission) is named on stderr, even where getfattr still
    // exits 0 (an attribute it listed but may not read: 'a.ts: user.note: Permission denied'); any
    // other failure: the batch.
    const failed = batch.filter((host) => result.stderr.includes(`${host}:`))
    if (result.code !== 0 || failed.length > 0) {
      miss(failed.length > 0 || result.code === 1 ? failed.map((host) => byHost.get(host)!.path) : batch.map((host) => byHost.get(host)!.path), said('getfattr', result.stderr))
    }
    let current: (typeof replaced)[number] | undefined
    for (const line of result.stdout.split('\n')) {
      if (line.startsWith('# file: ')) {
        current = byHost.get(line.slice(8))
        if (current) {
          dump.push(`# file: ${current.temp}`)
          restored.push(current)
        }
      } else if (current && line !== '') {
        dump.push(line)
        if (line.startsWith('system.posix_acl_access=')) withAcl.push(current)
      } else if (line === '') dump.push('')
    }
  }
  if (restored.length > 0) {
    const file = `${stagingFolder(confinement)}/xattrs.${generation}`
    fs.writeFileSync(file, dump.join('\n') + '\n')
    const result = await run(tools.setfattr, [`--restore=${file}`])
    fs.rmSync(file, { force: true })
    if (result.code !== 0) miss(restored.map((file) => file.path), said('setfattr', result.stderr))
    // An ACL's mask is the group bits: the mode the workspace gives wins, as a chmod after it would.
    else for (const file of withAcl) fs.chmodSync(file.temp, file.mode)
  }
  return notKept.length > 0 ? { paths: notKept, why } : undefined
}

/** The first line a tool wrote to stderr, led by its name once (setfattr names itself, getfattr does not). */
function said(tool: string, stderr: string): string {
  const line = stderr.trim().split('\n')[0]
  return line.startsWith(`${tool}: `) ? line : `${tool}: ${line}`
}

/**
 * A tool's message (getfattr's, setfattr's first line of stderr) with the host paths it names as
 * workspace paths, as the rest of the flush's report names them: a replaced file's by its own, a
 * temp's by the file it stands for, anything else under the root by its place in the workspace.
 */
function shownPaths(confinement: Confinement, text: string, files: readonly { path: string; host: string; temp: string }[]): string {
  const named = new Map<string, string>()
  for (const file of files) named.set(file.host, file.path).set(file.temp, file.path)
  if (confinement.root !== '/') named.set(confinement.root, '/')
  // Longest first, each a whole path (not the head of a longer name, nor the tail of a longer path);
  // what is left under the root as its workspace path.
  const hosts = [...named.keys()].sort((a, b) => b.length - a.length)
  const escape = (host: string) => host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const pattern = new RegExp(`(?<![^\\s'"\`(=,;])(${hosts.map(escape).join('|')})(?=/|[\\s'"\`):,;]|$)`, 'g')
  return text.replace(pattern, (host: string, _group: string, offset: number) => {
    const shown = named.get(host)!
    // The root itself is '/'; below it, its paths start with the '/' that follows.
    return host === confinement.root && text[offset + host.length] === '/' ? '' : shown
  })
}

/** Steps 1–3 of the flush; `stopAfter` lets tests stop it where a crash would, `beforeCommit` runs just before the commit point. */
export async function stage(
  confinement: Confinement,
  { manifest, staged }: Plan,
  report: (progress: FlushProgress) => void,
  stopAfter?: 'staged' | 'committed',
  beforeCommit?: () => Promise<void>,
): Promise<XattrsNotKept | undefined> {
  writeManifest(confinement, manifest)
  let done = 0
  const files: string[] = []
  const temps = new Map<string, string>()
  for (let start = 0; start < staged.length; start += CHUNK) {
    for (const item of staged.slice(start, start + CHUNK)) {
      const { entry } = item
      const host = writeTemp(confinement, item, temps)
      temps.set(entry.path, host)
      if (entry.kind === 'file') files.push(host)
      report({ done: ++done, total: manifest.steps.length, path: entry.path })
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
  // Before the temps are made durable: their attributes are synced with them.
  const notKept = await keepXattrs(confinement, staged, manifest.generation)
  await makeDurable(files, [...new Set(staged.map(({ temp }) => confinement.lexical(dirname(temp))))])
  if (stopAfter === 'staged') return notKept
  // The flush's last look before the commit point (a throw leaves the manifest staged: taken back).
  await beforeCommit?.()
  writeManifest(confinement, { ...manifest, state: 'committed' })
  if (stopAfter === 'committed') return notKept
  rollForward(confinement, { ...manifest, state: 'committed' }, (path) => report({ done: ++done, total: manifest.steps.length, path }))
  return notKept
}

/** The parent of `path` must be a real directory inside the root before the adapter writes there. */
function checkParent(confinement: Confinement, path: string, checked: Set<string>): string {
  const parent = dirname(path)
  if (!checked.has(parent)) {
    const host = confinement.lexical(parent)
    if (fs.realpathSync.native(host) !== host) {
      throw new FsError('EACCES', 'flush', path, undefined, `'${parent}' is a symbolic link on disk; the flush will not write through it`)
    }
    checked.add(parent)
  }
  return confinement.lexical(path)
}

/**
 * Renames a staged temp over `host` (a directory there is removed first); nothing when the temp is
 * gone, because an earlier run of the same manifest moved it. The rename is tried first: it is
 * what almost always happens, and it says itself when the temp is missing or a directory is there.
 */
function moveInto(temp: string, host: string): void {
  try {
    fs.renameSync(temp, host)
    return
  } catch (error) {
    const code = codeOf(error)
    if (code === 'ENOENT' && !lstatOrUndefined(temp)) return
    if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error
  }
  fs.rmSync(host, { recursive: true, force: true })
  fs.renameSync(temp, host)
}

/**
 * Applies a committed manifest's steps in order; repeating it after a crash is harmless. A delete
 * renames the path to its trash name (a trash that exists means it was done), so a path deleted and
 * made anew in the same flush is never deleted twice; the trash is removed once every step is
 * durable, under a `done` manifest.
 */
export function rollForward(confinement: Confinement, manifest: Manifest, applied?: (path: string) => void, stopAfterSteps = false): void {
  if (manifest.state === 'committed') {
    const checked = new Set<string>()
    const touched = new Set<string>()
    for (const [index, step] of manifest.steps.entries()) {
      try {
        const host = checkParent(confinement, step.path, checked)
        touched.add(dirname(step.path))
        if (step.op === 'delete') {
          checkParent(confinement, step.trash, checked)
          touched.add(dirname(step.trash))
          if (!lstatOrUndefined(confinement.lexical(step.trash))) renameIfPresent(host, confinement.lexical(step.trash))
          applied?.(step.path)
        } else if (step.op === 'dir') {
          const stats = lstatOrUndefined(host)
          if (stats && !stats.isDirectory()) fs.unlinkSync(host)
          if (!stats?.isDirectory()) fs.mkdirSync(host, { mode: step.mode & 0o777 })
          fs.chmodSync(host, step.mode)
          applied?.(step.path)
        } else if (step.op === 'times') {
          const time = step.mtimeMs / 1000
          try {
            fs.lutimesSync(host, time, time)
          } catch (error) {
            // Gone since (someone else's delete): nothing to set; the next flush sees the path changed.
            if (codeOf(error) !== 'ENOENT') throw error
          }
          applied?.(step.path)
        } else {
          checkParent(confinement, step.temp, checked)
          touched.add(dirname(step.temp))
          moveInto(confinement.lexical(step.temp), host)
        }
      } catch (error) {
        throw unfinished(error, step.path, index, manifest.steps.length)
      }
    }
    makeDirectoriesDurable([...touched].map((directory) => confinement.lexical(directory)))
    if (stopAfterSteps) return // tests: a crash here
    if (manifest.steps.some((step) => step.op === 'delete')) writeManifest(confinement, { ...manifest, state: 'done' })
  }
  for (const step of manifest.steps) if (step.op === 'delete') fs.rmSync(confinement.lexical(step.trash), { recursive: true, force: true })
  // Directory times last, deepest first: the renames and removals above changed them.
  for (const step of [...manifest.steps].reverse()) {
    if (step.op !== 'dir') continue
    const time = step.mtimeMs / 1000
    fs.utimesSync(confinement.lexical(step.path), time, time)
  }
  clearStaging(confinement)
}

/**
 * A step of a committed flush failed (an immutable file, a permission): the directory holds part of
 * the flush until a later open or flush repeats the steps. The error keeps the cause's code and
 * paths, and says that, and what to do.
 */
function unfinished(error: unknown, path: string, done: number, steps: number): unknown {
  const cause = error as NodeJS.ErrnoException & { dest?: string }
  if (typeof cause?.code !== 'string') return error
  const { errno, code, syscall } = cause
  const message =
    `${cause.message} (a flush past its commit point stopped at '${path}', ${done} of ${steps} paths written: ` +
    `the directory holds part of that flush until it is finished; remove the cause, and the next open of the directory or flush finishes it)`
  return Object.assign(new Error(message), { errno, code, syscall, ...(cause.path !== undefined ? { path: cause.path } : {}), ...(cause.dest !== undefined ? { dest: cause.dest } : {}), cause })
}

function renameIfPresent(from: string, to: string): void {
  try {
    fs.renameSync(from, to)
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
}

/** Deletes the temps of a flush that never committed. */
export function rollBack(confinement: Confinement, manifest: Manifest): void {
  const directories = new Set<string>()
  for (const step of manifest.steps) {
    if (step.op !== 'move') continue
    try {
      removeIfPresent(confinement.lexical(step.temp))
    } catch (error) {
      // Its directory became a file meanwhile (someone else's hand): no temp there to remove.
      if (codeOf(error) !== 'ENOTDIR') throw error
    }
    directories.add(dirname(step.temp))
  }
  for (const directory of directories) {
    try {
      syncDirectory(confinement.lexical(directory))
    } catch (error) {
      if (codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') throw error
    }
  }
  clearStaging(confinement)
}

/**
 * Removes the manifest (the flush is over) and anything else in the staging folder but the lock and
 * its temps, such as a manifest temp a crash left half written. Another process taking the lock
 * writes `lock.tmp-…` and links it to `lock` (rewindfs/adapter-kit/node's LockFile): removing that temp between the two made its
 * link fail with ENOENT (seen in the fleet test, with many machines flushing into one base). A lock
 * temp whose process is gone (killed between writing and removing it) is removed: nothing links it.
 */
export function clearStaging(confinement: Confinement): void {
  const folder = stagingFolder(confinement)
  removeIfPresent(manifestFile(confinement))
  for (const name of fs.readdirSync(folder)) {
    if (name === 'lock' || (name.startsWith('lock.') && lockTempInUse(name))) continue
    fs.rmSync(`${folder}/${name}`, { force: true, recursive: true })
  }
  syncDirectory(folder)
}

/** Whether a lock temp (`lock.tmp-<pid>-…`, `lock.stale.tmp-<pid>-…`) may still be linked: its process lives. */
function lockTempInUse(name: string): boolean {
  const pid = tempOwner(name)
  return pid === undefined || isAlive(pid)
}

/** The manifest left by an interrupted flush, if any; a manifest that does not parse is refused loudly. */
export function readManifest(confinement: Confinement): Manifest | undefined {
  let text: string
  try {
    text = fs.readFileSync(manifestFile(confinement), 'utf8')
  } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return undefined
    throw error
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  const result = manifestSchema.safeParse(parsed)
  if (!result.success) {
    throw Object.assign(new Error(`rewindfs: the flush manifest '${manifestFile(confinement)}' is damaged (${result.error?.message ?? 'not JSON'}); move it aside to continue`), {
      code: 'ERR_REWINDFS_MANIFEST',
    })
  }
  // Recovery renames and deletes what the manifest says: it must only name staged temps and never the root.
  const bad = result.data.steps.find(
    (step) => (step.path === '/' && step.op !== 'dir') || (step.op === 'move' && !isReserved(basename(step.temp))) || (step.op === 'delete' && !isReserved(basename(step.trash))),
  )
  if (bad) throw Object.assign(new Error(`rewindfs: the flush manifest '${manifestFile(confinement)}' has a step that is not a flush's (${JSON.stringify(bad)}); move it aside to continue`), { code: 'ERR_REWINDFS_MANIFEST' })
  return result.data
}
