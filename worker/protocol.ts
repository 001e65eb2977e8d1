/**
 * The messages between a page (or main thread) and the engine in a worker. Both sides are
 * untrusted to each other, so every request is checked with zod before anything runs: a malformed
 * call is answered with ERR_REWINDFS_BAD_CALL and the worker keeps serving. The open options are
 * strict: a misspelt option (cachebytes, preload) is refused by name rather than ignored.
 */
import * as z from 'zod'
import type { StoreDamage } from '../src/engine/durability.js'
import type { WorkspaceEvent } from '../src/engine/events.js'
import { BAD_CALL, type EVENTS_MESSAGE, type SERVING_MESSAGE, eventTypes, fileMembers, fsMembers } from './constants.js'

export { BAD_CALL, EVENTS_MESSAGE, SERVING_MESSAGE, WORKER_CLOSED, WORKER_CRASHED, eventTypes, fileMembers, fsMembers } from './constants.js'

const bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, 'expected a Uint8Array')
const json: z.ZodType<unknown> = z.json()

const lower = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('fixture'), files: z.record(z.string(), z.union([z.string(), bytes])) }),
  z.strictObject({ kind: z.literal('file-system-tree'), tree: z.record(z.string(), z.unknown()) }),
  z.strictObject({ kind: z.literal('directory'), path: z.string().min(1) }),
  /** `preloadBytes`: every file's contents load on open when they total at most this (default 64 MiB; Infinity: all). */
  z.strictObject({ kind: z.literal('indexeddb-tree'), name: z.string().min(1), preloadBytes: z.union([z.number().min(0), z.literal(Infinity)]).optional() }),
])

const store = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('memory') }),
  z.strictObject({ kind: z.literal('directory'), path: z.string().min(1) }),
  /** Shared by the tabs of an origin: see `readOnly` in indexedDbStore and opfsStore. */
  z.strictObject({ kind: z.literal('indexeddb'), name: z.string().min(1), readOnly: z.boolean().optional() }),
  z.strictObject({ kind: z.literal('opfs'), name: z.string().min(1), readOnly: z.boolean().optional(), segmentBytes: z.int().positive().optional() }),
])

/** A validator that runs on the caller's side (its `validate` is called back through the hooks). */
const remoteValidator = z.strictObject({ name: z.string().min(1), match: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]), cost: z.number().optional() })

export const openOptions = z.strictObject({
  lower: lower.optional(),
  store: store.optional(),
  session: z.string().min(1).optional(),
  umask: z.int().min(0).max(0o777).optional(),
  retention: z
    .strictObject({
      operations: z.int().positive().optional(),
      checkpoints: z.union([z.int().min(0), z.strictObject({ last: z.int().min(0).optional(), hourly: z.int().min(0).optional(), daily: z.int().min(0).optional() })]).optional(),
    })
    .optional(),
  autoCheckpoint: z.union([z.literal(false), z.strictObject({ highRisk: z.boolean().optional(), interval: z.number().min(0).optional() })]).optional(),
  compactEvery: z.int().positive().optional(),
  /** Bytes of durable contents the engine keeps in memory over a store that reads synchronously (Infinity: all it reads). */
  cacheBytes: z.union([z.number().min(0), z.literal(Infinity)]).optional(),
  /** Names registered in the worker's entry module with registerValidator. */
  validators: z.array(z.string().min(1)).optional(),
  remoteValidators: z.array(remoteValidator).optional(),
  /** Which caller-side hooks exist (the hooks object itself travels as a comlink proxy). */
  hooks: z.strictObject({ approve: z.boolean().optional(), alert: z.boolean().optional() }).optional(),
})
export type OpenOptions = z.infer<typeof openOptions>
export type LowerDescriptor = z.infer<typeof lower>
export type StoreDescriptor = z.infer<typeof store>

/** A place a worker's workspace can flush into, named rather than passed (the worker opens it). */
const flushTarget = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('directory'), path: z.string().min(1) }),
  z.object({ kind: z.literal('indexeddb-tree'), name: z.string().min(1) }),
])
export type FlushTargetDescriptor = z.infer<typeof flushTarget>

const name = z.string()
const optionalObject = <T extends z.ZodRawShape>(shape: T) => z.object(shape).optional()
const globs = z.array(z.string()).optional()
const target = z.union([z.string(), z.object({ time: z.number() }), z.object({ operation: z.string() })])
const operationType = z.string()

/** Arguments of each engine member, as a tuple. */
export const memberArguments = {
  chdir: z.tuple([name]),
  cwd: z.tuple([]),
  checkpoint: z.tuple([optionalObject({ name: z.string().optional(), kind: z.enum(['manual', 'auto', 'turn', 'compact']).optional(), description: z.string().optional() })]),
  checkpoints: z.tuple([]),
  checkpointInfo: z.tuple([name]),
  renameCheckpoint: z.tuple([name, name]),
  deleteCheckpoint: z.tuple([name]),
  restore: z.tuple([target, optionalObject({ include: globs, exclude: globs, dryRun: z.boolean().optional(), force: z.boolean().optional() })]),
  undoRestore: z.tuple([]),
  diff: z.tuple([name, name.optional()]),
  changes: z.tuple([]),
  reset: z.tuple([]),
  undo: z.tuple([
    optionalObject({
      steps: z.int().optional(),
      types: z.array(operationType).optional(),
      paths: z.array(z.string()).optional(),
      group: z.string().optional(),
      cascade: z.boolean().optional(),
      dryRun: z.boolean().optional(),
    }),
  ]),
  redo: z.tuple([]),
  history: z.tuple([
    optionalObject({
      path: z.string().optional(),
      type: operationType.optional(),
      group: z.string().optional(),
      since: z.number().optional(),
      until: z.number().optional(),
      session: z.string().optional(),
      limit: z.int().min(0).optional(),
    }),
  ]),
  operation: z.tuple([name]),
  /** The body travels as the callback; `approve: true` means the caller passed an approval hook. */
  transaction: z.tuple([optionalObject({ label: z.string().optional(), group: z.string().optional(), type: z.string().optional(), riskThreshold: z.number().optional(), approve: z.boolean().optional() })]),
  beginTurn: z.tuple([z.int().min(0)]),
  setResume: z.tuple([z.object({ phase: z.enum(['plan', 'execute', 'verify', 'stopped']), turn: z.int(), data: json.optional() })]),
  /** `compensate: 'callback'`: the compensation is the caller's function, passed as the callback. */
  recordSideEffect: z.tuple([
    z.object({
      description: z.string().min(1),
      compensate: z.union([z.literal('callback'), z.object({ name: z.string().min(1), args: json.optional() })]),
      tier: z.number().optional(),
      group: z.string().optional(),
    }),
  ]),
  purge: z.tuple([name]),
  freeze: z.tuple([name]),
  unfreeze: z.tuple([]),
  collectGarbage: z.tuple([]),
  fork: z.tuple([name.optional()]),
  sync: z.tuple([]),
  compact: z.tuple([]),
  verify: z.tuple([]),
  repair: z.tuple([optionalObject({ salvage: z.boolean().optional(), dryRun: z.boolean().optional() })]),
  prefetch: z.tuple([z.array(z.string()).max(1_000_000)]),
  /** `progress` / `verify`: the caller passed those hooks (they travel as callbacks). */
  flush: z.tuple([
    z.union([flushTarget, z.array(flushTarget).min(1)]).optional(),
    optionalObject({ force: z.boolean().optional(), dryRun: z.boolean().optional(), canary: z.int().min(0).optional(), progress: z.boolean().optional(), verify: z.boolean().optional() }),
  ]),
  exec: z.tuple([
    z.string(),
    optionalObject({
      cwd: z.string().optional(),
      env: z.record(z.string(), z.string().optional()).optional(),
      timeout: z.number().min(0).optional(),
      tmpdir: z.string().optional(),
      mode: z.enum(['overlay', 'copy']).optional(),
      label: z.string().optional(),
      discard: z.boolean().optional(),
      sandbox: z.object({ network: z.boolean().optional(), host: z.enum(['read-write', 'read-only']).optional(), writable: z.array(z.string()).max(1000).optional() }).strict().optional(),
    }),
  ]),
  /** `probe` / `judge`: the caller passed onProbe / isGood (they travel as callbacks). */
  bisect: z.tuple([
    z.string(),
    optionalObject({
      from: z.union([z.string(), z.object({ operation: z.string() })]).optional(),
      to: z.union([z.string(), z.object({ operation: z.string() })]).optional(),
      granularity: z.enum(['operation', 'checkpoint']).optional(),
      concurrency: z.int().min(1).max(64).optional(),
      confirm: z.boolean().optional(),
      cwd: z.string().optional(),
      env: z.record(z.string(), z.string().optional()).optional(),
      timeout: z.number().min(0).optional(),
      tmpdir: z.string().optional(),
      mode: z.enum(['overlay', 'copy']).optional(),
      sandbox: z.object({ network: z.boolean().optional(), host: z.enum(['read-write', 'read-only']).optional(), writable: z.array(z.string()).max(1000).optional() }).strict().optional(),
      probe: z.boolean().optional(),
      judge: z.boolean().optional(),
    }),
  ]),
  /** A FileSystemTree comes back whole; a zip comes back as a cursor of chunks. */
  export: z.tuple([z.object({ format: z.enum(['file-system-tree', 'zip']), path: z.string().optional(), level: z.int().min(0).max(9).optional() })]),
  counters: z.tuple([]),
  storage: z.tuple([]),
  stateGet: z.tuple([name]),
  stateSet: z.tuple([name, json]),
  stateDelete: z.tuple([name]),
  stateEntries: z.tuple([]),
} as const
export type Member = keyof typeof memberArguments
const memberNames = Object.keys(memberArguments) as [Member, ...Member[]]

const handle = z.int().positive()
const id = z.int().positive()
/** Arguments are checked by the fs itself, with Node's own errors (ERR_INVALID_ARG_TYPE…). */
const fsArguments = z.array(z.unknown()).max(8)

/** The fs messages: path calls, FileHandle calls on a descriptor, and Dir reads. A transaction's staged fs takes the same. */
const fsShapes = {
  fs: { t: z.literal('fs'), op: z.enum(fsMembers), args: fsArguments },
  /** `open` makes a descriptor (its number is the answer); every other op runs on `fd`. */
  file: { t: z.literal('file'), op: z.enum(['open', ...fileMembers]), fd: z.int().optional(), args: fsArguments },
  /** `open` answers a Dir id; `read` answers up to `count` entries (none: the end); `close` drops it. */
  dir: { t: z.literal('dir'), op: z.enum(['open', 'read', 'close']), id: id.optional(), args: fsArguments.optional(), count: z.int().min(1).max(65_536).optional() },
} as const

function checkFsMessage(message: { t: string; op: string; fd?: number; id?: number }, context: z.RefinementCtx): void {
  if (message.t === 'file' && message.op !== 'open' && message.fd === undefined) context.addIssue({ code: 'custom', path: ['fd'], message: `file ${message.op} needs the descriptor` })
  if (message.t === 'dir' && message.op !== 'open' && message.id === undefined) context.addIssue({ code: 'custom', path: ['id'], message: `dir ${message.op} needs the Dir id` })
}

export const fsMessage = z.discriminatedUnion('t', [z.object(fsShapes.fs), z.object(fsShapes.file), z.object(fsShapes.dir)]).superRefine(checkFsMessage)
export type FsMessage = z.infer<typeof fsMessage>
/** A path call as a batch carries it. */
export type FsCall = Omit<Extract<FsMessage, { t: 'fs' }>, 't'>

export const MAX_BATCH = 100_000

export const request = z
  .discriminatedUnion('t', [
    /** Answered as soon as serve() listens: the page waits for it (or the serving message) before opening. */
    z.object({ t: z.literal('hello') }),
    z.object({ t: z.literal('open'), options: openOptions }),
    z.object({ t: z.literal('call'), handle, member: z.enum(memberNames), args: z.array(z.unknown()).max(4) }),
    z.object({ ...fsShapes.fs, handle }),
    z.object({ ...fsShapes.file, handle }),
    z.object({ ...fsShapes.dir, handle }),
    /** Pulls the next value of a cursor (a zip export's chunks), or ends it. */
    z.object({ t: z.literal('cursor'), handle, op: z.enum(['next', 'return']), id }),
    z
      .object({
        t: z.literal('batch'),
        handle,
        // Columns (see BatchRequestWire): cloning thousands of small objects costs more than running them.
        ops: z.instanceof(Uint8Array).refine((ops) => ops.length <= MAX_BATCH, `at most ${MAX_BATCH} operations`),
        counts: z.instanceof(Uint8Array),
        args: z.array(z.unknown()),
        bytes: z.instanceof(ArrayBuffer),
      })
      .superRefine((batch, context) => {
        const invalid = batch.ops.findIndex((code) => code >= fsMembers.length)
        if (invalid >= 0) context.addIssue({ code: 'custom', path: ['ops', invalid], message: `operation ${invalid} is not { op, args: [...] } naming an fs operation the worker serves` })
        if (batch.counts.length !== batch.ops.length) context.addIssue({ code: 'custom', path: ['counts'], message: 'one argument count per operation' })
        else if (batch.counts.reduce((sum, n) => sum + n, 0) !== batch.args.length) context.addIssue({ code: 'custom', path: ['args'], message: 'the argument counts do not add up to the arguments' })
      }),
    /** Starts a watch the page numbered `id` on `path` (its events come in event messages), or stops it. */
    z.object({ t: z.literal('watch'), handle, op: z.enum(['start', 'stop']), id, path: z.string().optional(), recursive: z.boolean().optional() }),
    /** The ws.events types the page listens for now (none: it stopped listening). */
    z.object({ t: z.literal('events'), handle, types: z.array(z.enum(eventTypes)).max(eventTypes.length) }),
    z.object({ t: z.literal('close'), handle }),
  ])
  .superRefine((message, context) => {
    if (message.t === 'file' || message.t === 'dir') checkFsMessage(message, context)
    if (message.t === 'watch' && message.op === 'start' && message.path === undefined) context.addIssue({ code: 'custom', path: ['path'], message: 'watch start needs the path' })
  })
export type Request = z.infer<typeof request>

/**
 * What the worker tells the page without being asked, one message per delivery of its change feed
 * (every operation that ended in one task): a watch's events as flat (eventType, filename) pairs,
 * and ws.events events, in the order they happened; and a follower's new status when it reloaded
 * the writer's commits or became the writer (no call of the page's carried it).
 */
export type EventItem = { handle: number; watch: number; events: string[] } | { handle: number; event: WorkspaceEvent } | { handle: number; status: StatusRecord }

export interface EventsMessage {
  kind: typeof EVENTS_MESSAGE
  items: EventItem[]
}

/** Posted once by serve() when it listens. */
export interface ServingMessage {
  kind: typeof SERVING_MESSAGE
}

/** An error as it crosses: Node's fields survive (comlink's own error transfer keeps only the message). */
export interface ErrorRecord {
  name: string
  message: string
  code?: string
  errno?: number
  syscall?: string
  path?: string
  dest?: string
  /** Other own fields that survive structured cloning (ValidationError.failures, ConflictError.paths…). */
  extra?: Record<string, unknown>
}

export type Outcome<T = unknown> = { ok: true; value: T } | { ok: false; error: ErrorRecord }

/** The status the client mirrors after every engine call. */
export interface StatusRecord {
  degraded?: string
  warnings: string[]
  frozen?: string
  /** The damage that opened the store read-only. */
  corrupt?: StoreDamage
  /**
   * Over a store the tabs of an origin share (IndexedDB, OPFS): whether this tab writes it or
   * follows the tab that does (frozen, reloading its commits, next in line to write).
   */
  tab?: 'writer' | 'follower'
}

export interface Opened {
  handle: number
  session: string
  umask: number
  status: StatusRecord
  resume?: unknown
}

export function badCall(error: z.ZodError | string): ErrorRecord {
  const detail = typeof error === 'string' ? error : z.prettifyError(error)
  return { name: 'TypeError', code: BAD_CALL, message: `rewindfs worker: malformed call: ${detail}` }
}

/** `what` names the part checked when it is not the whole message (issue paths are relative to it). */
export function parse<T>(schema: z.ZodType<T>, value: unknown, what?: string): { ok: true; value: T } | { ok: false; error: ErrorRecord } {
  const result = schema.safeParse(value)
  if (result.success) return { ok: true, value: result.data }
  return { ok: false, error: badCall(what === undefined ? result.error : `${what}: ${z.prettifyError(result.error)}`) }
}
