import { afterEach, describe, expect, it, vi } from 'vitest'
import { Workspace } from '../src/index.js'
import { retained } from '../src/engine/retention.js'
import { callTool, createAgentTools } from '../tools/index.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR

describe('tiered retention', () => {
  afterEach(() => vi.useRealTimers())

  it('keeps the newest 5, the newest of each of the last 24 hours and of each of the last 7 days', () => {
    const now = Date.UTC(2026, 10, 22, 12, 0, 0)
    // One checkpoint every 20 minutes for 10 days, oldest first.
    const items = Array.from({ length: 10 * 72 }, (_, i) => ({ createdAt: now - (10 * 72 - 1 - i) * 20 * 60_000 }))
    const keep = retained(items, { last: 5, hourly: 24, daily: 7 }, now)
    const kept = items.filter((item) => keep.has(item))
    // The last five, whatever their hours.
    for (const item of items.slice(-5)) expect(keep.has(item)).toBe(true)
    // Exactly one per hour bucket within the last 24 hours (plus the last five).
    const hourly = kept.filter((k) => now - k.createdAt < 24 * HOUR && !items.slice(-5).includes(k))
    const hours = new Set(hourly.map((k) => Math.floor(k.createdAt / HOUR)))
    expect(hours.size).toBe(hourly.length)
    expect(hours.size).toBeGreaterThanOrEqual(22)
    // Nothing older than 7 days, and one per day bucket from 1 to 7 days back.
    expect(kept.every((k) => now - k.createdAt < 7 * DAY)).toBe(true)
    const older = kept.filter((k) => now - k.createdAt >= 24 * HOUR)
    expect(new Set(older.map((k) => Math.floor(k.createdAt / DAY))).size).toBe(older.length)
    expect(older.length).toBeGreaterThanOrEqual(6)
    // Each kept one is the newest of its hour (for the hourly tier).
    for (const k of hourly) {
      const sameHour = items.filter((i) => Math.floor(i.createdAt / HOUR) === Math.floor(k.createdAt / HOUR))
      expect(k).toBe(sameHour[sameHour.length - 1])
    }
  })

  it('prunes turn checkpoints by the tiered policy and never manual ones', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.UTC(2026, 10, 1)
    vi.setSystemTime(start)
    const ws = await Workspace.open({ lower: { '/a.txt': '0' }, retention: { checkpoints: { last: 2, hourly: 3, daily: 2 } }, autoCheckpoint: false })
    await ws.checkpoint({ name: 'manual-start' })
    // A turn every 30 minutes for 3 days.
    for (let turn = 1; turn <= 144; turn++) {
      vi.setSystemTime(start + turn * 30 * 60_000)
      ws.fs.writeFileSync('/a.txt', String(turn))
      await ws.beginTurn(turn)
    }
    const now = start + 144 * 30 * 60_000
    const turns = ws.checkpoints().filter((c) => c.kind === 'turn')
    expect(ws.checkpoints().some((c) => c.name === 'manual-start')).toBe(true)
    // last 2 + newest of each of the last 3 hours + newest of each of the last 2 days, with overlaps.
    expect(turns.length).toBeGreaterThanOrEqual(3)
    expect(turns.length).toBeLessThanOrEqual(2 + 3 + 2)
    expect(turns.every((c) => now - c.createdAt < 2 * DAY)).toBe(true)
    expect(turns.at(-1)!.createdAt).toBe(now)
    await ws.close()
  })

  it("keeps the last N automatic and the last N turn checkpoints apart: a tool's automatic ones never push out an agent's turns", async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false, retention: { checkpoints: 3 } })
    const tools = createAgentTools(ws)
    for (let turn = 1; turn <= 4; turn++) {
      await ws.beginTurn(turn)
      for (let i = 0; i < 3; i++) ws.fs.writeFileSync(`/t${turn}-${i}`, 'x')
    }
    // Each undo_operation call keeps an automatic checkpoint first (its guard).
    for (let i = 0; i < 6; i++) {
      const outcome = await callTool(tools, 'undo_operation', {})
      expect(outcome.isError).toBe(false)
    }
    const kinds = (kind: string) => ws.checkpoints().filter((c) => c.kind === kind).map((c) => c.name)
    expect(kinds('turn')).toEqual(['turn-2', 'turn-3', 'turn-4'])
    expect(kinds('auto')).toHaveLength(3)
    await ws.close()
  })

  it('redo stops once a new operation is recorded, also when retention has since dropped as many old ones', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false, retention: { operations: 3 } })
    for (let i = 0; i < 20; i++) ws.fs.writeFileSync('/f', String(i))
    await ws.undo()
    // Seventeen new operations: the kept history is trimmed back to three, the count it had at the undo.
    for (let i = 0; i < 17; i++) ws.fs.writeFileSync(`/g${i}`, 'x')
    expect(ws.history()).toHaveLength(3)
    expect((await ws.redo()).redone).toEqual([])
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('18')
    await ws.close()
  })
})

