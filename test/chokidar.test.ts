/**
 * chokidar (what Vite and most dev servers watch with) over mountOver + patchFs: writes made through
 * the workspace reach it as add/change/unlink/addDir/unlinkDir, the events chokidar gives for the
 * same steps on a real directory (run here too, as the oracle). chokidar keeps fs/promises' stat and
 * lstat in a table when it loads, so it is loaded after patchFs, as any such module must be.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { mountOver, patchFs } from '../adapters/node-fs/mount.js'
import { type NodeFs, Workspace } from '../src/index.js'
import { watching as watchCapability } from '../src/watch.js'

type Chokidar = typeof import('chokidar')
type Step = readonly [label: string, run: (fs: NodeFs, at: (path: string) => string) => unknown, expected: readonly string[]]

const FILES: Record<string, string> = { '/README.md': 'readme\n', '/src/a.ts': 'export const a = 1\n', '/src/old/z.ts': 'z\n' }

/** The steps, each with the events chokidar gives for it (order within a step is chokidar's own: compared sorted). */
const steps: readonly Step[] = [
  ['a new file', (fs, at) => fs.writeFileSync(at('/src/b.ts'), 'export const b = 2\n'), ['add /src/b.ts']],
  ['a changed file', (fs, at) => fs.writeFileSync(at('/src/a.ts'), 'export const a = 3\n'), ['change /src/a.ts']],
  ['new directories and a file in them', (fs, at) => {
    fs.mkdirSync(at('/lib/deep'), { recursive: true })
    fs.writeFileSync(at('/lib/deep/x.ts'), 'x\n')
  }, ['addDir /lib', 'addDir /lib/deep', 'add /lib/deep/x.ts']],
  ['an appended file', (fs, at) => fs.appendFileSync(at('/lib/deep/x.ts'), 'more\n'), ['change /lib/deep/x.ts']],
  ['a removed file', (fs, at) => fs.unlinkSync(at('/src/b.ts')), ['unlink /src/b.ts']],
  ['a removed tree', (fs, at) => fs.rmSync(at('/lib'), { recursive: true }), ['unlink /lib/deep/x.ts', 'unlinkDir /lib/deep', 'unlinkDir /lib']],
  ['a removed directory of the lower layer', (fs, at) => fs.rmSync(at('/src/old'), { recursive: true }), ['unlink /src/old/z.ts', 'unlinkDir /src/old']],
  ['a renamed file', (fs, at) => fs.renameSync(at('/README.md'), at('/README.txt')), ['add /README.txt', 'unlink /README.md']],
]

const scratch = fs.realpathSync(fs.mkdtempSync(`${os.tmpdir()}/rewindfs-chokidar-`))
/** node:fs as it is before any patch: what is on the disk. */
const disk = { readdirSync: fs.readdirSync, rmSync: fs.rmSync }
let serial = 0
function tempDirectory(): string {
  const root = `${scratch}/d${serial++}`
  for (const [path, content] of Object.entries(FILES)) {
    fs.mkdirSync(`${root}${path.slice(0, path.lastIndexOf('/'))}`, { recursive: true })
    fs.writeFileSync(root + path, content)
  }
  return root
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Watches `root` with chokidar; `step` runs one step and answers the events it caused (sorted), once they stop coming. */
async function watching(chokidar: Chokidar, root: string, options: Parameters<Chokidar['watch']>[1] = {}) {
  const events: string[] = []
  const watcher = chokidar.watch(root, { ignoreInitial: false, ...options })
  watcher.on('all', (event, path) => events.push(`${event} ${path.slice(root.length) || '/'}`))
  const errors: unknown[] = []
  watcher.on('error', (error) => errors.push(error))
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()))
  const initial = events.splice(0).sort()
  const step = async (run: () => unknown, expected: number): Promise<string[]> => {
    await run()
    // Until the expected number arrived (chokidar throttles reads and delays unlinks), then a quiet spell for any extra.
    for (let waited = 0; events.length < expected && waited < 5000; waited += 20) await pause(20)
    await pause(250)
    return events.splice(0).sort()
  }
  return { initial, step, errors, close: () => watcher.close() }
}

describe('chokidar over mountOver + patchFs', () => {
  let chokidar: Chokidar
  let undoPatch: () => void
  let ws: Workspace
  let project: string
  beforeAll(async () => {
    project = tempDirectory()
    // Node 20 loads its recursive rm on first use and keeps the fs functions it finds then: load it
    // before the patch, so removing the scratch directory afterwards reaches the disk.
    fs.rmSync(tempDirectory(), { recursive: true })
    ws = await Workspace.open({ watch: watchCapability, lower: directory(project), autoCheckpoint: false })
    undoPatch = patchFs(mountOver(ws, project))
    chokidar = await import('chokidar')
  })
  afterAll(async () => {
    undoPatch?.()
    await ws?.close()
    disk.rmSync(scratch, { recursive: true, force: true })
  })

  for (const mode of ['fs.watch', 'polling'] as const) {
    it(`reports writes through the workspace as chokidar reports them on a real directory (${mode})`, async () => {
      const options = mode === 'polling' ? { usePolling: true, interval: 20, binaryInterval: 20 } : {}
      // The oracle: the same steps with node:fs on a real directory (outside the mounted root).
      const real = tempDirectory()
      const oracle = await watching(chokidar, real, options)
      const oracleSteps: Record<string, string[]> = {}
      for (const [label, run, expected] of steps) oracleSteps[label] = await oracle.step(() => run(fs as unknown as NodeFs, (path) => real + path), expected.length)
      await oracle.close()

      await ws.reset()
      const watched = await watching(chokidar, project, options)
      const ours: Record<string, string[]> = {}
      for (const [label, run, expected] of steps) ours[label] = await watched.step(() => run(ws.fs, (path) => path), expected.length)
      // Undo in the workspace puts the name back: chokidar sees it as the reverse rename.
      ours.undo = await watched.step(() => ws.undo(), 2)
      // The patched node:fs writes into the workspace too.
      ours['node:fs'] = await watched.step(() => fs.writeFileSync(`${project}/src/c.ts`, 'c\n'), 1)
      await watched.close()

      expect(oracle.initial).toEqual(['add /README.md', 'add /src/a.ts', 'add /src/old/z.ts', 'addDir /', 'addDir /src', 'addDir /src/old'])
      expect(watched.initial).toEqual(oracle.initial)
      expect(oracleSteps).toEqual(Object.fromEntries(steps.map(([label, , expected]) => [label, [...expected].sort()])))
      expect(ours).toEqual({ ...oracleSteps, undo: ['add /README.md', 'unlink /README.txt'], 'node:fs': ['add /src/c.ts'] })
      expect(oracle.errors).toEqual([])
      expect(watched.errors).toEqual([])
      // Nothing reached the disk under the project.
      expect(disk.readdirSync(project).sort()).toEqual(['README.md', 'src'])
      expect(disk.readdirSync(`${project}/src`).sort()).toEqual(['a.ts', 'old'])
    })
  }
})
