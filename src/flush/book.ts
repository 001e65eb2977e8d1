/**
 * What the workspace knows each flush target holds: kept apart from the flush code, which loads
 * only when a workspace first flushes.
 */
import type { BlobId } from '../blob/store.js'

/**
 * A file's signature (flush.ts `signature`): `f:<mode>:<blob>[:<link>]@<mtimeMs>`. The time part
 * came in 2026-11-30; ledgers written before hold signatures without it (see flush.ts `sameState`).
 */
export interface FileSignature {
  readonly mode: number
  readonly blob: string
  /** Undefined in a signature recorded before times were. */
  readonly mtimeMs?: number
}

export function parseFileSignature(sig: string): FileSignature | undefined {
  if (!sig.startsWith('f:')) return undefined
  const at = sig.indexOf('@')
  const [, mode, blob] = (at < 0 ? sig : sig.slice(0, at)).split(':')
  return { mode: Number(mode), blob, ...(at < 0 ? {} : { mtimeMs: Number(sig.slice(at + 1)) }) }
}

/** What we know a target holds at a path: an entry signature and the version the target reported. */
export interface Recorded {
  sig: string
  version: string | null
  /** The session that flushed it and when (ms): a restore elsewhere must not silently undo it. */
  by?: string
  at?: number
}

/**
 * When a flush's writes are done, as a bound the target's own stamps stay below: Date.now() drops
 * the fraction of the millisecond that a ctime written just before keeps, so a later check
 * (changedSince, restore's) would take our own last write for someone else's.
 */
export function writtenBy(): number {
  return Date.now() + 1
}

/** The ledgers of every target this lower source has been flushed to, shared by its sessions. */
export class FlushBook {
  readonly ledgers = new Map<string, Map<string, Recorded>>()
  /** Flushes that were started and not confirmed (target id → intended signatures). */
  readonly pending = new Map<string, [path: string, sig: string, before: string | null][]>()

  ledger(id: string): Map<string, Recorded> {
    let ledger = this.ledgers.get(id)
    if (!ledger) this.ledgers.set(id, (ledger = new Map()))
    return ledger
  }

  /** Blobs the ledgers refer to (garbage-collection roots: a canary rollback may need them). */
  *blobs(): Iterable<BlobId> {
    for (const ledger of this.ledgers.values()) {
      for (const { sig } of ledger.values()) {
        const file = parseFileSignature(sig)
        if (file) yield file.blob
      }
    }
  }
}
