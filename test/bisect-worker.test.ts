/**
 * ws.bisect through a Node worker (AsyncWorkspace): the search runs beside the workspace in the
 * worker, onProbe and isGood run in the caller's thread, and a BisectError arrives as one.
 */
import fs from 'node:fs'
import os from 'node:os'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { BisectError, type BisectProbe } from '../src/index.js'
import { openWorkerWorkspace } from '../worker/index.js'
import { TEST_FILE } from './support/bisect-project.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-bisect-worker-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

describe('bisect in a worker', () => {
  it('finds the breaking operation with callbacks in this thread, and refuses as the engine does', async () => {
    const project = `${scratch}/project`
    fs.mkdirSync(`${project}/src`, { recursive: true })
    fs.mkdirSync(`${project}/test`)
    fs.writeFileSync(`${project}/package.json`, '{ "type": "module" }\n')
    fs.writeFileSync(`${project}/src/sum.js`, 'export const sum = (a, b) => a + b\n')
    fs.writeFileSync(`${project}/src/util.js`, "import { sum } from './sum.js'\nexport const twice = (x) => sum(x, x)\n")
    fs.writeFileSync(`${project}/test/sum.test.js`, TEST_FILE)
    const ws = await openWorkerWorkspace(new Worker(new URL('../worker/bootstrap.mjs', import.meta.url)), { lower: { kind: 'directory', path: project } })
    try {
      for (let i = 1; i <= 10; i++) {
        await ws.fs.promises.writeFile(i === 6 ? '/src/sum.js' : `/notes-${i}.md`, i === 6 ? 'export const sum = () => 0\n' : `note ${i}\n`)
      }
      const ids = (await ws.history()).reverse().map((op) => op.id)
      const seen: BisectProbe[] = []
      const judged: number[] = []
      const result = await ws.bisect('node test/sum.test.js', {
        onProbe: (probe) => seen.push(probe),
        isGood: (run) => (judged.push(run.exitCode ?? -1), run.exitCode === 0),
      })
      expect(result.suspects.map((op) => op.id)).toEqual([ids[5]])
      expect(result.diff).toContain('+export const sum = () => 0')
      expect(seen).toEqual(result.probes)
      expect(judged).toHaveLength(result.probes.length)
      expect((await ws.history()).length).toBe(10)

      const error = await ws.bisect('node test/sum.test.js', { to: { operation: ids[3] } }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BisectError)
      expect(error).toMatchObject({ code: 'EBISECTTO', message: expect.stringContaining('the command passes at to') })
      expect((error as BisectError).probes.at(-1)).toMatchObject({ state: { operation: { id: ids[3] } }, verdict: 'good' })
    } finally {
      await ws.close()
    }
  })
})
