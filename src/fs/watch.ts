/**
 * fs.watch for changes made through the workspace (the overlay reports every change), delivered
 * asynchronously as Node's are. Changes made to the lower source by other programs are not seen.
 */
import { FsError } from '../errors.js'
import { builtin } from '../host.js'
import { absolute, isWithin, normalize, relative } from '../path.js'
import { encodingOption, pathArgument } from './arguments.js'
import type { FsOperations } from './operations.js'

type Listener = (...args: unknown[]) => void

/** A minimal EventEmitter for hosts without node:events. */
class Emitter {
  private readonly listeners = new Map<string, Listener[]>()
  on(event: string, listener: Listener): this {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener])
    return this
  }
  addListener(event: string, listener: Listener): this {
    return this.on(event, listener)
  }
  once(event: string, listener: Listener): this {
    const wrapped: Listener = (...args) => {
      this.off(event, wrapped)
      listener(...args)
    }
    return this.on(event, wrapped)
  }
  off(event: string, listener: Listener): this {
    this.listeners.set(event, (this.listeners.get(event) ?? []).filter((l) => l !== listener))
    return this
  }
  removeListener(event: string, listener: Listener): this {
    return this.off(event, listener)
  }
  emit(event: string, ...args: unknown[]): boolean {
    const listeners = this.listeners.get(event) ?? []
    for (const listener of listeners) listener(...args)
    return listeners.length > 0
  }
}

const EventEmitter = builtin<{ EventEmitter: typeof Emitter }>('node:events')?.EventEmitter ?? Emitter

export interface FSWatcher {
  on(event: 'change', listener: (eventType: 'change' | 'rename', filename: string) => void): this
  on(event: string, listener: Listener): this
  close(): void
  ref(): this
  unref(): this
}

interface Watch {
  path: string
  recursive: boolean
  notify(eventType: 'change' | 'rename', filename: string): void
}

export class WatchRegistry {
  private readonly watches = new Set<Watch>()

  constructor(private readonly ops: FsOperations) {
    const previous = ops.overlay.onChange
    ops.overlay.onChange = (path, kind) => {
      previous?.(path, kind)
      if (this.watches.size > 0) this.dispatch(path, kind)
    }
  }

  private dispatch(path: string, kind: 'change' | 'rename'): void {
    for (const watch of this.watches) {
      if (path === watch.path) watch.notify(kind, path.slice(path.lastIndexOf('/') + 1))
      else if (isWithin(path, watch.path)) {
        const rel = relative(watch.path, path)
        if (watch.recursive || !rel.includes('/')) watch.notify(kind, rel)
      }
    }
  }

  private add(filename: unknown, options: unknown, notify: Watch['notify']): Watch {
    const given = pathArgument(filename, 'filename')
    const opts = (typeof options === 'object' && options !== null ? options : {}) as { recursive?: boolean }
    const path = normalize(absolute(given, this.ops.cwd))
    try {
      this.ops.overlay.resolve(path, 'watch', true, given)
    } catch (error) {
      if (error instanceof FsError) throw new FsError(error.code, 'watch', given)
      throw error
    }
    const watch: Watch = { path, recursive: opts.recursive === true, notify }
    this.watches.add(watch)
    return watch
  }

  watch(filename: unknown, options?: unknown, listener?: unknown): FSWatcher {
    if (typeof options === 'function') {
      listener = options
      options = {}
    }
    const encoding = encodingOption(options, 'utf8')
    const emitter = new EventEmitter() as unknown as Emitter & FSWatcher
    let closed = false
    const watch = this.add(filename, options, (eventType, name) => {
      // Delivered on a later turn, as Node's are, never inside the fs call that caused it.
      queueMicrotask(() => {
        if (!closed) emitter.emit('change', eventType, encoding === 'buffer' ? new TextEncoder().encode(name) : name)
      })
    })
    if (typeof listener === 'function') emitter.on('change', listener as Listener)
    Object.assign(emitter, {
      close: () => {
        if (closed) return
        closed = true
        this.watches.delete(watch)
        queueMicrotask(() => emitter.emit('close'))
      },
      ref: () => emitter,
      unref: () => emitter,
    })
    return emitter
  }

  /** fs.promises.watch: an async iterable of { eventType, filename }, ended by options.signal. */
  iterate(filename: unknown, options?: unknown): AsyncIterable<{ eventType: 'change' | 'rename'; filename: string }> {
    const signal = (options as { signal?: AbortSignal } | undefined)?.signal
    const queue: { eventType: 'change' | 'rename'; filename: string }[] = []
    let wake: (() => void) | undefined
    const watch = this.add(filename, options, (eventType, name) => {
      queue.push({ eventType, filename: name })
      wake?.()
    })
    const stop = () => {
      this.watches.delete(watch)
      wake?.()
    }
    signal?.addEventListener('abort', stop, { once: true })
    const registry = this
    return {
      async *[Symbol.asyncIterator]() {
        try {
          while (!signal?.aborted) {
            if (queue.length > 0) {
              yield queue.shift()!
              continue
            }
            await new Promise<void>((resolve) => (wake = resolve))
            wake = undefined
          }
          if (signal?.aborted) throw Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' })
        } finally {
          registry.watches.delete(watch)
        }
      },
    }
  }
}
