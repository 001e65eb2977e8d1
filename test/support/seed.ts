/**
 * fast-check settings: a few fixed seeds for reproducible coverage plus one random seed per run,
 * printed so any failure can be replayed with REWINDFS_SEED=<n>.
 */
import fc from 'fast-check'

const fromEnv = process.env.REWINDFS_SEED
export const randomSeed = fromEnv !== undefined ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31)
let printed = false

export function seeds(fixed: readonly number[] = [1, 42, 20261122]): number[] {
  if (!printed) {
    printed = true
    console.log(`[rewindfs] fast-check random seed: ${randomSeed} (replay with REWINDFS_SEED=${randomSeed})`)
  }
  return fromEnv !== undefined ? [randomSeed] : [...fixed, randomSeed]
}

export function assertProperty<T>(property: fc.IProperty<T> | fc.IAsyncProperty<T>, runs: number, seed: number) {
  return fc.assert(property as fc.IAsyncProperty<T>, { numRuns: runs, seed })
}

/** A small deterministic generator (mulberry32), so a failing seed replays exactly. */
export function generator(seed: number) {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const below = (n: number) => Math.floor(next() * n)
  return { next, below, pick: <T>(items: readonly T[]) => items[below(items.length)] }
}
