/**
 * The journal's durable form. Each record is one line: `{"v":1,"c":<crc32 of b>,"b":<body>}`, the
 * body starting with `"n":<its position in the journal>`.
 * Bodies describe what to do again on replay, not the state before it: replaying them in order
 * rebuilds the tree, and the "before" side of every change is whatever the replayed tree held,
 * exactly as it was the first time. Each record carries its position, so a duplicated, reordered
 * or lost record shows. A torn tail is told from damage (decodeJournal); an unknown version is
 * refused. A record whose checksum holds was written by rewindfs as it stands: open takes its body
 * after a check of its kind alone (its shape is what encodeRecord wrote; a deep walk of every record
 * would cost open more than the replay does). `rewindfs verify` and repair, which exist to find
 * what is wrong, check every body against the full schema with zod.
 */
import * as z from 'zod/mini'
import type { BlobId } from '../blob/store.js'
import type { DirNode, EntryNode, FileNode, Meta, SymlinkNode, UpperNode } from '../layer/nodes.js'
import { WHITEOUT, dirNode } from '../layer/nodes.js'
import { type HardLink, hardLink, linksIn } from '../layer/inodes.js'
import { mapEntries, mapSet } from '../layer/persistent-map.js'
import type { SideEffect } from './journal.js'
import type { JsonValue } from './state.js'
import { HostBuffer, builtin } from '../host.js'

export const FORMAT_VERSION = 1

// ---- node encoding ---------------------------------------------------------------------------

export type SerialNode =
  /** `n`: an inode record's link count (layer/inodes.ts). */
  | { t: 'f'; m: Meta; b: BlobId; s: number; n?: number }
  | { t: 'l'; m: Meta; x: string; n?: number }
  /** A hard-link name: the inode's id in the tree's inode table. */
  | { t: 'h'; i: number }
  /** `o`: the mode a directory copied up from the lower one had then (DirNode.lowerMode). */
  | { t: 'd'; m: Meta; l: string | null; o?: number; c: Record<string, SerialNode | 'W'> }
  /** The node that was at path `p` just before this operation (a moved directory). */
  | { t: 'moved'; p: string }

// ---- node texts ------------------------------------------------------------------------------
//
// The JSON of nodes and metadata (SerialNode, PartNode, Meta) written directly, as JSON.stringify
// writes the objects (same members, same order; a directory's children in the tree's order). Every
// record and every snapshot entry carries a Meta, four of whose numbers are the same millisecond
// time: JSON.stringify converts each number anew (about 1 µs a Meta), a template goes through V8's
// number-to-string cache (one lookup for the three repeats, and for the next records of the same
// millisecond).

/** A number as JSON writes it (a non-finite one is null). */
export function numberText(value: number): string {
  return Number.isFinite(value) ? `${value}` : 'null'
}

/** A Meta's JSON. */
export function metaText(meta: Meta): string {
  return `{"mode":${numberText(meta.mode)},"uid":${numberText(meta.uid)},"gid":${numberText(meta.gid)},"atimeMs":${numberText(meta.atimeMs)},"mtimeMs":${numberText(meta.mtimeMs)},"ctimeMs":${numberText(meta.ctimeMs)},"birthtimeMs":${numberText(meta.birthtimeMs)},"ino":${numberText(meta.ino)}}`
}

/** A file, symlink or hard-link name's JSON (SerialNode, PartNode); a file's blob goes to `blobs`. */
export function leafText(node: FileNode | SymlinkNode | HardLink, blobs: { add(id: BlobId): unknown }): string {
  if (node.type === 'link') return `{"t":"h","i":${numberText(node.id)}}`
  const links = node.nlink === undefined ? '' : `,"n":${numberText(node.nlink)}`
  if (node.type === 'symlink') return `{"t":"l","m":${metaText(node.meta)},"x":${JSON.stringify(node.target)}${links}}`
  blobs.add(node.blob)
  return `{"t":"f","m":${metaText(node.meta)},"b":${JSON.stringify(node.blob)},"s":${numberText(node.size)}${links}}`
}

/** A directory's lower members' JSON: its lower path (`l`) and, where known, the mode it was copied up with (`o`). */
export function lowerText(node: DirNode): string {
  const lower = `"l":${node.lower === null ? 'null' : JSON.stringify(node.lower)}`
  return node.lowerMode === undefined ? lower : `${lower},"o":${numberText(node.lowerMode)}`
}

/**
 * A node's JSON (SerialNode; a directory whole; a moved one, `moved`, is the record's to write);
 * the blobs it names go to `blobs`. A child named `__proto__` is a member like any other.
 */
export function nodeText(node: EntryNode | HardLink, blobs: { add(id: BlobId): unknown }): string {
  if (node.type !== 'dir') return leafText(node, blobs)
  // mkdir's new directory: no walk of its children (a generator and an array per record).
  let children = ''
  if (node.children.size > 0) {
    const members: string[] = []
    for (const [name, child] of mapEntries<UpperNode>(node.children)) members.push(`${JSON.stringify(name)}:${child.type === 'whiteout' ? '"W"' : nodeText(child, blobs)}`)
    children = members.join(',')
  }
  return `{"t":"d","m":${metaText(node.meta)},${lowerText(node)},"c":{${children}}}`
}

export function decodeNode(serial: SerialNode, moved: (path: string) => UpperNode | undefined): UpperNode | undefined {
  switch (serial.t) {
    case 'f':
    case 'l':
    case 'h':
      return leafNode(serial)
    case 'moved':
      return moved(serial.p)
    case 'd': {
      const dir = dirNode(serial.m, serial.l, null, serial.o)
      const token = {}
      for (const [name, child] of Object.entries(serial.c)) {
        const node = child === 'W' ? WHITEOUT : decodeNode(child, moved)
        if (node) {
          dir.children = mapSet(dir.children, name, node, token)
          dir.links += linksIn(node)
        }
      }
      return dir
    }
  }
}

/** A file, symlink or hard-link name as a node. */
function leafNode(serial: { t: 'f'; m: Meta; b: BlobId; s: number; n?: number } | { t: 'l'; m: Meta; x: string; n?: number } | { t: 'h'; i: number }): UpperNode {
  if (serial.t === 'h') return hardLink(serial.i)
  if (serial.t === 'f') return serial.n === undefined ? { type: 'file', meta: serial.m, blob: serial.b, size: serial.s } : { type: 'file', meta: serial.m, blob: serial.b, size: serial.s, nlink: serial.n }
  return serial.n === undefined ? { type: 'symlink', meta: serial.m, target: serial.x } : { type: 'symlink', meta: serial.m, target: serial.x, nlink: serial.n }
}

/** Blob ids a serial node refers to (they must be durable before the record is). */
export function blobsOf(serial: SerialNode | 'W' | null, into: { add(id: BlobId): unknown }): void {
  if (serial === null || serial === 'W') return
  if (serial.t === 'f') into.add(serial.b)
  else if (serial.t === 'd') for (const child of Object.values(serial.c)) blobsOf(child, into)
}

// ---- record bodies ---------------------------------------------------------------------------

/** A side effect as every record and snapshot stores it (a snapshot adds whether it was compensated). */
export interface EffectMembers {
  k: 'effect'
  d: string
  n?: string
  args?: JsonValue
  tier?: number
  group?: string
}

/** A side effect's stored members; a named compensation is kept by name (a function cannot be). */
export function effectMembers(effect: SideEffect): EffectMembers {
  const named = typeof effect.compensate === 'function' ? undefined : effect.compensate
  return {
    k: 'effect',
    d: effect.description,
    ...(named ? { n: named.name, ...(named.args !== undefined ? { args: named.args } : {}) } : {}),
    ...(effect.tier !== undefined ? { tier: effect.tier } : {}),
    ...(effect.group !== undefined ? { group: effect.group } : {}),
  }
}

export type SerialChange =
  /** `i`: changed in place, its directory not touched (written since 2026-11-30; a replay of a slot without it touches the directory). */
  | { k: 'slot'; p: string; a: SerialNode | 'W' | null; i?: 1 }
  | { k: 'meta'; p: string; a: Meta }
  | { k: 'state'; key: string; a: JsonValue | null }
  | EffectMembers
  | { k: 'root'; checkpoint?: string; empty?: boolean }

export type RecordBody =
  | {
      t: 'op'
      seq: number
      id: string
      type: string
      paths: string[]
      time: number
      session: string
      turn?: number
      group?: string
      description?: string
      strategy: { kind: string; reason: string }
      changes: SerialChange[]
    }
  | { t: 'checkpoint'; id: string; name: string; kind: string; seq: number; createdAt: number; description?: string; opSeq: number }
  | { t: 'checkpoint-rename'; id: string; name: string }
  | { t: 'checkpoint-delete'; id: string }
  | { t: 'superseded'; ids: string[] }
  /** `time`: when the undo or redo touched directories (written since 2026-11-30; older readers ignore it). */
  | { t: 'undo'; ids: string[]; time?: number }
  | { t: 'redo'; ids: string[]; time?: number }
  | { t: 'compensated'; id: string }
  | { t: 'resume'; point: JsonValue }
  /**
   * Lower-source versions first seen (the conflict base of a restore, and of a flush where `bases`
   * has none); '' is "absent". `bases`: the versions shown when the workspace first changed those
   * paths (a flush's conflict base); in every such record written since 2026-11-30, none before
   * (older readers ignore it). `shown`: versions a read showed since the last record, where they
   * differ from the first sightings (Overlay.showVersion), in the order read; a version equal to the
   * first sighting clears it. Since 2026-12-01, and only when there are any.
   */
  | { t: 'seen'; entries: [string, string][]; bases?: [string, string][]; shown?: [string, string][] }
  /** Ends a group commit: records after the last one of these were never acknowledged. */
  | { t: 'commit' }
  /**
   * Compaction: the whole live state and kept history; the journal continues after it. Written as
   * a head whose history is in parts read on demand (LazySnapshotData, format 2); stores compacted
   * before hold it in one record (SnapshotData), which open still reads.
   */
  | { t: 'snapshot'; data: SnapshotData | LazySnapshotData }

export interface SnapshotData {
  dirs: SnapshotDir[]
  root: number
  state: [string, JsonValue][]
  seq: number
  checkpointSeq: number
  resume?: JsonValue
  /** Lower-source versions first seen, as the 'seen' records carry them. */
  seen?: [string, string][]
  /** Flush conflict bases, as the 'seen' records carry them (this format is read only: never here). */
  bases?: [string, string][]
  checkpoints: {
    id: string
    name: string
    kind: string
    seq: number
    createdAt: number
    description?: string
    superseded: boolean
    root: number
    state: [string, JsonValue][]
    opSeq: number
    /** As LazySnapshotData's (this format is read, no longer written). */
    replayBase?: false
  }[]
  operations: {
    id: string
    seq: number
    type: string
    paths: string[]
    time: number
    session: string
    turn?: number
    group?: string
    description?: string
    strategy: { kind: string; reason: string }
    undone: boolean
    changes: SnapshotChange[]
  }[]
}

/**
 * A snapshot in format 2 (lazy-history.ts): the head, which open decodes — the live tree inline,
 * state, and every checkpoint's and operation's metadata — and parts, blobs in the store holding
 * checkpoint trees and operations' changes, decoded the first time something needs them.
 */
export interface LazySnapshotData {
  format: 2
  /** The live tree: directories of the head's own table (children first), `root` its top. */
  dirs: HeadDir[]
  root: number
  state: [string, JsonValue][]
  seq: number
  checkpointSeq: number
  resume?: JsonValue
  seen?: [string, string][]
  /** Flush conflict bases (Overlay.bases): present, if empty, in every snapshot written since 2026-11-30. */
  bases?: [string, string][]
  /** The versions last shown where they differ from the first sightings (as the 'seen' records' `shown`), when there are any. */
  shown?: [string, string][]
  /** The next inode number (no walk of every tree at open to find it). */
  ino: number
  /** The parts the history needs, and the serial the next one gets. */
  parts: PartInfo[]
  nextPart: number
  checkpoints: {
    id: string
    name: string
    kind: string
    seq: number
    createdAt: number
    description?: string
    superseded: boolean
    /** Its tree: a part's directory, or the head's (without `p`) when it is the live tree's. */
    root: DirRef
    state: [string, JsonValue][]
    opSeq: number
    /**
     * false: an operation at or before it was undone or redone after it was made, so restore's
     * replay does not start from its tree (CheckpointRecord.replayBase). Absent: a base (snapshots
     * written before it lack it; older readers ignore it).
     */
    replayBase?: false
  }[]
  operations: {
    id: string
    seq: number
    type: string
    paths: string[]
    time: number
    session: string
    turn?: number
    group?: string
    description?: string
    strategy: { kind: string; reason: string }
    undone: boolean
    /** Where its changes are: part serial, index in the part's `ops`. */
    at: [number, number]
  }[]
}

/** A part the history needs: its serial, its blob, and the parts its references point into. */
export interface PartInfo {
  n: number
  id: BlobId
  u: number[]
}

/** Directory `i` of part `p` (of the head's own table when `p` is absent). */
export interface DirRef {
  t: 'r'
  i: number
  p?: number
}

export type PartNode = Exclude<SerialNode, { t: 'd' } | { t: 'moved' }> | DirRef

export interface PartDir {
  m: Meta
  l: string | null
  /** As SerialNode's. */
  o?: number
  c: Record<string, PartNode | 'W'>
}

/** A live directory in the head; `a` is the same directory in a part (part, index), so decoding that part shares it. */
export interface HeadDir extends PartDir {
  a?: [number, number]
}

export type PartChange = StoredChange<PartNode, DirRef>

/** A part's content (JSON in a blob): directories, children first, and operations' changes. */
export interface HistoryPart {
  rewindfs: 'history-part'
  n: number
  dirs: PartDir[]
  ops: PartChange[][]
}

export function isLazySnapshot(data: SnapshotData | LazySnapshotData): data is LazySnapshotData {
  return (data as LazySnapshotData).format === 2
}

/** A change as either snapshot format stores it: nodes and directories are the format's own references. */
export type StoredChange<Node, Dir> =
  | { k: 'slot'; p: string; b: Node | 'W' | null; a: Node | 'W' | null }
  | { k: 'meta'; p: string; b: Meta; a: Meta }
  | { k: 'state'; key: string; b: JsonValue | null; a: JsonValue | null }
  | (EffectMembers & { done: boolean })
  | { k: 'root'; b: Dir; a: Dir; sb?: [string, JsonValue][]; sa?: [string, JsonValue][] }

export type SnapshotChange = StoredChange<SnapshotNode, number>

const metaSchema = z.object({
  mode: z.number(),
  uid: z.number(),
  gid: z.number(),
  atimeMs: z.number(),
  mtimeMs: z.number(),
  ctimeMs: z.number(),
  birthtimeMs: z.number(),
  ino: z.number(),
})
const jsonSchema = z.custom<JsonValue>(() => true)
const serialNodeSchema: z.ZodMiniType<SerialNode> = z.lazy(() =>
  z.union([
    z.object({ t: z.literal('f'), m: metaSchema, b: z.string(), s: z.number(), n: z.optional(z.number()) }),
    z.object({ t: z.literal('l'), m: metaSchema, x: z.string(), n: z.optional(z.number()) }),
    z.object({ t: z.literal('h'), i: z.number() }),
    z.object({ t: z.literal('d'), m: metaSchema, l: z.nullable(z.string()), o: z.optional(z.number()), c: z.record(z.string(), z.union([z.literal('W'), serialNodeSchema])) }),
    z.object({ t: z.literal('moved'), p: z.string() }),
  ]),
) as z.ZodMiniType<SerialNode>
const changeSchema = z.union([
  z.object({ k: z.literal('slot'), p: z.string(), a: z.union([z.null(), z.literal('W'), serialNodeSchema]), i: z.optional(z.literal(1)) }),
  z.object({ k: z.literal('meta'), p: z.string(), a: metaSchema }),
  z.object({ k: z.literal('state'), key: z.string(), a: z.nullable(jsonSchema) }),
  z.object({ k: z.literal('effect'), d: z.string(), n: z.optional(z.string()), args: z.optional(jsonSchema), tier: z.optional(z.number()), group: z.optional(z.string()) }),
  z.object({ k: z.literal('root'), checkpoint: z.optional(z.string()), empty: z.optional(z.boolean()) }),
])
const bodySchema = z.union([
  z.object({
    t: z.literal('op'),
    seq: z.number(),
    id: z.string(),
    type: z.string(),
    paths: z.array(z.string()),
    time: z.number(),
    session: z.string(),
    turn: z.optional(z.number()),
    group: z.optional(z.string()),
    description: z.optional(z.string()),
    strategy: z.object({ kind: z.string(), reason: z.string() }),
    changes: z.array(changeSchema),
  }),
  z.object({
    t: z.literal('checkpoint'),
    id: z.string(),
    name: z.string(),
    kind: z.string(),
    seq: z.number(),
    createdAt: z.number(),
    description: z.optional(z.string()),
    opSeq: z.number(),
  }),
  z.object({ t: z.literal('checkpoint-rename'), id: z.string(), name: z.string() }),
  z.object({ t: z.literal('checkpoint-delete'), id: z.string() }),
  z.object({ t: z.literal('superseded'), ids: z.array(z.string()) }),
  z.object({ t: z.literal('undo'), ids: z.array(z.string()), time: z.optional(z.number()) }),
  z.object({ t: z.literal('redo'), ids: z.array(z.string()), time: z.optional(z.number()) }),
  z.object({ t: z.literal('compensated'), id: z.string() }),
  z.object({ t: z.literal('resume'), point: jsonSchema }),
  z.object({
    t: z.literal('seen'),
    entries: z.array(z.tuple([z.string(), z.string()])),
    bases: z.optional(z.array(z.tuple([z.string(), z.string()]))),
    shown: z.optional(z.array(z.tuple([z.string(), z.string()]))),
  }),
  z.object({ t: z.literal('commit') }),
  // The snapshot's inner shape is produced by this module and checked by its checksum; its size
  // (a whole tree) makes a deep schema walk too costly at open.
  z.object({ t: z.literal('snapshot'), data: z.custom<SnapshotData | LazySnapshotData>((v) => typeof v === 'object' && v !== null && Array.isArray((v as SnapshotData).dirs)) }),
])

// ---- framing ---------------------------------------------------------------------------------

/**
 * CRC-32 tables for slicing by eight bytes (four UTF-16 code units a step): `crcTables[k * 256 + b]`
 * is byte b followed by k zero bytes. Int32Array, so the arithmetic stays in small integers (a
 * Uint32Array's values above 2^31 are doubles to the JIT): with both, three to four times faster
 * than a byte at a time, which every record of every group commit pays, and a snapshot megabytes of
 * (where the host has no zlib: browsers; Node takes zlib's, see crc32).
 */
const crcTables = (() => {
  const tables = new Int32Array(8 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    tables[n] = c
  }
  for (let n = 0; n < 256; n++) for (let k = 1; k < 8; k++) tables[k * 256 + n] = (tables[(k - 1) * 256 + n] >>> 8) ^ tables[tables[(k - 1) * 256 + n] & 0xff]
  return tables
})()

/**
 * CRC-32 over the UTF-16 code units of `text` from `start` to `end`, low byte first (enough to
 * catch torn or flipped records), continuing from `crc` (a previous call's result): the same value
 * as over the code units of the whole in one call.
 */
export function crc32(text: string, start = 0, crc = 0, end = text.length): number {
  return nativeCrc32 !== undefined && end - start >= NATIVE_CRC_FROM ? crc32Native(text, start, crc, end) : crc32Js(text, start, crc, end)
}

/** crc32 in JS, where the host has no zlib (browsers) and for short text. */
export function crc32Js(text: string, start = 0, crc = 0, end = text.length): number {
  const t = crcTables
  let c = ~crc
  let i = start
  for (const quads = start + ((end - start) & ~3); i < quads; i += 4) {
    const a = c ^ (text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16))
    const b = text.charCodeAt(i + 2) | (text.charCodeAt(i + 3) << 16)
    c =
      t[1792 + (a & 0xff)] ^
      t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^
      t[768 + (b & 0xff)] ^
      t[512 + ((b >>> 8) & 0xff)] ^
      t[256 + ((b >>> 16) & 0xff)] ^
      t[b >>> 24]
  }
  for (; i < end; i++) {
    const code = text.charCodeAt(i)
    c = t[(c ^ code) & 0xff] ^ (c >>> 8)
    c = t[(c ^ (code >>> 8)) & 0xff] ^ (c >>> 8)
  }
  return ~c >>> 0
}

/** Node's zlib.crc32 (Node 20.15 and later): the same CRC-32, four times faster over long text. */
const nativeCrc32 = HostBuffer === undefined ? undefined : builtin<{ crc32?: (data: Uint8Array, value?: number) => number }>('node:zlib')?.crc32
/** Shorter text is checksummed in JS: the native call and the copy cost more than they save. */
const NATIVE_CRC_FROM = 64
/** Code units copied (as UTF-16LE bytes) into the scratch buffer per native call. */
const NATIVE_CRC_SLICE = 64 * 1024
type Scratch = Uint8Array & { write(text: string, offset: number, encoding: string): number }
let crcScratch: Scratch | undefined

/** crc32 by zlib over the code units, copied a slice at a time into one reused buffer as UTF-16LE (lone surrogates as they are). */
function crc32Native(text: string, start: number, crc: number, end: number): number {
  const scratch = (crcScratch ??= HostBuffer!.allocUnsafe(2 * NATIVE_CRC_SLICE) as Scratch)
  let c = crc
  for (let at = start; at < end; at += NATIVE_CRC_SLICE) {
    const to = Math.min(end, at + NATIVE_CRC_SLICE)
    const written = scratch.write(at === 0 && to === text.length ? text : text.slice(at, to), 0, 'utf16le')
    c = nativeCrc32!(scratch.subarray(0, written), c)
  }
  return c >>> 0
}

/** A record body as the text `frameRecord` numbers and checksums. */
export function bodyText(body: RecordBody): string {
  return JSON.stringify(body)
}

/**
 * One journal line: the body with its position `n` in the journal first, checksummed. The number
 * makes a duplicated, reordered or missing record visible, which a checksum per record alone
 * cannot; readers older than it ignore the extra key.
 */
export function frameRecord(text: string, n: number): string {
  // The checksum runs over the numbered body without building it first (the body's own `{` skipped).
  const head = `{"n":${n},`
  return `{"v":${FORMAT_VERSION},"c":${crc32(text, 1, crc32(head))},"b":${head}${text.slice(1)}}`
}

/** Characters of a body checksummed between two pauses of `framing`. */
const FRAME_SLICE = 256 * 1024

/**
 * frameRecord of the body `pieces` make, as a generator: a snapshot's megabytes are checksummed a
 * slice at a time, pausing (yielding) between slices. The record is returned as pieces too (its
 * text is their concatenation): Store.replaceJournalPieces says why.
 */
export function* framing(pieces: readonly string[], n: number): Generator<void, string[], void> {
  const head = `{"n":${n},`
  let crc = crc32(head)
  let work = 0
  // The body's own `{` skipped, as frameRecord does.
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]
    for (let at = i === 0 ? 1 : 0; at < piece.length; ) {
      const end = Math.min(piece.length, at + FRAME_SLICE - work)
      crc = crc32(piece, at, crc, end)
      work += end - at
      at = end
      if (work >= FRAME_SLICE) {
        work = 0
        yield
      }
    }
  }
  yield
  return [`{"v":${FORMAT_VERSION},"c":${crc},"b":${head}`, pieces[0].slice(1), ...pieces.slice(1), '}']
}

export function encodeRecord(body: RecordBody, n: number): string {
  return frameRecord(bodyText(body), n)
}

/** The marker that ends a group commit, as encodeRecord({ t: 'commit' }, n) writes it. */
export function commitRecord(n: number): string {
  return frameRecord('{"t":"commit"}', n)
}

export class JournalFormatError extends Error {
  readonly code = 'EJOURNALVERSION'
}

/**
 * How a record's body is checked once its frame, version and checksum hold: 'kind' (open) takes a
 * JSON object of a kind rewindfs writes; 'schema' (verify, repair) checks its whole shape.
 */
export type BodyCheck = 'kind' | 'schema'

const recordKinds = new Set<string>(['op', 'checkpoint', 'checkpoint-rename', 'checkpoint-delete', 'superseded', 'undo', 'redo', 'compensated', 'resume', 'seen', 'commit', 'snapshot'])

/** Whether a parsed body is an object of a kind rewindfs writes (the checksum vouches for the rest). */
function isRecordKind(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && recordKinds.has((value as { t?: unknown }).t as string)
}

/** One line read back: its body and number, or why it cannot be read. */
export type LineVerdict =
  | { readonly ok: true; readonly body: RecordBody; readonly n: number | undefined }
  | { readonly ok: false; readonly reason: string; readonly version?: number }

// `s`: JSON.stringify leaves U+2028 and U+2029 as they are (a name may hold them), and `.` alone stops at them.
const FRAME = /^\{"v":(\d+),"c":(\d+),"b":(.*)\}$/s

/** Decodes one line, checking its frame, version, checksum and its body as `check` says. */
export function decodeLine(line: string, check: BodyCheck = 'kind'): LineVerdict {
  const match = FRAME.exec(line)
  if (!match) return { ok: false, reason: 'not a journal record' }
  const version = Number(match[1])
  const checksumOk = crc32(match[3]) === Number(match[2])
  if (version !== FORMAT_VERSION) return { ok: false, reason: `format version ${version}`, version }
  if (!checksumOk) return { ok: false, reason: 'checksum mismatch' }
  let parsed: unknown
  try {
    parsed = JSON.parse(match[3])
  } catch {
    return { ok: false, reason: 'not JSON' }
  }
  if (check === 'kind' ? !isRecordKind(parsed) : !bodySchema.safeParse(parsed).success) return { ok: false, reason: 'not a record rewindfs writes' }
  // The number is the frame's, not the body's (encodeRecord puts it in front again).
  const { n, ...body } = parsed as { n?: unknown }
  if (n !== undefined && (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)) return { ok: false, reason: 'its record number is not a number' }
  return { ok: true, body: body as RecordBody, n }
}

/** A group commit: the records between two commit markers, and where it starts. */
export interface Group {
  /** Index of its first record in the journal. */
  readonly start: number
  /** Index of its commit marker. */
  readonly end: number
  readonly bodies: RecordBody[]
}

/** The first record that cannot be read, in a journal with intact records after it: damage, not a tear. */
export interface JournalDamage {
  /** Its index in the journal (0-based). */
  readonly record: number
  /** Its byte offset in the journal as a file holds it (UTF-8, one line end per record). */
  readonly offset: number
  readonly reason: string
  /** Records after it that are intact on their own (open does not replay them; repair may). */
  readonly intactAfter: number
}

export interface DecodedJournal {
  /** The whole group commits before any damage, in order: the state open can prove. */
  groups: Group[]
  /** Records those groups span (everything up to and including the last good commit marker). */
  proven: number
  /**
   * Whole records after `proven` that were never acknowledged (no commit marker follows them),
   * dropped with a torn append. Zero when there is damage: then nothing is dropped.
   */
  tail: number
  /** The last append was cut short (the store returned torn bytes). */
  torn: boolean
  damage?: JournalDamage
}

/**
 * Decodes a journal and tells a torn tail from damage. A crash can only cut the last append short:
 * it leaves whole records without their commit marker and at most one record without its line end
 * (`read.torn`). A whole record that cannot be read, or one out of its place, is damage wherever it
 * is, since no crash produces it; then nothing after it is replayed and nothing is dropped. A
 * record of a newer format version is refused with EJOURNALVERSION, never guessed at.
 */
export function decodeJournal(read: { records: readonly string[]; torn?: string }, check: BodyCheck = 'kind'): DecodedJournal {
  const lines = read.records
  const groups: Group[] = []
  let bodies: RecordBody[] = []
  let start = 0
  let proven = 0
  const torn = read.torn !== undefined
  for (let i = 0; i < lines.length; i++) {
    const verdict = decodeLine(lines[i], check)
    let reason: string | undefined
    if (!verdict.ok) {
      if (verdict.version !== undefined && writtenByNewer(lines, i, verdict.version)) {
        throw new JournalFormatError(`rewindfs: the store's journal has format version ${verdict.version}; this rewindfs reads version ${FORMAT_VERSION}. Open it with a matching rewindfs version.`)
      }
      reason = verdict.reason
    } else if (verdict.n !== undefined && verdict.n !== i) {
      reason = `record number ${verdict.n} found at position ${i} (a duplicated, reordered or lost record)`
    }
    if (reason !== undefined) {
      let intactAfter = 0
      for (let j = i + 1; j < lines.length; j++) if (decodeLine(lines[j], check).ok) intactAfter++
      return { groups, proven, tail: 0, torn, damage: { record: i, offset: journalOffset(lines, i), reason, intactAfter } }
    }
    const body = (verdict as { body: RecordBody }).body
    if (body.t === 'commit') {
      groups.push({ start, end: i, bodies })
      bodies = []
      start = i + 1
      proven = i + 1
    } else bodies.push(body)
  }
  // A crash leaves a prefix of a record; a whole record with more on its line lost its line end to damage.
  const whole = read.torn === undefined ? undefined : leadingRecord(read.torn)
  if (whole !== undefined && whole < read.torn!.length) {
    const reason = `a whole record followed by ${read.torn!.length - whole} stray character(s) where its line end belongs`
    return { groups, proven, tail: 0, torn, damage: { record: lines.length, offset: journalOffset(lines, lines.length), reason, intactAfter: 0 } }
  }
  return { groups, proven, tail: lines.length - proven, torn }
}

/** The length of a whole, readable record at the start of `text`, if there is one. */
function leadingRecord(text: string): number | undefined {
  const head = /^\{"v":\d+,"c":\d+,"b":\{/.exec(text)
  if (!head) return undefined
  let depth = 1
  let quoted = false
  for (let i = head[0].length; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '\\') i++
      else if (c === '"') quoted = false
    } else if (c === '"') quoted = true
    else if (c === '{') depth++
    else if (c === '}' && --depth === 0) return text[i + 1] === '}' && decodeLine(text.slice(0, i + 2)).ok ? i + 2 : undefined
  }
  return undefined
}

/**
 * Whether the records from `index` on were written by a newer rewindfs: all of that version, at
 * least a whole group commit (two records), nothing of ours after them. One record with another
 * version between or after ours is a damaged version field, reported as damage.
 */
function writtenByNewer(lines: readonly string[], index: number, version: number): boolean {
  if (version < FORMAT_VERSION || lines.length - index < 2) return false
  return lines.slice(index).every((line) => FRAME.exec(line)?.[1] === String(version))
}

/** The byte offset of record `index` in the journal's text (records are UTF-8 lines). */
export function journalOffset(lines: readonly string[], index: number): number {
  let offset = 0
  for (let i = 0; i < index; i++) offset += utf8Length(lines[i]) + 1
  return offset
}

function utf8Length(text: string): number {
  let length = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) length += 1
    else if (code < 0x800) length += 2
    else if (code >= 0xd800 && code < 0xdc00 && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      length += 4
      i++
    } else length += 3
  }
  return length
}

// ---- snapshots (compaction) -----------------------------------------------------------------

/** A directory in a format-1 snapshot's node table (read, no longer written); child directories are `{ t: 'r', i }` references. */
export interface SnapshotDir {
  m: Meta
  l: string | null
  c: Record<string, SnapshotNode | 'W'>
}

export type SnapshotNode = Exclude<SerialNode, { t: 'd' } | { t: 'moved' }> | { t: 'r'; i: number }

/** Rebuilds a snapshot's node table (children always precede their parents). */
export function decodeTable(dirs: readonly SnapshotDir[]): DirNode[] {
  const nodes: DirNode[] = []
  const token = {}
  for (const dir of dirs) {
    const node = dirNode(dir.m, dir.l, null)
    for (const [name, child] of Object.entries(dir.c)) {
      const value = tableNode(child, nodes)!
      node.children = mapSet(node.children, name, value, token)
      node.links += linksIn(value)
    }
    nodes.push(node)
  }
  return nodes
}

export function tableNode(serial: SnapshotNode | 'W' | null, nodes: readonly DirNode[]): UpperNode | undefined {
  if (serial === null) return undefined
  if (serial === 'W') return WHITEOUT
  if (serial.t === 'r') return nodes[serial.i]
  return leafNode(serial)
}
