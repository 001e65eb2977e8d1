/**
 * Differences between two upper trees over the same lower source, as one Change per path.
 * Shared subtrees are skipped by identity, so the cost is proportional to the paths that differ,
 * not to the size of the tree. Unified diffs are computed only when a Change's `patch` is read.
 * Hard-link names show their inode's record in their own tree: when records differ, the names of
 * those inodes are compared too, walking only directories that hold hard links (layer/inodes.ts).
 */
import { bytesEqual, decode, isProbablyText } from './bytes.js'
import type { EntryType } from './lower/source.js'
import type { DirNode, Meta, UpperNode } from './layer/nodes.js'
import { INODES, tableOf } from './layer/inodes.js'
import { type MapRoot, emptyMap, mapDiff, mapEntries, mapKeys } from './layer/persistent-map.js'
import { unifiedPatch } from './line-diff.js'
import type { Entry, Overlay } from './overlay.js'

export interface Change {
  path: string
  type: 'added' | 'modified' | 'deleted'
  entry: 'file' | 'dir' | 'symlink'
  /** Unified diff for text files (computed on first read). */
  patch?: string
}

/** A change with the entries on both sides, for restore to apply. */
export interface ChangeRecord {
  readonly change: Change
  readonly before: Entry | undefined
  readonly after: Entry | undefined
}

/**
 * The bound for a unified diff: an edit-length cap keeps results independent of machine load (a
 * timeout made the same diff succeed or give up depending on what else ran). Beyond it the patch
 * is undefined (too different to show as a diff).
 */
const PATCH_MAX_EDITS = 4000

/** A tree's root as an entry whose hard-link names resolve in that tree's own inode table. */
export function rootEntry(root: DirNode): Entry {
  return { path: '/', type: 'dir', node: root, lowerPath: root.lower, lowerStat: undefined, link: undefined, inodes: tableOf(root) }
}

const NO_RECORDS: MapRoot<UpperNode> = emptyMap<UpperNode>()

export interface DiffOptions {
  /**
   * Files whose modification times differ are changed too (a flush's status: make and tsc
   * --incremental read mtimes). Directories' times are never compared (every entry written in one
   * moves it), nor atimes; a symlink's time is not written by any flush target.
   */
  readonly times?: boolean
}

export function diffTrees(overlay: Overlay, from: DirNode, to: DirNode, options: DiffOptions = {}): ChangeRecord[] {
  const records: ChangeRecord[] = []
  // Inodes whose records differ: their names differ wherever they are, even in shared directories.
  const changed = new Set<number>()
  const fromTable = tableOf(from)
  const toTable = tableOf(to)
  if (fromTable !== toTable) mapDiff(fromTable?.children ?? NO_RECORDS, toTable?.children ?? NO_RECORDS, (key) => changed.add(Number(key)))
  /** Names in `dir` that may show a changed inode: such hard links, and directories holding links. */
  const linked = (dir: DirNode | undefined, into: Set<string>) => {
    if (dir === undefined || dir.links === 0 || changed.size === 0) return
    for (const [name, child] of mapEntries<UpperNode>(dir.children)) {
      if ((child.type === 'link' && changed.has(child.id)) || (child.type === 'dir' && child.links > 0 && name !== INODES)) into.add(name)
    }
  }
  const emit = (path: string, type: Change['type'], entry: EntryType, before?: Entry, after?: Entry) => {
    records.push({ change: makeChange(overlay, path, type, entry, before, after), before, after })
  }
  const subtree = (entry: Entry, type: 'added' | 'deleted') => {
    emit(entry.path, type, entry.type, type === 'deleted' ? entry : undefined, type === 'added' ? entry : undefined)
    if (entry.type !== 'dir') return
    for (const name of overlay.names(entry)) subtree(overlay.child(entry, name)!, type)
  }
  const compare = (before: Entry | undefined, after: Entry | undefined) => {
    if (!before && !after) return
    if (!after) return subtree(before!, 'deleted')
    if (!before) return subtree(after, 'added')
    if (before.type !== after.type) {
      emit(after.path, 'modified', after.type, before, after)
      if (before.type === 'dir') for (const name of overlay.names(before)) subtree(overlay.child(before, name)!, 'deleted')
      if (after.type === 'dir') for (const name of overlay.names(after)) subtree(overlay.child(after, name)!, 'added')
      return
    }
    if (!sameEntry(overlay, before, after, options.times === true)) emit(after.path, 'modified', after.type, before, after)
    if (after.type === 'dir') walk(before, after)
  }
  const walk = (before: Entry, after: Entry) => {
    const a = before.node as DirNode | undefined
    const b = after.node as DirNode | undefined
    let names: Set<string>
    if (a === b && before.lowerPath === after.lowerPath) names = new Set()
    else if (a && b && a.lower === b.lower) {
      names = new Set()
      mapDiff(a.children, b.children, (name) => names.add(name))
    } else if (!a && b && b.lower === before.lowerPath) names = new Set(mapKeys(b.children))
    else if (a && !b && a.lower === after.lowerPath) names = new Set(mapKeys(a.children))
    else names = new Set([...overlay.names(before), ...overlay.names(after)])
    linked(a, names)
    if (b !== a) linked(b, names)
    names.delete(INODES)
    for (const name of [...names].sort()) compare(overlay.child(before, name), overlay.child(after, name))
  }
  compare(rootEntry(from), rootEntry(to))
  return records
}

function sameEntry(overlay: Overlay, a: Entry, b: Entry, times: boolean): boolean {
  if (a.node !== undefined && a.node === b.node) return true
  // Content and metadata decide, whether a name is a hard link in one tree and not in the other.
  if (a.node === undefined && b.node === undefined && a.lowerPath === b.lowerPath) return true
  if (overlay.meta(a).mode !== overlay.meta(b).mode) return false
  if (times && a.type === 'file' && overlay.meta(a).mtimeMs !== overlay.meta(b).mtimeMs) return false
  if (a.type === 'dir') return true
  if (a.type === 'symlink') return overlay.readLink(a) === overlay.readLink(b)
  if (a.node?.type === 'file' && b.node?.type === 'file') return a.node.blob === b.node.blob
  if (overlay.size(a) !== overlay.size(b)) return false
  const left = readable(overlay, a)
  const right = readable(overlay, b)
  return left !== undefined && right !== undefined && bytesEqual(left, right)
}

/** The bytes, or undefined when they cannot be read (content dropped by the integrity check). */
function readable(overlay: Overlay, entry: Entry): Uint8Array | undefined {
  try {
    return overlay.readBytes(entry)
  } catch {
    return undefined
  }
}

function makeChange(overlay: Overlay, path: string, type: Change['type'], entry: EntryType, before?: Entry, after?: Entry): Change {
  const change: Change = { path, type, entry }
  if (entry !== 'file' || (before && before.type !== 'file')) return change
  const oldBytes = before ? captured(overlay, before) : () => new Uint8Array(0)
  const newBytes = after && after.type === 'file' ? captured(overlay, after) : () => new Uint8Array(0)
  if (oldBytes === undefined || newBytes === undefined) return change // no patch for unreadable content
  let patch: string | undefined | null = null
  Object.defineProperty(change, 'patch', {
    enumerable: true,
    configurable: true,
    get() {
      if (patch === null) {
        const [a, b] = [oldBytes(), newBytes()]
        patch = a === undefined || b === undefined ? undefined : unifiedDiff(path, a, b)
      }
      return patch
    },
  })
  return change
}

/**
 * A file's content for a patch (undefined: it cannot be read now). Captured now (a reference, not
 * a copy), so a later write cannot change the patch; an upper file's content only the durable
 * store holds (contents on demand) is immutable under its id, so it is read when the patch is,
 * not for every change listed.
 */
function captured(overlay: Overlay, entry: Entry): (() => Uint8Array | undefined) | undefined {
  if (entry.node?.type === 'file' && !overlay.blobs.resident(entry.node.blob)) {
    let bytes: Uint8Array | undefined | null = null
    return () => (bytes === null ? (bytes = readable(overlay, entry)) : bytes)
  }
  const bytes = readable(overlay, entry)
  return bytes === undefined ? undefined : () => bytes
}

export function unifiedDiff(path: string, before: Uint8Array, after: Uint8Array): string | undefined {
  if (!isProbablyText(before) || !isProbablyText(after)) return undefined
  return unifiedPatch(path, decode(before), decode(after), 3, PATCH_MAX_EDITS)
}


/**
 * The upper-layer slots that differ between two trees (for the journal: a restore or reset is
 * recorded as root pointers and expanded to slots only when undo needs them). Directories merged
 * with the same lower directory are walked; anything else is one slot. Inode records that are made
 * or changed come first and records that are deleted last, so applying the slots in order (or in
 * reverse) never leaves a hard-link name without its inode (layer/inodes.ts).
 */
export function upperSlotDiff(
  from: DirNode,
  to: DirNode,
  slot: (path: string, before: UpperNode | undefined, after: UpperNode | undefined) => void,
  meta: (path: string, before: Meta, after: Meta) => void,
): void {
  const deleted: [string, UpperNode][] = []
  const walk = (path: string, a: DirNode, b: DirNode) => {
    if (a === b) return
    if (a.meta !== b.meta) meta(path, a.meta, b.meta)
    mapDiff(a.children, b.children, (name, before, after) => {
      const child = path === '/' ? '/' + name : path + '/' + name
      if (path === '/' && name === INODES) return
      if (before?.type === 'dir' && after?.type === 'dir' && before.lower === after.lower) walk(child, before, after)
      else slot(child, before, after)
    })
  }
  const fromTable = tableOf(from)
  const toTable = tableOf(to)
  if (fromTable !== toTable) {
    const prefix = '/' + INODES + '/'
    mapDiff(fromTable?.children ?? NO_RECORDS, toTable?.children ?? NO_RECORDS, (key, before, after) => {
      if (after === undefined) deleted.push([prefix + key, before!])
      else slot(prefix + key, before, after)
    })
  }
  walk('/', from, to)
  for (const [path, before] of deleted) slot(path, before, undefined)
}
