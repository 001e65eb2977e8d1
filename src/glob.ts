/**
 * Globs for include/exclude filters (restore, validators), matched in time linear in the path:
 * a glob compiles to a small automaton (Thompson's construction) that is run over the path once,
 * carrying the set of states it could be in, so no pattern makes it backtrack. A regular
 * expression built from the glob (as this module replaced) blew up exponentially: eight `*` over a
 * 400-character path blocked the event loop for over 30 s.
 *
 * Syntax: `*` any characters but '/', `**` any characters ('**' followed by '/' also matches no
 * directory at all), `?` one character but '/', `{a,b}` one of the literal alternatives (an
 * unclosed '{' is a literal), `[abc]`, `[a-z]`, `[!a]` or `[^a]` one character but '/' of the set
 * (or not of it), or the bracket text itself, so a Next.js route directory `[slug]` is still found
 * by its name (an unclosed '[' is a literal); anything else is literal. A glob starting with '/' is anchored at the
 * root, any other may match from any directory down (a bare name matches anywhere), and a glob that
 * matches a directory also matches everything under it.
 */

/** One state: a character to consume (a code unit, or any but '/', or any), a fork, or the end. */
const enum Kind {
  Char,
  Segment,
  Any,
  Split,
  Match,
  /** One character but '/' of a set: `code` is its index in the builder's sets. */
  Set,
}

/** A bracket's set: ranges as pairs of code units, inclusive; `negated` matches what is in none. */
interface CharSet {
  readonly negated: boolean
  readonly ranges: readonly number[]
}

const SLASH = 47

/** Work done by matchers: steps of the automaton (a state visited for one character). */
export const globCounters = { steps: 0 }

export interface Glob {
  readonly source: string
  test(path: string): boolean
}

/** The automaton under construction: parallel arrays, `out`/`out2` the next states (-1: not yet known). */
class Builder {
  readonly kind: Kind[] = []
  readonly code: number[] = []
  readonly out: number[] = []
  readonly out2: number[] = []
  readonly sets: CharSet[] = []

  add(kind: Kind, code = 0): number {
    this.kind.push(kind)
    this.code.push(code)
    this.out.push(-1)
    this.out2.push(-1)
    return this.kind.length - 1
  }
}

/**
 * A fragment: its entry state and the dangling exits (a state index and which of its outs) still to
 * be patched to whatever follows.
 */
interface Fragment {
  start: number
  exits: [state: number, which: 1 | 2][]
}

function patch(b: Builder, exits: Fragment['exits'], to: number): void {
  for (const [state, which] of exits) (which === 1 ? b.out : b.out2)[state] = to
}

/** Concatenation of fragments (an empty list is an empty fragment: a fork with one exit). */
function sequence(b: Builder, parts: Fragment[]): Fragment {
  if (parts.length === 0) {
    const empty = b.add(Kind.Split)
    return { start: empty, exits: [[empty, 1]] }
  }
  for (let i = 0; i + 1 < parts.length; i++) patch(b, parts[i].exits, parts[i + 1].start)
  return { start: parts[0].start, exits: parts[parts.length - 1].exits }
}

function char(b: Builder, code: number): Fragment {
  const state = b.add(Kind.Char, code)
  return { start: state, exits: [[state, 1]] }
}

function one(b: Builder, kind: Kind.Segment | Kind.Any): Fragment {
  const state = b.add(kind)
  return { start: state, exits: [[state, 1]] }
}

/** Zero or more of a one-character fragment. */
function star(b: Builder, kind: Kind.Segment | Kind.Any): Fragment {
  const fork = b.add(Kind.Split)
  const step = b.add(kind)
  b.out[fork] = step
  b.out[step] = fork
  return { start: fork, exits: [[fork, 2]] }
}

/** Either fragment, or nothing when `second` is omitted (an optional part). */
function either(b: Builder, first: Fragment, second?: Fragment): Fragment {
  const fork = b.add(Kind.Split)
  b.out[fork] = first.start
  if (second) {
    b.out2[fork] = second.start
    return { start: fork, exits: [...first.exits, ...second.exits] }
  }
  return { start: fork, exits: [...first.exits, [fork, 2]] }
}

function literal(b: Builder, text: string): Fragment {
  return sequence(
    b,
    Array.from({ length: text.length }, (_, i) => char(b, text.charCodeAt(i))),
  )
}

/**
 * The bracket at `at` (`glob[at]` is '['): its set, and the index of its closing ']'; undefined when
 * it does not close. A ']' right after '[' (or '[!', '[^') is a member, as in POSIX globs.
 */
function bracketAt(glob: string, at: number): { set: CharSet; end: number } | undefined {
  let i = at + 1
  const negated = glob[i] === '!' || glob[i] === '^'
  if (negated) i++
  const first = i
  const ranges: number[] = []
  for (; i < glob.length; i++) {
    if (glob[i] === ']' && i > first) return { set: { negated, ranges }, end: i }
    const low = glob.charCodeAt(i)
    if (glob[i + 1] === '-' && i + 2 < glob.length && glob[i + 2] !== ']') {
      ranges.push(low, glob.charCodeAt(i + 2))
      i += 2
    } else ranges.push(low, low)
  }
  return undefined
}

/** `(?:.*\/)?`: no directory, or any characters ending with '/'. */
function anyDirectories(b: Builder): Fragment {
  return either(b, sequence(b, [star(b, Kind.Any), char(b, SLASH)]))
}

function body(b: Builder, glob: string): Fragment {
  const parts: Fragment[] = []
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++
        if (glob[i + 1] === '/') {
          i++
          parts.push(anyDirectories(b))
        } else parts.push(star(b, Kind.Any))
      } else parts.push(star(b, Kind.Segment))
    } else if (c === '?') parts.push(one(b, Kind.Segment))
    else if (c === '{' && glob.indexOf('}', i) >= 0) {
      const end = glob.indexOf('}', i)
      const alternatives = glob.slice(i + 1, end).split(',').map((text) => literal(b, text))
      parts.push(alternatives.reduce((all, next) => either(b, all, next)))
      i = end
    } else if (c === '[' && bracketAt(glob, i)) {
      const { set, end } = bracketAt(glob, i)!
      b.sets.push(set)
      const member = b.add(Kind.Set, b.sets.length - 1)
      parts.push(either(b, { start: member, exits: [[member, 1]] }, literal(b, glob.slice(i, end + 1))))
      i = end
    } else parts.push(char(b, glob.charCodeAt(i)))
  }
  return sequence(b, parts)
}

/** A compiled glob: its automaton, run over a path with two state lists and a visit mark per state. */
class Automaton implements Glob {
  private readonly kind: Uint8Array
  private readonly code: Uint16Array
  private readonly out: Int32Array
  private readonly out2: Int32Array
  private readonly start: number
  private readonly sets: readonly CharSet[]
  private readonly seen: Uint32Array
  private generation = 0
  private current: Int32Array
  private next: Int32Array

  constructor(readonly source: string) {
    const b = new Builder()
    const anchored = source.startsWith('/')
    // Unanchored: '/?' then any directories; the match may be followed by '/…' (what is under it).
    const prefix = anchored ? [] : [either(b, char(b, SLASH)), anyDirectories(b)]
    const under = either(b, sequence(b, [char(b, SLASH), star(b, Kind.Any)]))
    const whole = sequence(b, [...prefix, body(b, source), under])
    patch(b, whole.exits, b.add(Kind.Match))
    this.start = whole.start
    this.kind = Uint8Array.from(b.kind)
    this.code = Uint16Array.from(b.code)
    this.out = Int32Array.from(b.out)
    this.out2 = Int32Array.from(b.out2)
    this.sets = b.sets
    this.seen = new Uint32Array(b.kind.length)
    this.current = new Int32Array(b.kind.length)
    this.next = new Int32Array(b.kind.length)
  }

  /** Adds `state` and every state its forks reach without consuming a character. */
  private close(list: Int32Array, size: number, state: number): number {
    // An explicit stack: a glob of thousands of alternatives must not overflow the call stack.
    const stack = [state]
    while (stack.length > 0) {
      const s = stack.pop()!
      if (s < 0 || this.seen[s] === this.generation) continue
      this.seen[s] = this.generation
      globCounters.steps++
      if (this.kind[s] === Kind.Split) {
        stack.push(this.out2[s], this.out[s])
      } else list[size++] = s
    }
    return size
  }

  private inSet(index: number, c: number): boolean {
    const { negated, ranges } = this.sets[index]
    let found = false
    for (let k = 0; k < ranges.length && !found; k += 2) found = c >= ranges[k] && c <= ranges[k + 1]
    return found !== negated
  }

  test(path: string): boolean {
    this.generation++
    let size = this.close(this.current, 0, this.start)
    for (let i = 0; i < path.length && size > 0; i++) {
      const c = path.charCodeAt(i)
      this.generation++
      let nextSize = 0
      for (let k = 0; k < size; k++) {
        const s = this.current[k]
        globCounters.steps++
        const kind = this.kind[s]
        if (kind === Kind.Any || (kind === Kind.Segment && c !== SLASH) || (kind === Kind.Char && this.code[s] === c) || (kind === Kind.Set && c !== SLASH && this.inSet(this.code[s], c))) {
          nextSize = this.close(this.next, nextSize, this.out[s])
        }
      }
      ;[this.current, this.next] = [this.next, this.current]
      size = nextSize
    }
    for (let k = 0; k < size; k++) if (this.kind[this.current[k]] === Kind.Match) return true
    return false
  }
}

/** Compiles a glob (see the module comment). Matching costs O(path length × glob length). */
export function compileGlob(glob: string): Glob {
  if (typeof glob !== 'string') throw new TypeError(`rewindfs: a glob must be a string, got ${typeof glob}`)
  return new Automaton(glob)
}

/** A filter: a path passes when some include glob matches (or there are none) and no exclude glob does. */
export function pathMatcher(include?: readonly string[], exclude?: readonly string[]): (path: string) => boolean {
  const inc = include?.map(compileGlob)
  const exc = exclude?.map(compileGlob)
  return (path) => (!inc || inc.some((glob) => glob.test(path))) && !(exc && exc.some((glob) => glob.test(path)))
}
