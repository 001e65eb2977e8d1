/**
 * The oracle of the fs scenarios: each run once with Node's own fs in a fresh real directory,
 * its transcript cached for every implementation compared against it.
 */
import nodeFs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { AsyncFsRoot } from '../../src/async-workspace.js'
import { fsScenarios, transcript } from './fs-scenarios.js'

const cache = new Map<string, Promise<[string, unknown][]>>()

export function realTranscript(title: string): Promise<[string, unknown][]> {
  let result = cache.get(title)
  if (!result) {
    result = (async () => {
      const scenario = fsScenarios[title]
      const root = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-oracle-'))
      try {
        const files = Object.keys(scenario.files).length === 0 ? { '.keep': '' } : scenario.files
        for (const [name, contents] of Object.entries(files)) {
          nodeFs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true })
          nodeFs.writeFileSync(path.join(root, name), contents)
        }
        return await transcript(scenario, nodeFs as unknown as AsyncFsRoot, root)
      } finally {
        nodeFs.rmSync(root, { recursive: true, force: true })
      }
    })()
    cache.set(title, result)
  }
  return result
}
