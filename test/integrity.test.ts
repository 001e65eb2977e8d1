import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'

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
    // Only the checkpoint needs it: no path of the live tree reads as EIO.
    expect(report.damagedPaths).toEqual([])
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
    expect(await reopened.verify()).toEqual({ verified: 50, corrupt: [], broken: [], damagedPaths: [] })
    await reopened.close()
  })
})

describe('content read before the background check reaches it', () => {
  it('is checked on first read: damaged bytes read as EIO, never as content, and are reported with the rest', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/plan.md', '1. migrate the database')
    const good = await ws.checkpoint({ name: 'good' })
    ws.fs.writeFileSync('/other.md', 'intact')
    await ws.close()
    const image = store.image()
    const victim = image.blobs.find(([, bytes]) => new TextDecoder().decode(bytes) === '1. migrate the database')!
    victim[1][0] ^= 1
    const alerts: string[] = []
    const reopened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false, onAlert: (a) => alerts.push(a.kind) })
    // Synchronously after open: the background check has not run a slice yet.
    expect(() => reopened.fs.readFileSync('/plan.md')).toThrow(expect.objectContaining({ code: 'EIO', syscall: 'read', path: '/plan.md' }))
    expect(reopened.fs.readFileSync('/other.md', 'utf8')).toBe('intact')
    // Nothing else reads the bad bytes either: a diff sees no content, a second read is EIO again.
    expect(() => reopened.fs.readFileSync('/plan.md')).toThrow(expect.objectContaining({ code: 'EIO' }))
    const report = await reopened.verify()
    expect(report.corrupt).toEqual([victim[0]])
    expect(report.broken).toEqual([good.id])
    expect(alerts).toEqual(['integrity'])
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
    expect((await reopened.verify()).damagedPaths).toEqual(['/data.txt'])
    expect(() => reopened.fs.readFileSync('/data.txt')).toThrow(expect.objectContaining({ code: 'EIO', syscall: 'read' }))
    const changes = reopened.changes()
    expect(changes.map((c) => `${c.type} ${c.path}`)).toEqual(['added /data.txt'])
    expect(changes[0].patch).toBeUndefined()
    await reopened.close()
  })
})

describe('the paths a damaged blob costs', () => {
  it('verify names every path of the live tree that holds it: nested, and each name of a hard link', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.mkdirSync('/src/deep', { recursive: true })
    ws.fs.writeFileSync('/src/deep/a.txt', 'same bytes')
    ws.fs.writeFileSync('/copy.txt', 'same bytes')
    ws.fs.linkSync('/copy.txt', '/src/link.txt')
    ws.fs.writeFileSync('/other.txt', 'fine')
    await ws.close()
    const image = store.image()
    const victim = image.blobs.find(([, bytes]) => new TextDecoder().decode(bytes) === 'same bytes')!
    victim[1][0] ^= 1
    const reopened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false })
    const report = await reopened.verify()
    expect(report.corrupt).toEqual([victim[0]])
    expect(report.damagedPaths).toEqual(['/copy.txt', '/src/deep/a.txt', '/src/link.txt'])
    await reopened.close()
  })
})

describe('damaged blobs are kept until the user deals with them', () => {
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

  async function storeWithDamagedBlob(content: string) {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/data.txt', content)
    await ws.close()
    const image = store.image()
    const victim = image.blobs.find(([, bytes]) => decode(bytes) === content)!
    victim[1][0] ^= 1
    return { image, id: victim[0], bad: new Uint8Array(victim[1]) }
  }

  it('compaction never deletes a damaged blob, even once nothing refers to it', async () => {
    const { image, id, bad } = await storeWithDamagedBlob('precious')
    const store = MemoryStore.from(image)
    const ws = await Workspace.open({ store, autoCheckpoint: false, retention: { operations: 1 } })
    expect((await ws.verify()).corrupt).toEqual([id])
    ws.fs.rmSync('/data.txt')
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync('/other', `v${i}`) // the history that referred to it is pruned
    await ws.compact()
    expect(store.image().blobs.find(([blob]) => blob === id)?.[1]).toEqual(bad)
    await ws.close()
  })

  it('compaction right after open keeps blobs not verified yet; a later one removes the unreferenced good ones', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'a')
    await ws.close()
    const image = store.image()
    const stray = new TextEncoder().encode('nothing refers to me')
    const { hashBytes } = await import('../src/blob/hash.js')
    image.blobs.push([hashBytes(stray), stray])
    const reopened = MemoryStore.from(image)
    const again = await Workspace.open({ store: reopened, autoCheckpoint: false })
    await again.compact() // before the background check has looked at anything
    expect(reopened.image().blobs.map(([blob]) => blob)).toContain(hashBytes(stray))
    await again.verify()
    await again.compact()
    expect(reopened.image().blobs.map(([blob]) => blob)).not.toContain(hashBytes(stray))
    await again.close()
  })

  it('rewriting the same file with the same content heals it too, read first or not (unread, the write changes no file)', async () => {
    for (const readFirst of [true, false]) {
      const { image, id, bad } = await storeWithDamagedBlob('precious')
      const store = MemoryStore.from(image)
      const ws = await Workspace.open({ store, autoCheckpoint: false })
      if (readFirst) expect(() => ws.fs.readFileSync('/data.txt')).toThrow(expect.objectContaining({ code: 'EIO' }))
      ws.fs.writeFileSync('/data.txt', 'precious')
      await ws.sync()
      await ws.close()
      const [kept] = await store.keptAside()
      expect(store.keptItem(kept)).toEqual({ blob: bad })
      expect(kept.endsWith(`.${id}`)).toBe(true)
      const reopened = await Workspace.open({ store: MemoryStore.from(store.image()), autoCheckpoint: false })
      expect(await reopened.verify()).toMatchObject({ corrupt: [], damagedPaths: [] })
      expect(reopened.fs.readFileSync('/data.txt', 'utf8')).toBe('precious')
      await reopened.close()
    }
  })

  it('writing the same content again heals a damaged blob: the bad copy is set aside, the good one stored', async () => {
    const { image, id, bad } = await storeWithDamagedBlob('precious')
    const store = MemoryStore.from(image)
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    await ws.verify()
    expect(() => ws.fs.readFileSync('/data.txt')).toThrow(expect.objectContaining({ code: 'EIO' }))
    ws.fs.writeFileSync('/copy.txt', 'precious')
    await ws.sync()
    await ws.close()
    const [kept] = await store.keptAside()
    expect(kept).toBe(`blob.damaged-${kept.slice('blob.damaged-'.length, 'blob.damaged-'.length + 19)}.${id}`)
    expect(store.keptItem(kept)).toEqual({ blob: bad })
    const reopened = await Workspace.open({ store: MemoryStore.from(store.image()), autoCheckpoint: false })
    expect(await reopened.verify()).toMatchObject({ corrupt: [] })
    expect(reopened.fs.readFileSync('/data.txt', 'utf8')).toBe('precious')
    expect(reopened.fs.readFileSync('/copy.txt', 'utf8')).toBe('precious')
  })

  it('a blob the store cannot read is damage of that blob alone: reported, kept, the rest opens', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'readable')
    ws.fs.writeFileSync('/b', 'unreadable')
    await ws.close()
    const image = store.image()
    const bad = image.blobs.find(([, bytes]) => decode(bytes) === 'unreadable')![0]
    const failing = MemoryStore.from(image)
    const getBlob = failing.getBlob.bind(failing)
    failing.getBlob = async (id) => {
      if (id === bad) throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' })
      return getBlob(id)
    }
    const reopened = await Workspace.open({ store: failing, autoCheckpoint: false })
    expect(reopened.status.degraded).toBeUndefined()
    expect(reopened.status.warnings).toEqual([expect.stringMatching(new RegExp(`blob ${bad.replace(/[+/=]/g, '\\$&')} cannot be read`))])
    expect(reopened.fs.readFileSync('/a', 'utf8')).toBe('readable')
    expect(() => reopened.fs.readFileSync('/b')).toThrow(expect.objectContaining({ code: 'EIO' }))
    await reopened.compact()
    expect(failing.image().blobs.map(([id]) => id)).toContain(bad)
  })
})
