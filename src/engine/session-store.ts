/**
 * A session's durable store, as the workspace uses it: attached on open (the lower source's
 * identity checked before any replay, the journal replayed, flush state loaded, a damaged store
 * opened read-only and frozen, an unavailable one replaced by memory and said so), then every
 * change recorded to it, compacted as it grows, synced, verified and repaired. What it found is
 * `status`. The durable journal and its repair come with the store (Store.durability): the core
 * never imports them, so a workspace in memory carries neither, nor zod, which they use on what
 * they read back.
 */
import type { BlobId } from '../blob/store.js'
import type { Checkpoints } from './checkpoints.js'
import type { EngineContext } from './context.js'
import type { Durability, IntegrityReport, LoadReport, StoreDamage } from './durability.js'
import type { StoreEvent } from './events.js'
import type { Flushes } from './flushes.js'
import type { ReconnectStatus } from './reconnect.js'
import type { RepairOptions, RepairReport } from './repair.js'
import type { SideEffects } from './side-effects.js'
import type { DurabilityEngine, Store } from './store.js'
import { cacheBytesOf } from './storage.js'

export interface StoreStatus {
  /** Why the configured store is not in use (the workspace runs in memory). */
  degraded?: string
  warnings: string[]
  /** What open replayed and repaired. */
  loaded?: LoadReport
  /** The damage that made open read-only (the workspace is frozen; see `repair()`). */
  corrupt?: StoreDamage
  /** A store that reconnects (a database server): where its reconnection is, or how it ended. */
  reconnect?: ReconnectStatus
}

export class SessionStore {
  readonly status: StoreStatus = { warnings: [] }
  /** The attached store's durable journal engine. */
  private engine: DurabilityEngine | undefined
  /** Why the store given at open could not be read (the workspace then runs in memory): every sync() rejects with it. */
  private unavailable: string | undefined

  constructor(
    private readonly context: EngineContext,
    private readonly checkpoints: Checkpoints,
    private readonly sideEffects: SideEffects,
    private readonly flushes: Flushes,
  ) {}

  /** Replays the store's journal, then records every later change to it (write-ahead). */
  async attach(store: Store): Promise<void> {
    const { overlay, state, journal, ops, lower } = this.context
    const engine = store.durability
    if (typeof engine?.open !== 'function' || typeof engine.repair !== 'function') {
      throw new TypeError(`rewindfs: the ${String(store.kind)} store carries no durable journal (store.durability): set it to durableJournal from rewindfs/adapter-kit`)
    }
    this.engine = engine
    const alert = (message: string) => this.context.alert({ kind: 'safe-stop', message })
    const storeChanged = (event: StoreEvent) => {
      // A store that does not reconnect: degraded from now on, not from the next sync() (a reconnection shows its own).
      if (event.state === 'failed') this.status.degraded ??= event.message
      ops.changes.post('store', event)
    }
    const durability = engine.open({ overlay, state, journal, blobs: overlay.blobs, ...this.checkpoints.durable(), status: this.status, alert, storeChanged }, store, { cacheBytes: cacheBytesOf(this.context.options.cacheBytes) })
    try {
      // Before any replay: a journal of another source must not be replayed over this one.
      await durability.checkLower(this.context.lower.id)
      this.status.loaded = await durability.load()
      this.status.warnings.push(...this.status.loaded.warnings)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'EJOURNALVERSION' || code === 'ELOWERMISMATCH') throw error
      // Unavailable: run in memory, flagged with the reason, never silently.
      this.status.degraded = `the ${store.kind} store is unavailable: ${(error as Error)?.message ?? String(error)}`
      this.unavailable = this.status.degraded
      this.context.alert({ kind: 'safe-stop', message: this.status.degraded })
      return
    }
    this.context.durability = durability
    if (store.readOnly) ops.frozenReason = `the ${store.kind} store is open read-only (opened with readOnly: true, or another writer holds it: a tab that follows)`
    // From now on, first sightings of lower paths are journaled: conflict checks survive a reopen.
    if (lower.id !== undefined) overlay.unrecorded = []
    // Blob checksums are verified in the background (verify() waits for the verdict); damage found, by it or a read, is said once.
    durability.integrity.watch({ warn: (message) => this.status.warnings.push(message), alert: (message) => this.context.alert({ kind: 'integrity', message }) })
    await this.flushes.load(durability)
    if (durability.damage.length > 0) this.openedDamaged(durability)
    this.checkpoints.prune() // retention applies to what was reopened too
    journal.onAppend = (record) => durability.recordOperation(record)
    // In the background as the journal grows, and after open when the last process left a long tail.
    durability.autoCompact(this.context.options.compactEvery ?? 10_000, () => this.context.collector.reachable())
  }

  /** A damaged store: open read-only at the state it proves, frozen, and say so. */
  private openedDamaged(durability: Durability): void {
    const [first, ...more] = durability.damage
    this.status.corrupt = first
    const message = `the ${durability.store.kind} store is damaged: ${durability.describe(first)}; it was opened read-only at the last state it proves and nothing in it was changed (ws.repair() or rewindfs repair; rewindfs verify reports it)`
    this.status.warnings.push(message, ...more.map((damage) => `also damaged: ${durability.describe(damage)}`))
    this.context.ops.frozenReason = message
    this.context.alert({ kind: 'integrity', message })
  }

  async repair(options: RepairOptions): Promise<RepairReport> {
    this.context.assertOpen()
    if (!this.context.durability || !this.engine) throw Object.assign(new Error('rewindfs: repair needs a workspace opened on a store it could read'), { code: 'EINVAL' })
    const { durability } = this.context
    const { engine } = this
    // In turn with the other recording calls: a repair rewrites the journal they append to.
    return this.context.serial.run(async () => {
      await this.verify() // the blob checks too, so the report names every damaged blob
      const wasDamaged = this.status.corrupt !== undefined
      const report = await engine.repair(durability, { ...options, lowerId: this.context.lower.id })
      if (report.repaired) {
        this.status.corrupt = undefined
        if (wasDamaged) this.context.ops.frozenReason = undefined
        const setAside = report.damagedBytes.filter((entry) => entry.keptAs !== undefined).length
        this.status.warnings.push(
          `repaired: ${report.kept.groups} group commit(s) kept, ${report.lost.length} range(s) of records lost${report.keptAside ? `; the old journal is kept aside as ${report.keptAside}` : ''}${setAside > 0 ? `; ${setAside} range(s) of damaged bytes set aside` : ''}`,
        )
      }
      return report
    })
  }

  /** Compaction in turn; it writes the store itself and records nothing else to acknowledge. */
  async compact(): Promise<void> {
    return this.context.serial.run(() => this.compactNow())
  }

  /**
   * Compaction now: for a call that already holds the turn (purge, whose blobs it then erases from
   * the store, with its own `reachable`: the one that leaves out the parts' stale lists).
   */
  async compactNow(erase?: ReadonlySet<BlobId>, reachable: () => Set<BlobId> = () => this.context.collector.reachable()): Promise<void> {
    this.context.ops.settle()
    await this.context.durability?.compact(reachable, erase)
  }

  /** Every blob checked (on demand, read from the store), then the store's scrub: what is damaged, said once (integrity.ts). */
  async verify(): Promise<IntegrityReport> {
    return (await this.context.durability?.integrity.verify()) ?? { verified: 0, corrupt: [], broken: [], damagedPaths: [] }
  }

  /** Garbage-collection roots in the snapshot's parts: what checkpoints and operations not decoded yet need. */
  historyRoots(): Iterable<string> {
    return this.context.durability?.historyRoots() ?? []
  }

  async sync(): Promise<void> {
    const { ops, durability } = this.context
    ops.settle()
    if (!durability) {
      // Opened on a store it could not read: what it records is in memory only, never acknowledged.
      if (this.unavailable !== undefined) throw Object.assign(new Error(`rewindfs: ${this.unavailable}; the workspace is running in memory (degraded)`), { code: 'EDEGRADED' })
      return
    }
    try {
      await durability.sync({ insideHold: this.sideEffects.running })
    } catch (error) {
      this.status.degraded = durability.failure
      throw error
    }
  }
}
