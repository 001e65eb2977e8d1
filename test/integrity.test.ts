import { describe, expect, it } from 'vitest'
import { MemoryStore, Workspace } from '../src/index.js'

describe('store integrity checked in the background after open', () => {
  it('drops a blob whose bytes no longer match its checksum and marks the checkpoints needing it broken', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/kept.txt', 'kept')
    ws.fs.writeFileSync('/plan.md', '1. migrate the database')
    const good = await ws.checkpoint({ name: 'good' })
    ws.fs.writeFileSync('/plan.md', '2. verify')
    await ws.sync()
    await ws.close()

    // Flip one byte of the stored plan v1 on "disk".
    const image = store.image()
    const victim = image.blobs.find(([, bytes]) => new TextDecoder().decode(bytes) === '1. migrate the database')
    expect(victim).toBeDefined()
    victim![1][0] ^= 1
    const alerts: string[] = []
    const reopened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false, onAlert: (a) => alerts.push(a.kind) })
    // Open does not wait for the hashing: nothing is verified yet when it resolves.
    expect(reopened.checkpoints().find((c) => c.id === good.id)?.broken).toBeUndefined()
    const report = await reopened.verify()
    expect(report.verified).toBe(image.blobs.length)
    expect(report.corrupt).toEqual([victim![0]])
    expect(report.broken).toEqual([good.id])
    expect(reopened.checkpoints().find((c) => c.id === good.id)?.broken).toBe(true)
    await expect(reopened.restore('good')).rejects.toMatchObject({ code: 'EBROKEN' })
    expect(alerts).toEqual(['integrity'])
    expect(reopened.status.warnings.join('\n')).toMatch(/did not match their checksums/)
    // What did not depend on the bad blob is intact.
    expect(reopened.fs.readFileSync('/plan.md', 'utf8')).toBe('2. verify')
    expect(reopened.fs.readFileSync('/kept.txt', 'utf8')).toBe('kept')
    await reopened.close()
  })

  it('reports every blob verified and nothing broken for an intact store', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store })
    for (let i = 0; i < 50; i++) ws.fs.writeFileSync(`/f${i}`, `content ${i}`)
    await ws.checkpoint({ name: 'c' })
    await ws.close()
    const reopened = await Workspace.open({ store })
    expect(await reopened.verify()).toEqual({ verified: 50, corrupt: [], broken: [] })
    await reopened.close()
  })
})

describe('content dropped by the integrity check', () => {
  it('reads as EIO from the live tree, and changes() still lists the file (without a patch)', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/data.txt', 'precious')
    await ws.close()
    const image = store.image()
    const victim = image.blobs.find(([, bytes]) => new TextDecoder().decode(bytes) === 'precious')!
    victim[1][0] ^= 1
    const reopened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false })
    await reopened.verify()
    expect(() => reopened.fs.readFileSync('/data.txt')).toThrow(expect.objectContaining({ code: 'EIO', syscall: 'read' }))
    const changes = reopened.changes()
    expect(changes.map((c) => `${c.type} ${c.path}`)).toEqual(['added /data.txt'])
    expect(changes[0].patch).toBeUndefined()
    await reopened.close()
  })
})
