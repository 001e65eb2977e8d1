/**
 * find_files: the files (and symlinks) whose paths match a glob, over the workspace view, .gitignore
 * honoured unless asked otherwise. Sorted by path the walk can stop at max_results; sorted by
 * modification time (newest first, as agents' Glob tools do) it has to see every match first.
 */
import type { Workspace } from '../src/workspace.js'
import { type Budget, fitList } from './budget.js'
import { resolvePath } from './operations.js'
import { inputGlob, isNegated } from './search.js'
import { findFilesInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'
import { ViewReader, type WalkEntry, walk } from './walk.js'

export function findTool(ws: Workspace, budget: Budget): AgentTool {
  return defineTool(
    'find_files',
    'Find files by a glob over their paths (*, **, ?, {a,b}; "*.ts" or "test/**/*.json"; a bare name matches ' +
      'anywhere), under path (default the working directory), leaving out what .gitignore files exclude unless ' +
      'include_ignored. sort: path, or mtime for the most recently modified first. Returns at most max_results ' +
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
      const page = ordered.slice(input.offset, wanted).map((entry) => entry.path)
      const { shown } = fitList(page, budget.chars - 300)
      const end = input.offset + shown.length
      const more = !complete || end < ordered.length
      return {
        files: shown,
        returned: shown.length,
        ...(complete ? { total: ordered.length } : {}),
        truncated: more,
        ...(more ? { next_offset: end } : {}),
      }
    },
  )
}
