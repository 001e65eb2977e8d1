/**
 * Result budgets: every tool answer stays within a number of characters of JSON, so a model can
 * afford it on any project (a rollback preview of a whole library, a restore of 2 000 paths). Tools
 * fit their long parts with these helpers and say how to ask for more (offset, path); `fitJson` is
 * the one guard every result passes through last, whatever the tool.
 */
import { DEFAULT_IMAGE_BYTES, DEFAULT_IMAGE_SIDE, isImageResult } from './images.js'
import type { ToolError, ToolResult } from './result.js'
import type { AgentTool } from './tool.js'

/** Characters of JSON a result may take by default: a few KB, about 2 000 tokens. */
export const DEFAULT_RESULT_CHARS = 8000
/** Characters of file content read_file returns in one call by default (the content was asked for). */
export const DEFAULT_READ_CHARS = 100_000
/** Below this a budget cannot hold an error message with its hint. */
const MIN_CHARS = 1000

export interface BudgetOptions {
  /** Characters of JSON any result may take (default 8000). */
  chars?: number
  /** Characters of file content read_file returns in one call (default 100 000). */
  readChars?: number
  /**
   * Bytes of an image read_file returns at most (default 3.75 MiB: its base64 is the 5 MiB the
   * Anthropic API takes for one image); a larger one is refused. The base64 is not counted in `chars`.
   */
  imageBytes?: number
  /**
   * Pixels a side of an image read_file returns at most (default 8000, past which the Anthropic
   * API refuses the image and the request with it; 2000 where a request carries more than 20
   * images); a larger one is refused.
   */
  imageSide?: number
}

export interface Budget {
  readonly chars: number
  readonly readChars: number
  readonly imageBytes: number
  readonly imageSide: number
}

export function resolveBudget(options: BudgetOptions = {}): Budget {
  const check = (value: number | undefined, name: string, fallback: number) => {
    if (value === undefined) return fallback
    if (!Number.isSafeInteger(value) || value < MIN_CHARS) throw new RangeError(`rewindfs/tools: budget.${name} must be a whole number of characters, at least ${MIN_CHARS}; got ${String(value)}`)
    return value
  }
  const chars = check(options.chars, 'chars', DEFAULT_RESULT_CHARS)
  const { imageBytes = DEFAULT_IMAGE_BYTES, imageSide = DEFAULT_IMAGE_SIDE } = options
  if (!Number.isSafeInteger(imageBytes) || imageBytes < 1) throw new RangeError(`rewindfs/tools: budget.imageBytes must be a whole number of bytes, at least 1; got ${String(imageBytes)}`)
  if (!Number.isSafeInteger(imageSide) || imageSide < 1) throw new RangeError(`rewindfs/tools: budget.imageSide must be a whole number of pixels, at least 1; got ${String(imageSide)}`)
  return { chars, readChars: check(options.readChars, 'readChars', Math.max(DEFAULT_READ_CHARS, chars)), imageBytes, imageSide }
}

/** Characters of a value's JSON, as the model receives it (compact). */
export function jsonSize(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0
}

/** A running allowance: parts of a result are taken into it in order until it is spent. */
export class Room {
  constructor(public left: number) {}

  /** Takes the value's size from the room if it fits; otherwise takes nothing. */
  take(value: unknown): boolean {
    const size = jsonSize(value) + 1 // the separator before it
    if (size > this.left) return false
    this.left -= size
    return true
  }
}

/** The first items of a list whose JSON fits in `chars`, and how many were left out. */
export function fitList<T>(items: readonly T[], chars: number): { shown: T[]; omitted: number } {
  const room = new Room(chars)
  let count = 0
  while (count < items.length && room.take(items[count])) count++
  return { shown: items.slice(0, count), omitted: items.length - count }
}

/** Text cut to about `chars` characters, ending with a marker that says how much was cut and how to see it. */
export function cutText(text: string, chars: number, more = ''): { text: string; omitted: number } {
  if (text.length <= chars) return { text, omitted: 0 }
  const keep = Math.max(0, chars - 80 - more.length)
  const omitted = text.length - keep
  return { text: `${text.slice(0, keep)}\n… [${omitted} more characters cut${more ? `; ${more}` : ''}]`, omitted }
}

/** Text cut in the middle (the start and the end of a command's output are what matter). */
export function cutMiddle(text: string, chars: number): { text: string; omitted: number } {
  if (text.length <= chars) return { text, omitted: 0 }
  const room = Math.max(0, chars - 60)
  const head = Math.floor(room * 0.4)
  const tail = room - head
  const omitted = text.length - head - tail
  return { text: `${text.slice(0, head)}\n… [${omitted} characters cut] …\n${text.slice(text.length - tail)}`, omitted }
}

/**
 * Groups of paths (added, modified, deleted…) as the first entries that fit in `chars`, with the
 * count of each group that was left out when any was.
 */
export function fitPathGroups<K extends string>(groups: Record<K, readonly string[]>, chars: number): Record<K, string[]> & { not_listed?: Record<K, number> } {
  const room = new Room(chars)
  const out = {} as Record<K, string[]>
  const omitted = {} as Record<K, number>
  let cut = false
  for (const key of Object.keys(groups) as K[]) {
    const paths = groups[key]
    let count = 0
    while (count < paths.length && room.take(paths[count])) count++
    out[key] = paths.slice(0, count)
    omitted[key] = paths.length - count
    if (count < paths.length) cut = true
  }
  return cut ? { ...out, not_listed: omitted } : out
}

/**
 * The last guard: any JSON value made to fit in `chars`. Under the limit it is returned as it is;
 * over it, the biggest parts give way first (water-filling: small members stay whole, the big ones
 * share what is left), long strings are cut with a marker, arrays keep their first entries and end
 * with a note of how many were left out. Deterministic, one pass per level.
 */
export function fitJson(value: unknown, chars: number): unknown {
  const size = jsonSize(value)
  if (size <= chars) return value
  const note = `this answer was cut to the result budget of ${chars} characters; ask for less (a path, an offset, a smaller limit)`
  const object = value !== null && typeof value === 'object' && !Array.isArray(value)
  // Members that cannot shrink (numbers, keys) can overrun their shares: aim lower until it fits.
  for (let limit = chars - (object ? jsonSize(note) + 30 : 0); limit > 0; limit = Math.floor(limit * 0.7)) {
    const fitted = object ? { truncated_to_budget: note, ...(shrink({ ...(value as object) }, limit) as object) } : shrink(value, limit)
    if (jsonSize(fitted) <= chars) return fitted
  }
  return { truncated_to_budget: note, result_chars: size }
}

function shrink(value: unknown, limit: number): unknown {
  const size = jsonSize(value)
  if (size <= limit) return value
  if (typeof value === 'string') return cutString(value, limit)
  if (Array.isArray(value)) {
    const out: unknown[] = []
    let used = 2
    const reserve = 60 // the note of what was left out
    for (const item of value) {
      const itemSize = jsonSize(item) + 1
      if (used + itemSize > limit - reserve) {
        // The first entry is kept in part rather than not at all.
        if (out.length === 0 && limit - reserve - used > 80) {
          out.push(shrink(item, limit - reserve - used))
          used = limit
        }
        break
      }
      out.push(item)
      used += itemSize
    }
    if (out.length < value.length) out.push(`… ${value.length - out.length} more not shown`)
    return out
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
    const sizes = new Map(entries.map(([key, member]) => [key, jsonSize(member)]))
    const keys = jsonSize(Object.fromEntries(entries.map(([key]) => [key, 0]))) - entries.length
    let left = limit - keys
    const order = [...entries].sort((a, b) => sizes.get(a[0])! - sizes.get(b[0])!)
    const fitted = new Map<string, unknown>()
    order.forEach(([key, member], index) => {
      const share = Math.floor(left / (order.length - index))
      const memberSize = sizes.get(key)!
      const kept = memberSize <= share ? member : shrink(member, share)
      fitted.set(key, kept)
      left -= memberSize <= share ? memberSize : jsonSize(kept)
    })
    const out = entries.map(([key]): [string, unknown] => [key, fitted.get(key)])
    // Too many members to shrink into their shares: the last ones give way, and a note says how many.
    let kept = out.length
    while (kept > 0 && jsonSize(Object.fromEntries(out.slice(0, kept))) > limit - (kept < out.length ? 40 : 0)) kept--
    if (kept === out.length) return Object.fromEntries(out)
    return Object.fromEntries([...out.slice(0, kept), ['…', `${out.length - kept} more not shown`]])
  }
  return value
}

/** A string whose JSON (escapes included) fits in `limit`, ending with a marker when cut. */
function cutString(value: string, limit: number): string {
  let keep = Math.max(0, limit - 40)
  for (;;) {
    const cut = `${value.slice(0, keep)}… [${value.length - keep} characters cut]`
    const excess = jsonSize(cut) - limit
    if (excess <= 0 || keep === 0) return cut
    keep = Math.max(0, keep - excess)
  }
}

/**
 * The tool with every answer, errors included, passed through fitJson (the one guard for all tools).
 * An image's base64 (read_file) is left whole and uncounted: cut, it would be no image at all, and
 * budget.imageBytes governs its size; the rest of that answer is fitted as any other.
 */
export function withinBudget(tool: AgentTool, chars: number): AgentTool {
  return {
    ...tool,
    async run(input: unknown): Promise<ToolResult> {
      const outcome = await tool.run(input)
      if (!outcome.isError && isImageResult(outcome.result)) {
        const { data, ...rest } = outcome.result
        return jsonSize(rest) <= chars ? outcome : { isError: false, result: { ...(fitJson(rest, chars) as object), data } }
      }
      if (!outcome.isError) return jsonSize(outcome.result) <= chars ? outcome : { isError: false, result: fitJson(outcome.result, chars) }
      return jsonSize(outcome.error) <= chars ? outcome : { isError: true, error: fitJson(outcome.error, chars) as ToolError }
    },
  }
}
