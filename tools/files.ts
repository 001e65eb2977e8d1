/**
 * File tools over `ws.fs.promises` (the promise forms also load contents that an asynchronous
 * lower source has not fetched yet). Every change they make is an operation in the journal, so
 * undo_operation takes it back; each result names the operations it recorded.
 */
import { decode, isProbablyText } from '../src/bytes.js'
import { dirname, join } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'
import { lastSeq, recordedSince, resolvePath } from './operations.js'
import { ToolFailure } from './result.js'
import { deletePathInput, editFileInput, listDirectoryInput, movePathInput, readFileInput, writeFileInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'

/** Lines read_file returns by default, and the characters it returns at most in one call. */
const READ_LINES = 2000
const READ_CHARS = 100_000
/** Entries list_directory returns at most. */
const LIST_ENTRIES = 1000

function lines(text: string): string[] {
  const all = text.split('\n')
  if (all[all.length - 1] === '') all.pop() // a final newline ends the last line
  return all
}

async function readText(ws: Workspace, path: string): Promise<string> {
  const bytes = await ws.fs.promises.readFile(path)
  if (!isProbablyText(bytes)) throw new ToolFailure('EBINARY', `'${path}' is a binary file (${bytes.byteLength} bytes); these tools read and edit text only`)
  return decode(bytes)
}

async function lstatOrUndefined(ws: Workspace, path: string) {
  try {
    return await ws.fs.promises.lstat(path)
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    throw error
  }
}

/** 1-based line numbers of each match's first character. */
function lineNumbers(text: string, at: readonly number[]): number[] {
  const out: number[] = []
  let line = 1
  let scanned = 0
  for (const index of at) {
    for (; scanned < index; scanned++) if (text.charCodeAt(scanned) === 10) line++
    out.push(line)
  }
  return out
}

function occurrences(text: string, needle: string): number[] {
  const at: number[] = []
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) at.push(i)
  return at
}

export function fileTools(ws: Workspace): AgentTool[] {
  const fs = ws.fs.promises
  return [
    defineTool(
      'read_file',
      'Read a text file. Returns its lines from offset (1-based) up to limit lines (default 2000), with the ' +
        'total line count; when truncated is true, call again with next_offset.',
      readFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const all = lines(await readText(ws, path))
        const start = input.offset ?? 1
        if (start > Math.max(1, all.length)) throw new ToolFailure('EOUTOFRANGE', `offset ${start} is past the end of '${path}', which has ${all.length} lines`)
        const wanted = all.slice(start - 1, start - 1 + (input.limit ?? READ_LINES))
        // At least one line, then as many as fit in the character budget.
        let taken = 0
        let chars = 0
        while (taken < wanted.length && (taken === 0 || chars + wanted[taken].length + 1 <= READ_CHARS)) chars += wanted[taken++].length + 1
        const end = start - 1 + taken
        const content = wanted.slice(0, taken).join('\n')
        // One line longer than the budget (minified code) is cut; the next call starts after it.
        const cut = content.length > READ_CHARS
        return {
          path,
          content: cut ? content.slice(0, READ_CHARS) : content,
          start_line: start,
          end_line: end,
          total_lines: all.length,
          truncated: cut || end < all.length,
          ...(cut ? { line_truncated: true } : {}),
          ...(end < all.length ? { next_offset: end + 1 } : {}),
        }
      },
    ),
    defineTool(
      'write_file',
      'Create or overwrite a text file with the given content (parent directories are created). Undoable with undo_operation.',
      writeFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const existing = await lstatOrUndefined(ws, path)
        if (existing?.isDirectory()) throw new ToolFailure('EISDIR', `'${path}' is a directory; write_file writes files`)
        const mark = lastSeq(ws)
        await fs.mkdir(dirname(path), { recursive: true })
        await fs.writeFile(path, input.content)
        return {
          path,
          created: existing === undefined,
          bytes: new TextEncoder().encode(input.content).byteLength,
          lines: lines(input.content).length,
          operation_ids: recordedSince(ws, mark),
        }
      },
    ),
    defineTool(
      'edit_file',
      'Replace old_string with new_string in a text file. old_string must match exactly (whitespace included) ' +
        'and only once unless replace_all is true; read the file first. Undoable with undo_operation.',
      editFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const text = await readText(ws, path)
        if (input.old_string === input.new_string) throw new ToolFailure('ENOCHANGE', 'old_string and new_string are the same: nothing would change')
        const at = occurrences(text, input.old_string)
        if (at.length === 0) {
          throw new ToolFailure('ENOMATCH', `old_string was not found in '${path}'; read the file again and copy the exact text, whitespace included`)
        }
        if (at.length > 1 && !input.replace_all) {
          throw new ToolFailure(
            'EAMBIGUOUS',
            `old_string occurs ${at.length} times in '${path}' (lines ${lineNumbers(text, at).join(', ')}); ` +
              'include more surrounding lines to make it unique, or pass replace_all: true to replace every one',
            { lines: lineNumbers(text, at) },
          )
        }
        const chosen = input.replace_all ? at : at.slice(0, 1)
        let next = ''
        let from = 0
        const newAt: number[] = []
        for (const index of chosen) {
          next += text.slice(from, index)
          newAt.push(next.length)
          next += input.new_string
          from = index + input.old_string.length
        }
        next += text.slice(from)
        const mark = lastSeq(ws)
        await fs.writeFile(path, next)
        return { path, replacements: chosen.length, lines: lineNumbers(next, newAt), operation_ids: recordedSince(ws, mark) }
      },
    ),
    defineTool(
      'list_directory',
      `List a directory: names, types (file, directory, symlink) and file sizes, sorted; recursive lists everything below. At most ${LIST_ENTRIES} entries.`,
      listDirectoryInput,
      async (input) => {
        const root = resolvePath(ws, input.path)
        const entries: { path: string; type: 'file' | 'directory' | 'symlink'; size?: number; target?: string }[] = []
        let truncated = false
        const walk = async (dir: string, prefix: string): Promise<void> => {
          const names = ((await fs.readdir(dir)) as string[]).sort()
          for (const name of names) {
            if (entries.length >= LIST_ENTRIES) {
              truncated = true
              return
            }
            const full = join(dir, name)
            const stat = await fs.lstat(full)
            const path = prefix + name
            if (stat.isDirectory()) {
              entries.push({ path: path + '/', type: 'directory' })
              if (input.recursive) await walk(full, path + '/')
            } else if (stat.isSymbolicLink()) entries.push({ path, type: 'symlink', target: (await fs.readlink(full)) as string })
            else entries.push({ path, type: 'file', size: Number(stat.size) })
          }
        }
        await walk(root, '')
        return { path: root, entries, truncated }
      },
    ),
    defineTool(
      'delete_path',
      'Delete a file, symlink or empty directory; a directory with contents needs recursive: true. Undoable with undo_operation.',
      deletePathInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const stat = await fs.lstat(path)
        const type = stat.isDirectory() ? 'directory' : stat.isSymbolicLink() ? 'symlink' : 'file'
        const mark = lastSeq(ws)
        if (type === 'directory') {
          const count = ((await fs.readdir(path)) as string[]).length
          if (count > 0 && !input.recursive) {
            throw new ToolFailure('ENOTEMPTY', `'${path}' is a directory with ${count} entries; pass recursive: true to delete it and everything under it`)
          }
          await fs.rm(path, { recursive: true })
        } else await fs.unlink(path)
        return { path, type, operation_ids: recordedSince(ws, mark) }
      },
    ),
    defineTool(
      'move_path',
      'Move or rename a file or directory. The destination must not exist; its parent directories are created. Undoable with undo_operation.',
      movePathInput,
      async (input) => {
        const from = resolvePath(ws, input.from)
        const to = resolvePath(ws, input.to)
        await fs.lstat(from)
        if (await lstatOrUndefined(ws, to)) throw new ToolFailure('EEXIST', `'${to}' already exists; delete it first or choose another destination`)
        const mark = lastSeq(ws)
        await fs.mkdir(dirname(to), { recursive: true })
        await fs.rename(from, to)
        return { from, to, operation_ids: recordedSince(ws, mark) }
      },
    ),
  ]
}
