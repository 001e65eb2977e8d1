/**
 * The engine's side of the channel: open workspaces by handle, answer one validated request at a
 * time with an Outcome (never a throw, so Node's error fields survive), and run fs calls by their
 * synchronous forms, which are the fastest path through the engine.
 */
import * as Comlink from 'comlink'
import type * as z from 'zod'
import { Workspace, type NodeFs, type WorkspaceOptions } from '../src/workspace.js'
import { MemoryStore } from '../src/engine/memory-store.js'
import { FsError } from '../src/errors.js'
import type { RepairOptions } from '../src/engine/repair.js'
import type { Store } from '../src/engine/store.js'
import type { ApprovalRequest, TransactionType } from '../src/engine/transaction.js'
import type { ValidateResult, Validator } from '../src/engine/validator.js'
import type { JsonValue } from '../src/engine/state.js'
import type { WorkspaceEventType } from '../src/engine/events.js'
import type { LowerSource } from '../src/lower/source.js'
import { type LowerInput, toLowerSource } from '../src/lower/index.js'
import type { FlushTarget } from '../src/flush/target.js'
import type { FlushProgress } from '../src/flush/target.js'
import type { ExecResult, ExecRunner, ExecSession } from '../src/exec.js'
import type { BisectOptions, BisectProbe, BisectProgress } from '../src/engine/bisect.js'
import { type ExportOptions, exportView } from '../src/export.js'
import { watching } from '../src/watch.js'
import { EventRelay } from './event-relay.js'
import { Following, type Reopened } from './follow.js'
import { FsServer, type FsFunctions, runLoading, tryRun } from './fs-server.js'
import {
  type FlushTargetDescriptor,
  type LowerDescriptor,
  type Member,
  type OpenOptions,
  type EventsMessage,
  type Opened,
  type Outcome,
  type StatusRecord,
  type StoreDescriptor,
  badCall,
  fsMessage,
  memberArguments,
  parse,
  request as requestSchema,
} from './protocol.js'
import { ResultPacker, cursorRecord, encodeValue, errorRecord, toError, unpackBatch } from './values.js'

const validators = new Map<string, Validator>()

/** Names a validator for `validators: ['name']` in openWorkerWorkspace; call it in the worker's entry module. */
export function registerValidator(name: string, validator: Validator): void {
  if (typeof name !== 'string' || name === '' || typeof validator?.validate !== 'function') {
    throw new TypeError('rewindfs: registerValidator(name, validator) needs a non-empty name and a validator with validate()')
  }
  validators.set(name, validator)
}

/** Caller-side hooks, reached through a comlink proxy. */
export interface Hooks {
  approve?(request: ApprovalRequest): Promise<boolean>
  alert?(alert: unknown): Promise<void>
  validate?(name: string, content: Uint8Array, path: string): Promise<ValidateResult>
}

/** What a call's callback can carry: a transaction body (with its approval hook), a compensation, or a flush's hooks. */
export interface CallCallbacks {
  body?(fs: StagedServer): Promise<Outcome>
  approve?(request: ApprovalRequest): Promise<boolean>
  compensate?(): Promise<unknown>
  progress?(progress: FlushProgress & { target: string }): Promise<void>
  /** A canary flush's check, given the ids of the targets written so far. */
  verify?(targets: { id: string }[]): Promise<unknown>
  /** ws.bisect's onProbe and isGood. */
  probe?(probe: BisectProbe, progress: BisectProgress): Promise<void>
  judge?(result: ExecResult): Promise<boolean | 'skip'>
}

/** The staged fs of a running transaction, served to the caller's body. */
export interface StagedServer {
  request(call: unknown): Promise<Outcome>
}

/** Adapter modules the lower and store descriptors name. */
const adapterPaths = { 'node-fs': '../adapters/node-fs/index.js', indexeddb: '../adapters/indexeddb/index.js', opfs: '../adapters/opfs/index.js' } as const
export type AdapterName = keyof typeof adapterPaths
const adapters = new Map<AdapterName, Record<string, unknown>>()

/**
 * Makes an adapter available to descriptors: a bundled worker (a browser's) registers the ones it
 * ships; an unbundled one (Node) loads them on first use instead.
 */
export function registerAdapter(name: AdapterName, module: object): void {
  if (!(name in adapterPaths) || typeof module !== 'object' || module === null) throw new TypeError(`rewindfs: registerAdapter(name, module) takes one of ${Object.keys(adapterPaths).join(', ')} and its module`)
  adapters.set(name, module as Record<string, unknown>)
}

async function adapterModule(adapter: AdapterName): Promise<Record<string, unknown>> {
  let module = adapters.get(adapter)
  if (!module) {
    // A specifier in a variable: bundlers leave it alone, so a browser bundle never pulls node:fs in.
    const specifier: string = adapterPaths[adapter]
    try {
      module = (await import(/* @vite-ignore */ specifier)) as Record<string, unknown>
    } catch (error) {
      throw Object.assign(new Error(`rewindfs worker: the ${adapter} adapter is not registered in this worker and could not be loaded (${(error as Error).message})`), {
        code: 'ERR_REWINDFS_NO_ADAPTER',
      })
    }
    adapters.set(adapter, module)
  }
  return module
}

/**
 * ws.exec in the worker: the node-fs adapter's hostShell(), loaded on the first command, and the
 * search ws.bisect runs with it. A Node worker runs commands over any lower (overlay mode over a
 * directory); a browser worker has no such adapter to load, and the command fails saying so.
 */
const workerShell: ExecRunner = {
  open(host) {
    let session: Promise<ExecSession> | undefined
    const load = adapterModule('node-fs').catch((error: unknown) => {
      throw Object.assign(new Error(`rewindfs worker: ws.exec runs commands in a Node worker only (${(error as Error).message})`), { code: 'ENOSYS' })
    })
    const opened = () => (session ??= load.then((module) => (module.hostShell as () => ExecRunner)().open(host)))
    return {
      run: async (command, options) => (await opened()).run(command, options),
      close: async () => {
        if (session) await (await session).close()
      },
    }
  },
  // ws.bisect's search, loaded by the first bisect.
  bisector: { bisect: async (host, command, options) => (await import('../src/engine/bisect.js')).bisectEngine.bisect(host, command, options) },
}

async function adapterFunction(adapter: AdapterName, name: string): Promise<(arg: string, options?: object) => unknown> {
  const fn = (await adapterModule(adapter))[name]
  if (typeof fn !== 'function') throw Object.assign(new Error(`rewindfs worker: the ${adapter} adapter has no ${name}()`), { code: 'ERR_REWINDFS_NO_ADAPTER' })
  return fn as (arg: string, options?: object) => unknown
}

/** The options a descriptor sets, without its kind and name (undefined ones left out). */
function settings<T extends object>(descriptor: T, ...names: (keyof T)[]): object {
  return Object.fromEntries(names.flatMap((name) => (descriptor[name] === undefined ? [] : [[name, descriptor[name]]])))
}

async function resolveLower(lower: LowerDescriptor | undefined): Promise<LowerInput | undefined> {
  switch (lower?.kind) {
    case undefined:
      return undefined
    case 'fixture':
      return lower.files
    case 'file-system-tree':
      return lower.tree as LowerInput
    case 'directory':
      return (await (await adapterFunction('node-fs', 'directory'))(lower.path)) as LowerSource
    case 'indexeddb-tree':
      return (await (await adapterFunction('indexeddb', 'indexedDbTree'))(lower.name, settings(lower, 'preloadBytes'))) as LowerSource
  }
}

async function resolveStore(store: StoreDescriptor | undefined): Promise<Store | undefined> {
  switch (store?.kind) {
    case undefined:
      return undefined
    case 'memory':
      return new MemoryStore()
    case 'directory':
      return (await (await adapterFunction('node-fs', 'directoryStore'))(store.path)) as Store
    case 'indexeddb': {
      const opened = (await (await adapterFunction('indexeddb', 'indexedDbStore'))(store.name, settings(store, 'readOnly'))) as Store & { ready: Promise<void> }
      await opened.ready // the role (writer or follower) is settled before the workspace reads it
      return opened
    }
    case 'opfs': {
      const opened = (await (await adapterFunction('opfs', 'opfsStore'))(store.name, settings(store, 'readOnly', 'segmentBytes'))) as Store & { ready: Promise<void> }
      await opened.ready
      return opened
    }
  }
}

async function resolveFlushTarget(target: FlushTargetDescriptor): Promise<FlushTarget> {
  switch (target.kind) {
    case 'directory':
      return (await (await adapterFunction('node-fs', 'directory'))(target.path)) as FlushTarget
    case 'indexeddb-tree':
      return (await (await adapterFunction('indexeddb', 'indexedDbTree'))(target.name)) as FlushTarget
  }
}

function status(ws: Workspace, following?: Following): StatusRecord {
  return {
    ...(following ? { tab: following.store.readOnly ? 'follower' : 'writer' } : {}),
    ...(ws.status.degraded !== undefined ? { degraded: ws.status.degraded } : {}),
    warnings: [...ws.status.warnings],
    ...(ws.frozen !== undefined ? { frozen: ws.frozen } : {}),
    ...(ws.status.corrupt !== undefined ? { corrupt: ws.status.corrupt } : {}),
  }
}

/** A watch the page started: what it watches, and its stop. */
interface Watch {
  readonly path: string
  readonly recursive: boolean
  stop: () => void
}

/** An open workspace: its fs server, the cursors (zip exports) it has handed out, and what the page watches. */
interface Session {
  /** A follower's workspace is replaced on each reload (follow.ts). */
  ws: Workspace
  server: FsServer
  readonly cursors: Map<number, AsyncIterator<unknown>>
  /** The page's watches, by its id. */
  readonly watches: Map<number, Watch>
  /** The ws.events types the page listens for, and the stop of their relay. */
  eventTypes: readonly WorkspaceEventType[]
  events?: () => void
  /** Over a store other tabs share: follows the writer's commits and takes over writing (follow.ts). */
  following?: Following
  /** Stops pushing the status to the page when the store fails or comes back (storeWatch). */
  storeWatch: () => void
}

export class WorkspaceHost {
  private readonly workspaces = new Map<number, Session>()
  /** Workspaces opened while their tab followed another's writer (worker/follow.ts). */
  private readonly followerWorkspaces = new WeakSet<Workspace>()
  /** The caller's hooks, by the handle of the workspace opened with them (its forks share them). */
  private readonly hooks = new Map<number, Hooks>()
  private nextHandle = 1
  private nextCursor = 1
  private readonly relay: EventRelay

  /** `post` sends the worker's event messages on the channel the answers take. */
  constructor(post: (message: EventsMessage) => void) {
    this.relay = new EventRelay(post)
  }

  /** Posts the events collected so far (serve() calls it before each answer). */
  flushEvents(): void {
    this.relay.flush()
  }

  /** Answers one request; never throws. Transferable buffers of the answer are pushed on `transfers`. */
  async request(message: unknown, callbacks: CallCallbacks | undefined, hooks: Hooks | undefined, transfers: Transferable[]): Promise<Outcome> {
    const parsed = parse(requestSchema, message)
    if (!parsed.ok) return parsed
    const req = parsed.value
    try {
      if (req.t === 'hello') return { ok: true, value: 'serving' }
      if (req.t === 'open') return { ok: true, value: await this.open(req.options, hooks) }
      const session = this.workspaces.get(req.handle)
      if (!session) return { ok: false, error: badCall(`no open workspace has handle ${req.handle} (closed already?)`) }
      const { ws, server } = session
      switch (req.t) {
        case 'fs':
        case 'file':
        case 'dir':
          return await server.serve(req, transfers)
        case 'batch': {
          const calls = unpackBatch(req)
          if (!calls) return { ok: false, error: badCall('batch: contents lie outside the packed buffer') }
          const packer = new ResultPacker(calls.length)
          for (const call of calls) {
            const run = server.runPath(call)
            // Synchronously where possible: a batch is one task, not one task per operation.
            const outcome = tryRun(run) ?? (await runLoading(ws.lower, run))
            if (outcome.ok) packer.value(outcome.value, transfers)
            else packer.error(outcome.error)
          }
          return { ok: true, value: packer.finish(transfers) }
        }
        case 'cursor': {
          const cursor = session.cursors.get(req.id)
          if (!cursor) return { ok: false, error: badCall(`no open cursor has id ${req.id} (ended already?)`) }
          if (req.op === 'return') {
            session.cursors.delete(req.id)
            await cursor.return?.()
            return { ok: true, value: { done: true } }
          }
          const next = await cursor.next()
          if (next.done) session.cursors.delete(req.id)
          return { ok: true, value: next.done ? { done: true } : { done: false, value: encodeValue(next.value, transfers) } }
        }
        case 'watch': {
          if (req.op === 'stop') {
            session.watches.get(req.id)?.stop()
            session.watches.delete(req.id)
            return { ok: true, value: undefined }
          }
          if (session.watches.has(req.id)) return { ok: false, error: badCall(`watch ${req.id} is running already`) }
          const recursive = req.recursive === true
          session.watches.set(req.id, { path: req.path!, recursive, stop: this.relay.watch(req.handle, ws, req.id, req.path!, recursive) })
          return { ok: true, value: undefined }
        }
        case 'events': {
          const previous = session.events
          // The new listeners first: what the feed collected and has not delivered yet is kept.
          session.eventTypes = req.types
          session.events = req.types.length > 0 ? this.relay.events(req.handle, ws, req.types) : undefined
          previous?.()
          return { ok: true, value: undefined }
        }
        case 'close':
          await this.closeSession(session)
          this.workspaces.delete(req.handle)
          release(this.hooks.get(req.handle))
          this.hooks.delete(req.handle)
          return { ok: true, value: undefined }
        case 'call': {
          const args = parse(memberArguments[req.member] as z.ZodType<unknown[]>, req.args, `the arguments of ${req.member}()`)
          if (!args.ok) return args
          let result: unknown
          try {
            result = await this.call(session, req.member, args.value, callbacks)
          } catch (error) {
            // A failure can change the status (a store that failed degrades the workspace): the page hears it before the rejection.
            this.relay.status(req.handle, status(session.ws, session.following))
            throw error
          }
          return { ok: true, value: { result, status: status(ws, session.following), resume: ws.resume } }
        }
      }
    } catch (error) {
      return { ok: false, error: errorRecord(error) }
    }
  }

  private async open(options: OpenOptions, hooks: Hooks | undefined): Promise<Opened> {
    const named = (options.validators ?? []).map((name) => {
      const validator = validators.get(name)
      if (!validator) throw Object.assign(new TypeError(`rewindfs worker: no validator named '${name}' is registered in the worker (registerValidator)`), { code: 'ERR_REWINDFS_BAD_CALL' })
      return validator
    })
    const remote = (options.remoteValidators ?? []).map((v): Validator => {
      if (!hooks?.validate) throw Object.assign(new TypeError('rewindfs worker: remote validators need the hooks object'), { code: 'ERR_REWINDFS_BAD_CALL' })
      const validate = hooks.validate.bind(hooks)
      return { name: v.name, match: v.match, ...(v.cost !== undefined ? { cost: v.cost } : {}), validate: (content, path) => validate(v.name, content, path) }
    })
    const lower = await resolveLower(options.lower)
    const store = await resolveStore(options.store)
    const workspaceOptions: WorkspaceOptions = {
      lower,
      store,
      ...(options.session !== undefined ? { session: options.session } : {}),
      ...(options.umask !== undefined ? { umask: options.umask } : {}),
      ...(options.retention ? { retention: options.retention } : {}),
      ...(options.autoCheckpoint !== undefined ? { autoCheckpoint: options.autoCheckpoint } : {}),
      ...(options.compactEvery !== undefined ? { compactEvery: options.compactEvery } : {}),
      ...(options.cacheBytes !== undefined ? { cacheBytes: options.cacheBytes } : {}),
      validators: [...named, ...remote],
      exec: workerShell,
      watch: watching,
      ...(options.hooks?.approve && hooks?.approve ? { approve: (request: ApprovalRequest) => hooks.approve!(request) } : {}),
      ...(options.hooks?.alert && hooks?.alert ? { onAlert: (alert) => void hooks.alert!(alert).catch(() => undefined) } : {}),
    }
    if (store?.onChange) return this.openShared(store, toLowerSource(lower), workspaceOptions, hooks)
    const opened = this.register(await Workspace.open(workspaceOptions))
    if (hooks) this.hooks.set(opened.handle, hooks)
    return opened
  }

  /** A workspace over a store other tabs share: it follows the writer, or writes (follow.ts). */
  private async openShared(store: Store, lower: LowerSource, options: WorkspaceOptions, hooks: Hooks | undefined): Promise<Opened> {
    let handle = 0
    const following = new Following(
      store,
      lower,
      async (leasedStore, leasedLower) => {
        // Asked before opening: a promotion during the open leaves it marked, and the reload it makes replaces it.
        const follower = store.readOnly === true
        const ws = await Workspace.open({ ...options, store: leasedStore, lower: leasedLower })
        if (follower) this.followerWorkspaces.add(ws)
        return ws
      },
      () => this.workspaces.get(handle)?.ws,
      (reopened) => this.swap(handle, reopened),
      (error) => this.reloadFailed(handle, error),
    )
    let ws: Workspace
    try {
      ws = await following.first()
    } catch (error) {
      await following.stop()
      await following.release().catch(() => undefined)
      throw error
    }
    const opened = this.register(ws)
    handle = opened.handle
    this.workspaces.get(handle)!.following = following
    following.begin()
    if (hooks) this.hooks.set(handle, hooks)
    return { ...opened, status: status(ws, following) }
  }

  /**
   * Puts a follower's reopened workspace in its session's place: the page's watches and ws.events
   * listeners move to it (watchers are told the paths the reload changed), the old one closes
   * (its open descriptors with it), and the page gets the status and the event.
   */
  private async swap(handle: number, { ws, event }: Reopened): Promise<void> {
    const session = this.workspaces.get(handle)
    if (!session) return ws.close()
    const previous = session.ws
    const server = session.server
    session.ws = ws
    session.server = new FsServer(ws.fs as unknown as FsFunctions, ws.lower)
    session.storeWatch()
    session.storeWatch = this.storeWatch(handle, ws)
    const paths = event.type === 'reload' ? event.paths : []
    for (const [id, watch] of session.watches) {
      watch.stop()
      watch.stop = this.relay.watch(handle, ws, id, watch.path, watch.recursive)
      this.relay.reloaded(handle, id, watch, paths, previous, ws)
    }
    if (session.events) {
      const stop = session.events
      session.events = this.relay.events(handle, ws, session.eventTypes)
      stop()
    }
    for (const cursor of session.cursors.values()) await cursor.return?.().catch(() => undefined)
    session.cursors.clear()
    server.dispose()
    await previous.close().catch(() => undefined)
    this.relay.status(handle, status(ws, session.following))
    if (session.eventTypes.includes(event.type)) this.relay.emit(handle, event)
    this.relay.flush()
  }

  /** A follower's reload failed: it keeps the state it had, and says so in its status. */
  private reloadFailed(handle: number, error: unknown): void {
    const session = this.workspaces.get(handle)
    if (!session) return
    session.ws.status.warnings.push(`reloading the writer's commits failed: ${(error as Error)?.message ?? String(error)}; this tab shows the state it loaded before`)
    this.relay.status(handle, status(session.ws, session.following))
    this.relay.flush()
  }

  /** Waits until the follower's reloads in flight are done (tests). */
  async idle(handle: number): Promise<void> {
    await this.workspaces.get(handle)?.following?.idle()
  }

  private register(ws: Workspace): Opened {
    const handle = this.nextHandle++
    this.workspaces.set(handle, { ws, server: new FsServer(ws.fs as unknown as FsFunctions, ws.lower), cursors: new Map(), watches: new Map(), eventTypes: [], storeWatch: this.storeWatch(handle, ws) })
    return { handle, session: ws.session, umask: ws.umask, status: status(ws), resume: ws.resume }
  }

  /**
   * The page mirrors the status from each answer; a store that fails in a commit no call waits for,
   * or comes back by itself, changes it between calls: the page is told then (and gets the 'store'
   * event if it listens for it).
   */
  private storeWatch(handle: number, ws: Workspace): () => void {
    return ws.events.on('store', () => {
      const session = this.workspaces.get(handle)
      // Posted with the event (the relay flushes once the feed has told every listener): the page's status is current when its listeners hear it.
      if (session?.ws === ws) this.relay.status(handle, status(ws, session.following))
    })
  }

  private async closeSession(session: Session): Promise<void> {
    for (const cursor of session.cursors.values()) await cursor.return?.().catch(() => undefined)
    session.cursors.clear()
    for (const watch of session.watches.values()) watch.stop()
    session.watches.clear()
    session.events?.()
    session.events = undefined
    session.storeWatch()
    session.server.dispose()
    // Following: no reload starts any more; the workspace closes (its last commit made durable),
    // then the store and the lower source it leased.
    const following = session.following
    session.following = undefined
    await following?.stop()
    try {
      await session.ws.close()
    } finally {
      await following?.release()
    }
  }

  /** Hands out an async iterable as a cursor the caller pulls from. */
  private cursor(session: Session, iterable: AsyncIterable<unknown>): unknown {
    const id = this.nextCursor++
    session.cursors.set(id, iterable[Symbol.asyncIterator]())
    return cursorRecord(id)
  }

  private async call(session: Session, member: Member, args: unknown[], callbacks: CallCallbacks | undefined): Promise<unknown> {
    const { ws } = session
    switch (member) {
      case 'transaction':
        return this.transaction(ws, args[0] as { label?: string; group?: string; type?: TransactionType; riskThreshold?: number; approve?: boolean } | undefined, callbacks)
      case 'recordSideEffect': {
        const effect = args[0] as { description: string; compensate: 'callback' | { name: string; args?: JsonValue }; tier?: number; group?: string }
        if (effect.compensate === 'callback' && !callbacks?.compensate) throw badCallError('recordSideEffect: compensate is a callback but none was passed')
        const compensate = effect.compensate === 'callback' ? () => callbacks!.compensate!() : effect.compensate
        return ws.recordSideEffect({ ...effect, compensate })
      }
      case 'fork':
        return this.register(await ws.fork(args[0] as string | undefined))
      case 'stateGet':
        return ws.state.get(args[0] as string)
      case 'stateSet':
        return ws.state.set(args[0] as string, args[1] as JsonValue)
      case 'stateDelete':
        return ws.state.delete(args[0] as string)
      case 'stateEntries':
        return ws.state.entries()
      case 'repair':
        if (this.followerWorkspaces.has(ws) && (args[0] as RepairOptions | undefined)?.dryRun !== true) {
          throw new FsError('EROFS', member, undefined, undefined, `read-only file system: this tab follows the tab that writes the ${session.following!.store.kind} store; repair there, or ask for a dry run`)
        }
        return ws.repair(args[0] as RepairOptions | undefined)
      case 'unfreeze':
      case 'compact':
      case 'collectGarbage':
        // A follower's workspace is frozen because another tab writes the store, and the calls that
        // write past the freeze would write its state, which may be behind the store's: lifting the
        // freeze, a compaction's snapshot, a collection of blobs newer commits need. So until it is
        // reopened for writing, even once this tab was promoted (the store writable again).
        if (this.followerWorkspaces.has(ws)) {
          throw new FsError('EROFS', member, undefined, undefined, `read-only file system: this tab follows the tab that writes the ${session.following!.store.kind} store; it writes once that tab goes away`)
        }
        if (member === 'unfreeze') return ws.unfreeze()
        return member === 'compact' ? ws.compact() : ws.collectGarbage()
      case 'counters':
        return ws.counters
      case 'storage':
        return ws.storage
      case 'export': {
        const result = await exportView(ws, args[0] as ExportOptions)
        return Symbol.asyncIterator in result ? this.cursor(session, result as AsyncIterable<unknown>) : result
      }
      case 'flush':
        return this.flush(ws, args[0] as FlushTargetDescriptor | FlushTargetDescriptor[] | undefined, args[1] as FlushCallOptions | undefined, callbacks)
      case 'exec':
        return ws.exec(args[0] as string, args[1] as Parameters<Workspace['exec']>[1])
      case 'bisect':
        return this.bisect(ws, args[0] as string, args[1] as (BisectOptions & { probe?: boolean; judge?: boolean }) | undefined, callbacks)
      default: {
        // The remaining members take their validated arguments as they are.
        const method = (ws as unknown as Record<string, (...a: unknown[]) => unknown>)[member]
        return await method.apply(ws, args)
      }
    }
  }

  private async flush(ws: Workspace, target: FlushTargetDescriptor | FlushTargetDescriptor[] | undefined, options: FlushCallOptions = {}, callbacks: CallCallbacks | undefined): Promise<unknown> {
    const { progress, verify, ...rest } = options
    if (progress && !callbacks?.progress) throw badCallError('flush: progress is set but no progress callback was passed')
    if (verify && !callbacks?.verify) throw badCallError('flush: verify is set but no verify callback was passed')
    const targets = target === undefined ? undefined : Array.isArray(target) ? await Promise.all(target.map(resolveFlushTarget)) : await resolveFlushTarget(target)
    try {
      return await ws.flush(targets, {
        ...rest,
        ...(progress ? { onProgress: (p: FlushProgress & { target: string }) => void callbacks!.progress!(p).catch(() => undefined) } : {}),
        ...(verify ? { verify: (written: readonly FlushTarget[]) => callbacks!.verify!(written.map((t) => ({ id: t.id }))) } : {}),
      })
    } finally {
      release(callbacks)
    }
  }

  private async bisect(ws: Workspace, command: string, options: BisectOptions & { probe?: boolean; judge?: boolean } = {}, callbacks: CallCallbacks | undefined): Promise<unknown> {
    const { probe, judge, ...rest } = options
    if (probe && !callbacks?.probe) throw badCallError('bisect: probe is set but no onProbe callback was passed')
    if (judge && !callbacks?.judge) throw badCallError('bisect: judge is set but no isGood callback was passed')
    try {
      return await ws.bisect(command, {
        ...rest,
        ...(probe ? { onProbe: (p: BisectProbe, progress: BisectProgress) => void callbacks!.probe!(p, progress).catch(() => undefined) } : {}),
        ...(judge ? { isGood: (result: ExecResult) => callbacks!.judge!(result) } : {}),
      })
    } finally {
      release(callbacks)
    }
  }

  private async transaction(
    ws: Workspace,
    options: { label?: string; group?: string; type?: TransactionType; riskThreshold?: number; approve?: boolean } | undefined,
    callbacks: CallCallbacks | undefined,
  ): Promise<unknown> {
    if (!callbacks?.body) throw badCallError('transaction: the body callback is missing')
    const { approve, ...rest } = options ?? {}
    if (approve && !callbacks.approve) throw badCallError('transaction: approve is set but no approval callback was passed')
    const body = async (staged: NodeFs) => {
      let running = true
      const fs = new FsServer(staged as unknown as FsFunctions, ws.lower)
      const server: StagedServer = Comlink.proxy({
        request: async (call: unknown) => {
          // The staging fs lives as long as the body: a call kept past it would write nowhere.
          if (!running) return { ok: false, error: badCall('this transaction has ended: its staging fs is gone') }
          const parsed = parse(fsMessage, call)
          if (!parsed.ok) return parsed
          const transfers: Transferable[] = []
          return Comlink.transfer(await fs.serve(parsed.value, transfers), transfers)
        },
      })
      const outcome = await callbacks.body!(server).finally(() => {
        running = false
        fs.dispose()
      })
      if (!outcome.ok) throw toError(outcome.error)
      return outcome.value
    }
    try {
      return await ws.transaction(body, { ...rest, ...(approve ? { approve: (request: ApprovalRequest) => callbacks.approve!(request) } : {}) })
    } finally {
      release(callbacks)
    }
  }
}

/** Closes a comlink proxy's port now rather than whenever it is collected (a side effect's compensation is kept: it runs later). */
function release(remote: object | undefined): void {
  ;(remote as { [Comlink.releaseProxy]?: () => void } | undefined)?.[Comlink.releaseProxy]?.()
}

interface FlushCallOptions {
  force?: boolean
  dryRun?: boolean
  canary?: number
  progress?: boolean
  verify?: boolean
}

function badCallError(detail: string): Error {
  const record = badCall(detail)
  return Object.assign(new TypeError(record.message), { code: record.code })
}
