/**
 * A store checked without opening it for writing (`rewindfs verify`): every journal record (frame,
 * checksum, shape, position, group commits), every blob against its id and every blob the records
 * and the flush state refer to, the metadata rewindfs keeps, what was set aside, and the store's
 * own scrub of what no read reaches (Store.scrub: dead records, segment headers). It reads only:
 * nothing is replayed, so no lower source is needed.
 */
import { hashBytes, madeHere } from '../blob/hash.js'
import type { BlobId } from '../blob/store.js'
import { BlobStore } from '../blob/store.js'
import { FlushBook } from '../flush/book.js'
import { PinnedLower } from '../flush/pinned-lower.js'
import { FLUSH_STATE_KEY, decodeFlushState } from '../flush/state.js'
import { toLowerSource } from '../lower/index.js'
import { blobsOfHead, readPartBlobs } from './lazy-history.js'
import { type PartInfo, type RecordBody, blobsOf, decodeJournal, decodeLine, isLazySnapshot, journalOffset } from './persistence.js'
import type { JsonValue } from './state.js'
import { LOWER_KEY, type ScrubFinding, type Store } from './store.js'

/** Bad records listed one by one; beyond this many they are counted. */
const LISTED = 50

export interface StoreVerification {
  /** No damage anywhere (a torn tail and kept-aside items are not damage). */
  ok: boolean
  journal: {
    records: number
    /** Whole group commits before the first damage, and what they hold. */
    groups: number
    operations: number
    checkpoints: number
    /** Records at the end a crash cut short (never acknowledged; the next writer drops them, keeping the journal aside). */
    torn: number
    /** Every record that cannot be read or is out of place (the first `LISTED`), and how many in all. */
    damaged: { record: number; offset: number; reason: string }[]
    damagedCount: number
  }
  blobs: {
    stored: number
    /** Checked against their ids (ids another host's hash made cannot be). */
    verified: number
    corrupt: BlobId[]
    unreadable: { id: BlobId; reason: string }[]
    /** Referred to by a journal record or the flush state, and not in the store. */
    missing: { id: BlobId; record?: number }[]
  }
  meta: { key: string; problem: string }[]
  /**
   * The store's scrub (Store.scrub: every record through its framing, dead ones too), when it has
   * one: damage beyond what the journal and blob checks found, by the id the store lists it as.
   */
  scrub: { scrubbed: boolean; damaged: ScrubFinding[] }
  /** What was set aside (torn or damaged journals, blobs, metadata), for the user to remove. */
  kept: string[]
  /** Every damage, each in a sentence. */
  problems: string[]
  /** What is worth knowing and is not damage. */
  notes: string[]
}

export async function verifyStore(store: Store): Promise<StoreVerification> {
  const problems: string[] = []
  const notes: string[] = []
  const read = await store.readJournal()
  const lines = read.records
  const decoded = decodeJournal(read, 'schema')
  const damaged: StoreVerification['journal']['damaged'] = []
  let damagedCount = 0
  const referenced = new Map<BlobId, number>()
  /** The history parts snapshots name (read after the blobs: what they refer to must be there too). */
  const parts: { info: PartInfo; record: number }[] = []
  for (let i = 0; i < lines.length; i++) {
    const verdict = decodeLine(lines[i], 'schema')
    const reason = !verdict.ok ? verdict.reason : verdict.n !== undefined && verdict.n !== i ? `record number ${verdict.n} found at position ${i} (a duplicated, reordered or lost record)` : undefined
    if (reason !== undefined) {
      damagedCount++
      if (damaged.length < LISTED) damaged.push({ record: i, offset: journalOffset(lines, i), reason })
    }
    if (verdict.ok) for (const id of blobsOfRecord(verdict.body)) if (!referenced.has(id)) referenced.set(id, i)
    if (verdict.ok && verdict.body.t === 'snapshot' && isLazySnapshot(verdict.body.data)) for (const info of verdict.body.data.parts) parts.push({ info, record: i })
  }
  const bodies = decoded.groups.flatMap((group) => group.bodies)
  const torn = decoded.damage ? 0 : decoded.tail + (decoded.torn ? 1 : 0)
  for (const entry of damaged) problems.push(`journal record ${entry.record} at byte ${entry.offset} cannot be read: ${entry.reason}`)
  if (damagedCount > damaged.length) problems.push(`and ${damagedCount - damaged.length} more damaged journal record(s)`)
  if (decoded.damage && damagedCount === 0) problems.push(`journal record ${decoded.damage.record} cannot be read: ${decoded.damage.reason}`)
  // What the store mended as it opened: damage still on disk when it was opened read-only (a writer rewrites it), a note once mended.
  for (const notice of store.notices ?? []) (store.readOnly ? problems : notes).push(notice)
  if (torn > 0) notes.push(`${torn} torn record(s) at the end of the journal: an append a crash cut short (never acknowledged); the next open for writing drops them and keeps the journal aside`)

  const meta: StoreVerification['meta'] = []
  const checkMeta = async (key: string, check: (value: JsonValue) => void) => {
    try {
      const value = await store.getMeta(key)
      if (value !== undefined) check(value)
      else if (key === LOWER_KEY && lines.length > 0) notes.push("no record of the lower source the store was made over (a store made over a fixture, or the metadata was removed)")
    } catch (error) {
      const problem = ((error as Error)?.message ?? String(error)).replace(/^rewindfs: /, '')
      meta.push({ key, problem })
      problems.push(`metadata '${key}' cannot be read: ${problem}`)
    }
  }
  await checkMeta(LOWER_KEY, (value) => {
    if (typeof value !== 'string') throw new Error('it is not the name of a lower source')
  })
  await checkMeta(FLUSH_STATE_KEY, (value) => {
    decodeFlushState(value, new PinnedLower(toLowerSource({}), new BlobStore()), new FlushBook())
    for (const id of flushStateBlobs(value)) if (!referenced.has(id)) referenced.set(id, -1)
  })

  const stored = new Set(await store.blobIds())
  const blobs: StoreVerification['blobs'] = { stored: stored.size, verified: 0, corrupt: [], unreadable: [], missing: [] }
  let unverifiable = 0
  for (const id of stored) {
    let bytes: Uint8Array | undefined
    try {
      bytes = await store.getBlob(id)
    } catch (error) {
      const reason = ((error as Error)?.message ?? String(error)).replace(/^rewindfs: /, '')
      blobs.unreadable.push({ id, reason })
      problems.push(`blob ${id} cannot be read: ${reason}`)
      continue
    }
    if (bytes === undefined || !madeHere(id)) {
      unverifiable++
      continue
    }
    blobs.verified++
    if (hashBytes(bytes) !== id) {
      blobs.corrupt.push(id)
      problems.push(`blob ${id} does not match its checksum${referenced.has(id) ? ` (${describeUse(referenced.get(id)!)} needs it)` : ' (nothing refers to it any more)'}`)
    }
  }
  for (const { info, record } of parts) {
    if (!stored.has(info.id)) continue // missing: reported below
    let refs: BlobId[] | string
    try {
      const bytes = await store.getBlob(info.id)
      refs = bytes === undefined ? 'it is missing' : readPartBlobs(bytes, info.n)
    } catch (error) {
      refs = ((error as Error)?.message ?? String(error)).replace(/^rewindfs: /, '')
    }
    if (typeof refs === 'string') {
      problems.push(`history part ${info.n} (blob ${info.id}) of journal record ${record} cannot be read: ${refs}`)
      continue
    }
    for (const id of refs) if (!referenced.has(id)) referenced.set(id, record)
  }
  for (const [id, record] of referenced) {
    if (stored.has(id)) continue
    blobs.missing.push({ id, ...(record >= 0 ? { record } : {}) })
    problems.push(`blob ${id} is missing from the store (${describeUse(record)} needs it)`)
  }
  const scrub: StoreVerification['scrub'] = { scrubbed: store.scrub !== undefined, damaged: [] }
  const listed = new Set(blobs.unreadable.map((blob) => blob.id))
  for (const finding of store.scrub ? await store.scrub() : []) {
    if (listed.has(finding.id)) continue
    scrub.damaged.push(finding)
    problems.push(finding.reason)
  }
  if (unverifiable > 0) notes.push(`${unverifiable} blob(s) have ids another host's hash made; their bytes cannot be checked here`)
  const kept = await store.keptAside()
  if (kept.length > 0) notes.push(`${kept.length} item(s) kept aside (torn or damaged journals, blobs, metadata): remove them once you no longer need them`)

  return {
    ok: problems.length === 0,
    journal: {
      records: lines.length,
      groups: decoded.groups.length,
      // A compaction snapshot holds kept history and checkpoints in one record.
      operations: bodies.reduce((sum, b) => sum + (b.t === 'op' ? 1 : b.t === 'snapshot' ? (b.data.operations?.length ?? 0) : 0), 0),
      checkpoints: bodies.reduce((sum, b) => sum + (b.t === 'checkpoint' ? 1 : b.t === 'snapshot' ? (b.data.checkpoints?.length ?? 0) : 0), 0),
      torn,
      damaged,
      damagedCount: Math.max(damagedCount, decoded.damage ? 1 : 0),
    },
    blobs,
    meta,
    scrub,
    kept,
    problems,
    notes,
  }
}

function describeUse(record: number): string {
  return record < 0 ? 'the flush state' : `journal record ${record}`
}

/** Blob ids one record refers to. */
function blobsOfRecord(body: RecordBody): Set<BlobId> {
  const ids = new Set<BlobId>()
  if (body.t === 'op') {
    for (const change of body.changes) if (change.k === 'slot') blobsOf(change.a, ids)
  } else if (body.t === 'snapshot') {
    const data = body.data
    if (isLazySnapshot(data)) {
      // Its parts and the live tree's files; what the parts refer to is read from them (verifyStore).
      for (const id of blobsOfHead(data)) ids.add(id)
      return ids
    }
    const node = (n: unknown) => {
      if (n !== null && typeof n === 'object' && (n as { t?: unknown }).t === 'f') ids.add((n as { b: BlobId }).b)
    }
    for (const dir of data.dirs ?? []) for (const child of Object.values(dir.c ?? {})) node(child)
    for (const op of data.operations ?? []) {
      for (const change of op.changes ?? []) {
        if (change.k !== 'slot') continue
        node(change.b)
        node(change.a)
      }
    }
  }
  return ids
}

/** Blob ids the flush state's pins refer to (old contents of the lower source). */
function flushStateBlobs(value: JsonValue): BlobId[] {
  const pins = (value as { pins?: unknown }).pins
  if (!Array.isArray(pins)) return []
  return pins.flatMap((pin) => {
    const blob = Array.isArray(pin) ? (pin[1] as { blob?: unknown } | null)?.blob : undefined
    return typeof blob === 'string' ? [blob] : []
  })
}
