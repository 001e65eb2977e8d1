/**
 * Runs the shared AsyncWorkspace cases (async-workspace-cases.ts), the differential fs scenarios
 * (fs-scenarios.ts, against node:fs on a real directory) and the acknowledgement check (a directory
 * store read back from this process after each recording call) for one implementation, under vitest.
 */
import nodeFs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { directoryStore } from '../../adapters/node-fs/index.js'
import type { AsyncWorkspace } from '../../src/async-workspace.js'
import { Workspace } from '../../src/workspace.js'
import { asyncWorkspaceCases } from './async-workspace-cases.js'
import { SCENARIO_ROOT, fsScenarios, scenarioLower, transcript } from './fs-scenarios.js'
import { realTranscript } from './real-fs.js'

/**
 * Opens a fresh workspace over `files` as its lower layer (a fixture: path → text), with a
 * directory store at `store` when one is given.
 */
export type OpenAsyncWorkspace = (files?: Record<string, string>, store?: string) => Promise<AsyncWorkspace>

export interface SuiteOptions {
  /** fs scenarios this implementation is known to fail yet (run as it.fails, so a fix shows up as a failure to remove the entry). */
  knownDifferences?: readonly string[]
}

export function asyncWorkspaceSuite(name: string, open: OpenAsyncWorkspace, options: SuiteOptions = {}): void {
  describe(`AsyncWorkspace: ${name}`, () => {
    const opened: AsyncWorkspace[] = []
    const scratch: string[] = []
    const fresh = async (files?: Record<string, string>, store?: string) => {
      const ws = await open(files, store)
      opened.push(ws)
      return ws
    }
    afterEach(async () => {
      for (const ws of opened.splice(0)) await ws.close()
      for (const dir of scratch.splice(0)) nodeFs.rmSync(dir, { recursive: true, force: true })
    })

    it('with a durable store, every recording call resolves only once durable: a reader of the store sees it then', async () => {
      const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-async-ack-'))
      scratch.push(dir)
      const files = { '/a.txt': 'a' }
      const ws = await fresh(files, dir)
      const fs = ws.fs.promises
      /** What a second reader of the store (read-only, as `rewindfs status` opens it) finds right now. */
      const reader = async () => {
        const seen = await Workspace.open({ lower: files, store: directoryStore(dir, { readOnly: true }) })
        try {
          const list = (p: string) => (seen.fs.existsSync(p) ? (seen.fs.readFileSync(p, 'utf8') as string) : null)
          return { b: list('/b.txt'), t: list('/t.txt'), checkpoints: seen.checkpoints().map((c) => c.name), resume: seen.resume, last: seen.history()[0] }
        } finally {
          await seen.close()
        }
      }
      // A plain fs call is durable at the next group commit; the checkpoint after it acknowledges both.
      await fs.writeFile('/b.txt', 'b')
      await ws.checkpoint({ name: 'one' })
      expect(await reader()).toMatchObject({ b: 'b', checkpoints: ['one'] })
      await ws.transaction((staged) => staged.promises.writeFile('/t.txt', 't'))
      expect(await reader()).toMatchObject({ t: 't', last: { type: 'transaction' } })
      await ws.undo()
      expect(await reader()).toMatchObject({ t: null, last: { type: 'transaction', undone: true } })
      await ws.redo()
      expect((await reader()).t).toBe('t')
      await ws.restore('one')
      expect(await reader()).toMatchObject({ t: null, last: { type: 'restore' } })
      await ws.undoRestore()
      expect((await reader()).t).toBe('t')
      await ws.setResume({ phase: 'verify', turn: 2 })
      expect((await reader()).resume).toEqual({ phase: 'verify', turn: 2 })
      await ws.beginTurn(4)
      await ws.renameCheckpoint('one', 'uno')
      expect((await reader()).checkpoints).toEqual(['uno', expect.stringMatching(/^guard-/), 'turn-4'])
      await ws.deleteCheckpoint('turn-4')
      await ws.recordSideEffect({ description: 'mailed', compensate: { name: 'async-suite-unmail' } })
      const afterEffect = await reader()
      expect(afterEffect.last).toMatchObject({ type: 'side_effect', description: 'mailed' })
      expect(afterEffect.checkpoints).not.toContain('turn-4')
      await ws.reset()
      expect(await reader()).toMatchObject({ b: null, t: null, last: { type: 'reset' } })
    })

    for (const [title, body] of Object.entries(asyncWorkspaceCases)) it(title, () => body(fresh))

    describe('fs as node:fs answers on a real directory', () => {
      for (const [title, scenario] of Object.entries(fsScenarios)) {
        const known = options.knownDifferences?.includes(title) ?? false
        ;(known ? it.fails : it)(title, async (context) => {
          const ws = await fresh(scenarioLower(scenario))
          if (scenario.needs && !(await scenario.needs(ws.fs, SCENARIO_ROOT))) context.skip()
          expect(await transcript(scenario, ws.fs, SCENARIO_ROOT)).toEqual(await realTranscript(title))
        })
      }
    })
  })
}
