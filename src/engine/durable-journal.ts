/**
 * The durable journal as a capability a store carries (Store.durability): the write-ahead records,
 * replay, compaction and checks (durability.ts) and repair (repair.ts). Stores import it through
 * rewindfs/adapter-kit; the core reaches it only through a store it was given.
 */
import { Durability } from './durability.js'
import { repair } from './repair.js'
import type { DurabilityEngine } from './store.js'

export const durableJournal: DurabilityEngine = {
  open: (host, store, options) => new Durability(host, store, options),
  repair,
}
