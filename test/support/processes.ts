/**
 * Finding the processes a test started, from outside the code under test: a test puts a marker
 * (NAME=value) in a command's environment and reads /proc, so a process left running is seen
 * whatever the runner believes it killed.
 */
import * as fs from 'node:fs'

/** Every process whose environment carries `entry` (NAME=value). */
export function withMarker(entry: string): number[] {
  const out: number[] = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (fs.readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(entry)) out.push(Number(name))
    } catch {
      // Gone, or another user's.
    }
  }
  return out
}

/** Polls `check` every 50 ms until it holds (true) or `ms` pass (false): for processes that end or appear. */
export async function until(check: () => boolean, ms: number): Promise<boolean> {
  const started = Date.now()
  while (!check()) {
    if (Date.now() - started > ms) return false
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return true
}
