#!/usr/bin/env node
/**
 * The rewindfs command: `demo` (what `npm start` runs), `mcp` (the MCP stdio server), the store
 * commands status, log, checkpoints, checkpoint, diff, restore, undo, flush, verify and repair, sessions (of a
 * shared store), run and shell (commands in the workspace), and bisect (which operation broke a
 * command). `rewindfs --help` documents the
 * options and exit codes (usage.ts).
 */
import { type Invocation, type Options, parseCommandLine, wantsJson } from './arguments.js'
import { bisect } from './bisect.js'
import { checkpoint } from './checkpoint.js'
import { flush, restore } from './change.js'
import { demo } from './demo.js'
import { describeFailure, failureJson } from './failure.js'
import { checkpoints, diff, log, status } from './inspect.js'
import { repair, verify } from './store-check.js'
import { sessions } from './sessions.js'
import { run as runCommand } from './run.js'
import { shell } from './shell.js'
import { undo } from './undo.js'
import type { Outcome } from './outcome.js'
import { colourful, palette } from './terminal.js'
import { EXIT, UsageError, commandHelp, help } from './usage.js'
import { packageVersion } from './version.js'

async function run(invocation: Extract<Invocation, { kind: 'run' }>): Promise<number> {
  const { command, positionals, options } = invocation
  if (options.json && (command === 'demo' || command === 'mcp')) {
    throw new UsageError(`${command} has no --json output${command === 'mcp' ? ' (it speaks JSON-RPC on stdout already)' : ''}`)
  }
  switch (command) {
    case 'demo':
      await demo()
      return EXIT.ok
    case 'mcp': {
      // The MCP SDK costs most of a second to load: only the server pays for it.
      const { serveMcp } = await import('./mcp.js')
      return serveMcp(options)
    }
    case 'status':
      return print(await status(options), options)
    case 'log':
      return print(await log(options), options)
    case 'checkpoints':
      return print(await checkpoints(options), options)
    case 'checkpoint':
      return print(await checkpoint(options, positionals[0]), options)
    case 'diff':
      return print(await diff(options, positionals[0]), options)
    case 'restore':
      return print(await restore(options, positionals[0]), options)
    case 'undo':
      return print(await undo(options), options)
    case 'flush':
      return print(await flush(options), options)
    case 'verify':
      return print(await verify(options), options)
    case 'repair':
      return print(await repair(options), options)
    case 'sessions':
      return print(await sessions(options), options)
    case 'run':
      return runCommand(options, positionals)
    case 'shell':
      return shell(options)
    case 'bisect':
      return print(await bisect(options, positionals), options)
  }
}

function print(outcome: Outcome, options: Options): number {
  if (options.json) process.stdout.write(JSON.stringify(outcome.data, null, 2) + '\n')
  else for (const line of outcome.lines) process.stdout.write(line + '\n')
  return outcome.exitCode ?? EXIT.ok
}

/**
 * A reader that went away (`rewindfs log | head`) closes the pipe: what is left to print is dropped,
 * as git and ls stop, and the command itself runs to its end (what it changes is not cut short by
 * its printing). Node's default, an unhandled 'error' event, printed a stack trace instead.
 */
function quietOnClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
    })
  }
}

async function main(argv: readonly string[]): Promise<number> {
  // The MCP server's stdout is its protocol: a closed one ends it as the SDK decides.
  if (argv[0] !== 'mcp') quietOnClosedPipes()
  try {
    const invocation = parseCommandLine(argv)
    if (invocation.kind === 'help') {
      process.stdout.write((invocation.command ? commandHelp(invocation.command) : help()) + '\n')
      return EXIT.ok
    }
    if (invocation.kind === 'version') {
      process.stdout.write(packageVersion() + '\n')
      return EXIT.ok
    }
    return await run(invocation)
  } catch (error) {
    const failure = describeFailure(error)
    if (wantsJson(argv)) process.stdout.write(JSON.stringify(failureJson(failure), null, 2) + '\n')
    else {
      const { red } = palette(colourful(process.stderr))
      process.stderr.write(`rewindfs: ${red(failure.error.message)}\n`)
      if (failure.exitCode === EXIT.usage) process.stderr.write('Run rewindfs --help for the commands, options and exit codes.\n')
      else if (failure.exitCode === EXIT.failure && failure.error.code === 'EINTERNAL' && error instanceof Error) process.stderr.write(`${error.stack}\n`)
    }
    return failure.exitCode
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
