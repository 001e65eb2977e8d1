/**
 * `rewindfs/rollback-stack`: the seed's rollback stack, for undo beyond the workspace. Undo actions
 * pushed as work proceeds and run LIFO when it must be taken back, with marks, groups, tiers,
 * committed (audit-only) entries and an error policy. Rollbacks are serialised, so two callers
 * never run the same entry twice. An entry of its own: it needs nothing from a workspace, and
 * ws.undo applies the same 'retry-once' policy itself (engine/undo.ts).
 */

export type RollbackPolicy = 'abort' | 'continue' | 'retry-once'
export type UndoAction = () => unknown

export interface RollbackEntryOptions {
  id?: string
  description: string
  group?: string
  /** Higher tiers are rolled back by rollbackTier(n) for every n up to theirs. Default 0. */
  tier?: number
}

export interface RollbackResult {
  entries: { id: string; ok: boolean; error?: unknown }[]
}

export interface RollbackSummary {
  depth: number
  committed: number
  pending: number
  byGroup: Record<string, number>
  byTier: Record<string, number>
  marks: string[]
  entries: { id: string; description: string; group?: string; tier: number; state: 'pending' | 'committed' | 'failed' }[]
}

interface Entry {
  /** Push order: marks remember the last one pushed before them. */
  readonly seq: number
  readonly id: string
  readonly undo: UndoAction
  readonly description: string
  readonly group?: string
  readonly tier: number
  state: 'pending' | 'committed' | 'failed'
}

export class RollbackStack {
  private readonly entries: Entry[] = []
  private readonly marks = new Map<string, number>()
  private readonly policy: RollbackPolicy
  private readonly maxDepth: number
  private queue: Promise<unknown> = Promise.resolve()
  private counter = 0
  private pushed = 0

  constructor(options: { policy?: RollbackPolicy; maxDepth?: number } = {}) {
    this.policy = options.policy ?? 'abort'
    if (!['abort', 'continue', 'retry-once'].includes(this.policy)) throw new TypeError(`RollbackStack: unknown policy '${String(this.policy)}'`)
    this.maxDepth = options.maxDepth ?? 10_000
    if (!(this.maxDepth > 0)) throw new RangeError('RollbackStack: maxDepth must be a positive number')
  }

  push(undo: UndoAction, options: RollbackEntryOptions): string {
    if (typeof undo !== 'function') throw new TypeError('RollbackStack.push: undo must be a function')
    if (!options || typeof options.description !== 'string') throw new TypeError('RollbackStack.push: a description is required')
    if (this.entries.length >= this.maxDepth) {
      throw new RangeError(`RollbackStack: the stack is full (maxDepth ${this.maxDepth}); commit or roll back before pushing more`)
    }
    const id = options.id ?? `undo-${++this.counter}`
    if (this.entries.some((e) => e.id === id)) throw new Error(`RollbackStack: an entry with id '${id}' already exists`)
    this.entries.push({
      seq: ++this.pushed,
      id,
      undo,
      description: options.description,
      ...(options.group !== undefined ? { group: options.group } : {}),
      tier: options.tier ?? 0,
      state: 'pending',
    })
    return id
  }

  /** A named position: rollbackTo(name) undoes what was pushed after it. */
  mark(name: string): void {
    if (this.marks.has(name)) throw new Error(`RollbackStack: mark '${name}' already exists`)
    this.marks.set(name, this.pushed)
  }

  /** Keeps the entry for audit; no rollback will run it. */
  commit(id: string): void {
    const entry = this.entries.find((e) => e.id === id)
    if (!entry) throw new Error(`RollbackStack: no entry '${id}'`)
    entry.state = 'committed'
  }

  /** Removes the top entry without running it. */
  pop(): { id: string; description: string } | undefined {
    const entry = this.entries.pop()
    return entry && { id: entry.id, description: entry.description }
  }

  rollbackAll(): Promise<RollbackResult> {
    return this.run(() => true)
  }

  rollbackTo(mark: string): Promise<RollbackResult> {
    const seq = this.marks.get(mark)
    if (seq === undefined) return Promise.reject(new Error(`RollbackStack: no mark '${mark}'`))
    return this.run((e) => e.seq > seq)
  }

  rollbackGroup(group: string): Promise<RollbackResult> {
    return this.run((e) => e.group === group)
  }

  rollbackTier(tier: number): Promise<RollbackResult> {
    return this.run((e) => e.tier >= tier)
  }

  summary(): RollbackSummary {
    const count = (key: (e: Entry) => string | undefined) => {
      const out: Record<string, number> = {}
      for (const e of this.entries) {
        const k = key(e)
        if (k !== undefined) out[k] = (out[k] ?? 0) + 1
      }
      return out
    }
    return {
      depth: this.entries.length,
      committed: this.entries.filter((e) => e.state === 'committed').length,
      pending: this.entries.filter((e) => e.state !== 'committed').length,
      byGroup: count((e) => e.group),
      byTier: count((e) => String(e.tier)),
      marks: [...this.marks.keys()],
      entries: this.entries.map((e) => ({ id: e.id, description: e.description, ...(e.group !== undefined ? { group: e.group } : {}), tier: e.tier, state: e.state })),
    }
  }

  /** Runs the selected, not committed entries LIFO under the policy; one rollback at a time. */
  private run(select: (entry: Entry) => boolean): Promise<RollbackResult> {
    const next = this.queue.then(() => this.runNow(select))
    this.queue = next.catch(() => undefined)
    return next
  }

  private async runNow(select: (entry: Entry) => boolean): Promise<RollbackResult> {
    const result: RollbackResult = { entries: [] }
    const selected = this.entries.filter((e) => e.state !== 'committed' && select(e)).reverse()
    for (const entry of selected) {
      let outcome = await attempt(entry.undo)
      if (!outcome.ok && this.policy === 'retry-once') outcome = await attempt(entry.undo)
      result.entries.push({ id: entry.id, ...outcome })
      if (outcome.ok) this.entries.splice(this.entries.indexOf(entry), 1)
      else {
        // A failed entry stays on the stack so a later rollback can retry it.
        entry.state = 'failed'
        if (this.policy !== 'continue') break
      }
    }
    return result
  }
}

async function attempt(undo: UndoAction): Promise<{ ok: boolean; error?: unknown }> {
  try {
    const value = await undo()
    return value === false ? { ok: false, error: new Error('the undo action returned false') } : { ok: true }
  } catch (error) {
    return { ok: false, error }
  }
}
