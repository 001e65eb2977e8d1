/**
 * `rewindfs/testing`: a fixture for tests that a test can damage freely. `createFixture(lower)`
 * opens an in-memory workspace over the fixture; `reset()` (for `beforeEach`) brings back the
 * fixture with no history and no checkpoints in O(1), by opening a fresh workspace over the same
 * lower source: nothing is copied, whatever the fixture's size.
 *
 * `fixture.fs` is one object for the fixture's whole life: its functions call into the workspace
 * current at the time of the call, so code that captured `fs.readFileSync` before a reset sees the
 * reset. That makes mocking Node's fs a one-liner. With vitest:
 *
 * ```ts
 * // vi.mock factories run before imports: create the fixture in vi.hoisted (async is allowed).
 * const fixture = await vi.hoisted(async () => {
 *   const { createFixture } = await import('rewindfs/testing')
 *   return createFixture({ '/app/config.json': '{ "port": 8080 }\n' })
 * })
 * vi.mock('node:fs', () => fixture.modules.fs)                  // also covers import 'fs'
 * vi.mock('node:fs/promises', () => fixture.modules.promises)
 *
 * import { loadConfig } from '../src/config.js'                  // imports node:fs, unchanged
 * beforeEach(() => fixture.reset())
 * ```
 *
 * To use a real directory as the fixture, build its source from the real fs (syncFsSource from
 * rewindfs/adapter-kit):
 * `createFixture(syncFsSource(await vi.importActual('node:fs'), '/path/to/fixture'))`; the directory
 * is only ever read. vi.mock reaches modules vitest transforms (your code and inlined dependencies);
 * a dependency vitest externalises keeps Node's fs unless listed in `server.deps.inline`.
 */
import { toLowerSource } from '../src/lower/index.js'
import type { LowerInput, LowerSource } from '../src/lower/index.js'
import { watching } from '../src/watch.js'
import { type NodeFs, Workspace, type WorkspaceOptions } from '../src/workspace.js'

export { type ContractCheck, type RawStore, type StoreSubject, type StoreUnderTest, storeContract } from './store-contract.js'

/** Workspace options for a fixture: no store (a fixture lives in memory) and no lower (given apart). */
export type FixtureOptions = Omit<WorkspaceOptions, 'lower' | 'store'>

/** Module namespaces for vi.mock: named exports plus a default export, as Node's modules have. */
export type FsModule = NodeFs & { readonly default: NodeFs }
export type FsPromisesModule = NodeFs['promises'] & { readonly default: NodeFs['promises'] }

/** The workspace's members, forwarded to the current workspace, plus the fixture's own. */
export interface Fixture extends Omit<Workspace, 'fs' | 'reset' | 'close'> {
  /** The same object across resets; calls go to the current workspace. */
  readonly fs: NodeFs
  /** For `vi.mock('node:fs', () => fixture.modules.fs)` and `vi.mock('node:fs/promises', () => fixture.modules.promises)`. */
  readonly modules: { readonly fs: FsModule; readonly promises: FsPromisesModule }
  /** The workspace in use now (a new one after each reset). */
  readonly workspace: Workspace
  /** Back to the fixture, with no history and no checkpoints. O(1). */
  reset(): Promise<void>
  /** Closes the workspace and the lower source. */
  close(): Promise<void>
}

/** The source without its close: each reset closes a workspace, and the source must outlive it. */
function keptOpen(source: LowerSource): LowerSource {
  return {
    kind: source.kind,
    ...(source.id !== undefined ? { id: source.id } : {}),
    stat: (path) => source.stat(path),
    readdir: (path) => source.readdir(path),
    readFile: (path) => source.readFile(path),
    readlink: (path) => source.readlink(path),
    ...(source.prefetch ? { prefetch: (paths: readonly string[]) => source.prefetch!(paths) } : {}),
  }
}

type Members = Record<PropertyKey, unknown>

/** Own properties of functions that are not the function's own API. */
const FUNCTION_BASICS = new Set<PropertyKey>(['length', 'name', 'prototype', 'arguments', 'caller'])

/** A function that calls `current()[key]` each time, with its properties (realpath.native) forwarded too. */
function forward(current: () => Members, key: PropertyKey, sample: Function): Function {
  const wrapper = function (...args: unknown[]): unknown {
    const target = current()
    return Reflect.apply(target[key] as Function, target, args)
  }
  Object.defineProperty(wrapper, 'name', { value: sample.name })
  for (const prop of Reflect.ownKeys(sample)) {
    if (FUNCTION_BASICS.has(prop)) continue
    const value = (sample as unknown as Members)[prop]
    ;(wrapper as unknown as Members)[prop] = typeof value === 'function' ? forward(() => current()[key] as Members, prop, value) : value
  }
  return wrapper
}

/**
 * A stable mirror of an fs object. Classes (Stats, Dirent, Dir) and constants are the same in every
 * workspace, so they are shared as they are; functions forward; `promises` is mirrored the same way.
 */
function stable(current: () => Members, sample: Members): Members {
  const out: Members = {}
  for (const key of Reflect.ownKeys(sample)) {
    const value = sample[key]
    const isClass = typeof key === 'string' && /^[A-Z]/.test(key)
    if (typeof value === 'function' && !isClass) out[key] = forward(current, key, value)
    else if (key === 'promises') out[key] = stable(() => current().promises as Members, value as Members)
    else out[key] = value
  }
  return out
}

export async function createFixture(lower: LowerInput, options: FixtureOptions = {}): Promise<Fixture> {
  const source = toLowerSource(lower) // once: every reset reuses it
  // Watching too, as node:fs has it: code under test may watch (a test helper carries no bundle budget).
  const open = () => Workspace.open({ watch: watching, ...options, lower: keptOpen(source) })
  let current = await open()
  let closed = false
  const fs = stable(() => current.fs as unknown as Members, current.fs as unknown as Members) as unknown as NodeFs
  const own = {
    fs,
    modules: { fs: { ...fs, default: fs }, promises: { ...fs.promises, default: fs.promises } },
    get workspace() {
      return current
    },
    async reset() {
      if (closed) throw new Error('rewindfs/testing: this fixture is closed')
      const previous = current
      current = await open()
      await previous.close()
    },
    async close() {
      if (closed) return
      closed = true
      await current.close()
      await source.close?.()
    },
  }
  return new Proxy(own, {
    get(target, key) {
      if (key in target) return Reflect.get(target, key)
      const value = Reflect.get(current, key, current)
      return typeof value === 'function' ? (value as Function).bind(current) : value
    },
    has: (target, key) => key in target || key in current,
  }) as unknown as Fixture
}
