/**
 * `rewindfs shell --dir <project> [--store <dir>]`: an interactive $SHELL in the workspace over
 * the project, its prompt marked `(rewindfs)`. Everything done in it is recorded as one operation
 * when it exits (diff, undo and flush work on it afterwards); the project on disk is untouched.
 * Its exit status is the shell's, as `rewindfs run` gives the command's.
 */
import tty from 'node:tty'
import type { Options } from './arguments.js'
import { exitCodeOf, runInWorkspace } from './run.js'
import { UsageError } from './usage.js'

/**
 * The command that starts the shell. bash reads ~/.bashrc (which sets PS1) and then gets the mark
 * from an rc file made inside the command's own /tmp; other shells get it through PS1.
 */
export function shellCommand(shell: string): string {
  const mark = '(rewindfs) '
  if (/(^|\/)bash$/.test(shell)) {
    const rc = ['[ -f ~/.bashrc ] && . ~/.bashrc', `PS1="${mark}\${PS1-\\$ }"`, 'rm -f "$REWINDFS_RC"; unset REWINDFS_RC'].map((line) => `'${line.replaceAll("'", `'\\''`)}'`).join(' ')
    return `REWINDFS_RC=$(mktemp) && export REWINDFS_RC && printf '%s\\n' ${rc} > "$REWINDFS_RC" && exec '${shell}' --rcfile "$REWINDFS_RC" -i`
  }
  return `PS1="${mark}\${PS1-\\$ }" exec '${shell.replaceAll("'", `'\\''`)}' -i`
}

export async function shell(options: Options): Promise<number> {
  if (options.json) throw new UsageError('shell has no --json output (it is interactive)')
  // tty.isatty, not process.stdin: opening that stream would make the terminal non-blocking under the shell.
  if (!tty.isatty(0)) throw new UsageError('shell needs a terminal on stdin (for one command, use rewindfs run -- <command>)')
  const program = process.env.SHELL || '/bin/sh'
  process.stderr.write(`rewindfs: a shell in the workspace over ${options.dir}; exit to record what it did\n`)
  // The operation is named after the shell, not the start-up line that marks its prompt.
  const { result, lines } = await runInWorkspace(options, shellCommand(program), false, `exec: ${program} (rewindfs shell)`)
  for (const line of lines) process.stderr.write(line + '\n')
  // `exit 4` in the shell is this command's 4, as ssh and su pass a session's status on.
  return exitCodeOf(result)
}
