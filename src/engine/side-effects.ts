/**
 * Side effects: things done outside the workspace (an API call, a message sent) that no tree can
 * take back. They are recorded as operations with a compensation, which undo and restore run,
 * newest first, and report as compensated, never as rolled back. A compensation given as a name
 * (a registered compensator) survives a reopen; a function does not.
 */
import type { EngineContext } from './context.js'
import { type Operation, type OperationRecord, type OperationType, publicOperation } from './journal.js'
import type { JsonValue } from './state.js'

export interface SideEffectOptions {
  description: string
  compensate: (() => unknown) | { name: string; args?: JsonValue }
  tier?: number
  group?: string
}

export interface Compensation {
  /** Descriptions of the side effects whose compensation ran. */
  compensated: string[]
  /** Compensations that failed, with their errors. */
  uncompensated: { description: string; error: string }[]
}

const compensators = new Map<string, (args: JsonValue | undefined) => unknown>()

/** Registers a named compensation, so side effects recorded with `{ name, args }` can be compensated after a reopen. */
export function registerCompensator(name: string, compensate: (args: JsonValue | undefined) => unknown): void {
  if (typeof name !== 'string' || name === '' || typeof compensate !== 'function') {
    throw new TypeError('rewindfs: registerCompensator(name, fn) needs a non-empty name and a function')
  }
  compensators.set(name, compensate)
}

export class SideEffects {
  /** Compensations running (inside a restore's hold): a sync() from one must not wait for the hold. */
  private compensating = 0
  /** Side effects whose compensation is running now. */
  private readonly inFlight = new Set<object>()

  constructor(
    private readonly context: EngineContext,
    /** Called before one is recorded: the automatic checkpoint a side effect gets. */
    private readonly beforeOperation: (type: OperationType, paths: readonly string[]) => void,
  ) {}

  /** Whether compensations are running now (they run inside an undo's or a restore's hold). */
  get running(): boolean {
    return this.compensating > 0
  }

  record(effect: SideEffectOptions): Operation {
    this.context.assertOpen()
    if (!effect || typeof effect.description !== 'string' || effect.description === '') throw new TypeError('rewindfs: a side effect needs a description')
    const c = effect.compensate
    if (typeof c !== 'function' && (typeof c !== 'object' || c === null || typeof c.name !== 'string')) {
      throw new TypeError('rewindfs: compensate must be a function or { name, args } naming a registered compensator')
    }
    this.beforeOperation('side_effect', [])
    const record = this.context.journal.effect(
      { description: effect.description, compensate: c, ...(effect.tier !== undefined ? { tier: effect.tier } : {}), ...(effect.group !== undefined ? { group: effect.group } : {}), compensated: false },
      { ...(effect.group !== undefined ? { group: effect.group } : {}), description: effect.description },
    )
    return publicOperation(record)
  }

  /** Runs the compensations of the given side-effect operations, newest first. */
  async compensate(records: readonly OperationRecord[]): Promise<Compensation> {
    this.compensating++
    try {
      return await this.compensateNow(records)
    } finally {
      this.compensating--
    }
  }

  private async compensateNow(records: readonly OperationRecord[]): Promise<Compensation> {
    const compensated: string[] = []
    const uncompensated: { description: string; error: string }[] = []
    for (const record of [...records].sort((a, b) => b.seq - a.seq)) {
      for (const change of record.changes) {
        if (change.kind !== 'effect' || change.effect.compensated || this.inFlight.has(change.effect)) continue
        const { effect } = change
        // User code on behalf of the running call: engine calls it makes join that call.
        const run = () =>
          this.context.serial.lend(() => {
            const c = effect.compensate
            if (typeof c === 'function') return c()
            const registered = compensators.get(c.name)
            if (!registered) throw new Error(`no compensator named '${c.name}' is registered`)
            return registered(c.args)
          })
        // Claimed while it runs: a restore or undo running meanwhile (lent the turn) skips it.
        this.inFlight.add(effect)
        try {
          // A failing compensation (a throw, or false) is retried once before it is reported.
          const attempt = async () => {
            if ((await run()) === false) throw new Error('the compensation returned false')
          }
          try {
            await attempt()
          } catch {
            await attempt()
          }
          effect.compensated = true
          this.context.durability?.record({ t: 'compensated', id: record.id })
          compensated.push(effect.description)
        } catch (error) {
          uncompensated.push({ description: effect.description, error: (error as Error).message ?? String(error) })
        } finally {
          this.inFlight.delete(effect)
        }
      }
    }
    if (uncompensated.length > 0) {
      this.context.alert({ kind: 'uncompensated', message: uncompensated.map((u) => `${u.description}: ${u.error}`).join('; ') })
    }
    return { compensated, uncompensated }
  }
}
