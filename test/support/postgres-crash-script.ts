/**
 * The session the postgres crash test (test/postgres-crash.test.ts) kills at random moments: step n
 * is a pure function of the seed, n and the workspace's state, so the parent replays it on a
 * MemoryStore to know every state the child can have acknowledged (the oracle), and a child started
 * at step k+1 on the reopened store continues exactly where the oracle does.
 */
import { createHash } from 'node:crypto'
import type { Workspace } from '../../src/index.js'
import { generator } from './seed.js'
import { workspaceSnapshot } from './workspace-snapshot.js'

/** Every compactEvery records a compaction runs by itself (small: several per run). */
export const COMPACT_EVERY = 12
/** Large enough for the chunked path (CHUNK is 1 MiB): three chunks. */
export const BIG = 2 * 1024 * 1024 + 4321

export type StepKind = 'write' | 'big' | 'mkdir' | 'rename' | 'unlink' | 'checkpoint' | 'transaction' | 'undo' | 'restore' | 'compact' | 'state'

/** The kind of step n (a pure function of seed and n: the parent aims kills at big writes and compactions). */
export function stepKind(seed: number, n: number): StepKind {
  if (n % 9 === 0) return 'big'
  if (n % 11 === 0) return 'compact'
  const r = generator(seed ^ Math.imul(n, 0x9e3779b1)).next()
  const table: [number, StepKind][] = [
    [0.3, 'write'], [0.38, 'mkdir'], [0.47, 'rename'], [0.56, 'unlink'], [0.63, 'checkpoint'],
    [0.72, 'transaction'], [0.82, 'undo'], [0.87, 'restore'], [0.92, 'state'], [1, 'write'],
  ]
  return table.find(([below]) => r < below)![1]
}

function files(ws: Workspace): string[] {
  return (ws.fs.readdirSync('/', { recursive: true }) as string[]).map((p) => `/${p}`).filter((p) => ws.fs.lstatSync(p).isFile()).sort()
}

function dirs(ws: Workspace): string[] {
  return ['/', ...(ws.fs.readdirSync('/', { recursive: true }) as string[]).map((p) => `/${p}`).filter((p) => ws.fs.lstatSync(p).isDirectory()).sort()]
}

const join = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`)

/** Refusals a random step meets (nothing to undo, a name taken, a file moved into itself): no change, still acknowledged. */
const EXPECTED = new Set(['EEXIST', 'ENOENT', 'EDEPENDENT', 'EEFFECT', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EINVAL'])

/** Runs step n. Anything but an expected refusal is a defect and throws. */
export async function runStep(ws: Workspace, seed: number, n: number): Promise<void> {
  const random = generator((seed ^ Math.imul(n, 0x85ebca6b)) + 1)
  const kind = stepKind(seed, n)
  try {
    switch (kind) {
      case 'write': {
        const existing = files(ws).filter((p) => !p.startsWith('/big'))
        const target = existing.length > 0 && random.next() < 0.4 ? random.pick(existing) : join(random.pick(dirs(ws)), `f${random.below(6)}.txt`)
        ws.fs.writeFileSync(target, `step ${n}\n`.repeat(1 + random.below(3000)))
        break
      }
      case 'big': {
        ws.fs.mkdirSync('/big', { recursive: true })
        const bytes = new Uint8Array(BIG).fill(0x41 + (n % 26))
        bytes.set(new TextEncoder().encode(`big ${n} `), random.below(BIG - 16))
        ws.fs.writeFileSync(`/big/b${random.below(2)}.bin`, bytes)
        break
      }
      case 'mkdir':
        ws.fs.mkdirSync(join(random.pick(dirs(ws)), `d${random.below(4)}`))
        break
      case 'rename': {
        const from = random.pick([...files(ws), ...dirs(ws).slice(1)].filter((p) => p !== '/big'))
        if (from !== undefined) ws.fs.renameSync(from, join(random.pick(dirs(ws)), `r${n}`))
        break
      }
      case 'unlink': {
        const victim = random.pick(files(ws))
        if (victim !== undefined) ws.fs.rmSync(victim)
        break
      }
      case 'checkpoint':
        await ws.checkpoint({ name: `c${n}` })
        break
      case 'transaction':
        await ws.transaction((fs) => {
          fs.mkdirSync(`/tx${n}`)
          fs.writeFileSync(`/tx${n}/a.txt`, `in transaction ${n}`)
          fs.writeFileSync(`/tx${n}/b.txt`, `also ${n}`.repeat(1 + random.below(100)))
        })
        break
      case 'undo':
        await ws.undo()
        break
      case 'restore': {
        const names = ws.checkpoints().map((c) => c.name).sort()
        if (names.length > 0) await ws.restore(random.pick(names))
        break
      }
      case 'compact':
        await ws.compact()
        break
      case 'state':
        await ws.state.set(`k${random.below(3)}`, { step: n })
        break
    }
  } catch (error) {
    if (!EXPECTED.has((error as { code?: string }).code ?? '')) throw error
  }
}

/** The state a reopen must bring back, as one digest (files, state, checkpoints, history). */
export async function digest(ws: Workspace): Promise<string> {
  return createHash('sha256').update(JSON.stringify(await workspaceSnapshot(ws))).digest('hex').slice(0, 16)
}
