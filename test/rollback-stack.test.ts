import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RollbackStack } from '../src/rollback-stack.js'
import { seeds } from './support/seed.js'

describe('RollbackStack', () => {
  it('undoes LIFO: step 3 uses a file step 2 created, so 3 is undone before 2', async () => {
    const world = new Map<string, string>()
    const stack = new RollbackStack()
    const order: string[] = []
    world.set('config', 'v2')
    stack.push(() => (order.push('1'), world.set('config', 'v1')), { description: 'edit config' })
    world.set('cache', 'built')
    stack.push(() => (order.push('2'), world.delete('cache')), { description: 'create cache' })
    world.set('cache', 'built+index')
    stack.push(() => {
      order.push('3')
      if (!world.has('cache')) throw new Error('cache missing: wrong order')
      world.set('cache', 'built')
    }, { description: 'index cache' })
    const result = await stack.rollbackAll()
    expect(order).toEqual(['3', '2', '1'])
    expect(result.entries.every((e) => e.ok)).toBe(true)
    expect([...world]).toEqual([['config', 'v1']])
    expect(stack.summary().depth).toBe(0)
  })

  for (const failure of ['throw', 'reject', 'false'] as const) {
    const failing = () => {
      if (failure === 'throw') throw new Error('boom')
      if (failure === 'reject') return Promise.reject(new Error('boom'))
      return false
    }
    it(`policy abort stops at a failing handler (${failure}) and leaves the rest; continue runs all`, async () => {
      const ran: string[] = []
      const abort = new RollbackStack()
      abort.push(() => ran.push('a'), { description: 'a' })
      abort.push(failing, { id: 'bad', description: 'bad' })
      abort.push(() => ran.push('c'), { description: 'c' })
      const result = await abort.rollbackAll()
      expect(ran).toEqual(['c'])
      expect(result.entries.map((e) => [e.id, e.ok])).toEqual([['undo-2', true], ['bad', false]])
      expect(abort.summary().entries.map((e) => `${e.id}:${e.state}`)).toEqual(['undo-1:pending', 'bad:failed'])

      const cont = new RollbackStack({ policy: 'continue' })
      const ran2: string[] = []
      cont.push(() => ran2.push('a'), { description: 'a' })
      cont.push(failing, { description: 'bad' })
      cont.push(() => ran2.push('c'), { description: 'c' })
      const all = await cont.rollbackAll()
      expect(ran2).toEqual(['c', 'a'])
      expect(all.entries.map((e) => e.ok)).toEqual([true, false, true])
      expect(cont.summary().depth).toBe(1) // the failed one is kept for a later retry
    })
  }

  it('retry-once retries a failed handler once, then aborts', async () => {
    let calls = 0
    const flaky = new RollbackStack({ policy: 'retry-once' })
    flaky.push(() => {
      if (++calls === 1) throw new Error('transient')
    }, { description: 'flaky' })
    expect((await flaky.rollbackAll()).entries).toEqual([{ id: 'undo-1', ok: true }])
    expect(calls).toBe(2)

    let hard = 0
    const broken = new RollbackStack({ policy: 'retry-once' })
    broken.push(() => void 0, { description: 'below' })
    broken.push(() => {
      hard++
      throw new Error('permanent')
    }, { description: 'hard' })
    const result = await broken.rollbackAll()
    expect(hard).toBe(2)
    expect(result.entries).toHaveLength(1)
    expect(broken.summary().depth).toBe(2)
  })

  it('marks, groups, tiers, commit and pop', async () => {
    const log: string[] = []
    const stack = new RollbackStack()
    stack.push(() => log.push('base'), { description: 'base', tier: 0 })
    stack.mark('start')
    stack.push(() => log.push('g1'), { description: 'g1', group: 'deploy', tier: 1 })
    const audited = stack.push(() => log.push('audited'), { description: 'audited', group: 'deploy' })
    stack.push(() => log.push('other'), { description: 'other', tier: 2 })
    stack.push(() => log.push('g2'), { description: 'g2', group: 'deploy', tier: 1 })
    stack.commit(audited)
    await stack.rollbackGroup('deploy')
    expect(log).toEqual(['g2', 'g1'])
    await stack.rollbackTier(2)
    expect(log).toEqual(['g2', 'g1', 'other'])
    expect(stack.summary()).toMatchObject({ depth: 2, committed: 1, marks: ['start'] })
    stack.push(() => log.push('late'), { description: 'late' })
    await stack.rollbackTo('start')
    expect(log).toEqual(['g2', 'g1', 'other', 'late'])
    expect(stack.pop()?.description).toBe('audited')
    await expect(stack.rollbackTo('nope')).rejects.toThrow(/no mark/)
    expect(() => stack.push(() => 1, { id: 'undo-1', description: 'dup' })).toThrow(/already exists/)
  })

  it('refuses to grow past maxDepth with a clear error, pushing nothing', () => {
    const stack = new RollbackStack({ maxDepth: 2 })
    stack.push(() => 1, { description: 'a' })
    stack.push(() => 1, { description: 'b' })
    expect(() => stack.push(() => 1, { description: 'c' })).toThrow(/maxDepth 2/)
    expect(stack.summary().depth).toBe(2)
  })

  it('runs each handler once when rollbacks are called concurrently', async () => {
    const stack = new RollbackStack()
    let runs = 0
    for (let i = 0; i < 5; i++) stack.push(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1))
      runs++
    }, { description: `s${i}` })
    const [a, b] = await Promise.all([stack.rollbackAll(), stack.rollbackAll()])
    expect(runs).toBe(5)
    expect(a.entries.length + b.entries.length).toBe(5)
  })

  for (const seed of seeds()) {
    it(`always-succeeding handlers bring the world back to a model (seed ${seed})`, async () => {
      const action = fc.oneof(
        fc.record({ kind: fc.constant('push' as const), key: fc.constantFrom('a', 'b', 'c'), value: fc.integer(), group: fc.constantFrom(undefined, 'g') }),
        fc.record({ kind: fc.constant('mark' as const) }),
        fc.record({ kind: fc.constant('rollbackTo' as const) }),
        fc.record({ kind: fc.constant('rollbackGroup' as const) }),
      )
      await fc.assert(
        fc.asyncProperty(fc.array(action, { maxLength: 30 }), async (actions) => {
          const world = new Map<string, number>()
          const stack = new RollbackStack()
          // The model: a list of (undo-restoring) frames; marks are positions in it.
          let frames: { key: string; previous: number | undefined; group?: string }[] = []
          const marks: number[] = []
          for (const a of actions) {
            if (a.kind === 'push') {
              const previous = world.get(a.key)
              world.set(a.key, a.value)
              frames.push({ key: a.key, previous, ...(a.group ? { group: a.group } : {}) })
              stack.push(() => (previous === undefined ? world.delete(a.key) : world.set(a.key, previous)), { description: a.key, ...(a.group ? { group: a.group } : {}) })
            } else if (a.kind === 'mark') {
              const name = `m${marks.length}`
              marks.push(frames.length)
              stack.mark(name)
            } else if (a.kind === 'rollbackTo' && marks.length > 0) {
              await stack.rollbackTo(`m${marks.length - 1}`)
              frames = frames.slice(0, marks[marks.length - 1])
            } else if (a.kind === 'rollbackGroup') {
              // Group rollback is only LIFO-safe when no later ungrouped frame touches the same keys.
              const grouped = frames.filter((f) => f.group === 'g')
              const later = (f: (typeof frames)[number]) => frames.slice(frames.indexOf(f) + 1).some((o) => o.group !== 'g' && o.key === f.key)
              if (grouped.some(later)) continue
              await stack.rollbackGroup('g')
              frames = frames.filter((f) => f.group !== 'g')
            }
          }
          await stack.rollbackAll()
          expect(world.size).toBe(0)
        }),
        { seed, numRuns: 100 },
      )
    })
  }
})
