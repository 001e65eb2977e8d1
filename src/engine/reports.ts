/**
 * Reports computed on request, never on the write path: line counts for undo results and a
 * checkpoint's size.
 */
import { decode, isProbablyText } from '../bytes.js'
import { diffTrees, rootEntry } from '../diff.js'
import type { DirNode } from '../layer/nodes.js'
import type { Entry, Overlay } from '../overlay.js'

/** Lines an undo brings back and takes away, by line content (order-insensitive, cheap). */
export function lineCounts(before: Uint8Array | undefined, after: Uint8Array | undefined): { restored: number; removed: number } {
  const lines = (bytes: Uint8Array | undefined) => {
    if (!bytes || bytes.byteLength === 0 || !isProbablyText(bytes)) return []
    const all = decode(bytes).split('\n')
    if (all[all.length - 1] === '') all.pop() // a final newline ends the last line, it does not start one
    return all
  }
  const a = lines(before)
  const b = lines(after)
  const counts = new Map<string, number>()
  for (const line of a) counts.set(line, (counts.get(line) ?? 0) + 1)
  let common = 0
  for (const line of b) {
    const n = counts.get(line) ?? 0
    if (n > 0) {
      counts.set(line, n - 1)
      common++
    }
  }
  return { restored: a.length - common, removed: b.length - common }
}

/** Files, text lines and bytes in a tree. */
export interface TreeSize {
  files: number
  totalLines: number
  bytes: number
}

/**
 * The lower layer's size, per lower source, taken the first time it is asked for: the lower as the
 * workspace's trees see it stays the same (a flush pins what it rewrites), so once is enough. A
 * lower directory changed outside the workspace afterwards is not counted again.
 */
const lowerSizes = new WeakMap<object, TreeSize>()

/**
 * A tree's size: the lower layer's, plus and minus the files that differ from it. O(paths the tree
 * changed), after the first call over a lower source (which reads the whole lower layer once).
 */
export function treeSize(overlay: Overlay, lower: object, lowerRoot: DirNode, root: DirNode): TreeSize {
  let base = lowerSizes.get(lower)
  if (base === undefined) {
    base = walkSize(overlay, lowerRoot)
    lowerSizes.set(lower, base)
  }
  const size = { ...base }
  const count = (entry: Entry | undefined, sign: 1 | -1) => {
    if (entry?.type !== 'file') return
    const content = overlay.readBytes(entry)
    size.files += sign
    size.bytes += sign * content.byteLength
    size.totalLines += sign * newlines(content)
  }
  for (const record of diffTrees(overlay, lowerRoot, root)) {
    count(record.before, -1)
    count(record.after, 1)
  }
  return size
}

function newlines(content: Uint8Array): number {
  if (!isProbablyText(content)) return 0
  let lines = 0
  for (let at = content.indexOf(10); at !== -1; at = content.indexOf(10, at + 1)) lines++
  return lines
}

/** Files, text lines and bytes of a whole tree, read entry by entry. */
function walkSize(overlay: Overlay, root: DirNode): TreeSize {
  const size: TreeSize = { files: 0, totalLines: 0, bytes: 0 }
  const walk = (dir: Entry) => {
    for (const name of overlay.names(dir)) {
      const entry = overlay.child(dir, name)!
      if (entry.type === 'dir') walk(entry)
      else if (entry.type === 'file') {
        const content = overlay.readBytes(entry)
        size.files++
        size.bytes += content.byteLength
        size.totalLines += newlines(content)
      }
    }
  }
  walk(rootEntry(root))
  return size
}
