/**
 * Purge: a file's contents (a leaked secret) removed from the live tree, every checkpoint, every undo
 * record and the lower-source pins a flush made, the bytes overwritten, and the durable journal
 * rewritten.
 */
import type { BlobId } from '../blob/store.js'
import { FsError } from '../errors.js'
import type { PinnedLower } from '../flush/pinned-lower.js'
import type { DirNode, FileNode, UpperNode } from '../layer/nodes.js'
import { recordPath } from '../layer/inodes.js'
import { mapEntries, mapGet } from '../layer/persistent-map.js'
import { Overlay } from '../overlay.js'
import { components } from '../path.js'
import type { CheckpointRecord } from './durability.js'
import type { Change, Journal } from './journal.js'

export interface PurgeReport {
  /** Blobs overwritten and removed. */
  erased: number
  /** Checkpoints and operations whose reference to the content was replaced by an empty file. */
  checkpoints: number
  operations: number
  /** The lower layer still holds the path: it is read-only, so its copy stays (flush a deletion to remove it). */
  lowerStillHasIt: boolean
  /** Blobs kept because another path holds the same bytes. */
  sharedElsewhere: number
  /**
   * With a durable store: whether it overwrote what it kept of the erased blobs (Store.eraseBlobs:
   * the directory and OPFS stores zero their pack records), or only deleted them (their bytes may stay in
   * its files until it reuses the space).
   */
  storeOverwrote?: boolean
}

export interface PurgeHost {
  readonly overlay: Overlay
  readonly lower: PinnedLower
  readonly checkpoints: CheckpointRecord[]
  readonly journal: Journal
  reachable(): Set<BlobId>
  /** Rewrites the durable journal, then erases `erase` from the store (nothing refers to them any more). */
  compact(erase: ReadonlySet<BlobId>): Promise<void>
  /** Whether the durable store overwrites erased blobs (undefined: no store). */
  readonly storeOverwrites: boolean | undefined
}

export async function purge(host: PurgeHost, target: string): Promise<PurgeReport> {
  const { overlay, lower, journal } = host
  const ids = new Set<BlobId>()
  const purgedNode = (node: FileNode): FileNode => ({ ...node, blob: overlay.blobs.put(new Uint8Array(0)), size: 0 })
  /** Slots that hold the content: the path's, and the inode records of hard links it was (in any tree or record). */
  const slots = new Set([target])
  const slotAt = (root: DirNode, path: string) => {
    let node: UpperNode | undefined = root
    for (const part of components(path)) node = node?.type === 'dir' ? mapGet(node.children, part) : undefined
    return node
  }
  /** A copy of `root` with the file at `target` emptied, or the same root when it has none there. */
  const scrub = (root: DirNode): DirNode => {
    const scratch = new Overlay(lower, overlay.blobs, overlay.inodes, root)
    let path = target
    let node = slotAt(root, path)
    if (node?.type === 'link') {
      // A hard-link name: its inode's record holds the content (every name of it is emptied).
      slots.add((path = recordPath(node.id)))
      node = slotAt(root, path)
    }
    if (node?.type !== 'file') return root
    ids.add(node.blob)
    scratch.setSlot(path, purgedNode(node))
    return scratch.freeze()
  }
  let checkpoints = 0
  const scrubbed = new Set<CheckpointRecord>()
  for (const record of host.checkpoints) {
    const root = scrub(record.root)
    if (root !== record.root) {
      ;(record as { root: DirNode }).root = root
      scrubbed.add(record)
      checkpoints++
    }
  }
  let operations = 0
  const rewritten = new Set<(typeof journal.records)[number]>()
  for (const record of journal.records) {
    for (const change of record.changes) {
      if (change.kind !== 'slot' || change.path !== target) continue
      for (const node of [change.before, change.after]) if (node?.type === 'link') slots.add(recordPath(node.id))
    }
  }
  const live = overlay.lookup(target, false)
  if (live?.link !== undefined) slots.add(recordPath(live.link))
  for (const record of journal.records) {
    let touched = false
    const changes = record.changes.map((change): Change => {
      if (change.kind === 'slot' && slots.has(change.path)) {
        if (change.before?.type !== 'file' && change.after?.type !== 'file') return change
        const fix = (node: UpperNode | undefined) => (node?.type === 'file' ? (ids.add(node.blob), purgedNode(node)) : node)
        touched = true
        return { ...change, before: fix(change.before), after: fix(change.after) }
      }
      if (change.kind === 'root') {
        const before = scrub(change.before)
        const after = scrub(change.after)
        if (before !== change.before || after !== change.after) touched = true
        return { ...change, before, after }
      }
      return change
    })
    if (touched) {
      ;(record as { changes: readonly Change[] }).changes = changes
      rewritten.add(record)
      operations++
    }
  }
  // Nothing to purge anywhere: a mistyped path or a directory is an error, as unlink's would be
  // (a path that is a directory now but held a file in history has found that file above).
  if (ids.size === 0 && live === undefined && lower.stat(target) === undefined && lower.source.stat(target) === undefined) throw new FsError('ENOENT', 'purge', target)
  if (ids.size === 0 && live?.type === 'dir') throw new FsError('EISDIR', 'purge', target)
  if (live?.node?.type === 'file') {
    ids.add(live.node.blob)
    // Not journaled: an undo record of the purge would hold the very bytes being removed.
    journal.silently(() => overlay.setContent(live, new Uint8Array(0)))
  }
  // The old lower content a flush pinned is our copy too.
  const pinned = lower.forget(target, overlay.blobs.put(new Uint8Array(0)))
  if (pinned !== undefined) ids.add(pinned)
  // The same contents under other names in history: the file's names before a rename (of it or a
  // directory above it), a copy, a hard link's other name. Scrubbed there too, unless the live tree
  // still holds them somewhere (then nothing of them is erased: sharedElsewhere).
  const empty = overlay.blobs.put(new Uint8Array(0))
  const held = holders(new Set([...ids].filter((id) => id !== empty)))
  const liveHeld = new Set(held(overlay.freeze()).map((found) => found.blob))
  const elsewhere = new Set([...ids].filter((id) => id !== empty && !liveHeld.has(id)))
  if (elsewhere.size > 0) {
    const everywhere = holders(elsewhere)
    const scrubAll = (root: DirNode): DirNode => {
      const found = everywhere(root)
      if (found.length === 0) return root
      const scratch = new Overlay(lower, overlay.blobs, overlay.inodes, root)
      for (const { path, node } of found) scratch.setSlot(path, purgedNode(node))
      return scratch.freeze()
    }
    for (const record of host.checkpoints) {
      const root = scrubAll(record.root)
      if (root !== record.root) {
        if (!scrubbed.has(record)) checkpoints++
        ;(record as { root: DirNode }).root = root
      }
    }
    for (const record of journal.records) {
      let touched = false
      // A slot's file, or a directory's subtree (a directory renamed, removed or made whole).
      const fix = (node: UpperNode | undefined): UpperNode | undefined => {
        const fixed = node?.type === 'file' && elsewhere.has(node.blob) ? purgedNode(node) : node?.type === 'dir' ? scrubAll(node) : node
        if (fixed !== node) touched = true
        return fixed
      }
      const changes = record.changes.map((change): Change => {
        if (change.kind === 'slot') {
          const before = fix(change.before)
          const after = fix(change.after)
          return before === change.before && after === change.after ? change : { ...change, before, after }
        }
        if (change.kind !== 'root') return change
        const before = scrubAll(change.before)
        const after = scrubAll(change.after)
        if (before === change.before && after === change.after) return change
        touched = true
        return { ...change, before, after }
      })
      if (touched) {
        ;(record as { changes: readonly Change[] }).changes = changes
        if (!rewritten.has(record)) operations++
      }
    }
  }
  // Re-reference what the live tree now holds, then erase every purged blob nothing reaches.
  const reachable = host.reachable()
  let erased = 0
  let sharedElsewhere = 0
  const erase = new Set<BlobId>()
  for (const id of ids) {
    if (reachable.has(id)) sharedElsewhere++
    else {
      erase.add(id)
      if (overlay.blobs.erase(id)) erased++
    }
  }
  // The durable journal and blob files must forget the content too: rewrite them, then overwrite the blobs there.
  await host.compact(erase)
  return {
    erased,
    checkpoints,
    operations,
    lowerStillHasIt: lower.source.stat(target)?.type === 'file',
    sharedElsewhere,
    ...(host.storeOverwrites !== undefined ? { storeOverwrote: host.storeOverwrites } : {}),
  }
}

/**
 * The files under a tree (upper nodes only: the lower's content is not the workspace's) whose
 * content is one of `blobs`, by path. Trees share subtrees (checkpoints, undo records): each
 * directory node is walked once across every tree asked about.
 */
function holders(blobs: ReadonlySet<BlobId>): (root: DirNode) => { path: string; node: FileNode; blob: BlobId }[] {
  const below = new Map<DirNode, { path: string; node: FileNode; blob: BlobId }[]>()
  const walk = (dir: DirNode): { path: string; node: FileNode; blob: BlobId }[] => {
    let found = below.get(dir)
    if (found !== undefined) return found
    found = []
    for (const [name, node] of mapEntries(dir.children)) {
      if (node.type === 'file' && blobs.has(node.blob)) found.push({ path: '/' + name, node, blob: node.blob })
      else if (node.type === 'dir') for (const inner of walk(node)) found.push({ ...inner, path: '/' + name + inner.path })
    }
    below.set(dir, found)
    return found
  }
  return walk
}
