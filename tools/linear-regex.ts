/**
 * Regular expressions in time linear in the text, for search_files (grep.ts), as ripgrep's default
 * engine runs them: a pattern parsed here (JavaScript's syntax, Unicode and legacy), compiled to an
 * automaton (Thompson's construction, made deterministic lazily, state by state, as the text needs
 * it) and run over the text once. JavaScript's RegExp backtracks: `(a+)+$` over 32 characters ran
 * for minutes and `a+b` over a run of 100 000 'a's for 16 s, the MCP server answering nothing
 * meanwhile; V8's linear fallback (--enable-experimental-regexp-engine-on-excessive-backtracks)
 * skips expressions with the u or i flag and runs at 40 KB/s to 1.5 MB/s. RegExp still decides what
 * is valid syntax and what one character atom ([a-z], \p{L}, 'k' under the i flag) accepts, and
 * finds the parts every match holds (the prefilter). Backreferences and look-around need
 * backtracking: they are refused (UnsupportedPattern), as ripgrep refuses them without -P.
 * Lines are grep's: only '\n' ends one. '\r' (a CRLF file's), U+2028 and U+2029 are characters
 * like any other, which '.' matches and next to which '^' and '$' do not hold (RegExp's m flag
 * takes them as line ends: '^$' matched every line of a CRLF file, 'a$' its lines ending in 'a').
 * Word characters are ripgrep's (and grep's in a UTF-8 locale): \w, \W, \b and \B take é, ß, Ж, 中
 * and ١ as letters and digits, where RegExp's know ASCII only (see WORD).
 */
/** A pattern search_files will not run: it needs backtracking, or its automaton is too large. */
export class UnsupportedPattern extends Error {
  readonly code = 'EINVAL'
  constructor(message: string) {
    super(message)
    this.name = 'UnsupportedPattern'
  }
}

/** Work done by the automata: characters scanned and states visited building them (tests bound it, no clock). */
export const grepCounters = { steps: 0 }

const LINEAR = 'search_files runs regular expressions in time linear in the text, as ripgrep does without -P'

/**
 * How common each byte is in source code and text, rarest lowest (as ripgrep's memchr picks its
 * rare byte): whitespace and lower-case vowels high, 'q', 'z', 'X' and most punctuation low.
 */
export const COMMON = ' \netaoinsrlcdhu.p(m)f;,g=b"\'y_v:/w-k{}xESTAIRCNOLDP0123456789[]jMq<>zBFHUGKWVY*&|!#$%+?@\\^`~JQXZ'

/** Zero-width assertions: '^' and '$' hold at a line's start and end, a line being what lies between '\n's (grep's, not RegExp's m flag's). */
const enum Look {
  Start,
  End,
  Boundary,
  NotBoundary,
}

type Node =
  | { readonly type: 'set'; readonly set: number; readonly literal?: number }
  | { readonly type: 'look'; readonly look: Look }
  | { readonly type: 'seq'; readonly items: readonly Node[] }
  | { readonly type: 'alt'; readonly options: readonly Node[] }
  | { readonly type: 'repeat'; readonly item: Node; readonly min: number; readonly max: number }

const LOOK_AROUND = ['(?=', '(?!', '(?<=', '(?<!']
const BRACES = /\{(\d+)(?:(,)(\d*))?\}/y
const DIGITS = /\d+/y
const HEX2 = /[0-9a-fA-F]{2}/y
const HEX4 = /[0-9a-fA-F]{4}/y
const CONTROL: Readonly<Record<string, number>> = { t: 9, n: 10, v: 11, f: 12, r: 13 }
/** Groups nested in groups, at most. */
const DEPTH_LIMIT = 200

/**
 * ripgrep's \w, as the contents of a class: [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]. RegExp's
 * \w and \b know only [0-9A-Za-z_], so '\bcafé\b' matched nothing and '\w+' cut 'Straße' and 'Жук'
 * out of every line, where grep in a UTF-8 locale and ripgrep find the words.
 */
const WORD = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}'
const WORD_TEST = new RegExp(`^[${WORD}]$`, 'u')
/** WORD spelt as ranges of UTF-16 units (made once, when first needed), for patterns run outside Unicode mode. */
let wordUnits: string | undefined

/**
 * The word characters as the contents of a class: WORD in Unicode mode; outside it (no \p there) the
 * ranges of the BMP's, each unit on its own as that mode reads the text (an astral letter's halves
 * are no letters, as '.' takes one half there).
 */
function wordClass(unicode: boolean): string {
  if (unicode) return WORD
  if (wordUnits === undefined) {
    const unit = (code: number) => `\\u${code.toString(16).padStart(4, '0')}`
    let ranges = ''
    let start = -1
    for (let code = 0; code <= 0x10000; code++) {
      const word = code < 0x10000 && (code < 0xd800 || code > 0xdfff) && WORD_TEST.test(String.fromCharCode(code))
      if (word && start === -1) start = code
      else if (!word && start !== -1) {
        ranges += start === code - 1 ? unit(start) : `${unit(start)}-${unit(code - 1)}`
        start = -1
      }
    }
    wordUnits = ranges
  }
  return wordUnits
}

/**
 * A class with \w or \W in it, in terms of WORD. A class cannot hold the complement of a union
 * (not without the v flag), so the escapes leave it: [a\w] is (?:[a]|[WORD]), [a\W] is (?:[a]|[^WORD]),
 * [^a\w] is (?:(?![a])[^WORD]), [^a\W] is (?:(?![a])[WORD]). A class without them is returned as it is.
 */
function wordsInClass(source: string, unicode: boolean): string {
  const negated = source[1] === '^'
  const body = source.slice(negated ? 2 : 1, -1)
  const rest: string[] = []
  let word = false
  let nonWord = false
  for (let i = 0; i < body.length; ) {
    const token = body[i] === '\\' ? body.slice(i, i + 2) : body[i]
    i += token.length
    if (token !== '\\w' && token !== '\\W') {
      rest.push(token)
      continue
    }
    if (token === '\\w') word = true
    else nonWord = true
    // A '-' next to a class escape is a literal (Annex B's [a-\w]): escaped, so that its neighbours do not become a range.
    if (rest[rest.length - 1] === '-') rest[rest.length - 1] = '\\-'
    if (body[i] === '-') {
      rest.push('\\-')
      i++
    }
  }
  if (!word && !nonWord) return source
  if (rest[0] === '^') rest[0] = '\\^' // not a negation once it comes first
  const others = rest.length > 0 ? `[${rest.join('')}]` : undefined
  const words = wordClass(unicode)
  if (negated) {
    if (word && nonWord) return '[]'
    const complement = word ? `[^${words}]` : `[${words}]`
    return others === undefined ? complement : `(?:(?!${others})${complement})`
  }
  const options = [...(others === undefined ? [] : [others]), ...(word ? [`[${words}]`] : []), ...(nonWord ? [`[^${words}]`] : [])]
  return options.length === 1 ? options[0] : `(?:${options.join('|')})`
}

function matchesAt(re: RegExp, source: string, at: number): boolean {
  re.lastIndex = at
  return re.test(source)
}

/** Where the character class starting at `at` ends (after its ']'); in JavaScript '[]' is a class of its own. */
function classEnd(source: string, at: number): number {
  let i = at + 1
  if (source[i] === '^') i++
  while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1
  return i + 1
}

/** Capturing groups, and whether any is named: they decide what '\1' and '\k' mean outside Unicode mode. */
function countGroups(source: string): { captures: number; named: boolean } {
  let captures = 0
  let named = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]
    if (c === '\\') i++
    else if (c === '[') i = classEnd(source, i) - 1
    else if (c === '(') {
      if (source[i + 1] !== '?') captures++
      else if (source[i + 2] === '<' && source[i + 3] !== '=' && source[i + 3] !== '!') {
        captures++
        named = true
      }
    }
  }
  return { captures, named }
}

/**
 * A parser of JavaScript regular expressions that RegExp has already accepted in the same mode (so
 * it never meets a syntax error), Annex B's legacy syntax included outside Unicode mode: `\8`, octal
 * escapes, a '{' that starts no quantifier, `\c` without a letter. Every atom that consumes one
 * character becomes a set: its source, run by RegExp on single characters (see Alphabet).
 */
export class Parser {
  readonly sets: string[] = []
  private readonly setIds = new Map<string, number>()
  private readonly captures: number
  private readonly named: boolean
  private at = 0
  private depth = 0

  constructor(
    private readonly source: string,
    private readonly unicode: boolean,
  ) {
    ;({ captures: this.captures, named: this.named } = countGroups(source))
  }

  parse(): Node {
    return this.disjunction()
  }

  private disjunction(): Node {
    const options = [this.alternative()]
    while (this.source[this.at] === '|') {
      this.at++
      options.push(this.alternative())
    }
    return options.length === 1 ? options[0] : { type: 'alt', options }
  }

  private alternative(): Node {
    const items: Node[] = []
    while (this.at < this.source.length && this.source[this.at] !== '|' && this.source[this.at] !== ')') items.push(this.term())
    return items.length === 1 ? items[0] : { type: 'seq', items }
  }

  private term(): Node {
    const { source, at } = this
    const c = source[at]
    if (c === '^' || c === '$') {
      this.at++
      return { type: 'look', look: c === '^' ? Look.Start : Look.End }
    }
    if (c === '\\' && (source[at + 1] === 'b' || source[at + 1] === 'B')) {
      this.at += 2
      return { type: 'look', look: source[at + 1] === 'b' ? Look.Boundary : Look.NotBoundary }
    }
    const around = c === '(' ? LOOK_AROUND.find((open) => source.startsWith(open, at)) : undefined
    if (around !== undefined) {
      throw new UnsupportedPattern(
        `look-around is not supported (found ${around}): ${LINEAR}, and look-around needs backtracking, which can take exponential time. ` +
          'Match the text around it as part of the pattern (foo(?=bar) → foobar), or search for the line and read it',
      )
    }
    return this.quantified(this.atom())
  }

  private quantified(item: Node): Node {
    const { source } = this
    let min: number
    let max: number
    const c = source[this.at]
    if (c === '*' || c === '+' || c === '?') {
      min = c === '+' ? 1 : 0
      max = c === '?' ? 1 : Infinity
      this.at++
    } else if (c === '{' && matchesAt(BRACES, source, this.at)) {
      BRACES.lastIndex = this.at
      const [whole, low, comma, high] = BRACES.exec(source)!
      min = Number(low)
      max = comma === undefined ? min : high === '' ? Infinity : Number(high)
      this.at += whole.length
    } else return item // (outside Unicode mode a '{' that starts no quantifier is a literal: the next atom)
    if (source[this.at] === '?') this.at++ // lazy: the same lines match
    return { type: 'repeat', item, min, max }
  }

  private atom(): Node {
    const { source } = this
    const c = source[this.at]
    if (c === '.') {
      // grep's '.': any character but the newline, '\r', U+2028 and U+2029 included (RegExp's '.' takes none of them).
      this.at++
      return this.set('[^\\n]')
    }
    if (c === '(') {
      // Every pass over the tree recurses into groups: a bound on nesting keeps them off the stack's limit.
      if (++this.depth > DEPTH_LIMIT) throw new UnsupportedPattern(`the pattern nests groups more than ${DEPTH_LIMIT} deep`)
      if (source.startsWith('(?:', this.at)) this.at += 3
      else if (source.startsWith('(?<', this.at)) this.at = source.indexOf('>', this.at) + 1
      else this.at++
      const inner = this.disjunction()
      this.at++ // ')'
      this.depth--
      return inner
    }
    if (c === '[') {
      const end = classEnd(source, this.at)
      const node = this.set(wordsInClass(source.slice(this.at, end), this.unicode))
      this.at = end
      return node
    }
    if (c === '\\') return this.escape()
    return this.character(this.at)
  }

  /** The character at `at` as a literal: a code point in Unicode mode, a UTF-16 unit outside it. */
  private character(at: number): Node {
    const code = this.unicode ? this.source.codePointAt(at)! : this.source.charCodeAt(at)
    this.at = at + (code > 0xffff ? 2 : 1)
    return this.literal(code)
  }

  private escape(): Node {
    const { source, unicode } = this
    const e = source[this.at + 1]
    const after = this.at + 2
    if (e === 'w' || e === 'W') {
      this.at = after
      return this.set(e === 'w' ? `[${wordClass(unicode)}]` : `[^${wordClass(unicode)}]`)
    }
    if ('dDsS'.includes(e) || ((e === 'p' || e === 'P') && unicode)) {
      const end = e === 'p' || e === 'P' ? source.indexOf('}', after) + 1 : after
      const node = this.set(source.slice(this.at, end))
      this.at = end
      return node
    }
    if ((e >= '1' && e <= '9') || (e === 'k' && (unicode || this.named))) {
      DIGITS.lastIndex = this.at + 1
      const reference = e === 'k' ? source.slice(this.at, source.indexOf('>', this.at) + 1) : `\\${DIGITS.exec(source)![0]}`
      // Outside Unicode mode '\8' is '8', and '\12' with fewer than 12 groups an octal escape.
      if (e === 'k' || unicode || Number(reference.slice(1)) <= this.captures) {
        throw new UnsupportedPattern(
          `backreferences are not supported (found ${reference}): ${LINEAR}, and a backreference needs backtracking, which can take exponential time. ` +
            'Spell the repeated text out, or search for one part and read the lines found',
        )
      }
      if (e >= '8') return this.character(this.at + 1)
      return this.octal()
    }
    if (e === '0') {
      if (!unicode) return this.octal()
      this.at = after
      return this.literal(0)
    }
    if (e === 'c') {
      const letter = source.charCodeAt(after)
      if ((letter | 0x20) >= 0x61 && (letter | 0x20) <= 0x7a) {
        this.at = after + 1
        return this.literal(letter % 32)
      }
      this.at++ // legacy syntax: the backslash is a literal, and 'c' the next atom
      return this.literal(0x5c)
    }
    if (e === 'x' && matchesAt(HEX2, source, after)) {
      this.at = after + 2
      return this.literal(parseInt(source.slice(after, after + 2), 16))
    }
    if (e === 'u' && unicode && source[after] === '{') {
      const end = source.indexOf('}', after)
      this.at = end + 1
      return this.literal(parseInt(source.slice(after + 1, end), 16))
    }
    if (e === 'u' && matchesAt(HEX4, source, after)) {
      let code = parseInt(source.slice(after, after + 4), 16)
      this.at = after + 4
      // In Unicode mode an escaped surrogate pair is one code point.
      if (unicode && code >= 0xd800 && code <= 0xdbff && source.startsWith('\\u', this.at) && matchesAt(HEX4, source, this.at + 2)) {
        const low = parseInt(source.slice(this.at + 2, this.at + 6), 16)
        if (low >= 0xdc00 && low <= 0xdfff) {
          code = (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000
          this.at += 6
        }
      }
      return this.literal(code)
    }
    if (CONTROL[e] !== undefined) {
      this.at = after
      return this.literal(CONTROL[e])
    }
    return this.character(this.at + 1) // an identity escape: the character itself
  }

  /** A legacy octal escape as Annex B reads it: \0 to \377, at most three digits. */
  private octal(): Node {
    const { source } = this
    const octal = (at: number) => source.charCodeAt(at) >= 0x30 && source.charCodeAt(at) <= 0x37
    let at = this.at + 1
    const first = source.charCodeAt(at++) - 0x30
    let code = first
    if (octal(at)) {
      code = code * 8 + source.charCodeAt(at++) - 0x30
      if (first <= 3 && octal(at)) code = code * 8 + source.charCodeAt(at++) - 0x30
    }
    this.at = at
    return this.literal(code)
  }

  private literal(code: number): Node {
    const escaped = this.unicode ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`
    return { ...this.set(escaped), literal: code }
  }

  private set(source: string): { readonly type: 'set'; readonly set: number } {
    let id = this.setIds.get(source)
    if (id === undefined) {
      id = this.sets.push(source) - 1
      this.setIds.set(source, id)
    }
    return { type: 'set', set: id }
  }
}

/**
 * How much a set narrows a search: a literal character most, the rarer in source code the more (as
 * COMMON ranks them), a digit or a class some, '.', \w, \s or a negation not at all.
 */
function weight(source: string, literal: number | undefined): number {
  if (literal !== undefined) {
    const at = literal < 0x80 ? COMMON.indexOf(String.fromCharCode(literal)) : -1
    return 2 + Math.round((6 * (at === -1 ? COMMON.length : at)) / COMMON.length)
  }
  if (source === '\\d') return 2
  if (source === `[${WORD}]` || (wordUnits !== undefined && source === `[${wordUnits}]`)) return 0 // \w, narrowing nothing as before
  return source.startsWith('[') && !source.startsWith('[^') ? 1 : 0
}

/**
 * An assertion in a factor. RegExp runs factors with the m flag, whose '^' and '$' also hold next to
 * '\r', U+2028 and U+2029: they hold wherever grep's do and more, so a factor with them narrows the
 * search but never decides a match (see prefilter's `exact`). RegExp's '\b' and '\B' take ASCII
 * letters only: next to a part whose characters are all of one kind (a literal, \w, \W) they are a
 * look at the other side for a WORD character, one character, and exact (a line's start and end
 * have a '\n' or nothing there, no word character, as the automaton has it); elsewhere nothing, which
 * holds wherever they do (loose). A look both ways at a factor's start makes RegExp try it at every
 * position: '\bfoo\b' scanned 15 times slower than '(?<!W)foo(?!W)'.
 */
function assertion(look: Look, before: Node | undefined, after: Node | undefined, atoms: Atoms): Factor {
  if (look === Look.Start || look === Look.End) return { source: look === Look.Start ? '^' : '$', score: 0, size: 0, fixed: true, loose: false }
  const word = `[${wordClass(atoms.unicode)}]`
  const next = after === undefined ? undefined : edgeKind(after, atoms, true)
  const previous = before === undefined ? undefined : edgeKind(before, atoms, false)
  const boundary = look === Look.Boundary
  let source: string | undefined
  // \b before a word character: no word character before it; \B: one.
  if (next !== undefined) source = (next === WORD_KIND) === boundary ? `(?<!${word})` : `(?<=${word})`
  else if (previous !== undefined) source = (previous === WORD_KIND) === boundary ? `(?!${word})` : `(?=${word})`
  return { source: source ?? '', score: 0, size: 0, fixed: true, loose: source === undefined }
}

/** The kind (WORD_KIND or OTHER) of the first (or last) character of every match of the node, if one kind. */
function edgeKind(node: Node, atoms: Atoms, first: boolean): number | undefined {
  switch (node.type) {
    case 'set': {
      const source = atoms.sets[node.set]
      const words = wordClass(atoms.unicode)
      if (source === `[${words}]`) return WORD_KIND
      if (source === `[^${words}]`) return OTHER
      if (node.literal === undefined) return undefined
      // (A letter's other cases are letters too, for the i flag.)
      return WORD_TEST.test(atoms.unicode ? String.fromCodePoint(node.literal) : String.fromCharCode(node.literal)) ? WORD_KIND : OTHER
    }
    case 'look':
      return undefined
    case 'seq':
      return node.items.length === 0 ? undefined : edgeKind(node.items[first ? 0 : node.items.length - 1], atoms, first)
    case 'alt': {
      const kinds = node.options.map((option) => edgeKind(option, atoms, first))
      return kinds.every((kind) => kind === kinds[0]) ? kinds[0] : undefined
    }
    case 'repeat':
      return node.min >= 1 ? edgeKind(node.item, atoms, first) : undefined
  }
}

/** Sets in a row a factor holds at most, and in all: RegExp runs one in O(text × size), never backtracking. */
const FACTOR_LIMIT = 32
const FACTOR_SIZE = 256

/** A regular expression without repetition that matches within every match (RegExp cannot backtrack on it). */
interface Factor {
  readonly source: string
  /** The sum of its sets' weights; an alternation's is its weakest alternative's. */
  readonly score: number
  /** Sets in all. */
  readonly size: number
  /** Every match of it has the same length (no alternation). */
  readonly fixed: boolean
  /** It holds wherever the pattern's part does, and maybe elsewhere: a hit of it decides nothing (see assertion). */
  readonly loose: boolean
}

export interface Prefilter {
  /** The most selective factor, which RegExp finds at native speed. */
  readonly scan: RegExp
  /** `scan` is the whole pattern, with no '^' or '$': a hit within one line is a match. */
  readonly exact: boolean
  /** Factors of one length each, in the pattern's order: a line must hold them in that order, one after another. */
  readonly chain: readonly RegExp[]
}

/** Where a chain factor was last looked for (from), and the first place it was found after that ([start, end), start -1 if nowhere). */
interface Sighting {
  from: number
  start: number
  end: number
}

/**
 * What the lines a pattern matches must hold, for RegExp to find before the automaton runs
 * (ripgrep's literal prefilter, with sets, assertions and alternatives): factors, parts of the
 * pattern that every match has in a row, e.g. 'needle_r[a-z]e' for needle_r[a-z]+e, '\d\d\d' for
 * \d{3,}, '(?:throw|Error) new' as it is. Undefined if nothing narrows the search. RegExp runs a
 * factor in time linear in the text (times its size): it has nothing to repeat, so nothing to
 * backtrack into.
 */
export function prefilter(tree: Node, sets: readonly string[], flags: string): Prefilter | undefined {
  const atoms: Atoms = { sets, unicode: flags.includes('u') }
  const exact = whole(tree, atoms)
  if (exact !== undefined && exact.size <= FACTOR_SIZE) return { scan: new RegExp(exact.source, flags), exact: !anchored(tree) && !exact.loose, chain: [] }
  const runs: Factor[] = []
  const best = factor(tree, atoms, runs)
  if (best === undefined || best.score < 2) return undefined
  const chain = runs.filter((run) => run.fixed && run.score >= 2)
  const redundant = chain.length === 1 && chain[0].source === best.source // the scan found it already
  return { scan: new RegExp(best.source, flags), exact: false, chain: redundant ? [] : chain.map((run) => new RegExp(run.source, flags)) }
}

/**
 * Whether the line text[start, end) holds the chain's factors in order, none overlapping the one
 * before. Lines come in order, so each factor is looked for from where its last sighting says, and
 * RegExp reads the text once per factor over the whole search rather than once per line.
 */
export function inOrder(chain: readonly RegExp[], sightings: Sighting[], text: string, start: number, end: number): boolean {
  let at = start
  for (let k = 0; k < chain.length; k++) {
    const seen = sightings[k]
    if (at < seen.from || (seen.start !== -1 && seen.start < at)) {
      const factor = chain[k]
      factor.lastIndex = at
      const found = factor.exec(text)
      seen.from = at
      seen.start = found === null ? -1 : found.index
      seen.end = found === null ? -1 : found.index + found[0].length
    }
    // Later occurrences end later still (a factor spans as many characters wherever it is).
    if (seen.start === -1 || seen.end > end) return false
    at = seen.end
  }
  return true
}

function concat(parts: readonly Factor[]): Factor {
  return {
    source: parts.map((part) => part.source).join(''),
    score: parts.reduce((sum, part) => sum + part.score, 0),
    size: parts.reduce((sum, part) => sum + part.size, 0),
    fixed: parts.every((part) => part.fixed),
    loose: parts.some((part) => part.loose),
  }
}

function either(options: readonly Factor[]): Factor {
  return {
    source: `(?:${options.map((option) => option.source).join('|')})`,
    score: Math.min(...options.map((option) => option.score)),
    size: options.reduce((sum, option) => sum + option.size, 0),
    fixed: false,
    loose: options.some((option) => option.loose),
  }
}

/** Whether the node has a '^' or '$', which a factor's RegExp reads as the m flag does, not as grep does (see looks). */
function anchored(node: Node): boolean {
  switch (node.type) {
    case 'set':
      return false
    case 'look':
      return node.look === Look.Start || node.look === Look.End
    case 'repeat':
      return anchored(node.item)
    case 'seq':
      return node.items.some(anchored)
    case 'alt':
      return node.options.some(anchored)
  }
}

/** What a factor spells its sets with, and the mode its assertions' word class is spelt for. */
interface Atoms {
  readonly sets: readonly string[]
  readonly unicode: boolean
}

/**
 * The node as a factor matching exactly what it matches (but where `loose`), if it repeats nothing;
 * `before` and `after` are the parts of the pattern next to it, for its assertions.
 */
function whole(node: Node, atoms: Atoms, before?: Node, after?: Node): Factor | undefined {
  const { sets } = atoms
  switch (node.type) {
    case 'set':
      return { source: sets[node.set], score: weight(sets[node.set], node.literal), size: 1, fixed: true, loose: false }
    case 'look':
      return assertion(node.look, before, after, atoms)
    case 'repeat':
      return undefined
    case 'seq':
    case 'alt': {
      const parts =
        node.type === 'seq'
          ? node.items.map((part, i) => whole(part, atoms, i > 0 ? node.items[i - 1] : before, i + 1 < node.items.length ? node.items[i + 1] : after))
          : node.options.map((option) => whole(option, atoms, before, after))
      if (parts.some((part) => part === undefined)) return undefined
      return node.type === 'seq' ? concat(parts as Factor[]) : either(parts as Factor[])
    }
  }
}

/** The most selective factor of the node; `runs` collects the factors of its sequence, in order. */
function factor(node: Node, atoms: Atoms, runs?: Factor[]): Factor | undefined {
  let best: Factor | undefined
  const consider = (candidate: Factor | undefined) => {
    if (candidate !== undefined && candidate.size <= FACTOR_SIZE && (best === undefined || candidate.score > best.score)) best = candidate
  }
  // Parts that every match has next to each other, in order.
  let run: Factor[] = []
  let size = 0
  // A run that starts with the last repetition of a part may share it with the run before (a+ once).
  let shared = 0
  const end = () => {
    if (run.length > 0) consider(concat(run))
    if (run.length > shared) runs?.push(concat(run.slice(shared)))
    run = []
    size = 0
    shared = 0
  }
  const add = (part: Factor) => {
    if (size > 0 && size + part.size > FACTOR_LIMIT) end()
    run.push(part)
    size += part.size
  }
  const walk = (item: Node, before?: Node, after?: Node): void => {
    if (item.type === 'seq') {
      const { items } = item
      items.forEach((part, i) => walk(part, i > 0 ? items[i - 1] : before, i + 1 < items.length ? items[i + 1] : after))
      return
    }
    const exact = whole(item, atoms, before, after)
    if (exact !== undefined) {
      if (exact.size <= FACTOR_SIZE) add(exact)
      else end()
      return
    }
    const one = item.type === 'repeat' && item.min >= 1 ? whole(item.item, atoms) : undefined
    if (item.type === 'repeat' && one !== undefined && one.size <= FACTOR_LIMIT) {
      // Its first `min` repetitions follow what came before; the last one precedes what follows.
      const copies = Math.min(item.min, Math.max(1, Math.floor(FACTOR_LIMIT / Math.max(1, one.size))))
      for (let i = 0; i < copies; i++) add(one)
      if (item.max !== item.min || copies < item.min) {
        end()
        add(one)
        shared = 1
      }
      return
    }
    end()
    if (item.type === 'alt') {
      const options = item.options.map((option) => factor(option, atoms))
      if (options.every((option) => option !== undefined && option.score > 0)) consider(either(options as Factor[]))
    } else if (item.type === 'repeat' && item.min >= 1) consider(factor(item.item, atoms))
  }
  walk(node)
  end()
  return best
}

/** Character kinds the assertions look at: a line terminator (or no character), a word character, another. */
const TERMINATOR = 0
const WORD_KIND = 1
const OTHER = 2

/** Character classes: 0 not yet classified, 1 the newline, up to 254 others; OVERFLOW past that (never cached). */
const NEWLINE = 1
const OVERFLOW = 255
const CLASSES = 256

/**
 * The characters of a text, grouped into classes that every set and assertion treats alike (found
 * as the text shows them), so the automaton has one transition per class rather than per character.
 * What a set accepts is RegExp's answer for that one character, with the pattern's flags.
 */
export class Alphabet {
  readonly classOf = new Uint8Array(0x10000)
  /** Per class: its kind, and one character per set ('1' if the set accepts the class's characters). */
  readonly kinds: number[] = [TERMINATOR, TERMINATOR]
  readonly memberships: string[] = ['', '']
  private readonly astral = new Map<number, number>()
  private readonly signatures = new Map<string, number>()
  private readonly tests: RegExp[]
  /** Sets tested on characters so far (a pattern of thousands of sets pays for each new character). */
  cost = 0

  constructor(
    sets: readonly string[],
    flags: string,
    readonly unicode: boolean,
  ) {
    const mode = flags + (unicode ? 'u' : '')
    this.tests = sets.map((source) => new RegExp(`^(?:${source})$`, mode))
    this.classOf[10] = NEWLINE
  }

  classify(code: number): number {
    const known = code < 0x10000 ? this.classOf[code] : this.astral.get(code)
    if (known !== undefined && known !== 0) return known
    const members = this.membership(code)
    const kind = this.kind(code)
    const signature = kind + members
    let id = this.signatures.get(signature)
    if (id === undefined) {
      id = this.kinds.length < OVERFLOW ? this.kinds.push(kind) - 1 : OVERFLOW
      if (id !== OVERFLOW) {
        this.memberships.push(members)
        this.signatures.set(signature, id)
      }
    }
    if (code < 0x10000) this.classOf[code] = id
    else this.astral.set(code, id)
    return id
  }

  kind(code: number): number {
    // Only '\n' ends a line: '^' and '$' do not hold next to a '\r' (grep and ripgrep without --crlf).
    if (code === 10) return TERMINATOR
    return WORD_TEST.test(this.text(code)) ? WORD_KIND : OTHER
  }

  membership(code: number): string {
    const text = this.text(code)
    let members = ''
    for (const test of this.tests) members += test.test(text) ? '1' : '0'
    this.cost += this.tests.length
    grepCounters.steps += this.tests.length
    return members
  }

  private text(code: number): string {
    return this.unicode ? String.fromCodePoint(code) : String.fromCharCode(code)
  }
}

const enum Op {
  Set,
  Split,
  Empty,
  Look,
  Match,
}

/** NFA states at most: a bigger automaton (counted repetitions, {1,5000}{1,5000}) is refused before it is built. */
const NFA_LIMIT = 50_000
/** Steps building deterministic states, at most, per search: a pattern whose states keep changing (thrashing the cache) stops here. */
const WORK_LIMIT = 100_000_000
/** Deterministic states cached at most (and their NFA states in all), before the cache starts over. */
const DFA_LIMIT = 2_000
const KERNEL_LIMIT = 2_000_000

/** A fragment of the NFA under construction: its entry state and the exits still to patch. */
interface Fragment {
  start: number
  exits: [state: number, which: 1 | 2][]
}

/**
 * The pattern as an automaton: a Thompson NFA, and the deterministic automaton over it built lazily
 * (each state the set of NFA states reached, and the kind of the character before, for the
 * assertions), with one transition per state and character class. A character costs one table
 * lookup once its transition is known; the first time costs the NFA states visited, counted
 * against WORK_LIMIT. Matching is O(text × NFA) at worst, however ambiguous the pattern.
 */
export class Automaton {
  // The NFA, while built (then as typed arrays below).
  private readonly ops: number[] = []
  private readonly args: number[] = []
  private readonly outs: number[] = []
  private readonly outs2: number[] = []
  private readonly op: Uint8Array
  private readonly arg: Int32Array
  private readonly out: Int32Array
  private readonly out2: Int32Array
  private readonly start: number
  /** Whether the kind of the character before matters ('^', '\b', '\B'): if not, states need not tell kinds apart. */
  private readonly looksBack: boolean
  // Scratch space of advance(): a visit mark per NFA state, the stack, the sets reached, the states after.
  private readonly seen: Uint32Array
  private generation = 0
  private readonly stack: Int32Array
  private readonly reached: Int32Array
  private after: Int32Array<ArrayBuffer>
  private afterSize = 0
  private work = 0

  // The deterministic automaton: a row of CLASSES transitions per state (0: not known yet).
  private table = new Int32Array(CLASSES * 64)
  private kernels: Int32Array[] = []
  private before: number[] = []
  private ids = new Map<string, number>()
  private kernelSize = 0
  /** Times the cache started over, and states made: to tell when it no longer pays (see find). */
  private resets = 0
  private made = 0

  constructor(
    tree: Node,
    private readonly alphabet: Alphabet,
  ) {
    const size = nfaSize(tree)
    if (size > NFA_LIMIT) {
      throw new UnsupportedPattern(
        `the pattern is too large: it compiles to ${size > 1e9 ? 'more than 10⁹' : `about ${size}`} automaton states, more than ${NFA_LIMIT} ` +
          '(counted repetitions multiply: (?:a{1000}){1000} is a million). Use smaller counts or fewer alternatives',
      )
    }
    let looksBack = false
    const build = (node: Node): Fragment => {
      switch (node.type) {
        case 'set':
          return this.one(Op.Set, node.set)
        case 'look':
          if (node.look !== Look.End) looksBack = true
          return this.one(Op.Look, node.look)
        case 'seq':
          return this.sequence(node.items.map(build))
        case 'alt':
          return this.either(node.options.map(build))
        case 'repeat': {
          const parts: Fragment[] = []
          for (let i = 0; i < node.min; i++) parts.push(build(node.item))
          if (node.max === Infinity) parts.push(this.star(build(node.item)))
          else if (node.max > node.min) parts.push(this.upTo(node.max - node.min, () => build(node.item)))
          return this.sequence(parts)
        }
      }
    }
    const whole = build(tree)
    this.patch(whole.exits, this.add(Op.Match, 0))
    this.start = whole.start
    this.looksBack = looksBack
    const states = this.ops.length
    this.op = Uint8Array.from(this.ops)
    this.arg = Int32Array.from(this.args)
    this.out = Int32Array.from(this.outs)
    this.out2 = Int32Array.from(this.outs2)
    this.seen = new Uint32Array(states)
    this.stack = new Int32Array(3 * states + 2) // each state visited once, pushing at most two
    this.reached = new Int32Array(states)
    this.after = new Int32Array(states)
    this.intern(new Int32Array(0), TERMINATOR) // state 1: a line's start
  }

  private add(op: Op, arg: number): number {
    this.ops.push(op)
    this.args.push(arg)
    this.outs.push(-1)
    this.outs2.push(-1)
    return this.ops.length - 1
  }

  private one(op: Op, arg: number): Fragment {
    const state = this.add(op, arg)
    return { start: state, exits: [[state, 1]] }
  }

  private patch(exits: Fragment['exits'], to: number): void {
    for (const [state, which] of exits) (which === 1 ? this.outs : this.outs2)[state] = to
  }

  private sequence(parts: Fragment[]): Fragment {
    if (parts.length === 0) return this.one(Op.Empty, 0)
    for (let i = 0; i + 1 < parts.length; i++) this.patch(parts[i].exits, parts[i + 1].start)
    return { start: parts[0].start, exits: parts[parts.length - 1].exits }
  }

  /** One of the fragments: a chain of forks, every option ending at one join (its exits are not copied along). */
  private either(options: Fragment[]): Fragment {
    const join = this.add(Op.Empty, 0)
    let start = options[options.length - 1].start
    for (const option of options) this.patch(option.exits, join)
    for (let i = options.length - 2; i >= 0; i--) {
      const fork = this.add(Op.Split, 0)
      this.outs[fork] = options[i].start
      this.outs2[fork] = start
      start = fork
    }
    return { start, exits: [[join, 1]] }
  }

  /** x{0,n}: up to `count` repetitions, each only after the one before, any of them ending at one join. */
  private upTo(count: number, item: () => Fragment): Fragment {
    const join = this.add(Op.Empty, 0)
    let exits: Fragment['exits'] = []
    let start = -1
    for (let i = 0; i < count; i++) {
      const fork = this.add(Op.Split, 0)
      const next = item()
      this.outs[fork] = next.start
      this.outs2[fork] = join
      if (start === -1) start = fork
      else this.patch(exits, fork)
      exits = next.exits
    }
    this.patch(exits, join)
    return { start, exits: [[join, 1]] }
  }

  private star(item: Fragment): Fragment {
    const fork = this.add(Op.Split, 0)
    this.outs[fork] = item.start
    this.patch(item.exits, fork)
    return { start: fork, exits: [[fork, 2]] }
  }

  /**
   * Where the first match in text[from, to) ends, or -1: matches never cross a '\n' (the automaton
   * starts over after each), and `to` ends a line too when `lineEnd` is set.
   */
  find(text: string, from: number, to: number, lineEnd: boolean): number {
    const { alphabet } = this
    const { classOf, unicode } = alphabet
    const resets = this.resets
    const made = this.made
    let table = this.table
    let state = 1
    let i = from
    let found = -1
    while (i < to) {
      let code = text.charCodeAt(i)
      let width = 1
      if (code >= 0xd800 && code <= 0xdbff && unicode && i + 1 < to) {
        const low = text.charCodeAt(i + 1)
        if (low >= 0xdc00 && low <= 0xdfff) {
          code = (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000
          width = 2
        }
      }
      let cls = code < 0x10000 ? classOf[code] : 0
      if (cls === 0) {
        cls = alphabet.classify(code)
        this.spend(0)
      }
      let next = table[(state << 8) | cls]
      if (next === 0) {
        // A cache that keeps starting over, making a state every few characters, costs more than it
        // saves (a pattern such as (a|b)*a(a|b){20}): follow the NFA itself for the rest.
        if (this.resets - resets > 2 && (i - from) < 16 * (this.made - made)) {
          grepCounters.steps += i - from
          return this.simulate(text, i, to, lineEnd, this.kernels[state], this.before[state])
        }
        next = this.step(state, cls, code)
        table = this.table
      }
      if (next < 0) {
        found = i
        break
      }
      state = next
      i += width
    }
    if (found === -1 && lineEnd && i === to) {
      let next = table[(state << 8) | NEWLINE]
      if (next === 0) next = this.step(state, NEWLINE, 10)
      if (next < 0) found = to
    }
    grepCounters.steps += i - from
    return found
  }

  /** find() without the deterministic automaton, from NFA states `kernel` (the kind `before` before them). */
  private simulate(text: string, from: number, to: number, lineEnd: boolean, kernel: Int32Array, before: number): number {
    const { alphabet } = this
    let current = new Int32Array(this.after.length)
    current.set(kernel)
    let size = kernel.length
    let spare = new Int32Array(this.after.length)
    for (let i = from; i < to; ) {
      let code = text.charCodeAt(i)
      let width = 1
      if (code >= 0xd800 && code <= 0xdbff && alphabet.unicode && i + 1 < to) {
        const low = text.charCodeAt(i + 1)
        if (low >= 0xdc00 && low <= 0xdfff) {
          code = (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000
          width = 2
        }
      }
      const cls = code === 10 ? NEWLINE : alphabet.classify(code)
      grepCounters.steps++
      if (this.advance(current, size, before, cls, code)) return i
      if (cls === NEWLINE) {
        size = 0
        before = TERMINATOR
      } else {
        // The states after become the current ones; the old current array is the next scratch.
        ;[current, spare, this.after] = [this.after, current, spare]
        size = this.afterSize
        before = this.looksBack ? (cls === OVERFLOW ? alphabet.kind(code) : alphabet.kinds[cls]) : TERMINATOR
      }
      i += width
    }
    return lineEnd && this.advance(current, size, before, NEWLINE, 10) ? to : -1
  }

  /**
   * The transition of `state` on a character of class `cls` (`code` itself when it is of none): -1
   * if a match ends before it, else the next state (a line's start after a newline). Cached, but
   * for OVERFLOW characters.
   */
  private step(state: number, cls: number, code: number): number {
    const kernel = this.kernels[state]
    let next: number
    if (this.advance(kernel, kernel.length, this.before[state], cls, code)) next = -1
    else if (cls === NEWLINE) next = 1
    else {
      const kind = cls === OVERFLOW ? this.alphabet.kind(code) : this.alphabet.kinds[cls]
      next = this.intern(this.after.subarray(0, this.afterSize).sort(), this.looksBack ? kind : TERMINATOR)
    }
    // A state interned after the cache started over leaves the old row behind.
    if (cls !== OVERFLOW && this.kernels[state] === kernel) this.table[(state << 8) | cls] = next
    return next
  }

  /**
   * Follows NFA states `kernel[0, size)`, the kind `before` before them, over one character of class
   * `cls` (`code`): true if a match ends before it, else the states after it are after[0, afterSize).
   * Every state visited counts against WORK_LIMIT.
   */
  private advance(kernel: Int32Array, size: number, before: number, cls: number, code: number): boolean {
    const { op, arg, out, out2, seen, stack, reached, alphabet } = this
    const kind = cls === OVERFLOW ? alphabet.kind(code) : alphabet.kinds[cls]
    const generation = ++this.generation
    let top = 0
    stack[top++] = this.start
    for (let k = size - 1; k >= 0; k--) stack[top++] = kernel[k]
    let sets = 0
    let matched = false
    let work = 0
    while (top > 0 && !matched) {
      const s = stack[--top]
      if (seen[s] === generation) continue
      seen[s] = generation
      work++
      switch (op[s]) {
        case Op.Set:
          reached[sets++] = s
          break
        case Op.Split:
          stack[top++] = out2[s]
          stack[top++] = out[s]
          break
        case Op.Empty:
          stack[top++] = out[s]
          break
        case Op.Look:
          if (holds(arg[s], before, kind)) stack[top++] = out[s]
          break
        case Op.Match:
          matched = true
      }
    }
    this.afterSize = 0
    if (!matched && cls !== NEWLINE) {
      const members = cls === OVERFLOW ? alphabet.membership(code) : alphabet.memberships[cls]
      const next = ++this.generation
      const after = this.after
      for (let k = 0; k < sets; k++) {
        const to = out[reached[k]]
        if (members.charCodeAt(arg[reached[k]]) === 0x31 && seen[to] !== next) {
          seen[to] = next
          after[this.afterSize++] = to
        }
      }
      work += sets
    }
    this.spend(work)
    return matched
  }

  /** Counts `work` states visited, with the sets tested on characters, against WORK_LIMIT. */
  private spend(work: number): void {
    this.work += work
    grepCounters.steps += work
    if (this.work + this.alphabet.cost > WORK_LIMIT) {
      throw new UnsupportedPattern(
        `the pattern is too costly for this text: its automaton took more than ${WORK_LIMIT} steps (a large counted repetition, or ` +
          'alternatives that overlap under one as in (a|b)*a(a|b){20}, make it change state at every character). Use a simpler pattern, or narrow the search with path or include',
      )
    }
  }

  /** The id of a deterministic state (1 and up), made if new; the cache starts over when full. */
  private intern(kernel: Int32Array, before: number): number {
    const key = before + ':' + kernel.join(',')
    const known = this.ids.get(key)
    if (known !== undefined) return known
    if (this.ids.size >= DFA_LIMIT || this.kernelSize + kernel.length > KERNEL_LIMIT) {
      this.resets++
      this.ids.clear()
      this.table.fill(0, 0, this.kernels.length * CLASSES)
      this.kernels = []
      this.before = []
      this.kernelSize = 0
      this.intern(new Int32Array(0), TERMINATOR)
      return this.intern(kernel, before)
    }
    this.made++
    const id = Math.max(1, this.kernels.length)
    this.kernels[id] = Int32Array.from(kernel)
    this.before[id] = before
    this.kernelSize += kernel.length
    this.ids.set(key, id)
    if ((id + 1) * CLASSES > this.table.length) {
      const grown = new Int32Array(this.table.length * 2)
      grown.set(this.table)
      this.table = grown
    }
    return id
  }
}

function holds(look: number, before: number, after: number): boolean {
  switch (look) {
    case Look.Start:
      return before === TERMINATOR
    case Look.End:
      return after === TERMINATOR
    case Look.Boundary:
      return (before === WORD_KIND) !== (after === WORD_KIND)
    default:
      return (before === WORD_KIND) === (after === WORD_KIND)
  }
}

/** NFA states a tree compiles to (repetitions multiply: it may be far past any sane size). */
function nfaSize(node: Node): number {
  switch (node.type) {
    case 'set':
    case 'look':
      return 1
    case 'seq':
      return node.items.length === 0 ? 1 : node.items.reduce((sum, item) => sum + nfaSize(item), 0)
    case 'alt':
      return node.options.reduce((sum, option) => sum + nfaSize(option), node.options.length - 1)
    case 'repeat': {
      const one = nfaSize(node.item)
      return Math.max(1, node.min * one + (node.max === Infinity ? one + 1 : (node.max - node.min) * (one + 1)))
    }
  }
}
