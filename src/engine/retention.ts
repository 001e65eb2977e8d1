/**
 * Which automatic and turn checkpoints to keep. By count (the newest N), or tiered as backup tools
 * do: the newest `last`, plus the newest of each hour for `hourly` hours and of each day for
 * `daily` days. Manual, compact and guard checkpoints are never pruned (the caller filters them).
 */
export interface TieredRetention {
  /** The newest checkpoints always kept (default 5). */
  last?: number
  /** Hours back for which the newest checkpoint of each hour is kept (default 24). */
  hourly?: number
  /** Days back for which the newest checkpoint of each day is kept (default 7). */
  daily?: number
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The items to keep, given oldest first. */
export function retained<T extends { readonly createdAt: number }>(items: readonly T[], policy: number | TieredRetention, now: number): Set<T> {
  if (typeof policy === 'number') return new Set(items.slice(Math.max(0, items.length - policy)))
  const keep = new Set(items.slice(Math.max(0, items.length - (policy.last ?? 5))))
  const newestPer = (span: number, count: number) => {
    const seen = new Set<number>()
    for (let i = items.length - 1; i >= 0; i--) {
      const age = now - items[i].createdAt
      if (age >= count * span) break
      const bucket = Math.floor(items[i].createdAt / span)
      if (seen.has(bucket)) continue
      seen.add(bucket)
      keep.add(items[i])
    }
  }
  newestPer(HOUR, policy.hourly ?? 24)
  newestPer(DAY, policy.daily ?? 7)
  return keep
}
