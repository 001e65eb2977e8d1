/**
 * node:fs for the adapter's own disk access (the lower directory, flushes, exec's temp directory).
 * patchFs (mount.ts) replaces the members of the fs module object; every call made through
 * `hostFs`, and everything it starts, runs marked as host access, and a mount sends marked calls
 * straight to the disk. (A snapshot of the original functions would not do: node:fs's own
 * functions call the module's members internally, writeFileSync opening through `fs.openSync`.)
 *
 * Most calls are marked by a counter while they run: a synchronous call, and an asynchronous one
 * that reaches no other member after it returns, is over (as far as a mount can see) when it
 * returns. Only the rest are marked through an AsyncLocalStorage, whose first use turns on
 * promise hooks for the whole process on Node 20 and 22 (every promise of the application then
 * costs several times as much): a process that only opens, writes and syncs a directory store
 * over a directory never turns them on.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import nodeFs from 'node:fs'

const marked = new AsyncLocalStorage<true>()
/** hostFs calls (or onHostNow bodies) running right now, on this thread's stack. */
let depth = 0

/** True inside a call made through hostFs or onHost: a mount must not route it into a workspace. */
export function isHostAccess(): boolean {
  return depth > 0 || marked.getStore() === true
}

/** Runs `body`, and what it starts (callbacks, promises), as host access. */
export function onHost<T>(body: () => T): T {
  return marked.run(true, body)
}

/** Runs a synchronous `body` as host access: what it schedules for later is not marked. */
export function onHostNow<T>(body: () => T): T {
  depth++
  try {
    return body()
  } finally {
    depth--
  }
}

type Call = (...args: unknown[]) => unknown

/**
 * Asynchronous members that call no other fs member once they have returned (Node's lib/fs.js and
 * internal/fs/promises.js call the binding or their module's own functions), and that the adapter
 * uses. Others (writeFile's callback form opens and writes through `fs.open`/`fs.write` later;
 * streams open and read through the module; rm's recursion runs later) stay marked through the
 * AsyncLocalStorage.
 */
const RETURNS_DONE: ReadonlySet<string> = new Set(['close', 'fdatasync', 'fsync', 'read', 'write', 'fstat'])
const PROMISES_RETURN_DONE: ReadonlySet<string> = new Set(['open', 'readFile', 'readdir', 'rename', 'stat', 'lstat', 'writeFile', 'mkdir', 'unlink'])

function hosted<T extends object>(source: T, returnsDone: (key: string) => boolean): T {
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
    const now = returnsDone(key)
    const wrapped: Call = now ? (...args) => onHostNow(() => (members[key] as Call).apply(source, args)) : (...args) => marked.run(true, () => (members[key] as Call).apply(source, args))
    if (typeof (value as { native?: unknown }).native === 'function') {
      // realpathSync.native and realpath.native: the first is synchronous, the second a leaf.
      Object.assign(wrapped, { native: (...args: unknown[]) => onHostNow(() => (members[key] as { native: Call }).native(...args)) })
    }
    out[key] = wrapped
  }
  return out as T
}

export const hostFs: typeof nodeFs = Object.freeze({
  ...hosted(nodeFs, (key) => key.endsWith('Sync') || RETURNS_DONE.has(key)),
  promises: Object.freeze(hosted(nodeFs.promises, (key) => PROMISES_RETURN_DONE.has(key))),
})
