/**
 * The engine's side of the channel: open workspaces by handle, answer one validated request at a
 * time with an Outcome (never a throw, so Node's error fields survive), and run fs calls by their
 * synchronous forms, which are the fastest path through the engine.
 */
import * as Comlink from 'comlink'
import type * as z from 'zod'
import { Workspace, type NodeFs, type WorkspaceOptions } from '../src/workspace.js'
import { MemoryStore, type Store } from '../src/engine/store.js'
import type { ApprovalRequest } from '../src/engine/transaction.js'
import type { ValidateResult, Validator } from '../src/engine/validator.js'
import type { JsonValue } from '../src/engine/state.js'
import type { LowerSource } from '../src/lower/source.js'
import { isNotLoaded } from '../src/lower/source.js'
import type { LowerInput } from '../src/lower/index.js'
import {
  type FsCall,
  type LowerDescriptor,
  type Member,
  type OpenOptions,
  type Opened,
  type Outcome,
  type StatusRecord,
  type StoreDescriptor,
  badCall,
  fsCall,
  fsMembers,
  memberArguments,
  parse,
  request as requestSchema,
} from './protocol.js'
import { ResultPacker, encodeValue, errorRecord, toError, unpackBatch } from './values.js'

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

/** What a call's callback can carry: a transaction body (with its approval hook) or a compensation. */
export interface CallCallbacks {
  body?(fs: StagedServer): Promise<Outcome>
  approve?(request: ApprovalRequest): Promise<boolean>
  compensate?(): Promise<unknown>
}

/** The staged fs of a running transaction, served to the caller's body. */
export interface StagedServer {
  request(call: unknown): Promise<Outcome>
}

/** Adapter modules the lower and store descriptors name. */
const adapterPaths = { 'node-fs': '../adapters/node-fs/index.js', indexeddb: '../adapters/indexeddb/index.js' } as const
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

async function adapterFunction(adapter: AdapterName, name: string): Promise<(arg: string) => unknown> {
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
  const fn = module[name]
  if (typeof fn !== 'function') throw Object.assign(new Error(`rewindfs worker: the ${adapter} adapter has no ${name}()`), { code: 'ERR_REWINDFS_NO_ADAPTER' })
  return fn as (arg: string) => unknown
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
      return (await (await adapterFunction('indexeddb', 'indexedDbTree'))(lower.name)) as LowerSource
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
    case 'indexeddb':
      return (await (await adapterFunction('indexeddb', 'indexedDbStore'))(store.name)) as Store
  }
}

function status(ws: Workspace): StatusRecord {
  return {
    ...(ws.status.degraded !== undefined ? { degraded: ws.status.degraded } : {}),
    warnings: [...ws.status.warnings],
    ...(ws.frozen !== undefined ? { frozen: ws.frozen } : {}),
  }
}

type FsFunctions = Record<string, (...args: unknown[]) => unknown>

/** Each member's sync form by name, made once rather than per call. */
const syncName = Object.fromEntries(fsMembers.map((op) => [op, `${op}Sync`])) as Record<FsCall['op'], string>

/** Runs one fs call by its sync form; `undefined` when it needs contents an asynchronous lower has not loaded. */
function tryFs(fs: FsFunctions, call: FsCall): Outcome | undefined {
  try {
    return { ok: true, value: fs[syncName[call.op]](...call.args) }
  } catch (error) {
    return isNotLoaded(error) ? undefined : { ok: false, error: errorRecord(error) }
  }
}

/** One fs call; contents of an asynchronous lower load on demand (a call can name several: cp), then it runs again. */
async function runFs(fs: FsFunctions, lower: LowerSource, call: FsCall): Promise<Outcome> {
  for (let loads = 0; ; loads++) {
    try {
      return { ok: true, value: fs[syncName[call.op]](...call.args) }
    } catch (error) {
      if (!isNotLoaded(error) || !lower.prefetch || loads >= 64) return { ok: false, error: errorRecord(error) }
      await lower.prefetch([error.path])
    }
  }
}

/** A single call's answer: its value ready to post (contents as their own transferred buffer). */
function encoded(outcome: Outcome, transfers: Transferable[]): Outcome {
  return outcome.ok ? { ok: true, value: encodeValue(outcome.value, transfers) } : outcome
}

export class WorkspaceHost {
  private readonly workspaces = new Map<number, Workspace>()
  /** The caller's hooks, by the handle of the workspace opened with them (its forks share them). */
  private readonly hooks = new Map<number, Hooks>()
  private nextHandle = 1

  /** Answers one request; never throws. Transferable buffers of the answer are pushed on `transfers`. */
  async request(message: unknown, callbacks: CallCallbacks | undefined, hooks: Hooks | undefined, transfers: Transferable[]): Promise<Outcome> {
    const parsed = parse(requestSchema, message)
    if (!parsed.ok) return parsed
    const req = parsed.value
    try {
      if (req.t === 'open') return { ok: true, value: await this.open(req.options, hooks) }
      const ws = this.workspaces.get(req.handle)
      if (!ws) return { ok: false, error: badCall(`no open workspace has handle ${req.handle} (closed already?)`) }
      switch (req.t) {
        case 'fs':
          return encoded(await runFs(ws.fs as unknown as FsFunctions, ws.lower, req), transfers)
        case 'batch': {
          const fs = ws.fs as unknown as FsFunctions
          const calls = unpackBatch(req)
          if (!calls) return { ok: false, error: badCall('batch: contents lie outside the packed buffer') }
          const packer = new ResultPacker(calls.length)
          for (const call of calls) {
            // Synchronously where possible: a batch is one task, not one task per operation.
            const outcome = tryFs(fs, call) ?? (await runFs(fs, ws.lower, call))
            if (outcome.ok) packer.value(outcome.value, transfers)
            else packer.error(outcome.error)
          }
          return { ok: true, value: packer.finish(transfers) }
        }
        case 'close':
          await ws.close()
          this.workspaces.delete(req.handle)
          release(this.hooks.get(req.handle))
          this.hooks.delete(req.handle)
          return { ok: true, value: undefined }
        case 'call': {
          const args = parse(memberArguments[req.member] as z.ZodType<unknown[]>, req.args, `the arguments of ${req.member}()`)
          if (!args.ok) return args
          const result = await this.call(ws, req.member, args.value, callbacks)
          return { ok: true, value: { result, status: status(ws), resume: ws.resume } }
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
    const workspaceOptions: WorkspaceOptions = {
      lower: await resolveLower(options.lower),
      store: await resolveStore(options.store),
      ...(options.session !== undefined ? { session: options.session } : {}),
      ...(options.umask !== undefined ? { umask: options.umask } : {}),
      ...(options.retention ? { retention: options.retention } : {}),
      ...(options.autoCheckpoint !== undefined ? { autoCheckpoint: options.autoCheckpoint } : {}),
      ...(options.compactEvery !== undefined ? { compactEvery: options.compactEvery } : {}),
      validators: [...named, ...remote],
      ...(options.hooks?.approve && hooks?.approve ? { approve: (request: ApprovalRequest) => hooks.approve!(request) } : {}),
      ...(options.hooks?.alert && hooks?.alert ? { onAlert: (alert) => void hooks.alert!(alert).catch(() => undefined) } : {}),
    }
    const opened = this.register(await Workspace.open(workspaceOptions))
    if (hooks) this.hooks.set(opened.handle, hooks)
    return opened
  }

  private register(ws: Workspace): Opened {
    const handle = this.nextHandle++
    this.workspaces.set(handle, ws)
    return { handle, session: ws.session, umask: ws.umask, status: status(ws), resume: ws.resume }
  }

  private async call(ws: Workspace, member: Member, args: unknown[], callbacks: CallCallbacks | undefined): Promise<unknown> {
    switch (member) {
      case 'transaction':
        return this.transaction(ws, args[0] as { label?: string; group?: string; riskThreshold?: number; approve?: boolean } | undefined, callbacks)
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
      default: {
        // The remaining members take their validated arguments as they are.
        const method = (ws as unknown as Record<string, (...a: unknown[]) => unknown>)[member]
        return await method.apply(ws, args)
      }
    }
  }

  private async transaction(
    ws: Workspace,
    options: { label?: string; group?: string; riskThreshold?: number; approve?: boolean } | undefined,
    callbacks: CallCallbacks | undefined,
  ): Promise<unknown> {
    if (!callbacks?.body) throw badCallError('transaction: the body callback is missing')
    const { approve, ...rest } = options ?? {}
    if (approve && !callbacks.approve) throw badCallError('transaction: approve is set but no approval callback was passed')
    const body = async (staged: NodeFs) => {
      let running = true
      const server: StagedServer = Comlink.proxy({
        request: async (call: unknown) => {
          // The staging fs lives as long as the body: a call kept past it would write nowhere.
          if (!running) return { ok: false, error: badCall('this transaction has ended: its staging fs is gone') }
          const parsed = parse(fsCall, call)
          if (!parsed.ok) return parsed
          const transfers: Transferable[] = []
          const outcome = encoded(await runFs(staged as unknown as FsFunctions, ws.lower, parsed.value), transfers)
          return Comlink.transfer(outcome, transfers)
        },
      })
      const outcome = await callbacks.body!(server).finally(() => {
        running = false
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

function badCallError(detail: string): Error {
  const record = badCall(detail)
  return Object.assign(new TypeError(record.message), { code: record.code })
}
