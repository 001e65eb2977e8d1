/**
 * Runs the shared AsyncWorkspace cases (async-workspace-cases.ts) and the differential fs scenarios
 * (fs-scenarios.ts, against node:fs on a real directory) for one implementation, under vitest.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { AsyncWorkspace } from '../../src/async-workspace.js'
import { asyncWorkspaceCases } from './async-workspace-cases.js'
import { SCENARIO_ROOT, fsScenarios, scenarioLower, transcript } from './fs-scenarios.js'
import { realTranscript } from './real-fs.js'

/** Opens a fresh workspace over `files` as its lower layer (a fixture: path → text). */
export type OpenAsyncWorkspace = (files?: Record<string, string>) => Promise<AsyncWorkspace>

export interface SuiteOptions {
  /** fs scenarios this implementation is known to fail yet (run as it.fails, so a fix shows up as a failure to remove the entry). */
  knownDifferences?: readonly string[]
}

export function asyncWorkspaceSuite(name: string, open: OpenAsyncWorkspace, options: SuiteOptions = {}): void {
  describe(`AsyncWorkspace: ${name}`, () => {
    const opened: AsyncWorkspace[] = []
    const fresh = async (files?: Record<string, string>) => {
      const ws = await open(files)
      opened.push(ws)
      return ws
    }
    afterEach(async () => {
      for (const ws of opened.splice(0)) await ws.close()
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
