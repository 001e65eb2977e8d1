/**
 * One writer across the tabs (and workers) of an origin for a store shared by name, as the browser
 * stores need it. The first instance takes a Web Lock and writes; the others follow read-only, hear
 * the writer's commits over a BroadcastChannel, and wait in the lock's queue, so the next one in
 * line becomes the writer when the writer goes away (its tab closed or reloaded, its worker ended,
 * its store closed): the browser releases a lock whose holder is gone. Where there are no Web Locks
 * (Node), there is no other tab: the instance writes.
 */
import type { StoreChange } from '../engine/store.js'
import { FsError } from '../errors.js'

export interface TabRoleOptions {
  /**
   * true: follow only (no lock is asked for; never promoted). false: must be the writer (EBUSY when
   * another instance is). Omitted: the writer when the lock is free, else a follower in its queue.
   */
  readonly readOnly?: boolean
  /**
   * Runs when a queued follower is granted the lock, before anyone is told: the store makes itself
   * ready to write (opens its files, reads what the last writer left). If it throws, the lock is
   * given up (the next in line gets it) and this instance stays a follower (`promotionError`).
   */
  readonly promote: () => Promise<void>
  /** The error for `readOnly: false` when another instance writes (default: EBUSY naming the lock). */
  readonly busy?: () => Error
}

const commitMessage = 'commit'

interface Locks {
  request(name: string, options: { ifAvailable?: boolean; signal?: AbortSignal }, callback: (lock: unknown) => unknown): Promise<unknown>
}

export class TabRole {
  /** Whether this instance holds the writer's lock now. */
  writer = false
  /** Why a promotion failed, if one did. */
  promotionError: Error | undefined
  private readonly channel: BroadcastChannel
  private readonly listeners = new Set<(change: StoreChange) => void>()
  private readonly queue = new AbortController()
  private release: () => void = () => undefined
  private closed = false

  private constructor(
    /** The lock's and the channel's name. */
    readonly name: string,
    private readonly options: TabRoleOptions,
  ) {
    this.channel = new BroadcastChannel(name)
    // Node keeps the process alive while a channel is open; browsers have no unref.
    ;(this.channel as { unref?: () => void }).unref?.()
    this.channel.onmessage = (event: MessageEvent) => {
      if (event.data !== commitMessage || this.writer || this.closed) return
      this.emit({ kind: 'commit' })
    }
  }

  /** Settles the role: resolves once this instance writes or follows (EBUSY when it must write and cannot). */
  static async open(name: string, options: TabRoleOptions): Promise<TabRole> {
    const role = new TabRole(name, options)
    try {
      await role.start()
    } catch (error) {
      role.close()
      throw error
    }
    return role
  }

  private async start(): Promise<void> {
    if (this.options.readOnly === true) return
    const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks
    if (!locks) {
      this.writer = true
      return
    }
    const held = new Promise<void>((resolve) => (this.release = resolve))
    this.writer = await new Promise<boolean>((resolve, reject) => {
      locks.request(this.name, { ifAvailable: true }, (lock) => {
        resolve(lock !== null)
        return lock === null ? undefined : held
      }).catch(reject)
    })
    if (this.writer) return
    if (this.options.readOnly === false) {
      throw this.options.busy?.() ?? new FsError('EBUSY', 'open', this.name, undefined, 'another tab holds the writer lock of this store; open it read-only to follow its commits')
    }
    // In line for the lock: granted when the writer and those queued before us are gone.
    locks.request(this.name, { signal: this.queue.signal }, (lock) => (lock === null ? undefined : this.promoted(held))).catch(() => undefined)
  }

  /** The lock was granted to this follower: the store gets ready, then everyone is told. */
  private async promoted(held: Promise<void>): Promise<void> {
    if (this.closed) return
    try {
      await this.options.promote()
    } catch (error) {
      this.promotionError = error as Error
      return // the lock goes to the next in line
    }
    if (this.closed) return
    this.writer = true
    this.emit({ kind: 'writer' })
    await held
  }

  /** `listener` hears the writer's commits (while following) and this instance's promotion. Returns the unsubscribe. */
  onChange(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The writer tells the followers it committed (once what it wrote is readable by them). */
  announce(): void {
    if (this.writer && !this.closed) this.channel.postMessage(commitMessage)
  }

  private emit(change: StoreChange): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change)
      } catch {
        // A listener's failure is its own; the others are still told.
      }
    }
  }

  /** Gives up the lock (or the place in its queue) and stops listening. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.writer = false
    this.listeners.clear()
    this.queue.abort()
    this.release()
    this.channel.close()
  }
}
