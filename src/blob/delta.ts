/**
 * Reverse deltas for old versions of text files: an old version is kept as the edits that turn the
 * newer version back into it, which for a 3-line change to a 1 MB file is a few hundred bytes
 * instead of a megabyte. Deltas are made in the background (never on the write path) with a
 * bounded diff, and only when clearly smaller than the full content.
 */
import { bytesEqual, decode, encode, isProbablyText } from '../bytes.js'
import { diffLines } from '../line-diff.js'
import type { BlobId } from './store.js'

/** Copy `n` characters of the base, skip `-n` characters of it, or insert a string. */
export type DeltaOp = number | string

export interface Delta {
  readonly base: BlobId
  readonly ops: readonly DeltaOp[]
  /** Size of the content the delta rebuilds. */
  readonly size: number
  /** Bytes the delta itself takes (inserted text plus a little per op). */
  readonly cost: number
}

/** Files below this size are not worth a delta. */
export const MIN_DELTA_SIZE = 4096
/** Bounded by edit length, so whether a delta is made does not depend on machine load. */
const DIFF_MAX_EDITS = 2000

/** The delta rebuilding `target` from `base`, or undefined when it would not pay off. */
export function makeDelta(baseId: BlobId, base: Uint8Array, target: Uint8Array): Delta | undefined {
  if (target.byteLength < MIN_DELTA_SIZE || !isProbablyText(base) || !isProbablyText(target)) return undefined
  const changes = diffLines(decode(base), decode(target), DIFF_MAX_EDITS)
  if (!changes) return undefined // the diff gave up: keep the full content
  const ops: DeltaOp[] = []
  let cost = 0
  for (const change of changes) {
    if (change.added) {
      ops.push(change.value)
      cost += change.value.length + 8
    } else {
      ops.push(change.removed ? -change.value.length : change.value.length)
      cost += 8
    }
  }
  if (cost * 2 > target.byteLength) return undefined
  const delta = { base: baseId, ops, size: target.byteLength, cost }
  // The ops work on decoded text: bytes that are not UTF-8 past the sniff's sample (a Latin-1 'é'
  // in a long file) decode to U+FFFD and would come back as other bytes. Only a delta that rebuilds
  // the very bytes replaces them (in the background: one more decode and encode of this file).
  return bytesEqual(applyDelta(base, delta), target) ? delta : undefined
}

export function applyDelta(base: Uint8Array, delta: Delta): Uint8Array {
  const text = decode(base)
  let position = 0
  let out = ''
  for (const op of delta.ops) {
    if (typeof op === 'string') out += op
    else if (op >= 0) {
      out += text.slice(position, position + op)
      position += op
    } else position -= op
  }
  return encode(out)
}
