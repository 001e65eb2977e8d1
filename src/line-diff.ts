/**
 * Line diffs, for the patches changes carry (diff.ts) and the reverse deltas of old file versions
 * (blob/delta.ts): Myers' O(ND) algorithm over lines, bounded by the number of edits so a result
 * never depends on machine load, and the unified format `diff -u` and git print. Written here
 * because the core needs only this much of a diff library, and a browser bundle carries all of it.
 */

/** A run of lines: in both texts, only in the new one (added) or only in the old one (removed). */
export interface LinePart {
  /** The lines joined, each with its line break (the last one may have none). */
  readonly value: string
  readonly lines: readonly string[]
  readonly added?: boolean
  readonly removed?: boolean
}

/** A link of an edit path: `count` lines of one kind (0 same, 1 added, -1 removed) after `previous`. */
interface Link {
  readonly kind: -1 | 0 | 1
  readonly count: number
  readonly previous: Link | undefined
}

interface Path {
  /** Lines of the old text consumed so far (the new text's are `old + diagonal`). */
  old: number
  last: Link | undefined
}

/** A text's lines, each keeping its line break ('\n' or '\r\n'); no empty last line. */
export function splitLines(text: string): string[] {
  const lines: string[] = []
  for (let start = 0; start < text.length; ) {
    const end = text.indexOf('\n', start) + 1 || text.length
    lines.push(text.slice(start, end))
    start = end
  }
  return lines
}

const step = (last: Link | undefined, kind: Link['kind'], count: number): Link =>
  last?.kind === kind ? { kind, count: last.count + count, previous: last.previous } : { kind, count, previous: last }

/**
 * The shortest edit script from `before` to `after`, as runs of lines with removals before
 * additions in each changed stretch; undefined when it takes more than `maxEdits` lines added or
 * removed (too different to show as a diff).
 */
export function diffLines(before: string, after: string, maxEdits = Number.POSITIVE_INFINITY): LinePart[] | undefined {
  const a = splitLines(before)
  const b = splitLines(after)
  // Follows the diagonal (equal lines) as far as it goes; true once both texts are consumed.
  const slide = (path: Path, diagonal: number): boolean => {
    let old = path.old
    while (old < a.length && old + diagonal < b.length && a[old] === b[old + diagonal]) old++
    if (old > path.old) path.last = step(path.last, 0, old - path.old)
    path.old = old
    return old >= a.length && old + diagonal >= b.length
  }
  const first: Path = { old: 0, last: undefined }
  if (slide(first, 0)) return parts(a, b, first.last)
  // best.get(k): the furthest path on diagonal k (new line - old line) with the current number of edits.
  let best = new Map<number, Path>([[0, first]])
  const limit = Math.min(maxEdits, a.length + b.length)
  for (let edits = 1; edits <= limit; edits++) {
    const next = new Map<number, Path>()
    for (let k = -edits; k <= edits; k += 2) {
      const down = best.get(k - 1) // add a line of the new text
      const right = best.get(k + 1) // remove a line of the old text
      const canAdd = down !== undefined && down.old + k - 1 < b.length
      const canRemove = right !== undefined && right.old < a.length
      if (!canAdd && !canRemove) continue
      const path: Path =
        canAdd && (!canRemove || down.old >= right!.old + 1)
          ? { old: down.old, last: step(down.last, 1, 1) }
          : { old: right!.old + 1, last: step(right!.last, -1, 1) }
      if (slide(path, k)) return parts(a, b, path.last)
      next.set(k, path)
    }
    best = next
  }
  return undefined
}

/** The runs of an edit path, in order, each changed stretch with its removals first. */
function parts(a: readonly string[], b: readonly string[], last: Link | undefined): LinePart[] {
  const links: Link[] = []
  for (let link = last; link; link = link.previous) links.push(link)
  links.reverse()
  const out: LinePart[] = []
  let old = 0
  let next = 0
  for (let i = 0; i < links.length; ) {
    if (links[i].kind === 0) {
      const lines = a.slice(old, (old += links[i].count))
      next += links[i++].count
      out.push({ value: lines.join(''), lines })
      continue
    }
    let removed = 0
    let added = 0
    for (; i < links.length && links[i].kind !== 0; i++) {
      if (links[i].kind < 0) removed += links[i].count
      else added += links[i].count
    }
    if (removed > 0) {
      const lines = a.slice(old, (old += removed))
      out.push({ value: lines.join(''), lines, removed: true })
    }
    if (added > 0) {
      const lines = b.slice(next, (next += added))
      out.push({ value: lines.join(''), lines, added: true })
    }
  }
  return out
}

/**
 * A unified diff of one file (`Index:` and `---`/`+++` headers, `@@` hunks with `context` lines
 * around each change, `\ No newline at end of file` markers), or undefined past `maxEdits`.
 */
export function unifiedPatch(path: string, before: string, after: string, context: number, maxEdits?: number): string | undefined {
  const diff = diffLines(before, after, maxEdits)
  if (!diff) return undefined
  const out = [`Index: ${path}`, '='.repeat(67), `--- ${path}`, `+++ ${path}`]
  let hunk: string[] = []
  let oldStart = 0
  let newStart = 0
  let oldLine = 1
  let newLine = 1
  const close = (tail: number) => {
    const oldCount = oldLine - oldStart + tail
    const newCount = newLine - newStart + tail
    // In the unified format a hunk that covers no lines of a side starts one line earlier.
    out.push(`@@ -${oldCount === 0 ? oldStart - 1 : oldStart},${oldCount} +${newCount === 0 ? newStart - 1 : newStart},${newCount} @@`)
    for (const line of hunk) {
      if (line.endsWith('\n')) out.push(line.slice(0, -1))
      else out.push(line, '\\ No newline at end of file')
    }
    hunk = []
    oldStart = 0
  }
  diff.forEach((part, i) => {
    if (part.added || part.removed) {
      if (oldStart === 0) {
        const lead = i > 0 && context > 0 ? diff[i - 1].lines.slice(-context) : []
        oldStart = oldLine - lead.length
        newStart = newLine - lead.length
        hunk.push(...lead.map((line) => ` ${line}`))
      }
      hunk.push(...part.lines.map((line) => `${part.added ? '+' : '-'}${line}`))
      if (part.added) newLine += part.lines.length
      else oldLine += part.lines.length
      return
    }
    if (oldStart !== 0) {
      // Close enough to the next change: the lines between join one hunk.
      if (part.lines.length <= context * 2 && i < diff.length - 1) hunk.push(...part.lines.map((line) => ` ${line}`))
      else {
        const tail = Math.min(part.lines.length, context)
        hunk.push(...part.lines.slice(0, tail).map((line) => ` ${line}`))
        close(tail)
      }
    }
    oldLine += part.lines.length
    newLine += part.lines.length
  })
  if (oldStart !== 0) close(0)
  return `${out.join('\n')}\n`
}
