/**
 * The journal's record framing (src/engine/persistence.ts), written on every group commit: the
 * checksum against zlib's CRC-32 of the same code units as bytes (the oracle), in one call and
 * continued across calls, and frames read back by the decoder exactly as the engine writes them.
 */
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { bodyText, commitRecord, crc32, decodeLine, encodeRecord, frameRecord } from '../src/engine/persistence.js'

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
  it('checksums the UTF-16 code units, low byte first: zlib over the same bytes agrees, at every length and split', () => {
    const random = seeded(0x5eed)
    for (let length = 0; length < 300; length++) {
      const text = randomText(length, random)
      const expected = zlib.crc32(Buffer.from(text, 'utf16le'))
      expect(crc32(text)).toBe(expected)
      const split = Math.floor(random() * (length + 1))
      expect(crc32(text, split, crc32(text.slice(0, split)))).toBe(expected)
    }
    // A long text (a snapshot's), split anywhere.
    const long = randomText(100_000, random)
    const whole = zlib.crc32(Buffer.from(long, 'utf16le'))
    expect(crc32(long)).toBe(whole)
    for (const split of [1, 4095, 4096, 32_768, 65_537, 99_999]) expect(crc32(long, split, crc32(long.slice(0, split)))).toBe(whole)
  })

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
})
