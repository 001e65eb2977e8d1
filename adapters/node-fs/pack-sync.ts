/**
 * How a group commit waits for its fdatasync. Handed to libuv's thread pool, the wait adds two
 * thread hand-offs to the disk's own time (0.1-0.2 ms a sync alone on a 2-core VM, more beside
 * the engine's busy threads); in interleaved runs of the bench's sync-every-100 cells, blocking
 * was 0-17 % faster for mkdir and 6-26 % for 1 KiB writes, and a sync after every write took 43 %
 * less time (every 10: 14 %). So a disk that answers within a budget is waited for on the calling
 * thread, as SQLite and better-sqlite3 do. A sync that overran the budget sends the next ones to
 * the pool, twice as many each time it happens again: a slow disk holds the event loop once in a
 * while, not at every commit.
 */

/** Default budget (milliseconds) of an fdatasync waited for on the calling thread. */
export const DEFAULT_BLOCKING_SYNC_MS = 2

/**
 * A sync after more than this many bytes written (a compaction's snapshot, a segment's
 * preallocated zeros) goes to the pool: it would take longer than the budget on most disks.
 */
export const BLOCKING_SYNC_BYTES = 1024 * 1024

/** The most syncs sent to the pool before the calling thread tries again. */
const MAX_BACKOFF = 256

export class SyncPolicy {
  /** Syncs still to send to the pool after an overrun. */
  private skip = 0
  /** How many the next overrun sends there. */
  private backoff = 1

  /** `budgetMs`: 0 sends every sync to the pool. */
  constructor(private readonly budgetMs: number) {}

  /** Whether to wait for the next fdatasync on the calling thread, `bytes` written since the last one. */
  blocking(bytes: number): boolean {
    if (this.budgetMs <= 0 || bytes > BLOCKING_SYNC_BYTES) return false
    if (this.skip === 0) return true
    this.skip--
    return false
  }

  /** A blocking fdatasync took `ms`. */
  took(ms: number): void {
    if (ms <= this.budgetMs) {
      this.backoff = 1
      return
    }
    this.skip = this.backoff
    this.backoff = Math.min(MAX_BACKOFF, 2 * this.backoff)
  }
}
