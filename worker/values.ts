/**
 * How errors and fs results cross the channel. Structured cloning keeps plain data only, so Node's
 * error fields, Stats and Dirent prototypes are carried explicitly and rebuilt on the other side;
 * file contents travel as transferred ArrayBuffers that belong to nobody else.
 */
import { FsError } from '../src/errors.js'
import { BigIntStats, Dirent, Stats, direntFields, direntOf } from '../src/fs/stats.js'
import { ValidationError } from '../src/engine/validator.js'
import { BisectError } from '../src/engine/bisect-error.js'
import { asCallerBytes } from '../src/bytes.js'
import { fsMembers } from './constants.js'
import type { ErrorRecord, FsCall } from './protocol.js'

const TAG = '__rewindfs'
const nodeFields = ['code', 'errno', 'syscall', 'path', 'dest'] as const

export function errorRecord(error: unknown): ErrorRecord {
  if (!(error instanceof Error)) return { name: 'Error', message: `rewindfs worker: a non-Error was thrown: ${String(error)}` }
  const record: ErrorRecord = { name: error.name, message: error.message }
  const fields = error as unknown as Record<string, unknown>
  for (const key of nodeFields) if (fields[key] !== undefined) (record as unknown as Record<string, unknown>)[key] = fields[key]
  for (const key of Object.keys(error)) {
    if ((nodeFields as readonly string[]).includes(key) || key === 'name' || key === 'message' || key === 'stack') continue
    try {
      // Only what survives cloning (failures, paths…); a function or handle stays behind.
      const value = structuredClone(fields[key])
      ;(record.extra ??= {})[key] = value
    } catch {
      continue
    }
  }
  return record
}

const prototypes: Record<string, object> = {
  TypeError: TypeError.prototype,
  RangeError: RangeError.prototype,
  ValidationError: ValidationError.prototype,
  BisectError: BisectError.prototype,
}

/** An Error on this side with the fields, the name and (for fs errors) the class of the original. */
export function toError(record: ErrorRecord): Error {
  const error = new Error(record.message)
  const isFs = typeof record.errno === 'number' && typeof record.syscall === 'string'
  Object.setPrototypeOf(error, isFs ? FsError.prototype : (prototypes[record.name] ?? Error.prototype))
  // Node's own order (errno, code, syscall, path, dest), so inspection reads the same.
  for (const key of ['errno', 'code', 'syscall', 'path', 'dest'] as const) if (record[key] !== undefined) Object.assign(error, { [key]: record[key] })
  if (record.extra) Object.assign(error, record.extra)
  if (error.name !== record.name) Object.defineProperty(error, 'name', { value: record.name, enumerable: false, writable: true, configurable: true })
  return error
}

/** Bytes that can be transferred without detaching anything someone else holds: the view's own whole buffer, or one copy. */
function ownBytes(bytes: Uint8Array, transfers: Transferable[]): Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
  // Node's Buffer pool backs results under 4 KiB: those get one more (small) copy.
  const own = whole ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes)
  transfers.push(own.buffer)
  return own
}

/** An fs result ready to post: the caller already owns `value` (fs results are copies). */
export function encodeValue(value: unknown, transfers: Transferable[]): unknown {
  if (value instanceof Uint8Array) return ownBytes(value, transfers)
  if (value instanceof Stats || value instanceof BigIntStats) return { [TAG]: 'stats', bigint: value instanceof BigIntStats, fields: { ...value } }
  if (Array.isArray(value) && value[0] instanceof Dirent) return { [TAG]: 'dirents', list: value.map((dirent: Dirent) => direntFields(dirent)) }
  return value
}

/** A cursor handed out by the worker (a zip export's chunks): the caller pulls it by id. */
export function cursorRecord(id: number): unknown {
  return { [TAG]: 'cursor', id }
}

export function cursorId(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null || (value as Record<string, unknown>)[TAG] !== 'cursor') return undefined
  return (value as { id: number }).id
}

export function decodeValue(value: unknown): unknown {
  if (value instanceof Uint8Array) return asCallerBytes(value)
  // readdir with { encoding: 'buffer' }: names as the host's Buffer too.
  if (Array.isArray(value) && value[0] instanceof Uint8Array) return value.map((name: Uint8Array) => asCallerBytes(name))
  if (typeof value !== 'object' || value === null || !(TAG in value)) return value
  const tagged = value as { [TAG]: string; bigint?: boolean; fields?: object; list?: object[] }
  if (tagged[TAG] === 'stats') return Object.assign(Object.create(tagged.bigint ? BigIntStats.prototype : Stats.prototype), tagged.fields)
  if (tagged[TAG] === 'dirents') return (tagged.list ?? []).map((fields) => direntOf(fields as Parameters<typeof direntOf>[0]))
  return value
}

/**
 * A batch's answer in columns: contents packed into one transferred buffer and numeric Stats into
 * one Float64Array, since cloning thousands of small objects and buffers costs more than the
 * operations themselves. Bytes and stats are laid out in result order.
 */
export interface BatchWire {
  /** Per result: VALUE (in `values`), BYTES (`values` holds the length), STATS, or ERROR (`values` holds the record). */
  kinds: Uint8Array
  values: unknown[]
  stats: Float64Array
  bytes: ArrayBuffer
}

const VALUE = 0
const BYTES = 1
const STATS = 2
const ERROR = 3
const statKeys = ['dev', 'mode', 'nlink', 'uid', 'gid', 'rdev', 'blksize', 'ino', 'size', 'blocks', 'atimeMs', 'mtimeMs', 'ctimeMs', 'birthtimeMs'] as const

/**
 * Builds a BatchWire as results arrive, so a batch allocates no result object per operation and
 * walks its results once; the contents buffer grows by doubling.
 */
export class ResultPacker {
  private readonly kinds: Uint8Array
  private readonly values: unknown[]
  private stats: Float64Array<ArrayBuffer>
  private bytes: Uint8Array<ArrayBuffer>
  private count = 0
  private statAt = 0
  private at = 0

  constructor(size: number) {
    this.kinds = new Uint8Array(size)
    this.values = new Array(size)
    this.stats = new Float64Array(64 * statKeys.length)
    this.bytes = new Uint8Array(64 * 1024)
  }

  value(value: unknown, transfers: Transferable[]): void {
    const i = this.count++
    if (value instanceof Uint8Array) {
      this.kinds[i] = BYTES
      this.values[i] = value.byteLength
      if (this.at + value.byteLength > this.bytes.byteLength) this.bytes = grown(this.bytes, this.at + value.byteLength)
      this.bytes.set(value, this.at)
      this.at += value.byteLength
    } else if (value instanceof Stats) {
      this.kinds[i] = STATS
      if (this.statAt + statKeys.length > this.stats.length) this.stats = grown(this.stats, this.statAt + statKeys.length)
      const stats = this.stats
      let at = this.statAt
      stats[at++] = value.dev
      stats[at++] = value.mode
      stats[at++] = value.nlink
      stats[at++] = value.uid
      stats[at++] = value.gid
      stats[at++] = value.rdev
      stats[at++] = value.blksize
      stats[at++] = value.ino
      stats[at++] = value.size
      stats[at++] = value.blocks
      stats[at++] = value.atimeMs
      stats[at++] = value.mtimeMs
      stats[at++] = value.ctimeMs
      stats[at++] = value.birthtimeMs
      this.statAt = at
    } else {
      this.kinds[i] = VALUE
      this.values[i] = encodeValue(value, transfers)
    }
  }

  error(error: ErrorRecord): void {
    const i = this.count++
    this.kinds[i] = ERROR
    this.values[i] = error
  }

  /** The wire; its buffers are listed on `transfers` (they belong to the receiver from here on). */
  finish(transfers: Transferable[]): BatchWire {
    transfers.push(this.bytes.buffer, this.stats.buffer)
    return { kinds: this.kinds, values: this.values, stats: this.stats, bytes: this.bytes.buffer }
  }
}

function grown<T extends Uint8Array<ArrayBuffer> | Float64Array<ArrayBuffer>>(array: T, needed: number): T {
  let length = array.length * 2
  while (length < needed) length *= 2
  const next = new (array.constructor as new (length: number) => T)(length)
  next.set(array)
  return next
}

/** Results as the caller sees them: contents are views into the one transferred buffer, each its own range. */
export function unpackResults(wire: BatchWire): ({ ok: true; value: unknown } | { ok: false; error: Error })[] {
  let at = 0
  let statAt = 0
  return Array.from(wire.kinds, (kind, i) => {
    const value = wire.values[i]
    switch (kind) {
      case ERROR:
        return { ok: false, error: toError(value as ErrorRecord) }
      case BYTES: {
        const view = new Uint8Array(wire.bytes, at, value as number)
        at += value as number
        return { ok: true, value: asCallerBytes(view) }
      }
      case STATS: {
        const fields = {} as Record<(typeof statKeys)[number], number>
        for (const key of statKeys) fields[key] = wire.stats[statAt++]
        // Through the constructor: it makes the Dates, own properties as Node's.
        return { ok: true, value: new Stats(fields) }
      }
      default:
        return { ok: true, value: decodeValue(value) }
    }
  })
}

/** A batch's request in columns too: operation codes, argument counts, one flat argument list. */
export interface BatchRequestWire {
  /** Index into fsMembers per operation; INVALID_OP for anything else (refused by the worker). */
  ops: Uint8Array
  counts: Uint8Array
  args: unknown[]
  /** Contents of every write, packed; arguments name their range. */
  bytes: ArrayBuffer
}

const INVALID_OP = 255

export function packBatch(ops: readonly { op: string; args: readonly unknown[] }[]): BatchRequestWire {
  let total = 0
  for (const { args } of ops) if (Array.isArray(args)) for (const arg of args) if (ArrayBuffer.isView(arg)) total += arg.byteLength
  const bytes = new Uint8Array(total)
  const codes = new Uint8Array(ops.length)
  const counts = new Uint8Array(ops.length)
  const flat: unknown[] = []
  let at = 0
  for (let i = 0; i < ops.length; i++) {
    const { op, args } = ops[i] ?? {}
    const code = (fsMembers as readonly unknown[]).indexOf(op)
    // Anything that is not { op, args: [...] } goes as an invalid code, for the worker to refuse.
    if (code < 0 || !Array.isArray(args) || args.length >= INVALID_OP) {
      codes[i] = INVALID_OP
      continue
    }
    codes[i] = code
    counts[i] = args.length
    for (const arg of args) {
      if (!ArrayBuffer.isView(arg)) {
        flat.push(arg)
        continue
      }
      flat.push({ [TAG]: 'bytes', at, length: arg.byteLength })
      bytes.set(new Uint8Array(arg.buffer, arg.byteOffset, arg.byteLength), at)
      at += arg.byteLength
    }
  }
  return { ops: codes, counts, args: flat, bytes: bytes.buffer }
}

/** The calls a checked BatchRequestWire describes; undefined when a content range lies outside the packed buffer. */
export function unpackBatch(wire: BatchRequestWire): FsCall[] | undefined {
  const calls: FsCall[] = new Array(wire.ops.length)
  let next = 0
  for (let i = 0; i < wire.ops.length; i++) {
    const args = wire.args.slice(next, (next += wire.counts[i]))
    for (let k = 0; k < args.length; k++) {
      const arg = args[k] as { [TAG]?: unknown; at?: unknown; length?: unknown } | null
      if (typeof arg !== 'object' || arg === null || arg[TAG] !== 'bytes') continue
      const { at, length } = arg
      if (!Number.isInteger(at) || !Number.isInteger(length) || (at as number) < 0 || (length as number) < 0 || (at as number) + (length as number) > wire.bytes.byteLength) return undefined
      args[k] = new Uint8Array(wire.bytes, at as number, length as number)
    }
    calls[i] = { op: fsMembers[wire.ops[i]], args }
  }
  return calls
}
