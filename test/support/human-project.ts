/**
 * A project on disk that a human edits while the agent works on it through a workspace (the flush
 * tests' setting): the project and its store, the tree as Linux sees it, and the flush refused.
 * Real directories are the oracle; the human's edits are made with node:fs.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, expect } from 'vitest'
import { directory, directoryStore } from '../../adapters/node-fs/index.js'
import { Workspace } from '../../src/index.js'

/** Projects under one scratch directory (`name` in its name), removed after the file's tests. */
export function humanProjects(name: string): (files: Record<string, string>) => { root: string; store: string } {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `rewindfs-${name}-`))
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
  let serial = 0
  /** A project holding `files` (a name ending in '/' is a directory), and a store beside it. */
  return (files) => {
    const base = path.join(scratch, `p${serial++}`)
    const root = path.join(base, 'project')
    fs.mkdirSync(root, { recursive: true })
    for (const [name, content] of Object.entries(files)) {
      const at = path.join(root, name)
      if (name.endsWith('/')) fs.mkdirSync(at, { recursive: true })
      else {
        fs.mkdirSync(path.dirname(at), { recursive: true })
        fs.writeFileSync(at, content)
      }
    }
    return { root, store: path.join(base, 'store') }
  }
}

export async function open(root: string, store: string): Promise<Workspace> {
  return Workspace.open({ lower: directory(root), store: directoryStore(store) })
}

/** Every entry under `root` as Linux sees it: files with their text, directories with a slash (`dirs`: false leaves them out). */
export function tree(root: string, { dirs = true } = {}): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string, shown: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.rewindfs-flush')) continue
      const at = `${shown}/${entry.name}`
      if (entry.isDirectory()) {
        if (dirs) out[`${at}/`] = ''
        walk(path.join(dir, entry.name), at)
      } else out[at] = fs.readFileSync(path.join(dir, entry.name), 'utf8')
    }
  }
  walk(root, '')
  return out
}

/** The human's later edit gets a ctime past the operation before it, whatever the clock's tick. */
export const tick = () => new Promise((resolve) => setTimeout(resolve, 15))

/** The flush refuses with ECONFLICT naming exactly `paths`, and the disk is what it was. */
export async function refused(ws: Workspace, root: string, paths: string[]): Promise<void> {
  const before = tree(root)
  const error = await ws.flush().then(
    () => undefined,
    (thrown: unknown) => thrown as { code?: string; conflicts?: { path: string }[] },
  )
  expect(error?.code).toBe('ECONFLICT')
  expect(error?.conflicts?.map((c) => c.path)).toEqual(paths)
  expect(tree(root)).toEqual(before)
}
