/**
 * The journal's record framing (src/engine/persistence.ts), written on every group commit: the
 * checksum against zlib's CRC-32 of the same code units as bytes (the oracle), in one call and
 * continued across calls, and frames read back by the decoder exactly as the engine writes them.
 */
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/adapter-kit.js'
import { bodyText, commitRecord, crc32, crc32Js, decodeLine, encodeRecord, frameRecord } from '../src/engine/persistence.js'
import { Workspace } from '../src/index.js'

/** Random text: ASCII mostly, with two- and three-byte characters, surrogate pairs and lone surrogates. */
function randomText(length: number, random: () => number): string {
  const units: number[] = []
  while (units.length < length) {
    const pick = random()
    if (pick < 0.7) units.push(0x20 + Math.floor(random() * 0x5f))
    else if (pick < 0.8) units.push(0x80 + Math.floor(random() * 0x780))
    else if (pick < 0.9) units.push(0x800 + Math.floor(random() * 0xd000))
    else if (pick < 0.97) units.push(0xd800 + Math.floor(random() * 0x400), 0xdc00 + Math.floor(random() * 0x400))
    else units.push(0xd800 + Math.floor(random() * 0x800))
  }
  return String.fromCharCode(...units.slice(0, length))
}

function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

describe('journal framing', () => {
  // crc32 takes zlib's on Node from 64 code units (copied into a buffer a slice at a time), crc32Js elsewhere (browsers): both checked.
  for (const [name, checksum] of [['crc32', crc32], ['crc32Js', crc32Js]] as const) {
    it(`${name} checksums the UTF-16 code units, low byte first: zlib over the same bytes agrees, at every length and split`, () => {
      const random = seeded(0x5eed)
      for (let length = 0; length < 300; length++) {
        const text = randomText(length, random)
        const expected = zlib.crc32(Buffer.from(text, 'utf16le'))
        expect(checksum(text)).toBe(expected)
        const split = Math.floor(random() * (length + 1))
        expect(checksum(text, split, checksum(text.slice(0, split)))).toBe(expected)
        // A range of the text, continued from another checksum (framing passes both).
        const end = split + Math.floor(random() * (length - split + 1))
        expect(checksum(text, split, 12345, end)).toBe(zlib.crc32(Buffer.from(text.slice(split, end), 'utf16le'), 12345))
      }
      // A long text (a snapshot's), split anywhere, slices of the native path's buffer crossed.
      const long = randomText(100_000, random) + randomText(100_000, random)
      const whole = zlib.crc32(Buffer.from(long, 'utf16le'))
      expect(checksum(long)).toBe(whole)
      for (const split of [1, 4095, 4096, 32_768, 65_535, 65_537, 131_072, 199_999]) expect(checksum(long, split, checksum(long.slice(0, split)))).toBe(whole)
    })
  }

  it('frames a body with its number and a checksum the decoder accepts; a changed character is refused', () => {
    const body = { t: 'checkpoint', id: 'ckpt-1', name: 'naïve 😀 \ud800', kind: 'manual', seq: 3, createdAt: 1, opSeq: 7 } as const
    const line = frameRecord(bodyText(body), 41)
    expect(line).toBe(encodeRecord(body, 41))
    const numbered = `{"n":41,${bodyText(body).slice(1)}`
    expect(line).toBe(`{"v":1,"c":${zlib.crc32(Buffer.from(numbered, 'utf16le'))},"b":${numbered}}`)
    const verdict = decodeLine(line)
    expect(verdict.ok && verdict.n).toBe(41)
    expect(verdict.ok && verdict.body).toMatchObject(body)
    expect(decodeLine(line.replace('manual', 'manuel'))).toEqual({ ok: false, reason: 'checksum mismatch' })
  })

  it('writes the commit marker as encodeRecord would', () => {
    for (const n of [0, 1, 9, 10, 12345, 2 ** 40]) expect(commitRecord(n)).toBe(encodeRecord({ t: 'commit' }, n))
  })

  it('writes record texts and snapshot parts as JSON.stringify writes what they decode to', async () => {
    Workspace.registerCompensator('framing-test', () => true)
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, compactEvery: Number.POSITIVE_INFINITY })
    // Names and contents JSON must escape, a fractional time, metadata changes, a moved directory, state, a side effect, a restore.
    ws.fs.mkdirSync('/d "quoted" \\ naïve 😀 \ud800', { recursive: true })
    ws.fs.writeFileSync('/d "quoted" \\ naïve 😀 \ud800/f\n.txt', 'one')
    ws.fs.symlinkSync('../target "x"', '/link')
    ws.fs.mkdirSync('/tree/a/b', { recursive: true })
    ws.fs.writeFileSync('/tree/a/b/file', 'two')
    ws.fs.writeFileSync('/tree/a/__proto__', 'three')
    // A directory whose text spans several chunks (lazy-history's TextList).
    ws.fs.mkdirSync('/big')
    for (let i = 0; i < 2000; i++) ws.fs.writeFileSync(`/big/f${i}`, 'same')
    ws.fs.chmodSync('/tree/a/b/file', 0o600)
    ws.fs.utimesSync('/tree/a/b/file', 1.5, 1234567.891)
    await ws.checkpoint({ name: 'before the move', description: 'a "description"' })
    ws.fs.renameSync('/tree/a', '/moved')
    await ws.state.set('plan', { steps: ['a', 'b'], done: 0.5 })
    await ws.recordSideEffect({ description: 'deployed', compensate: { name: 'framing-test', args: [1, 'two'] }, tier: 2, group: 'g' })
    ws.fs.rmSync('/link')
    await ws.restore('before the move')
    await ws.sync()
    const sameAsStringify = (line: string, n: number) => {
      const verdict = decodeLine(line)
      expect(verdict.ok).toBe(true)
      if (verdict.ok) expect(line).toBe(encodeRecord(verdict.body, n))
    }
    let { records } = await store.readJournal()
    expect(records.length).toBeGreaterThan(20)
    records.forEach(sameAsStringify)
    await ws.compact()
    ;({ records } = await store.readJournal())
    sameAsStringify(records[0], 0)
    const verdict = decodeLine(records[0])
    const parts = verdict.ok && verdict.body.t === 'snapshot' && 'parts' in verdict.body.data ? verdict.body.data.parts : []
    expect(parts.length).toBeGreaterThan(0)
    for (const { id } of parts) {
      const text = new TextDecoder().decode((await store.getBlob(id))!)
      expect(text).toBe(JSON.stringify(JSON.parse(text)))
    }
    await ws.close()
    // Read back: the restored files, and the history that leads to them.
    const again = await Workspace.open({ store })
    expect(again.fs.readFileSync('/tree/a/b/file', 'utf8')).toBe('two')
    expect(again.fs.readFileSync('/tree/a/__proto__', 'utf8')).toBe('three')
    expect(again.fs.statSync('/tree/a/b/file').mtimeMs).toBe(1234567891)
    expect(again.fs.readlinkSync('/link')).toBe('../target "x"')
    expect(again.fs.readdirSync('/big')).toHaveLength(2000)
    await again.undoRestore()
    expect(again.fs.readFileSync('/moved/b/file', 'utf8')).toBe('two')
    expect(again.fs.readFileSync('/moved/__proto__', 'utf8')).toBe('three')
    await again.close()
  })

  it('writes a directory of thousands of children as pieces: first in the table or after others, in the head and in a part', async () => {
    const store = new MemoryStore()
    const ws = await Workspace.open({ store, compactEvery: Number.POSITIVE_INFINITY })
    // /a/big is the first directory of each table (children first), /z/big follows a small one.
    for (const dir of ['/a/big', '/z/small', '/z/big']) ws.fs.mkdirSync(dir, { recursive: true })
    for (let i = 0; i < 1500; i++) {
      ws.fs.writeFileSync(`/a/big/f${i}`, 'same')
      ws.fs.writeFileSync(`/z/big/g${i}`, 'other')
    }
    await ws.checkpoint({ name: 'both' })
    ws.fs.writeFileSync('/a/big/f0', 'changed')
    await ws.compact()
    const { records } = await store.readJournal()
    const verdict = decodeLine(records[0])
    expect(verdict.ok).toBe(true)
    if (!verdict.ok || verdict.body.t !== 'snapshot' || !('parts' in verdict.body.data)) throw new Error('expected a format-2 snapshot')
    expect(records[0]).toBe(encodeRecord(verdict.body, 0))
    for (const { id } of verdict.body.data.parts) {
      const text = new TextDecoder().decode((await store.getBlob(id))!)
      expect(text).toBe(JSON.stringify(JSON.parse(text)))
    }
    await ws.close()
    const again = await Workspace.open({ store })
    expect(again.fs.readdirSync('/a/big')).toHaveLength(1500)
    expect(again.fs.readdirSync('/z/big')).toHaveLength(1500)
    expect(again.fs.readFileSync('/a/big/f0', 'utf8')).toBe('changed')
    await again.restore('both')
    expect(again.fs.readFileSync('/a/big/f0', 'utf8')).toBe('same')
    expect(again.fs.readFileSync('/z/big/g1499', 'utf8')).toBe('other')
    await again.close()
  })
})
