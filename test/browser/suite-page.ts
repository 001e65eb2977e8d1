/**
 * The shared AsyncWorkspace suite in a real browser (bundled by worker-browser.test.ts, with
 * 'vitest' aliased to expect-shim.ts): each case and fs scenario runs against the engine in a Web
 * Worker, one fresh worker per workspace, and reports plain data to the test driving the page.
 */
import type { AsyncWorkspace } from '../../src/async-workspace.js'
import { openWorkerWorkspace } from '../../worker/index.js'
import { asyncWorkspaceCases } from '../support/async-workspace-cases.js'
import { SCENARIO_ROOT, fsScenarios, scenarioLower, transcript } from '../support/fs-scenarios.js'

const open = (files?: Record<string, string>) =>
  openWorkerWorkspace(new Worker('/worker.js', { type: 'module' }), { lower: files ? { kind: 'fixture', files } : undefined })

const suite = {
  async runCase(title: string): Promise<{ ok: true } | { ok: false; error: string }> {
    const opened: AsyncWorkspace[] = []
    try {
      await asyncWorkspaceCases[title](async (files) => {
        const ws = await open(files)
        opened.push(ws)
        return ws
      })
      return { ok: true }
    } catch (error) {
      return { ok: false, error: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error) }
    } finally {
      for (const ws of opened) await ws.close()
    }
  },

  async runScenario(title: string): Promise<{ skipped: true } | { transcript: [string, unknown][] }> {
    const scenario = fsScenarios[title]
    const ws = await open(scenarioLower(scenario))
    try {
      if (scenario.needs && !(await scenario.needs(ws.fs, SCENARIO_ROOT))) return { skipped: true }
      return { transcript: await transcript(scenario, ws.fs, SCENARIO_ROOT) }
    } finally {
      await ws.close()
    }
  },
}

export type Suite = typeof suite

declare global {
  interface Window {
    suite: Suite
  }
}

window.suite = suite
document.getElementById('status')!.textContent = 'ready'
