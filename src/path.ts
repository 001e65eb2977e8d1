/**
 * POSIX paths inside the workspace, without node:path (src/ must run in a browser). The root is
 * '/'; '..' never climbs above it (chroot semantics).
 */
import { typeError } from './errors.js'

/** Matches what normalize would change ('//', a '.' or '..' component) or refuses (a NUL byte). */
const NOT_NORMAL = /\/\/|\/\.\.?(?:\/|$)|\0/

/**
 * Lexical normalisation: absolute, no '.', '..' folded, no trailing slash except for '/'. A NUL
 * byte anywhere is refused as Node's fs refuses it (ERR_INVALID_ARG_VALUE), even where a later
 * '..' would fold its component away: no path with a NUL names anything.
 */
export function normalize(path: string): string {
  // Most paths callers pass are normal already: no array to build (a hot path of every fs call).
  if (path.charCodeAt(0) === 47 && (path.length === 1 || path.charCodeAt(path.length - 1) !== 47) && !NOT_NORMAL.test(path)) return path
  if (path.includes('\0')) throw nulError(path)
  const parts: string[] = []
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') parts.pop()
    else parts.push(part)
  }
  return '/' + parts.join('/')
}

/** Node's error for a path with a NUL byte, word for word. */
function nulError(path: string): Error {
  const shown = path.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\0/g, '\\x00')
  return typeError('ERR_INVALID_ARG_VALUE', `The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received '${shown}'`)
}

/** Resolves a caller's path against a working directory without folding '..' early. */
export function absolute(path: string, cwd: string): string {
  return path.startsWith('/') ? path : cwd === '/' ? '/' + path : cwd + '/' + path
}

export function join(parent: string, name: string): string {
  return parent === '/' ? '/' + name : parent + '/' + name
}

export function dirname(path: string): string {
  const index = path.lastIndexOf('/')
  return index <= 0 ? '/' : path.slice(0, index)
}

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}

/** The non-empty components of a path, '.' and '..' kept (resolution gives them meaning). */
export function components(path: string): string[] {
  const parts: string[] = []
  let start = 0
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path.charCodeAt(i) === 47) {
      if (i > start) parts.push(path.slice(start, i))
      start = i + 1
    }
  }
  return parts
}

/** Whether `path` is `ancestor` or inside it (both normalised). */
export function isWithin(path: string, ancestor: string): boolean {
  return ancestor === '/' || path === ancestor || path.startsWith(ancestor + '/')
}

/** `path` relative to `from`, for symlink targets and messages. */
export function relative(from: string, to: string): string {
  const a = components(from)
  const b = components(to)
  let common = 0
  while (common < a.length && common < b.length && a[common] === b[common]) common++
  return [...a.slice(common).map(() => '..'), ...b.slice(common)].join('/')
}

/** Node's path.join(parent, name): the joined path normalised, '..' folded lexically, relative kept relative. */
export function joinLexically(parent: string, name: string): string {
  const absolutePath = parent.startsWith('/')
  const parts: string[] = []
  for (const part of (parent + '/' + name).split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop()
    else if (part !== '..' || !absolutePath) parts.push(part)
  }
  const joined = parts.join('/')
  return absolutePath ? '/' + joined : joined || '.'
}
