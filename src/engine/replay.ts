/**
 * Replay: how the journal becomes the host's state again (open, repair, a store's reload). A
 * snapshot record loads the tree, checkpoints and operations (format 2 lazily, through the
 * history); every other record is applied as the live engine made it, operations through the
 * journal so that undo works on them as on the live ones.
 */
import type { DirNode, UpperNode } from '../layer/nodes.js'
import { WHITEOUT } from '../layer/nodes.js'
import { type MapRoot, mapGet } from '../layer/persistent-map.js'
import { isListed } from '../lower/listing.js'
import { Overlay } from '../overlay.js'
import { components } from '../path.js'
import { markHistoryRewritten } from './checkpoints.js'
import type { CheckpointRecord, DurableHost } from './durability.js'
import type { Change, Operation, OperationType, SideEffect, UndoStrategy } from './journal.js'
import { type LazyHistory, decodeChange, lostCompensation } from './lazy-history.js'
import { type Group, type LazySnapshotData, type RecordBody, type SerialChange, type SnapshotData, decodeNode, decodeTable, isLazySnapshot, tableNode } from './persistence.js'
import { type JsonValue, SessionState } from './state.js'

export class Replay {
  constructor(
    private readonly host: DurableHost,
    private readonly history: LazyHistory,
    /** Whether every content a checkpoint's tree needs is there (a lazily read one is marked broken if not). */
    private readonly intact: (root: DirNode) => boolean,
  ) {}

  /**
   * Lower paths whose sighting the replay made itself (a replayed write copies its parent
   * directories up and looks them up on disk as it is now), until a 'seen' record says what the
   * live session saw there: that record comes after the write, at its group commit, and wins.
   */
  private readonly sightedHere = new Set<string>()
  /** The replay's own sightings, as the overlay reports them (Overlay.unrecorded) while a replay runs. */
  private readonly sighting: [string, string][] = []

  /** Replays whole group commits in order; stops at the first record that cannot be applied. */
  replay(groups: readonly Group[]): { operations: number; failed?: { group: number; body: number; error: string } } {
    const { overlay } = this.host
    let operations = 0
    let maxIno = 0
    const noteIno = (node: UpperNode | undefined) => {
      // A hard-link name's id comes from the same counter as inode numbers.
      if (node && node.type !== 'whiteout') maxIno = Math.max(maxIno, node.type === 'link' ? node.id : node.meta.ino)
    }
    // Sightings the replay makes are no live session's: they are kept here, and never journaled again (a repair's replay).
    const unrecorded = overlay.unrecorded
    overlay.unrecorded = this.sighting
    try {
      for (let g = 0; g < groups.length; g++) {
        const bodies = groups[g].bodies
        for (let b = 0; b < bodies.length; b++) {
          try {
            if (this.apply(bodies[b], noteIno)) operations++
          } catch (error) {
            return { operations, failed: { group: g, body: b, error: (error as Error)?.message ?? String(error) } }
          }
        }
      }
      return { operations }
    } finally {
      overlay.unrecorded = unrecorded
      this.noteSightings()
      overlay.inodes.next = Math.max(overlay.inodes.next, maxIno + 1)
    }
  }

  /** Takes the replay's own sightings so far into `sightedHere`. */
  private noteSightings(): void {
    for (const [path] of this.sighting) this.sightedHere.add(path)
    this.sighting.length = 0
  }

  /** Empties the host, so a replay can start over (a group that failed half-way, a repair). */
  resetHost(): void {
    const { overlay, state, journal, checkpoints } = this.host
    overlay.setRoot(Overlay.emptyRoot(overlay.lower))
    state.setRoot(new SessionState().freeze())
    journal.load([], 0)
    checkpoints.splice(0)
    overlay.observed.clear()
    this.sightedHere.clear()
    this.sighting.length = 0
    overlay.bases.clear()
    overlay.forgetShown()
    overlay.rebasing = true
    this.host.setResume(undefined)
  }

  /** Applies one record to the host; true for an operation. */
  private apply(body: RecordBody, noteIno: (node: UpperNode | undefined) => void): boolean {
    const { overlay, state, journal, checkpoints } = this.host
    switch (body.t) {
      case 'op':
        journal.replay(operationOf(body), (push) => this.applyChanges(body.changes, push, noteIno))
        return true
      case 'checkpoint':
        checkpoints.push({ ...checkpointOf(body), superseded: false, root: overlay.freeze(), state: state.freeze() })
        this.host.seenCheckpointSeq(body.seq)
        break
      case 'checkpoint-rename': {
        const record = checkpoints.find((c) => c.id === body.id)
        if (record) record.name = body.name
        break
      }
      case 'checkpoint-delete': {
        const index = checkpoints.findIndex((c) => c.id === body.id)
        if (index >= 0) checkpoints.splice(index, 1)
        break
      }
      case 'superseded':
        for (const record of checkpoints) if (body.ids.includes(record.id)) record.superseded = true
        break
      case 'seen': {
        // What the live session saw stands over what the replay saw (the disk may have changed
        // since): the first sighting recorded stands, but a listing's mark gives way to what its
        // first lookup settled (lower/listing.ts).
        this.noteSightings()
        for (const [path, version] of body.entries) {
          const replayed = this.sightedHere.size > 0 && this.sightedHere.delete(path)
          const first = overlay.observed.get(path)
          if (replayed || first === undefined || isListed(first)) overlay.observed.set(path, version)
        }
        this.loadBases(body.bases)
        this.loadShown(body.shown)
        break
      }
      case 'undo':
      case 'redo': {
        let fromSeq = Infinity
        // At the time the undo or redo touched directories (a record written before it was kept: now).
        overlay.atOneTime(body.time, () => {
          for (const id of body.ids) {
            const record = journal.find(id)
            if (!record) continue
            if (body.t === 'undo') journal.revert(record)
            else journal.reapply(record)
            record.undone = body.t === 'undo'
            fromSeq = Math.min(fromSeq, record.seq)
          }
        })
        // The checkpoints recorded before it, as the live undo or redo marked them.
        markHistoryRewritten(checkpoints, fromSeq)
        break
      }
      case 'compensated': {
        const record = journal.find(body.id)
        for (const change of record?.changes ?? []) if (change.kind === 'effect') change.effect.compensated = true
        break
      }
      case 'resume':
        this.host.setResume(body.point)
        break
      case 'commit':
        break
      case 'snapshot': {
        this.restoreSnapshot(body.data)
        // A format-2 snapshot says the next inode number; an older one is walked for it.
        if (isLazySnapshot(body.data)) break
        for (const dir of body.data.dirs) for (const child of Object.values(dir.c)) if (child !== 'W' && child.t !== 'r') noteIno(tableNode(child, []))
        let maxIno = 0
        for (const dir of body.data.dirs) maxIno = Math.max(maxIno, dir.m.ino)
        overlay.inodes.next = Math.max(overlay.inodes.next, maxIno + 1)
        break
      }
    }
    return false
  }

  private applyChanges(changes: readonly SerialChange[], push: (change: Change) => void, noteIno: (node: UpperNode | undefined) => void): void {
    const { overlay, state } = this.host
    // Moved directories are looked up in the tree as it was before this operation.
    const moved = new Map<string, UpperNode | undefined>()
    for (const change of changes) {
      if (change.k === 'slot' && change.a !== null && change.a !== 'W' && change.a.t === 'moved') {
        const node = upperSlot(overlay.root, change.a.p)
        if (node?.type !== 'dir') throw new Error(`rewindfs: the journal moves the directory at ${change.a.p}, which is not there`)
        moved.set(change.a.p, node)
      }
    }
    for (const change of changes) {
      switch (change.k) {
        case 'slot': {
          const node = change.a === null ? undefined : change.a === 'W' ? WHITEOUT : decodeNode(change.a, (path) => moved.get(path))
          noteIno(node)
          // At the record's time (the journal's replay sets it); a change in place leaves its directory as it was.
          overlay.setSlot(change.p, node, change.i !== 1)
          break
        }
        case 'meta':
          overlay.setDirMeta(change.p, change.a)
          break
        case 'state':
          state.write(change.key, change.a ?? undefined)
          break
        case 'effect': {
          const effect: SideEffect = {
            description: change.d,
            compensate: change.n !== undefined ? { name: change.n, ...(change.args !== undefined ? { args: change.args } : {}) } : lostCompensation,
            ...(change.tier !== undefined ? { tier: change.tier } : {}),
            ...(change.group !== undefined ? { group: change.group } : {}),
            compensated: false,
          }
          push({ kind: 'effect', path: `effect:${change.d}`, effect })
          break
        }
        case 'root': {
          const before = overlay.freeze()
          const stateBefore = state.freeze()
          const checkpoint = change.checkpoint !== undefined ? this.host.checkpoints.find((c) => c.id === change.checkpoint) : undefined
          if (change.checkpoint !== undefined && !checkpoint) throw new Error(`rewindfs: the journal restores checkpoint ${change.checkpoint}, which it never created`)
          const after = checkpoint ? checkpoint.root : Overlay.emptyRoot(overlay.lower)
          overlay.setRoot(after)
          if (checkpoint) state.setRoot(checkpoint.state)
          push({ kind: 'root', path: '/', before, after, ...(checkpoint ? { stateBefore, stateAfter: checkpoint.state } : {}) })
          break
        }
      }
    }
  }

  /** Loads a snapshot record into the (empty) host. */
  private restoreSnapshot(data: SnapshotData | LazySnapshotData): void {
    if (isLazySnapshot(data)) return this.restoreLazySnapshot(data)
    const { overlay, state, journal, checkpoints } = this.host
    const nodes = decodeTable(data.dirs)
    overlay.setRoot(nodes[data.root])
    state.setRoot(stateOf(data.state))
    for (const c of data.checkpoints) checkpoints.push({ ...checkpointOf(c), superseded: c.superseded, root: nodes[c.root], state: stateOf(c.state) })
    this.restoreMarks(data)
    journal.load(
      data.operations.map((op) => ({
        ...operationOf(op),
        undone: op.undone,
        changes: op.changes.map((c) => decodeChange(c, (serial) => tableNode(serial, nodes), (i) => nodes[i])),
      })),
      data.seq,
    )
  }

  /** What both snapshot formats carry beside trees and records: the checkpoint counter, the resume point, the lower versions seen. */
  private restoreMarks(data: SnapshotData | LazySnapshotData): void {
    this.host.seenCheckpointSeq(data.checkpointSeq)
    if (data.resume !== undefined) this.host.setResume(data.resume)
    this.noteSightings()
    for (const [path, version] of data.seen ?? []) {
      this.host.overlay.observed.set(path, version)
      if (this.sightedHere.size > 0) this.sightedHere.delete(path)
    }
    this.loadBases(data.bases)
    this.loadShown('shown' in data ? data.shown : undefined)
  }

  /** What reads showed the agent (Overlay.showVersion), in the order read: a reopen keeps what it last read. */
  private loadShown(shown: readonly [string, string][] | undefined): void {
    for (const [path, version] of shown ?? []) this.host.overlay.showVersion(path, version, false)
  }

  /** Flush conflict bases as recorded; none (an older writer's record) turns recording them off (Overlay.rebasing). */
  private loadBases(bases: readonly [string, string][] | undefined): void {
    const { overlay } = this.host
    if (bases === undefined) {
      overlay.rebasing = false
      overlay.bases.clear()
      return
    }
    if (!overlay.rebasing) return
    // In the order taken: a base taken again (a change after an undo took the path back to the disk) replaces the earlier one.
    for (const [path, version] of bases) overlay.bases.set(path, version)
  }

  /**
   * Loads a format-2 snapshot: the live tree and metadata now, every checkpoint's tree and every
   * operation's changes when first read (a checkpoint's contents are checked for integrity then).
   */
  private restoreLazySnapshot(data: LazySnapshotData): void {
    const { overlay, state, journal, checkpoints } = this.host
    const head = this.history.load(data)
    overlay.setRoot(head[data.root])
    state.setRoot(stateOf(data.state))
    overlay.inodes.next = Math.max(overlay.inodes.next, data.ino)
    for (const c of data.checkpoints) {
      const record = { ...checkpointOf(c), superseded: c.superseded, state: stateOf(c.state) } as Omit<CheckpointRecord, 'root'> as CheckpointRecord
      this.history.lazyRoot(record, c.root, head, (root) => {
        if (!this.intact(root)) record.broken = true
      })
      checkpoints.push(record)
    }
    this.restoreMarks(data)
    journal.load(
      data.operations.map((op) => this.history.lazyOperation({ ...operationOf(op), undone: op.undone }, op.at)),
      data.seq,
    )
  }
}

/** The upper-layer value at a path of a tree (undefined: nothing there in the upper layer). */
function upperSlot(root: DirNode, path: string): UpperNode | undefined {
  let node: UpperNode | undefined = root
  for (const part of components(path)) node = node?.type === 'dir' ? mapGet(node.children, part) : undefined
  return node
}

/** Session state from the pairs a record or snapshot stores. */
function stateOf(pairs: readonly [string, JsonValue][]): MapRoot<JsonValue> {
  const session = new SessionState()
  for (const [key, value] of pairs) session.write(key, value)
  return session.freeze()
}

/** An operation as a record or a snapshot stores it, without its changes and undone flag. */
function operationOf(stored: Omit<Extract<RecordBody, { t: 'op' }>, 't' | 'changes'>): Operation {
  return {
    id: stored.id,
    seq: stored.seq,
    type: stored.type as OperationType,
    paths: stored.paths,
    time: stored.time,
    session: stored.session,
    ...(stored.turn !== undefined ? { turn: stored.turn } : {}),
    ...(stored.group !== undefined ? { group: stored.group } : {}),
    ...(stored.description !== undefined ? { description: stored.description } : {}),
    strategy: stored.strategy as UndoStrategy,
  }
}

/** A checkpoint's identity as a record or a snapshot stores it, and a snapshot's replayBase: its tree, state and superseded flag are the caller's. */
function checkpointOf(
  stored: Omit<Extract<RecordBody, { t: 'checkpoint' }>, 't'> & { replayBase?: false },
): Pick<CheckpointRecord, 'id' | 'name' | 'kind' | 'seq' | 'createdAt' | 'description' | 'opSeq' | 'replayBase'> {
  return {
    id: stored.id,
    name: stored.name,
    kind: stored.kind as CheckpointRecord['kind'],
    seq: stored.seq,
    createdAt: stored.createdAt,
    ...(stored.description !== undefined ? { description: stored.description } : {}),
    opSeq: stored.opSeq,
    // Only a snapshot's entry says it (a 'checkpoint' record is of a checkpoint just made, a base).
    ...(stored.replayBase === false ? { replayBase: false as const } : {}),
  }
}
