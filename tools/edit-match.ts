/**
 * How edit_file finds an old_string in a file and says why it could not: the exact text first, then
 * in the file's Unicode form (NFC or NFD) or with its quotes (curly or straight), as Claude Code's
 * Edit does; not found, the nearest lines of the file and how they differ (indentation, tabs, line
 * ends, whitespace, quotes, normalization), so a model can copy the text rather than read it again.
 */
import { ToolFailure } from './result.js'

/** The first `chars` characters of `line`, not ending inside a surrogate pair (the JSON would carry half a character). */
export function lineStart(line: string, chars: number): string {
  const end = chars > 0 && (line.charCodeAt(chars - 1) & 0xfc00) === 0xd800 ? chars - 1 : chars
  return line.slice(0, end)
}

/** 1-based line numbers of each match's first character. */
export function lineNumbers(text: string, at: readonly number[]): number[] {
  const out: number[] = []
  let line = 1
  let scanned = 0
  for (const index of at) {
    for (; scanned < index; scanned++) if (text.charCodeAt(scanned) === 10) line++
    out.push(line)
  }
  return out
}

/**
 * Line numbers an edit's answer lists at most (the rest are counted): '}' replaced all over a long
 * file listed 20 000 of them, and the answer was cut to the result budget with the advice to "ask
 * for less", after the edit was made; an ambiguous one's message names the first 20.
 */
export const LINES_LISTED = 100
const AMBIGUOUS_NAMED = 20

/** One replacement in `text`, or the refusal that says why it cannot be made. */
export function replaceIn(
  text: string,
  path: string,
  given: { old_string: string; new_string: string; replace_all: boolean },
  which: string,
): { text: string; at: number[]; form?: Form } {
  if (given.old_string === given.new_string) throw new ToolFailure('ENOCHANGE', `${which}old_string and new_string are the same: nothing would change`)
  const edit = inForm(text, given)
  const at = occurrences(text, edit.old_string)
  if (at.length === 0) {
    const near = nearMiss(text, edit.old_string)
    const where = `${which}old_string was not found in '${path}'${which ? ' (after the edits before it)' : ''}`
    if (near === undefined) throw new ToolFailure('ENOMATCH', `${where}; read the file again and copy the exact text, whitespace included`)
    const span = near.lines.length > 1 ? `lines ${near.line}-${near.line + near.lines.length - 1}` : `line ${near.line}`
    throw new ToolFailure(
      'ENOMATCH',
      `${where}. The nearest text is at ${span}${near.differs.length > 0 ? `, which differs from old_string in ${near.differs.join('; ')}` : ''}. ` +
        `The file has there (copy old_string from it, whitespace included):\n${near.shown}`,
      { near_line: near.line },
    )
  }
  if (at.length > 1 && !edit.replace_all) {
    const listed = lineNumbers(text, at.slice(0, LINES_LISTED))
    const named = at.length > AMBIGUOUS_NAMED ? `${listed.slice(0, AMBIGUOUS_NAMED).join(', ')} and ${at.length - AMBIGUOUS_NAMED} more` : listed.join(', ')
    throw new ToolFailure(
      'EAMBIGUOUS',
      `${which}old_string occurs ${at.length} times in '${path}'${which ? ' after the edits before it' : ''} (lines ${named}); ` +
        'include more surrounding lines to make it unique, or pass replace_all: true to replace every one',
      { lines: listed, ...(at.length > LINES_LISTED ? { count: at.length } : {}) },
    )
  }
  const chosen = edit.replace_all ? at : at.slice(0, 1)
  let next = ''
  let from = 0
  const newAt: number[] = []
  for (const index of chosen) {
    next += text.slice(from, index)
    newAt.push(next.length)
    next += edit.new_string
    from = index + edit.old_string.length
  }
  return { text: next + text.slice(from), at: newAt, ...(edit.form ? { form: edit.form } : {}) }
}

/** How an old_string not found as given was found: in the file's Unicode form, or with its quotes. */
export type Form = 'NFC' | 'NFD' | 'quotes'

/** Curly quotes of each kind, whose style new_string takes (not primes: 5′3″ is no quotation, and a prime does not curl). */
const SINGLE_QUOTES = /[\u2018\u2019\u201A\u201B]/
const DOUBLE_QUOTES = /[\u201C\u201D\u201E\u201F]/

/**
 * The edit as the file writes it. An old_string not found as given but found composed (NFC) or
 * decomposed (NFD) is taken in that form, and new_string with it: a model types 'é' as one
 * character; a file written on macOS or pasted from a PDF may hold 'e' and U+0301, which looks the
 * same and which a model cannot copy back, so every edit of such a line failed. One found once when
 * curly and straight quotes are taken alike is taken as the file has it, as Claude Code's Edit
 * takes it, and new_string's quotes of each kind follow the file's: straight ones curl (prose),
 * curly ones a model conjured straighten (code, where a curly quote breaks the line).
 */
function inForm(
  text: string,
  edit: { old_string: string; new_string: string; replace_all: boolean },
): { old_string: string; new_string: string; replace_all: boolean; form?: Form } {
  if (text.includes(edit.old_string)) return edit
  for (const form of ['NFD', 'NFC'] as const) {
    const old = edit.old_string.normalize(form)
    if (old !== edit.old_string && text.includes(old)) return { ...edit, old_string: old, new_string: edit.new_string.normalize(form), form }
  }
  const wanted = foldQuotes(edit.old_string)
  // foldQuotes keeps lengths (one UTF-16 unit for one), so an offset in the folded text is one in the text.
  const folded = foldQuotes(text)
  const at = folded.indexOf(wanted)
  if (at < 0 || folded.indexOf(wanted, at + 1) >= 0) return edit
  const actual = text.slice(at, at + wanted.length)
  let next = edit.new_string
  for (const [curly, straight] of [[SINGLE_QUOTES, "'"], [DOUBLE_QUOTES, '"']] as const) {
    if (curly.test(actual)) next = curl(next, straight)
    else if (curly.test(edit.old_string)) next = next.replace(new RegExp(curly.source, 'g'), straight)
  }
  return { ...edit, old_string: actual, new_string: next, form: 'quotes' }
}

/** Straight quotes of one kind made curly: opening at the start or after a space or an opening bracket, closing elsewhere (an apostrophe too). */
function curl(text: string, straight: "'" | '"'): string {
  const [open, close] = straight === "'" ? ['\u2018', '\u2019'] : ['\u201C', '\u201D']
  let out = ''
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    out += char !== straight ? char : index === 0 || /[\s([{\u2014\u2013]/.test(text[index - 1]) ? open : close
  }
  return out
}

/** Characters of the file shown in a not-found refusal at most. */
const NEAR_CHARS = 1500
/** Places the first line of a near miss is looked for at most (an anchor such as '}' may be on every other line). */
const NEAR_CANDIDATES = 200

/** Single and double quotes as a model types them: curly quotes and primes read as the straight ones. */
function foldQuotes(text: string): string {
  return text.replace(/[\u2018\u2019\u201A\u201B\u2032]/g, "'").replace(/[\u201C\u201D\u201E\u201F\u2033]/g, '"')
}

/** A line as compared for a near miss: Unicode composed (NFC), quotes folded, runs of whitespace one space, none at the ends. */
function loose(line: string): string {
  return foldQuotes(line.normalize('NFC')).replace(/\s+/g, ' ').trim()
}

function words(line: string): Set<string> {
  return new Set(line.match(/[\p{L}\p{N}_]+/gu) ?? [])
}

/** Whitespace named, as it is invisible in the text: "4 spaces", "1 tab", "a '\\r'". */
function named(whitespace: string): string {
  const count = whitespace.length
  if (count === 0) return 'no whitespace'
  if (/^ +$/.test(whitespace)) return `${count} space${count > 1 ? 's' : ''}`
  if (/^\t+$/.test(whitespace)) return `${count} tab${count > 1 ? 's' : ''}`
  if (whitespace === '\r') return "a '\\r'"
  return `${count} whitespace characters (${JSON.stringify(whitespace)})`
}

/**
 * Whether `want` (a line of old_string) fits `have` (a line of the file): old_string's first line may
 * start inside the line (`open.start`), its last end inside it (`open.end`); a line between is whole.
 */
function fits(have: string, want: string, open: { start: boolean; end: boolean }): boolean {
  return open.start && open.end ? have.includes(want) : open.start ? have.endsWith(want) : open.end ? have.startsWith(want) : have === want
}

/** Ways one line of the file (`have`, line `line`) differs from old_string's (`want`). */
function lineDifferences(have: string, want: string, line: number, open: { start: boolean; end: boolean }): string[] {
  if (fits(have, want, open)) return []
  const out: string[] = []
  const [haveLead, wantLead] = [/^\s*/.exec(have)![0], /^\s*/.exec(want)![0]]
  // A first line without indentation may start anywhere in the file's line.
  if (!(open.start ? wantLead === '' || haveLead.endsWith(wantLead) : haveLead === wantLead)) {
    out.push(`indentation: line ${line} of the file starts with ${named(haveLead)}, old_string's with ${named(wantLead)}`)
  }
  const [haveTrail, wantTrail] = [/\s*$/.exec(have)![0], /\s*$/.exec(want)![0]]
  if (!(open.end ? wantTrail === '' || haveTrail.startsWith(wantTrail) : haveTrail === wantTrail)) {
    out.push(
      haveTrail.includes('\r') && !wantTrail.includes('\r')
        ? `line ${line} of the file ends in CRLF: this file mixes CRLF and LF line ends, so old_string takes '\\r\\n' there`
        : `the end of line ${line}: the file's ends with ${named(haveTrail)}, old_string's with ${named(wantTrail)}`,
    )
  }
  const [haveText, wantText] = [have.trim(), want.trim()]
  const inner = { start: open.start || wantLead !== '', end: open.end || wantTrail !== '' }
  if (!fits(haveText, wantText, inner)) {
    if (fits(haveText.normalize('NFC'), wantText.normalize('NFC'), inner)) {
      out.push(`Unicode normalization: line ${line} of the file writes its accents ${haveText === haveText.normalize('NFC') ? 'composed (NFC)' : 'decomposed (NFD: a letter, then a combining mark)'}, old_string otherwise`)
    } else if (fits(foldQuotes(haveText), foldQuotes(wantText), inner)) {
      const quotes = (text: string) => [...new Set(text.match(/[\u2018\u2019\u201A\u201B\u2032\u201C\u201D\u201E\u201F\u2033'"]/g) ?? [])].join(' ')
      out.push(`quotes: line ${line} of the file has ${quotes(haveText)} where old_string has ${quotes(wantText)}`)
    } else if (fits(haveText.replace(/\s+/g, ' '), wantText.replace(/\s+/g, ' '), inner)) out.push(`the whitespace inside line ${line}`)
    else out.push(`the text of line ${line}`)
  }
  return out
}

/**
 * Where old_string nearly matches, for a not-found refusal: the lines of the file it was most
 * likely copied from, and how they differ (indentation, tabs for spaces, trailing whitespace, a
 * CR, Unicode normalization, curly quotes, other text). A model told only "not found" read the
 * whole file again and often sent the same near miss; shown the lines, it copies them. Lines are
 * compared loosely (whitespace, normalization and quotes aside); the place where most of old_string's
 * lines fit wins, else the line sharing most words with its longest line. Linear in the file.
 */
function nearMiss(text: string, old: string): { line: number; lines: string[]; differs: string[]; shown: string } | undefined {
  const want = old.split('\n')
  const wantKeys = want.map(loose)
  const openAt = (offset: number) => ({ start: offset === 0, end: offset === want.length - 1 })
  // The most telling line of old_string: the longest once compared loosely.
  let anchor = -1
  for (let index = 0; index < want.length; index++) if (wantKeys[index] !== '' && (anchor < 0 || wantKeys[index].length > wantKeys[anchor].length)) anchor = index
  if (anchor < 0) return undefined
  const have = text.split('\n')
  const keys = have.map(loose)
  let start = -1
  let best = 0
  let seen = 0
  for (let index = anchor; index < keys.length && seen < NEAR_CANDIDATES; index++) {
    if (!fits(keys[index], wantKeys[anchor], openAt(anchor))) continue
    seen++
    let score = 0
    for (let offset = 0; offset < want.length && index - anchor + offset < keys.length; offset++) if (fits(keys[index - anchor + offset], wantKeys[offset], openAt(offset))) score++
    if (score > best) [start, best] = [index - anchor, score]
  }
  if (start < 0) {
    // No line fits loosely: the line sharing most words with the anchor, if it shares at least half of them.
    const wanted = words(wantKeys[anchor])
    if (wanted.size === 0) return undefined
    let share = 0.5
    for (let index = 0; index < keys.length; index++) {
      const got = words(keys[index])
      let common = 0
      for (const word of got) if (wanted.has(word)) common++
      const score = common / Math.max(wanted.size, got.size)
      if (score >= share && (start < 0 || score > share)) [start, share] = [Math.max(0, index - anchor), score]
    }
    if (start < 0) return undefined
  }
  // old_string's last telling line, where the file has it: a line left out of old_string, or one too many, moves it.
  let last = want.length - 1
  while (last > 0 && wantKeys[last] === '') last--
  let end = start + want.length
  if (best > 0 && !(start + last < keys.length && fits(keys[start + last], wantKeys[last], openAt(last)))) {
    for (let distance = 1; distance <= want.length + 2; distance++) {
      const found = [start + last - distance, start + last + distance].find((index) => index >= start && index < keys.length && fits(keys[index], wantKeys[last], openAt(last)))
      if (found !== undefined) {
        end = found + want.length - last
        break
      }
    }
  }
  // The file's last line, 0-based (a final newline ends it: the '' split makes after it is no line), and whether old_string goes on past it.
  const newlineAtEnd = text.endsWith('\n')
  const lastLine = newlineAtEnd ? have.length - 2 : have.length - 1
  const pastEnd = start + want.length - 1 > lastLine + (newlineAtEnd && want[want.length - 1] === '' ? 1 : 0)
  const lines = have.slice(start, Math.min(end, lastLine + 1))
  const differs: string[] = []
  if (end - start !== want.length) {
    // Lines do not pair up: per-line differences would mislead.
    differs.push(`its lines: old_string has ${want.length} where the file has ${end - start} (a line ${end - start > want.length ? 'left out of' : 'too many in'} old_string, blank ones count)`)
  } else {
    lines.forEach((line, offset) => differs.push(...lineDifferences(line, want[offset], start + offset + 1, openAt(offset))))
    if (pastEnd) differs.push(`the end of the file: old_string goes on past line ${lastLine + 1}, the last${newlineAtEnd ? '' : ', which has no newline at its end'}`)
  }
  const joined = lines.join('\n')
  const shown = joined.length > NEAR_CHARS ? `${lineStart(joined, NEAR_CHARS)}… (cut; read_file shows the rest)` : joined
  const listed = differs.length > 4 ? [...differs.slice(0, 4), `${differs.length - 4} more`] : differs
  return { line: start + 1, lines, differs: listed, shown }
}

function occurrences(text: string, needle: string): number[] {
  const at: number[] = []
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) at.push(i)
  return at
}
