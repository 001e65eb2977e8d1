/** The blob store's confirmation of a hash match: native and word-wise compares agree with a byte loop. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BlobStore } from '../src/blob/store.js'
import { sameContent, wordsEqual } from '../src/blob/same-content.js'
import { seeds } from './support/seed.js'

const naive = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i])

/** Two views into larger buffers at arbitrary offsets, equal or differing in one byte. */
const pair = fc
  .record({
    bytes: fc.uint8Array({ minLength: 0, maxLength: 300 }),
    left: fc.nat(7),
    right: fc.nat(7),
    flip: fc.option(fc.nat(), { nil: undefined }),
    extra: fc.boolean(),
  })
  .map(({ bytes, left, right, flip, extra }) => {
    const a = new Uint8Array(bytes.byteLength + left + 8).subarray(left, left + bytes.byteLength)
    const b = new Uint8Array(bytes.byteLength + right + 9).subarray(right, right + bytes.byteLength + (extra && flip === undefined ? 1 : 0))
    a.set(bytes)
    b.set(bytes)
    if (flip !== undefined && bytes.byteLength > 0) b[flip % bytes.byteLength] ^= 1 << (flip % 8)
    return [a, b] as const
  })

describe('confirming a hash match', () => {
  for (const seed of seeds()) {
    it(`native and word-wise compares agree with a byte loop, aligned or not (seed ${seed})`, () => {
      fc.assert(
        fc.property(pair, ([a, b]) => {
          expect(sameContent(a, b)).toBe(naive(a, b))
          expect(wordsEqual(a, b)).toBe(a.byteLength === b.byteLength && naive(a, b))
        }),
        { seed, numRuns: 2000 },
      )
    })
  }

  it('stores a caller-kept copy only for new content; the caller may reuse its buffer', () => {
    const store = new BlobStore()
    const buffer = new Uint8Array(1024).fill(7)
    const id = store.putCopy(buffer)
    buffer.fill(9)
    expect(store.get(id)).toEqual(new Uint8Array(1024).fill(7))
    expect(store.putCopy(new Uint8Array(1024).fill(7))).toBe(id)
    expect(store.count).toBe(1)
  })
})
