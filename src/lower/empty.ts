import { MemoryTreeBuilder } from './fixture.js'
import type { LowerSource } from './source.js'

/** Only the root directory: a workspace that starts from nothing. */
export function emptySource(): LowerSource {
  return new MemoryTreeBuilder('rewindfs: empty').build('empty')
}
