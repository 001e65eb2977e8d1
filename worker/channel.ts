/**
 * One worker's channel: requests go out through comlink, Outcomes come back and are unwrapped, and a
 * worker that dies turns every call in flight into a rejection instead of a promise that never settles.
 * The worker's event messages (watch events, ws.events) arrive on it too, in order with the answers,
 * and go to the session they name.
 */
import * as Comlink from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { BAD_CALL, EVENTS_MESSAGE, SERVING_MESSAGE, WORKER_CLOSED, WORKER_CRASHED } from './constants.js'
import type { CallCallbacks, Hooks } from './host.js'
import type { EventItem, EventsMessage, Outcome } from './protocol.js'
import type { WorkerApi } from './serve.js'
import { toError } from './values.js'

/** What is used of a Node worker_threads Worker (structural: a page's types need nothing from Node). */
export interface NodeWorkerLike {
  postMessage(value: unknown): void
  on(event: 'message', listener: (value: unknown) => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'exit', listener: (code: number) => void): unknown
  terminate(): Promise<number>
}

/** A browser Worker, or a Node worker_threads Worker. */
export type WorkerLike = Pick<Worker, 'postMessage' | 'addEventListener' | 'removeEventListener' | 'terminate'> | NodeWorkerLike

export function coded(code: string, message: string): Error {
  return Object.assign(new Error(message), { code })
}

/** How long openWorkerWorkspace waits for the worker to call serve() by default. */
export const DEFAULT_SERVE_TIMEOUT_MS = 30_000

/** `serveTimeoutMs` checked as Node checks a timeout option: a number (TypeError), finite and 0 or more (RangeError); 0 waits for ever. */
export function serveTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_SERVE_TIMEOUT_MS
  if (typeof value !== 'number') {
    throw Object.assign(new TypeError(`rewindfs: the "serveTimeoutMs" option must be of type number (milliseconds; 0: no limit). Received ${typeof value}`), { code: 'ERR_INVALID_ARG_TYPE' })
  }
  if (!Number.isFinite(value) || value < 0) {
    throw Object.assign(new RangeError(`rewindfs: the value of "serveTimeoutMs" is out of range. It must be a finite number of milliseconds, 0 or more (0: no limit). Received ${value}`), { code: 'ERR_OUT_OF_RANGE' })
  }
  return value
}

/** A worker that loaded and never served, shaped as Node's socket timeouts are. */
function serveTimedOut(ms: number): Error {
  const error = new Error(
    `ETIMEDOUT: the worker never called serve() within ${ms} ms; its entry module must call serve() from rewindfs/worker/serve (as rewindfs/worker/entry and rewindfs/worker/browser-entry do), or it needs longer to start (serveTimeoutMs), open`,
  )
  return Object.assign(error, { errno: -110, code: 'ETIMEDOUT', syscall: 'open' })
}

/** A session on this side that takes the worker's events for its handle. */
export interface EventReceiver {
  receive(item: EventItem): void
  /** The worker crashed: nothing more comes. */
  crashed(error: Error): void
}

/** Whether a message is the worker's event message (comlink's answers carry an id instead). */
function isEventsMessage(data: unknown): data is EventsMessage {
  return typeof data === 'object' && data !== null && (data as { kind?: unknown }).kind === EVENTS_MESSAGE && Array.isArray((data as { items?: unknown }).items)
}

/** One worker's channel: sends requests, unwraps Outcomes, and turns a dead worker into rejections. */
export class Channel {
  readonly remote: Comlink.Remote<WorkerApi>
  crashed: Error | undefined
  closed = false
  /** Rejecters of the calls in flight: a dead worker never answers them. */
  private readonly inFlight = new Set<(error: Error) => void>()
  /** Sessions by handle, for the worker's events. */
  private readonly receivers = new Map<number, EventReceiver>()
  /** Told when the worker's serving message arrives (while `serving` waits). */
  private heardServing: (() => void) | undefined

  /** The worker's own terminate(): the page's calls of it go through `terminate` below. */
  private readonly terminateWorker: () => Promise<unknown>

  constructor(
    readonly worker: WorkerLike,
    private readonly onCrash: ((error: Error) => void) | undefined,
  ) {
    const own = worker.terminate.bind(worker) as () => unknown
    this.terminateWorker = async () => own()
    if ('on' in worker) {
      this.remote = Comlink.wrap<WorkerApi>(nodeEndpoint(worker as unknown as Parameters<typeof nodeEndpoint>[0]))
      worker.on('error', (error: Error) => this.crash(`the worker threw ${error?.name ?? 'an error'}: ${error?.message ?? String(error)}`))
      worker.on('exit', (code: number) => this.crash(`the worker exited with code ${code}`))
      worker.on('message', (data: unknown) => this.events(data))
    } else {
      this.remote = Comlink.wrap<WorkerApi>(worker)
      // A script that fails to load (a wrong URL, a failed import) is a plain Event: no message to quote.
      worker.addEventListener('error', (event: ErrorEvent) =>
        this.crash(typeof event.message === 'string' ? `the worker threw: ${event.message}` : 'the worker could not start: its script failed to load (a wrong URL, a network error or a failed import)'),
      )
      worker.addEventListener('message', (event: MessageEvent) => this.events(event.data))
      // A Web Worker that the page terminates tells nobody, so its calls in flight would never
      // settle: the page's own worker.terminate() ends the channel as a crash does.
      worker.terminate = () => {
        this.crash('worker.terminate() was called before the workspace closed')
        void this.terminateWorker()
      }
    }
  }

  /** Closes the channel and ends the worker: calls still in flight reject (a terminated worker never answers them). */
  async terminate(): Promise<void> {
    if (!this.closed) {
      this.closed = true
      this.reject(coded(WORKER_CLOSED, 'rewindfs: the workspace closed before this call was answered'))
    }
    await this.terminateWorker()
  }

  private reject(error: Error): void {
    for (const reject of this.inFlight) reject(error)
    this.inFlight.clear()
  }

  /** Routes the worker's events to the sessions they name (from here on, until `unlisten`). */
  listen(handle: number, receiver: EventReceiver): void {
    this.receivers.set(handle, receiver)
  }

  unlisten(handle: number): void {
    this.receivers.delete(handle)
  }

  private events(data: unknown): void {
    if ((data as { kind?: unknown } | null)?.kind === SERVING_MESSAGE) this.heardServing?.()
    if (!isEventsMessage(data)) return
    for (const item of data.items) {
      if (typeof item !== 'object' || item === null || typeof item.handle !== 'number') continue
      this.receivers.get(item.handle)?.receive(item)
    }
  }

  private crash(reason: string): void {
    if (this.closed || this.crashed) return
    this.crashed = coded(WORKER_CRASHED, `rewindfs: the workspace worker crashed (${reason}); reopen it from its durable store`)
    this.reject(this.crashed)
    for (const receiver of [...this.receivers.values()]) receiver.crashed(this.crashed)
    this.receivers.clear()
    this.onCrash?.(this.crashed)
    // A Web Worker survives an uncaught error, but its engine state can no longer be trusted.
    void this.terminateWorker()
  }

  /**
   * Resolves once the worker serves: its answer to a hello, or its serving message (a Web Worker's
   * scope drops a message that comes before serve() listens; one posted before this side listened
   * is missed, and then the hello is answered). Rejects with ETIMEDOUT after `timeoutMs` (0: never),
   * or as a call does when the worker dies first.
   */
  async serving(timeoutMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const heard = new Promise<void>((resolve) => (this.heardServing = resolve))
    const expired = new Promise<never>((_, reject) => {
      if (timeoutMs > 0) timer = setTimeout(() => reject(serveTimedOut(timeoutMs)), timeoutMs)
    })
    try {
      await Promise.race([this.send({ t: 'hello' }), heard, expired])
    } finally {
      clearTimeout(timer)
      this.heardServing = undefined
    }
  }

  /** The value of an Outcome, or its error rebuilt with Node's fields. */
  settle(pending: Promise<Outcome>): Promise<unknown> {
    if (this.crashed) return Promise.reject(this.crashed)
    return new Promise((resolve, reject) => {
      this.inFlight.add(reject)
      pending.then(
        (outcome) => {
          this.inFlight.delete(reject)
          if (outcome.ok) resolve(outcome.value)
          else reject(toError(outcome.error))
        },
        (error: unknown) => {
          this.inFlight.delete(reject)
          // structuredClone refused an argument (a function, a symbol): the call never left.
          if ((error as Error)?.name === 'DataCloneError') reject(coded(BAD_CALL, `rewindfs worker: malformed call: ${(error as Error).message}`))
          else reject(error)
        },
      )
    })
  }

  send(message: object, callbacks?: CallCallbacks, hooks?: Hooks, transfers: Transferable[] = []): Promise<unknown> {
    if (this.crashed) return Promise.reject(this.crashed)
    if (this.closed) return Promise.reject(coded(WORKER_CLOSED, 'rewindfs: this workspace worker is closed'))
    const payload = transfers.length > 0 ? Comlink.transfer(message, transfers) : message
    return this.settle(this.remote.request(payload, callbacks && Comlink.proxy(callbacks), hooks && Comlink.proxy(hooks)))
  }
}

