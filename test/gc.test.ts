import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'

describe('blob garbage collection', () => {
  it('keeps overwritten content while undo can reach it', async () => {
    const ws = await Workspace.open()
    ws.fs.writeFileSync('/a', 'first')
    ws.fs.writeFileSync('/a', 'second')
    ws.collectGarbage()
    expect(ws.storage.blobs).toBe(2)
    await ws.undo()
    expect(ws.fs.readFileSync('/a', 'utf8')).toBe('first')
  })

  it('stores identical content once and frees overwritten content nothing reaches', async () => {
    // A short undo history: overwritten content is unreachable once its operation is dropped.
    const ws = await Workspace.open({ retention: { operations: 1 }, autoCheckpoint: false })
    ws.fs.writeFileSync('/a', 'same')
    ws.fs.writeFileSync('/b', 'same')
    expect(ws.storage.blobs).toBe(1)
    ws.fs.writeFileSync('/a', 'other')
    ws.fs.writeFileSync('/b', 'other')
    // Push the overwrites out of the (batched) undo history.
    for (let i = 0; i < 40; i++) ws.fs.writeFileSync('/c', 'other')
    ws.fs.rmSync('/c')
    for (let i = 0; i < 40; i++) ws.fs.mkdirSync(`/dir${i}`)
    ws.collectGarbage()
    expect(ws.storage.blobs).toBe(1)
    expect(ws.fs.readFileSync('/a', 'utf8')).toBe('other')
  })

  it('keeps content reachable from checkpoints, and frees it when only a discarded tree held it', async () => {
    const ws = await Workspace.open({ lower: { '/keep.txt': 'lower' }, retention: { operations: 1 }, autoCheckpoint: false })
    ws.fs.writeFileSync('/x.txt', 'in checkpoint')
    const cp = await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/x.txt', 'after checkpoint')
    ws.fs.writeFileSync('/y.txt', 'only live')
    ws.collectGarbage()
    const { guard } = await ws.restore(cp.id)
    // The guard checkpoint keeps the pre-restore tree until it is deleted.
    await ws.deleteCheckpoint(guard!.id)
    for (let i = 0; i < 40; i++) ws.fs.mkdirSync(`/dir${i}`)
    expect(ws.fs.readFileSync('/x.txt', 'utf8')).toBe('in checkpoint')
    const before = ws.storage.blobs
    ws.collectGarbage()
    // 'after checkpoint' and 'only live' were reachable only from the tree restore replaced.
    expect(ws.storage.blobs).toBe(before - 2)
    expect(ws.fs.readFileSync('/x.txt', 'utf8')).toBe('in checkpoint')
  })

  it('content written while a collection is marking survives it', async () => {
    const ws = await Workspace.open()
    for (let i = 0; i < 2000; i++) ws.fs.writeFileSync(`/f${i}`, `content ${i}`)
    // Run a cycle in steps and write between them (what the background collector does).
    const collector = (ws as unknown as { collector: { step(n: number): boolean; collect(): void } }).collector
    ;(ws as unknown as { collector: { start(): void } }).collector.start()
    let done = false
    let n = 0
    while (!done) {
      done = collector.step(100)
      ws.fs.writeFileSync(`/new${n}`, `fresh ${n}`)
      ws.fs.copyFileSync(`/f${n}`, `/copy${n}`)
      n++
    }
    for (let i = 0; i < n; i++) {
      expect(ws.fs.readFileSync(`/new${i}`, 'utf8')).toBe(`fresh ${i}`)
      expect(ws.fs.readFileSync(`/copy${i}`, 'utf8')).toBe(`content ${i}`)
    }
    expect(n).toBeGreaterThan(2)
  })

  it('never starts a cycle inside a write: the overwrite that crosses the threshold keeps its new content', async () => {
    // An overwrite stores its blob, tells the store the old version has a successor (which wakes the
    // collector), then links the blob into the tree. A cycle started at the wake-up took its roots
    // before the link and swept the new content (EIO on the next read; shared/repros/child.js).
    const ws = await Workspace.open({ autoCheckpoint: false, retention: { operations: 1 } })
    const collector = (ws as unknown as { collector: { running: boolean } }).collector
    ws.fs.writeFileSync('/big', new Uint8Array(8192).fill(1))
    for (let i = 0; i < 5; i++) ws.fs.writeFileSync(`/bulk${i}`, new Uint8Array(8 * 1024 * 1024).fill(10 + i))
    ws.fs.writeFileSync('/big', new Uint8Array(8192).fill(2))
    expect(collector.running).toBe(false)
    // Let the background slices run the whole cycle the allocations asked for.
    for (let i = 0; i < 200 && (collector.running || i < 5); i++) await new Promise((resolve) => setTimeout(resolve, 0))
    expect((ws as unknown as { collector: { cycles: number } }).collector.cycles).toBeGreaterThan(0)
    expect(ws.fs.readFileSync('/big')).toEqual(Buffer.from(new Uint8Array(8192).fill(2)))
  })
})

describe('history storage', () => {
  it('makes reverse deltas in the background after a collection cycle that the same writes started', async () => {
    // 100 versions of ~1.1 MB cross the collector's 32 MiB threshold, so a cycle runs in the
    // background slices while the delta queue is full; the queue must still drain afterwards.
    const lines = Array.from({ length: 22_000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`)
    const ws = await Workspace.open({ autoCheckpoint: false })
    for (let v = 0; v < 100; v++) {
      lines[v * 7] = `edited in version ${v}`
      ws.fs.writeFileSync('/big.txt', lines.join('\n'))
      await ws.checkpoint({ name: `v${v}` })
    }
    expect(ws.storage.bytes).toBeGreaterThan(100_000_000)
    // Background slices are timers: give them event-loop turns (a bound in turns, not in time).
    for (let turn = 0; turn < 5_000 && ws.storage.bytes > 5_000_000; turn++) await new Promise((resolve) => setTimeout(resolve, 0))
    expect(ws.storage.bytes).toBeLessThan(5_000_000)
    await ws.restore('v10')
    expect((ws.fs.readFileSync('/big.txt', 'utf8') as string).split('\n')[70]).toBe('edited in version 10')
    await ws.close()
  })

  it('keeps 100 versions of a 1 MB text file with a 3-line edit each in under 100 KB more', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`)
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/big.txt', lines.join('\n'))
    const first = await ws.checkpoint({ name: 'v0' })
    ws.collectGarbage()
    const base = ws.storage.bytes
    expect(base).toBeGreaterThan(1_000_000)
    for (let v = 1; v <= 100; v++) {
      for (const at of [v * 7, v * 70 + 3, v * 150 + 11]) lines[at] = `edited in version ${v}`
      ws.fs.writeFileSync('/big.txt', lines.join('\n'))
      await ws.checkpoint({ name: `v${v}` })
    }
    ws.collectGarbage()
    expect(ws.storage.bytes - base).toBeLessThan(100_000)
    // Every version still reads back exactly.
    await ws.restore('v50')
    expect((ws.fs.readFileSync('/big.txt', 'utf8') as string).split('\n')[50 * 70 + 3]).toBe('edited in version 50')
    await ws.restore(first.id)
    expect((ws.fs.readFileSync('/big.txt', 'utf8') as string).split('\n')[7]).toBe('line 7: the quick brown fox jumps over the lazy dog')
    // Undoing both restores gives the newest version back.
    await ws.undo({ steps: 2 })
    expect(ws.fs.readFileSync('/big.txt', 'utf8')).toBe(lines.join('\n'))
  })
  // A delta works on decoded text: bytes that are not UTF-8 came back as U+FFFD (EF BF BD) in the
  // old version, or a BOM went missing, and a restore or undo gave other bytes than were written.
  const text = Array.from({ length: 300 }, (_, i) => `line ${i} of a text file long enough to be worth a delta\n`).join('')
  it.each([
    ['a Latin-1 byte past the first 8 KiB', (v: number) => Buffer.concat([Buffer.from(text), Buffer.from([0xe9, 0x0a]), Buffer.from(`version ${v}\n`)])],
    ['a Latin-1 byte at the start', (v: number) => Buffer.concat([Buffer.from([0xe9, 0x0a]), Buffer.from(text), Buffer.from(`version ${v}\n`)])],
    ['a byte-order mark', (v: number) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text + `version ${v}\n`)])],
    ['a character cut by the sniff’s 8 KiB', (v: number) => Buffer.from('x'.repeat(8191) + '€' + text + `version ${v}\n`)],
  ])('keeps an old version with %s byte for byte', async (_what, version) => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/a.txt', version(1))
    const first = await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/a.txt', version(2))
    await ws.checkpoint({ name: 'two' })
    const before = ws.storage.bytes
    for (let turn = 0; turn < 100; turn++) await new Promise((resolve) => setTimeout(resolve, 0))
    ws.collectGarbage()
    await ws.restore(first.id)
    expect(Buffer.from(ws.fs.readFileSync('/a.txt')).equals(version(1))).toBe(true)
    await ws.undo()
    expect(Buffer.from(ws.fs.readFileSync('/a.txt')).equals(version(2))).toBe(true)
    // Text that is UTF-8 throughout still gets its delta (the old version costs a few bytes).
    if (_what.includes('cut')) expect(ws.storage.bytes).toBeLessThan(before)
    await ws.close()
  })
})
