/** The fs surface's browser story in real Chromium: watching, ws.events, web streams, watchFile; Node streams absent. */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
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

  it('reads a 1 MiB file in every byte encoding without Buffer (the stack did not hold one argument per byte)', async () => {
    const context = await harness.newContext()
    const page = await harness.open(context)
    const read = await page.evaluate(() => window.rewindfsFs.encodings())
    await context.close()
    const bytes = Buffer.alloc(1 << 20)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 9)) & 0xff
    const expected: Record<string, string> = {}
    for (const encoding of ['base64', 'base64url', 'latin1', 'ascii', 'hex', 'utf16le'] as const) {
      const text = bytes.toString(encoding)
      expected[encoding] = `${text.length}:${text.slice(0, 16)}:${text.slice(-16)}`
    }
    expect(read).toEqual(expected)
  })

  it('from a Web Worker: fs.watch, fs.promises.watch and ws.events get the worker’s changes, one message per delivery, before the call’s answer', async () => {
    // The worker's bundle, handed to the page to start from a blob URL (serve() reaches node:worker_threads only outside a Web Worker).
    const worker = await build({
      entryPoints: [fileURLToPath(new URL('../../worker/browser-entry.ts', import.meta.url))],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      external: ['node:worker_threads'],
    })
    const context = await harness.newContext()
    const page = await harness.open(context)
    const result = await page.evaluate((source) => window.rewindfsFs.acrossWorker(source), worker.outputFiles[0].text)
    await context.close()
    expect(harness.pageErrors).toEqual([])
    expect(result).toEqual({
      seenBeforeAnswer: ['rename:src/new.ts', 'change:src/new.ts'],
      single: {
        all: ['rename:src/new.ts', 'change:src/new.ts', 'rename:src/new.ts', 'rename:src/renamed.ts', 'rename:src/renamed.ts', 'rename:src/new.ts'],
        timeline: ['file_create', 'rename', 'undo rename'],
        // One per call: the write, the rename and the undo.
        messages: 3,
      },
      batch: { messages: 1, events: 500, distinct: 500 },
      iterated: ['rename:d.ts', 'change:d.ts'],
      aborted: 'AbortError',
      failed: 'ENOENT',
    })
  })
})
