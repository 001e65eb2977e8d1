/**
 * The validator contract and its runner. A transaction stages its writes, runs the validators on
 * the staged files, and commits only when none failed, so a bad write never reaches the tree.
 * Kept tiny and dependency-light (the path globs only): it is part of the browser-safe core; the
 * concrete validators (JSON, YAML, TOML, secrets…) live in the separate `rewindfs/validators`.
 */
import { pathMatcher } from '../glob.js'

/** Result of `validate`: true/undefined pass; false rejects; a string rejects with that message. */
export type ValidateResult = boolean | string | void

export interface Validator {
  /** Names the validator in failure messages. */
  name: string
  /** Glob(s) over workspace paths: `*`, `**`, `?`, `{a,b}`; a pattern without '/' matches a basename anywhere ('*.json'). */
  match: string | string[]
  /** Relative cost: cheaper validators run first. Default 0. */
  cost?: number
  /**
   * Rejects by returning false or a message, or by throwing / rejecting; true/undefined pass.
   * `content` is the staged bytes themselves (not copied, files can be large): never mutate it.
   */
  validate(content: Uint8Array, path: string): ValidateResult | Promise<ValidateResult>
}

export interface ValidationFailure {
  path: string
  validator: string
  message: string
}

export interface ValidationResult {
  path: string
  validator: string
  ok: boolean
  /** Set when `ok` is false. */
  message?: string
}

export interface ValidationReport {
  /** Every failure, in execution order (cost, then registration, then file order). */
  failures: ValidationFailure[]
  /** One entry per (validator, matching file) pair that ran. */
  results: ValidationResult[]
}

export interface ValidatedFile {
  path: string
  content: Uint8Array
}

/** Thrown when a commit is refused; `failures` holds everything that failed, not only the first. */
export class ValidationError extends Error {
  /** As the agent tools already report it: callers branch on codes, as on ConflictError's ECONFLICT. */
  readonly code = 'EVALIDATION'
  readonly failures: ValidationFailure[]

  constructor(failures: readonly ValidationFailure[]) {
    const count = failures.length === 1 ? '1 failure' : `${failures.length} failures`
    // Continuation lines are indented so a multi-line message stays visibly under its file.
    const lines = failures.map((f) => `  ${f.path} (${f.validator}): ${f.message.replace(/\n/g, '\n    ')}`)
    super([`Validation failed (${count}):`, ...lines].join('\n'))
    this.name = 'ValidationError'
    this.failures = [...failures]
  }
}

const describeError = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * Runs every validator on every file its globs match and reports all failures. It deliberately
 * does not stop at the first failure: an agent fixing its writes should see every problem at once
 * rather than one per attempt. Validators run one at a time, cheapest first (stable: equal costs
 * keep registration order), so the order of results and failures is deterministic.
 * Throws TypeError for malformed validators or files; a validator's own error is a failure instead.
 */
export async function runValidators(validators: readonly Validator[], files: Iterable<ValidatedFile>): Promise<ValidationReport> {
  if (!Array.isArray(validators)) throw new TypeError('runValidators: validators must be an array')
  const checked = validators.map((v, i) => {
    const valid = checkValidator(v, `validators[${i}]`)
    return { validator: v, cost: valid.cost ?? 0, matches: pathMatcher(typeof valid.match === 'string' ? [valid.match] : valid.match) }
  })
  // Array.prototype.sort is stable (ES2019), which gives the registration-order tie-break.
  checked.sort((a, b) => a.cost - b.cost)

  if (files == null || typeof (files as Partial<Iterable<unknown>>)[Symbol.iterator] !== 'function') {
    throw new TypeError('runValidators: files must be an iterable of { path, content }')
  }
  // Materialised once: every validator walks the files, and a generator can only be walked once.
  const list = Array.from(files, (file, i) => checkFile(file, `files[${i}]`))

  const failures: ValidationFailure[] = []
  const results: ValidationResult[] = []
  for (const { validator, matches } of checked) {
    for (const { path, content } of list) {
      if (!matches(path)) continue
      const message = await runOne(validator, content, path)
      if (message === undefined) results.push({ path, validator: validator.name, ok: true })
      else {
        results.push({ path, validator: validator.name, ok: false, message })
        failures.push({ path, validator: validator.name, message })
      }
    }
  }
  return { failures, results }
}

// Validators come from users (possibly plain JS), so their shape is checked before anything runs:
// a typo should fail loudly at the call, not as a mysterious rejection of every commit. Four
// fields checked by hand: the core does not carry a schema library for them.

const isGlob = (value: unknown) => typeof value === 'string' && value.length > 0

function checkValidator(value: unknown, where: string): Validator {
  if (typeof value !== 'object' || value === null) throw new TypeError(`runValidators: ${where} must be an object`)
  const { name, match, cost, validate } = value as Partial<Record<keyof Validator, unknown>>
  const problems: string[] = []
  if (typeof name !== 'string' || name === '') problems.push('name must be a non-empty string')
  if (!isGlob(match) && !(Array.isArray(match) && match.every(isGlob))) problems.push('match must be a glob or an array of globs')
  if (cost !== undefined && !Number.isFinite(cost)) problems.push('cost must be a finite number')
  if (typeof validate !== 'function') problems.push('validate must be a function')
  if (problems.length > 0) throw new TypeError(`runValidators: ${problems.map((problem) => `${where}.${problem}`).join('; ')}`)
  return value as Validator
}

function checkFile(value: unknown, where: string): ValidatedFile {
  if (typeof value !== 'object' || value === null) throw new TypeError(`runValidators: ${where} must be an object { path, content }`)
  const { path, content } = value as Partial<Record<keyof ValidatedFile, unknown>>
  const problems: string[] = []
  if (typeof path !== 'string') problems.push('path must be a string')
  // Tag check rather than instanceof so Buffers and other realms' Uint8Arrays pass.
  if (!ArrayBuffer.isView(content) || Object.prototype.toString.call(content) !== '[object Uint8Array]') problems.push('content must be a Uint8Array')
  if (problems.length > 0) throw new TypeError(`runValidators: ${problems.map((problem) => `${where}.${problem}`).join('; ')}`)
  return { path: path as string, content: content as Uint8Array }
}

/** The failure message, or undefined when the validator passed. */
async function runOne(validator: Validator, content: Uint8Array, path: string): Promise<string | undefined> {
  const rejected = `${validator.name} rejected ${path}`
  let outcome: unknown
  try {
    // Called as a method so class-based validators keep their `this`.
    outcome = await validator.validate(content, path)
  } catch (error) {
    return describeError(error) || rejected
  }
  if (outcome === true || outcome === undefined || outcome === null) return undefined
  if (outcome === false) return rejected
  if (typeof outcome === 'string') return outcome || rejected
  // Fail closed: an unexpected return value is a broken validator, and a broken check must not pass.
  return `${validator.name} returned ${typeof outcome}, expected boolean, string or undefined (${path})`
}
