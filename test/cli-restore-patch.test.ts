/**
 * `rewindfs restore --dry-run --patch` on a large change: a bounded patch by default (a whole
 * library's diff once printed 5.4 MB), --limit to see more, --path to see one file's, and both
 * refused where they would mislead (a real restore restores every path).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { buildCli, removeCli, runCli } from './cli-process.js'

let tmp: string
let project: string
let store: string

beforeAll(async () => {
  await buildCli()
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-restore-patch-'))
  project = path.join(tmp, 'project')
  store = path.join(tmp, 'store')
  for (let i = 0; i < 200; i++) {
    fs.mkdirSync(path.join(project, 'lib'), { recursive: true })
    fs.writeFileSync(path.join(project, `lib/m${String(i).padStart(3, '0')}.js`), Array.from({ length: 30 }, (_, line) => `export const v${line} = ${line}`).join('\n') + '\n')
  }
  const ws = await Workspace.open({ lower: directory(project), store: directoryStore(store) })
  await ws.checkpoint({ name: 'start' })
  for (const name of ws.fs.readdirSync('/lib') as string[]) ws.fs.writeFileSync(`/lib/${name}`, 'export {}\n')
  await ws.close()
})

afterAll(() => {
  removeCli()
  fs.rmSync(tmp, { recursive: true, force: true })
})

const restore = (...extra: string[]) => runCli(['restore', 'start', '--dir', project, '--store', store, '--dry-run', ...extra])

describe('rewindfs restore --patch', () => {
  it('shows at most 400 diff lines by default and says how to see more', () => {
    const result = restore('--patch')
    expect(result.code).toBe(0)
    const diffLines = result.stdout.split('\n').filter((line) => /^ {4}[-+@ ]/.test(line))
    expect(diffLines.length).toBeLessThanOrEqual(400)
    expect(diffLines.length).toBeGreaterThan(300)
    // Every path is still listed; the patches stop.
    expect(result.stdout.split('\n').filter((line) => /^ {2}\S/.test(line))).toHaveLength(200)
    expect(result.stdout).toMatch(/\d+ diff line\(s\) not shown \(at most 400\): --limit <lines> shows more, --path <path> only what is under a path/)
  })

  it('--limit sets the number of lines, --path narrows to one file (also in --json)', () => {
    const more = restore('--patch', '--limit', '2000')
    const shown = more.stdout.split('\n').filter((line) => /^ {4}(?!…)/.test(line)).length
    expect(shown).toBeGreaterThan(1500)
    expect(shown).toBeLessThanOrEqual(2000)
    const one = JSON.parse(restore('--patch', '--path', '/lib/m007.js', '--json').stdout)
    expect(one.changes).toHaveLength(1)
    expect(one.changes[0]).toMatchObject({ path: '/lib/m007.js', type: 'modified' })
    expect(one.changes[0].patch).toContain('-export {}')
    expect(one.patchLinesCut).toBeUndefined()
    const cut = JSON.parse(restore('--patch', '--json').stdout)
    expect(cut.patchLinesCut).toBeGreaterThan(0)
    expect(cut.changes.at(-1)).toMatchObject({ patch: '', patchLinesCut: expect.any(Number) })
  })

  it('refuses --path on a real restore and --limit without --patch', () => {
    expect(runCli(['restore', 'start', '--dir', project, '--store', store, '--path', '/lib'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--path narrows what a dry run shows') })
    expect(restore('--limit', '10')).toMatchObject({ code: 2, stderr: expect.stringContaining('add --patch') })
  })
})
