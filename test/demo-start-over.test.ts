/**
 * The demo page's "Start over" with more than one tab open, in Debian's Chromium (Vite serves demo/,
 * as in test/demo.test.ts). The tab that starts over tells the others, which let go of the store and
 * reload once it is deleted: every tab ends on the seed project, one writing and the others
 * following, and nothing fails uncaught. When something outside the demo's tabs still holds the
 * store for writing, the removal is refused with a message saying so, and the page is usable again.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type DemoServer, startDemoServer } from '../demo/server.js'
import { CHROMIUM } from './browser/driver.js'
import { launch, layers, message, openDemo, pageErrors, save, timeline } from './browser/demo-page.js'
import { capability } from './support/require.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

const SEED = {
  '/project': 'lower',
  '/project/README.md': 'lower',
  '/project/config.json': 'lower',
  '/project/migrations': 'lower',
  '/project/schema.sql': 'lower',
  '/project/src': 'lower',
  '/project/src/db.js': 'lower',
  '/project/src/server.js': 'lower',
}

/** The demo started again in this tab: the workspace open and idle. */
async function ready(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready' && document.body.dataset.busy === 'false', null, { timeout: 30_000 })
}

const role = (page: Page) => page.getAttribute('body', 'data-tab')

/** Clicks "Start over" in `page`; resolves once every tab in `tabs` has loaded the page again and is ready. */
async function startOverWith(page: Page, tabs: readonly Page[]): Promise<void> {
  const loads = tabs.map((tab) => tab.waitForEvent('load', { timeout: 30_000 }))
  await page.click('#start-over')
  await Promise.all(loads)
  for (const tab of tabs) await ready(tab)
}

describe.skipIf(!available)('the demo page: "Start over" with other tabs open (Chromium)', () => {
  let server: DemoServer
  let browser: Browser
  let context: BrowserContext
  let cacheDir: string

  beforeAll(async () => {
    cacheDir = mkdtempSync(join(tmpdir(), 'rewindfs-demo-vite-'))
    server = await startDemoServer({ port: 0, cacheDir, logLevel: 'error' })
    browser = await launch()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
    if (cacheDir) rmSync(cacheDir, { recursive: true, force: true })
  })
  afterEach(async () => {
    await context?.close()
    // Nothing may fail silently inside the pages or their workers.
    expect(pageErrors.splice(0)).toEqual([])
  })

  it.each(['writer', 'follower'] as const)('started over from the %s tab: both tabs reload onto the seed project, one writes and the other follows', async (from) => {
    context = await browser.newContext()
    const one = await openDemo(context, server.url)
    expect(await save(one, '/project/notes.md', 'before\n')).toBe('ok: Saved /project/notes.md')
    const two = await openDemo(context, server.url)
    expect([await role(one), await role(two)]).toEqual(['writer', 'follower'])
    expect((await layers(two))['/project/notes.md']).toBe('upper · added')

    await startOverWith(from === 'writer' ? one : two, [one, two])
    for (const tab of [one, two]) {
      expect(await layers(tab)).toEqual(SEED)
      expect(await timeline(tab)).toEqual([])
    }
    expect([await role(one), await role(two)].sort()).toEqual(['follower', 'writer'])
    // The store works again: the writer saves, the follower hears it.
    const writer = (await role(one)) === 'writer' ? one : two
    const follower = writer === one ? two : one
    expect(await save(writer, '/project/after.md', 'after\n')).toBe('ok: Saved /project/after.md')
    await follower.waitForFunction(() => document.querySelector('#tree li[data-path="/project/after.md"]') !== null, null, { timeout: 15_000 })
    expect((await layers(follower))['/project/after.md']).toBe('upper · added')
  })

  it('a store something else holds for writing: refused with a message saying so, and the page is usable again', async () => {
    context = await browser.newContext()
    // A same-origin page that is not the demo takes the OPFS store's writer lock and keeps it.
    const holder = await context.newPage()
    await holder.goto(new URL('/@vite/client', server.url).href)
    await holder.evaluate(
      () =>
        new Promise<void>((held) => {
          void navigator.locks.request('rewindfs-opfs:rewindfs-demo-store', () => {
            held()
            return new Promise(() => undefined)
          })
        }),
    )
    const page = await openDemo(context, server.url)
    expect(await role(page)).toBe('follower')
    await startOverWith(page, [page])
    expect(await message(page)).toMatch(/^error: Start over did not delete anything: .*EBUSY.*close it first.*Close the other tabs/)
    expect(await layers(page)).toEqual(SEED)
    await holder.close()
    // The holder gone, this tab writes (it takes over) and a start over goes through.
    await page.waitForFunction(() => document.body.dataset.tab === 'writer', null, { timeout: 15_000 })
    expect(await save(page, '/project/notes.md', 'kept?\n')).toBe('ok: Saved /project/notes.md')
    await startOverWith(page, [page])
    expect(await layers(page)).toEqual(SEED)
    expect(await message(page)).not.toMatch(/^error/)
  })
})
