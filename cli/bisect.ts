/**
 * `rewindfs bisect --dir <project> --store <dir> [--from <checkpoint>] [--to <checkpoint>]
 * [--granularity operation|checkpoint] [--timeout <seconds>] [--concurrency <n>] -- <command…>`:
 * which operation of the stored session broke the command, as `git bisect run` answers it for
 * commits. The store is opened read-only (bisect records nothing, so it works beside a running MCP
 * server); a line per probe goes to stderr, the answer and its diff to stdout. Interrupted (Ctrl-C,
 * SIGTERM, SIGHUP), it kills the probes running, closes the workspace (their temp directories go)
 * and ends by that signal.
 */
import type { BisectPoint, BisectProbe, BisectProgress, BisectResult, BisectState, Operation, Workspace } from '../src/index.js'
import type { Options } from './arguments.js'
import { patchLines } from './inspect.js'
import { type Json, type Outcome, iso, pathsText } from './outcome.js'
import { openProject } from './project.js'
import { commandLine, execOptions } from './run.js'
import { colourful, palette, stdoutPalette } from './terminal.js'

const describe = (op: Operation) => `${op.id} ${op.type} ${pathsText(op.paths)}${op.description ? ` (${op.description})` : ''}`

function operationJson(op: Operation): { [key: string]: Json | undefined } {
  return { id: op.id, seq: op.seq, type: op.type, time: iso(op.time), paths: [...op.paths], ...(op.description !== undefined ? { description: op.description } : {}) }
}

function stateJson(state: BisectState): { [key: string]: Json | undefined } {
  return {
    kind: state.kind,
    label: state.label,
    operationSeq: state.operationSeq,
    ...(state.operation ? { operation: state.operation.id } : {}),
    ...(state.checkpoint ? { checkpoint: state.checkpoint.name } : {}),
  }
}

function probeJson(probe: BisectProbe): { [key: string]: Json | undefined } {
  return {
    state: stateJson(probe.state),
    verdict: probe.verdict,
    exitCode: probe.exitCode,
    timedOut: probe.timedOut,
    durationMs: probe.durationMs,
    ...(probe.reason !== undefined ? { reason: probe.reason } : {}),
    ...(probe.repeat ? { repeat: true } : {}),
  }
}

/** --from / --to: a checkpoint (id or name) when one is called that, else an operation id. */
function point(ws: Workspace, value: string | undefined): BisectPoint | undefined {
  if (value === undefined) return undefined
  if (ws.checkpoints().some((c) => c.id === value || c.name === value)) return value
  if (ws.history().some((op) => op.id === value)) return { operation: value }
  throw Object.assign(new Error(`no checkpoint or operation named '${value}' in this session (rewindfs checkpoints / log list them)`), { code: 'ENOENT' })
}

/** One line per probe, as it ends: which state, what the command said, what is left. */
export function probeLine(probe: BisectProbe, progress: BisectProgress, count: number, colour: boolean): string {
  const paint = palette(colour)
  const verdict = probe.verdict === 'good' ? paint.green('good') : probe.verdict === 'bad' ? paint.red('bad') : paint.yellow('skip')
  const how = probe.reason ?? `exit ${probe.exitCode}`
  const left = probe.repeat ? 'checking the answer again' : progress.left === 0 ? 'nothing left between' : `${progress.left} state(s) left, about ${progress.rounds} more probe round(s)`
  return `bisect: probe ${count} ${probe.state.label}: ${verdict} (${how}, ${probe.durationMs} ms); ${paint.dim(left)}`
}

export function resultLines(result: BisectResult): string[] {
  const paint = stdoutPalette()
  const exact = result.suspects.length === 1
  const lines = exact
    ? [`${paint.bold(result.suspects[0].id)} is the first bad operation`, `  ${describe(result.suspects[0]).slice(result.suspects[0].id.length + 1)}  ${paint.dim(iso(result.suspects[0].time))}`]
    : [
        paint.bold(`the first bad operation is one of these ${result.suspects.length}:`),
        ...result.suspects.map((op) => `  ${describe(op)}`),
      ]
  lines.push(paint.dim(`last good: ${result.lastGood.label}`), paint.dim(`first bad: ${result.firstBad.label}`))
  for (const { state, reason } of result.skipped) lines.push(paint.yellow(`skipped: ${state.label}: ${reason}`))
  if (result.diff !== '') lines.push('', ...patchLines(result.diff, paint).map((line) => line.slice(4)))
  const probed = result.probes.reduce((sum, p) => sum + p.durationMs, 0)
  lines.push('', paint.dim(`${result.probes.length} probe(s), ${(probed / 1000).toFixed(1)} s running the command; the workspace and its history are unchanged`))
  return lines
}

export async function bisect(options: Options, words: readonly string[]): Promise<Outcome> {
  const { ws } = await openProject('bisect', options, 'read')
  const ended = new AbortController()
  const end = (signal: NodeJS.Signals) => ended.abort(signal)
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
  for (const signal of signals) process.on(signal, end)
  try {
    const colour = colourful(process.stderr)
    let count = 0
    const { stdio: _stdio, ...exec } = execOptions(options, 'pipe')
    const from = point(ws, options.from)
    const to = point(ws, options.to)
    const result = await ws.bisect(commandLine(words), {
      ...exec,
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      ...(options.granularity ? { granularity: options.granularity } : {}),
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      onProbe: (probe, progress) => process.stderr.write(probeLine(probe, progress, ++count, colour) + '\n'),
      signal: ended.signal,
    })
    return {
      data: {
        firstBad: stateJson(result.firstBad),
        lastGood: stateJson(result.lastGood),
        suspects: result.suspects.map(operationJson),
        skipped: result.skipped.map(({ state, reason }) => ({ state: stateJson(state), reason })),
        probes: result.probes.map(probeJson),
        diff: result.diff,
      },
      lines: resultLines(result),
    }
  } finally {
    await ws.close()
    for (const signal of signals) process.off(signal, end)
    // With no listener left, the signal's default action ends this process (128 + its number to a shell).
    if (ended.signal.aborted) process.kill(process.pid, ended.signal.reason as NodeJS.Signals)
  }
}
