/**
 * `rewindfs/validators`: ready-made validators for commit-time checks. A separate entry because
 * the YAML and TOML parsers are too heavy for the core. Each factory returns a plain `Validator`,
 * so these mix freely with user-written ones; costs put the O(1) size check first and the secret
 * scan (several regex passes over every file) last.
 */
import { LineCounter, parseAllDocuments } from 'yaml'
import { TomlError, parse as parseToml } from 'smol-toml'
import * as z from 'zod/mini'
import type { Validator } from '../src/engine/validator.js'
import { compileGlob } from '../src/glob.js'

export type { ValidateResult, ValidatedFile, ValidationFailure, ValidationReport, ValidationResult, Validator } from '../src/engine/validator.js'
export { ValidationError, runValidators } from '../src/engine/validator.js'

/** Relative costs of the built-ins (lower runs first; a user validator without `cost` is 0). */
export const COSTS = { sizeLimit: 0, json: 10, toml: 10, yaml: 20, secrets: 100 } as const

export interface MatchOptions {
  /** Glob(s) of the files to check; each validator has its own default. */
  match?: string | string[]
}

export interface JsonOptions extends MatchOptions {
  /**
   * Glob(s) of matched files read as JSON with comments and trailing commas, which is what these
   * tools accept. Default: tsconfig*.json, jsconfig*.json, .vscode/*.json, devcontainer files.
   * Pass [] to hold every file to strict JSON.
   */
  jsonc?: string | string[]
}

export interface SecretPattern {
  /** The kind named in the failure message, e.g. 'Stripe key'. */
  name: string
  /**
   * Run over the whole text. The match (or its named group `secret`, when the pattern has one) is
   * what gets masked and tested against `allow`.
   */
  regex: RegExp
}

export interface SecretsOptions extends MatchOptions {
  /** Extra patterns, checked in addition to the built-in ones. */
  patterns?: SecretPattern[]
  /** A detected value that any of these matches is allowed (test fixtures, documented samples). */
  allow?: RegExp[]
}

// ---- option checking --------------------------------------------------------------------------

const glob = z.string({ error: 'must be a non-empty glob string' }).check(z.minLength(1, 'must be a non-empty glob string'))
const globs = z.union([glob, z.array(glob)], { error: 'must be a glob or an array of globs' })
const regExp = z.instanceof(RegExp, { error: 'must be a RegExp' })

// Strict objects: a misspelt option silently ignored would leave a check quietly off.
const matchOptions = z.optional(z.strictObject({ match: z.optional(globs) }, { error: 'must be an object' }))
const jsonOptions = z.optional(z.strictObject({ match: z.optional(globs), jsonc: z.optional(globs) }, { error: 'must be an object' }))
const secretsOptions = z.optional(
  z.strictObject(
    {
      match: z.optional(globs),
      patterns: z.optional(
        z.array(
          z.strictObject(
            {
              name: z.string({ error: 'must be a non-empty string' }).check(z.minLength(1, 'must be a non-empty string')),
              regex: regExp,
            },
            { error: 'must be an object { name, regex }' },
          ),
          { error: 'must be an array of { name, regex }' },
        ),
      ),
      allow: z.optional(z.array(regExp, { error: 'must be an array of RegExp' })),
    },
    { error: 'must be an object' },
  ),
)
const byteCount = z.number({ error: 'must be a finite number' }).check(z.int('must be an integer'), z.minimum(0, 'must not be negative'))

function check<T>(schema: z.ZodMiniType<T>, value: unknown, fn: string, what: string): T {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const details = parsed.error.issues.map((issue) =>
    issue.code === 'unrecognized_keys'
      ? `unknown ${what} ${issue.keys.map((key) => `'${key}'`).join(', ')}`
      : [what, ...issue.path.map(String)].join('.') + ' ' + issue.message,
  )
  throw new TypeError(`${fn}(): ${details.join('; ')}`)
}

// ---- text helpers -----------------------------------------------------------------------------

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
const lenientUtf8 = new TextDecoder('utf-8')

/** The text, or a failure message for bytes that are not UTF-8 (binary written under a text name). */
function decode(content: Uint8Array, format: string): string | { failure: string } {
  try {
    return strictUtf8.decode(content)
  } catch {
    return { failure: `not valid UTF-8 text, so not valid ${format} (binary content?)` }
  }
}

/** 1-based line and column of a UTF-16 offset. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1
  let lineStart = 0
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++
    lineStart = i + 1
  }
  return { line, column: offset - lineStart + 1 }
}

const listGlobs = (value: string | string[]): string[] => (typeof value === 'string' ? [value] : value)

// ---- JSON -------------------------------------------------------------------------------------

const DEFAULT_JSONC = ['tsconfig*.json', 'jsconfig*.json', '.vscode/*.json', '.devcontainer.json', '.devcontainer/*.json', 'devcontainer.json']

/** Strict JSON ('*.json'); failures say where: `invalid JSON at 3:14: expected ',' or '}', found '"'`. */
export function json(options?: JsonOptions): Validator {
  const opts = check(jsonOptions, options, 'json', 'options')
  const jsonc = pathMatcherFor(opts?.jsonc ?? DEFAULT_JSONC)
  return {
    name: 'json',
    match: opts?.match ?? '*.json',
    cost: COSTS.json,
    validate(content, path) {
      const text = decode(content, 'JSON')
      if (typeof text !== 'string') return text.failure
      try {
        // The native parser is the fast path; the scanner only runs to explain a failure.
        JSON.parse(text)
        return true
      } catch (error) {
        const found = scanJson(text, jsonc(path))
        if (!found) return jsonc(path) ? true : `invalid JSON: ${error instanceof Error ? error.message : String(error)}`
        const { line, column } = lineColumn(text, found.offset)
        return `invalid JSON at ${line}:${column}: ${found.message}`
      }
    },
  }
}

function pathMatcherFor(patterns: string | string[]): (path: string) => boolean {
  const globs = listGlobs(patterns).map(compileGlob)
  return (path) => globs.some((glob) => glob.test(path))
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

/**
 * Finds the first syntax error and its offset, because Node 20's JSON.parse messages carry no
 * line/column (and some echo a slice of the input). Iterative, so deep nesting cannot overflow
 * the stack. With `jsonc`, comments and trailing commas are accepted, as tsconfig.json allows.
 */
function scanJson(text: string, jsonc: boolean): { offset: number; message: string } | undefined {
  type State = 'value' | 'firstElement' | 'element' | 'firstKey' | 'key' | 'after'
  const fail = (offset: number, message: string) => ({ offset, message })
  const show = (i: number) => {
    const code = text.codePointAt(i) ?? 0
    return code < 0x20 || code === 0x7f ? `U+${code.toString(16).toUpperCase().padStart(4, '0')}` : `'${String.fromCodePoint(code)}'`
  }
  const stack: ('{' | '[')[] = []
  let state: State = 'value'
  let i = 0
  const n = text.length

  /** Skips whitespace (and comments in JSONC); returns a failure for an unterminated comment. */
  const skip = (): { offset: number; message: string } | undefined => {
    for (;;) {
      const c = text.charCodeAt(i)
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++
      else if (jsonc && c === 0x2f && text[i + 1] === '/') {
        const end = text.indexOf('\n', i)
        i = end === -1 ? n : end
      } else if (jsonc && c === 0x2f && text[i + 1] === '*') {
        const end = text.indexOf('*/', i + 2)
        if (end === -1) return fail(i, 'unterminated comment')
        i = end + 2
      } else return undefined
    }
  }
  /** Moves past a string starting at `i`, or returns its failure. */
  const string = (): { offset: number; message: string } | undefined => {
    const start = i++
    for (;;) {
      if (i >= n) return fail(start, 'unterminated string')
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i++
        return undefined
      }
      if (c === 0x5c) {
        const e = text[i + 1]
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6
        else return fail(i, e === undefined ? 'unterminated string' : `bad escape '\\${e}' in string`)
      } else if (c < 0x20) return fail(i, `unescaped ${show(i)} in string`)
      else i++
    }
  }

  for (;;) {
    const skipped = skip()
    if (skipped) return skipped
    if (i >= n) return state === 'after' && stack.length === 0 ? undefined : fail(i, 'unexpected end of input')
    const c = text[i]
    const top = stack[stack.length - 1]
    switch (state) {
      case 'firstKey':
      case 'key': {
        if (c === '}' && (state === 'firstKey' || jsonc)) {
          stack.pop()
          i++
          state = 'after'
          continue
        }
        if (c !== '"') {
          return fail(i, `expected a property name in double quotes${state === 'firstKey' ? " or '}'" : ''}, found ${show(i)}`)
        }
        const bad = string() ?? skip()
        if (bad) return bad
        if (i >= n) return fail(i, 'unexpected end of input')
        if (text[i] !== ':') return fail(i, `expected ':' after the property name, found ${show(i)}`)
        i++
        state = 'value'
        continue
      }
      case 'after': {
        if (top === undefined) return fail(i, `unexpected ${show(i)} after the JSON value`)
        const close = top === '{' ? '}' : ']'
        if (c === ',') {
          i++
          state = top === '{' ? 'key' : 'element'
        } else if (c === close) {
          stack.pop()
          i++
        } else return fail(i, `expected ',' or '${close}', found ${show(i)}`)
        continue
      }
      default: {
        // 'value', 'firstElement', 'element': a value is expected.
        if (c === ']' && (state === 'firstElement' || (state === 'element' && jsonc))) {
          stack.pop()
          i++
          state = 'after'
          continue
        }
        if (c === '{' || c === '[') {
          stack.push(c)
          i++
          state = c === '{' ? 'firstKey' : 'firstElement'
          continue
        }
        if (c === '"') {
          const bad = string()
          if (bad) return bad
        } else if (c === '-' || (c >= '0' && c <= '9')) {
          NUMBER.lastIndex = i
          if (!NUMBER.test(text)) return fail(i, 'invalid number')
          i = NUMBER.lastIndex
        } else {
          const word = ['true', 'false', 'null'].find((w) => text.startsWith(w, i))
          if (!word) return fail(i, `unexpected ${show(i)}, expected a value`)
          i += word.length
        }
        state = 'after'
      }
    }
  }
}

// ---- YAML and TOML ----------------------------------------------------------------------------

/** YAML syntax, every document in the stream ('*.{yaml,yml}'): `invalid YAML at line 2, column 3: …`. */
export function yaml(options?: MatchOptions): Validator {
  const opts = check(matchOptions, options, 'yaml', 'options')
  return {
    name: 'yaml',
    match: opts?.match ?? '*.{yaml,yml}',
    cost: COSTS.yaml,
    validate(content) {
      const text = decode(content, 'YAML')
      if (typeof text !== 'string') return text.failure
      // prettyErrors off: its messages quote the offending source lines, which may hold secrets.
      const lines = new LineCounter()
      const errors = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false }).flatMap((doc) => doc.errors)
      const [first] = errors
      if (!first) return true
      const { line, col } = lines.linePos(first.pos[0])
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''
      return `invalid YAML at line ${line}, column ${col}: ${first.message}${more}`
    },
  }
}

/** TOML syntax ('*.toml'): `invalid TOML at line 4, column 1: …`. */
export function toml(options?: MatchOptions): Validator {
  const opts = check(matchOptions, options, 'toml', 'options')
  return {
    name: 'toml',
    match: opts?.match ?? '*.toml',
    cost: COSTS.toml,
    validate(content) {
      const text = decode(content, 'TOML')
      if (typeof text !== 'string') return text.failure
      try {
        parseToml(text)
        return true
      } catch (error) {
        if (!(error instanceof TomlError)) return `invalid TOML: ${error instanceof Error ? error.message : String(error)}`
        // smol-toml appends a code block quoting the source; keep only the reason.
        const reason = error.message.split('\n\n')[0].replace(/^Invalid TOML document: /, '')
        return `invalid TOML at line ${error.line}, column ${error.column}: ${reason}`
      }
    },
  }
}

/** The syntax checks: JSON, YAML and TOML. */
export function defaultValidators(): Validator[] {
  return [json(), yaml(), toml()]
}

// ---- size -------------------------------------------------------------------------------------

const human = (bytes: number): string => {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${bytes} bytes` : `${bytes} bytes (${Number(value.toFixed(1))} ${units[unit]})`
}

/** Rejects files larger than `maxBytes` (all files by default). */
export function sizeLimit(maxBytes: number, options?: MatchOptions): Validator {
  const max = check(byteCount, maxBytes, 'sizeLimit', 'maxBytes')
  const opts = check(matchOptions, options, 'sizeLimit', 'options')
  return {
    name: 'sizeLimit',
    match: opts?.match ?? '**',
    cost: COSTS.sizeLimit,
    validate(content) {
      return content.byteLength <= max || `size ${human(content.byteLength)} exceeds the limit of ${human(max)}`
    },
  }
}

// ---- secrets ----------------------------------------------------------------------------------

interface SecretRule {
  name: string
  /** Global regex. With a capture group named `secret`, that group is the secret (else the match). */
  regex: RegExp
  /** Characters shown unmasked: only the public, well-known prefix. */
  reveal: number
  /** Extra test on the detected value, to keep false positives down. */
  accept?: (secret: string, text: string, end: number) => boolean
}

const PLACEHOLDER = /example|sample|dummy|placeholder|changeme|redacted|your[_-]|xxxx|\.\.\./i

function entropy(value: string): number {
  const counts = new Map<string, number>()
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1)
  let bits = 0
  for (const count of counts.values()) {
    const p = count / value.length
    bits -= p * Math.log2(p)
  }
  return bits
}

/** Looks machine-generated: letters and digits, varied, and not a documented placeholder. */
const random = (value: string) => /\d/.test(value) && /[a-z]/i.test(value) && entropy(value) >= 3 && !PLACEHOLDER.test(value)

const KEY_NAMES =
  'api[_-]?key|apikey|secret[_-]?key|secret|access[_-]?key|access[_-]?token|auth[_-]?token|token|client[_-]?secret|password|passwd'

/**
 * What follows a real key's header: line breaks (real, or escaped as in a JSON service-account
 * file) or spaces, optional `Proc-Type: …` header lines, then base64. Prose quoting the header fails.
 * A header line must end in a line break, so text can be split only one way (no runaway backtracking).
 */
const PEM_BODY = /^(?:\s|\\r|\\n|[A-Za-z-]+: [^\r\n\\]*(?:\r?\n|\\r\\n|\\n))+?[A-Za-z0-9+/]{24}/

const BUILTIN_RULES: SecretRule[] = [
  { name: 'AWS access key ID', regex: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, reveal: 4, accept: (s) => !PLACEHOLDER.test(s) },
  {
    name: 'private key',
    // The header names the kind; the header alone (docs, tests) is not a leak, so a body must follow.
    regex: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g,
    reveal: Infinity,
    accept: (_s, text, end) => PEM_BODY.test(text.slice(end, end + 400)),
  },
  { name: 'GitHub token', regex: /\bgh[pousr]_[A-Za-z0-9]{36,251}\b/g, reveal: 4, accept: (s) => !PLACEHOLDER.test(s) },
  { name: 'GitHub fine-grained token', regex: /\bgithub_pat_[A-Za-z0-9_]{22,244}\b/g, reveal: 11, accept: (s) => !PLACEHOLDER.test(s) },
  { name: 'Slack token', regex: /\bxox[baprs]-[A-Za-z0-9-]{10,250}/g, reveal: 5, accept: (s) => !PLACEHOLDER.test(s) },
  { name: 'OpenAI-style API key', regex: /\bsk-[A-Za-z0-9_-]{32,250}/g, reveal: 3, accept: (s) => random(s.slice(3)) },
  {
    name: 'JWT',
    regex: /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g,
    reveal: 3,
    accept: (s) => !PLACEHOLDER.test(s),
  },
]

// `api_key = "…"`, `"clientSecret": "…"`, `TOKEN=…`. The lookbehind makes attempts start only at the
// beginning of a name, and the bounded name prefix keeps long identifier runs from going quadratic.
const GENERIC_RULE: SecretRule = {
  name: 'secret assignment',
  regex: new RegExp(
    `(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,40}?(?:${KEY_NAMES})(?![A-Za-z0-9])["']?\\s*(?::=|=>|[:=])\\s*(["'\`]?)(?<secret>[A-Za-z0-9+/=_\\-.~!@#%^&*]{16,256})\\1`,
    'gid',
  ),
  reveal: 0,
  accept: random,
}

interface Finding {
  index: number
  end: number
  kind: string
  shown: string
}

/** Whether [index, end) overlaps a finding; `sorted` is disjoint and ordered, so binary search suffices. */
function overlaps(sorted: readonly Finding[], index: number, end: number): boolean {
  let lo = 0
  let hi = sorted.length
  // The last finding starting before `end` is the only candidate: earlier ones end before it starts.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid].index < end) lo = mid + 1
    else hi = mid
  }
  return lo > 0 && sorted[lo - 1].end > index
}

function mask(secret: string, reveal: number): string {
  if (reveal === Infinity) return secret
  // Never reveal more than a quarter, so a short custom match is not mostly shown.
  return secret.slice(0, Math.min(reveal, Math.floor(secret.length / 4))) + '****'
}

/** A regex made global (for matchAll) with match indices (to place a `secret` group), own lastIndex. */
const globalCopy = (regex: RegExp) => new RegExp(regex.source, regex.flags.replace(/[gyd]/g, '') + 'gd')
const plainCopy = (regex: RegExp) => new RegExp(regex.source, regex.flags.replace(/[gy]/g, ''))

/**
 * Scans every matched file (all by default, binary too) for credentials: AWS access key IDs,
 * private key PEM blocks, GitHub, Slack and OpenAI-style tokens, JWTs and high-entropy values
 * assigned to names like api_key/secret/token/password. The message names each kind and line and
 * shows at most a public prefix (`ghp_****`), never the secret itself.
 */
export function secrets(options?: SecretsOptions): Validator {
  const opts = check(secretsOptions, options, 'secrets', 'options')
  const custom: SecretRule[] = (opts?.patterns ?? []).map((p) => ({ name: p.name, regex: globalCopy(p.regex), reveal: 4 }))
  // Specific kinds first: an overlapping generic hit (GITHUB_TOKEN=ghp_…) is then skipped, not doubled.
  const rules = [...BUILTIN_RULES, ...custom, GENERIC_RULE]
  const allow = (opts?.allow ?? []).map(plainCopy)
  return {
    name: 'secrets',
    match: opts?.match ?? '**',
    cost: COSTS.secrets,
    validate(content) {
      // Lenient decoding: a key pasted into a binary file is still a leak.
      const text = lenientUtf8.decode(content)
      let found: Finding[] = []
      for (const rule of rules) {
        const fresh: Finding[] = []
        rule.regex.lastIndex = 0
        for (const m of text.matchAll(rule.regex)) {
          const [index, end] = m.indices?.groups?.secret ?? m.indices?.[0] ?? [m.index, m.index + m[0].length]
          const secret = text.slice(index, end)
          if (secret === '') continue
          if (rule.accept && !rule.accept(secret, text, end)) continue
          if (allow.some((r) => r.test(secret))) continue
          if (overlaps(found, index, end)) continue
          fresh.push({ index, end, kind: rule.name, shown: mask(secret, rule.reveal) })
        }
        // One rule's matches never overlap each other, so only earlier rules' findings are checked.
        if (fresh.length > 0) found = [...found, ...fresh].sort((a, b) => a.index - b.index)
      }
      if (found.length === 0) return true
      const LISTED = 10
      const items = found.slice(0, LISTED).map((f) => `${f.kind} at line ${lineColumn(text, f.index).line} (${f.shown})`)
      if (found.length > LISTED) items.push(`and ${found.length - LISTED} more`)
      return `found ${found.length === 1 ? 'a possible secret' : `${found.length} possible secrets`}: ${items.join(', ')}`
    },
  }
}
