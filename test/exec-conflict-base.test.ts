/**
 * The conflict base of what a command changes is the project as the command found it when it
 * started: a person who edits (or makes, or edits what the command deletes) a project file while a
 * command ws.exec runs changes that same path makes the next flush a conflict there, and nothing of
 * theirs is written over unless `force`. The command's changes are recorded once it ends, and the
 * transaction that records them reads the disk then: without its base from the start, it took the
 * person's version for what the command worked from, and the flush wrote over it. Real commands in
 * both modes, a real project directory; the test plays the person between the command's steps.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { Workspace } from '../src/index.js'
import type { ExecMode, ExecResult } from '../src/index.js'
import { until } from './support/processes.js'
import { capability } from './support/require.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-conflict-base-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const host = await support()
const modes: ExecMode[] = capability('exec-overlay', host.overlay) ? ['overlay', 'copy'] : ['copy']

let serial = 0
/**
 * A project whose files are older than the next command: a change stamped in the clock tick the
 * command starts in (the kernel stamps files from a coarse clock) counts as made while it ran.
 */
async function project(files: Record<string, string>): Promise<string> {
  const root = `${scratch}/p${serial++}`
  fs.mkdirSync(root)
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(`${root}/${name}`, text)
  await new Promise((resolve) => setTimeout(resolve, 50))
  return root
}

/** The project's files and their text, the flush's staging folder left out. */
function disk(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of fs.readdirSync(root).sort()) if (!name.startsWith('.rewindfs-flush')) out[name] = fs.readFileSync(`${root}/${name}`, 'utf8')
  return out
}

/**
 * Runs `script` in the workspace; where it calls `ready` the command says it has started (a file
 * outside the project) and waits until `person` has done their part on disk.
 */
async function whileRunning(ws: Workspace, mode: ExecMode, script: (ready: string) => string, person: () => void): Promise<ExecResult> {
  const signals = fs.mkdtempSync(`${scratch}/signals-`)
  const ready = `touch '${signals}/started'; while [ ! -e '${signals}/go' ]; do sleep 0.02; done`
  let failed = false
  const running = ws.exec(script(ready), { mode })
  running.catch(() => (failed = true))
  expect(await until(() => failed || fs.existsSync(`${signals}/started`), 30_000)).toBe(true)
  if (!failed) {
    person()
    fs.writeFileSync(`${signals}/go`, '')
  }
  return running
}

/** The flush's refusal: its code and the paths it names. */
async function refusal(ws: Workspace): Promise<{ code?: string; paths?: string[] }> {
  try {
    await ws.flush()
  } catch (error) {
    const { code, conflicts } = error as { code?: string; conflicts?: { path: string }[] }
    return { code, paths: conflicts?.map((c) => c.path) }
  }
  return {}
}

describe.each(modes)('the conflict base of what a command (%s mode) changes is the project as the command started', (mode) => {
  it('a file a person edits while the command rewrites it from what it read: the flush is a conflict there, and force writes the command\'s', async () => {
    const root = await project({ 'a.txt': 'orig\n', 'b.txt': 'b\n' })
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const result = await whileRunning(ws, mode, (ready) => `c=$(cat a.txt); ${ready}; printf '%s agent\\n' "$c" > a.txt; echo agent > b.txt`, () => fs.writeFileSync(`${root}/a.txt`, 'HUMAN EDIT\n'))
      expect(result).toMatchObject({ exitCode: 0, mode, changes: { added: [], modified: ['/a.txt', '/b.txt'], deleted: [] } })
      expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('orig agent\n')
      // Only the path the person changed; nothing written, theirs kept.
      expect(await refusal(ws)).toEqual({ code: 'ECONFLICT', paths: ['/a.txt'] })
      expect(disk(root)).toEqual({ 'a.txt': 'HUMAN EDIT\n', 'b.txt': 'b\n' })
      expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
      expect(disk(root)).toEqual({ 'a.txt': 'orig agent\n', 'b.txt': 'agent\n' })
    } finally {
      await ws.close()
    }
  })

  it('a file a person makes where the command makes one: the flush is a conflict there, and force writes the command\'s', async () => {
    const root = await project({ 'a.txt': 'a\n' })
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const result = await whileRunning(ws, mode, (ready) => `${ready}; echo agent > new.txt; echo mine > other.txt`, () => fs.writeFileSync(`${root}/new.txt`, 'HUMAN NEW FILE\n'))
      expect(result.exitCode).toBe(0)
      expect(ws.fs.readFileSync('/new.txt', 'utf8')).toBe('agent\n')
      expect(await refusal(ws)).toEqual({ code: 'ECONFLICT', paths: ['/new.txt'] })
      expect(disk(root)).toEqual({ 'a.txt': 'a\n', 'new.txt': 'HUMAN NEW FILE\n' })
      expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
      expect(disk(root)).toEqual({ 'a.txt': 'a\n', 'new.txt': 'agent\n', 'other.txt': 'mine\n' })
    } finally {
      await ws.close()
    }
  })

  it('a file a person edits while the command deletes it: the flush is a conflict there, and force deletes it', async () => {
    const root = await project({ 'a.txt': 'orig\n', 'b.txt': 'b\n' })
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const result = await whileRunning(ws, mode, (ready) => `${ready}; rm a.txt`, () => fs.writeFileSync(`${root}/a.txt`, 'HUMAN EDIT\n'))
      expect(result).toMatchObject({ exitCode: 0, changes: { added: [], modified: [], deleted: ['/a.txt'] } })
      expect(await refusal(ws)).toEqual({ code: 'ECONFLICT', paths: ['/a.txt'] })
      expect(disk(root)).toEqual({ 'a.txt': 'HUMAN EDIT\n', 'b.txt': 'b\n' })
      expect((await ws.flush(undefined, { force: true })).applied).toBe(true)
      expect(disk(root)).toEqual({ 'b.txt': 'b\n' })
    } finally {
      await ws.close()
    }
  })

  it('what a person changes beside the command\'s paths is no conflict: the flush writes the command\'s changes and leaves theirs', async () => {
    const root = await project({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' })
    const ws = await Workspace.open({ lower: directory(root) })
    try {
      const result = await whileRunning(ws, mode, (ready) => `${ready}; echo agent > b.txt; echo made > new.txt`, () => {
        fs.writeFileSync(`${root}/c.txt`, 'HUMAN EDIT\n')
        fs.writeFileSync(`${root}/d.txt`, 'HUMAN NEW FILE\n')
      })
      expect(result.exitCode).toBe(0)
      expect((await ws.flush()).applied).toBe(true)
      expect(disk(root)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'agent\n', 'c.txt': 'HUMAN EDIT\n', 'd.txt': 'HUMAN NEW FILE\n', 'new.txt': 'made\n' })
    } finally {
      await ws.close()
    }
  })
})
