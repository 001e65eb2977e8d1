/**
 * Differential tests: random sequences of fs calls run against the workspace (over a real lower
 * directory) and against a real Linux directory with node:fs. After every step the results or
 * errors (code, syscall and message: paths named exactly as given), and the whole tree, must be
 * equal. Paths are absolute, relative (the host runs in the real directory, the workspace in '/')
 * or empty; descriptors are driven through random sequences of their calls. Hard links are
 * compared as link counts and as which names share an inode. The lower directory must never change.
 */
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { syncFsSource } from '../src/adapter-kit.js'
import { seeds } from './support/seed.js'
import { watching } from '../src/watch.js'

process.umask(0o022)
const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-oracle-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let counter = 0

/** The initial tree: nested dirs, an empty dir, a file chain of symlinks, a dangling link. */
function seedTree(root: string, prefix: string) {
  nodeFs.mkdirSync(join(root, 'a/b'), { recursive: true })
  nodeFs.mkdirSync(join(root, 'e'))
  nodeFs.writeFileSync(join(root, 'a/f'), 'lower a/f')
  nodeFs.writeFileSync(join(root, 'a/b/g'), 'lower a/b/g')
  nodeFs.writeFileSync(join(root, 'c'), 'lower c')
  nodeFs.chmodSync(join(root, 'c'), 0o600)
  nodeFs.symlinkSync('a/f', join(root, 'l1'))
  nodeFs.symlinkSync('l1', join(root, 'l2'))
  // Absolute inside the root: on the host that means the root's own path in front.
  nodeFs.symlinkSync(prefix + '/a/b', join(root, 'abs'))
  nodeFs.symlinkSync('missing', join(root, 'dangling'))
}

type Tree = Record<string, string>

function snapshot(fs: typeof nodeFs, root: string, prefix: string): Tree {
  const out: Tree = {}
  // Names of one inode (hard links): each is shown with the count and all the names it shares.
  const shared = new Map<number, string[]>()
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(root + dir) as string[]) {
      const path = dir === '/' ? '/' + name : dir + '/' + name
      const stat = fs.lstatSync(root + path)
      const mode = (stat.mode & 0o7777).toString(8)
      if (!stat.isDirectory() && stat.nlink > 1) {
        const names = shared.get(stat.ino)
        if (names) names.push(path)
        else shared.set(stat.ino, [path])
      }
      if (stat.isSymbolicLink()) {
        const target = fs.readlinkSync(root + path) as string
        out[path] = `link ${target.startsWith(prefix) ? target.slice(prefix.length) || '/' : target}`
      } else if (stat.isDirectory()) {
        out[path + '/'] = `dir ${mode}`
        walk(path)
      } else out[path] = `file ${mode} ${fs.readFileSync(root + path, 'utf8')}`
    }
  }
  walk('/')
  for (const names of shared.values()) {
    const group = [...names].sort().join(',')
    for (const path of names) out[path] += ` nlink ${names.length} [${group}]`
  }
  return out
}

const name = fc.constantFrom('a', 'b', 'c', 'e', 'f', 'g', 'x', 'l1', 'l2', 'abs', 'dangling')
/** Lexically never above the root: there the host and the workspace differ by design (chroot). */
const staysInside = (parts: string[]) => {
  let depth = 0
  for (const part of parts) if ((depth += part === '..' ? -1 : part === '.' ? 0 : 1) < 0) return false
  return true
}
/** Absolute ('/a/b'), relative to the working directory ('a/b', './a'), or now and then empty. */
const path = fc.oneof(
  {
    weight: 30,
    arbitrary: fc
      .record({
        parts: fc.array(fc.oneof({ weight: 8, arbitrary: name }, { weight: 1, arbitrary: fc.constantFrom('.', '..') }), { minLength: 1, maxLength: 3 }).filter(staysInside),
        form: fc.constantFrom('absolute', 'absolute', 'relative', 'dot'),
        slash: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 3, arbitrary: fc.constant(true) }),
      })
      .map(({ parts, form, slash }) => (form === 'absolute' ? '/' : form === 'dot' ? './' : '') + parts.join('/') + (slash ? '/' : '')),
  },
  { weight: 1, arbitrary: fc.constant('') },
)
/** The path on one side: absolute paths under that side's root, relative and empty ones as they are. */
const at = (root: string, p: string) => (p.startsWith('/') ? root + p : p)
const text = fc.constantFrom('', 'one', 'two words', 'x'.repeat(20))

type Op = { name: string; args: (root: string, prefix: string) => unknown[] }

/** One call on an open descriptor, with small arguments so reads, writes and truncations overlap. */
type FdCall =
  | { call: 'read'; length: number; position: number | null }
  | { call: 'write'; text: string; position: number | null }
  | { call: 'readv'; lengths: number[]; position: number | null }
  | { call: 'writev'; texts: string[]; position: number | null }
  | { call: 'ftruncate'; length: number }
  | { call: 'fstat' }
  | { call: 'fsync' }
const position = fc.constantFrom(null, null, 0, 2, 40)
const fdCall: fc.Arbitrary<FdCall> = fc.oneof(
  fc.record({ call: fc.constant('read' as const), length: fc.constantFrom(0, 3, 64), position }),
  fc.record({ call: fc.constant('write' as const), text: text, position }),
  fc.record({ call: fc.constant('readv' as const), lengths: fc.array(fc.constantFrom(0, 2, 5, 64), { maxLength: 3 }), position }),
  fc.record({ call: fc.constant('writev' as const), texts: fc.array(text, { maxLength: 3 }), position }),
  fc.record({ call: fc.constant('ftruncate' as const), length: fc.constantFrom(0, 3, 50) }),
  fc.constant({ call: 'fstat' as const }),
  fc.constant({ call: 'fsync' as const }),
)

/** Runs a descriptor's calls; each outcome (bytes read, written, sizes or the error) is compared. */
function runFd(fs: typeof nodeFs, path: string, flags: string, calls: FdCall[]): unknown[] {
  const out: unknown[] = []
  const fd = fs.openSync(path, flags)
  try {
    for (const c of calls) {
      try {
        if (c.call === 'read') {
          const buffer = Buffer.alloc(c.length)
          const n = fs.readSync(fd, buffer, 0, c.length, c.position)
          out.push(buffer.subarray(0, n).toString())
        } else if (c.call === 'write') out.push(fs.writeSync(fd, c.text, c.position))
        else if (c.call === 'readv') {
          const buffers = c.lengths.map((n) => Buffer.alloc(n))
          const n = fs.readvSync(fd, buffers, c.position as number)
          out.push([n, Buffer.concat(buffers).subarray(0, n).toString()])
        } else if (c.call === 'writev') out.push(fs.writevSync(fd, c.texts.map((t) => Buffer.from(t)), c.position as number))
        else if (c.call === 'ftruncate') out.push(fs.ftruncateSync(fd, c.length) ?? null)
        else if (c.call === 'fstat') {
          const s = fs.fstatSync(fd)
          out.push([s.size, s.mode & 0o7777, s.isFile()])
        } else out.push(fs.fsyncSync(fd) ?? null)
      } catch (error) {
        const e = error as { code?: string; syscall?: string }
        out.push({ error: e.code, syscall: e.syscall })
      }
    }
  } finally {
    fs.closeSync(fd)
  }
  return out
}
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ p: path, t: text, flag: fc.constantFrom('w', 'a', 'wx', 'r+') }).map(({ p, t, flag }) => ({ name: 'writeFileSync', args: (r: string) => [at(r, p), t, { flag }] })),
  fc.record({ p: path, t: text }).map(({ p, t }) => ({ name: 'appendFileSync', args: (r: string) => [at(r, p), t] })),
  fc
    .record({ p: path, recursive: fc.boolean(), mode: fc.constantFrom(undefined, 0o700, 0o755, 0o1777, 0o7777, 0o2775, '750') })
    .map(({ p, recursive, mode }) => ({ name: 'mkdirSync', args: (r: string) => [at(r, p), { recursive, mode }] })),
  path.map((p) => ({ name: 'rmdirSync', args: (r: string) => [at(r, p)] })),
  // rm -r of 'x/..' removes children through a name it deletes on the way, in the kernel's
  // readdir order: what survives is order-dependent on the host, so it is not compared.
  fc
    .record({ p: path.filter((p) => !/\/\.\.\/?$/.test(p)), recursive: fc.boolean(), force: fc.boolean() })
    .map(({ p, recursive, force }) => ({ name: 'rmSync', args: (r: string) => [at(r, p), { recursive, force }] })),
  path.map((p) => ({ name: 'unlinkSync', args: (r: string) => [at(r, p)] })),
  fc.record({ from: path, to: path }).map(({ from, to }) => ({ name: 'renameSync', args: (r: string) => [at(r, from), at(r, to)] })),
  fc.record({ from: path, to: path, excl: fc.boolean() }).map(({ from, to, excl }) => ({ name: 'copyFileSync', args: (r: string) => [at(r, from), at(r, to), excl ? 1 : 0] })),
  fc.record({ from: path, to: path }).map(({ from, to }) => ({ name: 'linkSync', args: (r: string) => [at(r, from), at(r, to)] })),
  fc.record({ target: fc.constantFrom('a', 'a/f', 'a/../c', 'missing', 'l2', '/a', '/c', ''), p: path }).map(({ target, p }) => ({
    name: 'symlinkSync',
    // Absolute targets inside the root: '/x' in the workspace is root + '/x' on the host. Relative
    // targets never climb above the link's directory, which could leave the root (tested apart).
    args: (r: string, prefix: string) => [target.startsWith('/') ? prefix + target : target, at(r, p)],
  })),
  path.map((p) => ({ name: 'readlinkSync', args: (r: string) => [at(r, p)] })),
  fc.record({ p: path, mode: fc.constantFrom(0o644, 0o600, 0o755, 0o700) }).map(({ p, mode }) => ({ name: 'chmodSync', args: (r: string) => [at(r, p), mode] })),
  fc.record({ p: path, len: fc.constantFrom(0, 2, 30) }).map(({ p, len }) => ({ name: 'truncateSync', args: (r: string) => [at(r, p), len] })),
  path.map((p) => ({ name: 'readFileSync', args: (r: string) => [at(r, p), 'utf8'] })),
  path.map((p) => ({ name: 'readdirSync', args: (r: string) => [at(r, p)] })),
  path.map((p) => ({ name: 'readdirSync', args: (r: string) => [at(r, p), { recursive: true }] })),
  path.map((p) => ({ name: 'readdirSync', args: (r: string) => [at(r, p), { recursive: true, withFileTypes: true }] })),
  path.map((p) => ({ name: 'statSync', args: (r: string) => [at(r, p)] })),
  path.map((p) => ({ name: 'lstatSync', args: (r: string) => [at(r, p)] })),
  path.map((p) => ({ name: 'existsSync', args: (r: string) => [at(r, p)] })),
  path.map((p) => ({ name: 'realpathSync', args: (r: string) => [at(r, p)] })),
  path.map((p) => ({ name: 'accessSync', args: (r: string) => [at(r, p)] })),
  // Node's cp copies a directory into itself forever when the destination reaches it through a
  // link (stack overflow or ENAMETOOLONG, after minutes); those cases are tested on their own.
  fc
    .record({ from: path, to: path.filter((p) => !p.split('/').includes('abs')), dereference: fc.boolean() })
    .map(({ from, to, dereference }) => ({ name: 'cpSync', args: (r: string) => [at(r, from), at(r, to), { recursive: true, dereference }] })),
  fc.record({ p: path, t: text }).map(({ p, t }) => ({ name: 'fdWrite', args: (r: string) => [at(r, p), t] })),
  fc.record({ p: path, flags: fc.constantFrom('r', 'r+', 'w', 'w+', 'a', 'a+', 'wx', 'ax+'), calls: fc.array(fdCall, { maxLength: 6 }) }).map(({ p, flags, calls }) => ({
    name: 'fdSequence',
    args: (r: string) => [at(r, p), flags, calls],
  })),
)

/**
 * Whether a recursive listing of `dir` reached `entry` through a symlink back into a directory it
 * came through: the workspace does not enter those (README: two exceptions by design), Node enters
 * them until the path holds 40 links.
 */
function throughLinkBack(fs: typeof nodeFs, dir: string, entry: string): boolean {
  const names = entry.split('/')
  const above = [fs.realpathSync(dir)]
  for (let i = 1; i < names.length; i++) {
    let real: string
    try {
      real = fs.realpathSync(`${dir}/${names.slice(0, i).join('/')}`)
    } catch {
      return true // ELOOP: only a link back gets that deep
    }
    if (above.includes(real)) return true
    above.push(real)
  }
  return false
}

/** Runs one call; returns a comparable outcome (values normalised, errors by code and syscall). */
function run(fs: typeof nodeFs, o: Op, root: string, prefix: string): unknown {
  try {
    if (o.name === 'fdSequence') {
      const [p, flags, calls] = o.args(root, prefix) as [string, string, FdCall[]]
      return runFd(fs, p, flags, calls)
    }
    if (o.name === 'fdWrite') {
      const [p, t] = o.args(root, prefix) as [string, string]
      const fd = fs.openSync(p, 'a+')
      fs.writeSync(fd, t)
      const buffer = Buffer.alloc(64)
      const n = fs.readSync(fd, buffer, 0, 64, 0)
      fs.closeSync(fd)
      return buffer.subarray(0, n).toString()
    }
    const result = (fs as unknown as Record<string, (...a: unknown[]) => unknown>)[o.name](...o.args(root, prefix))
    if (o.name === 'statSync' || o.name === 'lstatSync') {
      const s = result as nodeFs.Stats
      // A link's size is its target's length, which differs by the host prefix for absolute ones.
      return { type: s.isFile() ? 'file' : s.isDirectory() ? 'dir' : 'link', mode: s.mode & 0o7777, size: s.isFile() ? s.size : 0, nlink: s.isDirectory() ? 0 : s.nlink }
    }
    if (o.name === 'readdirSync') {
      let entries = result as (string | nodeFs.Dirent)[]
      const [dir, options] = o.args(root, prefix) as [string, { recursive?: boolean; withFileTypes?: boolean } | undefined]
      if (options?.recursive && !options.withFileTypes) entries = (entries as string[]).filter((entry) => !throughLinkBack(fs, dir, entry))
      // Host parent paths carry the root in front of absolute ones; order within a directory is the disk's.
      const shown = entries.map((e) =>
        typeof e === 'string' ? e : `${prefix && e.parentPath.startsWith(prefix) ? e.parentPath.slice(prefix.length) || '/' : e.parentPath}|${e.name}|${e.isDirectory() ? 'd' : e.isSymbolicLink() ? 'l' : 'f'}`,
      )
      return [...shown].sort()
    }
    if (o.name === 'realpathSync') return (result as string).slice(prefix.length) || '/'
    if (o.name === 'readlinkSync') return (result as string).startsWith(prefix) ? (result as string).slice(prefix.length) : result
    if (o.name === 'mkdirSync') return typeof result === 'string' && prefix && result.startsWith(prefix) ? result.slice(prefix.length) : result
    return result ?? null
  } catch (error) {
    const e = error as { code?: string; syscall?: string; message?: string }
    // Paths in messages as the caller gave them: the host's absolute ones have the root in front.
    const message = prefix ? e.message?.replaceAll(`'${prefix}/`, "'/").replaceAll(`'${prefix}'`, "'/'").replaceAll(` ${prefix}/`, ' /') : e.message
    return { error: e.code ?? String(error), syscall: e.syscall, message }
  }
}

/** A stream call: written in chunks through createWriteStream, or read back through createReadStream. */
type StreamOp =
  | { name: 'streamWrite'; path: string; chunks: string[]; flags: string; start?: number; highWaterMark: number }
  | { name: 'streamRead'; path: string; start?: number; end?: number; highWaterMark: number }
const streamOp: fc.Arbitrary<StreamOp> = fc.oneof(
  fc.record({
    name: fc.constant('streamWrite' as const),
    path,
    chunks: fc.array(text, { maxLength: 4 }),
    flags: fc.constantFrom('w', 'a', 'r+', 'wx'),
    start: fc.constantFrom(undefined, 0, 3),
    highWaterMark: fc.constantFrom(1, 4, 16384),
  }),
  fc.record({
    name: fc.constant('streamRead' as const),
    path,
    start: fc.constantFrom(undefined, 0, 2),
    end: fc.constantFrom(undefined, 1, 5, 100),
    highWaterMark: fc.constantFrom(1, 3, 65536),
  }),
)

/** Runs a stream call to its 'close'; returns the events it emitted (chunk sizes, errors by code). */
function runStream(fs: typeof nodeFs, o: StreamOp, root: string): Promise<string[]> {
  const log: string[] = []
  const target = at(root, o.path)
  let stream: nodeFs.ReadStream | nodeFs.WriteStream
  try {
    stream =
      o.name === 'streamRead'
        ? fs.createReadStream(target, { start: o.start, end: o.start !== undefined && o.end !== undefined && o.end < o.start ? undefined : o.end, highWaterMark: o.highWaterMark })
        : fs.createWriteStream(target, { flags: o.flags, start: o.flags === 'a' ? undefined : o.start, highWaterMark: o.highWaterMark })
  } catch (error) {
    return Promise.resolve([`throws:${(error as NodeJS.ErrnoException).code}`])
  }
  const events = stream as NodeJS.EventEmitter
  return new Promise((resolve) => {
    events.on('open', () => log.push('open'))
    events.on('data', (chunk: Buffer) => log.push(`data:${chunk.toString()}`))
    events.on('end', () => log.push('end'))
    events.on('finish', () => log.push('finish'))
    events.on('error', (error: NodeJS.ErrnoException) => log.push(`error:${error.code}:${error.syscall}`))
    events.on('close', () => resolve([...log, 'close']))
    if (o.name === 'streamWrite') {
      const writer = stream as nodeFs.WriteStream
      for (const chunk of o.chunks) log.push(`write:${writer.write(chunk)}`)
      writer.end()
    }
  })
}

const watchedDirs = ['/', '/a', '/a/b', '/e']

/**
 * Watches the directories that exist on one side (fs.watch on each), runs `step`, waits until every
 * event has arrived (`drain`), and returns each directory's events.
 */
async function watchStep(fs: typeof nodeFs, root: string, step: () => Promise<unknown>, drain: () => Promise<void>): Promise<Record<string, string[]>> {
  const events: Record<string, string[]> = {}
  const watchers: nodeFs.FSWatcher[] = []
  for (const dir of watchedDirs) {
    try {
      if (!fs.lstatSync(root + dir).isDirectory()) continue
    } catch {
      continue
    }
    const log: string[] = (events[dir] = [])
    watchers.push(fs.watch(root + dir, (type, file) => log.push(`${type}:${file}`)))
  }
  await step()
  await drain()
  for (const watcher of watchers) watcher.close()
  return events
}

/** The entry name a watch event is about ('rename:a' → 'a'). */
function nameOf(event: string): string {
  return event.slice(event.indexOf(':') + 1)
}

/** Each directory's events with identical neighbours merged, as the kernel merges them in a queue not yet read. */
function mergeRepeats(events: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(events).map(([dir, list]) => [dir, list.filter((event, i) => event !== list[i - 1])]))
}

const fence = (() => {
  let n = 0
  return async () => {
    const name = `fence-${n++}`
    const dir = join(base, 'fence')
    nodeFs.mkdirSync(dir, { recursive: true })
    await new Promise<void>((resolve) => {
      const watcher = nodeFs.watch(dir, (_type, file) => {
        if (file === name) {
          watcher.close()
          resolve()
        }
      })
      nodeFs.writeFileSync(join(dir, name), '')
    })
  }
})()

describe('the workspace matches a real Linux directory', () => {
  for (const seed of seeds()) {
    it(`random fs sequences give the same results, errors and trees (seed ${seed})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
          const id = counter++
          const lowerDir = join(base, `lower${id}`)
          const realDir = join(base, `real${id}`)
          nodeFs.mkdirSync(lowerDir)
          nodeFs.mkdirSync(realDir)
          seedTree(lowerDir, '')
          seedTree(realDir, realDir)
          const lowerBefore = snapshot(nodeFs, lowerDir, lowerDir)
          const ws = await Workspace.open({ watch: watching, lower: syncFsSource(nodeFs, lowerDir), autoCheckpoint: false })
          const wfs = ws.fs as unknown as typeof nodeFs
          const cwd = process.cwd()
          process.chdir(realDir) // relative paths: the host's working directory is the real root
          try {
            for (const [i, o] of ops.entries()) {
              const expected = run(nodeFs, o, realDir, realDir)
              const actual = run(wfs, o, '', '')
              const call = `step ${i}: ${o.name}(${JSON.stringify(o.args('', ''))})`
              expect(actual, call).toEqual(expected)
              expect(snapshot(wfs, '', ''), call).toEqual(snapshot(nodeFs, realDir, realDir))
            }
            expect(snapshot(nodeFs, lowerDir, lowerDir)).toEqual(lowerBefore)
          } finally {
            process.chdir(cwd)
            nodeFs.rmSync(lowerDir, { recursive: true, force: true })
            nodeFs.rmSync(realDir, { recursive: true, force: true })
          }
        }),
        { seed, numRuns: 150 },
      )
    })
  }

  it('copyFile onto the file itself (through a link, or another of its hard links) changes nothing, as libuv finds it is the same file (seed 1698283488 found it)', async () => {
    const realDir = join(base, `same-file-${counter++}`)
    nodeFs.mkdirSync(realDir)
    const ws = await Workspace.open({ watch: watching })
    const sides = [
      { fs: ws.fs as unknown as typeof nodeFs, at: (p: string) => `/${p}` },
      { fs: nodeFs, at: (p: string) => join(realDir, p) },
    ]
    const outcomes = []
    for (const { fs, at } of sides) {
      fs.writeFileSync(at('f'), 'content')
      fs.utimesSync(at('f'), 1000, 2000)
      fs.symlinkSync('f', at('l'))
      fs.linkSync(at('f'), at('h'))
      const events: string[] = []
      const watcher = fs.watch(at(''), (type, name) => events.push(`${type}:${name}`))
      fs.copyFileSync(at('l'), at('f'))
      fs.copyFileSync(at('f'), at('h'))
      await new Promise((resolve) => setTimeout(resolve, 100))
      watcher.close()
      const stat = fs.statSync(at('f'))
      outcomes.push({ events, content: fs.readFileSync(at('f'), 'utf8'), mtimeMs: stat.mtimeMs, nlink: stat.nlink })
    }
    expect(outcomes[0]).toEqual({ events: [], content: 'content', mtimeMs: 2_000_000, nlink: 2 })
    expect(outcomes[0]).toEqual(outcomes[1])
    await ws.close()
  })

  it('readv of several buffers with no bytes on a directory returns 0 as libuv on Linux does, one buffer or any bytes EISDIR (seed 1038659149 found it)', async () => {
    const realDir = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-oracle-readv-'))
    try {
      nodeFs.mkdirSync(join(realDir, 'a'))
      const ws = await Workspace.open({ lower: { '/a/': '' } })
      const outcome = (run: () => number) => {
        try {
          return run()
        } catch (error) {
          return (error as NodeJS.ErrnoException).code
        }
      }
      for (const lengths of [[0], [0, 0], [0, 0, 0], [0, 2], [3]]) {
        const real = nodeFs.openSync(join(realDir, 'a'), 'r')
        const ours = ws.fs.openSync('/a', 'r')
        const expected = outcome(() => nodeFs.readvSync(real, lengths.map((n) => Buffer.alloc(n))))
        expect(outcome(() => ws.fs.readvSync(ours, lengths.map((n) => Buffer.alloc(n)))), String(lengths)).toBe(expected)
        nodeFs.closeSync(real)
        ws.fs.closeSync(ours)
      }
    } finally {
      nodeFs.rmSync(realDir, { recursive: true, force: true })
    }
  })

  it('a descriptor follows its file through renames, and keeps its inode once the file has no name left (unlinked, replaced, removed), as on Linux', async () => {
    type Fs = typeof nodeFs
    const outcome = (run: () => unknown): unknown => {
      try {
        const value = run()
        return value instanceof Uint8Array ? Buffer.from(value).toString() : value
      } catch (error) {
        return (error as NodeJS.ErrnoException).code
      }
    }
    const script = (fs: Fs, at: (path: string) => string): unknown[] => {
      const out: unknown[] = []
      const step = (run: () => unknown) => out.push(outcome(run))
      const stat = (fd: number) => {
        const s = fs.fstatSync(fd)
        return [s.size, s.nlink, (s.mode & 0o7777).toString(8), s.isFile()]
      }
      const pread = (fd: number, length: number) => {
        const bytes = Buffer.alloc(length)
        return bytes.subarray(0, fs.readSync(fd, bytes, 0, length, 0)).toString()
      }
      // Renamed while open: writes reach it under its new name.
      fs.writeFileSync(at('a'), 'hello')
      let fd = fs.openSync(at('a'), 'r+')
      fs.renameSync(at('a'), at('b'))
      step(() => fs.writeSync(fd, 'J', 0))
      step(() => stat(fd))
      fs.closeSync(fd)
      step(() => fs.readFileSync(at('b'), 'utf8'))
      // Unlinked while open: the inode lives on for the descriptor alone.
      fd = fs.openSync(at('b'), 'r+')
      fs.unlinkSync(at('b'))
      step(() => fs.writeSync(fd, 'X', 0))
      step(() => stat(fd))
      step(() => pread(fd, 10))
      step(() => fs.ftruncateSync(fd, 2))
      step(() => fs.fchmodSync(fd, 0o600))
      step(() => fs.writeSync(fd, 'tail', 6))
      step(() => stat(fd))
      step(() => pread(fd, 20).replace(/\0/g, '_'))
      step(() => fs.fsyncSync(fd))
      fs.closeSync(fd)
      step(() => fs.readdirSync(at('')).sort())
      // A directory renamed with an open file in it.
      fs.mkdirSync(at('d'))
      fs.writeFileSync(at('d/f'), 'abc')
      fd = fs.openSync(at('d/f'), 'r+')
      fs.renameSync(at('d'), at('e'))
      step(() => fs.writeSync(fd, 'Z', 0))
      fs.closeSync(fd)
      step(() => fs.readFileSync(at('e/f'), 'utf8'))
      // Replaced by a rename over it: the descriptor reads the old file, the name the new one.
      fs.writeFileSync(at('c1'), 'new file')
      fs.writeFileSync(at('c2'), 'old file')
      fd = fs.openSync(at('c2'), 'r')
      fs.renameSync(at('c1'), at('c2'))
      step(() => pread(fd, 20))
      step(() => stat(fd))
      step(() => fs.readFileSync(at('c2'), 'utf8'))
      fs.closeSync(fd)
      // One name of a hard-linked file unlinked: the descriptor writes to the name that stays.
      fs.writeFileSync(at('h'), 'linked')
      fs.linkSync(at('h'), at('h2'))
      fd = fs.openSync(at('h'), 'r+')
      fs.unlinkSync(at('h'))
      step(() => fs.writeSync(fd, 'L', 0))
      step(() => stat(fd))
      fs.closeSync(fd)
      step(() => fs.readFileSync(at('h2'), 'utf8'))
      // Removed with rm -r, appended to after.
      fs.writeFileSync(at('e/g'), 'log')
      fd = fs.openSync(at('e/g'), 'a')
      fs.rmSync(at('e'), { recursive: true })
      step(() => fs.writeSync(fd, ' more'))
      step(() => stat(fd))
      fs.closeSync(fd)
      step(() => fs.existsSync(at('e')))
      // cp over an open file (Node's cp unlinks, then copies: a new inode), copyFile over one (the same inode).
      fs.writeFileSync(at('s'), 'source')
      fs.writeFileSync(at('t'), 'target')
      fs.writeFileSync(at('t2'), 'target two')
      fd = fs.openSync(at('t'), 'r')
      const fd2 = fs.openSync(at('t2'), 'r')
      fs.cpSync(at('s'), at('t'))
      fs.copyFileSync(at('s'), at('t2'))
      step(() => pread(fd, 20))
      step(() => stat(fd))
      step(() => pread(fd2, 20))
      step(() => stat(fd2))
      fs.closeSync(fd)
      fs.closeSync(fd2)
      step(() => fs.readdirSync(at('')).sort())
      return out
    }
    const realDir = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-oracle-orphans-'))
    try {
      const ws = await Workspace.open({ watch: watching })
      ws.fs.mkdirSync('/w')
      const ours = script(ws.fs as unknown as Fs, (path) => `/w/${path}`)
      expect(ours).toEqual(script(nodeFs, (path) => join(realDir, path)))
      // What is done to an inode with no name is no operation: nothing the history or a watcher could show changed.
      ws.fs.writeFileSync('/w/u', 'unlinked soon')
      const fd = ws.fs.openSync('/w/u', 'r+')
      ws.fs.unlinkSync('/w/u')
      const operations = ws.history().length
      ws.fs.writeSync(fd, 'more', 0)
      ws.fs.ftruncateSync(fd, 3)
      ws.fs.fchmodSync(fd, 0o600)
      ws.fs.closeSync(fd)
      expect(ws.history().length).toBe(operations)
      expect(ws.fs.existsSync('/w/u')).toBe(false)
      await ws.close()
    } finally {
      nodeFs.rmSync(realDir, { recursive: true, force: true })
    }
  })

  it('refuses to copy a directory into itself through a link (where Node recurses forever)', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/a/b/g': 'g', '/a/f': 'f' } })
    ws.fs.symlinkSync('/a/b', '/abs')
    for (const dest of ['/abs/', '/abs/a', '/abs/abs']) {
      expect(() => ws.fs.cpSync('/a', dest, { recursive: true }), dest).toThrow(expect.objectContaining({ code: 'ERR_FS_CP_EINVAL' }))
    }
    expect(ws.fs.readdirSync('/a/b')).toEqual(['g'])
  })

  it('keeps absolute symlink targets and ".." inside the workspace (chroot semantics)', async () => {
    const ws = await Workspace.open({ watch: watching, lower: { '/etc/passwd': 'workspace passwd', '/app/x': 'x' } })
    ws.fs.symlinkSync('/etc/passwd', '/app/link')
    expect(ws.fs.readFileSync('/app/link', 'utf8')).toBe('workspace passwd')
    ws.fs.symlinkSync('../../../../etc', '/app/up')
    expect(ws.fs.readFileSync('/app/up/passwd', 'utf8')).toBe('workspace passwd')
    expect(ws.fs.readFileSync('/../../etc/passwd', 'utf8')).toBe('workspace passwd')
    expect(ws.fs.realpathSync('/app/up')).toBe('/etc')
    ws.fs.symlinkSync('loop2', '/loop1')
    ws.fs.symlinkSync('loop1', '/loop2')
    expect(() => ws.fs.statSync('/loop1')).toThrow(expect.objectContaining({ code: 'ELOOP', syscall: 'stat' }))
    // Node's JS realpath meets a loop in the stat() it calls on each link (seed 1120128154 found it).
    for (const path of ['/loop1', '/loop2/x']) {
      expect(() => ws.fs.realpathSync(path), path).toThrow(expect.objectContaining({ code: 'ELOOP', syscall: 'stat' }))
      expect(() => ws.fs.realpathSync.native(path), path).toThrow(expect.objectContaining({ code: 'ELOOP', syscall: 'realpath' }))
    }
  })

  for (const seed of seeds()) {
    it(`random sequences with streams give the same watch events, stream events and trees (seed ${seed})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.oneof({ weight: 3, arbitrary: op }, { weight: 1, arbitrary: streamOp }), { minLength: 1, maxLength: 12 }), async (ops) => {
          const id = counter++
          const lowerDir = join(base, `lower${id}`)
          const realDir = join(base, `real${id}`)
          nodeFs.mkdirSync(lowerDir)
          nodeFs.mkdirSync(realDir)
          seedTree(lowerDir, '')
          seedTree(realDir, realDir)
          const ws = await Workspace.open({ watch: watching, lower: syncFsSource(nodeFs, lowerDir), autoCheckpoint: false })
          const wfs = ws.fs as unknown as typeof nodeFs
          const cwd = process.cwd()
          process.chdir(realDir)
          try {
            for (const [i, o] of ops.entries()) {
              const call = `step ${i}: ${o.name}(${JSON.stringify('args' in o ? o.args('', '') : o)})`
              const perform = (fs: typeof nodeFs, root: string) => ('args' in o ? Promise.resolve(run(fs, o, root, root)) : runStream(fs, o, root))
              let expected: unknown
              let actual: unknown
              const expectedEvents = await watchStep(nodeFs, realDir, async () => (expected = await perform(nodeFs, realDir)), fence)
              const actualEvents = await watchStep(wfs, '', async () => (actual = await perform(wfs, '')), () => new Promise((resolve) => setImmediate(resolve)))
              expect(actual, call).toEqual(expected)
              // A stream's writes span turns of the event loop: whether the kernel merged two identical
              // events depends on whether Node read its queue between them (timing, on a loaded host).
              // A directory's copy visits its entries in the host's readdir order (ext4's hash order): the
              // events of each name keep their order, the names' turns among each other are the host's.
              const byName = (events: Record<string, string[]>) =>
                o.name.startsWith('cp') ? Object.fromEntries(Object.entries(events).map(([dir, list]) => [dir, [...list].sort((a, b) => nameOf(a).localeCompare(nameOf(b)))])) : events
              const settled = (events: Record<string, string[]>) => byName('args' in o ? events : mergeRepeats(events))
              expect(settled(actualEvents), call).toEqual(settled(expectedEvents))
              expect(snapshot(wfs, '', ''), call).toEqual(snapshot(nodeFs, realDir, realDir))
            }
          } finally {
            process.chdir(cwd)
            await ws.close()
            nodeFs.rmSync(lowerDir, { recursive: true, force: true })
            nodeFs.rmSync(realDir, { recursive: true, force: true })
          }
        }),
        { seed, numRuns: 40 },
      )
    })
  }
})
