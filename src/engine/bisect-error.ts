/**
 * The error a bisection ends with when it cannot conclude, apart from the search itself so that
 * `import 'rewindfs'` (which exports it) does not load the search (engine/bisect.ts, which an exec
 * runner carries).
 */
import type { BisectProbe, BisectState } from './bisect.js'

export type BisectErrorCode = 'EBISECTFROM' | 'EBISECTTO' | 'EBISECTSKIP' | 'EFLAKY'

/** The search could not conclude: `from` fails, `to` passes, an end cannot be evaluated, or the command is flaky. */
export class BisectError extends Error {
  constructor(
    readonly code: BisectErrorCode,
    message: string,
    readonly probes: BisectProbe[],
    readonly skipped: { state: BisectState; reason: string }[],
  ) {
    super(`rewindfs: bisect: ${message}`)
    this.name = 'BisectError'
  }
}

