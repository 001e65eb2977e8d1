/**
 * A session's durable store, as the workspace uses it: attached on open (the lower source's
 * identity checked before any replay, the journal replayed, flush state loaded, a damaged store
 * opened read-only and frozen, an unavailable one replaced by memory and said so), then every
 * change recorded to it, compacted as it grows, synced, verified and repaired. What it found is
 * `status`. The durable journal and its repair come with the store (Store.durability): the core
 * never imports them, so a workspace in memory carries neither, nor zod, which they use on what
 * they read back.
 */
import type { Checkpoints } from './checkpoints.js'
import type { EngineContext } from './context.js'
import type { Durability, IntegrityReport, LoadReport, StoreDamage } from './durability.js'
import type { Flushes } from './flushes.js'
import type { ReconnectStatus } from './reconnect.js'
import type { RepairOptions, RepairReport } from './repair.js'
import type { SideEffects } from './side-effects.js'
import { type DurabilityEngine, LOWER_KEY, type ScrubFinding, type Store } from './store.js'
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
  /** The background check of the store's blob checksums that open starts. */
  private integrity: Promise<IntegrityReport> | undefined
  /** The attached store's durable journal engine. */
  private engine: DurabilityEngine | undefined

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
    const durability = engine.open({ overlay, state, journal, blobs: overlay.blobs, ...this.checkpoints.durable(), status: this.status, alert }, store, { cacheBytes: cacheBytesOf(this.context.options.cacheBytes) })
    try {
      // Before any replay: a journal of another source must not be replayed over this one.
      await this.checkLowerIdentity(store, durability)
      this.status.loaded = await durability.load()
      this.status.warnings.push(...this.status.loaded.warnings)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'EJOURNALVERSION' || code === 'ELOWERMISMATCH') throw error
      // Unavailable: run in memory, flagged with the reason, never silently.
      this.status.degraded = `the ${store.kind} store is unavailable: ${(error as Error)?.message ?? String(error)}`
      this.context.alert({ kind: 'safe-stop', message: this.status.degraded })
      return
    }
    this.context.durability = durability
    if (store.readOnly) ops.frozenReason = `the ${store.kind} store is open read-only (another writer holds it)`
    // From now on, first sightings of lower paths are journaled: conflict checks survive a reopen.
    if (lower.id !== undefined) overlay.unrecorded = []
    // Blob checksums are verified in the background; verify() waits for the verdict. On demand,
    // each content is checked when it is read: damage found then is reported at once.
    this.integrity = durability.verify().then((report) => this.reportIntegrity(report))
    durability.onDamagedBlob = (id) => {
      this.damagedBlobs.add(id)
      const message = `blob ${id} in the ${store.kind} store cannot be read or does not match its checksum; what needs it reads as EIO (its bytes stay in the store)`
      this.status.warnings.push(message)
      queueMicrotask(() => {
        durability.checkIntegrity()
        this.context.alert({ kind: 'integrity', message })
      })
    }
    await this.flushes.load(durability)
    if (durability.damage.length > 0) this.openedDamaged(durability)
    this.checkpoints.prune() // retention applies to what was reopened too
    const every = this.context.options.compactEvery ?? 10_000
    journal.onAppend = (record) => {
      durability.recordOperation(record)
      if (durability.sinceCompaction >= every) {
        durability.sinceCompaction = 0
        void this.compact().catch(() => undefined)
      }
    }
    // A long tail (the last process ended before its compaction): compacted in the background, in
    // turn with the first calls, as during work; open does not wait to rewrite the journal.
    if ((this.status.loaded?.operations ?? 0) >= every) void this.compact().catch(() => undefined)
  }

  /** Refuses a store made over another lower source; remembers this one's identity in a new store. */
  private async checkLowerIdentity(store: Store, durability: Durability): Promise<void> {
    const { lower } = this.context
    if (lower.id === undefined) return
    const known = await durability.readMeta(LOWER_KEY, (value) => {
      if (typeof value !== 'string') throw new Error('it is not the name of a lower source')
      return value
    })
    if (known === 'damaged') return
    if (known !== undefined && known !== lower.id) {
      throw Object.assign(new Error(`rewindfs: this ${store.kind} store belongs to the lower source '${String(known)}', not '${lower.id}'; open it over the same source or use a new store`), {
        code: 'ELOWERMISMATCH',
      })
    }
    if (known === undefined && !store.readOnly) await store.putMeta(LOWER_KEY, lower.id)
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
        this.status.warnings.push(`repaired: ${report.kept.groups} group commit(s) kept, ${report.lost.length} range(s) of records lost${report.keptAside ? `; the old journal is kept aside as ${report.keptAside}` : ""}`)
      }
      return report
    })
  }

  /** Compaction in turn; it writes the store itself and records nothing else to acknowledge. */
  async compact(): Promise<void> {
    return this.context.serial.run(() => this.compactNow())
  }

  /** Compaction now: for a call that already holds the turn (purge). */
  async compactNow(): Promise<void> {
    this.context.ops.settle()
    await this.context.durability?.compact(() => this.context.collector.reachable())
  }

  async verify(): Promise<IntegrityReport> {
    const { durability } = this.context
    let report: IntegrityReport
    if (durability?.onDemand) {
      await this.integrity
      report = this.reportIntegrity(await durability.verify(undefined, { stored: true }))
    } else report = (await this.integrity) ?? { verified: 0, corrupt: [], broken: [] }
    return durability?.store.scrub ? this.scrubbed(report, await durability.store.scrub()) : report
  }

  /**
   * The store's scrub (bytes no read reaches: dead records, segment headers) added to a report:
   * what it found is listed as corrupt under the ids the store lists such damage as, said once in
   * a warning and an alert, kept in the store as it is.
   */
  private scrubbed(report: IntegrityReport, findings: readonly ScrubFinding[]): IntegrityReport {
    if (findings.length === 0) return report
    const fresh = findings.filter((finding) => !this.damagedBlobs.has(finding.id))
    for (const finding of fresh) this.damagedBlobs.add(finding.id)
    if (fresh.length > 0) {
      const kind = this.context.durability?.store.kind ?? 'durable'
      const message = `a scrub of everything the ${kind} store holds found damaged bytes: ${fresh.map((finding) => finding.reason).join('; ')}`
      this.status.warnings.push(message)
      this.context.alert({ kind: 'integrity', message })
    }
    return { ...report, corrupt: [...new Set([...report.corrupt, ...findings.map((finding) => finding.id)])] }
  }

  /** Blobs found damaged when read on demand (said then, not again by a check's report). */
  private readonly damagedBlobs = new Set<string>()

  /** Damaged blobs a check found: a warning and an alert. */
  private reportIntegrity(report: IntegrityReport): IntegrityReport {
    const fresh = report.corrupt.filter((id) => !this.damagedBlobs.has(id))
    for (const id of fresh) this.damagedBlobs.add(id)
    if (fresh.length > 0) {
      const message = `${fresh.length} blob(s) in the ${this.context.durability?.store.kind ?? 'durable'} store did not match their checksums and were dropped; broken checkpoints: ${report.broken.join(', ') || 'none'}`
      this.status.warnings.push(message)
      this.context.alert({ kind: 'integrity', message })
    }
    return report
  }

  /** Garbage-collection roots in the snapshot's parts: what checkpoints and operations not decoded yet need. */
  historyRoots(): Iterable<string> {
    return this.context.durability?.historyRoots() ?? []
  }

  async sync(): Promise<void> {
    const { ops, durability } = this.context
    ops.settle()
    if (!durability) return
    try {
      await durability.sync({ insideHold: this.sideEffects.running })
    } catch (error) {
      this.status.degraded = durability.failure
      throw error
    }
  }
}
