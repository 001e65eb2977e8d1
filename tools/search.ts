/**
 * search_files: grep over the workspace view (what the agent wrote and the lower files it left alone
 * alike). Files are walked in path order, binary files skipped, .gitignore honoured unless asked
 * otherwise, and the walk stops at the first match past max_results or the result budget, so a
 * search with a common pattern on a large tree costs what it returns. Patterns run in time linear in
 * the text (grep.ts): one that needs backtracking is refused as invalid input, never left to hang.
 * Grep's output modes: the lines (content), the files that match (files_with_matches) or their
 * matching line counts (count). files_with_matches lists the files newest first, as Claude Code's
 * Grep does (the files a model just edited come first), so it walks the whole tree before it cuts
 * the list; each file is read a part at a time from disk, up to its first match only.
 */
import { type Glob, compileGlob } from '../src/glob.js'
import { normalize } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'
import { type Budget, Room } from './budget.js'
import { type LineMatch, LineMatcher, UnsupportedPattern, isBinary, loadGrep } from './grep.js'
import { resolvePath } from './operations.js'
import { ToolFailure } from './result.js'
import { searchFilesInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'
import { ViewReader, type WalkEntry, walk } from './walk.js'

/**
 * A glob as models write it, compiled for a search under `root`: './src/*.ts' (or '../x') is taken
 * from the root, as a shell and every glob library take it, and 'src/' names the directory, which
 * covers what is under it. Both matched nothing (every path here is absolute, and a glob's '/' at
 * the end needs one in the path), so find_files, search_files' include and exclude silently
 * answered "no files" or excluded nothing.
 */
export function inputGlob(pattern: string, root: string): Glob {
  // Trailing slashes cut with a loop: /(?<=.)\/+$/ takes time quadratic in a run of slashes.
  let end = pattern.length
  while (end > 1 && pattern.charCodeAt(end - 1) === 47) end--
  let glob = pattern.slice(0, end)
  if (glob === '.' || glob === '..' || glob.startsWith('./') || glob.startsWith('../')) {
    // A root whose name has glob characters would not match itself: then the pattern is taken as given, less its './'.
    glob = /[*?{]/.test(root) ? glob.replace(/^(\.\/)+/, '') || '**' : normalize(root + '/' + glob)
  }
  return compileGlob(glob)
}

/**
 * include and exclude as a walk filter: include picks files, exclude also prunes directories. An
 * include starting with '!' excludes, as ripgrep's -g '!…' (and a Grep tool's glob) does: it was
 * taken as a literal '!', so include ['!*.test.ts'] searched nothing and ['*.ts', '!src/**'] searched
 * src anyway, both answering as if that were what was asked.
 */
export function globFilter(include: readonly string[] | undefined, exclude: readonly string[] | undefined, root: string): (entry: WalkEntry) => boolean {
  const picks = include?.filter((pattern) => !isNegated(pattern))
  const skips = [...(exclude ?? []), ...(include ?? []).filter(isNegated).map((pattern) => pattern.slice(1))]
  const wanted = picks !== undefined && picks.length > 0 ? picks.map((pattern) => inputGlob(pattern, root)) : undefined
  const unwanted = skips.length > 0 ? skips.map((pattern) => inputGlob(pattern, root)) : undefined
  return (entry) =>
    (unwanted !== undefined && unwanted.some((glob) => glob.test(entry.path))) ||
    (wanted !== undefined && entry.type !== 'dir' && !wanted.some((glob) => glob.test(entry.path)))
}

/** A glob that names what to leave out ('!*.test.ts'), as ripgrep's globs do. */
export function isNegated(pattern: string): boolean {
  return pattern.length > 1 && pattern.startsWith('!')
}

/** POSIX bracket classes, ASCII as ripgrep and grep -E take them, as the contents of a JavaScript class. */
const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
}
/** The negated ones JavaScript has an escape for ([:^word:] is ASCII, \W is not: see asciiNonWord). */
const NEGATED_CLASSES: Readonly<Record<string, string>> = { digit: '\\D', space: '\\S' }

/**
 * A class that held [:^word:] (ripgrep's ASCII [^0-9A-Za-z_]; search_files' \W is Unicode's, as
 * ripgrep's is), `body` being the rest of it: a class cannot hold a complement, so it leaves it,
 * [a[:^word:]] as (?:[a]|[^0-9A-Za-z_]) and [^a[:^word:]] as (?:(?![a])[0-9A-Za-z_]).
 */
function asciiNonWord(body: string, negated: boolean): string {
  const others = body === '' ? undefined : `[${body.startsWith('^') ? '\\' : ''}${body}]`
  if (negated) return others === undefined ? '[0-9A-Za-z_]' : `(?:(?!${others})[0-9A-Za-z_])`
  return others === undefined ? '[^0-9A-Za-z_]' : `(?:${others}|[^0-9A-Za-z_])`
}

/**
 * A pattern in ripgrep's syntax, as models write it for a Grep tool, in JavaScript's: '[[:upper:]]'
 * (which JavaScript reads as the class '[:uper' then ']', so it silently matched almost nothing) with
 * its POSIX classes spelt out, and leading inline flags ('(?i)', an invalid group to JavaScript)
 * taken off, 'i' making the search case-insensitive. Only the POSIX class names inside a bracket
 * expression are changed; everything else is left for the parser to judge.
 */
export function fromRipgrepSyntax(pattern: string): { pattern: string; caseInsensitive: boolean } {
  const flags = /^\(\?([imsuU]+)\)/.exec(pattern)
  const rest = flags ? pattern.slice(flags[0].length) : pattern
  let out = ''
  let inClass = false
  // Where the class being read starts in `out` (its contents after '[' or '[^'), and whether it holds [:^word:].
  let classBody = 0
  let negated = false
  let nonWord = false
  for (let at = 0; at < rest.length; at++) {
    const char = rest[at]
    if (char === '\\') {
      out += rest.slice(at, at + 2)
      at++
      continue
    }
    if (!inClass) {
      out += char
      if (char === '[') {
        inClass = true
        nonWord = false
        // The negation, so a POSIX class right after it is read as one.
        negated = rest[at + 1] === '^'
        if (negated) out += rest[++at]
        classBody = out.length
      }
      continue
    }
    const posix = /^\[:(\^?)([a-z]+):\]/.exec(rest.slice(at))
    const name = posix?.[2]
    if (posix && name !== undefined && Object.hasOwn(POSIX_CLASSES, name)) {
      at += posix[0].length - 1
      if (posix[1] === '^' && name === 'word') {
        nonWord = true
        // A '-' next to it is a literal: escaped, so that its neighbours do not become a range once it is gone.
        if (out.length > classBody && out.endsWith('-') && !out.endsWith('\\-')) out = out.slice(0, -1) + '\\-'
        if (rest[at + 1] === '-') {
          out += '\\-'
          at++
        }
        continue
      }
      if (posix[1] === '^' && !Object.hasOwn(NEGATED_CLASSES, name)) {
        throw new ToolFailure('EINVALIDINPUT', `pattern: [:^${name}:] (a negated POSIX class) is not supported; write the class out, e.g. [^${POSIX_CLASSES[name]}]`)
      }
      out += posix[1] === '^' ? NEGATED_CLASSES[name] : POSIX_CLASSES[name]
      continue
    }
    if (char === ']') {
      inClass = false // JavaScript's rule: a ']' right after '[' closes an empty class
      if (nonWord) {
        out = out.slice(0, classBody - (negated ? 2 : 1)) + asciiNonWord(out.slice(classBody), negated)
        continue
      }
    }
    out += char
  }
  return { pattern: out, caseInsensitive: flags?.[1].includes('i') ?? false }
}

/**
 * Whether a regular expression asks for a line feed: \n (or \x0a, \u000a, \u{a}, a raw one)
 * outside a negated class. A match lies within one line, so such a pattern answered "no matches"
 * wherever the text was; ripgrep refuses it without --multiline ([^\n] is fine: it never needs one).
 */
function asksForNewline(pattern: string): boolean {
  let inClass = false
  let negated = false
  for (let at = 0; at < pattern.length; at++) {
    const char = pattern[at]
    if (char === '\\') {
      if (/^(?:n|x0[aA]|u000[aA]|u\{0*[aA]\})/.test(pattern.slice(at + 1, at + 10)) && !(inClass && negated)) return true
      at++
    } else if (char === '\n') {
      if (!(inClass && negated)) return true
    } else if (inClass) {
      if (char === ']') inClass = false
    } else if (char === '[') {
      inClass = true
      negated = pattern[at + 1] === '^'
      if (negated) at++
    }
  }
  return false
}

function matcherOf(input: { pattern: string; regex: boolean; case_sensitive: boolean }): LineMatcher {
  if (input.regex ? asksForNewline(input.pattern) : input.pattern.includes('\n')) {
    throw new ToolFailure(
      'EINVALIDINPUT',
      'pattern: search_files matches within one line (as ripgrep does without --multiline), and this pattern has a newline (\\n), which no match can hold; search for one line of it',
    )
  }
  const { pattern, caseInsensitive } = input.regex ? fromRipgrepSyntax(input.pattern) : { pattern: input.pattern, caseInsensitive: false }
  try {
    return new LineMatcher({ pattern, regex: input.regex, caseSensitive: input.case_sensitive && !caseInsensitive })
  } catch (error) {
    if (error instanceof UnsupportedPattern) throw refused(error)
    throw new ToolFailure('EINVALIDINPUT', `pattern: not a valid regular expression: ${(error as Error).message}`)
  }
}

/** A valid pattern the linear-time engine will not run (backreferences, look-around, too large or costly). */
function refused(error: UnsupportedPattern): ToolFailure {
  return new ToolFailure('EINVALIDINPUT', `pattern: ${error.message}`)
}

/** Runs a search, an automaton too costly to build for the text refused as the pattern's fault. */
function searching<T>(run: () => T): T {
  try {
    return run()
  } catch (error) {
    throw error instanceof UnsupportedPattern ? refused(error) : error
  }
}

/**
 * Whether a file has a matching line, read a part at a time and no further than its first match
 * (a large file whose first line matches costs one part), binary if its first part has a NUL byte
 * (the first READ_PART bytes hold the 8 KiB grep looks at), unreadable if it is gone or unreadable
 * since it was listed. The pattern's own errors (an automaton too costly) are the search's.
 */
async function firstMatch(reader: ViewReader, entry: WalkEntry, matcher: LineMatcher): Promise<'match' | 'none' | 'binary' | 'unreadable'> {
  const first = matcher.firstMatch()
  let parts = 0
  let binary = false
  let failure: { error: unknown } | undefined
  try {
    await reader.scan(entry, (part) => {
      if (parts++ === 0 && isBinary(part)) {
        binary = true
        return false
      }
      try {
        return first.push(part)
      } catch (error) {
        failure = { error }
        return false
      }
    })
  } catch {
    return 'unreadable'
  }
  if (failure !== undefined) throw failure.error instanceof UnsupportedPattern ? refused(failure.error) : failure.error
  if (binary) return 'binary'
  return searching(() => first.end()) ? 'match' : 'none'
}

/** A file's modification time, for files_with_matches' order (0, last, if it is gone since: Claude Code's Grep keeps it so). */
async function modified(reader: ViewReader, entry: WalkEntry): Promise<number> {
  try {
    return (await reader.stat(entry)).mtimeMs
  } catch {
    return 0
  }
}

/** A file as files_with_matches lists it (its path), or as count does (with its matching lines). */
type FileEntry = string | { readonly path: string; readonly count: number }

export function searchTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'search_files',
    'Search file contents for a pattern (literal text, or a JavaScript regular expression with regex: true, run in time ' +
      "linear in the text as ripgrep runs it: backreferences and look-around are refused; \\w, \\W, \\b and \\B take Unicode letters and digits (é, ß, Ж, 中) as ripgrep's do; " +
      "ripgrep's [[:alpha:]] classes and a leading (?i) are taken too), " +
      'like grep -rn. output_mode content (the default): each matching line with its path, line number and context_lines around it; ' +
      'files_with_matches: only the paths of the files that match, each once, the most recently modified first (grep -l; cheapest: each file is read up to its first match); ' +
      'count: each matching file with its number of matching lines (grep -c). Searches the ' +
      'workspace as it is now, under path (default the working directory), skipping binary files and, unless ' +
      'include_ignored, what .gitignore files exclude; include/exclude globs narrow it. Returns at most ' +
      `max_results entries (lines, or files in the other modes; Grep's head_limit) and stays within the result budget (${budget.chars} characters): when truncated, ` +
      'call again with offset: next_offset, or narrow the search.',
    searchFilesInput,
    async (input) => {
      await loadGrep()
      const matcher = matcherOf(input)
      const root = resolvePath(ws, input.path ?? '.')
      const reader = await ViewReader.open(ws)
      const room = new Room(budget.chars - 400)
      const byLine = input.output_mode === 'content'
      const matches: (LineMatch & { path: string })[] = []
      const listed: FileEntry[] = []
      let skip = input.offset
      let files = 0
      let binary = 0
      let unreadable = 0
      let ignored = 0
      let stopped: 'max_results' | 'budget' | undefined
      /** Takes one entry of the answer (after the offset's), false once the answer is full. */
      const take = <T>(into: T[], entry: T): boolean => {
        if (skip > 0) {
          skip--
          return true
        }
        if (into.length === input.max_results) {
          stopped = 'max_results'
          return false
        }
        if (!room.take(entry)) {
          stopped = 'budget'
          return false
        }
        into.push(entry)
        return true
      }
      /** files_with_matches: every matching file with its modification time, ordered once the walk is done. */
      const matching: { path: string; mtimeMs: number }[] = []
      const walking = walk(reader, root, { gitignore: !input.include_ignored, skip: globFilter(input.include, input.exclude, root), onIgnored: () => ignored++ })
      for await (const entry of walking) {
        if (entry.type !== 'file') continue
        if (input.output_mode === 'files_with_matches') {
          const found = await firstMatch(reader, entry, matcher)
          if (found === 'unreadable') {
            unreadable++
            continue
          }
          files++
          if (found === 'binary') binary++
          else if (found === 'match') matching.push({ path: entry.path, mtimeMs: await modified(reader, entry) })
          continue
        }
        let bytes: Uint8Array
        try {
          bytes = await reader.read(entry)
        } catch {
          unreadable++ // gone or unreadable since it was listed
          continue
        }
        files++
        if (isBinary(bytes)) {
          binary++
          continue
        }
        if (byLine) {
          if (!searching(() => matcher.search(bytes, input.context_lines, (match) => take(matches, { path: entry.path, ...match })))) break
          continue
        }
        const count = searching(() => matcher.count(bytes))
        if (count > 0 && !take(listed, { path: entry.path, count })) break
      }
      // Newest first, ties by path (Claude Code's Grep order); the page is cut from the ordered list.
      matching.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      for (const { path } of matching) if (!take(listed, path)) break
      const returned = byLine ? matches.length : listed.length
      const next = input.offset + returned
      const unit = byLine ? 'lines' : 'files'
      return {
        ...(byLine
          ? { matches }
          : input.output_mode === 'files_with_matches'
            ? { files: listed }
            : { counts: listed, matching_lines: (listed as { count: number }[]).reduce((sum, entry) => sum + entry.count, 0) }),
        returned,
        truncated: stopped !== undefined,
        ...(stopped !== undefined
          ? {
              next_offset: next,
              more:
                stopped === 'budget'
                  ? `the result budget (${budget.chars} characters) is full: call again with offset: ${next}, or narrow the search (path, include, a more specific pattern)`
                  : `more than max_results (${input.max_results}) ${unit} match: call again with offset: ${next}, or narrow the search`,
            }
          : {}),
        files_searched: files,
        ...(binary > 0 ? { binary_files_skipped: binary } : {}),
        ...(unreadable > 0 ? { unreadable_files_skipped: unreadable } : {}),
        ...(ignored > 0 ? { ignored_by_gitignore: ignored } : {}),
      }
    },
  )
}
