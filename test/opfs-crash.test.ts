/**
 * The OPFS store survives its process being killed. In a browser profile on disk, a dedicated
 * worker writes and syncs in a loop (over 64 KiB segments, compacting every 50 operations, so kills
 * land on sealing, compaction and collection too) and its page's renderer process is crashed (Chrome
 * DevTools Protocol Page.crash: the worker dies with it, mid-write) at a random moment, 12 times.
 * Each reopen must hold every acknowledged write and nothing that never existed: the state after
 * some step at or past the last one acknowledged; never damaged, frozen or degraded.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM } from './browser/driver.js'
import { type Site, WORKER_PAGE, bundleModule, startSite, work } from './browser/site.js'
import { capability } from './support/require.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

const KILLS = 12

/** The files after steps 0..last (step i writes `v<i>` padded to /app/f<i % 16>.txt; see opfs-worker.ts's hammer). */
function expected(last: number): Record<string, string> {
  const files: Record<string, string> = { '/app/readme.md': 'lower\n' }
  for (let i = Math.max(0, last - 15); i <= last; i++) files[`/app/f${i % 16}.txt`] = `v${i}`.padEnd(200 + (i % 7) * 300, '.')
  return files
}

const canonical = (files: Record<string, string>) => JSON.stringify(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)))

/** The worker page, plus the last step the worker acknowledged. */
const CRASH_PAGE = `${WORKER_PAGE}
window.acknowledged = -1
worker.addEventListener('message', (event) => {
  if (typeof event.data.acknowledged === 'number') window.acknowledged = event.data.acknowledged
})
`

describe.skipIf(!available)('the OPFS store when its process is killed (Chromium)', () => {
  let site: Site
  let context: BrowserContext
  // A profile on disk: the worker's writes go to files, as a user's do (incognito keeps OPFS in memory).
  const profile = mkdtempSync(join(tmpdir(), 'rewindfs-opfs-crash-'))

  beforeAll(async () => {
    const worker = await bundleModule(fileURLToPath(new URL('./browser/opfs-worker.ts', import.meta.url)))
    site = await startSite({ '/': CRASH_PAGE }, { '/worker.js': worker }, { profile })
    context = await site.newContext()
  })
  afterAll(async () => {
    await site?.close()
    rmSync(profile, { recursive: true, force: true })
  })

  it(`keeps every acknowledged write across ${KILLS} kills mid-write`, async () => {
    /** The first step not known to be acknowledged. */
    let next = 0
    for (let kill = 0; kill <= KILLS; kill++) {
      const page: Page = await site.open(context)
      if (next > 0) {
        const found = await work<{ files: Record<string, string>; frozen: unknown; corrupt: unknown; degraded: unknown }>(page, 'afterCrash', 'crash')
        expect({ frozen: found.frozen, corrupt: found.corrupt, degraded: found.degraded }).toEqual({ frozen: null, corrupt: null, degraded: null })
        // The state after some step at or past the last one the test saw acknowledged (later
        // acknowledgements it had not read yet, and one flushed but not acknowledged, may follow):
        // nothing acknowledged lost, nothing that never existed.
        const files = canonical(found.files)
        const step = Array.from({ length: 2000 }, (_, i) => next - 1 + i).find((n) => canonical(expected(n)) === files)
        expect(step, `after kill ${kill}, the state is that after a step ≥ ${next - 1}`).toBeDefined()
        next = step! + 1
      }
      if (kill === KILLS) break
      // Start the loop, let it run for a while, then kill the renderer (and the worker in it).
      let failed: unknown
      void page
        .evaluate(([from]) => (window as unknown as { work: (...a: unknown[]) => Promise<unknown> }).work('hammer', 'crash', from), [next] as const)
        .then((answer) => (failed = answer), () => undefined)
      const run = 150 + Math.floor(Math.random() * 600)
      const started = Date.now()
      const acknowledged = () => page.evaluate(() => (window as unknown as { acknowledged: number }).acknowledged)
      while (Date.now() - started < run || (await acknowledged()) < next) {
        if (failed !== undefined) throw new Error(`the write loop stopped: ${JSON.stringify(failed)}`)
        if (Date.now() - started > 60_000) throw new Error('the write loop made no progress in 60 s')
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      const seen = await acknowledged()
      const session = await context.newCDPSession(page)
      const crashed = new Promise((resolve) => page.once('crash', resolve))
      // The answer never comes: the process that would send it is gone.
      void session.send('Page.crash').catch(() => undefined)
      await crashed
      await page.close().catch(() => undefined)
      next = seen + 1
    }
    // The loop made progress between kills: the checks ran on real work.
    expect(next).toBeGreaterThan(KILLS * 5)
  }, 900_000)
})
