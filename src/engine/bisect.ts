/**
 * ws.bisect: which operation (or checkpoint) broke it. A binary (or, with `concurrency`, k-ary)
 * search over the session's history, as `git bisect run` does over commits. Each probe shows a
 * past state in a throwaway view (a session sharing the lower layer and the content, recording
 * nothing anywhere, moved from state to state so its exec layer follows in O(paths that differ))
 * and runs the command there through ws.exec; the live workspace, its history, checkpoints and
 * journal are never touched, and what a probe writes is thrown away unread (ExecOptions.discard).
 *
 * Outcomes follow `git bisect run`: exit 0 is good, 125 means "cannot be tested" (skipped, as
 * `git bisect skip`), any other code is bad; a timeout or a kill from outside skips too. Every
 * state the answer names was observed: `to` (assumed bad) and `from` (assumed good) are probed only
 * when the search ends on them, and the blamed state is probed a second time (`confirm`) so a
 * flaky command is reported (EFLAKY) instead of blamed.
 *
 * An exec runner carries it (ExecRunner.bisector = bisectEngine, through rewindfs/adapter-kit), so
 * the core entry never loads it: bisecting needs a runner anyway.
 */
import type { Change } from '../diff.js'
import type { ExecOptions, ExecResult } from '../exec.js'
import type { Checkpoint, Workspace } from '../workspace.js'
import type { Operation } from './journal.js'
import { BisectError, type BisectErrorCode } from './bisect-error.js'
import { abortError } from '../fs/write-data.js'

/** A state of the history: a checkpoint (by id or name) or the state just after an operation. */
export type BisectPoint = string | { operation: string }

export interface BisectOptions extends Pick<ExecOptions, 'cwd' | 'env' | 'timeout' | 'mode' | 'sandbox' | 'tmpdir'> {
  /**
   * Withdraws the search: aborted, the probes running are killed as ws.exec's signal kills a
   * command, no new one starts, and the promise rejects with Node's AbortError (name 'AbortError',
   * code 'ABORT_ERR', the signal's reason as `cause`); aborted already, nothing runs.
   */
  signal?: AbortSignal
  /** A state where the command passes (default: the oldest state the kept history can rebuild). */
  from?: BisectPoint
  /** A state where it fails (default: now). */
  to?: BisectPoint
  /** Probe every operation (default), or only checkpoints. */
  granularity?: 'operation' | 'checkpoint'
  /** Judges a probe instead of its exit code: true good, false bad, 'skip' cannot be tested. */
  isGood?: (result: ExecResult) => boolean | 'skip' | Promise<boolean | 'skip'>
  /** Probes run at once (k-ary search; default 1). */
  concurrency?: number
  /** Probe the blamed state a second time and report a disagreement as EFLAKY (default true). */
  confirm?: boolean
  /** Told after each probe, with what is left to search. */
  onProbe?: (probe: BisectProbe, progress: BisectProgress) => void
}

export interface BisectState {
  /** Before the oldest kept operation, just after an operation, at a checkpoint, or the live state. */
  kind: 'origin' | 'operation' | 'checkpoint' | 'now'
  label: string
  /** The seq of the last operation this state includes (0 for the origin). */
  operationSeq: number
  /** The operation this state is just after (for a checkpoint or now: the last one before it, if still kept). */
  operation?: Operation
  checkpoint?: Checkpoint
}

export interface BisectProbe {
  state: BisectState
  verdict: 'good' | 'bad' | 'skip'
  /** null: the command did not end by itself (a timeout, a kill) or never ran (see `reason`). */
  exitCode: number | null
  timedOut: boolean
  durationMs: number
  /** The last 2000 characters of its output. */
  stdoutTail: string
  stderrTail: string
  /** Why it was skipped. */
  reason?: string
  /** A second probe of a state already probed (confirm). */
  repeat?: true
}

export interface BisectProgress {
  /** States still between the last good and the first bad one, untested. */
  left: number
  /** Rounds of probes that may still be needed. */
  rounds: number
}

export interface BisectResult {
  /** The first state the command fails at. */
  firstBad: BisectState
  /** The state just before it (or before the skipped ones) where it passes. */
  lastGood: BisectState
  /**
   * The operations from lastGood to firstBad, oldest first: exactly the one that broke it, or
   * several when skipped states (or checkpoint granularity) leave more than one.
   */
  suspects: Operation[]
  probes: BisectProbe[]
  /** The unified diff from lastGood to firstBad: the breaking operation's, when it is one. */
  diff: string
  /** States that could not be evaluated, and why (as `git bisect skip`). */
  skipped: { state: BisectState; reason: string }[]
}

export { BisectError, type BisectErrorCode } from './bisect-error.js'

/** Where a probe's view is taken from, as the Workspace resolves it. */
export type ProbeTarget = 'origin' | 'now' | { checkpoint: string } | { operation: string }

/** The search as a capability an exec runner carries (ExecRunner.bisector); the core never imports it. */
export interface BisectEngine {
  bisect<Point>(host: BisectHost<Point>, command: string, options?: BisectOptions): Promise<BisectResult>
}

/** What bisect needs from the Workspace beyond its public API; the Workspace wires it. */
export interface BisectHost<Point> {
  readonly workspace: Workspace
  /** The tree and session state at a target (O(operations since the nearest checkpoint)). */
  point(target: ProbeTarget): Point
  /** A throwaway session: shares the lower layer and content, records nothing in this one or any store. */
  view(name: string): Workspace
  /** Moves a view to a point without recording anything. */
  show(view: Workspace, point: Point): void
  /** Differences between two points (with patches). */
  changes(from: Point, to: Point): Change[]
}

const TAIL = 2000
/** git bisect run's "this state cannot be tested". */
const UNTESTABLE = 125

function invalid(message: string): TypeError {
  return Object.assign(new TypeError(`rewindfs: bisect: ${message}`), { code: 'ERR_INVALID_ARG_VALUE' })
}

function missing(message: string): Error {
  return Object.assign(new Error(`rewindfs: bisect: ${message}`), { code: 'ENOENT' })
}

/** A state the search may visit: what it is, where its view comes from, or why it cannot be shown. */
interface Candidate {
  state: BisectState
  target: ProbeTarget
  unavailable?: string
}

function describe(op: Operation): string {
  return `${op.id} (${op.description ?? `${op.type} ${op.paths.join(', ')}`})`
}

function checkOptions(command: unknown, options: BisectOptions): void {
  if (typeof command !== 'string' || command.trim() === '') throw invalid('the command must be a non-empty string')
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object')
  const { granularity, concurrency, isGood, onProbe, confirm, from, to, signal } = options
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean')) throw invalid('signal must be an AbortSignal')
  if (granularity !== undefined && granularity !== 'operation' && granularity !== 'checkpoint') throw invalid(`granularity must be 'operation' or 'checkpoint', not ${JSON.stringify(granularity)}`)
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 64)) throw invalid(`concurrency must be an integer from 1 to 64, not ${String(concurrency)}`)
  if (isGood !== undefined && typeof isGood !== 'function') throw invalid('isGood must be a function')
  if (onProbe !== undefined && typeof onProbe !== 'function') throw invalid('onProbe must be a function')
  if (confirm !== undefined && typeof confirm !== 'boolean') throw invalid('confirm must be a boolean')
  for (const [name, point] of [['from', from], ['to', to]] as const) {
    if (point === undefined || typeof point === 'string') continue
    if (typeof point !== 'object' || point === null || typeof point.operation !== 'string') throw invalid(`${name} must be a checkpoint id or name, or { operation: id }`)
  }
}

/** The states between `from` and `to`, oldest first: index 0 is `from`, the last is `to`. */
function candidates(ws: Workspace, options: BisectOptions): Candidate[] {
  const all = ws.history().reverse()
  const operations = all.filter((op) => !op.undone && op.type !== 'side_effect')
  const checkpoints = ws.checkpoints()
  const firstSeq = all[0]?.seq ?? 1
  const lastStep = operations.at(-1)
  const bySeq = new Map(all.map((op) => [op.seq, op]))
  // A state after operation `seq` can be rebuilt from the whole history, or from a checkpoint taken
  // inside the kept history at or before it.
  const rebuildable = (seq: number) => firstSeq <= 1 || checkpoints.some((c) => !c.broken && c.operationSeq >= firstSeq - 1 && c.operationSeq <= seq)
  const tooOld = 'older than the kept history (its operations were dropped by retention)'

  const afterOperation = (op: Operation): Candidate => ({
    state: { kind: 'operation', label: `after ${describe(op)}`, operationSeq: op.seq, operation: op },
    target: { operation: op.id },
    ...(rebuildable(op.seq) ? {} : { unavailable: tooOld }),
  })
  const atCheckpoint = (c: Checkpoint): Candidate => {
    const op = bySeq.get(c.operationSeq)
    return {
      state: { kind: 'checkpoint', label: `checkpoint ${c.name}`, operationSeq: c.operationSeq, checkpoint: c, ...(op ? { operation: op } : {}) },
      target: { checkpoint: c.id },
      ...(c.broken ? { unavailable: 'the checkpoint is broken (content it needs is missing from the store)' } : {}),
    }
  }
  const origin: Candidate = { state: { kind: 'origin', label: 'the start (before any operation)', operationSeq: 0 }, target: 'origin' }
  const now: Candidate = { state: { kind: 'now', label: 'now', operationSeq: lastStep?.seq ?? 0, ...(lastStep ? { operation: lastStep } : {}) }, target: 'now' }

  const resolve = (point: BisectPoint, name: 'from' | 'to'): Candidate => {
    if (typeof point === 'string') {
      const c = checkpoints.find((x) => x.id === point) ?? checkpoints.find((x) => x.name === point)
      if (!c) throw missing(`${name}: no checkpoint named '${point}'`)
      return atCheckpoint(c)
    }
    const op = all.find((x) => x.id === point.operation)
    if (!op) throw missing(`${name}: no operation '${point.operation}' in the kept history`)
    if (op.undone) throw invalid(`${name}: operation ${op.id} was undone; it is in no state of the history`)
    return afterOperation(op)
  }

  const oldest = (): Candidate => {
    if (firstSeq <= 1) return origin
    const c = checkpoints.find((x) => !x.broken && x.operationSeq >= firstSeq - 1)
    if (!c) throw invalid('the kept history cannot rebuild any past state (older operations were dropped and no checkpoint is left inside it); pass from: a checkpoint')
    return atCheckpoint(c)
  }
  const start = options.from === undefined ? oldest() : resolve(options.from, 'from')
  const end = options.to === undefined ? now : resolve(options.to, 'to')
  for (const [name, c] of [['from', start], ['to', end]] as const) if (c.unavailable) throw invalid(`${name} (${c.state.label}) cannot be shown: ${c.unavailable}`)
  const startCheckpoint = start.state.checkpoint
  const endCheckpoint = end.state.checkpoint
  const ordered =
    start.state.operationSeq < end.state.operationSeq || (startCheckpoint !== undefined && endCheckpoint !== undefined && startCheckpoint.seq < endCheckpoint.seq)
  if (!ordered) throw invalid(`from (${start.state.label}) is not older than to (${end.state.label}): nothing to bisect`)

  let between: Candidate[]
  if ((options.granularity ?? 'operation') === 'operation') {
    // The state after each operation between them; `to` itself stands for the state after the last.
    between = operations.filter((op) => op.seq > start.state.operationSeq && op.seq < end.state.operationSeq).map(afterOperation)
  } else {
    between = checkpoints
      .filter((c) => (startCheckpoint ? c.seq > startCheckpoint.seq : start.state.kind === 'origin' || c.operationSeq > start.state.operationSeq))
      .filter((c) => (endCheckpoint ? c.seq < endCheckpoint.seq : end.state.kind === 'now' || c.operationSeq < end.state.operationSeq))
      .map(atCheckpoint)
  }
  return [start, ...between, end]
}

/** The search's own state: what each index turned out to be, and the probes so far. */
class Search {
  readonly verdicts = new Map<number, 'good' | 'bad' | 'skip'>()
  readonly reasons = new Map<number, string>()
  readonly probes: BisectProbe[] = []

  constructor(readonly states: Candidate[]) {
    states.forEach((c, i) => {
      if (c.unavailable === undefined) return
      this.verdicts.set(i, 'skip')
      this.reasons.set(i, c.unavailable)
    })
  }

  get last(): number {
    return this.states.length - 1
  }

  /** The first index seen bad (or the end, assumed bad), and the last seen good before it (or the start, assumed good). */
  bounds(): { good: number; bad: number } {
    let bad = this.last
    for (let i = 1; i < this.last; i++) {
      if (this.verdicts.get(i) === 'bad') {
        bad = i
        break
      }
    }
    let good = 0
    for (let i = bad - 1; i > 0; i--) {
      if (this.verdicts.get(i) === 'good') {
        good = i
        break
      }
    }
    return { good, bad }
  }

  /** Untested states strictly between the bounds. */
  open(): number[] {
    const { good, bad } = this.bounds()
    const out: number[] = []
    for (let i = good + 1; i < bad; i++) if (!this.verdicts.has(i)) out.push(i)
    return out
  }

  skipped(): { state: BisectState; reason: string }[] {
    return [...this.verdicts].filter(([, v]) => v === 'skip').sort(([a], [b]) => a - b).map(([i]) => ({ state: this.states[i].state, reason: this.reasons.get(i)! }))
  }
}

/** k states splitting `open` into k + 1 near-equal parts (the middle one for k = 1). */
function splitPoints(open: number[], k: number): number[] {
  if (open.length <= k) return open
  const out = new Set<number>()
  for (let j = 1; j <= k; j++) out.add(open[Math.max(0, Math.min(open.length - 1, Math.floor((j * (open.length + 1)) / (k + 1)) - 1))])
  return [...out]
}

const tail = (text: string) => (text.length > TAIL ? text.slice(-TAIL) : text)

/** Errors that are the same at every state (bad options, no runner, a forced mode that cannot run): they end the search. */
function global(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code
  return error instanceof TypeError || code === 'ENOSYS' || code === 'ENOTSUP' || code === 'ERR_INVALID_ARG_VALUE'
}

export async function bisect<Point>(host: BisectHost<Point>, command: string, options: BisectOptions = {}): Promise<BisectResult> {
  checkOptions(command, options)
  const { signal } = options
  const withdrawn = () => {
    if (signal?.aborted) throw abortError(signal)
  }
  withdrawn()
  const ws = host.workspace
  const states = candidates(ws, options)
  const search = new Search(states)
  const k = options.concurrency ?? 1
  const exec: ExecOptions = {}
  for (const key of ['cwd', 'env', 'timeout', 'mode', 'sandbox', 'tmpdir', 'signal'] as const) if (options[key] !== undefined) Object.assign(exec, { [key]: options[key] })
  const points = new Map<number, Point>()
  const pointOf = (i: number) => {
    let point = points.get(i)
    if (point === undefined) points.set(i, (point = host.point(states[i].target)))
    return point
  }
  // The ends as they are now: writes made while the search runs do not move them.
  pointOf(0)
  pointOf(search.last)

  const views: Workspace[] = []
  const free: Workspace[] = []
  const tag = Math.random().toString(36).slice(2, 6)
  const take = (): Workspace => {
    const view = free.pop() ?? host.view(`${ws.session}-bisect-${tag}-${views.length + 1}`)
    if (!views.includes(view)) views.push(view)
    return view
  }

  const progress = (): BisectProgress => {
    const left = search.open().length
    return { left, rounds: left === 0 ? 0 : Math.ceil(Math.log(left + 1) / Math.log(k + 1)) }
  }

  /** Runs the command at state i in a free view and judges it. */
  const probe = async (i: number, repeat: boolean): Promise<BisectProbe> => {
    const view = take()
    const state = states[i].state
    const started = performance.now()
    let result: ExecResult | undefined
    let failure: string | undefined
    try {
      host.show(view, pointOf(i))
      result = await view.exec(command, { ...exec, label: `bisect probe: ${command}`, discard: true })
    } catch (error) {
      // Withdrawn: the probe's command was killed, and its outcome says nothing about the state.
      if (global(error) || signal?.aborted) throw error
      // The command ran but its writes could not be recorded in the view: its outcome still counts.
      result = (error as { result?: ExecResult }).result
      if (result === undefined) failure = `the state could not be evaluated: ${(error as Error)?.message ?? String(error)}`
    } finally {
      free.push(view)
    }
    const durationMs = Math.round(performance.now() - started)
    const base = { state, durationMs, ...(repeat ? { repeat: true as const } : {}) }
    if (result === undefined) return { ...base, verdict: 'skip', exitCode: null, timedOut: false, stdoutTail: '', stderrTail: '', reason: failure! }
    const output = { exitCode: result.exitCode, timedOut: result.timedOut, stdoutTail: tail(result.stdout), stderrTail: tail(result.stderr) }
    if (result.timedOut) return { ...base, ...output, verdict: 'skip', reason: `timed out after ${exec.timeout} ms` }
    if (options.isGood) {
      const judged = await options.isGood(result)
      if (judged === 'skip') return { ...base, ...output, verdict: 'skip', reason: 'isGood said it cannot be tested' }
      return { ...base, ...output, verdict: judged ? 'good' : 'bad' }
    }
    if (result.exitCode === null) return { ...base, ...output, verdict: 'skip', reason: `killed by ${result.signal ?? 'a signal'}` }
    if (result.exitCode === UNTESTABLE) return { ...base, ...output, verdict: 'skip', reason: `exit code ${UNTESTABLE} (cannot be tested)` }
    return { ...base, ...output, verdict: result.exitCode === 0 ? 'good' : 'bad' }
  }

  /** Probes several states at once; every probe ends before an error ends the search. */
  const round = async (indices: number[], repeat = false): Promise<BisectProbe[]> => {
    withdrawn()
    const settled = await Promise.allSettled(indices.map((i) => probe(i, repeat)))
    // Aborted once the commands had ended (while isGood judged them): the search ends all the same.
    withdrawn()
    const rejected = settled.find((s) => s.status === 'rejected')
    if (rejected) throw (rejected as PromiseRejectedResult).reason
    const done = settled.map((s) => (s as PromiseFulfilledResult<BisectProbe>).value)
    done.forEach((p, n) => {
      const i = indices[n]
      search.probes.push(p)
      if (!repeat) {
        search.verdicts.set(i, p.verdict)
        if (p.reason !== undefined) search.reasons.set(i, p.reason)
      }
    })
    for (const p of done) options.onProbe?.(p, progress())
    return done
  }

  const fail = (code: BisectErrorCode, message: string): never => {
    throw new BisectError(code, message, search.probes, search.skipped())
  }

  try {
    for (;;) {
      const open = search.open()
      if (open.length > 0) {
        await round(splitPoints(open, k))
        continue
      }
      // Nothing left between: the answer rests on the ends, which must be observed.
      const { good, bad } = search.bounds()
      const ends = [bad, good].filter((i) => (i === 0 || i === search.last) && !search.verdicts.has(i))
      if (ends.length === 0) break
      await round(ends.slice(0, k))
      const end = search.verdicts.get(search.last)
      const start = search.verdicts.get(0)
      if (end === 'good') fail('EBISECTTO', `the command passes at to (${states[search.last].state.label}), so nothing broke${bad === search.last ? ' between from and to' : ''}`)
      if (end === 'skip' && bad === search.last) fail('EBISECTSKIP', `to (${states[search.last].state.label}) could not be evaluated: ${search.reasons.get(search.last)}`)
      if (start === 'bad') fail('EBISECTFROM', `the command already fails at from (${states[0].state.label}); pass an older from where it passes`)
      if (start === 'skip' && good === 0) fail('EBISECTSKIP', `from (${states[0].state.label}) could not be evaluated: ${search.reasons.get(0)}`)
    }
    const { good, bad } = search.bounds()
    if (options.confirm ?? true) {
      // A second look at the blamed state (and, with a slot free, at the last good one): a command
      // that changes its mind is flaky, and nothing is blamed.
      const checked = k > 1 ? [bad, good] : [bad]
      const again = await round(checked, true)
      const disagreed = checked.filter((i, n) => again[n].verdict !== search.verdicts.get(i))
      if (disagreed.length > 0) {
        const what = disagreed.map((i) => `${states[i].state.label} was ${search.verdicts.get(i)}, then ${again[checked.indexOf(i)].verdict}`).join('; ')
        fail('EFLAKY', `the command is flaky: ${what}; nothing is blamed (make it deterministic, or judge it with isGood)`)
      }
    }
    const lastGood = states[good].state
    const firstBad = states[bad].state
    const suspects = ws
      .history()
      .reverse()
      .filter((op) => !op.undone && op.type !== 'side_effect' && op.seq > lastGood.operationSeq && op.seq <= firstBad.operationSeq)
      .map(({ undone: _undone, ...op }) => op as Operation)
    return {
      firstBad,
      lastGood,
      suspects,
      probes: search.probes,
      diff: unified(host.changes(pointOf(good), pointOf(bad))),
      skipped: search.skipped(),
    }
  } finally {
    await Promise.all(views.map((view) => view.close().catch(() => undefined)))
  }
}

export const bisectEngine: BisectEngine = { bisect }

/** Patches joined; a file whose content has no text patch is named, as git names binary files. */
function unified(changes: Change[]): string {
  let out = ''
  for (const change of changes) {
    if (change.entry !== 'file') continue
    const patch = change.patch
    if (patch !== undefined) out += patch
    else out += `Binary files a${change.path} and b${change.path} differ\n`
  }
  return out
}
