/**
 * The IndexedDB adapter in real Chromium (Debian's, driven by playwright-core): the store and the tree
 * survive a page reload, and two tabs share one store as one writer and one read-only follower that
 * hears the writer's commits. A screenshot per test goes to .vitest-artifacts/.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { capability } from '../support/require.js'
import { CHROMIUM, startHarness, type Harness } from './driver.js'
import type { Scenarios } from './page.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)
const ARTIFACTS = fileURLToPath(new URL('../../.vitest-artifacts/', import.meta.url))

type Name = keyof Scenarios
function call<K extends Name>(page: Page, name: K, ...args: Parameters<Scenarios[K]>): Promise<Awaited<ReturnType<Scenarios[K]>>> {
  return page.evaluate(
    ([scenario, list]) => (window.rewindfsTest[scenario] as (...a: unknown[]) => unknown)(...list),
    [name, args] as const,
  ) as Promise<Awaited<ReturnType<Scenarios[K]>>>
}

async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: `${ARTIFACTS}indexeddb-${name}.png` })
}

describe.skipIf(!available)('IndexedDB adapter in Chromium', () => {
  let harness: Harness
  let context: BrowserContext

  beforeAll(async () => {
    harness = await startHarness(fileURLToPath(new URL('./page.ts', import.meta.url)))
  })
  afterAll(async () => {
    await harness?.close()
  })
  afterEach(async () => {
    await context?.close()
    // Nothing may fail silently inside the pages.
    expect(harness.pageErrors.splice(0)).toEqual([])
  })

  it('a database deleted underneath the store: the next sync fails naming it (ENOENT) instead of writing a journal without its beginning', async () => {
    context = await harness.newContext()
    const page = await harness.open(context)
    const result = await call(page, 'deletedUnderneath', 'deleted-underneath')
    expect(result.deleted).toBe('deleted')
    expect(result.sync).toMatch(/^EDEGRADED: .*ENOENT: the IndexedDB database was deleted while it was open/)
    // Nothing was made anew: the next open starts an empty store, not a damaged one.
    expect(result).toMatchObject({ files: {}, frozen: null, warnings: [] })
  })

  it('a workspace on the IndexedDB store survives a page reload: same files, checkpoints, state', async () => {
    context = await harness.newContext()
    const page = await harness.open(context)
    const written = await call(page, 'storeSession', 'reload-store')
    expect(written.files).toMatchObject({
      '/app/src/main.ts': '644 export const edited = true\n',
      '/app/entry': '-> src/main.ts',
    })
    expect(written.degraded).toBeNull()

    await harness.reload(page)
    const reopened = await call(page, 'storeReopen', 'reload-store')
    const { restored, ...state } = reopened
    expect(state).toEqual(written)
    expect(restored).toBe('export {}\n')
    await screenshot(page, 'store-reload')
  })

  it('the tree keeps a flush across a reload and serves it as a lower layer, loading on demand above the preload limit', async () => {
    context = await harness.newContext()
    const page = await harness.open(context)
    const versions = await call(page, 'treeFlush', 'reload-tree')
    expect(versions).toHaveLength(5)

    await harness.reload(page)
    const preloaded = await call(page, 'treeRead', 'reload-tree')
    expect(preloaded.beforePrefetch).toBe('read')
    expect(preloaded.files).toEqual({
      '/site/': '755',
      '/site/assets/': '755',
      '/site/assets/app.js': '644 console.log(1)',
      '/site/home': '-> index.html',
      '/site/index.html': '644 <h1>hello</h1>',
    })
    expect(preloaded.versions).toEqual([versions[1]])

    const lazy = await call(page, 'treeRead', 'reload-tree', 1)
    expect(lazy.beforePrefetch).toBe('ERR_REWINDFS_NOT_LOADED')
    expect(lazy.files).toEqual(preloaded.files)

    // A workspace over the tree with its journal in the same database: flush, reload, reopen.
    const flushed = await call(page, 'treeWorkspace', 'reload-tree')
    expect(flushed.applied).toBe(true)
    expect(flushed.changes).toEqual(['added /site/new.txt', 'modified /site/index.html'])
    await harness.reload(page)
    const reopened = await call(page, 'treeWorkspaceReopen', 'reload-tree')
    expect(reopened.files).toEqual(flushed.files)
    expect(reopened.files['/site/draft.txt']).toBe('644 not flushed')
    expect(reopened.checkpoints).toEqual(['edited'])
    expect(reopened.unflushed).toEqual(['added /site/draft.txt'])
    expect(reopened.inTree).toBe('<h1>edited</h1>')
    await screenshot(page, 'tree-reload')
  })

  it('two tabs: the second is read-only and hears each commit of the first; it takes over writing when the writer closes', async () => {
    context = await harness.newContext()
    const first = await harness.open(context)
    const second = await harness.open(context)
    expect(await call(first, 'openWriter', 'two-tabs')).toEqual({ readOnly: false })
    await call(first, 'writerWrite', '/notes.md', 'one')

    expect(await call(second, 'openReader', 'two-tabs')).toEqual({ readOnly: true })
    expect(await call(second, 'readerTryWrite')).toBe('EROFS')
    expect(await call(second, 'strictWriter', 'two-tabs')).toBe('EBUSY')
    expect(await call(second, 'readerFiles')).toEqual({ '/notes.md': '644 one' })

    const seen = await call(second, 'readerChanges')
    await call(first, 'writerWrite', '/notes.md', 'two')
    expect(await call(second, 'readerWaitForChange', seen)).toBeGreaterThan(seen)
    expect(await call(second, 'readerFiles')).toEqual({ '/notes.md': '644 two' })
    await screenshot(first, 'two-tabs-writer')
    await screenshot(second, 'two-tabs-reader')

    // Closing the writer releases its Web Lock: the reader, next in line, takes over writing.
    const before = await call(second, 'readerChanges')
    await call(first, 'closeWriter')
    expect(await call(second, 'readerWaitForChange', before)).toBe(before + 1)
    expect(await call(second, 'readerRole')).toEqual({ readOnly: false, last: 'writer' })
    expect(await call(second, 'readerWrite', '/notes.md', 'three')).toEqual({ '/notes.md': '644 three' })
    const third = await harness.open(context)
    expect(await call(third, 'openReader', 'two-tabs')).toEqual({ readOnly: true })
    expect(await call(third, 'readerFiles')).toEqual({ '/notes.md': '644 three' })
  })

  it('an upgrade blocked by another tab is EBUSY, and opens once that tab lets go', async () => {
    context = await harness.newContext()
    const other = await harness.open(context)
    const page = await harness.open(context)
    await call(other, 'holdForeignDatabase', 'shared-name')
    expect(await call(page, 'storeRoundTrip', 'shared-name')).toBe('EBUSY')
    await call(other, 'releaseForeignDatabase')
    expect(await call(page, 'storeRoundTrip', 'shared-name')).toEqual(['round trip'])
    await screenshot(page, 'blocked-upgrade')
  })

  it('sets the journal, a blob and metadata aside, each in one transaction that reads then writes', async () => {
    context = await harness.newContext()
    const page = await harness.open(context)
    const result = await call(page, 'setAsideRoundTrip', 'set-aside')
    expect(result.names).toEqual([expect.stringMatching(/^journal\.torn-/), expect.stringMatching(/^blob\.damaged-.*\.blob$/), expect.stringMatching(/^meta\.damaged-.*\.key$/)])
    expect(result.kept).toEqual([...result.names].sort())
    expect(result).toMatchObject({ journal: ['one', 'two'], blobs: [], meta: null })
  })
})
