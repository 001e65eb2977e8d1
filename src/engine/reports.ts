/**
 * Reports computed on request, never on the write path: line counts for undo results and a
 * checkpoint's size. Loaded on first use.
 */
import { decode, isProbablyText } from '../bytes.js'
import { rootEntry } from '../diff.js'
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
export function treeSummary(overlay: Overlay, root: DirNode): { files: number; totalLines: number; bytes: number } {
  let files = 0
  let totalLines = 0
  let bytes = 0
  const walk = (dir: Entry) => {
    for (const name of overlay.names(dir)) {
      const entry = overlay.child(dir, name)!
      if (entry.type === 'dir') walk(entry)
      else if (entry.type === 'file') {
        files++
        const content = overlay.readBytes(entry)
        bytes += content.byteLength
        if (isProbablyText(content)) for (const byte of content) if (byte === 10) totalLines++
      }
    }
  }
  walk(rootEntry(root))
  return { files, totalLines, bytes }
}
