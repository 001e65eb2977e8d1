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
