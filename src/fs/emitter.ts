/**
 * The event emitter watchers, stat watchers and FileHandles are: Node's own where the host has
 * node:events, a minimal one with the same methods elsewhere (src/ never imports node:).
 */
export type Listener = (...args: unknown[]) => void

/** A minimal EventEmitter for hosts without node:events. */
export class Emitter {
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
  removeAllListeners(event?: string): this {
    if (event === undefined) this.listeners.clear()
    else this.listeners.delete(event)
    return this
  }
  listenerCount(event: string): number {
    return this.listeners.get(event)?.length ?? 0
  }
  emit(event: string, ...args: unknown[]): boolean {
    const listeners = this.listeners.get(event) ?? []
    if (event === 'error' && listeners.length === 0) throw args[0]
    for (const listener of listeners) listener(...args)
    return listeners.length > 0
  }
}

/**
 * Node's EventEmitter where the host has it (listeners, errors and inspection as users know them).
 * process.getBuiltinModule directly, not host.ts's builtin(): FileHandle loads this module on first
 * use, and a lazily loaded module's imports of the core are wrapped by a bundler that does not split.
 */
type HostProcess = { process?: { getBuiltinModule?: (id: string) => { EventEmitter?: typeof Emitter } | undefined } }
export const EventEmitter: typeof Emitter = (globalThis as HostProcess).process?.getBuiltinModule?.('node:events')?.EventEmitter ?? Emitter

