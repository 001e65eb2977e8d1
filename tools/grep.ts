/**
 * Lines of a file that match a pattern, as grep finds them: a line is what lies between newlines, a
 * file with a NUL byte in its first 8 KiB is binary and skipped, and a match lies within one line. A
 * literal, case-sensitive pattern is searched as bytes without decoding the file (Buffer.indexOf,
 * native). Anything else is a regular expression (a literal escaped into one) run in time linear in
 * the text over the decoded text (linear-regex.ts), only on the lines that hold what every match
 * holds.
 */
import { concatBytes, decode } from '../src/bytes.js'
import { Alphabet, Automaton, COMMON, Parser, type Prefilter, inOrder, prefilter } from './linear-regex.js'

export { UnsupportedPattern, grepCounters } from './linear-regex.js'

/**
 * Bytes of file content the matcher went over (scanned as bytes, or decoded to be scanned), so a
 * test bounds what a search read of a file without a clock: `firstMatch` stops near the first match.
 */
export const scanCounters = { bytes: 0 }

/** grep's and ripgrep's rule: a NUL byte in the first 8 KiB makes a file binary. */
const BINARY_PROBE = 8192
/** Characters of a line shown at most; a longer line (minified code) is shown around the match. */
const LINE_CHARS = 400
/** Bytes decoded at first by `firstMatch`, doubling after: a match near the start costs about this much, not the file. */
const FIRST_CHUNK = 4096

export interface LineMatch {
  /** 1-based. */
  readonly line_number: number
  readonly line: string
  readonly before?: string[]
  readonly after?: string[]
}

export interface PatternOptions {
  readonly pattern: string
  readonly regex: boolean
  readonly caseSensitive: boolean
}

export function isBinary(bytes: Uint8Array): boolean {
  const probe = bytes.byteLength > BINARY_PROBE ? bytes.subarray(0, BINARY_PROBE) : bytes
  return probe.indexOf(0) !== -1
}

/**
 * A compiled pattern. `search(bytes, visit)` calls `visit` for each matching line, in order, until
 * it returns false. The constructor throws a SyntaxError for an invalid regular expression and an
 * UnsupportedPattern for one this engine will not run; `search` throws an UnsupportedPattern when the
 * automaton would cost more than WORK_LIMIT steps to build (see Automaton).
 */
export class LineMatcher {
  private readonly needle: BytesFinder | undefined
  private readonly automaton: Automaton | undefined
  /** What every match contains, found by RegExp: lines without it are never scanned (see prefilter). */
  private readonly prefilter: Prefilter | undefined

  constructor(options: PatternOptions) {
    const { pattern, regex, caseSensitive } = options
    if (!regex && caseSensitive && typeof Buffer === 'function') {
      this.needle = new BytesFinder(Buffer.from(pattern, 'utf8'))
      return
    }
    const source = regex ? pattern : pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const flags = caseSensitive ? '' : 'i'
    let unicode = true
    try {
      new RegExp(source, flags + 'u')
    } catch {
      new RegExp(source, flags) // not valid as Unicode (e.g. '\-'): as written, or the SyntaxError
      unicode = false
    }
    const parser = new Parser(source, unicode)
    const tree = parser.parse()
    this.automaton = new Automaton(tree, new Alphabet(parser.sets, flags, unicode))
    this.prefilter = prefilter(tree, parser.sets, flags + (unicode ? 'gmu' : 'gm'))
  }

  /** Matching lines with `context` lines around each, until `visit` returns false; false if stopped. */
  search(bytes: Uint8Array, context: number, visit: (match: LineMatch) => boolean): boolean {
    if (this.needle) {
      const buffer = toBuffer(bytes)
      const cursor = new Cursor(bufferLines(buffer), context)
      return searchBytes(buffer, this.needle, (start, end, at) => visit(cursor.match(start, end, at)))
    }
    const text = decodeText(bytes)
    scanCounters.bytes += bytes.byteLength
    const cursor = new Cursor(stringLines(text), context)
    return searchText(text, this.automaton!, this.prefilter, (start, end, at) => visit(cursor.match(start, end, at)))
  }

  /** The number of lines that match (grep -c), no line cut out or numbered. */
  count(bytes: Uint8Array): number {
    let lines = 0
    const counting = () => {
      lines++
      return true
    }
    if (this.needle) searchBytes(toBuffer(bytes), this.needle, counting)
    else {
      scanCounters.bytes += bytes.byteLength
      searchText(decodeText(bytes), this.automaton!, this.prefilter, counting)
    }
    return lines
  }

  /**
   * Whether any line matches (grep -l), over a file handed over a part at a time, reading no further
   * than it must (see FirstMatch). A literal's scan stops at its first hit; a regular expression is
   * decoded and run a piece of whole lines at a time, from FIRST_CHUNK bytes doubling, so the work
   * is about twice the bytes before the match.
   */
  firstMatch(): FirstMatch {
    return new FirstMatch((lines, atStart) => this.anyLine(lines, atStart))
  }

  /** Whether one of `lines` (whole lines, the last one the file's when it has no newline) matches. */
  private anyLine(lines: Uint8Array, atStart: boolean): boolean {
    if (this.needle) {
      // The line holding the hit is not needed: the scan stops at the hit's end.
      const at = this.needle.find(toBuffer(lines), 0)
      scanCounters.bytes += at === -1 ? lines.length : at + this.needle.length
      return at !== -1
    }
    scanCounters.bytes += lines.length
    return !searchText(decodeText(lines, atStart), this.automaton!, this.prefilter, () => false)
  }
}

/**
 * grep -l over a file given a part at a time, as a reader hands it out (its bytes valid only during
 * the call): `push` is false once a line matched (read no further), `end` says whether one did. A
 * match lies within one line, so only whole lines are searched: the start of a line cut by a part's
 * end (a match, or a UTF-8 character, across the cut) is kept, copied, until its newline comes (a
 * line over many parts is joined once). The lines are searched in pieces from FIRST_CHUNK bytes,
 * doubling, each ending after a newline: a match near the start decodes about that much.
 */
export class FirstMatch {
  private found = false
  /** Bytes of the file searched so far (0: a byte order mark is not a character yet). */
  private searched = 0
  private size = FIRST_CHUNK
  /** The start of the line cut by the last part's end, in pieces. */
  private cut: Uint8Array[] = []

  constructor(private readonly anyLine: (lines: Uint8Array, atStart: boolean) => boolean) {}

  push(part: Uint8Array): boolean {
    if (this.found) return false
    let from = 0
    if (this.cut.length > 0) {
      const newline = part.indexOf(10)
      if (newline === -1) {
        this.cut.push(copy(part))
        return true
      }
      this.cut.push(part.subarray(0, newline + 1))
      const line = joined(this.cut)
      this.cut = []
      if (this.search(line)) return false
      from = newline + 1
    }
    const last = part.lastIndexOf(10)
    if (last >= from && this.search(from === 0 && last + 1 === part.length ? part : part.subarray(from, last + 1))) return false
    if (last + 1 < part.length) this.cut.push(copy(part.subarray(Math.max(from, last + 1))))
    return true
  }

  /** Whether a line matched, the file's last line (one without a newline) searched now. An empty file has no line: a pattern that matches the empty string matches none. */
  end(): boolean {
    if (!this.found && this.cut.length > 0) {
      const line = joined(this.cut)
      this.cut = []
      this.search(line)
    }
    return this.found
  }

  /** Searches whole lines in pieces, each ending after a newline (or where `lines` ends). */
  private search(lines: Uint8Array): boolean {
    for (let from = 0; from < lines.length; this.size = Math.min(2 * this.size, 1 << 30)) {
      const newline = from + this.size >= lines.length ? -1 : lines.indexOf(10, from + this.size - 1)
      const to = newline === -1 ? lines.length : newline + 1
      const atStart = this.searched === 0
      this.searched += to - from
      if (this.anyLine(lines.subarray(from, to), atStart)) return (this.found = true)
      from = to
    }
    return false
  }
}

/** A copy of the bytes (a Buffer's slice() is a view: the reader's next part would overwrite it). */
function copy(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length)
  out.set(bytes)
  return out
}

/** Pieces as one array (one piece as it is). */
function joined(pieces: readonly Uint8Array[]): Uint8Array {
  return pieces.length === 1 ? pieces[0] : concatBytes(pieces)
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** node:buffer's isAscii, once loaded (Node only; see loadGrep). */
let isAscii: ((bytes: Uint8Array) => boolean) | undefined

/** Loads what the fast paths need from Node; without Node the matcher decodes with TextDecoder. */
export async function loadGrep(): Promise<void> {
  if (isAscii === undefined && typeof Buffer === 'function') isAscii = (await import('node:buffer')).isAscii
}

/** For the chunks of a file after its first: a byte order mark there is a character, as it is in the whole file's text. */
const midFile = typeof TextDecoder === 'function' ? new TextDecoder('utf-8', { ignoreBOM: true }) : undefined

/** ASCII (most source code) decodes as Latin-1: a straight copy into a one-byte string. */
function decodeText(bytes: Uint8Array, atStart = true): string {
  if (isAscii?.(bytes)) return toBuffer(bytes).toString('latin1')
  return atStart || midFile === undefined ? decode(bytes) : midFile.decode(bytes)
}

/**
 * A line as shown: in a CRLF file (every newline after a '\r') without the '\r' before its newline
 * (grep -n prints it; read_file shows such a file with LF ends, and edit_file matches in that view,
 * so a line copied from here matches there), and no longer than LINE_CHARS around `at`. A file of
 * mixed endings read_file shows as it is, '\r's and all, as grep does: so are its lines here (they
 * lost the '\r', and an old_string copied from one did not match). The '\r' is still part of the
 * line that is matched.
 */
function shown(line: string, crlf: boolean, at = 0): string {
  if (crlf && line.endsWith('\r')) line = line.slice(0, -1)
  if (line.length <= LINE_CHARS) return line
  const start = Math.max(0, Math.min(at - LINE_CHARS / 4, line.length - LINE_CHARS))
  return (start > 0 ? '…' : '') + line.slice(start, start + LINE_CHARS) + (start + LINE_CHARS < line.length ? '…' : '')
}

/** Line boundaries over a Buffer or a string (10 is '\n' and 13 '\r' in both). */
interface Lines {
  readonly length: number
  next(from: number): number
  previous(from: number): number
  text(start: number, end: number): string
  /** The code unit or byte at `at`. */
  at(at: number): number
}

function bufferLines(buffer: Buffer): Lines {
  return {
    length: buffer.length,
    next: (from) => buffer.indexOf(10, from),
    previous: (from) => (from < 0 ? -1 : buffer.lastIndexOf(10, from)),
    text: (start, end) => buffer.toString('utf8', start, end),
    at: (at) => buffer[at],
  }
}

function stringLines(text: string): Lines {
  return {
    length: text.length,
    next: (from) => text.indexOf('\n', from),
    previous: (from) => (from < 0 ? -1 : text.lastIndexOf('\n', from)),
    text: (start, end) => text.slice(start, end),
    at: (at) => text.charCodeAt(at),
  }
}

/** read_file's rule for a CRLF file: it has a newline, and a '\r' before every one (it stops at the first without). */
function isCrlf(lines: Lines): boolean {
  let newline = lines.next(0)
  if (newline === -1) return false
  for (; newline !== -1; newline = lines.next(newline + 1)) if (newline === 0 || lines.at(newline - 1) !== 13) return false
  return true
}

/** Counts lines as matches arrive, and cuts the context around them. */
class Cursor {
  private line = 1
  private counted = 0
  /** Whether the file is CRLF (see shown), found at its first match. */
  private crlf: boolean | undefined

  constructor(
    private readonly lines: Lines,
    private readonly context: number,
  ) {}

  /** The number of the line starting at `start` (starts only ever move forward). */
  number(start: number): number {
    for (let at = this.lines.next(this.counted); at !== -1 && at < start; at = this.lines.next(at + 1)) this.line++
    this.counted = start
    return this.line
  }

  match(start: number, end: number, at: number): LineMatch {
    const line_number = this.number(start)
    this.crlf ??= isCrlf(this.lines)
    // A '\r' ending the file (no newline after it) is kept, as read_file keeps it.
    const crlf = (stop: number) => this.crlf === true && stop < this.lines.length
    const line = shown(this.lines.text(start, end), crlf(end), at - start)
    if (this.context === 0) return { line_number, line }
    const before: string[] = []
    for (let s = start, k = 0; k < this.context && s > 0; k++) {
      const previous = this.lines.previous(s - 2) + 1
      before.unshift(shown(this.lines.text(previous, s - 1), crlf(s - 1)))
      s = previous
    }
    const after: string[] = []
    for (let e = end, k = 0; k < this.context && e < this.lines.length - 1; k++) {
      const next = this.lines.next(e + 1)
      const stop = next === -1 ? this.lines.length : next
      after.push(shown(this.lines.text(e + 1, stop), crlf(stop)))
      e = stop
    }
    return { line_number, line, ...(before.length > 0 ? { before } : {}), ...(after.length > 0 ? { after } : {}) }
  }
}

/** Each byte's rank for BytesFinder (as ripgrep's memchr picks its rare byte): the commoner in COMMON, the higher. */
const RANK = new Uint8Array(256).map((_, byte) => {
  const at = COMMON.indexOf(String.fromCharCode(byte))
  return byte > 127 ? 60 : at === -1 ? 0 : 255 - at
})

/** Where a needle starts in a buffer: memchr on its rarest byte, checking each hit; Buffer.indexOf where hits come thick. */
class BytesFinder {
  private readonly rare: number
  private readonly offset: number

  get length(): number {
    return this.needle.length
  }

  constructor(private readonly needle: Uint8Array) {
    let offset = 0
    for (let i = 1; i < needle.length; i++) if (RANK[needle[i]] < RANK[needle[offset]]) offset = i
    this.offset = offset
    this.rare = needle[offset]
  }

  find(buffer: Buffer, from: number): number {
    const { needle, rare, offset } = this
    let hits = 0
    for (let at = buffer.indexOf(rare, from + offset); at !== -1; at = buffer.indexOf(rare, at + 1)) {
      const start = at - offset
      if (start + needle.length > buffer.length) return -1
      let same = true
      for (let i = 0; i < needle.length; i++) {
        if (buffer[start + i] !== needle[i]) {
          same = false
          break
        }
      }
      if (same) return start
      // A byte that turns out common: hand the rest to the native substring search.
      if (++hits > 64 && (at - from) / hits < 64) return buffer.indexOf(needle, at - offset + 1)
    }
    return -1
  }
}

/** A matching line: [start, end) and where in it the match is; false to stop. */
type OnLine = (start: number, end: number, at: number) => boolean

/** Bounds of the line holding `at`: [start, end), end at its '\n' or the end of the text. */
function lineBounds(lines: Lines, at: number): [number, number] {
  const start = at === 0 ? 0 : lines.previous(at - 1) + 1
  const end = lines.next(at)
  return [start, end === -1 ? lines.length : end]
}

function searchBytes(buffer: Buffer, finder: BytesFinder, onLine: OnLine): boolean {
  const lines = bufferLines(buffer)
  for (let from = 0; from < buffer.length; ) {
    const at = finder.find(buffer, from)
    if (at === -1) {
      scanCounters.bytes += buffer.length - from
      return true
    }
    const [start, end] = lineBounds(lines, at)
    scanCounters.bytes += Math.min(buffer.length, end + 1) - from // scanned to the hit, then to its line's end
    if (!onLine(start, end, at)) return false
    from = end + 1
  }
  return true
}

/** Every match of the automaton over the text, or only over the lines that pass the prefilter. */
function searchText(text: string, automaton: Automaton, prefilter: Prefilter | undefined, onLine: OnLine): boolean {
  const lines = stringLines(text)
  // The end of a text that ends with a newline, or of an empty one, starts no line.
  const lastLineOpen = text.length > 0 && text.charCodeAt(text.length - 1) !== 10
  if (prefilter) {
    const { scan, exact, chain } = prefilter
    const sightings = chain.map(() => ({ from: Infinity, start: -1, end: -1 }))
    scan.lastIndex = 0
    for (let found = scan.exec(text); found; ) {
      if (found.index === text.length && !lastLineOpen) return true
      const [start, end] = lineBounds(lines, found.index)
      // A hit of the whole pattern within one line is a match; otherwise the automaton decides (and
      // for an empty hit too: RegExp tries those inside a surrogate pair, as /\B/u in 'a😀').
      const whole = exact && found[0].length > 0 && found.index + found[0].length <= end
      const at = whole ? found.index : inOrder(chain, sightings, text, start, end) ? automaton.find(text, start, end, true) : -1
      if (at !== -1 && !onLine(start, end, at)) return false
      if (end >= text.length) return true
      scan.lastIndex = end + 1
      found = scan.exec(text)
    }
    return true
  }
  for (let from = 0; from < text.length; ) {
    const at = automaton.find(text, from, text.length, lastLineOpen)
    if (at === -1) return true
    const [start, end] = lineBounds(lines, at)
    if (!onLine(start, end, at)) return false
    from = end + 1
  }
  return true
}
