/**
 * The workspace view as one tree walk, for search_files, find_files and list_directory. Paths the
 * workspace changed (and the directories holding them) come through the overlay (`ws.fs`); every
 * other path shows the lower source as it is, so when the source offers a walker (a directory on
 * disk does: LowerSource.walker) the walk reads those paths through it instead of asking the overlay
 * path by path: on a large untouched tree that is most of the time saved. Entries come in name order
 * (pre-order, one generator with an explicit stack), pruned by .gitignore files as git does when
 * asked, and the walk stops as soon as its consumer does.
 */
import { decode } from '../src/bytes.js'
import type { LowerWalker } from '../src/lower/source.js'
import { basename, dirname, join } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'
import { type GitignoreRules, gitignore } from './gitignore.js'

export type EntryType = 'file' | 'dir' | 'symlink'

export interface WalkEntry {
  /** The workspace path. */
  readonly path: string
  readonly type: EntryType
  /**
   * With a walker: the path with no symlink along it (a path asked for through a link resolves as
   * the view resolves it, never on disk), and whether the workspace left it untouched, so the walker
   * reads it there.
   */
  readonly real?: string
  readonly untouched?: boolean
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

/** One .gitignore's rules, for the directory it is in. */
interface Rules {
  readonly base: string
  readonly rules: GitignoreRules
}

/** The lower source's walker, and the paths where the view is not the source (changed, or above a change). */
interface Direct {
  readonly walker: LowerWalker
  readonly dirty: ReadonlySet<string>
}

/** Bytes of a file ViewReader.scan reads at a time from disk (at least the 8 KiB a binary file is told by). */
export const READ_PART = 64 * 1024

/** Reads the view: the overlay for changed paths, the source's walker for the rest when it has one. */
export class ViewReader {
  private constructor(
    private readonly ws: Workspace,
    private readonly direct: Direct | undefined,
  ) {}

  static async open(ws: Workspace): Promise<ViewReader> {
    return new ViewReader(ws, directOf(ws))
  }

  /** The entry at a workspace path, not following a final symlink (ENOENT as ws.fs throws it). */
  async entry(path: string): Promise<WalkEntry> {
    const stats = await this.ws.fs.promises.lstat(path)
    const type: EntryType = stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'symlink' : 'file'
    if (this.direct === undefined) return { path, type }
    // Links along the way resolve in the view ('..' folds at the root, an absolute target is a
    // workspace path), never on disk: the walker is given the path they lead to.
    const real = path === '/' ? '/' : join(String(await this.ws.fs.promises.realpath(dirname(path))), basename(path))
    return { path, type, real, untouched: !this.direct.dirty.has(real) }
  }

  /**
   * A path given by name, where a walk starts: a final symlink is followed, as rg, grep -r and ls
   * follow the ones named on their command line, the path kept as given (ELOOP, ENOENT for a
   * broken one, as ws.fs throws them). Links below it are not followed.
   */
  async root(path: string): Promise<WalkEntry> {
    const entry = await this.entry(path)
    if (entry.type !== 'symlink') return entry
    const type: EntryType = (await this.ws.fs.promises.stat(path)).isDirectory() ? 'dir' : 'file'
    if (this.direct === undefined) return { path, type }
    const real = String(await this.ws.fs.promises.realpath(path))
    return { path, type, real, untouched: !this.direct.dirty.has(real) }
  }

  /** An entry of a listed directory: untouched when the directory is (the dirty set holds every ancestor of a change). */
  private child(dir: WalkEntry, name: string, type: EntryType): WalkEntry {
    const path = join(dir.path, name)
    if (dir.real === undefined || this.direct === undefined) return { path, type }
    const real = join(dir.real, name)
    return { path, type, real, untouched: dir.untouched || !this.direct.dirty.has(real) }
  }

  /** A directory's entries, sorted by name. */
  async list(dir: WalkEntry): Promise<WalkEntry[]> {
    let entries: WalkEntry[]
    if (dir.untouched && this.direct) {
      entries = this.direct.walker.list(dir.real!).map(({ name, type }) => this.child(dir, name, type))
    } else {
      const dirents = await this.ws.fs.promises.readdir(dir.path, { withFileTypes: true })
      entries = dirents.map((dirent) => this.child(dir, String(dirent.name), dirent.isDirectory() ? 'dir' : dirent.isSymbolicLink() ? 'symlink' : 'file'))
    }
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  }

  /**
   * A file's bytes. Through the walker they may be read into a buffer that is reused: valid until
   * this reader's next read, so a caller that keeps them copies them.
   */
  async read(entry: WalkEntry): Promise<Uint8Array> {
    if (entry.untouched && this.direct) return this.direct.walker.read(entry.real!)
    return (await this.ws.fs.promises.readFile(entry.path)) as Uint8Array
  }

  /**
   * A file's bytes a part at a time, each valid only during its `visit`, until `visit` returns
   * false: READ_PART bytes at a time from disk through a walker that reads parts (an empty file
   * gives none), else the whole file as one part (the overlay holds a file's bytes whole).
   */
  async scan(entry: WalkEntry, visit: (part: Uint8Array) => boolean): Promise<void> {
    const walker = this.direct?.walker
    if (entry.untouched && walker?.readParts) return walker.readParts(entry.real!, READ_PART, visit)
    const bytes = await this.read(entry)
    if (bytes.length > 0) visit(bytes)
  }

  async stat(entry: WalkEntry): Promise<{ size: number; mtimeMs: number }> {
    if (entry.untouched && this.direct) return this.direct.walker.stat(entry.real!)
    const stats = await this.ws.fs.promises.lstat(entry.path)
    return { size: Number(stats.size), mtimeMs: Number(stats.mtimeMs) }
  }

  async readlink(entry: WalkEntry): Promise<string> {
    if (entry.untouched && this.direct) return this.direct.walker.readlink(entry.real!)
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
 * The lower source's walker, when it has one, and the paths where reading it would not give the
 * view: those the workspace changed and their ancestors (ws.changes() is the view against the source
 * as it is now, flushes included).
 */
function directOf(ws: Workspace): Direct | undefined {
  const source = ws.lower.source
  if (source.walker === undefined) return undefined
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
  return { walker: source.walker(), dirty } // one walker per reader: a walk never reads into another's buffer
}

/** Lets other calls run during a long walk (sync disk reads would otherwise hold the event loop). */
const breathe = typeof setImmediate === 'function' ? () => new Promise<void>((resolve) => setImmediate(resolve)) : () => new Promise<void>((resolve) => setTimeout(resolve, 0))

function gitignoreRules(base: string, text: string): Rules {
  return { base, rules: gitignore(text) }
}

/** Git's precedence: the deepest .gitignore with a rule for the path decides (its last matching rule). */
function isIgnored(levels: readonly Rules[], entry: WalkEntry): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const { base, rules } = levels[i]
    const relative = base === '/' ? entry.path.slice(1) : entry.path.slice(base.length + 1)
    const verdict = rules.test(relative, entry.type === 'dir')
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
 * directory yields itself; a root that is a symlink is followed.
 */
export async function* walk(reader: ViewReader, root: string, options: WalkOptions): AsyncGenerator<WalkEntry, void, undefined> {
  const start = await reader.root(root)
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
