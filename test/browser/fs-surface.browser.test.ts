/** The fs surface's browser story in real Chromium: watching, ws.events, web streams, watchFile; Node streams absent. */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { capability } from '../support/require.js'
import { CHROMIUM, startHarness, type Harness } from './driver.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

describe.skipIf(!available)('the fs surface in Chromium', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness(fileURLToPath(new URL('./fs-page.ts', import.meta.url)))
  })
  afterAll(async () => {
    await harness?.close()
  })

  it('watches, tells events, streams the web way and polls stats without Node', async () => {
    const context = await harness.newContext()
    const page = await harness.open(context)
    const result = await page.evaluate(() => window.rewindfsFs.surface())
    await context.close()
    expect(harness.pageErrors).toEqual([])
    expect(result).toEqual({
      dir: ['rename:b.txt', 'change:b.txt', 'rename:a.txt', 'rename:c.txt', 'rename:c.txt', 'rename:a.txt'],
      all: ['rename:app/b.txt', 'change:app/b.txt', 'rename:app/a.txt', 'rename:app/c.txt', 'rename:app/c.txt', 'rename:app/a.txt'],
      timeline: ['file_create', 'rename', 'undo rename'],
      iterated: ['rename:d.txt', 'change:d.txt'],
      aborted: 'AbortError',
      polled: ['0/0', '3/0'],
      sizes: [16384, 16384, 7232],
      streams: 'ENOSYS',
      members: true,
    })
  })
})
