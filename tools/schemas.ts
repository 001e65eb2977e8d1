/**
 * The tools' inputs as zod schemas (strict: an unknown key is an error, so a misspelt field is
 * reported rather than ignored). Exported for hosts that register tools from zod (MCP servers).
 */
import * as z from 'zod'

const path = z.string().min(1).describe('Path in the workspace; relative paths resolve against its working directory')
const paths = z.array(z.string().min(1))
/**
 * Characters a glob may have: matching costs O(glob × path) for every file walked, and a 100 000-
 * character glob of '*' took 69 ms a path (15 minutes over 13 000 files) with every other call
 * waiting. PATH_MAX is 4096; no glob a model means is longer than this.
 */
export const GLOB_CHARS = 1000
const glob = z.string().min(1).max(GLOB_CHARS, `a glob of at most ${GLOB_CHARS} characters`)
const globs = z.array(glob)
/** ISO 8601 text or milliseconds since the epoch. */
const instant = z.union([z.string().min(1), z.number().int().nonnegative()])

export const OPERATION_TYPES = ['file_edit', 'file_create', 'file_delete', 'config_change', 'restore', 'all'] as const
export type ToolOperationType = (typeof OPERATION_TYPES)[number]

const offset = z.number().int().min(0).default(0)
const includeIgnored = z.boolean().default(false).describe('Also what .gitignore files exclude (and .git)')

export const readFileInput = z.strictObject({
  path,
  offset: z.number().int().min(1).optional().describe('First line to return, counting from 1 (default 1); ignored for an image, which comes whole'),
  limit: z.number().int().min(1).optional().describe('Most lines to return (default 2000); ignored for an image'),
})

export const writeFileInput = z.strictObject({
  path,
  content: z.string().describe('The whole new content of the file'),
})

const oldString = z.string().min(1).describe('Exact text to replace, unique in the file unless replace_all is true')
/** The single form's old_string may be empty, as Claude Code's Edit takes it: to create a file (or fill an empty one) with new_string. */
const firstOldString = z.string().describe('Exact text to replace, unique in the file unless replace_all is true; empty to create a new file (or fill an empty one) with new_string')
const newString = z.string().describe('Text to put in its place')
const replaceAll = z.boolean().default(false).describe('Replace every occurrence')

export const editFileInput = z
  .strictObject({
    path,
    old_string: firstOldString.optional(),
    new_string: newString.optional(),
    replace_all: replaceAll,
    edits: z
      .array(z.strictObject({ old_string: oldString, new_string: newString, replace_all: replaceAll }))
      .min(1)
      .max(100)
      .optional()
      .describe('Several replacements, applied in order (each to the result of the one before), all or nothing; instead of old_string/new_string'),
  })
  .superRefine((input, context) => {
    const single = input.old_string !== undefined || input.new_string !== undefined
    if (input.edits !== undefined && single) context.addIssue({ code: 'custom', path: ['edits'], message: 'give either edits or old_string/new_string, not both' })
    else if (input.edits === undefined) {
      if (input.old_string === undefined) context.addIssue({ code: 'custom', path: ['old_string'], message: 'old_string is required (or give edits)' })
      if (input.new_string === undefined) context.addIssue({ code: 'custom', path: ['new_string'], message: 'new_string is required (or give edits)' })
    }
  })

export const insertTextInput = z.strictObject({
  path,
  insert_line: z.number().int().min(0).describe('The line after which the text goes: 0 for the start of the file, the line count for its end'),
  text: z.string().min(1).describe('The lines to insert (a final newline is added when missing)'),
})

export const listDirectoryInput = z.strictObject({
  path,
  recursive: z.boolean().default(false).describe('Also list everything below (symlinks are not followed); leaves out what .gitignore excludes unless include_ignored'),
  include_ignored: includeIgnored,
  offset: offset.describe('Entries to skip (to page through with next_offset)'),
})

export const OUTPUT_MODES = ['content', 'files_with_matches', 'count'] as const

/**
 * Grep's head_limit is max_results here (one cap, counted in the mode's entries): a model used to
 * Grep that sends it is told so, not only that the key is unknown.
 */
function unknownSearchKeys(issue: { code?: string; keys?: readonly string[] }): string | undefined {
  if (issue.code !== 'unrecognized_keys' || !issue.keys?.includes('head_limit')) return undefined
  return `Unrecognized key${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.map((key) => `"${key}"`).join(', ')}; for head_limit use max_results, which caps the lines (content) or files (files_with_matches, count) returned`
}

export const searchFilesInput = z
  .strictObject(
    {
      pattern: z.string().min(1).describe('Text to find in a line; a JavaScript regular expression when regex is true'),
      path: z.string().min(1).optional().describe('Directory or file to search (default: the working directory)'),
      regex: z.boolean().default(false).describe('pattern is a regular expression (JavaScript syntax, run in linear time: no backreferences or look-around)'),
      case_sensitive: z.boolean().default(true),
      include: globs.optional().describe('Globs of the files to search, e.g. "*.ts", "src/**/*.json"; a bare name matches anywhere; one starting with ! leaves out what it matches ("!*.test.ts")'),
      exclude: globs.optional().describe('Globs of files and directories to skip'),
      output_mode: z
        .enum(OUTPUT_MODES)
        .default('content')
        .describe(
          'content: the matching lines with their line numbers (grep -n); files_with_matches: the paths of the files with a match, each once, ' +
            'the most recently modified first (ties by path), each file read only up to its first match (grep -l); count: each matching file with its number of matching lines (grep -c)',
        ),
      context_lines: z.number().int().min(0).max(10).default(0).describe('Lines shown before and after each match (output_mode content only)'),
      max_results: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(100)
        .describe("At most this many entries: matching lines for content, files for files_with_matches and count (Grep's head_limit)"),
      offset: offset.describe('Entries to skip, lines or files as max_results counts them (to page through with next_offset)'),
      include_ignored: includeIgnored,
    },
    { error: unknownSearchKeys },
  )
  .superRefine((input, context) => {
    // Only lines have context: in the other modes it was asked for and would not be shown.
    if (input.output_mode !== 'content' && input.context_lines > 0) {
      context.addIssue({ code: 'custom', path: ['context_lines'], message: `context_lines applies to output_mode content only (output_mode is ${input.output_mode}): drop it, or use content` })
    }
  })

export const findFilesInput = z.strictObject({
  pattern: glob.describe('Glob: *, **, ?, {a,b}; e.g. "*.ts", "src/**/*.test.ts"; a bare name matches anywhere, a directory covers what is under it; "!*.ts" lists the files that do not match'),
  path: z.string().min(1).optional().describe('Directory to search (default: the working directory)'),
  include_ignored: includeIgnored,
  max_results: z.number().int().min(1).max(10_000).default(200),
  sort: z.enum(['path', 'mtime']).default('path').describe('path: by path; mtime: most recently modified first'),
  offset: offset.describe('Files to skip (to page through with next_offset)'),
})

export const runCommandInput = z.strictObject({
  command: z.string().min(1).describe('A shell command (sh -c), run in the workspace'),
  cwd: z.string().min(1).optional().describe('Workspace directory to run in (default: the working directory)'),
  timeout_ms: z.number().int().min(1).max(600_000).default(120_000).describe('Milliseconds before the command and everything it started are killed'),
  env: z.record(z.string(), z.string()).optional().describe('Environment variables to set'),
})

export const findBreakingChangeInput = z.strictObject({
  command: z.string().min(1).describe('A shell command (sh -c) that passes when things work, e.g. npm test'),
  from_checkpoint: z.string().min(1).optional().describe('A checkpoint (id or name) where the command passes (default: the start of the kept history)'),
  timeout_ms: z.number().int().min(1).max(600_000).default(120_000).describe('Milliseconds one run may take; a run that takes longer is skipped'),
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
    .describe(
      'Undo only this kind; config_change = changes to .json/.yaml/.yml/.toml/.ini/.conf/.env files; ' +
        'restore = a rollback (rollback_to_checkpoint) itself, which no other type reaches',
    ),
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
  include_files: globs.optional().describe('Globs (*, **, ?, {a,b}); a directory covers what is under it'),
  exclude_files: globs.optional().describe('Globs of paths to leave as they are'),
  preview_changes: z.boolean().default(true).describe('true: return the diff and change nothing; false: apply'),
  path: z.string().min(1).optional().describe('Preview only: show only the changes at or under this path (does not limit what is applied)'),
  offset: offset.describe('Preview only: changes to skip in the list (to page through with next_offset)'),
  diff_offset: offset.describe('Preview only: characters of each diff to skip (to read a long diff on from where it was cut)'),
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
  offset: offset.describe('Operations to skip, newest first (to page through with next_offset)'),
})

export const commitChangesInput = z.strictObject({
  force: z.boolean().optional().describe('Write even over paths changed at the target since they were read'),
})
