/**
 * The flush engine as a capability a flush target carries (FlushTarget.flusher): targets import it
 * through rewindfs/adapter-kit; the core reaches it only through a target it was given.
 */
import { differences, flush } from './flush.js'
import type { FlushEngine } from './target.js'

export const flushEngine: FlushEngine = { flush, differences }
