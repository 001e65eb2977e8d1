/**
 * Host file helpers exec needs: removing the trees it made (temp copies, uppers, the exec layer's
 * entries) and splitting long argument lists. Removal walks with lstat, readdir, unlink and rmdir
 * itself rather than fs.rmSync: Node loads rmSync's implementation lazily and it keeps the fs
 * functions it found then, so a first call while patchFs is in place would bind it to the
 * workspace for the rest of the process.
 */
import { execFile } from 'node:child_process'
import { hostFs as fs } from './host-fs.js'

/** rm -rf, also through directories without owner write or search permission (a non-root user is bound by modes). */
export function removeTree(path: string): void {
  removeWithin(path, { left: Infinity })
}

/**
 * removeTree for trees that may be large (a copy of the whole view, a session's exec layer): the
 * first `budget` entries go here, in-process (a process costs more than a few hundred unlinks, so
 * a small tree is gone sooner); the rest goes to `rm -rf`, many times faster on a big tree, and
 * what it leaves to removeTree.
 */
export async function removeLargeTree(path: string, budget = 0): Promise<void> {
  if (removeWithin(path, { left: budget })) return
  await new Promise<void>((resolve) => execFile('/bin/rm', ['-rf', '--', path], () => resolve()))
  removeTree(path)
}

/**
 * Removes entries until the budget runs out: true when the whole tree is gone. Paths as bytes: a
 * command may make names that are not UTF-8, which a string path cannot name.
 */
function removeWithin(path: string | Buffer, budget: { left: number }): boolean {
  if (budget.left-- <= 0) return false
  const stats = fs.lstatSync(path, { throwIfNoEntry: false })
  if (!stats) return true
  if (!stats.isDirectory()) {
    fs.unlinkSync(path)
    return true
  }
  let names: Buffer[]
  try {
    names = fs.readdirSync(path, { encoding: 'buffer' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error
    fs.chmodSync(path, 0o700)
    names = fs.readdirSync(path, { encoding: 'buffer' })
  }
  if (names.length > 0 && (stats.mode & 0o300) !== 0o300 && process.getuid?.() !== 0) fs.chmodSync(path, 0o700)
  const prefix = Buffer.concat([typeof path === 'string' ? Buffer.from(path) : path, SLASH])
  for (const name of names) if (!removeWithin(Buffer.concat([prefix, name]), budget)) return false
  fs.rmdirSync(path)
  return true
}

const SLASH = Buffer.from('/')
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * A directory's names, and apart those that are not UTF-8 (shown with U+FFFD where their bytes
 * do not decode): a workspace path is a string, so a command's file of such a name cannot be
 * taken back (reported as not kept, as a FIFO is). readdir as strings would decode them lossily
 * into names that do not exist, and the next lstat would fail.
 */
export function readNames(host: string): { names: string[]; undecodable: string[] } {
  const names: string[] = []
  const undecodable: string[] = []
  for (const bytes of fs.readdirSync(host, { encoding: 'buffer' })) {
    try {
      names.push(utf8.decode(bytes))
    } catch {
      undecodable.push(bytes.toString('utf8'))
    }
  }
  return { names, undecodable }
}

const privileged = () => process.getuid?.() === 0

/**
 * A directory of a private tree (a temp copy, a command's upper directory) that the command left
 * without owner read or search permission: opened up to be read back (a non-root user is bound by
 * modes). `mode` is what the caller recorded; the tree is removed afterwards.
 */
export function openPrivateDirectory(host: string, mode: number): void {
  if (!privileged() && (mode & 0o500) !== 0o500) fs.chmodSync(host, mode | 0o700)
}

/** A file of a private tree, read even when the command took its owner's read permission away. */
export function readPrivateFile(host: string): Buffer {
  try {
    return fs.readFileSync(host)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES' || privileged()) throw error
    fs.chmodSync(host, (fs.lstatSync(host).mode & 0o7777) | 0o600)
    return fs.readFileSync(host)
  }
}

/** Arguments in groups that stay well under the kernel's argument size limit. */
export function batches(paths: readonly string[], budget = 64 * 1024): string[][] {
  const out: string[][] = []
  let current: string[] = []
  let size = 0
  for (const path of paths) {
    if (current.length > 0 && size + path.length + 1 > budget) {
      out.push(current)
      current = []
      size = 0
    }
    current.push(path)
    size += path.length + 1
  }
  if (current.length > 0) out.push(current)
  return out
}

// ---- temp directories and their owners ------------------------------------------------------------

/** Temp directories exec makes: `rewindfs-exec-<pid namespace>-<pid>-<start>-…`, and `rewindfs-gone-…` while a sweep removes one. */
const OWNED = /^rewindfs-(?:exec|gone)-(\d+)-(\d+)-(\d+)-/

let tag: string | undefined | null = null

/** When a process started, in clock ticks after boot (the 22nd field of /proc/<pid>/stat, as src/node/lock-file.ts reads it). */
function startOf(pid: number | 'self'): string | undefined {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  return start !== undefined && /^\d+$/.test(start) ? start : undefined
}

/** This process's pid namespace (its inode) and id within it, as `<namespace>-<pid>-<start>`; undefined without /proc. */
function ownerTag(): string | undefined {
  if (tag === null) {
    try {
      const namespace = /^pid:\[(\d+)\]$/.exec(fs.readlinkSync('/proc/self/ns/pid'))?.[1]
      const start = startOf('self')
      tag = namespace !== undefined && start !== undefined ? `${namespace}-${process.pid}-${start}` : undefined
    } catch {
      tag = undefined
    }
  }
  return tag
}

/**
 * A private temp directory in `base` whose name says which process owns it (pid namespace, pid and
 * start time), so one a process killed with SIGKILL leaves is found and removed by the next runner
 * (`sweepStale`, started here once per `base` and process). `kind` marks what it is for.
 */
export function makeTempDir(base: string, kind = ''): string {
  const owner = ownerTag()
  const dir = fs.mkdtempSync(`${base}/rewindfs-exec-${owner === undefined ? '' : `${owner}-`}${kind}`)
  if (owner !== undefined) staleSwept(base)
  return dir
}

/** Whether the process a temp directory names is gone: not there, or another one with its pid (a later start). */
function ownerGone(namespace: string, pid: number, start: string): boolean {
  const here = ownerTag()
  // Another pid namespace (a container sharing the directory): its pids are not this one's to look up.
  if (here === undefined || namespace !== here.split('-')[0]) return false
  if (pid === process.pid) return start !== here.split('-')[2]
  try {
    return startOf(pid) !== start
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/** Mount points on this host (mountinfo's fifth field, its \ooo escapes decoded). */
function mountPoints(): string[] {
  try {
    return fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[4])
      .filter((point): point is string => point !== undefined)
      .map((point) => point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
  } catch {
    return []
  }
}

/**
 * Removes the temp directories in `base` that exec made for processes that are gone (killed with
 * SIGKILL: nothing of theirs ran at exit; their commands died through the watcher). A live
 * process's directory stays, as does one of another pid namespace and one with anything mounted
 * in it (overlay mode mounts in private namespaces, which died with their owner; a mount seen
 * here is not ours to remove under). Each is renamed before it is removed, so two sweeps never
 * remove one together, and a removal cut short is finished by a later sweep. Says what it removed.
 */
export async function sweepStale(base: string): Promise<string[]> {
  let names: string[]
  try {
    names = fs.readdirSync(base)
  } catch {
    return []
  }
  const stale = names.filter((name) => {
    const owner = OWNED.exec(name)
    return owner !== null && ownerGone(owner[1], Number(owner[2]), owner[3])
  })
  if (stale.length === 0) return []
  const mounts = mountPoints()
  const removed: string[] = []
  for (const name of stale) {
    const path = `${base}/${name}`
    if (mounts.some((point) => point === path || point.startsWith(path + '/'))) continue
    const gone = `${base}/${name.replace(/^rewindfs-exec-/, 'rewindfs-gone-')}${name.startsWith('rewindfs-gone-') ? '' : `-${process.pid}`}`
    try {
      if (gone !== path) fs.renameSync(path, gone)
      await removeLargeTree(gone, 1000)
      removed.push(path)
    } catch {
      // Another sweep took it, or it is not ours to remove (another user's, in a sticky directory).
    }
  }
  return removed
}

const sweeps = new Map<string, Promise<string[]>>()

/** The sweep of `base` this process ran (started at its first temp directory there; started now if none ran). */
export function staleSwept(base: string): Promise<string[]> {
  let sweep = sweeps.get(base)
  if (sweep === undefined) {
    sweep = sweepStale(base).catch(() => [])
    sweeps.set(base, sweep)
  }
  return sweep
}
