/** The command line, parsed strictly: an unknown option or a missing value is a usage error. */
import { parseArgs } from 'node:util'
import { type CommandName, UsageError, isCommand } from './usage.js'

type OptionSpec = { type: 'string' | 'boolean'; short?: string; multiple?: boolean }

const PROJECT: Record<string, OptionSpec> = { dir: { type: 'string' }, store: { type: 'string' }, session: { type: 'string' }, json: { type: 'boolean' } }
const HELP: Record<string, OptionSpec> = { help: { type: 'boolean', short: 'h' } }
/** The sandbox every command runs in (ws.exec's): run, shell, bisect, and mcp's run_command. */
const SANDBOX: Record<string, OptionSpec> = { 'no-network': { type: 'boolean' }, 'read-only-host': { type: 'boolean' }, writable: { type: 'string', multiple: true } }
/** How run and shell run their command (ws.exec's mode and sandbox). */
const EXEC: Record<string, OptionSpec> = { mode: { type: 'string' }, ...SANDBOX }

/** Each command's options and how many positionals it takes. */
const SPECS: Record<CommandName, { options: Record<string, OptionSpec>; positionals: [min: number, max: number, name?: string] }> = {
  // --json is accepted everywhere so demo and mcp can say why it does not apply to them.
  demo: { options: { json: { type: 'boolean' } }, positionals: [0, 0] },
  mcp: { options: { ...PROJECT, 'allow-commands': { type: 'boolean' }, 'allow-links-outside': { type: 'boolean' }, ...SANDBOX }, positionals: [0, 0] },
  status: { options: PROJECT, positionals: [0, 0] },
  log: { options: { ...PROJECT, limit: { type: 'string' }, path: { type: 'string' } }, positionals: [0, 0] },
  checkpoints: { options: PROJECT, positionals: [0, 0] },
  checkpoint: { options: PROJECT, positionals: [1, 1, 'name'] },
  diff: { options: { ...PROJECT, patch: { type: 'boolean' } }, positionals: [0, 1, 'checkpoint'] },
  restore: {
    options: { ...PROJECT, 'dry-run': { type: 'boolean' }, patch: { type: 'boolean' }, force: { type: 'boolean' }, limit: { type: 'string' }, path: { type: 'string' } },
    positionals: [1, 1, 'checkpoint'],
  },
  undo: { options: { ...PROJECT, 'dry-run': { type: 'boolean' }, steps: { type: 'string' } }, positionals: [0, 0] },
  flush: { options: { ...PROJECT, 'dry-run': { type: 'boolean' }, force: { type: 'boolean' }, 'allow-links-outside': { type: 'boolean' } }, positionals: [0, 0] },
  verify: { options: { store: { type: 'string' }, session: { type: 'string' }, json: { type: 'boolean' } }, positionals: [0, 0] },
  sessions: { options: { store: { type: 'string' }, json: { type: 'boolean' } }, positionals: [0, 0] },
  repair: { options: { ...PROJECT, 'dry-run': { type: 'boolean' } }, positionals: [0, 0] },
  run: { options: { ...PROJECT, ...EXEC }, positionals: [1, Number.POSITIVE_INFINITY, 'command'] },
  shell: { options: { ...PROJECT, ...EXEC }, positionals: [0, 0] },
  bisect: {
    options: { ...PROJECT, ...EXEC, from: { type: 'string' }, to: { type: 'string' }, granularity: { type: 'string' }, timeout: { type: 'string' }, concurrency: { type: 'string' } },
    positionals: [1, Number.POSITIVE_INFINITY, 'command'],
  },
}

export type Invocation =
  | { readonly kind: 'help'; readonly command?: CommandName }
  | { readonly kind: 'version' }
  | { readonly kind: 'run'; readonly command: CommandName; readonly positionals: readonly string[]; readonly options: Options }

export interface Options {
  readonly dir?: string
  readonly store?: string
  readonly session?: string
  readonly json: boolean
  readonly limit?: number
  /** undo: how many operations (1–50). */
  readonly steps?: number
  readonly path?: string
  readonly patch: boolean
  readonly dryRun: boolean
  readonly force: boolean
  /** flush, mcp (commit_changes): symlinks whose targets leave the project are written as they are (directory's allowLinksOutside). */
  readonly allowLinksOutside: boolean
  /** mcp: offer run_command. */
  readonly allowCommands: boolean
  /** run and shell: ws.exec's mode and sandbox. */
  readonly mode?: 'overlay' | 'copy'
  readonly noNetwork: boolean
  readonly readOnlyHost: boolean
  readonly writable: readonly string[]
  /** bisect: the states to search between, what to probe, a probe's time limit (ms) and how many run at once. */
  readonly from?: string
  readonly to?: string
  readonly granularity?: 'operation' | 'checkpoint'
  readonly timeout?: number
  readonly concurrency?: number
}

/** Whether --json appears anywhere, so even a usage error can be reported as JSON. */
export function wantsJson(argv: readonly string[]): boolean {
  return argv.includes('--json')
}

export function parseCommandLine(argv: readonly string[]): Invocation {
  const [first, ...rest] = argv
  if (first === undefined) return { kind: 'run', command: 'demo', positionals: [], options: parseOptions('demo', []).options }
  if (first === '-h' || first === '--help') return { kind: 'help' }
  if (first === '-v' || first === '--version') return { kind: 'version' }
  if (first === 'help') {
    if (rest.length === 0) return { kind: 'help' }
    const [name] = rest
    if (rest.length > 1 || !isCommand(name)) throw new UsageError(`help takes one command name; the commands are ${commandList()}`)
    return { kind: 'help', command: name }
  }
  if (first.startsWith('-')) throw new UsageError(`a command comes first, before '${first}'; the commands are ${commandList()}`)
  if (!isCommand(first)) throw new UsageError(`unknown command '${first}'; the commands are ${commandList()}`)
  const { options, positionals, help } = parseOptions(first, rest)
  if (help) return { kind: 'help', command: first }
  return { kind: 'run', command: first, positionals, options }
}

function commandList(): string {
  return Object.keys(SPECS).join(', ')
}

function parseOptions(command: CommandName, args: readonly string[]): { options: Options; positionals: string[]; help: boolean } {
  const spec = SPECS[command]
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: [...args], options: { ...spec.options, ...HELP }, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError(`${command}: ${optionProblem(error)}`)
  }
  const values = parsed.values as Record<string, string | boolean | undefined>
  const help = values.help === true
  const [min, max, name] = spec.positionals
  if (!help && parsed.positionals.length < min) {
    if (name === 'command') throw new UsageError(`${command} needs a command after '--' (rewindfs run --dir <project> -- npm test)`)
    throw new UsageError(name === 'checkpoint' ? `${command} needs a checkpoint (an id or a name)` : `${command} needs a ${name}`)
  }
  if (!help && name !== 'command' && parsed.positionals.slice(0, max).includes('')) throw new UsageError(`${command}: the ${name} must not be empty`)
  if (parsed.positionals.length > max) {
    const extra = parsed.positionals.slice(max).map((p) => `'${p}'`).join(', ')
    throw new UsageError(`${command} takes ${max === 0 ? 'no arguments' : `one ${name}`}; unexpected ${extra}`)
  }
  if (command === 'mcp' && values['allow-commands'] !== true) {
    // Without commands there is nothing to sandbox: a flag that did nothing would be taken for protection.
    const sandbox = Object.keys(SANDBOX).find((key) => values[key] !== undefined)
    if (sandbox !== undefined) throw new UsageError(`mcp: --${sandbox} applies to the commands run_command runs: add --allow-commands`)
  }
  if (values.mode !== undefined && values.mode !== 'overlay' && values.mode !== 'copy') throw new UsageError(`${command}: --mode takes overlay or copy, not '${String(values.mode)}'`)
  if (values.granularity !== undefined && values.granularity !== 'operation' && values.granularity !== 'checkpoint') {
    throw new UsageError(`${command}: --granularity takes operation or checkpoint, not '${String(values.granularity)}'`)
  }
  for (const key of ['dir', 'store', 'session', 'path', 'limit', 'steps', 'from', 'to'] as const) {
    if (values[key] === '') throw new UsageError(`${command}: --${key} needs a non-empty value`)
  }
  let limit: number | undefined
  if (typeof values.limit === 'string') {
    limit = Number(values.limit)
    if (!/^\d+$/.test(values.limit) || !Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`${command}: --limit takes a positive whole number, not '${values.limit}'`)
  }
  let steps: number | undefined
  if (typeof values.steps === 'string') {
    steps = Number(values.steps)
    if (!/^\d+$/.test(values.steps) || steps < 1 || steps > 50) throw new UsageError(`${command}: --steps takes a whole number from 1 to 50, not '${values.steps}'`)
  }
  let timeout: number | undefined
  if (typeof values.timeout === 'string') {
    const seconds = Number(values.timeout)
    if (!/^\d+(\.\d+)?$/.test(values.timeout) || !(seconds > 0)) throw new UsageError(`${command}: --timeout takes a positive number of seconds, not '${values.timeout}'`)
    timeout = Math.round(seconds * 1000)
  }
  let concurrency: number | undefined
  if (typeof values.concurrency === 'string') {
    concurrency = Number(values.concurrency)
    if (!/^\d+$/.test(values.concurrency) || concurrency < 1 || concurrency > 64) throw new UsageError(`${command}: --concurrency takes a whole number from 1 to 64, not '${values.concurrency}'`)
  }
  const text = (key: string) => (typeof values[key] === 'string' ? (values[key] as string) : undefined)
  return {
    help,
    positionals: parsed.positionals,
    options: {
      dir: text('dir'),
      store: text('store'),
      session: text('session'),
      json: values.json === true,
      limit,
      ...(steps !== undefined ? { steps } : {}),
      path: text('path'),
      patch: values.patch === true,
      dryRun: values['dry-run'] === true,
      force: values.force === true,
      allowLinksOutside: values['allow-links-outside'] === true,
      allowCommands: values['allow-commands'] === true,
      ...(values.mode === 'overlay' || values.mode === 'copy' ? { mode: values.mode } : {}),
      noNetwork: values['no-network'] === true,
      readOnlyHost: values['read-only-host'] === true,
      writable: ((parsed.values as Record<string, unknown>).writable as string[] | undefined) ?? [],
      ...(text('from') !== undefined ? { from: text('from') } : {}),
      ...(text('to') !== undefined ? { to: text('to') } : {}),
      ...(values.granularity === 'operation' || values.granularity === 'checkpoint' ? { granularity: values.granularity } : {}),
      ...(timeout !== undefined ? { timeout } : {}),
      ...(concurrency !== undefined ? { concurrency } : {}),
    },
  }
}

/** Node's parseArgs messages name the option; the hint about '--' only confuses here. */
function optionProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.replace(/\. To specify a positional argument[^]*$/, '').replace(/\.$/, '')
}
