// @vitest-environment happy-dom
/**
 * The IndexedDB store keeps hard links: a journal record for link replays to the same shared inode
 * after reopen, and so does a compacted snapshot (fake-indexeddb in happy-dom's browser globals).
 * An IndexedDB tree cannot hold hard links: a flush there writes copies and says so.
 */
import 'fake-indexeddb/auto'
import { describe, expect, it } from 'vitest'
import { indexedDbStore, indexedDbTree } from '../../adapters/indexeddb/index.js'
import { Workspace } from '../../src/index.js'
import { durableLinkSession } from '../support/link-session.js'

describe('indexedDbStore and hard links', () => {
  it('replays links to the same shared inode after reopen', async () => {
    const name = `rewindfs-test-links-${Date.now()}`
    await durableLinkSession(() => Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false }))
  })
})

describe('indexedDbTree as a flush target', () => {
  it('gets each name of a shared inode as a copy, named in the report', async () => {
    const tree = await indexedDbTree(`rewindfs-test-links-tree-${Date.now()}`)
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'shared')
    ws.fs.linkSync('/a', '/b')
    const report = await ws.flush(tree)
    expect(report.linksCopied).toEqual([{ target: tree.id, paths: ['/b'] }])
    const view = await Workspace.open({ lower: tree })
    expect([view.fs.readFileSync('/a', 'utf8'), view.fs.readFileSync('/b', 'utf8')]).toEqual(['shared', 'shared'])
    await view.close()
    await ws.close()
    await tree.close()
  })
})
