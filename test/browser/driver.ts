/**
 * Real-browser harness: bundles a page module with esbuild (platform browser, so adapters and src go
 * in as a browser would load them), serves it on 127.0.0.1 with node:http (a secure context, so
 * IndexedDB and Web Locks behave as on a real site), and drives Debian's Chromium with playwright-core.
 * Used by the browser tests and by bench/indexeddb.ts.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { build } from 'esbuild'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Debian's Chromium as root on a machine without network: no sandbox, no background traffic. */
export const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>rewindfs browser test</title>
<style>body{font:14px/1.4 monospace;margin:16px}h1{font-size:16px}pre{white-space:pre-wrap}</style></head>
<body><h1>rewindfs in Chromium</h1><pre id="status">loading…</pre>
<script type="module" src="/page.js"></script></body></html>`

/** The page module as one browser script. */
export async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0].text
}

function serve(script: string): Promise<Server> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname
    if (path === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(HTML)
    else if (path === '/page.js') response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script)
    else response.writeHead(404).end()
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

export interface Harness {
  readonly url: string
  readonly browser: Browser
  /** A fresh browser profile (its own IndexedDB origin storage); pages in one context share it. */
  newContext(): Promise<BrowserContext>
  /** Opens the page in `context` and waits until the module has run; page errors are collected. */
  open(context: BrowserContext): Promise<Page>
  /** Reloads the page and waits until the module has run again. */
  reload(page: Page): Promise<void>
  /** Uncaught errors and console errors of every page opened so far. */
  readonly pageErrors: string[]
  close(): Promise<void>
}

function ready(page: Page): Promise<unknown> {
  return page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready')
}

/** Bundles `entry`, serves it and launches Chromium. */
export async function startHarness(entry: string): Promise<Harness> {
  const server = await serve(await bundle(entry))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  let browser: Browser
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  } catch (error) {
    server.close()
    throw error
  }
  const pageErrors: string[] = []
  return {
    url,
    browser,
    pageErrors,
    newContext: () => browser.newContext(),
    async open(context) {
      const page = await context.newPage()
      page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
      page.on('console', (message) => {
        if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`)
      })
      await page.goto(url)
      await ready(page)
      return page
    },
    async reload(page) {
      await page.reload()
      await ready(page)
    },
    async close() {
      await browser.close()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
