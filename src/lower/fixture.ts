/**
 * In-memory lower sources. The fixture, FileSystemTree and empty sources all build the same
 * immutable tree (MemoryTreeBuilder → MemorySource); only the input format differs. Everything is
 * validated and copied at construction, so a source never changes afterwards and its versions can
 * be computed once.
 */
import { FsError } from '../errors.js'
import { basename, dirname, normalize } from '../path.js'
import type { LowerSource, LowerStat } from './source.js'

/** `{ '/app/a.txt': 'text', 'bin/x': bytes, 'empty/': '' }`: keys are paths, a trailing '/' makes a directory. */
export type FixtureFiles = { readonly [path: string]: string | Uint8Array }

const FILE_MODE = 0o644
const DIR_MODE = 0o755
const SYMLINK_MODE = 0o777
/** What ext4 reports for a directory, and what the overlay reports for its own. */
const DIR_SIZE = 4096

const utf8 = new TextEncoder()

// ---- shared helpers (also used by file-system-tree.ts and index.ts) ------------------------------

/** Uint8Array or Buffer, also from another realm (instanceof would miss those). */
export function isBytes(value: unknown): value is Uint8Array {
  return ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]'
}

/** An object literal (any realm), not a class instance, array or typed array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === null || Object.getPrototypeOf(proto) === null
}

/** 'a string', 'an array', 'a Map'…: for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (Array.isArray(value)) return 'an array'
  if (isBytes(value)) return 'a Uint8Array'
  if (typeof value === 'object') {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name
    return typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name}` : 'an object'
  }
  return `a ${typeof value}`
}

/** 32-bit FNV-1a as 8 hex digits: cheap, and fixture versions only need to be stable. */
export function fnv1a(bytes: Uint8Array): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < bytes.length; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, '0')
}

/** A private copy as a plain Uint8Array (Buffer#slice would share memory). */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes)
}

export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text)
}

// ---- the immutable tree --------------------------------------------------------------------------

type Leaf = { readonly type: 'file'; readonly bytes: Uint8Array } | { readonly type: 'symlink'; readonly target: string }

type MemoryEntry =
  | { readonly type: 'file'; readonly stat: LowerStat; readonly bytes: Uint8Array }
  | { readonly type: 'dir'; readonly stat: LowerStat; readonly names: readonly string[] }
  | { readonly type: 'symlink'; readonly stat: LowerStat; readonly target: string }

/**
 * Collects normalised absolute paths; parents are implied. `label` starts every error message, so
 * the caller's format is named ('rewindfs: fixture: …').
 */
export class MemoryTreeBuilder {
  private readonly dirs = new Map<string, Set<string>>([['/', new Set()]])
  private readonly leaves = new Map<string, Leaf>()

  constructor(private readonly label: string) {}

  dir(path: string): void {
    if (this.dirs.has(path)) return
    if (this.leaves.has(path)) throw new TypeError(`${this.label}: '${path}' is both a ${this.leaves.get(path)!.type} and a directory`)
    this.link(path)
    this.dirs.set(path, new Set())
  }

  /** Takes ownership of `bytes`: pass a copy. */
  file(path: string, bytes: Uint8Array): void {
    this.leaf(path, { type: 'file', bytes })
  }

  symlink(path: string, target: string): void {
    this.leaf(path, { type: 'symlink', target })
  }

  private leaf(path: string, leaf: Leaf): void {
    if (path === '/') throw new TypeError(`${this.label}: the root '/' must be a directory, not a ${leaf.type}`)
    const children = this.dirs.get(path)
    if (children) {
      const child = children.values().next()
      const why = child.done ? 'also given as a directory' : `also the parent of '${path}/${child.value}'`
      throw new TypeError(`${this.label}: '${path}' is a ${leaf.type} but ${why}`)
    }
    if (this.leaves.has(path)) throw new TypeError(`${this.label}: '${path}' is given twice`)
    this.link(path)
    this.leaves.set(path, leaf)
  }

  /** Enters `path` in its parent directory, creating the parents it implies. */
  private link(path: string): void {
    const parent = dirname(path)
    const leaf = this.leaves.get(parent)
    if (leaf) throw new TypeError(`${this.label}: '${parent}' is a ${leaf.type} but also the parent of '${path}'`)
    this.dir(parent)
    this.dirs.get(parent)!.add(basename(path))
  }

  /** Freezes the tree. Inode numbers follow sorted path order, so equal inputs get equal numbers. */
  build(kind: string, timeMs: number = Date.now()): LowerSource {
    const paths = [...this.dirs.keys(), ...this.leaves.keys()].sort()
    const entries = new Map<string, MemoryEntry>()
    paths.forEach((path, index) => {
      const base = { mtimeMs: timeMs, ctimeMs: timeMs, atimeMs: timeMs, birthtimeMs: timeMs, ino: index + 1 }
      const children = this.dirs.get(path)
      if (children) {
        const names = Object.freeze([...children].sort())
        const stat = { type: 'dir', mode: DIR_MODE, size: DIR_SIZE, ...base, version: `dir:${names.length}:${fnv1a(utf8.encode(names.join('/')))}` } as const
        entries.set(path, { type: 'dir', stat: Object.freeze(stat), names })
        return
      }
      const leaf = this.leaves.get(path)!
      if (leaf.type === 'file') {
        const stat = { type: 'file', mode: FILE_MODE, size: leaf.bytes.length, ...base, version: `${leaf.bytes.length}:${fnv1a(leaf.bytes)}` } as const
        entries.set(path, { type: 'file', stat: Object.freeze(stat), bytes: leaf.bytes })
      } else {
        const bytes = utf8.encode(leaf.target)
        const stat = { type: 'symlink', mode: SYMLINK_MODE, size: bytes.length, ...base, version: `link:${bytes.length}:${fnv1a(bytes)}` } as const
        entries.set(path, { type: 'symlink', stat: Object.freeze(stat), target: leaf.target })
      }
    })
    return new MemorySource(kind, entries)
  }
}

class MemorySource implements LowerSource {
  constructor(
    readonly kind: string,
    private readonly entries: ReadonlyMap<string, MemoryEntry>,
  ) {}

  // Callers pass normalised paths; normalising a miss keeps sloppy callers (and '..') inside the root.
  private lookup(path: string): MemoryEntry | undefined {
    return this.entries.get(path) ?? this.entries.get(normalize(path))
  }

  stat(path: string): LowerStat | undefined {
    return this.lookup(path)?.stat
  }

  readdir(path: string): string[] {
    const entry = this.lookup(path)
    if (!entry) throw new FsError('ENOENT', 'scandir', path)
    if (entry.type !== 'dir') throw new FsError('ENOTDIR', 'scandir', path)
    return [...entry.names]
  }

  readFile(path: string): Uint8Array {
    const entry = this.lookup(path)
    if (!entry) throw new FsError('ENOENT', 'open', path)
    if (entry.type === 'dir') throw new FsError('EISDIR', 'read')
    // lstat semantics: opening a symlink without following it fails as open(O_NOFOLLOW) does.
    if (entry.type === 'symlink') throw new FsError('ELOOP', 'open', path)
    return copyBytes(entry.bytes) // a copy, so no caller can change the fixture under its version
  }

  readlink(path: string): string {
    const entry = this.lookup(path)
    if (!entry) throw new FsError('ENOENT', 'readlink', path)
    if (entry.type !== 'symlink') throw new FsError('EINVAL', 'readlink', path)
    return entry.target
  }
}

// ---- fixtures ------------------------------------------------------------------------------------

const LABEL = 'rewindfs: fixture'

/** Splits a fixture key into a normalised path; '..' may fold inside the root but not climb out. */
function fixturePath(key: string): { path: string; isDir: boolean } {
  if (key === '') throw new TypeError(`${LABEL}: the empty string is not a path`)
  if (key.includes('\0')) throw new TypeError(`${LABEL}: path ${JSON.stringify(key)} contains a NUL byte`)
  const parts: string[] = []
  for (const part of key.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      if (parts.length === 0) throw new TypeError(`${LABEL}: path '${key}' escapes the root with '..'`)
      parts.pop()
    } else parts.push(part)
  }
  return { path: '/' + parts.join('/'), isDir: key.endsWith('/') }
}

/**
 * A read-only source from a plain object of paths. Strings are stored as UTF-8; a key ending in
 * '/' is an empty directory (its value must be empty). Files are 0o644, directories 0o755, all
 * times are the construction time; versions are the length plus FNV-1a of the content.
 */
export function fixtureSource(files: FixtureFiles): LowerSource {
  if (!isPlainObject(files)) throw new TypeError(`${LABEL}: expected an object of paths, got ${describe(files)}`)
  const builder = new MemoryTreeBuilder(LABEL)
  for (const key of Object.keys(files)) {
    const value: unknown = files[key]
    const { path, isDir } = fixturePath(key)
    if (typeof value !== 'string' && !isBytes(value)) {
      throw new TypeError(`${LABEL}: '${key}' must be a string or a Uint8Array, got ${describe(value)}`)
    }
    if (isDir) {
      // Content given for a directory would be silently lost; that is always a mistake.
      if (value.length !== 0) throw new TypeError(`${LABEL}: '${key}' ends in '/' (a directory) but has content`)
      builder.dir(path)
    } else builder.file(path, typeof value === 'string' ? utf8.encode(value) : copyBytes(value))
  }
  return builder.build('fixture')
}
