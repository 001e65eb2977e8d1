/**
 * Reconnecting in place. When a store whose connection can drop (a database server: Store.reconnect)
 * or whose disk filled up (a directory store) fails a group commit, the workspace goes degraded and
 * keeps working in memory; this retries the store with a bounded backoff until it is this session's
 * writer again, then has the durable journal send what it kept back (Durability.resume: the commit
 * in flight unless it landed, and everything recorded since) and leaves degraded mode. Another
 * writer taking the session over meanwhile is final: the workspace stays degraded and says why, and
 * nothing of it is written over the other's. What happened is `ws.status.reconnect`; a workspace
 * without such a store never loads this module (it comes with the durable journal a store carries).
 */
import type { StoreEvent } from './events.js'
import type { Store } from './store.js'

export interface ReconnectStatus {
  /**
   * reconnecting: the store failed and is being retried; reconnected: it is back and what was kept
   * back is in it; refused: it cannot be resumed (another writer took the session, or it is gone).
   */
  state: 'reconnecting' | 'reconnected' | 'refused'
  /** Attempts made since the store failed. */
  attempts: number
  /** When the store failed (ms since the epoch). */
  since: number
  /** When it came back, or was given up. */
  at?: number
  /** Why the store failed, then the last attempt's error, or why it was refused. */
  error: string
  /** Records sent again once it came back (the commit in flight if it had not landed, and those made since). */
  resent?: number
  /** Reconnected: whether the group commit in flight when it failed had landed (so it was not sent again). */
  landed?: boolean
}

/** Where the workspace shows it (the store status: ws.status). */
export interface ReconnectSink {
  degraded?: string
  warnings: string[]
  reconnect?: ReconnectStatus
}

/** What the durable journal offers the reconnection. */
export interface Resumable {
  readonly store: Store & { reconnect(): Promise<{ readonly records: number }> }
  /** Why the store is not written (shown, and in EDEGRADED errors). */
  failure: string | undefined
  /** Sends what was kept back, given the journal's length in the store; resolves once it is durable. */
  resume(records: number): Promise<{ resent: number; landed: boolean }>
}

/** The first wait and the longest one between attempts. */
const FIRST_WAIT_MS = 100
const LONGEST_WAIT_MS = 5000
/** Refusals: another writer has the session, the session is gone, the store was closed or is read-only, its disk failed an fdatasync. */
const FINAL = new Set(['EBUSY', 'ENOENT', 'EBADF', 'EROFS', 'EIO'])

const messageOf = (error: unknown) => (error as Error)?.message ?? String(error)

export class Reconnection {
  private running = false

  constructor(
    private readonly journal: Resumable,
    private readonly sink: ReconnectSink | undefined,
    private readonly refused: (message: string) => void,
    /** Told when it ends: reconnected, or refused (ws.events 'store'). */
    private readonly ended: (event: StoreEvent) => void,
  ) {}

  /** The store failed: show it, and retry unless already retrying (or refused for good). */
  failed(error: unknown): void {
    const { sink } = this
    if (this.running || sink?.reconnect?.state === 'refused') {
      this.show()
      return
    }
    this.running = true
    if (sink) sink.reconnect = { state: 'reconnecting', attempts: 0, since: Date.now(), error: messageOf(error) }
    this.show()
    void this.retry()
  }

  private async retry(): Promise<void> {
    const { sink, journal } = this
    for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
      await sleep(wait)
      if (sink?.reconnect) sink.reconnect.attempts++
      try {
        const { records } = await journal.store.reconnect()
        const { resent, landed } = await journal.resume(records)
        this.running = false
        const since = sink?.reconnect?.since
        const message =
          `the ${journal.store.kind} store ${since === undefined ? 'was unavailable' : `was unavailable for ${Date.now() - since} ms`} and is back: ${resent} record(s) sent again` +
          (landed ? ' (the commit in flight when it failed had landed)' : '')
        if (sink) {
          sink.reconnect = { ...sink.reconnect!, state: 'reconnected', at: Date.now(), resent, landed }
          sink.degraded = undefined
          sink.warnings.push(message)
        }
        this.ended({ state: 'reconnected', message })
        return
      } catch (error) {
        const code = (error as { code?: unknown }).code
        if (typeof code === 'string' && FINAL.has(code)) {
          this.running = false
          journal.failure = `the ${journal.store.kind} store cannot be resumed: ${messageOf(error)}; the workspace stays in memory (reopen the session to see what the store holds)`
          if (sink) sink.reconnect = { ...sink.reconnect!, state: 'refused', at: Date.now(), error: messageOf(error) }
          this.show()
          // A closed store is the workspace closing: nothing to tell.
          if (code !== 'EBADF') {
            this.refused(journal.failure)
            this.ended({ state: 'refused', message: journal.failure })
          }
          return
        }
        if (sink?.reconnect) sink.reconnect.error = messageOf(error)
        this.show()
      }
    }
  }

  /** The degraded reason, with where the reconnection is. */
  private show(): void {
    const { sink, journal } = this
    if (!sink || journal.failure === undefined) return
    const at = sink.reconnect
    sink.degraded = at?.state === 'reconnecting' ? `${journal.failure}; reconnecting (attempt ${at.attempts}${at.attempts > 0 ? `: ${at.error}` : ''})` : journal.failure
  }
}

/** A wait that does not keep the process alive (a workspace left degraded must not hold it open). */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms) as { unref?: () => void }
    timer.unref?.()
  })
}
