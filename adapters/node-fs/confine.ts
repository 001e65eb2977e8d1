/**
 * Confinement of host access to one directory root. Workspace paths ('/a/b') map onto the root;
 * every host path the adapter touches comes from here. '..' in a workspace path folds at '/', and
 * an on-disk symlink met on the way is followed only while it stays inside the root (host
 * semantics, checked component by component with lstat): one that leaves fails with EACCES.
 */
import type { Stats } from 'node:fs'
import { hostFs as fs } from './host-fs.js'
import { FsError, normalize, typeError } from 'rewindfs/adapter-kit'

const MAX_LINKS = 40 // Linux's MAXSYMLINKS
/** Where the kernel says which file a descriptor is (Linux): the check after open that nothing escaped. */
const DESCRIPTORS = fs.existsSync('/proc/self/fd') ? '/proc/self/fd/' : undefined
/** Linux's O_PATH (not in fs.constants): a directory's descriptor for lookups in it, needing no read permission. */
const O_PATH = process.platform === 'linux' ? 0o10000000 : undefined

/**
 * How project files are opened for reading: no link followed at the last step, and O_NONBLOCK, so
 * that a FIFO with no writer (or a device) put where the caller saw a file opens at once instead of
 * hanging the process; the caller then checks with fstat (regularFile) before reading a byte.
 * O_NONBLOCK changes nothing for a regular file.
 */
export const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)

/**
 * Throws unless `stats` (of what was opened for reading) is a regular file: EISDIR for a
 * directory, ENOENT for a FIFO, socket or device, which the source does not show (stat says there is
 * nothing there) and whose read would never end (/dev/zero, a FIFO a writer keeps open).
 */
export function regularFile(stats: Stats, path: string): void {
  if (stats.isFile()) return
  if (stats.isDirectory()) throw new FsError('EISDIR', 'read', path)
  throw new FsError('ENOENT', 'open', path)
}

/** Names the adapter keeps for itself in every directory: the staging folder and staged temp files. */
export const RESERVED_PREFIX = '.rewindfs-flush'

export function isReserved(name: string): boolean {
  return name === RESERVED_PREFIX || name.startsWith(RESERVED_PREFIX + '.')
}

/** Node's check: paths are strings without NUL bytes. */
export function checkPath(path: unknown, argument = 'path'): string {
  if (typeof path !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${argument}" argument must be of type string. Received ${path === null ? 'null' : typeof path}`)
  }
  if (path.includes('\0')) {
    throw typeError(
      'ERR_INVALID_ARG_VALUE',
      `The argument '${argument}' must be a string, Uint8Array, or URL without null bytes. Received ${JSON.stringify(path)}`,
    )
  }
  return path
}

export function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
}

export class Confinement {
  /**
   * `root` must be a real path (no symlinks in it). `aliases`: other absolute host paths of the
   * root (the path the directory was opened by, through a link above it: macOS's /tmp, a /home that
   * is a link), each checked to lead to the root: an absolute link target below one is inside, as
   * it is for Linux, where `ln -s /tmp/app/src` inside /tmp/app resolves there.
   */
  constructor(
    readonly root: string,
    private readonly aliases: readonly string[] = [],
  ) {}

  /** The host path of a normalised workspace path, lexically (no symlinks resolved). */
  lexical(path: string): string {
    return path === '/' ? this.root : this.root === '/' ? path : this.root + path
  }

  /**
   * The workspace path an absolute link target names when it is the root or below it, under the
   * root's real path or one of its aliases; undefined when it leads elsewhere.
   */
  targetInside(target: string): string | undefined {
    const normal = normalize(target)
    for (const base of [this.root, ...this.aliases]) {
      if (normal === base) return '/'
      if (base === '/') return normal
      if (normal.startsWith(base + '/')) return normal.slice(base.length)
    }
    return undefined
  }

  /** A link's target as the workspace reads it: an absolute one inside the root as the workspace path it names. */
  shownTarget(target: string): string {
    return target.startsWith('/') ? (this.targetInside(target) ?? target) : target
  }

  /** The workspace path of a host path inside the root. */
  inside(host: string): string | undefined {
    if (host === this.root) return '/'
    if (this.root === '/') return host
    return host.startsWith(this.root + '/') ? host.slice(this.root.length) : undefined
  }

  /**
   * `error` (from a host call) with the host paths it names in its `path`, `dest`, message and
   * stack turned into workspace paths, in place: callers are promised workspace paths (Node's
   * shape, '/src/a.ts' where a node:fs call names its argument), and where the root lies on the
   * host is not theirs to see. Paths outside the root (none a call here makes) stay as they are.
   */
  hostError<E>(error: E): E {
    return renamePaths(error, (host) => this.inside(host))
  }

  /**
   * `body` given a path that names `host` (below the root, its directories just resolved) through
   * its parent directory's descriptor, `/proc/self/fd/<n>/<name>`, once that directory is checked to
   * be inside the root: the last lookup then happens in that very directory, whatever is swapped for
   * a link on the way meanwhile (openat(2)'s guarantee, which Node does not offer). For an lstat or
   * readlink, which leave no descriptor to check afterwards. What `body` throws names `host`.
   */
  inParent<T>(host: string, syscall: string, path: string, body: (at: string) => T, attempt = 0): T {
    if (host === this.root) return body(host)
    const slash = host.lastIndexOf('/')
    const parent = host.slice(0, slash) || '/'
    let opened = false
    try {
      return this.inDirectory(parent, syscall, path, (at) => {
        opened = true
        return body(at === undefined ? host : `${at}${host.slice(slash)}`)
      })
    } catch (error) {
      const code = codeOf(error)
      if (opened || (code !== 'ENOENT' && code !== 'ENOTDIR')) throw error
      // No parent to look in: the kernel's own answer for the whole path (ENOENT, ENOTDIR or
      // ENAMETOOLONG, naming it), as Node gives it; nothing is read from a parent made meanwhile.
      fs.lstatSync(host)
      if (attempt > 2) throw error
      return this.inParent(host, syscall, path, body, attempt + 1)
    }
  }

  /**
   * `body` given a path naming `path` itself (a link there not followed) through its parent's
   * descriptor, as inParent does after resolve, with one open where the two take two: when the
   * descriptor's real path is the lexical parent, no component is a link and it is inside the root.
   * Otherwise resolve walks the path and inParent looks it up. For an lstat or a readlink, which the
   * workspace makes for every ancestor of a path it looks up.
   */
  lookup<T>(path: string, syscall: string, body: (at: string) => T): T {
    const normal = normalize(checkPath(path))
    if (normal !== '/' && DESCRIPTORS !== undefined && O_PATH !== undefined) {
      const slash = normal.lastIndexOf('/')
      const parent = this.lexical(normal.slice(0, slash) || '/')
      let fd: number | undefined
      try {
        fd = fs.openSync(parent, O_PATH | fs.constants.O_DIRECTORY)
      } catch (error) {
        const code = codeOf(error)
        if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') throw error
      }
      if (fd !== undefined) {
        try {
          const at = DESCRIPTORS + fd
          if (fs.readlinkSync(at) === parent) {
            const named = at + normal.slice(slash)
            try {
              return body(named)
            } catch (error) {
              throw renamePaths(error, (from) => (from === named ? this.lexical(normal) : undefined))
            }
          }
        } finally {
          fs.closeSync(fd)
        }
      }
    }
    return this.inParent(this.resolve(normal, syscall, false), syscall, normal, body)
  }

  /**
   * `body` given a path that names the directory `dir` through its descriptor, `/proc/self/fd/<n>`,
   * once it is checked to be inside the root (so a listing never comes from a directory swapped for
   * a link); `undefined` where there is no /proc, for `body` to use `dir`. What `body` throws names
   * `dir`, not the descriptor.
   */
  inDirectory<T>(dir: string, syscall: string, path: string, body: (at: string | undefined) => T): T {
    if (DESCRIPTORS === undefined || O_PATH === undefined) return body(undefined)
    const fd = fs.openSync(dir, O_PATH | fs.constants.O_DIRECTORY)
    try {
      this.checkDescriptor(fd, syscall, path)
      const at = `${DESCRIPTORS}${fd}`
      try {
        return body(at)
      } catch (error) {
        throw renamePaths(error, (named) => (named === at ? dir : named.startsWith(at + '/') ? dir + named.slice(at.length) : undefined))
      }
    } finally {
      fs.closeSync(fd)
    }
  }

  /**
   * The directory `dir` opened (O_PATH) and checked to be inside the root, as `${at}/<name>` paths
   * that open its entries through the descriptor: resolved in that directory itself, so no
   * directory on the way swapped for a link afterwards can lead them elsewhere, and the entries of
   * one directory need no check each. `rename` names such a path's error by `dir`'s path. The
   * caller closes `fd`. Undefined where there is no /proc (each file is then checked itself).
   */
  checkedDirectory(dir: string, syscall: string, path: string): { readonly fd: number; readonly at: string; rename<E>(error: E): E } | undefined {
    if (DESCRIPTORS === undefined || O_PATH === undefined) return undefined
    const fd = fs.openSync(dir, O_PATH | fs.constants.O_DIRECTORY)
    try {
      this.checkDescriptor(fd, syscall, path)
    } catch (error) {
      fs.closeSync(fd)
      throw error
    }
    const at = `${DESCRIPTORS}${fd}`
    return { fd, at, rename: (error) => renamePaths(error, (named) => (named.startsWith(at + '/') ? dir + named.slice(at.length) : undefined)) }
  }

  /**
   * Throws EACCES unless the open descriptor is a file inside the root. Run before any byte is read
   * or written through it, so a directory swapped for a link after the walk cannot lead outside.
   */
  checkDescriptor(fd: number, syscall: string, path: string): void {
    if (DESCRIPTORS && this.inside(fs.readlinkSync(DESCRIPTORS + fd)) === undefined) {
      throw new FsError('EACCES', syscall, path, undefined, `a component of the path changed into a link leading outside the directory root '${this.root}' during the call`)
    }
  }

  private escape(syscall: string, path: string, link: string, target: string): FsError {
    return new FsError('EACCES', syscall, path, undefined, `symbolic link '${link}' -> '${target}' leads outside the directory root '${this.root}'`)
  }

  /**
   * The real host path for `path` with every on-disk symlink on the way resolved inside the root
   * (the last component too when `followLast`). Missing components are left as they are, so the
   * caller's own call reports ENOENT. The fast path asks the kernel for the parent's real path: if
   * it is the lexical one, no component is a link and nothing needs walking.
   */
  resolve(path: string, syscall: string, followLast: boolean): string {
    const normal = normalize(checkPath(path))
    if (normal === '/') return this.root
    const parent = this.lexical(normal.slice(0, normal.lastIndexOf('/')) || '/')
    let real: string | undefined
    try {
      real = realDirectory(parent)
    } catch (error) {
      const code = codeOf(error)
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') throw error
    }
    const host = this.lexical(normal)
    if (real === parent && !followLast) return host
    if (real === parent) {
      const stats = lstatOrUndefined(host)
      if (!stats?.isSymbolicLink()) return host
    }
    return this.walk(normal, syscall, followLast)
  }

  /** Component by component with lstat, following links (host semantics) only inside the root. */
  private walk(path: string, syscall: string, followLast: boolean): string {
    const pending = path.split('/').filter((part) => part !== '' && part !== '.')
    let current = this.root
    let links = 0
    while (pending.length > 0) {
      const name = pending.shift()!
      if (name === '..') {
        // Only a link target can bring '..' here (the path was normalised); climbing out is leaving.
        if (current === this.root && this.root === '/') continue
        if (current === this.root) throw new FsError('EACCES', syscall, path, undefined, `a symbolic link on the way leads outside the directory root '${this.root}'`)
        current = current.slice(0, current.lastIndexOf('/')) || '/'
        continue
      }
      const next = current === '/' ? '/' + name : current + '/' + name
      if (pending.length === 0 && !followLast) return next
      const stats = lstatOrUndefined(next)
      if (!stats) return [next, ...pending].join('/')
      if (!stats.isSymbolicLink()) {
        current = next
        continue
      }
      if (++links > MAX_LINKS) throw new FsError('ELOOP', syscall, path)
      const target = fs.readlinkSync(next, 'utf8')
      const link = this.inside(next) ?? next
      if (target.startsWith('/')) {
        const within = this.targetInside(target)
        if (within === undefined) throw this.escape(syscall, path, link, target)
        current = this.root
        pending.unshift(...within.split('/').filter(Boolean))
      } else {
        pending.unshift(...target.split('/').filter((part) => part !== '' && part !== '.'))
        // A '..' that would climb out is caught above too; this says which link did it.
        let depth = current === this.root ? 0 : current.slice(this.root.length).split('/').length - 1
        for (const part of this.root === '/' ? [] : target.split('/')) {
          if (part === '..') depth--
          else if (part !== '' && part !== '.') depth++
          if (depth < 0) throw this.escape(syscall, path, link, target)
        }
      }
    }
    return current
  }
}

/**
 * The real path of the directory `path` names (links followed), as realpath(3) gives it. Where
 * there is /proc, from the kernel in one lookup (open, then the descriptor's path): glibc's
 * realpath looks up every prefix of the path in turn, so asking it for each ancestor of a path
 * 2,000 directories deep, as the workspace does when it looks the path up, took minutes.
 */
function realDirectory(path: string): string {
  if (DESCRIPTORS === undefined || O_PATH === undefined) return fs.realpathSync.native(path)
  const fd = fs.openSync(path, O_PATH | fs.constants.O_DIRECTORY)
  try {
    return fs.readlinkSync(DESCRIPTORS + fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** `error` with the paths it names (`path`, `dest`, message, stack) renamed where `rename` says, in place. */
function renamePaths<E>(error: E, rename: (path: string) => string | undefined): E {
  if (typeof error !== 'object' || error === null) return error
  const named = error as { path?: unknown; dest?: unknown; message?: unknown; stack?: unknown }
  for (const key of ['path', 'dest'] as const) {
    const from = named[key]
    if (typeof from !== 'string') continue
    const to = rename(from)
    if (to === undefined || to === from) continue
    named[key] = to
    if (typeof named.message === 'string') named.message = named.message.replaceAll(`'${from}'`, `'${to}'`)
    if (typeof named.stack === 'string') named.stack = named.stack.replaceAll(`'${from}'`, `'${to}'`)
  }
  return error
}

export function lstatOrUndefined(host: string): Stats | undefined {
  try {
    return fs.lstatSync(host)
  } catch (error) {
    const code = codeOf(error)
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw error
  }
}
