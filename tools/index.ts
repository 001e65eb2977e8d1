/**
 * `rewindfs/tools`: the workspace as agent tools. Each tool is `{ name, description, inputSchema,
 * run }`: inputSchema is the JSON Schema of its input, and `run` validates the input and resolves
 * to `{ isError: false, result }` or `{ isError: true, error: { code, message } }`, never throwing,
 * so a host passes either straight back to the model.
 */
import { type FlushTarget, isFlushTarget } from '../src/flush/target.js'
import type { Workspace } from '../src/workspace.js'
import { checkpointTool } from './checkpoints.js'
import { commitTool } from './commit.js'
import { fileTools } from './files.js'
import { historyTool } from './history.js'
import type { ToolResult } from './result.js'
import { rollbackTool } from './rollback.js'
import type { AgentTool } from './tool.js'
import { undoTool } from './undo.js'

export type { AgentTool, JsonSchema } from './tool.js'
export type { ToolError, ToolResult } from './result.js'
export type { ToolOperationType } from './schemas.js'
export * as schemas from './schemas.js'
export { isConfigPath } from './operations.js'

export interface AgentToolsOptions {
  /** Where commit_changes writes (ws.flush); without one there is no commit_changes tool. */
  flushTarget?: FlushTarget
}

export function createAgentTools(ws: Workspace, options: AgentToolsOptions = {}): AgentTool[] {
  if (options.flushTarget !== undefined && !isFlushTarget(options.flushTarget)) {
    throw new TypeError('rewindfs/tools: flushTarget must be a FlushTarget (id, versions, apply), e.g. directory(path) from rewindfs/adapters/node-fs')
  }
  return [
    ...fileTools(ws),
    undoTool(ws),
    rollbackTool(ws),
    checkpointTool(ws),
    historyTool(ws),
    ...(options.flushTarget ? [commitTool(ws, options.flushTarget)] : []),
  ]
}

/** Runs the tool a model named; an unknown name is a tool error too (EUNKNOWNTOOL). */
export function callTool(tools: readonly AgentTool[], name: string, input: unknown): Promise<ToolResult> {
  const tool = tools.find((candidate) => candidate.name === name)
  if (tool) return tool.run(input)
  const names = tools.map((candidate) => candidate.name).join(', ')
  return Promise.resolve({ isError: true, error: { code: 'EUNKNOWNTOOL', message: `there is no tool named '${String(name)}'; the tools are ${names}` } })
}
