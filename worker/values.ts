/**
 * How errors and fs results cross the channel. Structured cloning keeps plain data only, so Node's
 * error fields, Stats and Dirent prototypes are carried explicitly and rebuilt on the other side;
 * file contents travel as transferred ArrayBuffers that belong to nobody else.
 */
import { FsError } from '../src/errors.js'
import { BigIntStats, Dirent, Stats } from '../src/fs/stats.js'
import { ValidationError } from '../src/engine/validator.js'
import { asCallerBytes } from '../src/bytes.js'
import type { ErrorRecord } from './protocol.js'

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
export function ownBytes(bytes: Uint8Array, transfers: Transferable[]): Uint8Array {
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
  if (Array.isArray(value) && value[0] instanceof Dirent) return { [TAG]: 'dirents', list: value.map((dirent: Dirent) => ({ ...dirent })) }
  return value
}

export function decodeValue(value: unknown): unknown {
  if (value instanceof Uint8Array) return asCallerBytes(value)
  if (typeof value !== 'object' || value === null || !(TAG in value)) return value
  const tagged = value as { [TAG]: string; bigint?: boolean; fields?: object; list?: object[] }
  if (tagged[TAG] === 'stats') return Object.assign(Object.create(tagged.bigint ? BigIntStats.prototype : Stats.prototype), tagged.fields)
  if (tagged[TAG] === 'dirents') return (tagged.list ?? []).map((fields) => Object.assign(Object.create(Dirent.prototype), fields))
  return value
}
