/**
 * The engine in a real Web Worker (Debian's Chromium through playwright-core): the page bundles
 * rewindfs/worker, the worker is worker/browser-entry bundled as a module worker, the store is
 * IndexedDB. What the page sees must be what a Node caller sees, and the state must survive a reload.
 */
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { type Browser, type Page, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { capability } from './support/require.js'
import { CHROMIUM } from './browser/driver.js'
import type { Suite } from './browser/suite-page.js'
import { asyncWorkspaceCases } from './support/async-workspace-cases.js'
import { fsScenarios } from './support/fs-scenarios.js'
import { realTranscript } from './support/real-fs.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

const PAGE = `
import { openWorkerWorkspace } from '../worker/index.ts'

const open = (name) =>
  openWorkerWorkspace(new Worker('/worker.js', { type: 'module' }), {
    lower: { kind: 'fixture', files: { '/app/a.txt': 'from the lower layer' } },
    store: { kind: 'indexeddb', name },
    validators: ['json'],
    autoCheckpoint: false,
  })

window.scenarios = {
  async write(name) {
    const ws = await open(name)
    const fs = ws.fs.promises
    await fs.writeFile('/app/b.txt', 'written in a worker')
    const bytes = await fs.readFile('/app/a.txt')
    const missing = await fs.readFile('/nope').catch((e) => ({ ...e, message: e.message, isError: e instanceof Error }))
    const data = new TextEncoder().encode('handed over')
    await ws.fs.writeFile('/app/t.txt', data, { transfer: true })
    const batch = await ws.batch([{ op: 'stat', args: ['/app/b.txt'] }, { op: 'readFile', args: ['/app/t.txt', 'utf8'] }, { op: 'rmdir', args: ['/app'] }])
    const refused = await ws.transaction((staged) => staged.promises.writeFile('/app/x.json', '{')).catch((e) => e.name + ' ' + e.failures[0].validator)
    await ws.checkpoint({ name: 'before-reload' })
    await ws.sync()
    await ws.close()
    return {
      bytes: { isUint8Array: bytes instanceof Uint8Array, ownBuffer: bytes.buffer.byteLength === bytes.byteLength, text: new TextDecoder().decode(bytes) },
      missing,
      detached: data.buffer.byteLength === 0,
      batch: [batch[0].value.isFile() && batch[0].value.size, batch[1].value, batch[2].error.code],
      refused,
      closed: ws.status.closed,
    }
  },
  async crash() {
    const crashes = []
    const ws = await openWorkerWorkspace(new Worker('/crash-worker.js', { type: 'module' }), { validators: ['explodes'], onCrash: (error) => crashes.push(error.code) })
    await ws.fs.promises.writeFile('/a', 'before')
    const pending = await ws.transaction((staged) => staged.promises.writeFile('/b', 'never')).catch((e) => ({ code: e.code, message: e.message }))
    const later = await ws.fs.promises.readFile('/a').catch((e) => e.code)
    return { pending, later, crashes, crashed: typeof ws.status.crashed === 'string' }
  },
  async ending() {
    const settled = (promise) => Promise.race([promise.then(() => 'resolved', (e) => e.code), new Promise((resolve) => setTimeout(() => resolve('still pending'), 5000))])
    // The page ends the worker itself, mid-call: a Web Worker tells nobody, yet nothing may hang.
    const crashes = []
    const worker = new Worker('/worker.js', { type: 'module' })
    const ended = await openWorkerWorkspace(worker, { onCrash: (error) => crashes.push(error.code) })
    const writing = ended.fs.promises.writeFile('/big', new Uint8Array(8 * 2 ** 20))
    worker.terminate()
    const terminated = { inFlight: await settled(writing), later: await settled(ended.fs.promises.readFile('/big')), crashes, crashed: typeof ended.status.crashed === 'string', close: await settled(ended.close()) }
    // close() while a call is in flight (a transaction whose body never ends), and twice at once.
    const ws = await openWorkerWorkspace(new Worker('/worker.js', { type: 'module' }), {})
    const body = settled(ws.transaction(() => new Promise(() => {})))
    await new Promise((resolve) => setTimeout(resolve, 100))
    const closes = [settled(ws.close()), settled(ws.close())]
    const missing = await openWorkerWorkspace(new Worker('/no-such-worker.js', { type: 'module' }), {}).catch((e) => e.code + ' ' + e.message)
    return { terminated, inFlight: await body, closes: await Promise.all(closes), after: await settled(ws.fs.promises.readFile('/a')), missing }
  },
  async serving() {
    // A worker that loads and never calls serve(), then one whose serve() comes after an await.
    const silent = await openWorkerWorkspace(new Worker('/silent-worker.js', { type: 'module' }), { serveTimeoutMs: 300 }).then(
      () => 'opened',
      (e) => ({ code: e.code, errno: e.errno, syscall: e.syscall, message: e.message }),
    )
    const ws = await openWorkerWorkspace(new Worker('/late-worker.js', { type: 'module' }), { lower: { kind: 'fixture', files: { '/a.txt': 'served late' } }, serveTimeoutMs: 10000 })
    const text = await ws.fs.promises.readFile('/a.txt', 'utf8')
    await ws.close()
    return { silent, text }
  },
  async reopen(name) {
    const ws = await open(name)
    const result = { text: await ws.fs.readFile('/app/b.txt', 'utf8'), checkpoints: (await ws.checkpoints()).map((c) => c.name), degraded: ws.status.degraded ?? null }
    await ws.close()
    return result
  },
  // An OPFS workspace whose quota the test fills and gives back: the page hears of both through
  // ws.events 'store', its status pushed by the worker (no call made while it comes back).
  async quotaOpen(name) {
    const ws = await openWorkerWorkspace(new Worker('/worker.js', { type: 'module' }), { store: { kind: 'opfs', name }, autoCheckpoint: false })
    window.quota = { ws, told: [] }
    ws.events.on('store', (event) => window.quota.told.push(event.state + ': ' + (ws.status.degraded === undefined ? 'ok' : 'degraded')))
    await ws.fs.promises.writeFile('/before.txt', 'acknowledged before the quota ran out')
    await ws.sync()
    return 'open'
  },
  async quotaFull(bytes) {
    const { ws } = window.quota
    await ws.fs.promises.writeFile('/big.bin', new Uint8Array(bytes).fill(7))
    const sync = await ws.sync().then(() => 'acknowledged', (e) => e.code + ': ' + e.message)
    await ws.fs.promises.writeFile('/while-full.txt', 'written while the quota was full')
    return { sync, degraded: ws.status.degraded !== undefined }
  },
  async quotaBack(name) {
    const { ws, told } = window.quota
    const started = Date.now()
    while (!told.some((line) => line.startsWith('reconnected')) && Date.now() - started < 20000) await new Promise((resolve) => setTimeout(resolve, 50))
    const seen = { told: [...told], degraded: ws.status.degraded ?? null }
    await ws.close()
    const again = await openWorkerWorkspace(new Worker('/worker.js', { type: 'module' }), { store: { kind: 'opfs', name }, autoCheckpoint: false })
    const files = {}
    for (const path of ['/before.txt', '/while-full.txt']) files[path] = await again.fs.promises.readFile(path, 'utf8').catch((e) => e.code)
    const big = await again.fs.promises.readFile('/big.bin')
    await again.close()
    return { ...seen, files, big: big.byteLength }
  },
}
document.getElementById('status').textContent = 'ready'
`

const html = (script: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head><body><pre id="status">loading…</pre><script type="module" src="${script}"></script></body></html>`

/** A worker whose engine throws outside any call, as a bug would (the 'error' event path of a Web Worker). */
const CRASH_WORKER = `
import { registerValidator, serve } from '../worker/serve.ts'
registerValidator('explodes', { name: 'explodes', match: '**', validate() { setTimeout(() => { throw new Error('engine exploded') }); return new Promise(() => {}) } })
await serve()
`

/** A worker that loads and never serves; one that serves after an await (a page's first message may come before it listens). */
const SILENT_WORKER = `setInterval(() => {}, 60_000)`
const LATE_WORKER = `
await new Promise((resolve) => setTimeout(resolve, 300))
await import('../worker/browser-entry.ts')
`

async function bundles(): Promise<{ page: string; worker: string; crashWorker: string; lateWorker: string; suite: string }> {
  const common = { bundle: true, platform: 'browser', format: 'esm', target: 'es2022', write: false, logLevel: 'silent' } as const
  const here = fileURLToPath(new URL('.', import.meta.url))
  const [page, worker, crashWorker, lateWorker, suite] = await Promise.all([
    build({ ...common, stdin: { contents: PAGE, resolveDir: here, sourcefile: 'worker-page.js', loader: 'js' } }),
    // serve() reaches node:worker_threads only outside a Web Worker.
    build({ ...common, entryPoints: [fileURLToPath(new URL('../worker/browser-entry.ts', import.meta.url))] }),
    build({ ...common, stdin: { contents: CRASH_WORKER, resolveDir: here, sourcefile: 'crash-worker.js', loader: 'js' } }),
    build({ ...common, stdin: { contents: LATE_WORKER, resolveDir: here, sourcefile: 'late-worker.js', loader: 'js' } }),
    // The shared suite's cases take `expect` from 'vitest': in the page, vitest's own matchers without its runner.
    build({ ...common, entryPoints: [fileURLToPath(new URL('./browser/suite-page.ts', import.meta.url))], alias: { vitest: fileURLToPath(new URL('./browser/expect-shim.ts', import.meta.url)) } }),
  ])
  return { page: page.outputFiles[0].text, worker: worker.outputFiles[0].text, crashWorker: crashWorker.outputFiles[0].text, lateWorker: lateWorker.outputFiles[0].text, suite: suite.outputFiles[0].text }
}

function serve(files: Record<string, string>): Promise<Server> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname
    if (path === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html('/page.js'))
    else if (path === '/suite') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html('/suite.js'))
    else if (files[path] !== undefined) response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(files[path])
    else response.writeHead(404).end()
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

describe.skipIf(!available)('the engine in a Web Worker (Chromium)', () => {
  let server: Server
  let browser: Browser
  let url: string
  const errors: string[] = []

  beforeAll(async () => {
    const { page, worker, crashWorker, lateWorker, suite } = await bundles()
    server = await serve({ '/page.js': page, '/worker.js': worker, '/crash-worker.js': crashWorker, '/silent-worker.js': SILENT_WORKER, '/late-worker.js': lateWorker, '/suite.js': suite })
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] })
  })
  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  async function ready(page: Page): Promise<void> {
    page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`console: ${message.text()}`)
    })
    await page.goto(url)
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready')
  }

  const run = (page: Page, scenario: 'write' | 'reopen' | 'crash' | 'ending' | 'serving' | 'quotaOpen' | 'quotaFull' | 'quotaBack', name: string | number = '') =>
    page.evaluate(([s, n]) => (window as unknown as { scenarios: Record<string, (name: string | number) => Promise<unknown>> }).scenarios[s](n), [scenario, name] as const)

  it('answers like the Node worker (bytes, Node-shaped errors, batch, validators) and keeps the state across a reload', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await ready(page)
    expect(await run(page, 'write', 'worker-browser')).toEqual({
      bytes: { isUint8Array: true, ownBuffer: true, text: 'from the lower layer' },
      missing: { errno: -2, code: 'ENOENT', syscall: 'open', path: '/nope', message: "ENOENT: no such file or directory, open '/nope'", isError: true },
      detached: true,
      batch: [19, 'handed over', 'ENOTEMPTY'],
      refused: 'ValidationError json',
      closed: true,
    })

    await page.reload()
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready')
    expect(await run(page, 'reopen', 'worker-browser')).toEqual({ text: 'written in a worker', checkpoints: ['before-reload'], degraded: null })
    await context.close()
    expect(errors).toEqual([])
  })

  it("an OPFS workspace whose quota runs out and comes back: the page's status and ws.events 'store' follow without a call, nothing acknowledged is lost", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await ready(page)
    expect(await run(page, 'quotaOpen', 'quota')).toBe('open')
    const bytes = 2 * 2 ** 20
    const origin = url.replace(/\/$/, '')
    const cdp = await context.newCDPSession(page)
    try {
      const { usage } = (await cdp.send('Storage.getUsageAndQuota', { origin })) as { usage: number }
      await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 2 ** 20 })
      expect(await run(page, 'quotaFull', bytes)).toEqual({ sync: expect.stringMatching(/^EDEGRADED: .*ENOSPC/), degraded: true })
    } finally {
      await cdp.send('Storage.overrideQuotaForOrigin', { origin })
      await cdp.detach()
    }
    expect(await run(page, 'quotaBack', 'quota')).toEqual({
      told: ['failed: degraded', 'reconnected: ok'],
      degraded: null,
      files: { '/before.txt': 'acknowledged before the quota ran out', '/while-full.txt': 'written while the quota was full' },
      big: bytes,
    })
    await context.close()
    expect(errors).toEqual([])
  })

  it('reports a Web Worker that throws outside any call: pending and later calls reject, onCrash is told once', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await ready(page)
    const crashed = (await run(page, 'crash')) as { pending: { code: string; message: string }; later: string; crashes: string[]; crashed: boolean }
    expect(crashed.pending.code).toBe('ERR_REWINDFS_WORKER_CRASHED')
    expect(crashed.pending.message).toMatch(/engine exploded/)
    expect(crashed).toMatchObject({ later: 'ERR_REWINDFS_WORKER_CRASHED', crashes: ['ERR_REWINDFS_WORKER_CRASHED'], crashed: true })
    await context.close()
    // The worker's uncaught error is the point of this test; the page itself must stay clean.
    expect(errors.filter((error) => !/engine exploded/.test(error))).toEqual([])
    errors.length = 0
  })

  it('never leaves a call pending: the page terminating the worker mid-call, close() with a call in flight, close() twice at once, a worker script that is not there', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await ready(page)
    expect(await run(page, 'ending')).toEqual({
      terminated: { inFlight: 'ERR_REWINDFS_WORKER_CRASHED', later: 'ERR_REWINDFS_WORKER_CRASHED', crashes: ['ERR_REWINDFS_WORKER_CRASHED'], crashed: true, close: 'resolved' },
      inFlight: 'ERR_REWINDFS_WORKER_CLOSED',
      closes: ['resolved', 'resolved'],
      after: 'ERR_REWINDFS_WORKER_CLOSED',
      // A worker whose script is not there says so (it said 'the worker threw: undefined').
      missing: expect.stringMatching(/^ERR_REWINDFS_WORKER_CRASHED .*could not start: its script failed to load/),
    })
    await context.close()
    expect(errors).toEqual([])
  })

  it('a worker that never calls serve() fails the open with ETIMEDOUT after serveTimeoutMs; one that serves after an await opens', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await ready(page)
    expect(await run(page, 'serving')).toEqual({
      silent: { code: 'ETIMEDOUT', errno: -110, syscall: 'open', message: expect.stringMatching(/^ETIMEDOUT: the worker never called serve\(\) within 300 ms/) },
      text: 'served late',
    })
    await context.close()
    expect(errors).toEqual([])
  })

  describe('the shared AsyncWorkspace suite, in the page against a Web Worker', () => {
    let page: Page
    beforeAll(async () => {
      const context = await browser.newContext()
      page = await context.newPage()
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
      await page.goto(`${url}suite`)
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready')
    })
    afterAll(async () => {
      await page?.context().close()
      expect(errors).toEqual([])
    })
    const runCase = (title: string) => page.evaluate((t) => (window as unknown as { suite: Suite }).suite.runCase(t), title)
    const runScenario = (title: string) => page.evaluate((t) => (window as unknown as { suite: Suite }).suite.runScenario(t), title)

    for (const title of Object.keys(asyncWorkspaceCases)) {
      it(title, async () => {
        const result = await runCase(title)
        if (!result.ok) throw new Error(`in Chromium: ${result.error}`)
      })
    }
    for (const title of Object.keys(fsScenarios)) {
      it(`fs as node:fs answers: ${title}`, async (context) => {
        const result = await runScenario(title)
        if ('skipped' in result) return context.skip()
        expect(result.transcript).toEqual(await realTranscript(title))
      })
    }
  })
})
