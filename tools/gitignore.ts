/**
 * .gitignore rules as git reads them (dir.c, wildmatch.c), matched in time linear in the path. The
 * `ignore` package compiled each rule to a backtracking RegExp: a repository's rule
 * 'a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/a/**\/b' over a directory 50 deep took 47 s for one
 * path, and the walk tests every entry, so one cloned project froze search_files, find_files and
 * list_directory, and with them the MCP server. Here a rule is a list of steps run as a set of
 * positions over the path once (Thompson's construction): O(path × rule) whatever the rule.
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

/** Whether `steps` match all of `text`: positions advanced together, each at most once per character. */
function matches(steps: readonly Step[], text: string): boolean {
  const end = steps.length
  const seen = new Int32Array(end + 1).fill(-1)
  let current: number[] = []
  let next: number[] = []
  const stack: number[] = []
  // Adds a position and those reached from it without a character ('*' and '**/' may match nothing).
  const add = (list: number[], position: number, mark: number) => {
    stack.push(position)
    while (stack.length > 0) {
      const at = stack.pop()!
      if (seen[at] === mark) continue
      seen[at] = mark
      list.push(at)
      gitignoreCounters.steps++
      const kind = steps[at]?.kind
      if (kind === 'star' || kind === 'all') stack.push(at + 1)
      else if (kind === 'dirs') stack.push(at + 1, at + 2) // into its loop, or no directory at all
    }
  }
  add(current, 0, 0)
  let index = 0
  for (const char of text) {
    index++
    const code = char.codePointAt(0)!
    next.length = 0
    for (const position of current) {
      gitignoreCounters.steps++
      const step = steps[position]
      if (step === undefined) continue
      switch (step.kind) {
        case 'char':
          if (code === step.code) add(next, position + 1, index)
          break
        case 'one':
          if (code !== SLASH) add(next, position + 1, index)
          break
        case 'class':
          if (step.test(code)) add(next, position + 1, index)
          break
        case 'star':
          if (code !== SLASH) add(next, position, index)
          break
        case 'all':
          add(next, position, index)
          break
        case 'dirsLoop':
          add(next, position, index)
          if (code === SLASH) add(next, position + 1, index)
          break
        case 'dirs':
          break // only its loop takes characters
      }
    }
    if (next.length === 0) return false
    ;[current, next] = [next, current]
  }
  return current.includes(end)
}

interface Rule {
  readonly steps: readonly Step[]
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
  return steps && { steps, negated, directoryOnly, nameOnly }
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
        if (matches(rule.steps, rule.nameOnly ? name : relative)) return { ignored: !rule.negated, unignored: rule.negated }
      }
      return { ignored: false, unignored: false }
    },
  }
}
