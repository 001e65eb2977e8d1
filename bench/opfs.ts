/**
 * OPFS store group commits in Chromium against the IndexedDB store, both in one dedicated worker
 * (where the engine runs), 1 KiB records; the target is ≥ 3× the IndexedDB store's throughput. Two
 * shapes: 100 journal records per group commit (as bench/indexeddb.ts), and a workspace's write +
 * sync (one 1 KiB blob and its journal record per commit). The raw floor writes the same bytes
 * through one sync access handle with one flush() per group. Prints a markdown table.
 *
 * With --reopen instead: a workspace of 20k files of 1 KiB on each store (written, synced,
 * compacted, closed) opened again in the worker, as a tab reloading an IDE's project does: what the
 * open costs, what it holds in memory, and reading every file after it.
 *
 *   node --import tsx bench/opfs.ts [--quick] [--reopen]
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHROMIUM } from '../test/browser/driver.js'
import type { Reopen } from '../test/browser/opfs-bench-worker.js'
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

const REOPEN_FILES = quick ? 2_000 : 20_000
const REOPEN_RUNS = quick ? 1 : 3

/** The reopen table: each store's runs interleaved, each into a fresh store; medians. */
async function reopenTable(page: Parameters<typeof work>[0], version: string): Promise<void> {
  const runs = new Map<'opfs' | 'indexeddb', Reopen[]>()
  for (let r = 0; r < REOPEN_RUNS; r++) {
    for (const subject of ['opfs', 'indexeddb'] as const) runs.set(subject, [...(runs.get(subject) ?? []), await work<Reopen>(page, 'reopen', subject, `reopen-${subject}-${r}`, REOPEN_FILES, RECORD_BYTES)])
  }
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
  console.log(`#### Reopen of a workspace of ${REOPEN_FILES.toLocaleString('en-US')} files of 1 KiB, Chromium ${version} (dedicated worker, profile on disk, median of ${REOPEN_RUNS})\n`)
  console.log('| store | Workspace.open | min – max of runs | contents | resident after open | blobs in the store | reading every file after the open |')
  console.log('| --- | ---: | ---: | --- | ---: | ---: | ---: |')
  for (const [subject, name] of [['opfs', 'rewindfs opfsStore'], ['indexeddb', 'rewindfs indexedDbStore']] as const) {
    const all = runs.get(subject)!
    const opens = all.map((run) => run.open)
    const typical = [...all].sort((a, b) => a.open - b.open)[Math.floor(all.length / 2)]
    console.log(`| ${name} | ${median(opens).toFixed(0)} ms | ${Math.min(...opens).toFixed(0)} – ${Math.max(...opens).toFixed(0)} ms | ${typical.contents} | ${mib(typical.residentBytes)} | ${typical.durableBlobs.toLocaleString('en-US')} | ${median(all.map((run) => run.readAll)).toFixed(0)} ms |`)
  }
  console.log('')
  console.log('Each store was written by a workspace (100 files per sync), compacted and closed, then opened again in the same worker. The OPFS store reads its index on open and contents when first read (synchronous access handles); the IndexedDB store has no synchronous reads, so open reads every content into memory.')
}

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
    if (process.argv.includes('--reopen')) {
      await reopenTable(page, version)
      if (site.errors.length > 0) throw new Error(`the bench page failed: ${site.errors.join('; ')}`)
      return
    }
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
