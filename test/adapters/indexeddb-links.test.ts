// @vitest-environment happy-dom
/**
 * The IndexedDB store keeps hard links: a journal record for link replays to the same shared inode
 * after reopen, and so does a compacted snapshot (fake-indexeddb in happy-dom's browser globals).
 */
import 'fake-indexeddb/auto'
import { describe, it } from 'vitest'
import { indexedDbStore } from '../../adapters/indexeddb/index.js'
import { Workspace } from '../../src/index.js'
import { durableLinkSession } from '../support/link-session.js'

describe('indexedDbStore and hard links', () => {
  it('replays links to the same shared inode after reopen', async () => {
    const name = `rewindfs-test-links-${Date.now()}`
    await durableLinkSession(() => Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false }))
  })
})
