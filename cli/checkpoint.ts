/**
 * `rewindfs checkpoint <name> --dir <project> --store <store>`: a named checkpoint of the workspace
 * as it is now (O(1), as ws.checkpoint), for `restore` and `diff` to go back to or compare with
 * later: what the MCP server's manage_checkpoint makes, from the command line.
 */
import type { Options } from './arguments.js'
import { type Outcome, checkpointJson, suggestedCommand } from './outcome.js'
import { openProject } from './project.js'
import { storeOptions } from './store-option.js'
import { stdoutPalette } from './terminal.js'

export async function checkpoint(options: Options, name: string): Promise<Outcome> {
  const { ws, dir } = await openProject('checkpoint', options, 'write')
  try {
    const made = await ws.checkpoint({ name })
    await ws.sync()
    const paint = stdoutPalette()
    // The same session of the same store, pasteable as printed (the store's password left out).
    const { options: named, note } = storeOptions(options.store!, options.session)
    const restore = suggestedCommand('restore', [made.name], [['dir', dir], ...named])
    return {
      data: checkpointJson(made),
      lines: [`${paint.bold('checkpoint')} ${made.name} (${made.id})`, paint.dim(`${restore} brings the workspace back to it${note ? ` (${note})` : ''}`)],
    }
  } finally {
    await ws.close()
  }
}
