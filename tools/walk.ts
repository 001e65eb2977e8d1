/**
 * The workspace view as one tree walk, for search_files, find_files and list_directory. Paths the
 * workspace changed (and the directories holding them) come through the overlay (`ws.fs`); every
 * other path shows the lower source as it is, so when that is a directory on disk the walk reads it
 * straight from there (node:fs, loaded only then) instead of asking the overlay path by path: on a
 * large untouched tree that is most of the time saved. Entries come in name order (pre-order, one
 * generator with an explicit stack), pruned by .gitignore files as git does when asked, and the
 * walk stops as soon as its consumer does.
 */
import ignore, { type Ignore } from 'ignore'
import { decode } from '../src/bytes.js'
import { basename, dirname, join } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'

export type EntryType = 'file' | 'dir' | 'symlink'

export interface WalkEntry {
  /** The workspace path. */
  readonly path: string
  readonly type: EntryType
  /** The path on disk, for an entry the workspace has not changed over a directory lower. */
  readonly host?: string
}

export interface WalkOptions {
  /** Leave out what .gitignore files (and .git/info/exclude) exclude, and .git directories. */
  readonly gitignore: boolean
  /** Entries the caller does not want; a directory skipped is not entered. */
  readonly skip?: (entry: WalkEntry) => boolean
  /** Whether to enter a directory that was yielded (default: yes). */
  readonly descend?: (entry: WalkEntry) => boolean
  /** Told of each entry .gitignore left out (a directory counts once). */
  readonly onIgnored?: (entry: WalkEntry) => void
}

type Disk = typeof import('./disk.js')

/** One .gitignore's rules, for the directory it is in. */
interface Rules {
  readonly base: string
  readonly rules: Ignore
}

/** Reads the view: the overlay for changed paths, the disk for the rest when the lower is a directory. */
export class ViewReader {
  private constructor(
    private readonly ws: Workspace,
    private readonly disk: { module: Disk; root: string; dirty: ReadonlySet<string> } | undefined,
  ) {}

  static async open(ws: Workspace): Promise<ViewReader> {
    return new ViewReader(ws, await diskOf(ws))
  }

  /** The entry at a workspace path, not following a final symlink (ENOENT as ws.fs throws it). */
  async entry(path: string): Promise<WalkEntry> {
    const stats = await this.ws.fs.promises.lstat(path)
    const type: EntryType = stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'symlink' : 'file'
    return this.make(path, type)
  }

  private make(path: string, type: EntryType, parentHost?: string): WalkEntry {
    if (parentHost !== undefined) return { path, type, host: parentHost === '/' ? `/${basename(path)}` : `${parentHost}/${basename(path)}` }
    const disk = this.disk
    if (disk === undefined || disk.dirty.has(path)) return { path, type }
    return { path, type, host: path === '/' ? disk.root : disk.root === '/' ? path : disk.root + path }
  }

  /** A directory's entries, sorted by name. */
  async list(dir: WalkEntry): Promise<WalkEntry[]> {
    let entries: WalkEntry[]
    if (dir.host !== undefined && this.disk) {
      entries = this.disk.module.listDisk(dir.host).map(({ name, type }) => this.make(join(dir.path, name), type, dir.host))
    } else {
      const dirents = await this.ws.fs.promises.readdir(dir.path, { withFileTypes: true })
      entries = dirents.map((dirent) => this.make(join(dir.path, String(dirent.name)), dirent.isDirectory() ? 'dir' : dirent.isSymbolicLink() ? 'symlink' : 'file'))
    }
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  }

  /**
   * A file's bytes. From disk they are read into a buffer that is reused: valid until the next
   * read, so a caller that keeps them copies them.
   */
  async read(entry: WalkEntry): Promise<Uint8Array> {
    if (entry.host !== undefined && this.disk) return this.disk.module.readDisk(entry.host)
    return (await this.ws.fs.promises.readFile(entry.path)) as Uint8Array
  }

  async stat(entry: WalkEntry): Promise<{ size: number; mtimeMs: number }> {
    if (entry.host !== undefined && this.disk) return this.disk.module.statDisk(entry.host)
    const stats = await this.ws.fs.promises.lstat(entry.path)
    return { size: Number(stats.size), mtimeMs: Number(stats.mtimeMs) }
  }

  async readlink(entry: WalkEntry): Promise<string> {
    if (entry.host !== undefined && this.disk) return this.disk.module.readlinkDisk(entry.host)
    return String(await this.ws.fs.promises.readlink(entry.path))
  }

  /** The text of a file at a workspace path, or undefined when there is none. */
  async text(path: string): Promise<string | undefined> {
    try {
      const entry = await this.entry(path)
      return entry.type === 'file' ? decode(await this.read(entry)) : undefined
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT' || (error as { code?: unknown }).code === 'ENOTDIR') return undefined
      throw error
    }
  }
}

/**
 * The disk behind the view, when the lower source is a directory and reading it straight gives
 * what the view shows: everywhere except at the paths the workspace changed and their ancestors
 * (ws.changes() is the view against the directory as it is now, flushes included).
 */
async function diskOf(ws: Workspace): Promise<{ module: Disk; root: string; dirty: ReadonlySet<string> } | undefined> {
  if (ws.lower.kind !== 'directory') return undefined // a browser never loads the node-only modules below
  const { DirectorySource } = await import('../adapters/node-fs/directory.js')
  const source = ws.lower.source
  if (!(source instanceof DirectorySource)) return undefined
  let changes: { path: string }[]
  try {
    changes = ws.changes()
  } catch {
    return undefined // content the change list needs is unreadable (a damaged store): all through the overlay
  }
  const dirty = new Set<string>()
  for (const change of changes) {
    for (let path = change.path; !dirty.has(path); path = dirname(path)) {
      dirty.add(path)
      if (path === '/') break
    }
  }
  return { module: await import('./disk.js'), root: source.root, dirty }
}

/** Lets other calls run during a long walk (sync disk reads would otherwise hold the event loop). */
const breathe = typeof setImmediate === 'function' ? () => new Promise<void>((resolve) => setImmediate(resolve)) : () => new Promise<void>((resolve) => setTimeout(resolve, 0))

function gitignoreRules(base: string, text: string): Rules {
  return { base, rules: ignore({ ignorecase: false, allowRelativePaths: true }).add(text) }
}

/** Git's precedence: the deepest .gitignore with a rule for the path decides (its last matching rule). */
function isIgnored(levels: readonly Rules[], entry: WalkEntry): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const { base, rules } = levels[i]
    const relative = (base === '/' ? entry.path.slice(1) : entry.path.slice(base.length + 1)) + (entry.type === 'dir' ? '/' : '')
    const verdict = rules.test(relative)
    if (verdict.ignored) return true
    if (verdict.unignored) return false
  }
  return false
}

/** The rules that apply above `root`: .git/info/exclude at the workspace root, then each ancestor's .gitignore. */
async function ancestorRules(reader: ViewReader, root: string): Promise<Rules[]> {
  const levels: Rules[] = []
  const exclude = await reader.text('/.git/info/exclude')
  if (exclude !== undefined) levels.push(gitignoreRules('/', exclude))
  const ancestors: string[] = []
  if (root !== '/') {
    for (let dir = dirname(root); ; dir = dirname(dir)) {
      ancestors.unshift(dir)
      if (dir === '/') break
    }
  }
  for (const dir of ancestors) {
    const text = await reader.text(join(dir, '.gitignore'))
    if (text !== undefined) levels.push(gitignoreRules(dir, text))
  }
  return levels
}

/**
 * Every entry under `root` (not `root` itself), depth first in name order. A root that is not a
 * directory yields itself.
 */
export async function* walk(reader: ViewReader, root: string, options: WalkOptions): AsyncGenerator<WalkEntry, void, undefined> {
  const start = await reader.entry(root)
  if (start.type !== 'dir') {
    if (!options.skip?.(start)) yield start
    return
  }
  let levels = options.gitignore ? await ancestorRules(reader, root) : []
  // A root the rules above it exclude was asked for by name: only the rules inside it apply.
  if (isIgnored(levels, start)) levels = []
  const stack: { entries: WalkEntry[]; index: number; rules: boolean }[] = []
  const enter = async (dir: WalkEntry) => {
    const entries = await reader.list(dir)
    let rules = false
    if (options.gitignore) {
      const file = entries.find((entry) => entry.type === 'file' && basename(entry.path) === '.gitignore')
      if (file) {
        levels.push(gitignoreRules(dir.path, decode(await reader.read(file))))
        rules = true
      }
    }
    stack.push({ entries, index: 0, rules })
  }
  await enter(start)
  let seen = 0
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]
    if (frame.index === frame.entries.length) {
      stack.pop()
      if (frame.rules) levels.pop()
      continue
    }
    const entry = frame.entries[frame.index++]
    if (++seen % 2048 === 0) await breathe()
    if (options.gitignore && ((entry.type === 'dir' && basename(entry.path) === '.git') || isIgnored(levels, entry))) {
      options.onIgnored?.(entry)
      continue
    }
    if (options.skip?.(entry)) continue
    yield entry
    if (entry.type === 'dir' && options.descend?.(entry) !== false) await enter(entry)
  }
}
