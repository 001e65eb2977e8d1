/**
 * The order and the acknowledgement of the engine's recording calls. Every async Workspace call
 * that records something (checkpoint, restore, undo, a transaction's commit, flush…) runs through
 * one queue, one call after another, so each sees the state the previous one left and reports what
 * it really did: five concurrent `undo()` calls undo five operations, not one five times. A call
 * resolves only once what it recorded is durable (`acknowledge`, the store's group commit), so a
 * result is an acknowledgement. Sync fs calls do not queue: each runs whole between two awaits.
 *
 * Reentrancy: a queued call that runs user code on its behalf (a side effect's compensator during
 * undo or restore, a flush's verify callback) lends its turn while that code runs. Engine calls made
 * meanwhile run at once instead of waiting behind it (which would deadlock). An undo or restore
 * commits as one group, so what a compensator records is durable when that undo or restore resolves
 * (its own calls resolve before: waiting would be waiting for itself); what a verify callback
 * records is acknowledged on its own. The engine cannot tell that code's own calls from calls made
 * elsewhere in the same moment, so both are treated so. A transaction queues only to commit: its
 * body, validators and approval hook run before, and may call the engine freely.
 */

export class SerialQueue {
  /** Settles when the last queued call has finished. */
  private tail: Promise<void> = Promise.resolve()
  /** Calls queued or running. */
  private size = 0
  /** Lends in progress: calls made now are part of the running call. */
  private lent = 0

  constructor(private readonly acknowledge: () => Promise<void>) {}

  /**
   * Runs `body` in turn. An idle queue starts it at once, synchronously up to its first await (so
   * `void ws.checkpoint()` still captures the state of that moment).
   */
  run<T>(body: () => Promise<T>): Promise<T> {
    if (this.lent > 0) return invoke(body)
    const idle = this.size === 0
    this.size++
    const result = idle ? invoke(body) : this.tail.then(body)
    this.tail = result.then(this.finished, this.finished)
    return result
  }

  /** Runs `body` in turn, then resolves once what it recorded is durable. */
  async call<T>(body: () => Promise<T>): Promise<T> {
    const result = await this.run(body)
    await this.acknowledge()
    return result
  }

  /** Runs user code on behalf of the running call: engine calls made meanwhile join it. */
  async lend<T>(body: () => T | Promise<T>): Promise<T> {
    this.lent++
    try {
      return await body()
    } finally {
      this.lent--
    }
  }

  /** Resolves once every call queued so far has finished (immediately from inside a lend). */
  idle(): Promise<void> {
    return this.lent > 0 ? Promise.resolve() : this.tail
  }

  private readonly finished = (): void => {
    this.size--
  }
}

/** Calls `body`, a synchronous throw included, as a promise. */
function invoke<T>(body: () => Promise<T>): Promise<T> {
  try {
    return body()
  } catch (error) {
    return Promise.reject(error)
  }
}
