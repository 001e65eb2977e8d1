/**
 * `mountOver(ws, '/abs/project')`: a node:fs-compatible object that sends paths under the project
 * directory to the workspace ('/abs/project/x' is the workspace's '/x') and everything else to
 * node:fs. Routing is by path prefix, decided per call: a union that falls through layers (as
 * unionfs does) writes into whichever layer already has the parent directory, so a new file in a
 * lower-only directory would land on disk. Every form (sync, callback, promise) is generated from
 * one table; descriptors the workspace opened are told apart from real ones by a set.
 * `patchFs` installs such an object over the process's `fs` module (fs-monkey's way), and module
 * hooks so `import` and `require` load the workspace's files too (module-hooks.ts).
 */
import realFs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import nodePath from 'node:path'
import { fileURLToPath } from 'node:url'
import { type NodeFs, Workspace } from 'rewindfs'
import { Dir, Dirent, FsError } from 'rewindfs/adapter-kit'
import { DirectorySource } from './directory.js'
import { isHostAccess } from './host-fs.js'
import { installModuleHooks } from './module-hooks.js'

type Call = (...args: unknown[]) => unknown
type Members = Record<string, unknown>

/** How a member finds its path: argument 0; argument 0 or a descriptor; a descriptor; two paths; symlink(target, path). */
type Route = 'path' | 'pathOrFd' | 'fd' | 'two' | 'symlink' | 'stream'
/** What comes back and needs translating to the host's view. */
type Result = 'plain' | 'path' | 'target' | 'dirents' | 'dir' | 'open' | 'close' | 'stream'

/** Members with sync, callback and promise forms (each where node:fs has it). */
const table: Record<string, [Route, Result]> = {
  access: ['path', 'plain'],
  appendFile: ['pathOrFd', 'plain'],
  chmod: ['path', 'plain'],
  chown: ['path', 'plain'],
  close: ['fd', 'close'],
  copyFile: ['two', 'plain'],
  cp: ['two', 'plain'],
  exists: ['path', 'plain'],
  fchmod: ['fd', 'plain'],
  fchown: ['fd', 'plain'],
  fdatasync: ['fd', 'plain'],
  fstat: ['fd', 'plain'],
  fsync: ['fd', 'plain'],
  ftruncate: ['fd', 'plain'],
  futimes: ['fd', 'plain'],
  lchmod: ['path', 'plain'],
  lchown: ['path', 'plain'],
  link: ['two', 'plain'],
  lstat: ['path', 'plain'],
  lutimes: ['path', 'plain'],
  mkdir: ['path', 'path'],
  mkdtemp: ['path', 'path'],
  open: ['path', 'open'],
  opendir: ['path', 'dir'],
  read: ['fd', 'plain'],
  readdir: ['path', 'dirents'],
  readFile: ['pathOrFd', 'plain'],
  readlink: ['path', 'target'],
  readv: ['fd', 'plain'],
  realpath: ['path', 'path'],
  rename: ['two', 'plain'],
  rm: ['path', 'plain'],
  rmdir: ['path', 'plain'],
  stat: ['path', 'plain'],
  statfs: ['path', 'plain'],
  symlink: ['symlink', 'plain'],
  truncate: ['pathOrFd', 'plain'],
  unlink: ['path', 'plain'],
  utimes: ['path', 'plain'],
  write: ['fd', 'plain'],
  writeFile: ['pathOrFd', 'plain'],
  writev: ['fd', 'plain'],
}

/** Members that are not error-first callbacks (listeners, streams, exists' boolean): called as they are. */
const direct: Record<string, [Route, Result]> = {
  exists: ['path', 'plain'],
  watch: ['path', 'plain'],
  watchFile: ['path', 'plain'],
  unwatchFile: ['path', 'plain'],
  openAsBlob: ['path', 'plain'],
  createReadStream: ['stream', 'stream'],
  createWriteStream: ['stream', 'stream'],
}

/** The host roots each mounted fs routes to its workspace, for patchFs's module hooks. */
const mountRoots = new WeakMap<object, readonly string[]>()

const REAL = Symbol('real')
const CROSS = Symbol('cross')
type Routed = unknown[] | typeof REAL | typeof CROSS

/** Node's fs callbacks run on a later turn of the event loop. */
const later = (fn: () => void) => setImmediate(fn)

function mountError(message: string): Error {
  return Object.assign(new Error(`rewindfs: mountOver: ${message}`), { code: 'ERR_REWINDFS_MOUNT' })
}

/**
 * A node:fs-compatible object: paths under `root` (absolute, or relative to process.cwd()) go to
 * `ws`, all others to node:fs as it was when this was called. Paths, link targets and error paths
 * coming back from the workspace are translated to host paths. Child processes do not see it:
 * use exec() for them.
 */
export function mountOver(ws: Workspace, root: string): NodeFs {
  if (!(ws instanceof Workspace)) throw mountError('the first argument must be a Workspace')
  if (typeof root !== 'string' || root === '') throw mountError('the root must be a non-empty path')
  const base = nodePath.resolve(root)
  const real = realFs.realpathSync.native(base)
  const source = ws.lower.source
  if (source instanceof DirectorySource && source.root !== real) {
    throw mountError(`the workspace's lower directory is '${source.root}', not '${real}': mount a workspace over the directory it reads`)
  }
  // A tool may reach the project through its real path (a symlinked /tmp, say): both prefixes route.
  const roots = real === base ? [base] : [base, real]
  const fds = new Set<number>()
  // While the workspace runs a call, fs calls it makes itself (its lower directory reading the disk
  // through a patched module) must reach node:fs, not come back into the workspace. A counter, not
  // host-fs's async marking: callbacks the workspace schedules for the caller must route as usual.
  let depth = 0
  const inside = <T>(body: () => T): T => {
    depth++
    try {
      return body()
    } finally {
      depth--
    }
  }
  /** Objects the workspace hands out do their reading later: their methods run inside too. */
  const shield = <T extends object>(target: T, names: readonly string[]): T => {
    const members = target as unknown as Members
    for (const name of names) {
      const fn = members[name]
      if (typeof fn === 'function') members[name] = (...args: unknown[]) => inside(() => (fn as Call).apply(target, args))
    }
    return target
  }
  const view = ws.fs as unknown as Members
  const original = { ...(realFs as unknown as Members) }
  const originalPromises = { ...(realFs.promises as unknown as Members) }

  const toWorkspace = (arg: unknown): string | undefined => {
    let path: string
    if (typeof arg === 'string') path = arg
    else if (Buffer.isBuffer(arg)) path = arg.toString('utf8')
    else if (arg instanceof URL && arg.protocol === 'file:') {
      try {
        path = fileURLToPath(arg)
      } catch {
        return undefined // node:fs reports the bad URL
      }
    } else return undefined
    if (path.includes('\0')) return undefined
    const absolute = nodePath.resolve(path)
    for (const prefix of roots) {
      const inside = absolute === prefix ? '/' : absolute.startsWith(prefix + '/') ? absolute.slice(prefix.length) : undefined
      if (inside === undefined) continue
      // A trailing slash means "must be a directory": keep it.
      return path.endsWith('/') && inside !== '/' ? inside + '/' : inside
    }
    return undefined
  }
  const toHost = (path: string) => (path === '/' ? base : base + path)
  const fdOf = (arg: unknown): number | undefined => {
    const fd = typeof arg === 'number' ? arg : typeof arg === 'object' && arg !== null && typeof (arg as { fd?: unknown }).fd === 'number' ? (arg as { fd: number }).fd : undefined
    return fd !== undefined && fds.has(fd) ? fd : undefined
  }
  /** Absolute link targets inside the workspace are rooted at its '/', which is `base` on the host. */
  const targetToWorkspace = (target: unknown) => (typeof target === 'string' && nodePath.isAbsolute(target) ? (toWorkspace(target) ?? target) : target)

  const route = (kind: Route, args: unknown[]): Routed => {
    if (depth > 0 || isHostAccess()) return REAL
    if (kind === 'fd' || kind === 'pathOrFd') {
      // The workspace's descriptor or FileHandle, as it is: its promise forms take handles, not numbers.
      if (fdOf(args[0]) !== undefined) return args
      if (kind === 'fd') return REAL
    }
    if (kind === 'stream') {
      const options = args[1]
      const fd = typeof options === 'object' && options !== null ? fdOf((options as { fd?: unknown }).fd) : undefined
      if (fd !== undefined) return [args[0], { ...(options as object), fd }, ...args.slice(2)]
    }
    if (kind === 'symlink') {
      const path = toWorkspace(args[1])
      return path === undefined ? REAL : [targetToWorkspace(args[0]), path, ...args.slice(2)]
    }
    const path = toWorkspace(args[0])
    if (kind === 'two') {
      const dest = toWorkspace(args[1])
      if (path === undefined && dest === undefined) return REAL
      return path === undefined || dest === undefined ? CROSS : [path, dest, ...args.slice(2)]
    }
    return path === undefined ? REAL : [path, ...args.slice(1)]
  }

  const hostDirent = (entry: unknown) => {
    if (!(entry instanceof Dirent)) return entry
    const type = entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : 'file'
    return new Dirent(entry.name, type, toHost(entry.parentPath))
  }
  const translate = (kind: Result, value: unknown, args: unknown[]): unknown => {
    switch (kind) {
      case 'path':
        return typeof value === 'string' ? toHost(value) : Buffer.isBuffer(value) ? Buffer.from(toHost(value.toString('utf8'))) : value
      case 'target':
        if (typeof value === 'string' && value.startsWith('/')) return toHost(value)
        return Buffer.isBuffer(value) && value[0] === 0x2f ? Buffer.from(toHost(value.toString('utf8'))) : value
      case 'dirents':
        return Array.isArray(value) ? value.map(hostDirent) : value
      case 'dir': {
        const dir = value as Dir
        return new Dir(toHost(dir.path), () =>
          inside(() => {
            const entries: unknown[] = []
            for (let entry = dir.readSync(); entry; entry = dir.readSync()) entries.push(hostDirent(entry))
            dir.closeSync()
            return entries as Dirent[]
          }),
          // The workspace's Dir listed everything below already (a recursive one too): nothing left to open.
          () => [],
        )
      }
      case 'open':
        return opened(value)
      case 'close':
        fds.delete(args[0] as number)
        return value
      case 'stream': {
        const stream = value as { path?: unknown; emit(event: string | symbol, ...args: unknown[]): boolean }
        if (typeof stream.path === 'string') stream.path = toHost(stream.path)
        // Its errors come later, as events: translated before any listener sees them.
        const emit = stream.emit.bind(stream)
        stream.emit = (event, ...args) => emit(event, ...(event === 'error' ? [hostError(args[0]), ...args.slice(1)] : args))
        return shield(stream, ['_construct', '_read', '_write', '_writev', '_final', '_destroy'])
      }
      default:
        return value
    }
  }
  /** Workspace descriptors are remembered (a FileHandle forgets its own on close). */
  const opened = (value: unknown) => {
    if (typeof value === 'number') fds.add(value)
    else if (typeof value === 'object' && value !== null) {
      const handle = shield(value as { fd: number; close(): Promise<void> }, Object.getOwnPropertyNames(Object.getPrototypeOf(value)).filter((name) => name !== 'constructor'))
      fds.add(handle.fd)
      const close = handle.close.bind(handle)
      handle.close = async () => {
        await close()
        fds.delete(handle.fd)
      }
    }
    return value
  }
  const hostError = (error: unknown): unknown => {
    if (typeof error !== 'object' || error === null) return error
    const e = error as { path?: unknown; dest?: unknown; message?: unknown }
    for (const key of ['path', 'dest'] as const) {
      const path = e[key]
      if (typeof path !== 'string' || !path.startsWith('/')) continue
      const host = toHost(path)
      if (typeof e.message === 'string') e.message = e.message.replace(`'${path}'`, `'${host}'`)
      e[key] = host
    }
    return error
  }

  /** Between the workspace and the host: rename and link cannot cross (EXDEV, as across mounts); copyFile copies. */
  const cross = (name: string, args: unknown[]): void => {
    const [from, to] = [String(args[0]), String(args[1])]
    if (name !== 'copyFile') {
      throw new FsError('EXDEV', name, from, to, name === 'cp' ? 'cp between the workspace and the host file system is not supported; use copyFile' : undefined)
    }
    const exclusive = typeof args[2] === 'number' && (args[2] & realFs.constants.COPYFILE_EXCL) !== 0
    const data = (mounted.readFileSync as Call)(args[0])
    ;(mounted.writeFileSync as Call)(args[1], data, { flag: exclusive ? 'wx' : 'w' })
    ;(mounted.chmodSync as Call)(args[1], ((mounted.statSync as Call)(args[0]) as realFs.Stats).mode & 0o7777)
  }

  const member = (from: Members, key: string, name: string): Call => {
    const fn = from[key]
    if (typeof fn === 'function') return fn as Call
    return () => {
      throw new FsError('ENOSYS', name)
    }
  }

  const syncForm = (name: string, [kind, result]: [Route, Result], realFn: Call, wsFn: Call): Call =>
    function (...args: unknown[]) {
      const routed = route(kind, args)
      if (routed === REAL) return realFn.apply(realFs, args)
      if (routed === CROSS) return cross(name, args)
      try {
        const value = inside(() => wsFn(...routed))
        if (value instanceof Promise) return value.then((v) => translate(result, v, routed), (e: unknown) => Promise.reject(hostError(e)))
        return translate(result, value, routed)
      } catch (error) {
        throw hostError(error)
      }
    }

  const callbackForm = (name: string, [kind, result]: [Route, Result], realFn: Call, wsFn: Call): Call =>
    function (...args: unknown[]) {
      const routed = route(kind, args)
      const callback = args[args.length - 1]
      if (routed === REAL) return realFn.apply(realFs, args)
      if (routed === CROSS) {
        // Without a callback node:fs throws its argument error before any I/O.
        if (typeof callback !== 'function') return realFn.apply(realFs, args)
        later(() => {
          try {
            cross(name, args)
          } catch (error) {
            return callback(error)
          }
          callback(null)
        })
        return
      }
      if (typeof callback !== 'function') {
        // The workspace's own argument check, or its default (fs.close(fd) may omit the callback).
        try {
          return inside(() => wsFn(...routed))
        } catch (error) {
          throw hostError(error)
        }
      }
      const cb = callback as (...results: unknown[]) => void
      const reply = (error: unknown, ...results: unknown[]) => {
        if (error) return cb(hostError(error))
        cb(null, ...(results.length > 0 ? [translate(result, results[0], routed), ...results.slice(1)] : []))
      }
      try {
        return inside(() => wsFn(...routed.slice(0, -1), reply))
      } catch (error) {
        throw hostError(error)
      }
    }

  const promiseForm = (name: string, [kind, result]: [Route, Result], realFn: Call, wsFn: Call): Call =>
    async function (...args: unknown[]) {
      const routed = route(kind, args)
      if (routed === REAL) return realFn.apply(realFs.promises, args)
      if (routed === CROSS) return cross(name, args)
      try {
        return translate(result, await inside(() => wsFn(...routed)), routed)
      } catch (error) {
        throw hostError(error)
      }
    }

  const mounted: Members = {}
  const promises: Members = {}
  for (const [name, spec] of Object.entries(table)) {
    const sync = name + 'Sync'
    if (typeof original[sync] === 'function') mounted[sync] = syncForm(name, spec, original[sync] as Call, member(view, sync, name))
    if (typeof original[name] === 'function' && !(name in direct)) mounted[name] = callbackForm(name, spec, original[name] as Call, member(view, name, name))
    if (typeof originalPromises[name] === 'function') {
      promises[name] = promiseForm(name, spec, originalPromises[name] as Call, member(view.promises as Members, name, name))
    }
  }
  for (const [name, spec] of Object.entries(direct)) {
    if (typeof original[name] === 'function') mounted[name] = syncForm(name, spec, original[name] as Call, member(view, name, name))
  }
  promises.watch = syncForm('watch', ['path', 'plain'], originalPromises.watch as Call, member(view.promises as Members, 'watch', 'watch'))
  // realpath.native: the same routing over the native variants.
  const realpath = table.realpath
  Object.assign(mounted.realpathSync as object, { native: syncForm('realpath', realpath, realFs.realpathSync.native as Call, member(view.realpathSync as Members, 'native', 'realpath')) })
  Object.assign(mounted.realpath as object, { native: callbackForm('realpath', realpath, realFs.realpath.native as Call, member(view.realpath as Members, 'native', 'realpath')) })
  // Classes, constants and the rest are node:fs's own.
  for (const [key, value] of Object.entries(original)) if (!(key in mounted) && key !== 'promises') mounted[key] = value
  for (const [key, value] of Object.entries(originalPromises)) if (!(key in promises)) promises[key] = value
  mounted.promises = promises
  mountRoots.set(mounted, roots)
  return mounted as unknown as NodeFs
}

/**
 * Puts a mounted fs's functions onto the real `fs` module object (and `fs.promises`, which is
 * `node:fs/promises`) and updates ESM importers' live bindings (`syncBuiltinESMExports`), so
 * unmodified code in this process, CommonJS or ESM, goes through it. For an fs from mountOver it
 * also routes module loading through it: `import()` and `require()` of files that exist only in
 * the workspace work (module-hooks.ts). Returns the undo. Child processes are not affected.
 */
export function patchFs(mounted: NodeFs, target: NodeFs = realFs): () => void {
  const saved: [Members, string, unknown][] = []
  const install = (into: Members, from: Members) => {
    for (const [key, value] of Object.entries(from)) {
      if (key === 'promises' || typeof value !== 'function' || into[key] === value) continue
      saved.push([into, key, into[key]])
      into[key] = value
    }
  }
  install(target as unknown as Members, mounted as unknown as Members)
  install(target.promises as unknown as Members, mounted.promises as unknown as Members)
  syncBuiltinESMExports()
  const roots = mountRoots.get(mounted)
  const uninstall = roots ? installModuleHooks({ roots, fs: mounted }) : undefined
  return () => {
    uninstall?.()
    for (const [into, key, value] of saved.reverse()) into[key] = value
    saved.length = 0
    syncBuiltinESMExports()
  }
}
