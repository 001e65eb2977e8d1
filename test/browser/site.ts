/**
 * A small site for the OPFS and tabs tests: page and worker modules bundled with esbuild (the
 * package's names aliased to the sources, so the page, the worker and the adapters share one copy of
 * each class), served on 127.0.0.1 (a secure context: OPFS and Web Locks behave as on a real site),
 * and Debian's Chromium driven by playwright-core.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { CHROMIUM, LAUNCH_ARGS } from './driver.js'

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export const ALIASES = { 'rewindfs/adapter-kit': source('../../src/adapter-kit.ts'), rewindfs: source('../../src/index.ts') }

/** A module as one browser script: `entry` is a file, or `{ contents }` resolved from test/browser/. */
export async function bundleModule(entry: string | { contents: string }): Promise<string> {
  const result = await build({
    ...(typeof entry === 'string' ? { entryPoints: [entry] } : { stdin: { contents: entry.contents, resolveDir: source('.'), sourcefile: 'inline.ts', loader: 'ts' } }),
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    alias: ALIASES,
  })
  return result.outputFiles[0].text
}

const html = (script: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>rewindfs</title></head><body><pre id="status">loading…</pre><script type="module" src="${script}"></script></body></html>`

export interface Site {
  readonly url: string
  readonly browser: Browser
  /** A new browser context: an incognito one (its storage in memory), or with `profile`, the one context whose storage is on disk. */
  newContext(): Promise<BrowserContext>
  /** Opens `path` (default '/') in `context` and waits until its module says 'ready'; page errors are collected. */
  open(context: BrowserContext, path?: string): Promise<Page>
  reload(page: Page): Promise<void>
  readonly errors: string[]
  close(): Promise<void>
}

function ready(page: Page): Promise<unknown> {
  return page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready')
}

/**
 * Serves `pages` (path → page module script) and `scripts` (path → script), and launches Chromium.
 * Its contexts are incognito (OPFS and IndexedDB in memory: flush() costs nothing) unless `profile`
 * names a directory for a persistent one, whose storage is on disk as a user's is (benches).
 */
export async function startSite(pages: Record<string, string>, scripts: Record<string, string>, options: { profile?: string } = {}): Promise<Site> {
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname
    const module = path.startsWith('/_page') && path.endsWith('.js') ? path.slice('/_page'.length, -'.js'.length) || '/' : undefined
    if (pages[path] !== undefined) response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html(`/_page${path === '/' ? '' : path}.js`))
    else if (module !== undefined && pages[module] !== undefined) response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(pages[module])
    else if (scripts[path] !== undefined) response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(scripts[path])
    else response.writeHead(404).end()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let browser: Browser
  let persistent: BrowserContext | undefined
  try {
    if (options.profile !== undefined) {
      persistent = await chromium.launchPersistentContext(options.profile, { executablePath: CHROMIUM, args: LAUNCH_ARGS })
      browser = persistent.browser()!
    } else browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  } catch (error) {
    server.close()
    throw error
  }
  const errors: string[] = []
  return {
    url,
    browser,
    errors,
    newContext: async () => persistent ?? browser.newContext(),
    async open(context, path = '/') {
      const page = await context.newPage()
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(`console: ${message.text()}`)
      })
      await page.goto(`${url}${path}`)
      await ready(page)
      return page
    },
    async reload(page) {
      await page.reload()
      await ready(page)
    },
    async close() {
      await persistent?.close()
      await browser.close()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A page module that runs scenarios in a dedicated worker (`/worker.js`): `window.work(scenario, ...args)`. */
export const WORKER_PAGE = `
const worker = new Worker('/worker.js', { type: 'module' })
const waiting = new Map()
let next = 1
worker.onmessage = (event) => {
  const { id, ...answer } = event.data
  waiting.get(id)?.(answer)
  waiting.delete(id)
}
window.work = (scenario, ...args) => new Promise((resolve) => {
  const id = next++
  waiting.set(id, resolve)
  worker.postMessage({ id, scenario, args })
})
document.getElementById('status').textContent = 'ready'
`

/** Runs a worker scenario from the test: its value, or a thrown error carrying the worker's message. */
export async function work<T = unknown>(page: Page, scenario: string, ...args: unknown[]): Promise<T> {
  const answer = (await page.evaluate(([s, a]) => (window as unknown as { work: (s: string, ...a: unknown[]) => Promise<unknown> }).work(s, ...a), [scenario, args] as const)) as
    | { ok: true; value: T }
    | { ok: false; error: string; code: string }
  if (!answer.ok) throw Object.assign(new Error(`in the worker: ${answer.error}`), { code: answer.code })
  return answer.value
}
