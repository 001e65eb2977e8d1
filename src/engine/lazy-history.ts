/**
 * History that opens lazily. Open needs the live tree and state and the metadata of every
 * checkpoint and operation; a checkpoint's tree and an operation's changes are needed only by
 * restore, diff, undo and checkpointInfo of that point. So a compaction snapshot (format 2,
 * persistence.ts) is a head — what open needs — and parts: blobs in the store, each a table of
 * directories and of operations' changes, read and decoded the first time something needs them.
 *
 * A directory is named by (part, index): one shared by several checkpoints is stored once and,
 * decoded, is one node (the head's live directories name their twin in a part, so they are shared
 * too). A compaction writes only what is new since the last one: a directory decoded from a part,
 * or written to one, keeps its place; a checkpoint or operation never decoded keeps its reference
 * as it is. So compaction costs the live tree and what changed, not the history.
 */
import type { BlobId } from '../blob/store.js'
import { FsError } from '../errors.js'
import { hardLink, linksIn } from '../layer/inodes.js'
import { type DirNode, type Meta, type UpperNode, WHITEOUT, dirNode } from '../layer/nodes.js'
import { type MapRoot, mapEntries, mapSet } from '../layer/persistent-map.js'
import type { Change, OperationRecord } from './journal.js'
import type { DirRef, HeadDir, HistoryPart, LazySnapshotData, PartChange, PartDir, PartInfo, PartNode, StoredChange } from './persistence.js'
import { effectMembers, leafText, lowerText, metaText } from './persistence.js'
import { pendingChanges, pendingRoots } from './pending-history.js'
import { type JsonValue, SessionState } from './state.js'

/** Stand-in for a compensation that was a function: functions do not survive a reopen. */
export const lostCompensation = () => {
  throw new Error('its compensation was a function, which does not survive a reopen (register a named compensator)')
}

/** A part is sealed once its JSON reaches this many characters (a read decodes one whole part). */
const PART_CHARS = 1024 * 1024

const decoder = new TextDecoder()
const encoder = new TextEncoder()


/** Makes `key` of `target` a value of its own, no longer pending. */
function settle(target: object, key: string, registry: WeakMap<object, unknown>, value: unknown): void {
  registry.delete(target)
  Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: true })
}

/** Makes `key` of `target` a value computed on first read (or set), the pending marker dropped then. */
function lazyProperty<T extends object>(target: T, key: string, registry: WeakMap<object, unknown>, load: () => unknown): void {
  // Not enumerable while pending: spreading a record ({ ...record }) does not decode it.
  Object.defineProperty(target, key, {
    configurable: true,
    enumerable: false,
    get() {
      const value = load()
      settle(target, key, registry, value)
      return value
    },
    set(value: unknown) {
      settle(target, key, registry, value)
    },
  })
}

/**
 * A prototype whose `key` is computed on first read of a record made from it (or set), from what
 * `registry` holds for the record: the same as lazyProperty, without an accessor and closures for
 * each of ten thousand records opened. Not an own property while pending: spreading a record does
 * not decode it.
 */
function lazyPrototype<R>(key: string, registry: WeakMap<object, R>, load: (pending: R) => unknown): object {
  const prototype = {}
  Object.defineProperty(prototype, key, {
    configurable: true,
    enumerable: false,
    get(this: object) {
      const value = load(registry.get(this)!)
      settle(this, key, registry, value)
      return value
    },
    set(this: object, value: unknown) {
      settle(this, key, registry, value)
    },
  })
  return prototype
}

function partError(part: number, id: BlobId | undefined, why: string): FsError {
  return new FsError('EIO', 'read', undefined, undefined, `the history part ${part}${id !== undefined ? ` (blob ${id})` : ''} cannot be read: ${why}`)
}

const stateRoot = (pairs: readonly [string, JsonValue][] | undefined): MapRoot<JsonValue> => {
  const s = new SessionState()
  for (const [key, value] of pairs ?? []) s.write(key, value)
  return s.freeze()
}

/** A stored change as the journal holds it (both snapshot formats): the format resolves its own node and directory references. */
export function decodeChange<Node, Dir>(c: StoredChange<Node, Dir>, node: (serial: Node | 'W' | null) => UpperNode | undefined, dir: (ref: Dir) => DirNode): Change {
  switch (c.k) {
    case 'slot':
      return { kind: 'slot', path: c.p, before: node(c.b), after: node(c.a) }
    case 'meta':
      return { kind: 'meta', path: c.p, before: c.b, after: c.a }
    case 'state':
      return { kind: 'state', path: `state:${c.key}`, key: c.key, before: c.b ?? undefined, after: c.a ?? undefined }
    case 'effect':
      return {
        kind: 'effect',
        path: `effect:${c.d}`,
        effect: {
          description: c.d,
          compensate: c.n !== undefined ? { name: c.n, ...(c.args !== undefined ? { args: c.args } : {}) } : lostCompensation,
          ...(c.tier !== undefined ? { tier: c.tier } : {}),
          ...(c.group !== undefined ? { group: c.group } : {}),
          compensated: c.done,
        },
      }
    case 'root':
      return { kind: 'root', path: '/', before: dir(c.b), after: dir(c.a), ...(c.sb ? { stateBefore: stateRoot(c.sb) } : {}), ...(c.sa ? { stateAfter: stateRoot(c.sa) } : {}) }
  }
}

export interface HistoryCounters {
  /** Parts read back from the store and parsed. */
  partsRead: number
  /** Directories decoded from parts. */
  dirsDecoded: number
  /** Operations whose changes were decoded from parts. */
  operationsDecoded: number
}

/** What a compaction wrote, applied to the history once the snapshot is durable (commit). */
export interface StagedHistory {
  readonly parts: PartInfo[]
  readonly written: { info: PartInfo; blobs: BlobId[] }[]
  readonly places: [DirNode, [number, number]][]
  readonly nextPart: number
}

export class LazyHistory {
  /** The parts the last snapshot needs, by serial. */
  private parts = new Map<number, PartInfo>()
  nextPart = 1
  /** Where a directory is stored in a part: a compaction refers to it there instead of writing it again. */
  private readonly places = new WeakMap<DirNode, [number, number]>()
  /** Directories decoded so far, by part and index; the head's live ones under the place they name. */
  private readonly decoded = new Map<number, DirNode[]>()
  /** Parts parsed during one decoding (dropped when it ends: parts are read again when needed). */
  private readonly parsed = new Map<number, HistoryPart>()
  private depth = 0
  /** The blobs each part refers to, once known (garbage collection keeps them). */
  private readonly partBlobs = new Map<number, BlobId[]>()
  readonly counters: HistoryCounters = { partsRead: 0, dirsDecoded: 0, operationsDecoded: 0 }

  /** `read`: a blob's bytes, checked against its id (EIO when they cannot be read or do not match). */
  constructor(private readonly read: (id: BlobId) => Uint8Array) {}

  // ---- decoding --------------------------------------------------------------------------------

  /** Takes a format-2 snapshot's head: its parts, and its live tree decoded (the head's table). */
  load(head: LazySnapshotData): DirNode[] {
    this.parts = new Map(head.parts.map((info) => [info.n, info]))
    this.nextPart = Math.max(this.nextPart, head.nextPart)
    const nodes: DirNode[] = []
    for (const dir of head.dirs) {
      const node = this.build(dir, (ref) => (ref.p === undefined ? nodes[ref.i] : this.dir(ref)))
      nodes.push(node)
      if (dir.a) this.place(node, dir.a[0], dir.a[1])
    }
    return nodes
  }

  /** Decodes one directory of a part (and what it holds), once. */
  dir(ref: DirRef): DirNode {
    const p = ref.p!
    const known = this.decoded.get(p)?.[ref.i]
    if (known) return known
    return this.decoding(() => {
      const part = this.part(p)
      const serial = part.dirs[ref.i]
      if (serial === undefined) throw partError(p, this.parts.get(p)?.id, `it holds no directory ${ref.i}`)
      const node = this.build(serial, (child) => this.dir(child.p === undefined ? { t: 'r', i: child.i, p } : child))
      this.counters.dirsDecoded++
      this.place(node, p, ref.i)
      return node
    })
  }

  /** A checkpoint's tree, decoded when first read; `check` runs on it then (the integrity of its contents). */
  lazyRoot(record: object, ref: DirRef, head: readonly DirNode[], check: (root: DirNode) => void): void {
    if (ref.p === undefined) {
      Object.defineProperty(record, 'root', { value: head[ref.i], writable: true, configurable: true, enumerable: true })
      return
    }
    pendingRoots.set(record, ref)
    lazyProperty(record, 'root', pendingRoots, () => {
      const root = this.dir(ref)
      check(root)
      return root
    })
  }

  /** Operation records whose changes are decoded when first read. */
  private readonly pendingOperation = lazyPrototype('changes', pendingChanges, (at) => this.changes(at))

  /** An operation record of `fields`, its changes decoded from `at` when first read. */
  lazyOperation(fields: Omit<OperationRecord, 'changes'>, at: [number, number]): OperationRecord {
    const record = Object.assign(Object.create(this.pendingOperation) as OperationRecord, fields)
    pendingChanges.set(record, at)
    return record
  }

  private changes([p, k]: [number, number]): Change[] {
    return this.decoding(() => {
      const serial = this.part(p).ops[k]
      if (!Array.isArray(serial)) throw partError(p, this.parts.get(p)?.id, `it holds no operation ${k}`)
      const node = (n: PartNode | 'W' | null) => (n === null ? undefined : this.node(n, p))
      const dir = (ref: DirRef) => this.dir(ref.p === undefined ? { t: 'r', i: ref.i, p } : ref)
      const out = serial.map((c) => decodeChange(c, node, dir))
      this.counters.operationsDecoded++
      return out
    })
  }

  /** A node of part `p` (a directory reference without a part is one of `p`'s own). */
  private node(serial: PartNode | 'W', p: number): UpperNode {
    if (serial === 'W') return WHITEOUT
    if (serial.t === 'r') return this.dir(serial.p === undefined ? { t: 'r', i: serial.i, p } : serial)
    if (serial.t === 'h') return hardLink(serial.i)
    if (serial.t === 'f') return serial.n === undefined ? { type: 'file', meta: serial.m, blob: serial.b, size: serial.s } : { type: 'file', meta: serial.m, blob: serial.b, size: serial.s, nlink: serial.n }
    return serial.n === undefined ? { type: 'symlink', meta: serial.m, target: serial.x } : { type: 'symlink', meta: serial.m, target: serial.x, nlink: serial.n }
  }

  private build(serial: PartDir, dirAt: (ref: DirRef) => DirNode): DirNode {
    const node = dirNode(serial.m, serial.l, null, serial.o)
    const token = {}
    for (const [name, child] of Object.entries(serial.c)) {
      const value: UpperNode = child === 'W' ? WHITEOUT : child.t === 'r' ? dirAt(child) : this.node(child, 0)
      node.children = mapSet(node.children, name, value, token)
      node.links += linksIn(value)
    }
    return node
  }

  private place(node: DirNode, p: number, i: number): void {
    this.places.set(node, [p, i])
    let table = this.decoded.get(p)
    if (!table) this.decoded.set(p, (table = []))
    table[i] ??= node
  }

  /** Runs a decoding; parts parsed for it are dropped when the outermost one ends. */
  private decoding<T>(work: () => T): T {
    this.depth++
    try {
      return work()
    } finally {
      if (--this.depth === 0) this.parsed.clear()
    }
  }

  /** A part read back and parsed (EIO when it cannot be read or is not a part). */
  private part(p: number): HistoryPart {
    const cached = this.parsed.get(p)
    if (cached) return cached
    const info = this.parts.get(p)
    if (!info) throw partError(p, undefined, 'the snapshot does not list it')
    let bytes: Uint8Array
    try {
      bytes = this.read(info.id)
    } catch (error) {
      // The store's own word (a record failing its checksum, a missing blob), whatever class it throws.
      throw partError(p, info.id, (error as Error | undefined)?.message ?? String(error))
    }
    let part: HistoryPart
    try {
      part = JSON.parse(decoder.decode(bytes)) as HistoryPart
    } catch {
      throw partError(p, info.id, 'it is not JSON')
    }
    if (part?.rewindfs !== 'history-part' || part.n !== p || !Array.isArray(part.dirs) || !Array.isArray(part.ops)) throw partError(p, info.id, 'it is not the part the snapshot names')
    this.counters.partsRead++
    this.parsed.set(p, part)
    return part
  }

  // ---- garbage collection ----------------------------------------------------------------------

  /** Parts whose blobs could not be listed (they cannot be read). */
  private readonly unlisted = new Set<number>()
  private listing = false

  /**
   * The parts the snapshot needs and every blob they refer to (all of a part's, whatever of it is
   * still needed): garbage collection keeps them. `complete` is false while some part's blobs are
   * not known yet: those are read in the background, a part at a time with the event loop free in
   * between (a compaction never reads the history), and until then nothing may be deleted.
   */
  blobs(): { ids: BlobId[]; complete: boolean } {
    const ids: BlobId[] = []
    let complete = true
    for (const info of this.parts.values()) {
      ids.push(info.id)
      const known = this.partBlobs.get(info.n)
      if (known === undefined) complete = false
      else for (const id of known) ids.push(id)
    }
    if (!complete) this.listSoon()
    return { ids, complete }
  }

  /** The blobs the part stored as `id` refers to, when it is one of the snapshot's and they are known (listing the rest soon). */
  listOf(id: BlobId): readonly BlobId[] | undefined {
    for (const info of this.parts.values()) {
      if (info.id !== id) continue
      const known = this.partBlobs.get(info.n)
      if (known === undefined) this.listSoon()
      return known
    }
    return undefined
  }

  /** Lists the blobs of the parts not listed yet, in the background (after the caller's turn). */
  private listSoon(): void {
    if (this.listing) return
    this.listing = true
    const next = () => {
      const info = [...this.parts.values()].find((part) => !this.partBlobs.has(part.n) && !this.unlisted.has(part.n))
      if (info === undefined) {
        this.listing = false
        return
      }
      try {
        this.partBlobs.set(info.n, blobsOfPart(this.decoding(() => this.part(info.n))))
      } catch {
        this.unlisted.add(info.n)
      }
      setTimeout(next, 0)
    }
    setTimeout(next, 0)
  }

  // ---- encoding (compaction) -------------------------------------------------------------------

  /** The snapshot of `input`, encoded at once (`encoding` run through). */
  encode(input: SnapshotInput, put: (bytes: Uint8Array) => BlobId): EncodedSnapshot {
    return runThrough(this.encoding(input, put))
  }

  /**
   * The snapshot of `input` in format 2: new parts for what no part holds yet (put as blobs
   * through `put`), references to the parts that do, and the head, as the text of its record's
   * body. It pauses (yields) after every PAUSE_WORK units of work (entries, operations), so a
   * compaction in the background runs it in slices between commits: `input` is the state of one
   * moment, whose trees are frozen. Nothing of the history changes until `commit(staged)`, once
   * the snapshot is durable.
   */
  *encoding(input: SnapshotInput, put: (bytes: Uint8Array) => BlobId): Generator<void, EncodedSnapshot, void> {
    // A place is good while its part is one the history needs (a directory may outlive its part).
    const first = this.nextPart
    const usable = (place: [number, number] | undefined) => (place && (this.parts.has(place[0]) || place[0] >= first) ? place : undefined)
    const pace = new Pace()
    const writer = new PartWriter(this.nextPart, (dir) => usable(this.places.get(dir)), put, pace)
    // Serials are never given twice, even if this snapshot is not written.
    const reserve = () => (this.nextPart = Math.max(this.nextPart, writer.next))
    const refs: number[] = []
    const checkpoints: string[] = []
    for (const c of input.checkpoints) {
      const { record } = c
      const root = pendingRoots.get(record) ?? (yield* writer.dir(record.root))
      reserve()
      if (root.p !== undefined) refs.push(root.p)
      checkpoints.push(
        JSON.stringify({
          id: record.id,
          name: c.name,
          kind: record.kind,
          seq: record.seq,
          createdAt: record.createdAt,
          ...(record.description !== undefined ? { description: record.description } : {}),
          superseded: c.superseded,
          root,
          state: [...mapEntries(record.state)],
          opSeq: record.opSeq,
          ...(record.replayBase === false ? { replayBase: false } : {}),
        }),
      )
    }
    const operations = new TextList()
    for (const { record, undone } of input.operations) {
      // (An operation's changes still in a part keep their place: reading `changes` would decode them.)
      const at = pendingChanges.get(record) ?? writer.changesNow(record.changes) ?? (yield* writer.changes(record.changes))
      reserve()
      refs.push(at[0])
      operations.push(`{${input.identity(record)},"undone":${undone},"at":[${at[0]},${at[1]}]}`)
      if (pace.due()) yield
    }
    const written = yield* writer.seal()
    reserve()
    // The head: the live tree inline, each directory naming its twin in a part.
    const head = new HeadTable((dir) => writer.placed.get(dir) ?? usable(this.places.get(dir)), pace)
    const root = yield* head.dir(input.root)
    // The parts needed: those referred to, and the ones they refer to.
    const infos = new Map<number, PartInfo>([...this.parts, ...written.map(({ info }) => [info.n, info] as const)])
    const needed = new Set<number>()
    const need = (n: number) => {
      if (needed.has(n)) return
      needed.add(n)
      for (const used of infos.get(n)?.u ?? []) need(used)
    }
    for (const n of refs) need(n)
    const parts = [...needed].sort((a, b) => a - b).map((n) => infos.get(n)!)
    const blobs = new Set<BlobId>(head.blobs)
    for (const { info, blobs: refs } of written) {
      if (!needed.has(info.n)) continue
      blobs.add(info.id)
      for (const id of refs) blobs.add(id)
    }
    // The record's body, as JSON.stringify would write `{ t: 'snapshot', data }` (LazySnapshotData),
    // from the pieces encoded above: one stringify of megabytes would be one long pause.
    const rest = JSON.stringify({
      root,
      state: input.state,
      seq: input.seq,
      checkpointSeq: input.checkpointSeq,
      ...(input.resume !== undefined ? { resume: input.resume } : {}),
      ...(input.seen.length > 0 ? { seen: input.seen } : {}),
      // Even empty: a snapshot without it is an older store's (Overlay.rebasing).
      ...(input.bases !== undefined ? { bases: input.bases } : {}),
      ...(input.shown.length > 0 ? { shown: input.shown } : {}),
      ino: input.ino,
      parts,
      nextPart: writer.next,
    })
    // In pieces, never joined here: framing checksums them, and the record goes to the store as pieces (each copy of megabytes costs its page faults).
    const body = ['{"t":"snapshot","data":{"format":2,"dirs":[', ...head.dirs.pieces(), '],', rest.slice(1, -1), ',"checkpoints":[', checkpoints.join(','), '],"operations":[', ...operations.pieces(), ']}}']
    return { body, blobs, staged: { parts, written, places: [...writer.placed], nextPart: writer.next } }
  }

  /**
   * The snapshot `encode` made is durable: its parts are the history's, its directories placed.
   * Returns the parts the history needed before and needs no more (they, and blobs only they named, may be stale).
   */
  commit(staged: StagedHistory): PartInfo[] {
    const kept = new Set(staged.parts.map((info) => info.n))
    const dropped = [...this.parts.values()].filter((info) => !kept.has(info.n))
    this.parts = new Map(staged.parts.map((info) => [info.n, info]))
    for (const { info, blobs } of staged.written) if (this.parts.has(info.n)) this.partBlobs.set(info.n, blobs)
    for (const n of [...this.partBlobs.keys()]) if (!this.parts.has(n)) this.partBlobs.delete(n)
    for (const [dir, [p, i]] of staged.places) this.place(dir, p, i)
    for (const n of [...this.decoded.keys()]) if (!this.parts.has(n)) this.decoded.delete(n)
    return dropped
  }
}

/** A snapshot encoded: its record's body (pieces, in order), the blobs it needs durable, and what the history takes on once it is. */
export interface EncodedSnapshot {
  readonly body: readonly string[]
  readonly blobs: Set<BlobId>
  readonly staged: StagedHistory
}

/** What a snapshot is made of: the durable host's state at one moment (its trees frozen). */
export interface SnapshotInput {
  readonly root: DirNode
  readonly state: [string, JsonValue][]
  readonly seq: number
  readonly checkpointSeq: number
  readonly resume: JsonValue | undefined
  readonly seen: [string, string][]
  /** The flush conflict bases (Overlay.bases); undefined for a store written before they were recorded. */
  readonly bases: [string, string][] | undefined
  /** The versions last shown where they differ from the first sightings (Overlay.shownEntries). */
  readonly shown: [string, string][]
  readonly ino: number
  /**
   * Each checkpoint, with its name and superseded flag as they were then (the rest never changes,
   * but replayBase, read when encoded: it only ever turns false, for an undo or redo the journal
   * after the snapshot holds and marks again on replay).
   */
  readonly checkpoints: readonly {
    readonly record: {
      readonly id: string
      readonly kind: string
      readonly seq: number
      readonly createdAt: number
      readonly description?: string
      readonly root: DirNode
      readonly state: MapRoot<JsonValue>
      readonly opSeq: number
      readonly replayBase?: false
    }
    readonly name: string
    readonly superseded: boolean
  }[]
  /** Each kept operation, with its undone flag as it was then. */
  readonly operations: readonly { readonly record: OperationRecord; readonly undone: boolean }[]
  /** An operation's persisted identity (everything but its changes and undone flag): the JSON members, without braces. */
  readonly identity: (record: OperationRecord) => string
}

/** Units of encoding work (entries, operations) between two pauses of `encoding`. */
const PAUSE_WORK = 128

/** Counts an encoding's work: `due` says when it is time to pause. */
class Pace {
  private work = 0
  due(units = 1): boolean {
    this.work += units
    if (this.work < PAUSE_WORK) return false
    this.work = 0
    return true
  }
}

/** Runs a generator to its end; returns what it returns. */
export function runThrough<T>(steps: Generator<void, T, void>): T {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
  }
}

const NO_DIRS: ReadonlyMap<DirNode, DirRef> = new Map()

/** The directories a change holds: written to a part before it. */
function dirsOf(change: Change): DirNode[] {
  if (change.kind === 'root') return [change.before, change.after]
  if (change.kind !== 'slot') return []
  const { before, after } = change
  if (before?.type === 'dir') return after?.type === 'dir' ? [before, after] : [before]
  return after?.type === 'dir' ? [after] : []
}

/** A node that is not a directory, as a part or the head holds it (JSON). */
function leafOf(node: Exclude<UpperNode, DirNode> | undefined, blobs: Set<BlobId>): string {
  if (node === undefined) return 'null'
  if (node.type === 'whiteout') return '"W"'
  return leafText(node, blobs)
}

/** A directory reference's JSON (DirRef). */
function refText(ref: DirRef): string {
  return ref.p === undefined ? `{"t":"r","i":${ref.i}}` : `{"t":"r","i":${ref.i},"p":${ref.p}}`
}

/** An empty directory's JSON (PartDir, HeadDir), as JSON.stringify would write the object. */
function emptyDirText(node: DirNode, place?: [number, number]): string {
  return `{"m":${metaText(node.meta)},${lowerText(node)},"c":{}${place ? `,"a":[${place[0]},${place[1]}]` : ''}}`
}

/** A directory's JSON (PartDir, HeadDir) from its children's members, as JSON.stringify would write the object: in pieces (TextList says why). */
function dirPieces(node: DirNode, children: readonly string[], place?: [number, number]): string[] {
  return [`{"m":${metaText(node.meta)},${lowerText(node)},"c":{`, ...children, `}${place ? `,"a":[${place[0]},${place[1]}]` : ''}}`]
}

/** One member of a directory's children (a child named `__proto__` is a member like any other). */
function member(name: string, text: string): string {
  return `${JSON.stringify(name)}:${text}`
}

/**
 * The UTF-8 of `pieces` in order, encoded straight into one array: no joined string first (each
 * copy of a megabyte is new memory, and in a VM its page faults cost more than the copy). Sized
 * for one byte a character (JSON is mostly ASCII), grown when a piece needs more.
 */
function utf8Of(pieces: readonly string[]): Uint8Array {
  let chars = 0
  for (const piece of pieces) chars += piece.length
  let out = new Uint8Array(chars)
  let at = 0
  for (const piece of pieces) {
    for (let read = 0; read < piece.length; ) {
      const done = encoder.encodeInto(read === 0 ? piece : piece.slice(read), out.subarray(at))
      at += done.written
      read += done.read
      if (read < piece.length) {
        const grown = new Uint8Array(Math.max(2 * out.length, at + 3 * (piece.length - read)))
        grown.set(out.subarray(0, at))
        out = grown
      }
    }
  }
  // Exact when every character took one byte; otherwise a copy of what was written (no spare bytes kept).
  return at === out.length ? out : out.slice(0, at)
}

/** Characters of a TextList appended before they are copied into one string. */
const TEXT_CHUNK = 64 * 1024

/**
 * Comma-separated JSON items (a part's directories and operations, the head's, a directory's
 * children), kept as flat pieces in order. A string built by appending is a tree of the pieces,
 * every one of which a garbage collection copies while the tree is alive: small items are
 * appended to a chunk that is copied into one string as it fills (slicing a tree does), so their
 * pieces die young. An item of many pieces (a directory of thousands of children) keeps its
 * pieces: joined it would be a new string of megabytes, and each is new memory whose page faults
 * cost more than the copy (its children's text would be copied once into the directory, once more
 * into the list, and again into the record).
 */
class TextList {
  /** Flat pieces: joined in order, the items and the commas between them. */
  private readonly filled: string[] = []
  /** Items appended since the last piece, each after a comma. */
  private chunk = ''
  count = 0
  length = 0

  /** Appends an item; returns its index. */
  push(item: string): number {
    this.chunk += `,${item}`
    this.length += item.length + 1
    if (this.chunk.length >= TEXT_CHUNK) this.fill()
    return this.count++
  }

  /** Appends an item made of pieces, joined only when small; returns its index. */
  pushPieces(pieces: readonly string[]): number {
    let chars = 0
    for (const piece of pieces) chars += piece.length
    if (chars < TEXT_CHUNK) return this.push(pieces.join(''))
    this.fill()
    if (this.count > 0) this.filled.push(',')
    for (const piece of pieces) this.filled.push(piece)
    this.length += chars + 1
    return this.count++
  }

  /** The chunk as a flat piece (slicing copies a tree into one string), its comma kept apart. */
  private fill(): void {
    if (this.chunk === '') return
    if (this.filled.length > 0) this.filled.push(',')
    this.filled.push(this.chunk.slice(1))
    this.chunk = ''
  }

  /** The text as pieces, in order (no copy of the whole). */
  pieces(): string[] {
    this.fill()
    return this.filled.length === 0 ? [''] : this.filled
  }
}

/** Writes new parts: directories children first, then operations' changes, sealed at PART_CHARS. */
class PartWriter {
  /** Directories written by this compaction (to be placed once it is durable). */
  readonly placed = new Map<DirNode, [number, number]>()
  private dirs = new TextList()
  private ops = new TextList()
  private uses = new Set<number>()
  private blobs = new Set<BlobId>()
  private readonly written: { info: PartInfo; blobs: BlobId[] }[] = []
  private serial: number

  constructor(
    public next: number,
    private readonly placeOf: (dir: DirNode) => [number, number] | undefined,
    private readonly put: (bytes: Uint8Array) => BlobId,
    private readonly pace: Pace,
  ) {
    this.serial = this.next++
  }

  /** Where a part holds a directory already, if one does. */
  private known(node: DirNode): DirRef | undefined {
    const place = this.placed.get(node) ?? this.placeOf(node)
    return place && { t: 'r', i: place[1], p: place[0] }
  }

  /**
   * A directory's reference without pausing, where that is cheap: held by a part already, or
   * empty (what most operations that hold a directory, mkdir, make); undefined otherwise.
   */
  private dirNow(node: DirNode): DirRef | undefined {
    const known = this.known(node)
    if (known || node.children.size > 0) return known
    if (this.full()) this.sealOne()
    return this.place(node, emptyDirText(node))
  }

  /** A directory's reference: where a part already holds it, or written now (what it holds first). */
  *dir(node: DirNode): Generator<void, DirRef, void> {
    const now = this.dirNow(node)
    if (now) return now
    const children = new TextList()
    const refs: DirRef[] = []
    for (const [name, child] of mapEntries<UpperNode>(node.children)) {
      let text: string
      if (child.type === 'dir') {
        const ref = this.dirNow(child) ?? (yield* this.dir(child))
        refs.push(ref)
        text = refText(ref)
      } else text = leafOf(child, this.blobs)
      children.push(member(name, text))
      if (this.pace.due()) yield
    }
    if (this.full()) {
      this.sealOne()
      yield
    }
    this.using(refs)
    return this.place(node, dirPieces(node, children.pieces()))
  }

  /** Appends a directory's text to the part being written. */
  private place(node: DirNode, text: string | readonly string[]): DirRef {
    const place: [number, number] = [this.serial, typeof text === 'string' ? this.dirs.push(text) : this.dirs.pushPieces(text)]
    this.placed.set(node, place)
    return { t: 'r', i: place[1], p: place[0] }
  }

  /**
   * An operation's changes, written at once when the directories they hold are (held by a part
   * already, or empty); undefined otherwise (changes() then).
   */
  changesNow(changes: readonly Change[]): [number, number] | undefined {
    let dirs = NO_DIRS
    for (const change of changes) {
      if (change.kind !== 'slot' && change.kind !== 'root') continue
      for (const node of dirsOf(change)) {
        if (dirs.has(node)) continue
        const ref = this.dirNow(node)
        if (ref === undefined) return undefined
        if (dirs === NO_DIRS) dirs = new Map()
        ;(dirs as Map<DirNode, DirRef>).set(node, ref)
      }
    }
    return this.changesWith(changes, dirs)
  }

  /**
   * An operation's changes, written now; returns where. The directories they hold (a tree moved or
   * restored may be large) are written first, in slices; the changes then at once (changesWith).
   */
  *changes(changes: readonly Change[]): Generator<void, [number, number], void> {
    const dirs = new Map<DirNode, DirRef>()
    for (const change of changes) {
      for (const node of dirsOf(change)) if (!dirs.has(node)) dirs.set(node, yield* this.dir(node))
    }
    return this.changesWith(changes, dirs)
  }

  /** An operation's changes, written now, their directories' references given (`dirs`); returns where. */
  private changesWith(changes: readonly Change[], dirs: ReadonlyMap<DirNode, DirRef>): [number, number] {
    const node = (n: UpperNode | undefined) => (n?.type === 'dir' ? refText(dirs.get(n)!) : leafOf(n, this.blobs))
    let text = ''
    for (const change of changes) {
      let item: string
      switch (change.kind) {
        case 'slot':
          item = `{"k":"slot","p":${JSON.stringify(change.path)},"b":${node(change.before)},"a":${node(change.after)}}`
          break
        case 'meta':
          item = `{"k":"meta","p":${JSON.stringify(change.path)},"b":${metaText(change.before)},"a":${metaText(change.after)}}`
          break
        case 'state':
          item = JSON.stringify({ k: 'state', key: change.key, b: change.before ?? null, a: change.after ?? null } satisfies PartChange)
          break
        case 'effect':
          item = JSON.stringify({ ...effectMembers(change.effect), done: change.effect.compensated } satisfies PartChange)
          break
        case 'root': {
          const serial: PartChange = {
            k: 'root',
            b: dirs.get(change.before)!,
            a: dirs.get(change.after)!,
            ...(change.stateBefore ? { sb: [...mapEntries(change.stateBefore)] } : {}),
            ...(change.stateAfter ? { sa: [...mapEntries(change.stateAfter)] } : {}),
          }
          item = JSON.stringify(serial)
          break
        }
      }
      text += text === '' ? item : `,${item}`
    }
    if (this.full()) this.sealOne()
    this.using(dirs.values())
    return [this.serial, this.ops.push(`[${text}]`)]
  }

  /**
   * The part being written refers to these directories: each in another part makes that part
   * used (needed as long as this one is). Taken where the referring text lands, after any seal:
   * the directories an entry holds may be written to the part before it.
   */
  private using(refs: Iterable<DirRef>): void {
    for (const { p } of refs) if (p !== undefined && p !== this.serial) this.uses.add(p)
  }

  /** Whether the part being written is full (a read decodes one whole part). */
  private full(): boolean {
    return this.dirs.length + this.ops.length >= PART_CHARS
  }

  private sealOne(): void {
    if (this.dirs.count === 0 && this.ops.count === 0) return
    const n = this.serial
    const bytes = utf8Of([`{"rewindfs":"history-part","n":${n},"dirs":[`, ...this.dirs.pieces(), '],"ops":[', ...this.ops.pieces(), ']}'])
    const id = this.put(bytes)
    this.written.push({ info: { n, id, u: [...this.uses].sort((a, b) => a - b) }, blobs: [...this.blobs] })
    this.dirs = new TextList()
    this.ops = new TextList()
    this.uses = new Set()
    this.blobs = new Set()
    this.serial = this.next++
  }

  /** Seals the last part; returns every part written. */
  *seal(): Generator<void, { info: PartInfo; blobs: BlobId[] }[], void> {
    this.sealOne()
    yield
    return this.written
  }
}

/** The head's own table: the live tree, children first, each directory naming its twin in a part (as JSON). */
class HeadTable {
  readonly dirs = new TextList()
  readonly blobs = new Set<BlobId>()
  private readonly index = new Map<DirNode, number>()

  constructor(
    private readonly placeOf: (dir: DirNode) => [number, number] | undefined,
    private readonly pace: Pace,
  ) {}

  /** An empty directory's index, written without pausing (most directories of a tree of many are leaves). */
  private dirNow(node: DirNode): number | undefined {
    const known = this.index.get(node)
    if (known !== undefined || node.children.size > 0) return known
    const i = this.dirs.push(emptyDirText(node, this.placeOf(node)))
    this.index.set(node, i)
    return i
  }

  *dir(node: DirNode): Generator<void, number, void> {
    const now = this.dirNow(node)
    if (now !== undefined) return now
    const children = new TextList()
    for (const [name, child] of mapEntries<UpperNode>(node.children)) {
      const text = child.type === 'dir' ? `{"t":"r","i":${this.dirNow(child) ?? (yield* this.dir(child))}}` : leafOf(child, this.blobs)
      children.push(member(name, text))
      if (this.pace.due()) yield
    }
    const i = this.dirs.pushPieces(dirPieces(node, children.pieces(), this.placeOf(node)))
    this.index.set(node, i)
    return i
  }
}

/** Every blob a part refers to (its files' contents). */
function blobsOfPart(part: HistoryPart): BlobId[] {
  const ids = new Set<BlobId>()
  const node = (n: PartNode | 'W' | null) => {
    if (n !== null && n !== 'W' && n.t === 'f') ids.add(n.b)
  }
  for (const dir of part.dirs) for (const child of Object.values(dir.c)) node(child)
  for (const changes of part.ops) {
    for (const change of changes) {
      if (change.k !== 'slot') continue
      node(change.b)
      node(change.a)
    }
  }
  return [...ids]
}

/** Every blob a format-2 snapshot's head refers to: its parts and the live tree's files (rewindfs verify). */
export function blobsOfHead(head: LazySnapshotData): BlobId[] {
  const ids = new Set<BlobId>(head.parts.map((info) => info.id))
  for (const dir of head.dirs) for (const child of Object.values(dir.c)) if (child !== 'W' && child.t === 'f') ids.add(child.b)
  return [...ids]
}

/** Every blob a part's bytes refer to, or why they are no part (rewindfs verify reads parts with it). */
export function readPartBlobs(bytes: Uint8Array, n: number): BlobId[] | string {
  let part: HistoryPart
  try {
    part = JSON.parse(decoder.decode(bytes)) as HistoryPart
  } catch {
    return 'it is not JSON'
  }
  if (part?.rewindfs !== 'history-part' || part.n !== n || !Array.isArray(part.dirs) || !Array.isArray(part.ops)) return 'it is not the part the snapshot names'
  return blobsOfPart(part)
}
