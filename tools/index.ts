/**
 * `rewindfs/tools`: the workspace as agent tools. Each tool is `{ name, description, inputSchema,
 * run }`: inputSchema is the JSON Schema of its input, and `run` validates the input and resolves
 * to `{ isError: false, result }` or `{ isError: true, error: { code, message } }`, never throwing,
 * so a host passes either straight back to the model. Every result stays within a size budget.
 */
import { type FlushTarget, isFlushTarget } from '../src/flush/target.js'
import type { Workspace } from '../src/workspace.js'
import { bisectTool } from './bisect.js'
import { type BudgetOptions, resolveBudget, withinBudget } from './budget.js'
import { checkpointTool } from './checkpoints.js'
import { type CommandOptions, commandTool } from './command.js'
import { commitTool } from './commit.js'
import { fileTools } from './files.js'
import { findTool } from './find.js'
import { historyTool } from './history.js'
import { PATH_FIELDS, withLinkHints } from './links.js'
import type { ToolResult } from './result.js'
import { rollbackTool } from './rollback.js'
import { searchTool } from './search.js'
import { type AgentTool, acknowledged } from './tool.js'
import { undoTool } from './undo.js'

export type { AgentTool, JsonSchema } from './tool.js'
export type { ToolError, ToolResult } from './result.js'
export type { ToolOperationType } from './schemas.js'
export type { BudgetOptions } from './budget.js'
export type { CommandOptions, CommandSandbox } from './command.js'
export * as schemas from './schemas.js'
export { isConfigPath } from './operations.js'

/** Tools that only read: they run beside each other, after the changing calls made before them, and wait for no commit. */
const READ_ONLY = new Set(['read_file', 'list_directory', 'operation_history', 'search_files', 'find_files'])

export interface AgentToolsOptions {
  /** Where commit_changes writes (ws.flush); without one there is no commit_changes tool. */
  flushTarget?: FlushTarget
  /**
   * Offer run_command (ws.exec) and find_breaking_change (ws.bisect), with the sandbox to run every command in. Off by default: a command
   * runs on the host and can reach what the user can outside the workspace.
   */
  commands?: boolean | CommandOptions
  /** Size budget of the results, in characters of JSON (default 8000; read_file's content 100 000), the bytes of an image read_file returns (imageBytes, default 3.75 MiB) and its pixels a side (imageSide, default 8000). */
  budget?: BudgetOptions
  /**
   * The workspace path an absolute host path of the project stands for, any other path as given
   * (directory(root)'s shownTarget). Commands see the project at its host path, so a model copies
   * such paths from their output (pwd, a compiler's errors) into the other tools, where / is the
   * project's root: read_file then answered ENOENT naming a file that exists, and write_file made
   * a copy of the host path's folders inside the project.
   */
  hostPath?: (path: string) => string
}

/** The inputs that name lists of paths, and tools whose `pattern` is a glob over paths (search_files' is text). */
const PATH_LISTS = ['target_files', 'include', 'exclude', 'include_files', 'exclude_files'] as const
const GLOB_PATTERN = new Set(['find_files'])

/** The tool with the host paths in its input taken as the workspace paths they stand for. */
function withHostPaths(tool: AgentTool, hostPath: (path: string) => string): AgentTool {
  const map = (value: unknown) => (typeof value === 'string' && value.startsWith('/') ? hostPath(value) : value)
  const fields: string[] = [...PATH_FIELDS, ...(GLOB_PATTERN.has(tool.name) ? ['pattern'] : [])]
  return {
    ...tool,
    run(input: unknown): Promise<ToolResult> {
      // Anything other than a plain object, or one that throws when read, is left for the tool's own validation to refuse.
      if (input === null || typeof input !== 'object' || Array.isArray(input)) return tool.run(input)
      let mapped: Record<string, unknown>
      try {
        mapped = { ...(input as Record<string, unknown>) }
        for (const field of fields) if (field in mapped) mapped[field] = map(mapped[field])
        for (const field of PATH_LISTS) if (Array.isArray(mapped[field])) mapped[field] = (mapped[field] as unknown[]).map(map)
      } catch {
        return tool.run(input)
      }
      return tool.run(mapped)
    },
  }
}

export function createAgentTools(ws: Workspace, options: AgentToolsOptions = {}): AgentTool[] {
  if (options.flushTarget !== undefined && !isFlushTarget(options.flushTarget)) {
    throw new TypeError('rewindfs/tools: flushTarget must be a FlushTarget (id, versions, apply, flusher), e.g. directory(path) from rewindfs/adapters/node-fs')
  }
  const budget = resolveBudget(options.budget)
  const commands = options.commands === true ? {} : options.commands || undefined
  const made = [
    ...fileTools(ws, budget),
    searchTool(ws, budget),
    findTool(ws, budget),
    ...(commands ? [commandTool(ws, budget, commands), bisectTool(ws, budget, commands)] : []),
    undoTool(ws, budget),
    rollbackTool(ws, budget),
    checkpointTool(ws, budget),
    historyTool(ws, budget),
    ...(options.flushTarget ? [commitTool(ws, options.flushTarget, budget)] : []),
  ]
  const { hostPath } = options
  const hinted = made.map((tool) => withLinkHints(ws, tool))
  const tools = hostPath ? hinted.map((tool) => withHostPaths(tool, hostPath)) : hinted
  // Every tool goes through one runner: changes in turn, each result only once durable.
  return acknowledged(
    ws,
    tools.map((tool) => withinBudget(tool, tool.name === 'read_file' ? budget.readChars + 2000 : budget.chars)),
    READ_ONLY,
  )
}

/** Runs the tool a model named; an unknown name is a tool error too (EUNKNOWNTOOL). */
export function callTool(tools: readonly AgentTool[], name: string, input: unknown): Promise<ToolResult> {
  const tool = tools.find((candidate) => candidate.name === name)
  if (tool) return tool.run(input)
  const names = tools.map((candidate) => candidate.name).join(', ')
  return Promise.resolve({ isError: true, error: { code: 'EUNKNOWNTOOL', message: `there is no tool named '${String(name)}'; the tools are ${names}` } })
}
