/**
 * First sightings a listing records without looking each entry up. What a listing of a lower
 * directory shows is the first sighting of its entries (a flush's conflict base: a file the agent
 * only listed, edited on disk after the listing, then deleted blind, is a conflict), but a lookup
 * per entry costs a stat through a checked descriptor: seconds for 100k entries. So the listing
 * records a mark for each entry not seen before: when it listed, the type it showed and the inode
 * of the directory it listed. The entry's first lookup settles the mark: when the entry's ctime
 * (which moves with every change of its content or metadata, and with a rename or link that binds
 * the name to it) is before the listing, with the type listed, in the same directory, the version
 * now is the one the listing would have recorded; otherwise the entry changed after the listing, or
 * too close to it to tell, or went, and the mark stays its first sighting: a version no disk
 * reports, so a change the agent makes there without reading the entry first is a conflict.
 */
import type { EntryType, LowerStat } from './source.js'

const PREFIX = 'listed@'

/**
 * How long before a listing a change may have happened and still not be seen in it: the file
 * system stamps with a clock that lags the wall clock by up to a kernel tick (10 ms at 100 Hz), or
 * with whole seconds on some (FAT's 2 s, ext4 with small inodes), where a change is then taken as
 * after a listing in the 2 s before it.
 */
function slackMs(ctimeMs: number): number {
  return ctimeMs % 1000 === 0 ? 2000 : 20
}

/** The mark of an entry of type `type` listed at `at` (Date.now()) in the directory whose inode is `dirIno`. */
export function listedMark(at: number, type: EntryType, dirIno: number | undefined): string {
  return `${PREFIX}${at}:${type}:${dirIno ?? ''}`
}

export function isListed(version: string): boolean {
  return version.startsWith(PREFIX)
}

/**
 * What the first lookup of a listed entry records: its version (`stat`, lstat now) when it cannot
 * have changed since the listing `mark` names, in the directory whose inode is `dirIno` now; else
 * the mark. A source whose stat has no ctime cannot tell: the mark stays.
 */
export function settled(mark: string, stat: LowerStat | undefined, dirIno: number | undefined): string {
  if (stat === undefined) return mark
  const [at, type, ino] = mark.slice(PREFIX.length).split(':')
  if (type !== stat.type || ino !== String(dirIno ?? '')) return mark
  return changedSince(stat, Number(at)) ? mark : stat.version
}

/**
 * Whether the entry `stat` may have changed at or after `at` (Date.now()), as far as its ctime
 * tells: a change just before counts too (see slackMs), and so does any where there is no ctime.
 * A listing of a directory changed just before it (an entry made, removed or renamed in it) looks
 * its entries up instead of marking them: an entry written just before the listing would otherwise
 * count as changed after it, and a blind write of it as a conflict, as it does for a file written
 * in place in the moment before a listing.
 */
export function changedSince(stat: LowerStat, at: number): boolean {
  return stat.ctimeMs === undefined || stat.ctimeMs >= at - slackMs(stat.ctimeMs)
}
