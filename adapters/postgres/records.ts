/**
 * What the store reads from what the engine hands it, to keep the fleet's listings in step: the
 * checkpoints a group commit creates, renames or deletes (and a compaction's snapshot holds), and
 * the flush ledgers in the flush state. These are indexes for people and tools (`rewindfs
 * sessions`, a conflict's author), never what a workspace is rebuilt from: the journal and the
 * metadata stay the truth. So this reads leniently: what it does not recognise it leaves out, and
 * it never refuses a write.
 */
import * as z from 'zod/mini'

/** A checkpoint as the listing keeps it. */
export interface CheckpointRow {
  readonly id: string
  readonly name: string
  readonly kind: string
  readonly createdAt: number
}

/** The net effect of some records on the checkpoints listing. */
export interface CheckpointChanges {
  /** Made (or renamed after being made) in these records. */
  readonly made: CheckpointRow[]
  readonly renamed: { id: string; name: string }[]
  readonly deleted: string[]
}

const framed = z.object({ b: z.looseObject({ t: z.string() }) })
const made = z.object({ t: z.literal('checkpoint'), id: z.string(), name: z.string(), kind: z.string(), createdAt: z.number() })
const renamed = z.object({ t: z.literal('checkpoint-rename'), id: z.string(), name: z.string() })
const deleted = z.object({ t: z.literal('checkpoint-delete'), id: z.string() })
const snapshot = z.object({
  t: z.literal('snapshot'),
  data: z.object({ checkpoints: z.array(z.object({ id: z.string(), name: z.string(), kind: z.string(), createdAt: z.number() })) }),
})

/** Only records that can touch checkpoints are parsed (the text test is cheap; JSON.parse is not). */
const MAY_TOUCH = /"t":"(checkpoint|checkpoint-rename|checkpoint-delete|snapshot)"/

function body(record: string): unknown {
  if (!MAY_TOUCH.test(record)) return undefined
  try {
    const parsed = framed.safeParse(JSON.parse(record))
    return parsed.success ? parsed.data.b : undefined
  } catch {
    return undefined
  }
}

/**
 * The checkpoints these records make, rename and delete, reduced to their net effect in order.
 * `replaced`: the records are a whole new journal (a compaction), so its snapshot lists them all.
 */
export function checkpointChanges(records: readonly string[]): CheckpointChanges & { snapshot?: CheckpointRow[] } {
  const live = new Map<string, CheckpointRow>()
  const renames = new Map<string, string>()
  const deletes = new Set<string>()
  let listed: CheckpointRow[] | undefined
  for (const record of records) {
    const b = body(record)
    if (b === undefined) continue
    const m = made.safeParse(b)
    if (m.success) {
      live.set(m.data.id, { id: m.data.id, name: m.data.name, kind: m.data.kind, createdAt: m.data.createdAt })
      deletes.delete(m.data.id)
      continue
    }
    const r = renamed.safeParse(b)
    if (r.success) {
      const row = live.get(r.data.id)
      if (row) live.set(r.data.id, { ...row, name: r.data.name })
      else renames.set(r.data.id, r.data.name)
      continue
    }
    const d = deleted.safeParse(b)
    if (d.success) {
      live.delete(d.data.id)
      renames.delete(d.data.id)
      deletes.add(d.data.id)
      continue
    }
    const s = snapshot.safeParse(b)
    if (s.success) {
      listed = s.data.data.checkpoints.map((c) => ({ id: c.id, name: c.name, kind: c.kind, createdAt: c.createdAt }))
      live.clear()
      renames.clear()
      deletes.clear()
    }
  }
  return {
    made: [...live.values()],
    renamed: [...renames].map(([id, name]) => ({ id, name })),
    deleted: [...deletes],
    ...(listed ? { snapshot: listed } : {}),
  }
}

/** The metadata key the engine keeps its flush state under, and the ledgers in it. */
export const FLUSH_STATE_KEY = 'flush-state'

const flushState = z.object({
  ledgers: z.array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.string(), z.nullable(z.string()), z.nullable(z.string()), z.nullable(z.number())]))])),
})

/** One path of one target's ledger: what the session wrote there, the version the target reported, who and when. */
export interface LedgerRow {
  readonly target: string
  readonly path: string
  readonly sig: string
  readonly version: string | null
  readonly by: string | null
  readonly at: number | null
}

/** The ledgers in a flush state; undefined when it is not one this version knows. */
export function flushLedgers(value: unknown): LedgerRow[] | undefined {
  const parsed = flushState.safeParse(value)
  if (!parsed.success) return undefined
  return parsed.data.ledgers.flatMap(([target, entries]) => entries.map(([path, sig, version, by, at]) => ({ target, path, sig, version, by, at })))
}
