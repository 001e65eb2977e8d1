/**
 * The flush state a durable store keeps beside the journal (one metadata record): the pinned old
 * states of the lower source, the ledgers of every target and any flush not yet confirmed. It is
 * rewritten whole at each flush step and checked with zod when read back.
 */
import * as z from 'zod/mini'
import type { JsonValue } from '../engine/state.js'
import type { FlushBook } from './book.js'
import type { PinnedLower } from './pinned-lower.js'

export const FLUSH_STATE_KEY = 'flush-state'
const VERSION = 1

const statSchema = z.object({
  type: z.enum(['file', 'dir', 'symlink']),
  mode: z.number(),
  size: z.number(),
  mtimeMs: z.number(),
  version: z.string(),
  ctimeMs: z.optional(z.number()),
  atimeMs: z.optional(z.number()),
  birthtimeMs: z.optional(z.number()),
  ino: z.optional(z.number()),
  uid: z.optional(z.number()),
  gid: z.optional(z.number()),
})

const stateSchema = z.object({
  v: z.literal(VERSION),
  lower: z.optional(z.string()),
  pins: z.array(z.tuple([z.string(), z.nullable(z.object({ stat: statSchema, blob: z.optional(z.string()), target: z.optional(z.string()) }))])),
  listings: z.array(z.tuple([z.string(), z.array(z.string())])),
  ledgers: z.array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.string(), z.nullable(z.string()), z.nullable(z.string()), z.nullable(z.number())]))])),
  pending: z.array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.string(), z.nullable(z.string())]))])),
})

export function encodeFlushState(lower: PinnedLower, book: FlushBook): JsonValue {
  return {
    v: VERSION,
    ...(lower.id !== undefined ? { lower: lower.id } : {}),
    ...(lower.toJSON() as { pins: JsonValue; listings: JsonValue }),
    ledgers: [...book.ledgers].map(([id, ledger]) => [id, [...ledger].map(([path, r]) => [path, r.sig, r.version, r.by ?? null, r.at ?? null])]),
    pending: [...book.pending],
  }
}

/** Loads a stored flush state; a record that does not parse is refused with a clear error. */
export function decodeFlushState(value: JsonValue, lower: PinnedLower, book: FlushBook): void {
  const parsed = stateSchema.safeParse(value)
  if (!parsed.success) throw Object.assign(new Error(`rewindfs: the store's flush state is unreadable: ${parsed.error.message}`), { code: 'EFLUSHSTATE' })
  const data = parsed.data
  lower.load(data)
  for (const [id, entries] of data.ledgers) {
    const ledger = book.ledger(id)
    for (const [path, sig, version, by, at] of entries) ledger.set(path, { sig, version, ...(by !== null ? { by } : {}), ...(at !== null ? { at } : {}) })
  }
  for (const [id, intended] of data.pending) book.pending.set(id, intended)
}
