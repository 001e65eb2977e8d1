/**
 * find_files: the files whose paths match a glob, over the workspace view, .gitignore honoured unless
 * asked otherwise. Sorted by path the walk can stop at max_results; sorted by modification time
 * (newest first, as agents' Glob tools do) it has to see every match first.
 */
import type { Workspace } from '../src/workspace.js'
import { type Budget, fitList } from './budget.js'
import { resolvePath } from './operations.js'
import { inputGlob, isNegated } from './search.js'
import { findFilesInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'
import { ViewReader, type WalkEntry, walk } from './walk.js'

/** A matched symlink that is not a file to read: a link to a directory (not entered), or one whose target the view does not hold. */
export interface FoundLink {
  readonly path: string
  readonly to: 'directory' | 'unreachable'
}

const LINKS_NOTE =
  "links: symlinks whose paths match but that are not files: 'directory' ones are not entered (give one as path to look inside), " +
  "'unreachable' ones lead out of the project, to nothing or round in a loop, so read_file cannot read them"

/**
 * What a matched symlink is to a model, resolved in the view (ws.fs: an absolute target is a
 * workspace path, '..' folds at the root, nothing is followed on the host): a file read_file reads
 * through it, a directory, or nothing it can reach. Every link was listed as a file: read_file of a
 * link to a directory then failed with EISDIR, of a link out of the project with ENOENT.
 */
async function linkTarget(ws: Workspace, path: string): Promise<'file' | FoundLink['to']> {
  try {
    const stats = await ws.fs.promises.stat(path)
    return stats.isDirectory() ? 'directory' : stats.isFile() ? 'file' : 'unreachable'
  } catch {
    return 'unreachable' // ENOENT (out of the project, or to nothing), ELOOP
  }
}

export function findTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'find_files',
    'Find files by a glob over their paths (*, **, ?, {a,b}; "*.ts" or "test/**/*.json"; a bare name matches ' +
      'anywhere), under path (default the working directory), leaving out what .gitignore files exclude unless ' +
      'include_ignored. sort: path, or mtime for the most recently modified first. files are what read_file reads ' +
      '(a symlink to a file in the project included); symlinks to directories are not entered and come apart, in ' +
      "links, as { path, to: 'directory' }, with links out of the project or to nothing as to: 'unreachable'. Returns at most max_results " +
      `paths within the result budget (${budget.chars} characters); when truncated, call again with offset: next_offset.`,
    findFilesInput,
    async (input) => {
      const root = resolvePath(ws, input.path ?? '.')
      // '!*.test.ts' lists the files that do not match, as rg --files -g '!…' does (it matched a literal '!': nothing).
      const negated = isNegated(input.pattern)
      const glob = inputGlob(negated ? input.pattern.slice(1) : input.pattern, root)
      const reader = await ViewReader.open(ws)
      const wanted = input.offset + input.max_results
      const found: WalkEntry[] = []
      let complete = true
      for await (const entry of walk(reader, root, { gitignore: !input.include_ignored })) {
        if (entry.type === 'dir' || glob.test(entry.path) === negated) continue
        // By path the walk's order is the answer's: one past the page says there is more.
        if (input.sort === 'path' && found.length === wanted) {
          complete = false
          break
        }
        found.push(entry)
      }
      let ordered = found
      if (input.sort === 'mtime') {
        const times = new Map<WalkEntry, number>()
        for (const entry of found) times.set(entry, (await reader.stat(entry)).mtimeMs)
        ordered = [...found].sort((a, b) => times.get(b)! - times.get(a)! || (a.path < b.path ? -1 : 1))
      }
      // Only the page's links are resolved: a stat each, never one for every match.
      const page: (string | FoundLink)[] = []
      for (const entry of ordered.slice(input.offset, wanted)) {
        const to = entry.type === 'symlink' ? await linkTarget(ws, entry.path) : 'file'
        page.push(to === 'file' ? entry.path : { path: entry.path, to })
      }
      const hasLinks = page.some((item) => typeof item !== 'string')
      const { shown } = fitList(page, budget.chars - 300 - (hasLinks ? LINKS_NOTE.length : 0))
      const links = shown.filter((item): item is FoundLink => typeof item !== 'string')
      const end = input.offset + shown.length
      const more = !complete || end < ordered.length
      return {
        files: shown.filter((item): item is string => typeof item === 'string'),
        ...(links.length > 0 ? { links, links_note: LINKS_NOTE } : {}),
        returned: shown.length,
        ...(complete ? { total: ordered.length } : {}),
        truncated: more,
        ...(more ? { next_offset: end } : {}),
      }
    },
  )
}
