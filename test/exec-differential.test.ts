/**
 * Overlay mode and copy mode must yield the same workspace changes for any command: random shell
 * scripts between random ws.fs changes, through both, compared after every round and at every step
 * of undoing it all (test/support/exec-differential.ts). Fixed seeds plus one random seed, printed
 * (replay with REWINDFS_SEED=<n>); in this process and as the unprivileged user.
 */
import { describe, expect, it } from 'vitest'
import { support } from '../adapters/node-fs/exec-support.js'
import { differential } from './support/exec-differential.js'
import { seeds } from './support/seed.js'
import { capability } from './support/require.js'
import { EXEC_USER, runAsUser, userProblem } from './support/exec-user-run.js'

const RUNS = Number(process.env.REWINDFS_DIFFERENTIAL_RUNS ?? 6)
const overlayHere = capability('exec-overlay', (await support()).overlay)
const problem = userProblem()
const asUser = process.getuid?.() === 0 ? capability('exec-user', problem) : false

describe.skipIf(!overlayHere)('overlay mode against copy mode, in this process', () => {
  for (const seed of seeds()) {
    it(`seed ${seed}`, { timeout: 600_000 }, async () => {
      expect((await differential(seed, RUNS)).value).toBeUndefined()
    })
  }
})

describe.skipIf(!asUser)(`overlay mode against copy mode, as ${EXEC_USER}`, () => {
  it('every seed', { timeout: 900_000 }, async () => {
    const names = seeds().map((seed) => `differential:${seed}`)
    const seen = await runAsUser(names, { REWINDFS_DIFFERENTIAL_RUNS: String(RUNS) })
    for (const name of names) {
      expect(seen[name].error).toBeUndefined()
      expect(seen[name].value, name).toBeUndefined()
    }
  })
})
