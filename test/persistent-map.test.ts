import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { emptyMap, mapDelete, mapDiff, mapEntries, mapGet, mapSet, type MapRoot } from '../src/layer/persistent-map.js'
import { seeds } from './support/seed.js'

type Op = { kind: 'set'; key: string; value: number } | { kind: 'delete'; key: string } | { kind: 'freeze' }

// Few distinct keys force overwrites and deletes of present keys; the long tail forces deep tries.
const key = fc.oneof(fc.constantFrom('a', 'b', 'c', 'Aa', 'BB'), fc.string({ maxLength: 6 }), fc.integer({ min: 0, max: 5000 }).map(String))
// Pairs with one 32-bit FNV-1a hash each (found by search): collision nodes, their splits and collapses.
const colliding = fc.constantFrom('k32728', 'k261234', 'k32729', 'k261235', 'k32724', 'k261238', 'k32018', 'k261324', 'a', 'b')
const opsOf = (key: fc.Arbitrary<string>): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), key, value: fc.integer() }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), key }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'freeze' as const }) },
  )

describe('persistent map', () => {
  for (const [keys, op] of [['', opsOf(key)], [' (colliding hashes)', opsOf(colliding)]] as const) {
    for (const seed of seeds()) {
      it(`behaves like Map, keeps frozen versions intact, and diffs exactly${keys} (seed ${seed})`, () => {
        fc.assert(
          fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
            let root: MapRoot<number> = emptyMap()
            let token = {}
            const model = new Map<string, number>()
            const frozen: { root: MapRoot<number>; model: Map<string, number> }[] = []
            for (const o of ops) {
              if (o.kind === 'set') {
                root = mapSet(root, o.key, o.value, token)
                model.set(o.key, o.value)
              } else if (o.kind === 'delete') {
                root = mapDelete(root, o.key, token)
                model.delete(o.key)
              } else {
                token = {}
                frozen.push({ root, model: new Map(model) })
              }
              expect(root.size).toBe(model.size)
            }
            expect(new Map(mapEntries(root))).toEqual(model)
            for (const [k, v] of model) expect(mapGet(root, k)).toBe(v)
            for (const snapshot of frozen) {
              expect(new Map(mapEntries(snapshot.root))).toEqual(snapshot.model)
              const changed = new Set<string>()
              mapDiff(snapshot.root, root, (k) => changed.add(k))
              const expected = new Set<string>()
              for (const k of new Set([...snapshot.model.keys(), ...model.keys()])) {
                if (snapshot.model.get(k) !== model.get(k) || snapshot.model.has(k) !== model.has(k)) expected.add(k)
              }
              expect(changed).toEqual(expected)
            }
          }),
          { numRuns: 150, seed },
        )
      })
    }
  }

  it('edits in place only while the token is current', () => {
    const token = {}
    let root: MapRoot<number> = emptyMap()
    for (let i = 0; i < 100; i++) root = mapSet(root, `k${i}`, i, token)
    const before = root.node
    root = mapSet(root, 'k1', 100, token)
    expect(root.node).toBe(before)
    const frozen = root
    root = mapSet(root, 'k1', 200, {})
    expect(root.node).not.toBe(frozen.node)
    expect(mapGet(frozen, 'k1')).toBe(100)
    expect(mapGet(root, 'k1')).toBe(200)
  })

  it('diff visits only changed keys of a large map', () => {
    let root: MapRoot<number> = emptyMap()
    const token = {}
    for (let i = 0; i < 50_000; i++) root = mapSet(root, `file-${i}`, i, token)
    const frozen = root
    root = mapSet(root, 'file-7', -1, {})
    const seen: string[] = []
    mapDiff(frozen, root, (k, a, b) => seen.push(`${k}:${a}->${b}`))
    expect(seen).toEqual(['file-7:7->-1'])
  })
})
