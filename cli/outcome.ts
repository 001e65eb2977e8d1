/** What a command produced: JSON for --json, lines for people, and the exit code. */
import type { Change } from '../src/diff.js'
import type { Checkpoint } from '../src/workspace.js'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json | undefined }

export interface Outcome {
  readonly data: { [key: string]: Json | undefined }
  readonly lines: readonly string[]
  readonly exitCode?: number
}

export const iso = (time: number): string => new Date(time).toISOString()

/** Paths an operation touched shown to people: a command that wrote 20 000 files is one line, not 20 000 names (--json has them all). */
export const PATHS_SHOWN = 8

/**
 * A path as a line of text shows it: one holding a control character (a newline, an escape a
 * command's file name carried) is quoted as JSON writes it, as git quotes such names, so it is
 * one line and cannot drive the terminal. --json gives it as it is.
 */
export function shownPath(path: string): string {
  return /[\u0000-\u001f\u007f-\u009f]/.test(path) ? JSON.stringify(path) : path
}

/** One word for a POSIX shell: as it is when plain, else single-quoted (a ' in it as '\''). */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/**
 * A command people are told to run next, to paste into a POSIX shell as it is printed: every word
 * quoted as it needs (a URL's '&' would end the command there, a '?' match files), an option's value
 * that starts with '-' joined to it (--dir=-x: parsed as an option otherwise), and positionals after
 * the options and a '--' when one of them starts with '-'. Several commands are alternatives taking
 * the same words, shown as `rewindfs diff / undo / flush --dir …`: one of them is run.
 */
export function suggestedCommand(command: string | readonly string[], positionals: readonly string[], options: readonly (readonly [name: string, value: string])[]): string {
  const words: string[] = []
  const flags = options.flatMap(([name, value]) => (value.startsWith('-') ? [`--${name}=${value}`] : [`--${name}`, value]))
  if (positionals.some((word) => word.startsWith('-'))) words.push(...flags, '--', ...positionals)
  else words.push(...positionals, ...flags)
  const commands = typeof command === 'string' ? [command] : command
  return ['rewindfs', commands.map(shellWord).join(' / '), ...words.map(shellWord)].join(' ')
}

export function pathsText(paths: readonly string[]): string {
  const shown = paths.slice(0, PATHS_SHOWN).map(shownPath).join(', ')
  return paths.length > PATHS_SHOWN ? `${shown} … and ${paths.length - PATHS_SHOWN} more` : shown
}

export function changeJson(change: Change, withPatch: boolean): { [key: string]: Json | undefined } {
  return { path: change.path, type: change.type, entry: change.entry, ...(withPatch && change.patch !== undefined ? { patch: change.patch } : {}) }
}

export function checkpointJson(checkpoint: Checkpoint): { [key: string]: Json | undefined } {
  return {
    id: checkpoint.id,
    name: checkpoint.name,
    kind: checkpoint.kind,
    seq: checkpoint.seq,
    createdAt: iso(checkpoint.createdAt),
    session: checkpoint.session,
    ...(checkpoint.description !== undefined ? { description: checkpoint.description } : {}),
    ...(checkpoint.superseded ? { superseded: true } : {}),
    ...(checkpoint.broken ? { broken: true } : {}),
  }
}
