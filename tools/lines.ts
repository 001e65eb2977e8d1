/** Line numbers out of a unified diff, for the seed's changes_reverted. */

/** Line numbers listed at most per side; `truncated` says when there were more. */
const LINES_LISTED = 200

export interface LineChanges {
  /** Lines the patch removes, numbered in the file before it. */
  removed: number[]
  /** Lines the patch adds, numbered in the file after it. */
  added: number[]
  truncated: boolean
}

export function patchLines(patch: string): LineChanges {
  const out: LineChanges = { removed: [], added: [], truncated: false }
  let before = 0
  let after = 0
  let inHunk = false
  const push = (list: number[], line: number) => {
    if (list.length < LINES_LISTED) list.push(line)
    else out.truncated = true
  }
  for (const line of patch.split('\n')) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line)
    if (hunk) {
      // A side with no lines is written one lower ("-0,0"), but then no line of it follows.
      before = Number(hunk[1])
      after = Number(hunk[2])
      inHunk = true
    } else if (!inHunk || line.startsWith('\\')) continue
    else if (line.startsWith('-')) push(out.removed, before++)
    else if (line.startsWith('+')) push(out.added, after++)
    else if (line.startsWith(' ')) {
      before++
      after++
    }
  }
  return out
}
