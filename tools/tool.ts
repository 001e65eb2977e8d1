/**
 * One agent tool: a name, a description, a JSON Schema for the model and a `run` that never throws;
 * and the runner every tool set goes through (`acknowledged`), which makes a result an
 * acknowledgement.
 */
import * as z from 'zod'
import { type ToolResult, toToolError } from './result.js'

/** JSON Schema (draft 2020-12) of a tool's input, as zod writes it. */
export type JsonSchema = z.core.JSONSchema.JSONSchema

export interface AgentTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonSchema
  /** It only reads: it records nothing, so it runs beside other reads and waits for no commit (only for the changing calls made before it). */
  readonly readOnly?: boolean
  run(input: unknown): Promise<ToolResult>
}

/** What the runner needs of a workspace: a way to wait until everything recorded so far is durable. */
export interface Durable {
  sync(): Promise<void>
}

/**
 * The tool runner: calls to tools that change something run one at a time, in the order they were
 * made (a host such as the MCP server runs calls concurrently; each result then names what that
 * call did, not what a neighbour did), and a successful result is returned only once everything it
 * recorded is durable (`ws.sync()`: the store's group commit). A model told "written" never loses
 * it to a crash; a store that failed turns the result into EDEGRADED. Tools named in `readOnly`
 * run beside each other and wait for no commit, but see what the changing calls made before them
 * did (a read sent after a write reads what it wrote), as a coding agent's batch of calls runs.
 */
export function acknowledged(ws: Durable, tools: readonly AgentTool[], readOnly: ReadonlySet<string>): AgentTool[] {
  let tail: Promise<unknown> = Promise.resolve()
  return tools.map((tool): AgentTool => {
    if (readOnly.has(tool.name)) {
      return {
        ...tool,
        readOnly: true,
        async run(input: unknown): Promise<ToolResult> {
          await tail
          return tool.run(input)
        },
      }
    }
    return {
      ...tool,
      async run(input: unknown): Promise<ToolResult> {
        const turn = tail.then(() => tool.run(input))
        tail = turn.catch(() => undefined)
        const outcome = await turn
        if (outcome.isError) return outcome
        try {
          await ws.sync()
        } catch (error) {
          const { message } = toToolError(error)
          return {
            isError: true,
            error: { code: 'EDEGRADED', message: `${tool.name} ran, but what it changed is not durable: ${message}. Stop and have the store checked (rewindfs status).` },
          }
        }
        return outcome
      },
    }
  })
}

export function defineTool<S extends z.ZodType>(
  name: string,
  description: string,
  schema: S,
  handler: (input: z.output<S>) => Promise<unknown>,
): AgentTool {
  const inputSchema = z.toJSONSchema(schema, { io: 'input' })
  // An agent that guessed an argument's name (`name` for `checkpoint_name`) is told the ones there are, to retry with.
  const accepted = Object.keys((inputSchema as { properties?: object }).properties ?? {})
  const takes = accepted.length > 0 ? ` (${name} takes ${accepted.join(', ')})` : ''
  return {
    name,
    description,
    inputSchema,
    async run(input: unknown): Promise<ToolResult> {
      // Parsing is inside the try too: a hostile input (a getter that throws) is an error result as well.
      try {
        const parsed = schema.safeParse(input)
        if (!parsed.success) {
          const issues = parsed.error.issues.map((issue) => ({
            path: issue.path.map(String).join('.') || '(input)',
            message: issue.code === 'unrecognized_keys' && issue.path.length === 0 ? `${issue.message}${takes}` : issue.message,
          }))
          const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')
          return { isError: true, error: { code: 'EINVALIDINPUT', message: `invalid input for ${name}: ${summary}`, issues } }
        }
        return { isError: false, result: await handler(parsed.data) }
      } catch (error) {
        return { isError: true, error: toToolError(error) }
      }
    },
  }
}
