/**
 * .gitignore rules as git reads them (dir.c, wildmatch.c), matched in time linear in the path. The
 * `ignore` package compiled each rule to a backtracking RegExp: a repository's rule
 * 'a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/b' over a directory 50 deep took 47 s for one
 * path, and the walk tests every entry, so one cloned project froze search_files, find_files and
 * list_directory, and with them the MCP server. Here a rule is a list of steps run as a set of
 * positions over the path once (Thompson's construction): O(path × rule) whatever the rule; the
 * common shapes (a literal, '*.ext', 'prefix*', 'dir/**') are plain string tests, as in git.
 *
 * Git's rules: blank lines and '#' lines are skipped, a final '\r' and unescaped trailing spaces
 * dropped; '!' negates; a final '/' matches directories only; a rule with no other '/' matches the
 * name at any depth, any other is matched against the path from the .gitignore's directory (a
 * leading '/' only anchors). '*' and '?' never match '/', nor does a [class] ('[!…]' and '[^…]'
 * negate, POSIX [:alpha:] classes inside); '**' between slashes (or at an end) spans directories,
 * elsewhere it is '*'; '\' makes the next character literal. The last rule that matches decides.
 */

/** One step of a rule. */
type Step =
  | { readonly kind: 'char'; readonly code: number }
  | { readonly kind: 'one' } // '?'
  | { readonly kind: 'class'; readonly test: (code: number) => boolean }
  | { readonly kind: 'star' } // '*': any run of characters but '/'
  | { readonly kind: 'all' } // a final '/**': anything, '/' included
  | { readonly kind: 'dirs' } // '**/': no directory, or any ending with '/' (the loop is the next step)
  | { readonly kind: 'dirsLoop' }

const SLASH = 47

/** Work done matching (positions visited), for tests to bound without a clock. */
export const gitignoreCounters = { steps: 0 }

const POSIX: Readonly<Record<string, (code: number) => boolean>> = {
  alnum: (c) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122),
  alpha: (c) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122),
  blank: (c) => c === 32 || c === 9,
  cntrl: (c) => c < 32 || c === 127,
  digit: (c) => c >= 48 && c <= 57,
  graph: (c) => c > 32 && c < 127,
  lower: (c) => c >= 97 && c <= 122,
  print: (c) => c >= 32 && c < 127,
  punct: (c) => c > 32 && c < 127 && !POSIX.alnum(c),
  space: (c) => c === 32 || (c >= 9 && c <= 13),
  upper: (c) => c >= 65 && c <= 90,
  xdigit: (c) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102),
}

/** The character (a code point) at `at`: its code and where the next one starts. */
function charAt(pattern: string, at: number): { code: number; next: number } {
  const code = pattern.codePointAt(at)!
  return { code, next: at + (code > 0xffff ? 2 : 1) }
}

/** A bracket expression at `at` (just past '['): its test and where it ends, or undefined when malformed (git then matches nothing). */
function bracket(pattern: string, at: number): { test: (code: number) => boolean; end: number } | undefined {
  let i = at
  const negated = pattern[i] === '!' || pattern[i] === '^'
  if (negated) i++
  const tests: ((code: number) => boolean)[] = []
  // One member's character: a backslash makes the next one literal.
  const member = (): number | undefined => {
    if (pattern[i] === '\\') i++
    if (i >= pattern.length) return undefined
    const { code, next } = charAt(pattern, i)
    i = next
    return code
  }
  for (let first = true; ; first = false) {
    if (i >= pattern.length) return undefined
    if (pattern[i] === ']' && !first) break
    const posix = pattern[i] === '[' ? /^\[:([a-z]+):\]/.exec(pattern.slice(i)) : null
    if (posix) {
      const test = POSIX[posix[1]]
      if (test === undefined) return undefined // wildmatch: an unknown class name is a malformed pattern
      tests.push(test)
      i += posix[0].length
      continue
    }
    const low = member()
    if (low === undefined) return undefined
    if (pattern[i] === '-' && i + 1 < pattern.length && pattern[i + 1] !== ']') {
      i++
      const high = member()
      if (high === undefined) return undefined
      tests.push((code) => code >= low && code <= high)
    } else tests.push((code) => code === low)
  }
  return { test: (code) => code !== SLASH && tests.some((test) => test(code)) !== negated, end: i + 1 }
}

/** A rule's pattern (no '!', no final '/') as steps; undefined for one git never matches. */
function compile(pattern: string): Step[] | undefined {
  const steps: Step[] = []
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]
    if (c === '*') {
      let end = i
      while (pattern[end] === '*') end++
      const atStart = i === 0 || pattern[i - 1] === '/'
      if (end - i >= 2 && atStart && end === pattern.length) {
        steps.push({ kind: 'all' })
      } else if (end - i >= 2 && atStart && pattern[end] === '/') {
        steps.push({ kind: 'dirs' }, { kind: 'dirsLoop' })
        end++ // the '/' is the loop's way out
      } else steps.push({ kind: 'star' })
      i = end
    } else if (c === '?') {
      steps.push({ kind: 'one' })
      i++
    } else if (c === '[') {
      const parsed = bracket(pattern, i + 1)
      if (parsed === undefined) return undefined
      steps.push({ kind: 'class', test: parsed.test })
      i = parsed.end
    } else {
      if (c === '\\') {
        i++
        if (i >= pattern.length) return undefined // a trailing backslash: wildmatch matches nothing
      }
      const { code, next } = charAt(pattern, i)
      steps.push({ kind: 'char', code })
      i = next
    }
  }
  return steps
}

/**
 * A rule's steps as a test of a whole text. The shapes most rules have are plain string tests, as
 * git's own are (a literal, '*.ext', 'prefix*', 'dir/**'); any other runs as a set of positions
 * advanced together over the text, each visited at most once per character (O(text × steps)), with
 * its scratch arrays made once.
 */
function matcherOf(steps: readonly Step[]): (text: string) => boolean {
  const literal = (from: number, to: number) => {
    let text = ''
    for (let i = from; i < to; i++) {
      const step = steps[i]
      if (step.kind !== 'char') return undefined
      text += String.fromCodePoint(step.code)
    }
    return text
  }
  const last = steps.length - 1
  const whole = literal(0, steps.length)
  if (whole !== undefined) return (text) => text === whole
  const suffix = steps[0].kind === 'star' ? literal(1, steps.length) : undefined
  if (suffix !== undefined) return (text) => text.endsWith(suffix) && text.lastIndexOf('/', text.length - suffix.length - 1) === -1
  const prefix = steps[last].kind === 'star' || steps[last].kind === 'all' ? literal(0, last) : undefined
  if (prefix !== undefined) {
    if (steps[last].kind === 'all') return (text) => text.startsWith(prefix)
    return (text) => text.startsWith(prefix) && text.indexOf('/', prefix.length) === -1
  }
  const end = steps.length
  const seen = new Int32Array(end + 1)
  let current = new Int32Array(end + 1)
  let next = new Int32Array(end + 1)
  const stack = new Int32Array(2 * (end + 1))
  let generation = 0
  // Adds a position and those reached from it without a character ('*' and '**/' may match nothing).
  const add = (list: Int32Array, size: number, position: number): number => {
    let depth = 0
    stack[depth++] = position
    while (depth > 0) {
      const at = stack[--depth]
      if (seen[at] === generation) continue
      seen[at] = generation
      list[size++] = at
      gitignoreCounters.steps++
      const kind = steps[at]?.kind
      if (kind === 'star' || kind === 'all') stack[depth++] = at + 1
      else if (kind === 'dirs') {
        stack[depth++] = at + 1 // into its loop
        stack[depth++] = at + 2 // or no directory at all
      }
    }
    return size
  }
  return (text) => {
    generation++
    let size = add(current, 0, 0)
    for (let i = 0; i < text.length && size > 0; ) {
      const code = text.codePointAt(i)!
      i += code > 0xffff ? 2 : 1
      generation++
      let nextSize = 0
      for (let k = 0; k < size; k++) {
        const position = current[k]
        gitignoreCounters.steps++
        const step = steps[position]
        if (step === undefined) continue
        switch (step.kind) {
          case 'char':
            if (code === step.code) nextSize = add(next, nextSize, position + 1)
            break
          case 'one':
            if (code !== SLASH) nextSize = add(next, nextSize, position + 1)
            break
          case 'class':
            if (step.test(code)) nextSize = add(next, nextSize, position + 1)
            break
          case 'star':
            if (code !== SLASH) nextSize = add(next, nextSize, position)
            break
          case 'all':
            nextSize = add(next, nextSize, position)
            break
          case 'dirsLoop':
            nextSize = add(next, nextSize, position)
            if (code === SLASH) nextSize = add(next, nextSize, position + 1)
            break
          case 'dirs':
            break // only its loop takes characters
        }
      }
      ;[current, next] = [next, current]
      size = nextSize
    }
    for (let k = 0; k < size; k++) if (current[k] === end) return true
    return false
  }
}

interface Rule {
  readonly matches: (text: string) => boolean
  readonly negated: boolean
  readonly directoryOnly: boolean
  /** No '/' but a final one: matched against the name, at any depth. */
  readonly nameOnly: boolean
}

/** One line of a .gitignore as a rule, or undefined for a blank line, a comment or a pattern git never matches. */
function ruleOf(line: string): Rule | undefined {
  let text = line.endsWith('\r') ? line.slice(0, -1) : line
  if (text === '' || text.startsWith('#')) return undefined
  // Trailing spaces go unless escaped with a backslash.
  let keep = text.length
  while (keep > 0 && text[keep - 1] === ' ' && !(keep > 1 && text[keep - 2] === '\\')) keep--
  text = text.slice(0, keep)
  const negated = text.startsWith('!')
  if (negated) text = text.slice(1)
  const directoryOnly = text.endsWith('/') && text.length > 1
  if (directoryOnly) text = text.slice(0, -1)
  if (text === '') return undefined
  const nameOnly = !text.includes('/')
  if (text.startsWith('/')) text = text.slice(1)
  const steps = compile(text)
  return steps && { matches: matcherOf(steps), negated, directoryOnly, nameOnly }
}

export interface GitignoreRules {
  /** The verdict of the last rule matching `relative` (a path from the rules' directory, no leading '/'). */
  test(relative: string, isDirectory: boolean): { ignored: boolean; unignored: boolean }
}

export function gitignore(text: string): GitignoreRules {
  const rules = text.split('\n').map(ruleOf).filter((rule) => rule !== undefined)
  return {
    test(relative, isDirectory) {
      const name = relative.slice(relative.lastIndexOf('/') + 1)
      for (let i = rules.length - 1; i >= 0; i--) {
        const rule = rules[i]
        if (rule.directoryOnly && !isDirectory) continue
        if (rule.matches(rule.nameOnly ? name : relative)) return { ignored: !rule.negated, unignored: rule.negated }
      }
      return { ignored: false, unignored: false }
    },
  }
}
