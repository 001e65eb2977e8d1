/**
 * Incremental mark-and-sweep over the blob store. It runs in small slices off the checkpoint and
 * restore paths; roots are every live tree of every session plus retained checkpoints (and, as the
 * engine grows, undo records and journal references). Trees are frozen when a cycle starts, so
 * marking sees immutable snapshots; anything stored or re-referenced during the cycle is protected
 * by the store, so a blob is removed only when nothing could reach it.
 */
import type { DirNode, UpperNode } from '../layer/nodes.js'
import { mapEntries } from '../layer/persistent-map.js'
import type { BlobId, BlobStore } from './store.js'

export interface RootSet {
  /** Freezes live trees and returns every root to keep: trees and loose blob ids. */
  roots(): Iterable<DirNode | BlobId>
}

export class Collector {
  private readonly sets = new Set<RootSet>()
  private marking: { stack: DirNode[]; visited: Set<DirNode>; marked: Set<BlobId> } | undefined
  private sweeping: { marked: Set<BlobId>; cursor: IterableIterator<BlobId> } | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  /** Completed cycles, for tests and status. */
  cycles = 0

  constructor(
    private readonly blobs: BlobStore,
    /** Bytes allocated since the last cycle that make a new one worth running. */
    private readonly threshold = 32 * 1024 * 1024,
  ) {
    blobs.onWork = () => this.maybeSchedule()
  }

  register(set: RootSet): () => void {
    this.sets.add(set)
    return () => this.sets.delete(set)
  }

  get running(): boolean {
    return this.marking !== undefined || this.sweeping !== undefined
  }

  /**
   * Schedules a background slice, which starts a cycle when enough has been allocated since the
   * last one. Never starts one here: callers may be mid-operation (a write that has stored its blob
   * but not yet linked it into the tree), and a cycle's roots must be taken between operations.
   */
  maybeSchedule(): void {
    if (this.running || this.timer !== undefined) return
    // Delta compaction runs in the same background slices, between collection cycles.
    this.scheduleSlice()
  }

  /** Runs a whole cycle now, and the pending delta compaction (tests, close, explicit calls). */
  collect(): void {
    if (!this.running) this.start()
    while (!this.step(100_000)) {
      /* keep going */
    }
    this.blobs.compact(Infinity)
  }

  /** Every blob id reachable from the registered roots right now (a full, synchronous mark). */
  reachable(): Set<BlobId> {
    const marked = new Set<BlobId>()
    const visited = new Set<DirNode>()
    const stack: DirNode[] = []
    for (const set of this.sets) for (const root of set.roots()) typeof root === 'string' ? marked.add(root) : stack.push(root)
    while (stack.length > 0) {
      const dir = stack.pop()!
      if (visited.has(dir)) continue
      visited.add(dir)
      for (const [, node] of mapEntries<UpperNode>(dir.children)) {
        if (node.type === 'file') marked.add(node.blob)
        else if (node.type === 'dir') stack.push(node)
      }
    }
    return marked
  }

  private start(): void {
    const stack: DirNode[] = []
    const marked = new Set<BlobId>()
    this.blobs.beginCollection()
    for (const set of this.sets) {
      for (const root of set.roots()) {
        if (typeof root === 'string') marked.add(root)
        else stack.push(root)
      }
    }
    this.marking = { stack, visited: new Set(), marked }
  }

  /** Does up to `budget` units of work; returns true when the cycle has finished. */
  step(budget: number): boolean {
    if (this.marking) {
      const { stack, visited, marked } = this.marking
      while (budget > 0 && stack.length > 0) {
        const dir = stack.pop()!
        if (visited.has(dir)) continue
        visited.add(dir)
        for (const [, node] of mapEntries<UpperNode>(dir.children)) {
          budget--
          if (node.type === 'file') marked.add(node.blob)
          else if (node.type === 'dir' && !visited.has(node)) stack.push(node)
        }
      }
      if (stack.length > 0) return false
      // A kept delta keeps the chain of blobs it is rebuilt from.
      for (const id of [...marked]) for (let base = this.blobs.baseOf(id); base !== undefined && !marked.has(base); base = this.blobs.baseOf(base)) marked.add(base)
      this.sweeping = { marked, cursor: this.blobs.ids() }
      this.marking = undefined
    }
    if (this.sweeping) {
      if (!this.blobs.sweep(this.sweeping.marked, this.sweeping.cursor, Math.max(budget, 1))) return false
      this.sweeping = undefined
      this.cycles++
    }
    return true
  }

  private scheduleSlice(): void {
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (!this.running && this.blobs.allocatedSinceCollection >= this.threshold) this.start()
      // After a cycle ends the next slice goes on with delta compaction: its queue only wakes the
      // collector when it becomes non-empty, so a cycle that ran while it was full must hand back.
      if (this.running) {
        this.step(20_000)
        this.scheduleSlice()
      } else if (!this.blobs.compact(8)) this.scheduleSlice()
    }, 0)
    // Background collection must never keep a Node process alive.
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}
