/**
 * Tabs, as an IDE author meets them: two tabs of one origin open the engine in a Web Worker over
 * one store (IndexedDB and OPFS alike), in Debian's Chromium. The first writes; the second opens
 * frozen, refuses writes and transactions through the worker, and hears each of the writer's
 * commits as a 'reload' event (its watchers told the paths) with the new state loaded; when the
 * writer's page closes, it becomes the writer (a 'writer' event, its status says so) and writes.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM } from './browser/driver.js'
import { type Site, bundleModule, startSite } from './browser/site.js'
import type { Tab } from './browser/tabs-page.js'
import { capability } from './support/require.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

function call<K extends keyof Tab>(page: Page, name: K, ...args: Parameters<Tab[K]>): Promise<Awaited<ReturnType<Tab[K]>>> {
  return page.evaluate(([member, list]) => (window.tab[member] as (...a: unknown[]) => unknown)(...list), [name, args] as const) as Promise<Awaited<ReturnType<Tab[K]>>>
}

describe.skipIf(!available)('tabs sharing one store through the worker (Chromium)', () => {
  let site: Site

  beforeAll(async () => {
    const [page, engine] = await Promise.all([
      bundleModule(fileURLToPath(new URL('./browser/tabs-page.ts', import.meta.url))),
      bundleModule(fileURLToPath(new URL('../worker/browser-entry.ts', import.meta.url))),
    ])
    site = await startSite({ '/': page }, { '/engine.js': engine })
  })
  afterAll(async () => {
    await site?.close()
    expect(site?.errors ?? []).toEqual([])
  })

  describe.each(['indexeddb', 'opfs'] as const)('%s', (kind) => {
    let context: BrowserContext

    afterAll(async () => {
      await context?.close()
    })

    it('one writer; the follower is frozen, hears the commits and reloads them; it takes over when the writer closes', async () => {
      context = await site.browser.newContext()
      const name = `tabs-${kind}`
      const first = await site.open(context)
      expect(await call(first, 'open', kind, name)).toEqual({ tab: 'writer', frozen: null })
      expect(await call(first, 'write', '/app/one.txt', 'one')).toBe('written')

      const second = await site.open(context)
      const opened = await call(second, 'open', kind, name)
      expect(opened.tab).toBe('follower')
      expect(opened.frozen).toMatch(/read-only/)
      expect(await call(second, 'files')).toEqual({ '/app/a.txt': 'from the lower layer', '/app/one.txt': 'one' })

      // Every write is refused, a transaction too, and nothing reaches the writer.
      expect(await call(second, 'write', '/app/nope.txt', 'no')).toBe('EROFS')
      expect(await call(second, 'transaction', '/app/nope.json')).toBe('EROFS')
      expect(await call(second, 'member', 'undo')).toBe('EROFS')
      expect(await call(second, 'member', 'checkpoint')).toBe('EROFS')
      // Lifting the freeze would take writes this tab can never make durable (another tab holds the lock).
      expect(await call(second, 'member', 'unfreeze')).toBe('EROFS')
      expect(await call(second, 'write', '/app/nope.txt', 'no')).toBe('EROFS')
      expect(Object.keys(await call(first, 'files'))).toEqual(['/app/a.txt', '/app/one.txt'])

      // The writer commits: the follower is told, with the paths, and reads the new state.
      expect(await call(first, 'write', '/app/two.txt', 'two')).toBe('written')
      const [reload] = await call(second, 'waitFor', 'reload', 1)
      expect(reload.paths).toEqual(['/app/two.txt'])
      expect(reload.operations).toEqual(['file_create'])
      expect((await call(second, 'files'))['/app/two.txt']).toBe('two')
      expect(await call(second, 'watched')).toContain('rename app/two.txt')
      expect(await call(first, 'write', '/app/one.txt', 'one, edited')).toBe('written')
      await call(second, 'waitFor', 'reload', 2)
      expect((await call(second, 'files'))['/app/one.txt']).toBe('one, edited')
      expect(await call(second, 'watched')).toContain('change app/one.txt')
      expect(await call(second, 'status')).toMatchObject({ tab: 'follower' })

      // The writer's page goes away: the follower is next in the Web Locks queue.
      await first.close()
      await call(second, 'waitFor', 'writer', 1)
      expect(await call(second, 'status')).toEqual({ tab: 'writer', frozen: null })
      expect(await call(second, 'write', '/app/three.txt', 'three')).toBe('written')
      expect(await call(second, 'transaction', '/app/four.txt')).toBe('committed')

      // A new tab follows the new writer, and sees everything acknowledged so far.
      const third = await site.open(context)
      expect((await call(third, 'open', kind, name)).tab).toBe('follower')
      expect(await call(third, 'files')).toEqual({
        '/app/a.txt': 'from the lower layer',
        '/app/four.txt': 'in a transaction',
        '/app/one.txt': 'one, edited',
        '/app/three.txt': 'three',
        '/app/two.txt': 'two',
      })
    })

    it('reloading the only tab keeps what was acknowledged, and it writes again', async () => {
      context = await site.browser.newContext()
      const name = `reload-${kind}`
      const page = await site.open(context)
      expect((await call(page, 'open', kind, name)).tab).toBe('writer')
      expect(await call(page, 'write', '/app/kept.txt', 'acknowledged')).toBe('written')
      await site.reload(page)
      expect(await call(page, 'open', kind, name)).toEqual({ tab: 'writer', frozen: null })
      expect((await call(page, 'files'))['/app/kept.txt']).toBe('acknowledged')
      expect(await call(page, 'write', '/app/after.txt', 'after the reload')).toBe('written')
    })
  })
})
