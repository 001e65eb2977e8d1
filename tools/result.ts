/**
 * What every tool returns. One shape for success and one for failure, so a model reads an error
 * like any other result and a host never has to catch: `run` does not throw.
 */
import type { JsonValue } from '../src/engine/state.js'

export interface ToolError {
  /** A Node errno code (ENOENT, EEXIST…) for fs errors, otherwise a tool code (see README). */
  readonly code: string
  readonly message: string
  /** Input problems, one per field, for EINVALIDINPUT. */
  readonly issues?: readonly { readonly path: string; readonly message: string }[]
  /** Machine-readable context, e.g. the operations that block an undo. */
  readonly details?: { readonly [key: string]: JsonValue }
}

export type ToolResult<T = unknown> =
  | { readonly isError: false; readonly result: T }
  | { readonly isError: true; readonly error: ToolError }

/** Thrown inside a tool for a refusal with a tool code; `run` turns it into a ToolResult. */
export class ToolFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: { readonly [key: string]: JsonValue },
  ) {
    super(message)
    this.name = 'ToolFailure'
  }
}

/** Any thrown value as a ToolError: fs errors keep Node's code and message. */
export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolFailure) return { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    // Validators refusing a transaction (run_command's changes) carry no errno-style code of their own.
    const fallback = error.name === 'ValidationError' ? 'EVALIDATION' : error instanceof TypeError || error instanceof RangeError ? 'EINVAL' : 'EINTERNAL'
    return { code: typeof code === 'string' ? code : fallback, message: error.message.replace(/^rewindfs: /, '') }
  }
  return { code: 'EINTERNAL', message: String(error) }
}
