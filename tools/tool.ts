/** One agent tool: a name, a description, a JSON Schema for the model and a `run` that never throws. */
import * as z from 'zod'
import { type ToolResult, toToolError } from './result.js'

/** JSON Schema (draft 2020-12) of a tool's input, as zod writes it. */
export type JsonSchema = z.core.JSONSchema.JSONSchema

export interface AgentTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonSchema
  run(input: unknown): Promise<ToolResult>
}

export function defineTool<S extends z.ZodType>(
  name: string,
  description: string,
  schema: S,
  handler: (input: z.output<S>) => Promise<unknown>,
): AgentTool {
  return {
    name,
    description,
    inputSchema: z.toJSONSchema(schema, { io: 'input' }),
    async run(input: unknown): Promise<ToolResult> {
      // Parsing is inside the try too: a hostile input (a getter that throws) is an error result as well.
      try {
        const parsed = schema.safeParse(input)
        if (!parsed.success) {
          const issues = parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || '(input)', message: issue.message }))
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
