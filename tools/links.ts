/**
 * ENOENT explained when a link is the cause. A symbolic link whose target the workspace does not
 * hold (an absolute one out of the project, '../..' past its root, or one to nothing) reads as
 * missing to these tools, while ls shows it and a command follows it on the host: read_file of
 * 'data/x.csv' under data -> /mnt/data answered "no such file", write_file "ENOENT ... mkdir
 * '/data'", and the agent was left to guess why a file it could see was not there.
 */
import type { Workspace } from '../src/workspace.js'
import { resolvePath } from './operations.js'
import type { ToolResult } from './result.js'
import type { AgentTool } from './tool.js'

/** The inputs that name one path (the host-path mapping in index.ts reads them too). */
export const PATH_FIELDS = ['path', 'from', 'to', 'cwd'] as const

/** Whether a relative target, from the directory `dir`, climbs past the root (where the workspace folds '..' but the host goes on). */
function climbsPastRoot(dir: string, target: string): boolean {
  let depth = dir.split('/').filter(Boolean).length
  for (const part of target.split('/')) {
    if (part === '..') depth--
    else if (part !== '' && part !== '.') depth++
    if (depth < 0) return true
  }
  return false
}

/** The first link on `path` (itself included) whose target the workspace does not hold. */
async function unheldLink(ws: Workspace, path: string): Promise<{ link: string; target: string } | undefined> {
  let at = ''
  for (const part of path.split('/').filter(Boolean)) {
    const dir = at || '/'
    at += '/' + part
    try {
      if (!(await ws.fs.promises.lstat(at)).isSymbolicLink()) continue
    } catch {
      return undefined // missing for another reason
    }
    const target = String(await ws.fs.promises.readlink(at))
    if (!target.startsWith('/') && climbsPastRoot(dir, target)) return { link: at, target }
    try {
      await ws.fs.promises.stat(at)
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') return undefined
      return { link: at, target }
    }
  }
  return undefined
}

/** The tool with its ENOENT errors naming the link that caused them, when one did. */
export function withLinkHints(ws: Workspace, tool: AgentTool): AgentTool {
  return {
    ...tool,
    async run(input: unknown): Promise<ToolResult> {
      const outcome = await tool.run(input)
      if (!outcome.isError || outcome.error.code !== 'ENOENT' || input === null || typeof input !== 'object') return outcome
      try {
        for (const field of PATH_FIELDS) {
          const value = (input as Record<string, unknown>)[field]
          if (typeof value !== 'string' || value === '') continue
          const found = await unheldLink(ws, resolvePath(ws, value))
          if (found === undefined) continue
          const message =
            `${outcome.error.message}; '${found.link}' is a symbolic link to '${found.target}', which the workspace does not hold ` +
            '(a link out of the project, or to nothing): these tools do not follow links out of the project. A command on the host ' +
            'follows it, but what it changes there is not recorded, undoable or committed'
          return { isError: true, error: { ...outcome.error, message, details: { ...outcome.error.details, link: found.link, target: found.target } } }
        }
      } catch {
        // The hint is a courtesy: the error stands as it was.
      }
      return outcome
    },
  }
}
