/** Exit codes, usage errors and the help text (the one place the command line is documented). */

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  /** Refused because the project changed underneath (ECONFLICT); --force overrides. */
  conflict: 3,
  /** A directory, store or checkpoint that does not exist. */
  notFound: 4,
} as const

/** A bad command line: exit code 2 with the message and a pointer to the help. */
export class UsageError extends Error {
  readonly code = 'EUSAGE'
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

const PROJECT = '--dir <project> --store <store> [--session <name>]'

export const COMMANDS = {
  demo: { usage: 'demo', summary: 'the write / checkpoint / break / restore story in memory (what npm start runs; the default)' },
  mcp: {
    usage: 'mcp --dir <project> [--store <store>] [--session <name>] [--allow-commands [--no-network] [--read-only-host [--writable <path>]…]] [--allow-links-outside]',
    summary:
      'serve the agent tools over MCP stdio; nothing on disk changes until commit_changes (in memory without --store); ' +
      '--allow-commands adds run_command (a command runs on the host as you, in the sandbox the exec options ask for); --allow-links-outside lets commit_changes write symlinks that point out of the project',
  },
  status: { usage: `status ${PROJECT}`, summary: 'changes against the project, checkpoint count and store health' },
  log: { usage: `log ${PROJECT} [--limit <n>] [--path <path>]`, summary: 'operation history, newest first' },
  checkpoints: { usage: `checkpoints ${PROJECT}`, summary: 'checkpoints, oldest first' },
  checkpoint: { usage: `checkpoint <name> ${PROJECT}`, summary: 'a named checkpoint of the workspace as it is now, for restore and diff to go back to or compare with' },
  diff: { usage: `diff [checkpoint] ${PROJECT} [--patch]`, summary: 'changes against the project, or since a checkpoint; --patch adds unified diffs' },
  restore: {
    usage: `restore <checkpoint> ${PROJECT} [--dry-run] [--patch [--limit <lines>] [--path <path>]] [--force]`,
    summary:
      'bring the workspace back to a checkpoint (the project on disk is untouched until flush); --patch shows at most ' +
      '400 diff lines (--limit changes it), --path only the changes under a path',
  },
  undo: {
    usage: `undo ${PROJECT} [--steps <n>] [--dry-run]`,
    summary: 'take back the newest operation (or n of them: a run, a shell session, an edit) in the workspace, after a checkpoint that restore takes it back with; the project on disk is untouched until flush',
  },
  flush: {
    usage: `flush ${PROJECT} [--dry-run] [--force] [--allow-links-outside]`,
    summary: 'write the workspace changes into the project directory, all or nothing; --allow-links-outside writes symlinks that point out of it (a venv) as they are',
  },
  verify: { usage: 'verify --store <store> [--session <name>]', summary: 'check journal, blobs and metadata without opening the store for writing; exit 1 on any damage' },
  repair: {
    usage: `repair ${PROJECT} [--dry-run]`,
    summary: 'rebuild a damaged store: keep every group commit that still applies, the old journal kept aside; reports what was lost',
  },
  sessions: {
    usage: 'sessions --store <postgres://…|pglite:dir>',
    summary: 'the sessions a shared store holds: last activity, checkpoints, size, and which are being written',
  },
  run: {
    usage: 'run --dir <project> [--store <store>] [--session <name>] [exec options] -- <command…>',
    summary: "run one command in the workspace (the project on disk is untouched) and print its changes; exits with the command's code",
  },
  shell: {
    usage: 'shell --dir <project> [--store <store>] [--session <name>] [exec options]',
    summary: 'an interactive $SHELL in the workspace, prompt marked (rewindfs); on exit everything it did is one operation',
  },
  bisect: {
    usage: `bisect ${PROJECT} [--from <checkpoint>] [--to <checkpoint>] [--granularity <operation|checkpoint>] [--timeout <seconds>] [--concurrency <n>] [exec options] -- <command…>`,
    summary:
      'find the operation after which the command fails (exit 0 good, 125 cannot be tested, else bad), as git bisect run does, ' +
      'probing past states in throwaway views: the workspace, its history and the project are unchanged; a line per probe on stderr',
  },
} as const

export type CommandName = keyof typeof COMMANDS

export function isCommand(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name)
}

export function help(): string {
  const lines = [
    'rewindfs: every file write an agent makes, undoable.',
    '',
    'Usage: rewindfs <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).flatMap((c) => [`  ${c.usage}`, `      ${c.summary}`]),
    '',
    'Options:',
    '  --dir <project>    the project directory: the read-only lower layer and the flush target',
    '  --store <store>    the durable store (journal, blobs, checkpoints): a directory, a PostgreSQL',
    '                     server (postgres://user:password@host/db, ?host=/dir for a unix socket) whose',
    '                     sessions a fleet of machines shares, or a PGlite database (pglite:<dir>)',
    "  --session <name>   the session in the store (default 'main')",
    '  --json             machine-readable output on stdout (all commands but demo and mcp);',
    '                     errors too, as { "error": { "code", "message" } }',
    '  -h, --help         this help (also: rewindfs help <command>)',
    '  -v, --version      the version',
    '',
    'Exec options (run, shell, bisect; mcp with --allow-commands, but --mode):',
    '  --mode <overlay|copy>   force a mode (default: overlay where the kernel allows, else copy)',
    '  --no-network            a private network namespace: loopback only',
    '  --read-only-host        everything outside the project read-only, /tmp private',
    '  --writable <path>       with --read-only-host, a host path that stays writable (repeatable;',
    '                          default: tool caches such as ~/.cache and ~/.npm)',
    '',
    'run and shell keep the session in memory without --store (what the command did is printed and',
    "then gone); with --store it is recorded there for diff, undo and flush. run, shell and bisect start",
    "in your working directory when it is inside the project, else at the project's root.",
    'status, log, checkpoints, diff, verify and bisect (which records nothing) open the store read-only,',
    "so they work while an MCP server holds it; checkpoint, restore, undo, flush, repair, run and shell take the store's",
    'lock. Colour only on a terminal and not with NO_COLOR; flush draws a progress bar on stderr when stderr',
    'is a terminal.',
    '',
    'Exit codes:',
    `  ${EXIT.ok}  ok (run: the command's own exit code; 128 + n when signal n ended it)`,
    `  ${EXIT.failure}  failure (an error the message explains); status, verify: the store has problems`,
    `  ${EXIT.usage}  usage error (unknown command or option, missing argument)`,
    `  ${EXIT.conflict}  conflict refused: the project changed underneath since it was read (--force overrides)`,
    `  ${EXIT.notFound}  not found: no such project directory, store or checkpoint`,
  ]
  return lines.join('\n')
}

export function commandHelp(name: CommandName): string {
  return `Usage: rewindfs ${COMMANDS[name].usage}\n\n${COMMANDS[name].summary}.\nSee rewindfs --help for the options and exit codes.`
}
