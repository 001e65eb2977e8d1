/**
 * `rewindfs mcp`: the agent tools (rewindfs/tools) served over MCP stdio. The project directory is
 * the lower layer and commit_changes' flush target, so nothing on disk changes until the agent
 * commits. The tools carry their JSON Schemas and validate their own input, so the low-level Server
 * passes calls straight through: every failure, a malformed argument or a missing tool name
 * included, is a tool result with isError and the error's JSON as text, naming workspace paths
 * (never the project's host path). Messages arrive through a transport with stated limits
 * (mcp-transport.ts): an oversized or malformed one is answered with an error, and the server
 * keeps serving. A result that changed something is returned once it is durable (the tool runner).
 * A call the client cancels (notifications/cancelled) kills its command; so does the shutdown.
 *
 * tools/call is answered by the fallback handler rather than one registered with
 * CallToolRequestSchema: the SDK checks that schema first and turns `arguments` that are not an
 * object into a JSON-RPC internal error, where the model should get a tool error it can read.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { type CallToolResult, ErrorCode, type JSONRPCRequest, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { isImageResult } from '../tools/images.js'
import { type AgentTool, callTool, createAgentTools } from '../tools/index.js'
import type { ToolError, ToolResult } from '../tools/result.js'
import type { Options } from './arguments.js'
import { DEFAULT_LIMITS, LimitedStdioTransport } from './mcp-transport.js'
import { openWorkspace, projectDirectory } from './project.js'
import { sandboxOptions } from './run.js'
import { storeLabel } from './store-option.js'
import { packageVersion } from './version.js'

/**
 * An error as the model should read it: a host path inside the project (`root`, its real path)
 * becomes the workspace path it stands for. Only a path standing on its own is replaced (quoted,
 * or after a space), not one inside an identifier such as 'directory:/…'.
 */
function inWorkspaceTerms(outcome: ToolResult, root: string): ToolResult {
  if (!outcome.isError || root === '/') return outcome
  const text = JSON.stringify(outcome.error)
  if (!text.includes(root)) return outcome
  const escaped = JSON.stringify(root).slice(1, -1).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') // as JSON text holds it, as a pattern
  const pattern = new RegExp(`(^|[\\s'(]|\\\\")${escaped}(/|(?=[\\s',;:)]|\\\\"|$))`, 'g')
  const scrubbed = text.replace(pattern, (_match, before: string) => `${before}/`)
  return { isError: true, error: JSON.parse(scrubbed) as ToolError }
}

/**
 * The MCP answer for one tool run: the result or error as JSON text. An image (read_file) is an
 * image content item, which the client shows the model as a picture, and the rest of its result
 * as JSON text beside it (the base64 as text would be 5 MB of characters the model cannot see).
 */
function toCallToolResult(outcome: ToolResult): CallToolResult {
  if (!outcome.isError && isImageResult(outcome.result)) {
    const { data, ...rest } = outcome.result
    return { isError: false, content: [{ type: 'image', data, mimeType: rest.mime_type }, { type: 'text', text: JSON.stringify(rest) }] }
  }
  const body = outcome.isError ? { error: outcome.error } : outcome.result
  // Compact: the result budget counts characters of compact JSON, and indentation would add a third.
  return { isError: outcome.isError, content: [{ type: 'text', text: JSON.stringify(body ?? null) }] }
}

const LIMITS = `A call's message may be at most ${DEFAULT_LIMITS.maxMessageBytes / (1024 * 1024)} MiB (larger content: several calls).`

function listing(tools: readonly AgentTool[]): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: `${tool.description} ${LIMITS}`,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    ...(tool.readOnly ? { annotations: { readOnlyHint: true } } : {}),
  }))
}

/** The tool a tools/call request names and its arguments as sent; any other method is not found. */
function toolCall(request: JSONRPCRequest): { name: string; input: unknown } | ToolResult {
  if (request.method !== 'tools/call') throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`)
  const params = request.params as { name?: unknown; arguments?: unknown } | undefined
  if (typeof params?.name !== 'string') {
    const got = params?.name === undefined ? 'none' : `${typeof params.name === 'object' ? (params.name === null ? 'null' : 'an object') : `a ${typeof params.name}`}`
    return { isError: true, error: { code: 'EINVALIDINPUT', message: `tools/call needs params.name, the name of a tool as a string (got ${got}); tools/list lists them` } }
  }
  return { name: params.name, input: params.arguments ?? {} }
}

/** What the commands' sandbox withholds, for the model to expect (a write refused, no network). */
function sandboxNote(options: Options): string {
  const limits = [
    ...(options.noNetwork ? ['they have no network (loopback only)'] : []),
    ...(options.readOnlyHost ? [`everything outside the project is read-only and /tmp is private${options.writable.length > 0 ? ` (writable: ${options.writable.join(', ')})` : ''}`] : []),
  ]
  return limits.length > 0 ? ` Commands run sandboxed: ${limits.join('; ')}.` : ''
}

/** Serves until stdin ends or a signal arrives, then closes the workspace (its store made durable). */
export async function serveMcp(options: Options): Promise<number> {
  const lower = projectDirectory('mcp', options.dir, options.allowLinksOutside)
  const { ws } = await openWorkspace(lower, options)
  if (ws.status.degraded !== undefined) {
    // Serving would hand the agent a partial session that commit_changes could write to disk.
    await ws.close()
    throw Object.assign(new Error(`${ws.status.degraded}; not serving (rewindfs status shows the store's health)`), { code: 'ESTOREUNAVAILABLE' })
  }
  // Aborted at shutdown: a command still running is killed (its result could not be answered), so
  // the server exits at once and leaves no process behind.
  const shutdown = new AbortController()
  // run_command and find_breaking_change ask for their call's signal (the client's cancellation or the shutdown) here.
  const callSignal = new AsyncLocalStorage<AbortSignal>()
  // ws.exec's runner is the project directory's own (directory() carries it): nothing to install.
  const tools = createAgentTools(ws, {
    flushTarget: lower,
    commands: options.allowCommands ? { signal: () => callSignal.getStore(), sandbox: sandboxOptions(options) } : false,
    // Commands see the project at its host path: the same path given to any tool names the same file.
    hostPath: (path) => lower.shownTarget(path),
  })
  const server = new Server(
    { name: 'rewindfs', version: packageVersion() },
    {
      capabilities: { tools: {} },
      instructions:
        `A workspace over ${lower.root}: every write lands in an overlay, undoable with undo_operation and ` +
        'rollback_to_checkpoint. The directory on disk is unchanged until commit_changes. ' +
        `The tools show the project's root as /; a path under ${lower.root} is taken as the same file.` +
        (options.allowCommands ? ' run_command runs shell commands over the workspace; their changes land in it the same way. find_breaking_change finds the operation after which a command (the tests) fails.' + sandboxNote(options) : ''),
    },
  )
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing(tools) }))
  // Calls still running at shutdown finish before the workspace closes (a commit_changes mid-flush).
  const running = new Set<Promise<unknown>>()
  server.fallbackRequestHandler = async (request, extra) => {
    const named = toolCall(request)
    if ('isError' in named) return toCallToolResult(named)
    // Only commands take the signal: other calls are short, and a cancelled write is either made or not.
    const call = options.allowCommands
      ? callSignal.run(AbortSignal.any([extra.signal, shutdown.signal]), () => callTool(tools, named.name, named.input))
      : callTool(tools, named.name, named.input)
    running.add(call)
    try {
      return toCallToolResult(inWorkspaceTerms(await call, lower.root))
    } finally {
      running.delete(call)
    }
  }
  // Refused messages (over a limit, malformed) are answered by the transport and noted here.
  server.onerror = (error) => process.stderr.write(`rewindfs MCP server: ${error.message}\n`)

  const done = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve)
    process.stdin.once('close', resolve)
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
    server.onclose = resolve
  })
  await server.connect(new LimitedStdioTransport())
  process.stderr.write(`rewindfs MCP server: ${tools.length} tools over ${lower.root} (${options.store !== undefined ? `store ${storeLabel(options.store)}` : 'in memory'}, session ${ws.session})\n`)
  await done
  shutdown.abort()
  await Promise.allSettled(running)
  await server.close().catch(() => undefined)
  await ws.close()
  return 0
}
