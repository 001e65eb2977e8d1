/**
 * Drives the demo page (demo/) as a person would: clicks its buttons, waits until it is idle again
 * (body[data-busy=false]) and reads what it shows. Used by test/demo.test.ts.
 */
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core'
import { CHROMIUM, LAUNCH_ARGS } from './driver.js'

const ARTIFACTS = fileURLToPath(new URL('../../.vitest-artifacts/', import.meta.url))

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
}

/** Uncaught errors and console errors of the pages watched, for the tests to assert there are none. */
export const pageErrors: string[] = []

function idle(page: Page): Promise<unknown> {
  return page.waitForSelector('body[data-busy="false"]', { state: 'attached' })
}

/** Opens the demo in a fresh tab of `context` and waits until the workspace is open. */
export async function openDemo(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`)
  })
  await page.goto(url)
  await ready(page)
  return page
}

async function ready(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getElementById('status')?.textContent !== 'loading…')
  const status = await page.textContent('#status')
  if (status !== 'ready') throw new Error(`the demo did not start: ${status}`)
  await idle(page)
}

export async function reload(page: Page): Promise<void> {
  await page.reload()
  await ready(page)
}

/** "Start over": the page deletes its databases and reloads onto the seed project. */
export async function startOver(page: Page): Promise<void> {
  await Promise.all([page.waitForEvent('load'), page.click('#start-over')])
  await ready(page)
}

/** Clicks and waits until the action has finished and the views are redrawn. */
export async function click(page: Page, selector: string): Promise<void> {
  await page.click(selector)
  await idle(page)
}

export async function openFile(page: Page, path: string): Promise<string> {
  await click(page, `#tree li[data-path="${path}"] button`)
  return page.inputValue('#editor')
}

export async function save(page: Page, path: string, text: string): Promise<string> {
  await page.fill('#path', path)
  await page.fill('#editor', text)
  await click(page, '#save')
  return message(page)
}

export async function remove(page: Page, path: string): Promise<string> {
  await page.fill('#path', path)
  await click(page, '#delete')
  return message(page)
}

export async function checkpoint(page: Page, name: string): Promise<string> {
  await page.fill('#checkpoint-name', name)
  await click(page, '#checkpoint')
  return message(page)
}

/** The outcome line under the editor: its class (ok or error) and text. */
export async function message(page: Page): Promise<string> {
  return page.$eval('#message', (node) => `${node.className}: ${node.textContent}`)
}

/** Each path in the file tree with its layer, and the change type for upper entries. */
export function layers(page: Page): Promise<Record<string, string>> {
  return page.$$eval('#tree li', (items) =>
    Object.fromEntries(
      items.map((item) => {
        const { path, layer } = (item as HTMLElement).dataset
        const badge = item.querySelector('.badge')?.textContent ?? ''
        return [path, layer === 'upper' ? badge : layer]
      }),
    ),
  )
}

/** The timeline rows, newest first: checkpoints as `◆ name (kind…)`, operations as `description paths`. */
export function timeline(page: Page): Promise<string[]> {
  return page.$$eval('#timeline li', (items) =>
    items.map((item) => {
      const [first, second] = Array.from(item.querySelectorAll('span')).map((span) => span.textContent ?? '')
      return item.classList.contains('checkpoint') ? `◆ ${first} (${second.split(' · ').slice(0, -1).join(' · ')})` : `${first} ${second}`
    }),
  )
}

/** What the restore preview lists: `type path` per change and the patch shown for it. */
export function preview(page: Page): Promise<{ title: string; changes: { change: string; patch: string }[] }> {
  return page.evaluate(() => ({
    title: document.getElementById('preview-title')?.textContent ?? '',
    changes: Array.from(document.querySelectorAll('#preview-changes .change')).map((node) => ({
      change: node.querySelector('h3')?.textContent ?? '',
      patch: node.querySelector('.patch')?.textContent ?? '',
    })),
  }))
}

export function agentLog(page: Page): Promise<{ kind: string; text: string }[]> {
  return page.$$eval('#agent-log li', (items) => items.map((item) => ({ kind: item.className, text: item.textContent ?? '' })))
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: `${ARTIFACTS}demo-${name}.png`, fullPage: true })
}
