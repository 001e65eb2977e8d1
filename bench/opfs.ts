/**
 * OPFS store group commits in Chromium against the IndexedDB store, both in one dedicated worker
 * (where the engine runs), 1 KiB records; the target is ≥ 3× the IndexedDB store's throughput. Two
 * shapes: 100 journal records per group commit (as bench/indexeddb.ts), and a workspace's write +
 * sync (one 1 KiB blob and its journal record per commit). The raw floor writes the same bytes
 * through one sync access handle with one flush() per group. Prints a markdown table.
 *
 *   node --import tsx bench/opfs.ts [--quick]
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHROMIUM } from '../test/browser/driver.js'
import { WORKER_PAGE, bundleModule, startSite, work } from '../test/browser/site.js'

const quick = process.argv.includes('--quick')
const RUNS = quick ? 1 : 5
const RECORD_BYTES = 1024

type Subject = 'opfs' | 'indexeddb' | 'raw-opfs'
type Shape = 'journal' | 'blob'

const shapes: [Shape, string, number, number][] = [
  // shape, label, groups, records per group
  ['journal', '100 journal records of 1 KiB', quick ? 20 : 200, 100],
  ['blob', 'a 1 KiB blob and its journal record (write + sync)', quick ? 100 : 1000, 1],
]
const subjects: [Subject, string][] = [
  ['opfs', 'rewindfs opfsStore'],
  ['indexeddb', 'rewindfs indexedDbStore (strict durability)'],
  ['raw-opfs', 'raw: one sync access handle, write + flush() per group'],
]

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    console.error(`no ${CHROMIUM}: run scripts/provision-chromium.sh first`)
    process.exit(1)
  }
  const worker = await bundleModule(fileURLToPath(new URL('../test/browser/opfs-bench-worker.ts', import.meta.url)))
  // A profile on disk, as a user's is: an incognito context keeps OPFS and IndexedDB in memory.
  const profile = mkdtempSync(join(tmpdir(), 'rewindfs-bench-opfs-'))
  const site = await startSite({ '/': WORKER_PAGE }, { '/worker.js': worker }, { profile })
  try {
    const context = await site.newContext()
    const page = await site.open(context)
    const version = site.browser.version()
    const rows: string[] = []
    for (const [shape, label, groups, size] of shapes) {
      const times = new Map<Subject, number[]>()
      // Interleaved runs, each into a fresh store, so drift in the machine hits every subject alike; run -1 warms up.
      for (let r = -1; r < RUNS; r++) {
        for (const [subject] of subjects) {
          const ms = await work<number>(page, 'run', subject, shape, `bench-${subject}-${shape}-${r + 1}`, r < 0 ? 5 : groups, size, RECORD_BYTES)
          if (r >= 0) times.set(subject, [...(times.get(subject) ?? []), ms])
        }
      }
      if (site.errors.length > 0) throw new Error(`the bench page failed: ${site.errors.join('; ')}`)
      const records = groups * size
      const mib = (records * RECORD_BYTES) / 2 ** 20
      const reference = median(times.get('indexeddb')!)
      for (const [subject, name] of subjects) {
        const runs = times.get(subject)!
        const ms = median(runs)
        const spread = `${(Math.min(...runs) / groups).toFixed(2)} – ${(Math.max(...runs) / groups).toFixed(2)} ms`
        const ratio = `${(reference / ms).toFixed(2)}×${subject === 'opfs' ? (reference / ms >= 3 ? ' ✅' : ' ❌') : ''}`
        rows.push(`| ${label} (${groups}) | ${name} | ${(ms / groups).toFixed(2)} ms | ${spread} | ${Math.round(records / (ms / 1000)).toLocaleString('en-US')} | ${(mib / (ms / 1000)).toFixed(1)} | ${ratio} |`)
      }
    }
    console.log(`#### OPFS store group commits, Chromium ${version} (headless, profile on disk, median of ${RUNS})\n`)
    console.log('| group commit (commits) | subject | per commit | min – max of runs | records/s | MiB/s | throughput ÷ indexedDbStore (goal ≥ 3×) |')
    console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |')
    for (const row of rows) console.log(row)
    console.log('')
    console.log('Each group commit is awaited before the next, as a workspace commits; both stores run in one dedicated worker of a browser profile on disk. The OPFS store acknowledges after flush() of its segment; the IndexedDB store after a strict-durability transaction.')
  } finally {
    await site.close()
    rmSync(profile, { recursive: true, force: true })
  }
}

await main()
