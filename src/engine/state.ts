/**
 * The agent's session state (transcript, todo list, plan) as a journaled key-value store. Values
 * live in a persistent map, so a checkpoint captures them in O(1) alongside the file tree, and a
 * restore brings files and state back together.
 */
import { type EditToken, type MapRoot, emptyMap, mapDelete, mapEntries, mapGet, mapSet } from '../layer/persistent-map.js'

/** JSON-compatible values only: state must survive serialisation to a durable store. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

export interface StateRecorder {
  state(key: string, before: JsonValue | undefined, after: JsonValue | undefined): void
}

export class SessionState {
  root: MapRoot<JsonValue> = emptyMap()
  private token: EditToken = {}
  recorder: StateRecorder | undefined

  /** Freezes the current map so it can be kept by a checkpoint. O(1). */
  freeze(): MapRoot<JsonValue> {
    this.token = {}
    return this.root
  }

  setRoot(root: MapRoot<JsonValue>): void {
    this.token = {}
    this.root = root
  }

  async get(key: string): Promise<JsonValue | undefined> {
    return this.read(key)
  }

  read(key: string): JsonValue | undefined {
    const value = mapGet(this.root, validateKey(key))
    return value === undefined ? undefined : structuredClone(value)
  }

  /** Checked before the public setters change anything (a frozen workspace refuses, as fs writes do). */
  guard: ((syscall: string) => void) | undefined

  async set(key: string, value: JsonValue): Promise<void> {
    this.guard?.('state.set')
    this.write(validateKey(key), toJson(value, key))
  }

  async delete(key: string): Promise<boolean> {
    this.guard?.('state.delete')
    const before = mapGet(this.root, validateKey(key))
    if (before === undefined) return false
    this.write(key, undefined)
    return true
  }

  async entries(): Promise<[string, JsonValue][]> {
    return [...mapEntries(this.root)].map(([k, v]) => [k, structuredClone(v)] as [string, JsonValue]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  }

  /** Sets or removes a key; recorded unless it changes nothing. */
  write(key: string, value: JsonValue | undefined): void {
    const before = mapGet(this.root, key)
    if (before === value || (before !== undefined && value !== undefined && JSON.stringify(before) === JSON.stringify(value))) return
    this.root = value === undefined ? mapDelete(this.root, key, this.token) : mapSet(this.root, key, value, this.token)
    this.recorder?.state(key, before, value)
  }
}

function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key === '') throw new TypeError('rewindfs: a state key must be a non-empty string')
  return key
}

/** A frozen deep copy of a JSON value; anything JSON cannot hold is a TypeError naming the key. */
function toJson(value: unknown, key: string): JsonValue {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    throw new TypeError(`rewindfs: state '${key}' is not JSON-serialisable: ${(error as Error).message}`)
  }
  if (text === undefined) throw new TypeError(`rewindfs: state '${key}' must be a JSON value (got ${typeof value})`)
  return deepFreeze(JSON.parse(text) as JsonValue)
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}
