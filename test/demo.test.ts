/**
 * The demo page end to end in Debian's Chromium: Vite serves demo/ (its JS API, a free port), the
 * engine runs in the page's Web Worker on IndexedDB, and the tests click through it as a person
 * would. Each test gets a fresh browser profile, so a fresh IndexedDB. Screenshots go to
 * .vitest-artifacts/demo-*.png.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type DemoServer, startDemoServer } from '../demo/server.js'
import { CHROMIUM } from './browser/driver.js'
import { agentLog, checkpoint, click, launch, layers, message, openDemo, openFile, pageErrors, preview, reload, remove, save, screenshot, startOver, timeline } from './browser/demo-page.js'
import { capability } from './support/require.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

/** The seed project as the page lists it before anything is written. */
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

describe.skipIf(!available)('the demo page (Vite, Web Worker, IndexedDB) in Chromium', () => {
  let server: DemoServer
  let browser: Browser
  let context: BrowserContext
  let cacheDir: string

  beforeAll(async () => {
    // Vite's pre-bundled dependencies in a directory of this run's own.
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
    // Nothing may fail silently inside the page or its worker.
    expect(pageErrors.splice(0)).toEqual([])
  })

  it('write → checkpoint → break → preview → restore → undo-restore, the state survives a reload, start over empties it', async () => {
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
    const page = await openDemo(context, server.url)
    // Chromium has an origin private file system: the journal goes to the OPFS store.
    expect(await page.getAttribute('body', 'data-store')).toBe('opfs')
    expect(await layers(page)).toEqual(SEED)
    expect(await timeline(page)).toEqual([])

    // Write: an edit of a lower file and a new file, both in the upper layer.
    expect(await openFile(page, '/project/src/server.js')).toContain("console.log('listening on', config.port)")
    expect(await save(page, '/project/src/server.js', 'export const version = 2\n')).toBe('ok: Saved /project/src/server.js')
    expect(await save(page, '/project/notes.md', 'remember the port\n')).toBe('ok: Saved /project/notes.md')
    expect(await checkpoint(page, 'known-good')).toBe('ok: Checkpoint known-good made')

    // Break: overwrite the edit, delete a lower file; an invalid config is refused by the validator.
    expect(await save(page, '/project/src/server.js', 'export const version = (\n')).toBe('ok: Saved /project/src/server.js')
    expect(await remove(page, '/project/README.md')).toBe('ok: Deleted /project/README.md')
    expect(await save(page, '/project/config.json', '{ "port": 9090, }')).toMatch(/^error: Refused, nothing was written:\n\/project\/config\.json \(json\): invalid JSON at 1:/)
    const broken = { ...SEED, '/project/README.md': 'whiteout', '/project/notes.md': 'upper · added', '/project/src/server.js': 'upper · modified' }
    expect(await layers(page)).toEqual(broken)
    expect(await timeline(page)).toEqual([
      'file delete /project/README.md',
      'edit /project/src/server.js /project/src/server.js',
      '◆ known-good (manual)',
      'edit /project/notes.md /project/notes.md',
      'edit /project/src/server.js /project/src/server.js',
    ])

    // Preview: the diff of what a restore to known-good would change, nothing changed yet.
    expect(await openFile(page, '/project/src/server.js')).toBe('export const version = (\n')
    await click(page, '#timeline li.checkpoint[data-name="known-good"] button')
    const shown = await preview(page)
    expect(shown.title).toBe('Restore to known-good would change 2 paths:')
    expect(shown.changes.map((c) => c.change).sort()).toEqual(['added /project/README.md', 'modified /project/src/server.js'])
    const serverPatch = shown.changes.find((c) => c.change.endsWith('server.js'))?.patch
    expect(serverPatch).toContain('-export const version = (')
    expect(serverPatch).toContain('+export const version = 2')
    expect(await layers(page)).toEqual(broken)
    await screenshot(page, 'preview')

    // Restore, then undo it: each step visible in the tree and in the open file, which follows it.
    await click(page, '#restore')
    expect(await message(page)).toBe('ok: Restored to known-good: 2 paths changed back')
    const good = { ...SEED, '/project/notes.md': 'upper · added', '/project/src/server.js': 'upper · modified' }
    expect(await layers(page)).toEqual(good)
    expect(await page.inputValue('#editor')).toBe('export const version = 2\n')
    await screenshot(page, 'restored')
    expect(await openFile(page, '/project/README.md')).toContain('# shop')

    await click(page, '#undo-restore')
    expect(await message(page)).toBe('ok: The last restore is undone (press again to re-apply it)')
    expect(await layers(page)).toEqual(broken)
    expect((await timeline(page))[0]).toBe('restore known-good (undone) /project/README.md /project/src/server.js')
    // The README open in the editor is deleted again: the editor follows it to empty.
    expect(await page.inputValue('#editor')).toBe('')
    expect(await openFile(page, '/project/src/server.js')).toBe('export const version = (\n')

    // An edit not saved yet is never overwritten by a restore: it stays for the person to save or drop.
    await page.fill('#editor', 'unsaved work\n')
    await click(page, '#undo-restore')
    expect(await message(page)).toBe('ok: The restore is applied again')
    expect(await layers(page)).toEqual(good)
    expect((await timeline(page))[0]).toBe('restore known-good /project/README.md /project/src/server.js')
    expect(await page.inputValue('#editor')).toBe('unsaved work\n')
    await click(page, '#undo-restore')
    expect(await layers(page)).toEqual(broken)

    // Reload: the worker reopens the store and finds the same files and checkpoints.
    const checkpointsBefore = (await timeline(page)).filter((row) => row.startsWith('◆'))
    await reload(page)
    expect(await layers(page)).toEqual(broken)
    expect(await openFile(page, '/project/src/server.js')).toBe('export const version = (\n')
    expect(await openFile(page, '/project/notes.md')).toBe('remember the port\n')
    expect((await timeline(page)).filter((row) => row.startsWith('◆'))).toEqual(checkpointsBefore)
    expect(checkpointsBefore).toContain('◆ known-good (manual)')
    await screenshot(page, 'after-reload')

    // Start over: the store and the project deleted, the seed project written again, no history.
    await startOver(page)
    expect(await layers(page)).toEqual(SEED)
    expect(await timeline(page)).toEqual([])
    expect(await openFile(page, '/project/src/server.js')).toContain("console.log('listening on', config.port)")
  })

  it('story 1: the agent writes a bad config, the validator refuses the transaction and nothing lands', async () => {
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
    const page = await openDemo(context, server.url)
    const seedConfig = await openFile(page, '/project/config.json')
    await click(page, '#agent-config')
    const log = await agentLog(page)
    expect(log[0]).toEqual({ kind: 'step', text: 'agent: set the port to 9090 in /project/config.json (in a transaction, validators run before commit)' })
    expect(log[1].kind).toBe('error')
    expect(log[1].text).toMatch(/^refused by json: \/project\/config\.json: invalid JSON at 5:1: /)
    expect(log[2]).toEqual({ kind: 'ok', text: 'nothing landed: /project/config.json is unchanged' })
    expect(log).toHaveLength(3)
    expect(await message(page)).toBe('ok: Story 1: the validator refused the bad config; nothing was written')
    // The workspace itself, not only the agent's word: still the lower file, no operation recorded.
    expect(await layers(page)).toEqual(SEED)
    expect(await timeline(page)).toEqual([])
    expect(await openFile(page, '/project/config.json')).toBe(seedConfig)
    await screenshot(page, 'story-bad-config')
  })

  it('story 2: a 7-step migration fails at step 4 and is restored to its start, which a reload keeps', async () => {
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
    const page = await openDemo(context, server.url)
    const seedSchema = await openFile(page, '/project/schema.sql')
    await click(page, '#agent-migration')
    const log = (await agentLog(page)).map(({ kind, text }) => `${kind}: ${text}`)
    expect(log.slice(0, 5)).toEqual([
      "step: agent: checkpoint 'before-migration' before a 7-step migration",
      'step: step 1/7 add-email: wrote /project/migrations/001-add-email.sql',
      'step: step 2/7 backfill-email: wrote /project/migrations/002-backfill-email.sql',
      'step: step 3/7 add-orders-total: wrote /project/migrations/003-add-orders-total.sql',
      'error: step 4/7 unique-email failed: duplicate key value violates unique constraint "users_email" (two users share a name)',
    ])
    expect(log[5]).toMatch(/^step: agent: restore to 'before-migration' would revert 5 paths: /)
    expect(log[6]).toBe("ok: restored to 'before-migration': steps 1–4 are gone, the project is as before the migration")
    expect(log).toHaveLength(7)
    expect(await message(page)).toBe('ok: Story 2: the migration failed at step 4; restored to before-migration')
    expect(await layers(page)).toEqual(SEED)
    expect(await openFile(page, '/project/schema.sql')).toBe(seedSchema)
    const rows = await timeline(page)
    // Every step stays in the history; the restore sits on top, after the guard checkpoint it made.
    expect(rows).toEqual([
      expect.stringMatching(/^restore before-migration \/project\/migrations\/001-add-email\.sql .* \+2$/),
      expect.stringMatching(/^◆ guard-\w+ \(guard\)$/),
      'file edit /project/schema.sql',
      'file create /project/migrations/004-unique-email.sql',
      'file edit /project/schema.sql',
      'file create /project/migrations/003-add-orders-total.sql',
      'file edit /project/schema.sql',
      'file create /project/migrations/002-backfill-email.sql',
      'file edit /project/schema.sql',
      'file create /project/migrations/001-add-email.sql',
      '◆ before-migration (manual)',
    ])
    await screenshot(page, 'story-migration')

    await reload(page)
    expect(await layers(page)).toEqual(SEED)
    expect(await openFile(page, '/project/schema.sql')).toBe(seedSchema)
  })
})
