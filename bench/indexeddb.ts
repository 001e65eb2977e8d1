/**
 * IndexedDB group-commit throughput in Chromium: appendJournal of 1 KiB records in groups of 100
 * through indexedDbStore, against idb-keyval's setMany of the same records (its default durability,
 * and strict durability as our store uses). Prints a markdown table.
 *
 *   node --import tsx bench/indexeddb.ts [--quick]
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CHROMIUM, startHarness } from '../test/browser/driver.js'
import type { Bench } from '../test/browser/bench-page.js'

const quick = process.argv.includes('--quick')
const GROUPS = quick ? 20 : 200
const GROUP_SIZE = 100
const RECORD_BYTES = 1024
const RUNS = quick ? 1 : 5

type Subject = Parameters<Bench['run']>[0]
const subjects: [Subject, string][] = [
  ['rewindfs', 'rewindfs indexedDbStore.appendJournal (strict durability)'],
  ['idb-keyval', 'idb-keyval setMany (default durability)'],
  ['idb-keyval-strict', 'idb-keyval setMany (strict durability)'],
]

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    console.error(`no ${CHROMIUM}: run scripts/provision-chromium.sh first`)
    process.exit(1)
  }
  const harness = await startHarness(fileURLToPath(new URL('../test/browser/bench-page.ts', import.meta.url)))
  try {
    const context = await harness.newContext()
    const page = await harness.open(context)
    const version = harness.browser.version()
    const times = new Map<Subject, number[]>()
    // Interleaved runs, each into a fresh database, so drift in the machine hits every subject alike.
    for (let r = -1; r < RUNS; r++) {
      for (const [subject] of subjects) {
        const args = [subject, `bench-${subject}-${r + 1}`, r < 0 ? 5 : GROUPS, GROUP_SIZE, RECORD_BYTES] as const
        const ms = await page.evaluate((a) => window.rewindfsBench.run(...a), args)
        if (r >= 0) times.set(subject, [...(times.get(subject) ?? []), ms])
      }
    }
    if (harness.pageErrors.length > 0) throw new Error(`the bench page failed: ${harness.pageErrors.join('; ')}`)
    const records = GROUPS * GROUP_SIZE
    const mib = (records * RECORD_BYTES) / 2 ** 20
    const reference = median(times.get('idb-keyval') ?? [])
    console.log(`#### IndexedDB group commits in Chromium ${version} (headless, ${GROUPS} groups × ${GROUP_SIZE} records × 1 KiB, median of ${RUNS})\n`)
    console.log('| subject | per group commit | min – max of runs | records/s | MiB/s | time ÷ idb-keyval setMany |')
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |')
    for (const [subject, label] of subjects) {
      const runs = times.get(subject) ?? []
      const ms = median(runs)
      const spread = `${(Math.min(...runs) / GROUPS).toFixed(2)} – ${(Math.max(...runs) / GROUPS).toFixed(2)} ms`
      console.log(`| ${label} | ${(ms / GROUPS).toFixed(2)} ms | ${spread} | ${Math.round(records / (ms / 1000)).toLocaleString('en-US')} | ${(mib / (ms / 1000)).toFixed(1)} | ${(ms / reference).toFixed(2)}× |`)
    }
    console.log('\nEach group is one transaction, awaited before the next, as a workspace commits. Strict durability flushes to disk before the commit is acknowledged.')
    await context.close()
  } finally {
    await harness.close()
  }
}

await main()
