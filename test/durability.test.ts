/**
 * Crash safety of the write-ahead journal: a scripted session runs against an in-memory store; the
 * store is then "found on disk" at every journal boundary, and torn in the middle of each record,
 * and every reopen must show exactly the last committed state.
 */
import { crc32 as zlibCrc32 } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace, fixtureSource } from '../src/index.js'
import { IndexedSource } from '../src/lower/indexed.js'
import { FORMAT_VERSION, type RecordBody, crc32, encodeRecord } from '../src/engine/persistence.js'
import { verifyStore } from '../src/engine/verify-store.js'
import { workspaceSnapshot } from './support/workspace-snapshot.js'


Workspace.registerCompensator('durability-test', () => true)

/** A MemoryStore that counts journal replacements (compactions). */
class CountingStore extends MemoryStore {
  replaced = 0
  override async replaceJournal(records: readonly string[]): Promise<void> {
    this.replaced++
    return super.replaceJournal(records)
  }
}
const fixture = { '/app/config.json': '{"port":8080}', '/app/src/index.js': 'serve()', '/README.md': '# app' }
const lower = fixture

/** The scripted session: each step ends with a sync (an acknowledged group commit). */
const steps: ((ws: Workspace) => Promise<unknown> | unknown)[] = [
  (ws) => ws.fs.writeFileSync('/app/config.json', '{"port":9090}'),
  (ws) => ws.fs.mkdirSync('/app/lib/deep', { recursive: true }),
  (ws) => ws.fs.writeFileSync('/app/lib/deep/util.js', 'export const x = 1'),
  (ws) => ws.checkpoint({ name: 'first' }),
  (ws) => ws.fs.renameSync('/app/lib', '/app/library'),
  (ws) => ws.fs.renameSync('/app/src', '/app/source'),
  (ws) => ws.fs.rmSync('/README.md'),
  (ws) => ws.fs.symlinkSync('source/index.js', '/app/main.js'),
  (ws) => ws.fs.chmodSync('/app/config.json', 0o600),
  (ws) => ws.state.set('plan', { step: 3, todo: ['a', 'b'] }),
  (ws) => ws.recordSideEffect({ description: 'deployed', compensate: { name: 'durability-test' } }),
  (ws) => ws.transaction((fs) => {
    fs.writeFileSync('/app/tx.txt', 'in a transaction')
    fs.mkdirSync('/app/txdir')
    fs.writeFileSync('/app/txdir/inner.txt', 'inner')
  }),
  (ws) => ws.beginTurn(2),
  (ws) => ws.fs.rmSync('/app/library', { recursive: true }),
  (ws) => ws.restore('first'),
  (ws) => ws.undo(),
  (ws) => ws.undo({ steps: 2 }),
  (ws) => ws.redo(),
  (ws) => ws.reset(),
  (ws) => ws.undo(),
  (ws) => ws.setResume({ phase: 'verify', turn: 2 }),
  (ws) => ws.fs.writeFileSync('/app/final.txt', 'last'),
]

describe('write-ahead journal and crash recovery', () => {
  it('reopens at every journal boundary, and with every torn tail, to exactly the last committed state, directories\' times included', async () => {
    // Times as an operation set them, a few milliseconds apart so a replay at another time shows.
    const snapshot = (ws: Workspace) => workspaceSnapshot(ws, { times: true })
    const later = () => new Promise((resolve) => setTimeout(resolve, 3))
    // One lower source for every open: a fixture's times are those of the source (a directory's are the disk's).
    const lower = fixtureSource(fixture)
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    const boundaries: { length: number; expected: Awaited<ReturnType<typeof snapshot>> }[] = [
      { length: 0, expected: await snapshot(ws) },
    ]
    for (const step of steps) {
      await later()
      await step(ws)
      await ws.sync()
      boundaries.push({ length: store.journalLength, expected: await snapshot(ws) })
    }
    for (let i = 0; i < boundaries.length; i++) {
      const { length, expected } = boundaries[i]
      const reopened = await Workspace.open({ lower, store: MemoryStore.from(store.image(length)), autoCheckpoint: false })
      expect(await snapshot(reopened), `reopened at boundary ${i}`).toEqual(expected)
      expect(reopened.status.warnings).toEqual([])
      const next = boundaries[i + 1]
      if (!next) continue
      // Crash in the middle of the next group commit: the torn records are dropped. (Cut one byte
      // short of the end, only the line end is missing: the commit is whole and counts.)
      const whole = await Workspace.open({ lower, store: MemoryStore.from(store.image(next.length - 1)), autoCheckpoint: false })
      expect(await snapshot(whole)).toEqual(next.expected)
      for (const cut of [length + 1, Math.floor((length + next.length) / 2), next.length - 2]) {
        if (cut <= length || cut >= next.length) continue
        const torn = await Workspace.open({ lower, store: MemoryStore.from(store.image(cut)), autoCheckpoint: false })
        expect(await snapshot(torn), `torn at ${cut} after boundary ${i}`).toEqual(expected)
        expect(torn.status.loaded?.droppedTail, `torn at ${cut} after boundary ${i} (${length}..${next.length})`).toBeGreaterThan(0)
      }
    }
  })

  it("setting a file's times is an operation (utimes, in a transaction alone, cp's preserved ones): undo puts them back, a reopen keeps them; a rewrite of the same bytes records nothing", async () => {
    const store = new MemoryStore()
    let ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', 'a')
    ws.fs.writeFileSync('/b.txt', 'b')
    const made = ws.fs.statSync('/a.txt').mtimeMs
    ws.fs.utimesSync('/a.txt', 1000, 1000)
    await ws.transaction((staged) => staged.utimesSync('/b.txt', 2000, 2000))
    ws.fs.writeFileSync('/a.txt', 'a') // its own bytes: no operation
    await ws.transaction((staged) => {
      // A temporary file made and removed: its directory's times moved, nothing else; no operation.
      staged.writeFileSync('/tmp.txt', 'scratch')
      staged.rmSync('/tmp.txt')
    })
    expect(ws.history().map((op) => `${op.type} ${op.paths.join(',')}`)).toEqual(['transaction /b.txt', 'chmod /a.txt', 'file_create /b.txt', 'file_create /a.txt'])
    ws.fs.utimesSync('/a.txt', 1000, 1000) // back to the times recorded last (the rewrite moved them)
    // A copy that keeps its source's times: set within the copy's own operation, not its time.
    ws.fs.cpSync('/a.txt', '/c.txt', { preserveTimestamps: true })
    await ws.sync()
    await ws.close()
    ws = await Workspace.open({ store, autoCheckpoint: false })
    expect([ws.fs.statSync('/a.txt').mtimeMs, ws.fs.statSync('/b.txt').mtimeMs, ws.fs.statSync('/c.txt').mtimeMs]).toEqual([1_000_000, 2_000_000, 1_000_000])
    await ws.undo({ steps: 4 }) // the copy, the second utimes, the transaction, the first utimes
    expect(ws.fs.statSync('/a.txt').mtimeMs).toBe(made)
    expect(ws.fs.statSync('/b.txt').mtimeMs).not.toBe(2_000_000)
    await ws.close()
  })

  it("a lower file's times set in a transaction alone, or its own bytes written back at other times, are an operation that a reopen keeps and undo takes back", async () => {
    const store = new MemoryStore()
    const lower = { '/l.txt': 'l', '/m.txt': 'm', '/n.txt': 'n' }
    let ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    await ws.transaction((staged) => staged.utimesSync('/l.txt', 3000, 3000))
    // A command's rewrite of a file with its own bytes, as exec applies it: the bytes, then the command's times.
    await ws.transaction((staged) => {
      staged.writeFileSync('/m.txt', 'm')
      staged.utimesSync('/m.txt', 4000, 4000)
    })
    // Copied up with its own mode and times (a chmod to the mode it has): no operation, as outside a transaction.
    await ws.transaction((staged) => staged.chmodSync('/n.txt', staged.statSync('/n.txt').mode))
    expect(ws.history().map((op) => `${op.type} ${op.paths.join(',')}`)).toEqual(['transaction /m.txt', 'transaction /l.txt'])
    expect([ws.fs.statSync('/l.txt').mtimeMs, ws.fs.statSync('/m.txt').mtimeMs]).toEqual([3_000_000, 4_000_000])
    await ws.sync()
    await ws.close()
    ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    expect([ws.fs.statSync('/l.txt').mtimeMs, ws.fs.statSync('/m.txt').mtimeMs]).toEqual([3_000_000, 4_000_000])
    await ws.undo({ steps: 2 })
    // The fixture's files all have the time it was built at (anew at this open).
    const lowerTime = ws.fs.statSync('/n.txt').mtimeMs
    expect(['/l.txt', '/m.txt'].map((path) => ws.fs.statSync(path).mtimeMs)).toEqual([lowerTime, lowerTime])
    await ws.close()
  })

  it('keeps working after a reopen: undo, restore of old checkpoints, compensation by name, resume point', async () => {
    const store = new MemoryStore()
    let ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', 'one')
    await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/a.txt', 'two')
    let compensated = 0
    Workspace.registerCompensator('count', () => {
      compensated++
    })
    await ws.recordSideEffect({ description: 'counted', compensate: { name: 'count' } })
    await ws.recordSideEffect({ description: 'anonymous', compensate: () => undefined })
    await ws.setResume({ phase: 'execute', turn: 4, data: { cursor: 9 } })
    await ws.close()

    ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    expect(ws.resume).toEqual({ phase: 'execute', turn: 4, data: { cursor: 9 } })
    const report = await ws.restore('one')
    expect(report.compensated).toEqual(['counted'])
    expect(report.uncompensated).toEqual([{ description: 'anonymous', error: expect.stringMatching(/does not survive a reopen/) }])
    expect(compensated).toBe(1)
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('one')
    await ws.undoRestore()
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('two')
    ws.fs.writeFileSync('/b.txt', 'new')
    await ws.close()

    ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('two')
    expect(ws.fs.readFileSync('/b.txt', 'utf8')).toBe('new')
    await ws.undo()
    expect(ws.fs.existsSync('/b.txt')).toBe(false)
    // New operations after a reopen do not reuse old ids.
    ws.fs.writeFileSync('/c.txt', 'c')
    const ids = ws.history().map((op) => op.id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('refuses a journal a newer rewindfs wrote with a clear error, and reports one damaged version field as damage', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store })
    ws.fs.writeFileSync('/a', '1')
    await ws.sync()
    ws.fs.writeFileSync('/b', '2')
    await ws.sync()
    const newer = store.image()
    newer.journal = newer.journal.replaceAll(`{"v":${FORMAT_VERSION},`, '{"v":99,')
    await expect(Workspace.open({ store: MemoryStore.from(newer) })).rejects.toMatchObject({ code: 'EJOURNALVERSION', message: expect.stringMatching(/format version 99/) })
    // One record's version digit rotted, in the middle: ours follow it, so it is damage.
    const rotted = store.image()
    rotted.journal = rotted.journal.replace(`{"v":${FORMAT_VERSION},`, '{"v":7,')
    const opened = await Workspace.open({ store: MemoryStore.from(rotted) })
    expect(opened.status.corrupt).toMatchObject({ part: 'journal', record: 0, offset: 0, reason: 'format version 7' })
  })

  it('checksums records as CRC-32 of their UTF-16 code units, low byte first (zlib as the oracle), so journals written before verify still', () => {
    let seed = 7
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0)
    for (let round = 0; round < 500; round++) {
      let text = ''
      for (let i = next() % 40; i > 0; i--) text += String.fromCharCode(next() % 3 === 0 ? next() % 0x10000 : 32 + (next() % 95))
      expect(crc32(text), JSON.stringify(text)).toBe(zlibCrc32(Buffer.from(text, 'utf16le')))
    }
    const long = JSON.stringify({ t: 'snapshot', data: { dirs: Array.from({ length: 5000 }, (_, i) => ({ c: { [`f${i}.txt`]: 'é😀' } })) } })
    expect(crc32(long)).toBe(zlibCrc32(Buffer.from(long, 'utf16le')))
  })

  it('open takes a record whose checksum holds by its kind (encodeRecord wrote its shape); verify checks the whole shape', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store })
    ws.fs.writeFileSync('/a', '1')
    await ws.sync()
    await ws.close()
    const image = store.image()
    const lines = image.journal.trimEnd().split('\n')
    expect(lines).toHaveLength(2) // the operation, its commit marker
    const replaced = (body: unknown) => MemoryStore.from({ ...image, journal: [encodeRecord(body as RecordBody, 0), lines[1]].join('\n') + '\n' })

    // A kind rewindfs never writes, checksum and all: damage at open.
    const unknown = await Workspace.open({ store: replaced({ t: 'mystery' }) })
    expect(unknown.status.corrupt).toMatchObject({ part: 'journal', record: 0, reason: 'not a record rewindfs writes' })

    // A known kind of the wrong shape passes open's check (nothing to rename here); verify names it.
    const misshapen = replaced({ t: 'checkpoint-rename', id: 5 })
    const opened = await Workspace.open({ store: misshapen })
    expect(opened.status.corrupt).toBeUndefined()
    await opened.close()
    const verified = await verifyStore(misshapen)
    expect(verified.ok).toBe(false)
    expect(verified.journal.damaged).toEqual([{ record: 0, offset: 0, reason: 'not a record rewindfs writes' }])
  })

  it('drops a torn last record after keeping the journal aside, and appends whole records after it', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'acknowledged')
    await ws.sync()
    ws.fs.writeFileSync('/b', 'never acknowledged')
    await ws.sync()
    const whole = store.image().journal
    const firstGroup = whole.split('\n').slice(0, 2).join('\n').length + 1
    // A crash in the middle of the second group commit: one whole record and part of the next.
    const cut = MemoryStore.from(store.image(firstGroup + Math.floor((whole.length - firstGroup) * 0.7)))
    const torn = (await cut.readJournal()).torn
    expect(torn).toBeDefined()
    const before = cut.image().journal
    const reopened = await Workspace.open({ store: cut, autoCheckpoint: false })
    expect(reopened.status.corrupt).toBeUndefined()
    expect(reopened.frozen).toBeUndefined()
    expect(reopened.fs.readFileSync('/a', 'utf8')).toBe('acknowledged')
    expect(reopened.fs.existsSync('/b')).toBe(false)
    const [kept] = await cut.keptAside()
    expect(kept).toMatch(/^journal\.torn-\d{8}T\d{9}Z$/)
    expect(reopened.status.loaded?.keptAside).toBe(kept)
    expect(reopened.status.warnings.join()).toContain(`kept aside as '${kept}'`)
    // Every byte that was there is still there: in the kept copy, whole.
    expect(cut.keptItem(kept)).toEqual({ journal: before })
    expect(cut.image().journal).toBe(whole.slice(0, firstGroup))
    reopened.fs.writeFileSync('/c', 'after the tear')
    await reopened.sync()
    const again = await Workspace.open({ store: MemoryStore.from(cut.image()), autoCheckpoint: false })
    expect(again.status.warnings).toEqual([])
    expect(again.fs.readFileSync('/c', 'utf8')).toBe('after the tear')
  })

  it('counts a last record whole but for its line end, and restores the line end so the next append cannot merge with it', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'one')
    await ws.sync()
    const image = MemoryStore.from(store.image(store.journalLength - 1))
    const reopened = await Workspace.open({ store: image, autoCheckpoint: false })
    expect(reopened.fs.readFileSync('/a', 'utf8')).toBe('one')
    reopened.fs.writeFileSync('/b', 'two')
    await reopened.sync()
    const again = await Workspace.open({ store: MemoryStore.from(image.image()), autoCheckpoint: false })
    expect(again.status.corrupt).toBeUndefined()
    expect(again.fs.readFileSync('/b', 'utf8')).toBe('two')
  })

  it('a flipped character in the last record is damage, not a tear: read-only at the state before it, nothing changed, an integrity alert', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'first')
    await ws.checkpoint({ name: 'cp' })
    await ws.sync()
    ws.fs.writeFileSync('/a', 'second')
    await ws.sync()
    const flipped = store.image()
    const lines = flipped.journal.trimEnd().split('\n')
    const last = lines.length - 2 // the last operation, just before its group commit's marker
    lines[last] = lines[last].replace('"p":"/a"', '"p":"/b"')
    flipped.journal = lines.join('\n') + '\n'
    const damaged = MemoryStore.from(flipped)
    const alerts: string[] = []
    const reopened = await Workspace.open({ store: damaged, autoCheckpoint: false, onAlert: (alert) => alerts.push(`${alert.kind}: ${alert.message}`) })
    expect(reopened.fs.readFileSync('/a', 'utf8')).toBe('first')
    expect(reopened.checkpoints().map((c) => c.name)).toEqual(['cp'])
    const offset = new TextEncoder().encode(lines.slice(0, last).join('\n') + '\n').length
    expect(reopened.status.corrupt).toEqual({ part: 'journal', record: last, offset, reason: 'checksum mismatch', unreplayed: 1 })
    expect(alerts).toEqual([expect.stringMatching(new RegExp(`^integrity: .*journal record ${last} at byte ${offset} cannot be read: checksum mismatch`))])
    expect(reopened.frozen).toMatch(/damaged/)
    expect(() => reopened.fs.writeFileSync('/x', 'no')).toThrow(expect.objectContaining({ code: 'EROFS' }))
    // Even unfrozen, nothing reaches the damaged store.
    reopened.unfreeze()
    reopened.fs.writeFileSync('/x', 'only in memory')
    await expect(reopened.sync()).rejects.toMatchObject({ code: 'EDEGRADED', message: expect.stringMatching(/damaged/) })
    await reopened.compact()
    expect(damaged.image()).toEqual(flipped)
  })

  it('salvage names records whose commit marker may be the damaged record: not "never acknowledged"', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/one', '1')
    await ws.sync()
    ws.fs.writeFileSync('/two', '2')
    await ws.sync() // acknowledged: its marker is the last record
    const image = store.image()
    const lines = image.journal.trimEnd().split('\n')
    lines[lines.length - 1] = lines[lines.length - 1].replace('commit', 'cOmmit')
    image.journal = lines.join('\n') + '\n'
    const opened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false })
    const report = await opened.repair({ salvage: true, dryRun: true })
    const reasons = report.lost.map((l) => l.reason)
    expect(reasons.at(-1)).toBe('checksum mismatch')
    expect(reasons.slice(0, -1).length).toBeGreaterThan(0)
    for (const reason of reasons.slice(0, -1)) expect(reason).toMatch(/^no readable commit marker follows \(a damaged record after it may have been its marker/)
  })

  it('a bad record in the middle: open keeps every record before it and changes nothing; repair keeps them, salvage also the later group commits', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    for (let i = 0; i < 6; i++) {
      ws.fs.writeFileSync(`/f${i}`, `v${i}`)
      if (i === 2) await ws.checkpoint({ name: 'mid' })
      await ws.sync()
    }
    const expected = await workspaceSnapshot(ws)
    const image = store.image()
    const lines = image.journal.trimEnd().split('\n')
    const victim = lines.findIndex((line) => line.includes('"paths":["/f3"]'))
    lines[victim] = lines[victim].replace('v', 'w')
    image.journal = lines.join('\n') + '\n'
    const damaged = MemoryStore.from(image)
    const opened = await Workspace.open({ store: damaged, autoCheckpoint: false })
    expect(opened.status.corrupt).toMatchObject({ part: 'journal', record: victim, reason: 'not a journal record', unreplayed: lines.length - victim - 1 })
    expect(opened.fs.readdirSync('/')).toEqual(['f0', 'f1', 'f2'])
    expect(opened.checkpoints().map((c) => c.name)).toEqual(['mid'])
    expect(damaged.image()).toEqual(image)

    // A dry run reports, changes nothing.
    const dry = await opened.repair({ salvage: true, dryRun: true })
    expect(dry).toMatchObject({ repaired: false, kept: { salvaged: 2 } })
    expect(damaged.image()).toEqual(image)
    expect(opened.fs.readdirSync('/')).toEqual(['f0', 'f1', 'f2'])

    // Salvage: the groups after the damage still apply (f4, f5); f3's group is lost and said so.
    const salvaged = MemoryStore.from(image)
    const ws2 = await Workspace.open({ store: salvaged, autoCheckpoint: false })
    const report = await ws2.repair({ salvage: true })
    expect(report).toMatchObject({ repaired: true, kept: { operations: 5, checkpoints: 1, salvaged: 2 }, lost: [{ first: victim, last: victim }, { first: victim + 1, last: victim + 1 }] })
    expect(report.lost.map((l) => l.reason)).toEqual(['not a journal record', `in a group commit (records ${victim}..${victim + 1}) that lost record ${victim}`])
    expect(ws2.frozen).toBeUndefined()
    expect(ws2.status.corrupt).toBeUndefined()
    expect(ws2.fs.readdirSync('/')).toEqual(['f0', 'f1', 'f2', 'f4', 'f5'])
    expect(await salvaged.keptAside()).toEqual([report.keptAside])
    expect(salvaged.keptItem(report.keptAside!)).toEqual({ journal: image.journal })
    ws2.fs.writeFileSync('/after', 'repair')
    await ws2.sync()
    const reopened = await Workspace.open({ store: MemoryStore.from(salvaged.image()), autoCheckpoint: false })
    expect(reopened.status.warnings).toEqual([])
    expect(reopened.fs.readdirSync('/')).toEqual(['after', 'f0', 'f1', 'f2', 'f4', 'f5'])
    await reopened.restore('mid')
    expect(reopened.fs.readdirSync('/')).toEqual(['f0', 'f1', 'f2'])

    // Without salvage the journal ends at the damage.
    const cut = MemoryStore.from(image)
    const ws3 = await Workspace.open({ store: cut, autoCheckpoint: false })
    const plain = await ws3.repair()
    expect(plain).toMatchObject({ repaired: true, kept: { operations: 3, salvaged: 0 }, lost: [{ first: victim, last: lines.length - 1 }] })
    expect((await Workspace.open({ store: MemoryStore.from(cut.image()) })).fs.readdirSync('/')).toEqual(['f0', 'f1', 'f2'])
    expect(expected.files['/f5']).toBe('644 v5')
  })

  it('duplicated and reordered records are damage that open reports and salvage puts back in order', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    for (let i = 0; i < 4; i++) {
      ws.fs.writeFileSync('/f', `v${i}`)
      await ws.sync()
    }
    const expected = await workspaceSnapshot(ws)
    const lines = store.image().journal.trimEnd().split('\n')
    const shapes = {
      duplicated: [...lines.slice(0, 3), lines[2], ...lines.slice(3)],
      reordered: [lines[0], lines[1], lines[4], lines[5], lines[2], lines[3], ...lines.slice(6)],
    }
    for (const [shape, damaged] of Object.entries(shapes)) {
      const image = { ...store.image(), journal: damaged.join('\n') + '\n' }
      const opened = await Workspace.open({ store: MemoryStore.from(image), autoCheckpoint: false })
      expect(opened.status.corrupt?.reason, shape).toMatch(/found at position .* \(a duplicated, reordered or lost record\)/)
      expect(opened.fs.readFileSync('/f', 'utf8'), shape).toBe('v0') // the group commits before the first record out of place
      const report = await opened.repair({ salvage: true })
      expect(report.lost, shape).toEqual(shape === 'duplicated' ? [expect.objectContaining({ first: 3, reason: expect.stringMatching(/a duplicate of record 2/) })] : [])
      expect(await workspaceSnapshot(opened), shape).toEqual(expected)
    }
  })

  it('marks checkpoints whose content is missing from the store broken, and keeps them', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'first')
    await ws.checkpoint({ name: 'cp' })
    ws.fs.writeFileSync('/a', 'second')
    await ws.sync()
    const missing = store.image()
    missing.blobs = missing.blobs.filter(([, bytes]) => new TextDecoder().decode(bytes) !== 'first')
    const damaged = await Workspace.open({ store: MemoryStore.from(missing) })
    expect(damaged.checkpoints()[0]).toMatchObject({ name: 'cp', broken: true })
    await expect(damaged.restore('cp')).rejects.toMatchObject({ code: 'EBROKEN' })
    expect(damaged.fs.readFileSync('/a', 'utf8')).toBe('second')
  })

  it('a journal with nothing readable opens read-only and empty, and is kept as it is', async () => {
    const garbage = MemoryStore.from({ journal: 'not a journal\nat all\n', blobs: [], meta: [] })
    const opened = await Workspace.open({ store: garbage })
    expect(opened.status.corrupt).toEqual({ part: 'journal', record: 0, offset: 0, reason: 'not a journal record', unreplayed: 0 })
    expect(opened.fs.readdirSync('/')).toEqual([])
    expect(garbage.image().journal).toBe('not a journal\nat all\n')
    const report = await opened.repair({ salvage: true })
    expect(report).toMatchObject({ repaired: true, kept: { records: 0 }, lost: [{ first: 0 }, { first: 1 }] })
    expect(garbage.keptItem(report.keptAside!)).toEqual({ journal: 'not a journal\nat all\n' })
    opened.fs.writeFileSync('/new', 'start')
    await opened.sync()
    expect((await Workspace.open({ store: MemoryStore.from(garbage.image()) })).fs.readFileSync('/new', 'utf8')).toBe('start')
  })

  it('unreadable flush state is damage: read-only, named; repair sets it aside and says what is lost', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'kept')
    await ws.close()
    const image = store.image()
    image.meta.push(['flush-state', { v: 99, pins: 'not a list' }])
    const damaged = MemoryStore.from(image)
    const opened = await Workspace.open({ store: damaged, autoCheckpoint: false })
    expect(opened.status.corrupt).toMatchObject({ part: 'meta', key: 'flush-state', reason: expect.stringMatching(/flush state is unreadable/) })
    expect(opened.frozen).toMatch(/metadata 'flush-state' cannot be read/)
    expect(opened.fs.readFileSync('/a', 'utf8')).toBe('kept')
    expect(damaged.image()).toEqual(image)
    const report = await opened.repair()
    expect(report).toMatchObject({ repaired: true, meta: [{ key: 'flush-state', rewritten: false, keptAs: expect.stringMatching(/^meta\.damaged-.*\.flush-state$/) }] })
    expect(report.keptAside).toBeUndefined() // the journal was sound: not rewritten
    expect(opened.frozen).toBeUndefined()
    expect(damaged.keptItem(report.meta[0].keptAs)).toEqual({ meta: { v: 99, pins: 'not a list' } })
    opened.fs.writeFileSync('/b', 'after')
    await opened.sync()
    const again = await Workspace.open({ store: MemoryStore.from(damaged.image()), autoCheckpoint: false })
    expect(again.status.corrupt).toBeUndefined()
    expect(again.fs.readFileSync('/b', 'utf8')).toBe('after')
  })

  it('a store with damaged metadata is not touched even to drop a torn tail; repair drops it with the rest', async () => {
    // A lower source with an identity, so the store records which source it was made over.
    const lower = new IndexedSource('test', 'lower-with-an-id', [], async () => new Map())
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'kept')
    await ws.close()
    const image = store.image()
    image.journal += '{"v":1,"c":1,"b":{"n":'
    image.meta = image.meta.map(([key, value]) => [key, key === 'lower' ? 42 : value])
    const damaged = MemoryStore.from(image)
    const opened = await Workspace.open({ lower, store: damaged, autoCheckpoint: false })
    expect(opened.status.corrupt).toMatchObject({ part: 'meta', key: 'lower' })
    expect(damaged.image()).toEqual(image)
    const report = await opened.repair()
    expect(report.lost).toEqual([expect.objectContaining({ reason: expect.stringMatching(/^torn/) })])
    expect(report.meta).toEqual([expect.objectContaining({ key: 'lower', rewritten: true })])
    expect(damaged.keptItem(report.keptAside!)).toEqual({ journal: image.journal })
    const again = await Workspace.open({ lower, store: MemoryStore.from(damaged.image()), autoCheckpoint: false })
    expect(again.status.warnings).toEqual([])
    expect(again.fs.readFileSync('/a', 'utf8')).toBe('kept')
  })

  it('runs in memory, flagged degraded with the reason, when the store is unavailable', async () => {
    const store = new MemoryStore()
    store.readJournal = async () => {
      throw new Error('connection refused')
    }
    const ws = await Workspace.open({ store })
    expect(ws.status.degraded).toMatch(/unavailable: connection refused/)
    ws.fs.writeFileSync('/still-works', 'yes')
    expect(ws.fs.readFileSync('/still-works', 'utf8')).toBe('yes')
    // Nothing it records is durable, so nothing is acknowledged: every recording call says so.
    await expect(ws.sync()).rejects.toMatchObject({ code: 'EDEGRADED', message: expect.stringMatching(/unavailable: connection refused/) })
    await expect(ws.checkpoint({ name: 'cp' })).rejects.toMatchObject({ code: 'EDEGRADED' })
    await ws.close()

    const failing = new MemoryStore()
    const live = await Workspace.open({ store: failing })
    failing.appendJournal = async () => {
      throw new Error('disk full')
    }
    live.fs.writeFileSync('/x', '1')
    await expect(live.sync()).rejects.toMatchObject({ code: 'EDEGRADED' })
    expect(live.status.degraded).toMatch(/disk full/)
  })

  it('compacts the journal into a snapshot that reopens to the same state, history and checkpoints', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ lower, store, autoCheckpoint: false })
    for (const step of steps) await step(ws)
    await ws.sync()
    const expected = await workspaceSnapshot(ws)
    const before = store.journalLength
    await ws.compact()
    expect((await store.readJournal()).records.length).toBe(2) // the snapshot and its commit marker
    const reopened = await Workspace.open({ lower, store: MemoryStore.from(store.image()), autoCheckpoint: false })
    expect(await workspaceSnapshot(reopened)).toEqual(expected)
    // The tail after a snapshot replays on top of it, and history from before it still undoes.
    ws.fs.writeFileSync('/after.txt', 'tail')
    await ws.sync()
    const again = await Workspace.open({ lower, store: MemoryStore.from(store.image()), autoCheckpoint: false })
    expect(await workspaceSnapshot(again)).toEqual(await workspaceSnapshot(ws))
    await again.undo({ steps: 3 })
    await ws.undo({ steps: 3 })
    expect(await workspaceSnapshot(again)).toEqual(await workspaceSnapshot(ws))
    await again.restore('first')
    expect(again.fs.readFileSync('/app/config.json', 'utf8')).toBe('{"port":9090}')
    expect(before).toBeGreaterThan(0)
  })

  it('compacts by itself once the tail holds compactEvery records and as many characters as the snapshot: open replays a bounded tail', async () => {
    const store = new CountingStore()
    const ws = await Workspace.open({ store, compactEvery: 50, autoCheckpoint: false })
    for (let i = 0; i < 2000; i++) {
      ws.fs.writeFileSync(`/f${i % 10}`, `v${i}`)
      if (i % 10 === 0) await ws.sync()
    }
    await ws.sync()
    await new Promise((resolve) => setTimeout(resolve, 20))
    const { records } = await store.readJournal()
    expect(records[0]).toContain('"t":"snapshot"')
    // Past the snapshot and its commit marker: fewer than compactEvery records, or fewer characters
    // than the snapshot, give or take the group commit that made the compaction due (11 records).
    const tail = records.slice(2)
    const chars = tail.reduce((sum, record) => sum + record.length, 0)
    const group = Math.max(...tail.map((record) => record.length)) * 11
    expect(tail.length < 50 + 11 || chars < records[0].length + group).toBe(true)
    // The snapshot grows with the kept history (2000 operations): compactions come further apart
    // as it does, not every 50 records (40 of them).
    expect(store.replaced).toBeGreaterThanOrEqual(3)
    expect(store.replaced).toBeLessThan(20)
    const reopened = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect(reopened.fs.readFileSync('/f9', 'utf8')).toBe('v1999')
    expect((await reopened.history()).length).toBe((await ws.history()).length)
  })

  it('compacts in the background: group commits go on while the snapshot is encoded, and are kept after it', async () => {
    const store = new CountingStore()
    const ws = await Workspace.open({ store, compactEvery: 100, autoCheckpoint: false })
    ws.fs.mkdirSync('/t')
    let n = 0
    // Until a compaction is under way (a background one is not written by the commit that starts it).
    while (store.replaced === 0 && n < 5000) {
      for (let k = 0; k < 20; k++) ws.fs.writeFileSync(`/t/f${n++}`, `file ${n}`)
      await ws.sync()
      // An event-loop turn: the compaction's slices run here, as they run while a disk syncs.
      if (n % 200 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    expect(store.replaced).toBe(1)
    const [snapshot, , ...tail] = (await store.readJournal()).records
    expect(snapshot).toContain('"t":"snapshot"')
    // Commits landed while it was encoded: they follow the snapshot, numbered anew.
    expect(tail.length).toBeGreaterThan(0)
    tail.forEach((record, i) => expect(record).toContain(`"b":{"n":${i + 2},`))
    for (let k = 0; k < 10; k++) ws.fs.writeFileSync(`/t/f${n++}`, 'after')
    await ws.sync()
    const again = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect(again.fs.readdirSync('/t')).toHaveLength(n)
    expect(await workspaceSnapshot(again)).toEqual(await workspaceSnapshot(ws))
    const report = await verifyStore(MemoryStore.from(store.image()))
    expect(report.problems).toEqual([])
    await again.close()
    await ws.close()
  })

  it('a compaction that falls behind is caught up by the commits that follow, a part each, and finished at once only when its tail reaches compactEvery', async () => {
    const store = new CountingStore()
    const ws = await Workspace.open({ store, compactEvery: 100, autoCheckpoint: false })
    ws.fs.mkdirSync('/t')
    // One commit of 3000 records: the compaction it makes due has 3000 entries and operations to encode.
    for (let n = 0; n < 3000; n++) ws.fs.writeFileSync(`/t/f${n}`, `file ${n}`)
    await ws.sync()
    // Commits of 10 with no event-loop turn between them: no background slice runs, the commits do all the encoding.
    let n = 3000
    while (store.replaced === 0 && n < 3200) {
      for (let k = 0; k < 10; k++) ws.fs.writeFileSync(`/t/f${n++}`, 'later')
      await ws.sync()
    }
    expect(store.replaced).toBe(1)
    const [snapshot, , ...tail] = (await store.readJournal()).records
    expect(snapshot).toContain('"t":"snapshot"')
    // Not in the commit that put its tail past a quarter of compactEvery (the third, 30 records), and never past compactEvery (ten).
    const commits = tail.filter((record) => record.includes('"t":"commit"')).length
    expect(commits).toBeGreaterThan(3)
    expect(commits).toBeLessThanOrEqual(10)
    expect(tail.length).toBe(commits * 11)
    const again = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect(again.fs.readdirSync('/t')).toHaveLength(n)
    expect(await workspaceSnapshot(again)).toEqual(await workspaceSnapshot(ws))
    await again.close()
    await ws.close()
  })

  it('a compaction keeps entries of any name, __proto__ and numbers included, in the live tree and in history', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.mkdirSync('/d')
    for (const name of ['__proto__', 'constructor', '10', '2', 'a']) ws.fs.writeFileSync(`/d/${name}`, `is ${name}`)
    await ws.checkpoint({ name: 'all' })
    ws.fs.rmSync('/d/__proto__')
    await ws.compact()
    const again = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect((again.fs.readdirSync('/d') as string[]).sort()).toEqual(['10', '2', 'a', 'constructor'])
    await again.restore('all')
    expect(again.fs.readFileSync('/d/__proto__', 'utf8')).toBe('is __proto__')
    await again.close()
    await ws.close()
  })

  it('a compaction under way when the workspace closes is finished before the store closes', async () => {
    const store = new CountingStore()
    const ws = await Workspace.open({ store, compactEvery: 100, autoCheckpoint: false })
    for (let i = 0; i < 120; i++) ws.fs.writeFileSync(`/f${i}`, `v${i}`)
    await ws.sync()
    ws.fs.writeFileSync('/last', 'x')
    await ws.sync()
    expect(store.replaced).toBe(0) // its slices have not run: no event-loop turn yet
    await ws.close()
    expect(store.replaced).toBe(1)
    const { records } = await store.readJournal()
    expect(records[0]).toContain('"t":"snapshot"')
    const again = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect(again.fs.readFileSync('/last', 'utf8')).toBe('x')
    expect(again.fs.readFileSync('/f119', 'utf8')).toBe('v119')
  })

  it('purge on a durable store removes the bytes from the store too', async () => {
    const secret = 'ghp_' + 'x'.repeat(36)
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/token', secret)
    await ws.checkpoint({ name: 'leak' })
    ws.fs.writeFileSync('/other', 'keep me')
    await ws.sync()
    await ws.purge('/token')
    const image = store.image()
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
    expect(image.blobs.map(([, bytes]) => text(bytes))).not.toContain(secret)
    expect(image.blobs.map(([, bytes]) => text(bytes))).toContain('keep me')
    const reopened = await Workspace.open({ store: MemoryStore.from(image) })
    expect(reopened.fs.readFileSync('/token', 'utf8')).toBe('')
    await reopened.restore('leak')
    expect(reopened.fs.readFileSync('/token', 'utf8')).toBe('')
  })
})

describe('line and paragraph separators (U+2028, U+2029) in what a record holds', () => {
  it('reopen every commit holding them: names, a symlink target, a checkpoint, session state', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', 'first')
    await ws.sync()
    ws.fs.writeFileSync('/notes\u2028v2.txt', 'line separator')
    ws.fs.mkdirSync('/para\u2029dir')
    ws.fs.symlinkSync('/notes\u2028v2.txt', '/link\u2029')
    await ws.sync()
    await ws.checkpoint({ name: 'after\u2028', description: 'two\u2029paragraphs' })
    await ws.state.set('key\u2028', 'value\u2029')
    ws.fs.writeFileSync('/later.txt', 'later')
    await ws.close()
    const again = await Workspace.open({ store, autoCheckpoint: false })
    expect(again.status.corrupt).toBeUndefined()
    expect(again.frozen).toBeUndefined()
    expect(again.fs.readdirSync('/').sort()).toEqual(['a.txt', 'later.txt', 'link\u2029', 'notes\u2028v2.txt', 'para\u2029dir'])
    expect(again.fs.readFileSync('/link\u2029', 'utf8')).toBe('line separator')
    expect(again.checkpoints()).toEqual([expect.objectContaining({ name: 'after\u2028', description: 'two\u2029paragraphs' })])
    expect(await again.state.get('key\u2028')).toBe('value\u2029')
    await again.compact()
    await again.close()
    const compacted = await Workspace.open({ store, autoCheckpoint: false })
    expect(compacted.status.corrupt).toBeUndefined()
    expect(compacted.fs.readFileSync('/notes\u2028v2.txt', 'utf8')).toBe('line separator')
    await compacted.close()
  })
})

describe('sync during a hold', () => {
  it('a sync that lands during an automatic compaction waits for it and is then durable', async () => {
    // A store slow enough that compactions overlap the syncs, as a disk is.
    class SlowStore extends MemoryStore {
      override async replaceJournal(records: readonly string[]): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 20))
        return super.replaceJournal(records)
      }
      override async appendJournal(records: readonly string[]): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 1))
        return super.appendJournal(records)
      }
    }
    const store = new SlowStore()
    const ws = await Workspace.open({ store, compactEvery: 20, autoCheckpoint: false })
    ws.fs.mkdirSync('/t')
    for (let n = 0; n < 60; n++) {
      ws.fs.mkdirSync(`/t/d${n}`)
      await ws.sync()
    }
    await ws.close()
    const again = await Workspace.open({ store: MemoryStore.from(store.image()) })
    expect(again.fs.readdirSync('/t')).toHaveLength(60)
    await again.close()
  })

  it('a compensator may await ws.sync() during a restore without waiting for itself', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, autoCheckpoint: false })
    const start = await ws.checkpoint({ name: 'start' })
    let synced = false
    await ws.recordSideEffect({
      description: 'created a bucket',
      compensate: async () => {
        await ws.sync()
        synced = true
      },
    })
    const report = await ws.restore(start.id)
    expect(synced).toBe(true)
    expect(report.compensated).toEqual(['created a bucket'])
    await ws.close()
  })
})
