/**
 * node:fs for the adapter's own disk access (the lower directory, flushes, exec's temp directory).
 * patchFs (mount.ts) replaces the members of the fs module object; every call made through
 * `hostFs`, and everything it starts, runs marked as host access, and a mount sends marked calls
 * straight to the disk. (A snapshot of the original functions would not do: node:fs's own
 * functions call the module's members internally, writeFileSync opening through `fs.openSync`.)
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import nodeFs from 'node:fs'

const marked = new AsyncLocalStorage<true>()

/** True inside a call made through hostFs or onHost: a mount must not route it into a workspace. */
export function isHostAccess(): boolean {
  return marked.getStore() === true
}

/** Runs `body`, and what it starts, as host access. */
export function onHost<T>(body: () => T): T {
  return marked.run(true, body)
}

type Call = (...args: unknown[]) => unknown

function hosted<T extends object>(source: T): T {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(source)) {
    // Classes (Stats, Dirent, ReadStream, …) and constants stay as they are.
    if (typeof value !== 'function' || /^[A-Z]/.test(key)) {
      out[key] = value
      continue
    }
    // Looked up per call: a patched member (a mount) then sees the mark and sends the call to the
    // disk, and spies and other patches still see the calls.
    const members = source as Record<string, unknown>
    const wrapped: Call = (...args) => marked.run(true, () => (members[key] as Call).apply(source, args))
    if (typeof (value as { native?: unknown }).native === 'function') {
      Object.assign(wrapped, { native: (...args: unknown[]) => marked.run(true, () => (members[key] as { native: Call }).native(...args)) })
    }
    out[key] = wrapped
  }
  return out as T
}

export const hostFs: typeof nodeFs = Object.freeze({ ...hosted(nodeFs), promises: Object.freeze(hosted(nodeFs.promises)) })
