/**
 * The tools' inputs as zod schemas (strict: an unknown key is an error, so a misspelt field is
 * reported rather than ignored). Exported for hosts that register tools from zod (MCP servers).
 */
import * as z from 'zod'

const path = z.string().min(1).describe('Path in the workspace; relative paths resolve against its working directory')
const paths = z.array(z.string().min(1))
/** ISO 8601 text or milliseconds since the epoch. */
const instant = z.union([z.string().min(1), z.number().int().nonnegative()])

export const OPERATION_TYPES = ['file_edit', 'file_create', 'file_delete', 'config_change', 'all'] as const
export type ToolOperationType = (typeof OPERATION_TYPES)[number]

export const readFileInput = z.strictObject({
  path,
  offset: z.number().int().min(1).optional().describe('First line to return, counting from 1 (default 1)'),
  limit: z.number().int().min(1).optional().describe('Most lines to return (default 2000)'),
})

export const writeFileInput = z.strictObject({
  path,
  content: z.string().describe('The whole new content of the file'),
})

export const editFileInput = z.strictObject({
  path,
  old_string: z.string().min(1).describe('Exact text to replace, unique in the file unless replace_all is true'),
  new_string: z.string().describe('Text to put in its place'),
  replace_all: z.boolean().default(false).describe('Replace every occurrence'),
})

export const listDirectoryInput = z.strictObject({
  path,
  recursive: z.boolean().default(false).describe('Also list everything below (symlinks are not followed)'),
})

export const deletePathInput = z.strictObject({
  path,
  recursive: z.boolean().default(false).describe('Required to delete a directory that is not empty'),
})

export const movePathInput = z.strictObject({
  from: path,
  to: z.string().min(1).describe('New path; must not exist yet (parent directories are created)'),
})

export const undoOperationInput = z.strictObject({
  steps: z.number().int().min(1).max(50).default(1).describe('How many matching operations to undo, newest first'),
  operation_type: z
    .enum(OPERATION_TYPES)
    .default('all')
    .describe('Undo only this kind; config_change = changes to .json/.yaml/.yml/.toml/.ini/.conf/.env files'),
  target_files: paths.optional().describe('Undo only operations on these paths (or under these directories)'),
  dry_run: z.boolean().default(false).describe('Report what would be undone and change nothing'),
})

export const rollbackInput = z.strictObject({
  target: z
    .strictObject({
      checkpoint_id: z.string().min(1).optional().describe('Checkpoint id or name'),
      timestamp: instant.optional().describe('Roll back to the state at this time (ISO 8601 or epoch milliseconds)'),
      operation_id: z.string().min(1).optional().describe('Roll back to just after this operation'),
    })
    .superRefine((target, context) => {
      const given = Object.values(target).filter((value) => value !== undefined).length
      if (given !== 1) context.addIssue({ code: 'custom', message: `give exactly one of checkpoint_id, timestamp, operation_id (got ${given})` })
    })
    .describe('Exactly one of checkpoint_id, timestamp, operation_id'),
  scope: z
    .enum(['project', 'files', 'config'])
    .default('project')
    .describe('project: everything; files: only include_files; config: only configuration files'),
  include_files: paths.optional().describe('Globs (*, **, ?, {a,b}); a directory covers what is under it'),
  exclude_files: paths.optional().describe('Globs of paths to leave as they are'),
  preview_changes: z.boolean().default(true).describe('true: return the diff and change nothing; false: apply'),
})

const checkpointActions = ['create', 'list', 'delete', 'info', 'rename'] as const

export const manageCheckpointInput = z
  .strictObject({
    action: z.enum(checkpointActions),
    checkpoint_name: z.string().min(1).optional().describe('Name for create; id or name for delete, info, rename'),
    new_name: z.string().min(1).optional().describe('For rename'),
    description: z.string().optional().describe('For create: what the checkpoint marks'),
  })
  .superRefine((input, context) => {
    if (['delete', 'info', 'rename'].includes(input.action) && input.checkpoint_name === undefined) {
      context.addIssue({ code: 'custom', path: ['checkpoint_name'], message: `${input.action} needs checkpoint_name (an id or name)` })
    }
    if (input.action === 'rename' && input.new_name === undefined) {
      context.addIssue({ code: 'custom', path: ['new_name'], message: 'rename needs new_name' })
    }
  })

export const operationHistoryInput = z.strictObject({
  path: z.string().min(1).optional().describe('Only operations on this path or under this directory'),
  operation_type: z.enum(OPERATION_TYPES).default('all'),
  since: instant.optional().describe('Only operations at or after this time (ISO 8601 or epoch milliseconds)'),
  limit: z.number().int().min(1).max(500).default(50),
})

export const commitChangesInput = z.strictObject({
  force: z.boolean().optional().describe('Write even over paths changed at the target since they were read'),
})
