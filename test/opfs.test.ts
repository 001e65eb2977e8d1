/**
 * The OPFS store in real Chromium (Debian's, driven by playwright-core), in a dedicated worker as
 * it runs for users: the Store contract (testing/store-contract.ts) with raw access to the segments
 * read apart from the store (test/browser/opfs-raw.ts), one write and one flush() per group commit
 * counted, acknowledged state across a page reload, a torn segment tail dropped and kept aside,
 * and damage in the middle of the log reported and left in place.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeContract } from '../testing/store-contract.js'
import { CHROMIUM } from './browser/driver.js'
import { type Site, WORKER_PAGE, bundleModule, startSite, work } from './browser/site.js'
import { capability } from './support/require.js'

const available = capability('chromium', existsSync(CHROMIUM) ? undefined : `no ${CHROMIUM} (run scripts/provision-chromium.sh)`)

// The checks' names, as the worker builds them from the same subject.
const contractNames = storeContract({ name: 'opfsStore', tears: true, create: () => Promise.reject(new Error('names only')) }).map((check) => check.name)

describe.skipIf(!available)('the OPFS store in Chromium', () => {
  let site: Site
  let context: BrowserContext
  let page: Page

  beforeAll(async () => {
    const worker = await bundleModule(fileURLToPath(new URL('./browser/opfs-worker.ts', import.meta.url)))
    site = await startSite({ '/': WORKER_PAGE }, { '/worker.js': worker })
    context = await site.browser.newContext()
    page = await site.open(context)
  })
  afterAll(async () => {
    await context?.close()
    await site?.close()
    expect(site?.errors ?? []).toEqual([])
  })

  it('runs in a worker and names the same contract checks', async () => {
    expect(await work(page, 'contractNames')).toEqual(contractNames)
  })

  describe('the Store contract', () => {
    contractNames.forEach((name, index) => {
      it(name, async () => {
        expect(await work(page, 'contract', index)).toBe('ok')
      }, 600_000) // the torn-append check reopens the store at every byte of a group commit
    })
  })

  it('makes each group commit durable with one write and one flush()', async () => {
    const result = await work<{ files: Record<string, string>; writes: number; flushes: number }>(page, 'session', 'counted', 20)
    expect(Object.keys(result.files)).toHaveLength(21)
    // 20 syncs and the checkpoint: one group commit each.
    expect(result.writes).toBe(21)
    expect(result.flushes).toBe(21)
  })

  it('keeps what was acknowledged across a page reload', async () => {
    const written = await work<{ files: Record<string, string> }>(page, 'session', 'reload', 3)
    await site.reload(page)
    const reopened = await work<{ files: Record<string, string>; checkpoints: string[]; frozen: string | null }>(page, 'reopen', 'reload')
    expect(reopened.files).toEqual(written.files)
    expect(reopened.checkpoints).toEqual(['after'])
    expect(reopened.frozen).toBeNull()
  })

  it('a full quota fails the group commit with ENOSPC (Chromium answers a bogus count, not an exception); nothing acknowledged is lost and the store is not damaged', async () => {
    const written = await work<{ files: Record<string, string> }>(page, 'session', 'quota', 2)
    const cdp = await context.newCDPSession(page)
    const { usage } = (await cdp.send('Storage.getUsageAndQuota', { origin: site.url })) as { usage: number }
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: site.url, quotaSize: usage + 2 ** 20 })
    try {
      expect(await work<string>(page, 'overQuota', 'quota', 4 * 2 ** 20)).toMatch(/^EDEGRADED: .*ENOSPC: the browser's storage quota/)
    } finally {
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: site.url })
      await cdp.detach()
    }
    const reopened = await work<{ files: Record<string, string>; frozen: string | null; corrupt: unknown; warnings: string[] }>(page, 'reopen', 'quota')
    expect(reopened).toMatchObject({ files: written.files, frozen: null, corrupt: null, warnings: [] })
    expect(await work(page, 'write', 'quota', '/app/later.txt', 'room again')).toBe('written')
    expect((await work<{ files: Record<string, string> }>(page, 'reopen', 'quota')).files['/app/later.txt']).toBe('room again')
  })

  it('once the quota has room again, the workspace degraded by ENOSPC reconnects by itself: the commit that failed and what came after it are durable, nothing acknowledged is lost', async () => {
    const written = await work<{ files: Record<string, string> }>(page, 'session', 'room', 2)
    const bytes = 2 * 2 ** 20
    const cdp = await context.newCDPSession(page)
    try {
      const { usage } = (await cdp.send('Storage.getUsageAndQuota', { origin: site.url })) as { usage: number }
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: site.url, quotaSize: usage + 2 ** 20 })
      const full = await work<{ sync: string; degraded: string | null }>(page, 'quotaFull', 'room', bytes)
      expect(full.sync).toMatch(/^EDEGRADED: .*ENOSPC/)
      expect(full.degraded).toMatch(/ENOSPC/)
    } finally {
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: site.url })
      await cdp.detach()
    }
    // The commit that failed was not in the store: sent again, with the write made while degraded.
    const room = await work<{ resent: number }>(page, 'roomAgain', 'room')
    expect(room).toEqual({ state: 'reconnected', resent: expect.any(Number), landed: false, after: 'committed', degraded: null })
    expect(room.resent).toBeGreaterThanOrEqual(2)
    const reopened = await work<{ files: Record<string, string>; frozen: string | null; corrupt: unknown; warnings: string[] }>(page, 'reopen', 'room')
    expect(reopened).toMatchObject({ frozen: null, corrupt: null, warnings: [] })
    const { '/app/big.bin': big, ...files } = reopened.files
    expect(big).toBe('\x07'.repeat(bytes))
    expect(files).toEqual({ ...written.files, '/app/while-full.txt': 'written while the quota was full', '/app/after.txt': 'after the room came back' })
  })

  it('a torn segment tail: dropped on open, kept aside, cut before the next append; the state is the last acknowledged one', async () => {
    const written = await work<{ files: Record<string, string> }>(page, 'session', 'torn', 2)
    await work(page, 'tear', 'torn', '{"half a record')
    const reopened = await work<{ files: Record<string, string>; frozen: string | null; corrupt: unknown; warnings: string[]; kept: string[] }>(page, 'reopen', 'torn')
    expect(reopened.files).toEqual(written.files)
    expect(reopened).toMatchObject({ frozen: null, corrupt: null })
    expect(reopened.warnings.join('\n')).toMatch(/torn/)
    // The journal with its torn text went aside before the engine replaced it; the pack's bytes with it.
    expect(reopened.kept).toHaveLength(1)
    expect(reopened.kept[0]).toMatch(/^journal\.torn-/)
    expect(await work(page, 'write', 'torn', '/app/later.txt', 'after the tear')).toBe('written')
    const again = await work<{ files: Record<string, string>; kept: string[]; warnings: string[] }>(page, 'reopen', 'torn')
    expect(again.files).toEqual({ ...written.files, '/app/later.txt': 'after the tear' })
    expect(again.kept).toEqual(reopened.kept)
    expect(again.warnings).toEqual([])
  })

  it('a torn blob record (a crash before the journal text) is kept aside as pack bytes and cut', async () => {
    const written = await work<{ files: Record<string, string> }>(page, 'session', 'torn-blob', 1)
    await work(page, 'tearBlob', 'torn-blob')
    const reopened = await work<{ files: Record<string, string>; kept: string[]; frozen: string | null }>(page, 'reopen', 'torn-blob')
    expect(reopened.files).toEqual(written.files)
    expect(reopened.frozen).toBeNull()
    expect(reopened.kept).toEqual([])
    expect(await work(page, 'write', 'torn-blob', '/app/next.txt', 'next')).toBe('written')
    const again = await work<{ files: Record<string, string>; kept: string[] }>(page, 'reopen', 'torn-blob')
    expect(again.files['/app/next.txt']).toBe('next')
    expect(again.kept).toHaveLength(1)
    expect(again.kept[0]).toMatch(/^pack\.torn-\d{8}T\d{9}Z\.00000001-\d+$/)
  })

  it('the writer reads blobs synchronously through its handles (written or still pending); a follower offers no sync read', async () => {
    expect(await work(page, 'syncReads', 'sync-reads')).toEqual({
      reads: [true, true, true, true, true],
      syncReads: 4, // the pending one came from memory
      absent: null,
      sizes: [['s0', 3000], ['s1', 3001], ['s2', 3002], ['s3', 3003], ['s4', 3004]],
      follower: 'undefined',
      closed: 'undefined',
    })
  })

  it('purge overwrites the content in the segments (its versions, after a reopen); the store opens and verifies clean', async () => {
    const result = await work<{ report: Record<string, unknown>; hits: string[]; after: Record<string, unknown> }>(page, 'purge', 'purged')
    expect(result.report).toMatchObject({ erased: 2, storeOverwrote: true })
    expect(result.hits).toEqual([])
    expect(result.after).toEqual({ token: '', warnings: [], corrupt: [] })
  })

  it('collects sealed segments that are mostly dead records; a follower reads the moved blobs; a reopen finds exactly what was kept', async () => {
    const result = await work<Record<string, unknown>>(page, 'collect', 'collected')
    const kept = Array.from({ length: 10 }, (_, i) => `b${i * 4}`).sort()
    expect(result).toMatchObject({ heardRecords: 40, followerReads: true, followerDropped: 0, ids: kept, reads: true, journal: ['snapshot'] })
    expect(result.collected as number).toBeGreaterThan(5)
    expect(result.segmentsAfter as number).toBeLessThan((result.segmentsBefore as number) / 2)
    expect(result.files).toBe(result.segmentsAfter)
  })

  it("a damaged or missing format file is read as the segments' checksummed headers say: a follower leaves it, the writer keeps it aside and writes it again", async () => {
    await work(page, 'session', 'format', 3)
    const format = (await work<string>(page, 'formatText', 'format'))!
    const { salt } = JSON.parse(format) as { salt: number }
    const expected = (await work<{ files: Record<string, string> }>(page, 'reopen', 'format')).files
    for (const damaged of [format.replace(`"salt":${salt}`, `"salt":${salt ^ 4}`), '{"store":"rewindfs-opfs","lay', null]) {
      await work(page, 'setFormat', 'format', damaged)
      const before = await work<string>(page, 'fingerprint', 'format')
      const follower = await work<{ files: Record<string, string>; warnings: string[] }>(page, 'reopenReadOnly', 'format')
      expect(follower.files).toEqual(expected)
      expect(follower.warnings).toEqual([expect.stringMatching(new RegExp(`'format' file was ${damaged === null ? 'missing' : 'damaged'} .*salt ${salt}\\): .*read-only, the file was left as it is`))])
      expect(await work<string>(page, 'fingerprint', 'format')).toBe(before)
      const writer = await work<{ files: Record<string, string>; warnings: string[]; kept: string[] }>(page, 'reopen', 'format')
      expect(writer.files).toEqual(expected)
      expect(await work<string>(page, 'formatText', 'format')).toBe(format)
      const kept = writer.kept.filter((name) => name.startsWith('format.'))
      if (damaged === null) {
        expect(kept).toEqual([])
        expect(writer.warnings).toEqual([expect.stringMatching(/'format' file was missing .*written again from them$/)])
      } else {
        expect(kept).toHaveLength(1)
        expect(writer.warnings).toEqual([expect.stringContaining(`written again from them, the damaged one kept aside as 'kept/${kept[0]}'`)])
        await work(page, 'removeKept', 'format', kept[0])
      }
    }
  })

  it('a damaged record header in the middle: reported, the workspace frozen at the state before it, nothing changed', async () => {
    await work(page, 'session', 'damaged', 6)
    // The journal record of the fourth commit (records: blob, journal, blob, journal, ...).
    const flipped = await work<{ kind: number }>(page, 'flipHeader', 'damaged', 7)
    expect(flipped.kind).toBe(2)
    const before = await work<string>(page, 'fingerprint', 'damaged')
    const reopened = await work<{ files: Record<string, string>; frozen: string | null; corrupt: { part: string } | null; warnings: string[] }>(page, 'reopen', 'damaged')
    expect(reopened.corrupt?.part).toBe('journal')
    expect(reopened.frozen).toMatch(/damaged/)
    expect(Object.keys(reopened.files).sort()).toEqual(['/app/f0.txt', '/app/f1.txt', '/app/f2.txt', '/app/readme.md'])
    // The bytes are listed as a blob that cannot be read, so verify and status name them.
    expect(reopened.warnings.join('\n')).toMatch(/blob pack-damage:1:\d+ cannot be read/)
    expect(await work(page, 'write', 'damaged', '/app/refused.txt', 'no')).toBe('EROFS')
    expect(await work<string>(page, 'fingerprint', 'damaged')).toBe(before)
  })
})
