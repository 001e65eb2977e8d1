/** Any error as an exit code and a message (and JSON for --json): the codes documented in the help. */
import { EXIT, UsageError } from './usage.js'
import type { Json } from './outcome.js'

export interface Failure {
  readonly exitCode: number
  readonly error: { code: string; message: string; conflicts?: string[] }
}

const NOT_FOUND = new Set(['ENOENT', 'ENOTDIR'])

export function describeFailure(error: unknown): Failure {
  if (error instanceof UsageError) return { exitCode: EXIT.usage, error: { code: error.code, message: error.message } }
  const code = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : 'EINTERNAL'
  const message = (error instanceof Error ? error.message : String(error)).replace(/^rewindfs: /, '')
  if (code === 'ECONFLICT') {
    const listed = (error as { conflicts?: unknown }).conflicts
    const conflicts = Array.isArray(listed) ? listed.map((c: unknown) => (typeof c === 'string' ? c : String((c as { path?: unknown })?.path))) : []
    return { exitCode: EXIT.conflict, error: { code, message: message.replace(/pass force: true/, 'pass --force'), conflicts } }
  }
  return { exitCode: NOT_FOUND.has(code) ? EXIT.notFound : EXIT.failure, error: { code, message } }
}

export function failureJson(failure: Failure): { error: { [key: string]: Json } } {
  return { error: { ...failure.error } }
}
