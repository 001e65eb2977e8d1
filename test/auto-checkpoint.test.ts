/**
 * Automatic checkpoints coalesced by burst: ten lower files edited in a row make one checkpoint;
 * a pause longer than burstGap, or a new turn, starts a new burst; directory deletes always get one;
 * never two for one state. Time is Vitest's fake clock, so bursts and pauses are exact.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Workspace } from '../src/index.js'

const lower = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/src/f${i}.ts`, `export const v${i} = ${i}\n`]))
const autos = (ws: Workspace) => ws.checkpoints().filter((checkpoint) => checkpoint.kind === 'auto')

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(new Date('2025-01-01T10:00:00Z'))
})
afterEach(() => vi.useRealTimers())

describe('automatic checkpoints', () => {
  it('editing ten lower files in a burst makes one, before the first', async () => {
    const ws = await Workspace.open({ lower })
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(5_000) // an agent's pace: a tool call every few seconds
      ws.fs.writeFileSync(`/src/f${i}.ts`, `export const v${i} = ${i * 10}\n`)
    }
    expect(autos(ws)).toHaveLength(1)
    expect(autos(ws)[0].description).toBe('before file_edit /src/f0.ts')
    // It is the state before any of them.
    await ws.restore(autos(ws)[0].id)
    for (let i = 0; i < 10; i++) expect(ws.fs.readFileSync(`/src/f${i}.ts`, 'utf8')).toBe(lower[`/src/f${i}.ts`])
  })

  it('a pause longer than burstGap starts a new burst; a second write to the same file is no first overwrite', async () => {
    const ws = await Workspace.open({ lower, autoCheckpoint: { burstGap: 10_000 } })
    ws.fs.writeFileSync('/src/f0.ts', 'a')
    vi.advanceTimersByTime(9_000)
    ws.fs.writeFileSync('/src/f1.ts', 'b')
    expect(autos(ws)).toHaveLength(1)
    vi.advanceTimersByTime(11_000)
    ws.fs.writeFileSync('/src/f0.ts', 'c') // upper already: not an overwrite of a lower file
    expect(autos(ws)).toHaveLength(1)
    vi.advanceTimersByTime(11_000)
    ws.fs.writeFileSync('/src/f2.ts', 'd')
    expect(autos(ws).map((checkpoint) => checkpoint.description)).toEqual(['before file_edit /src/f0.ts', 'before file_edit /src/f2.ts'])
    // burstGap 0: every write its own burst, as before coalescing.
    const each = await Workspace.open({ lower, autoCheckpoint: { burstGap: 0 } })
    for (let i = 0; i < 4; i++) {
      vi.advanceTimersByTime(1)
      each.fs.writeFileSync(`/src/f${i}.ts`, 'x')
    }
    expect(autos(each)).toHaveLength(4)
  })

  it('a turn starts a burst its own checkpoint covers; a manual checkpoint covers the rest of a burst', async () => {
    const ws = await Workspace.open({ lower })
    await ws.beginTurn(1)
    ws.fs.writeFileSync('/src/f0.ts', 'a')
    ws.fs.writeFileSync('/src/f1.ts', 'b')
    expect(autos(ws)).toHaveLength(0)
    expect(ws.checkpoints().map((checkpoint) => checkpoint.kind)).toEqual(['turn'])
    vi.advanceTimersByTime(120_000)
    await ws.checkpoint({ name: 'mine' })
    ws.fs.writeFileSync('/src/f2.ts', 'c')
    expect(autos(ws)).toHaveLength(0)
  })

  it('deleting or renaming a directory always gets one, unless nothing changed since the last', async () => {
    const ws = await Workspace.open({ lower: { ...lower, '/docs/a.md': 'a', '/docs/b.md': 'b', '/old/x.md': 'x' } })
    ws.fs.writeFileSync('/src/f0.ts', 'a')
    ws.fs.rmSync('/docs', { recursive: true })
    ws.fs.writeFileSync('/src/f1.ts', 'b')
    ws.fs.renameSync('/old', '/new')
    expect(autos(ws).map((checkpoint) => checkpoint.description)).toEqual(['before file_edit /src/f0.ts', 'before file_delete /docs', 'before rename /old, /new'])
    // Nothing changed since the last checkpoint: it stands for the state, no second one.
    await ws.checkpoint({ name: 'here' })
    ws.fs.rmSync('/new', { recursive: true })
    expect(autos(ws)).toHaveLength(3)
  })

  it('refuses a burstGap that is not a number of milliseconds', async () => {
    await expect(Workspace.open({ autoCheckpoint: { burstGap: -1 } })).rejects.toThrow('autoCheckpoint.burstGap must be a number of milliseconds')
  })
})
