/**
 * The oracle of the fs parity tests: a call run on a fresh real directory with node:fs and on a
 * fresh workspace, both seeded alike, and its outcomes compared (the result, or the error's class,
 * code, errno, syscall, path, dest and message, the real directory's name taken out).
 */
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { afterAll, expect } from 'vitest'
import { Workspace } from '../../src/index.js'
import { watching } from '../../src/watch.js'

export type Fs = typeof nodeFs
/** A path on one side: absolute ones under that side's root. */
export type At = (path: string) => string

/** What a call gave, comparable across the sides: errors by their Node fields, bytes as text. */
export function outcome(value: unknown, root: string): unknown {
  const strip = (text: string) => (root === '' ? text : text.split(root).join(''))
  if (value instanceof Error) {
    const error = value as Error & Record<string, unknown>
    const fields: Record<string, unknown> = { name: error.name, message: strip(error.message), code: error.code, errno: error.errno, syscall: error.syscall }
    if (error.path !== undefined) fields.path = typeof error.path === 'string' ? strip(error.path) : error.path
    if (error.dest !== undefined) fields.dest = typeof error.dest === 'string' ? strip(error.dest) : error.dest
    return fields
  }
  if (typeof value === 'string') return strip(value)
  if (value instanceof Uint8Array) return { bytes: Buffer.from(value).toString('latin1'), buffer: Buffer.isBuffer(value) }
  if (Array.isArray(value)) return value.map((item) => outcome(item, root))
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, outcome(item, root)]))
  return value
}

/**
 * The oracle for one test file: real directories under a temp directory named `prefix` (removed
 * after the file), each side seeded by `seed`.
 */
export function fsOracle(prefix: string, seed: (fs: Fs, at: At) => void) {
  process.umask(0o022)
  const base = nodeFs.mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
  let count = 0

  /** A fresh real directory for a test of its own. */
  const realDirectory = (): string => {
    const real = join(base, String(count++))
    nodeFs.mkdirSync(real)
    return real
  }

  /** Runs `call` on a fresh seeded real directory (its cwd) and a fresh seeded workspace (cwd '/'). */
  const onBoth = async (call: (fs: Fs, at: At) => unknown): Promise<{ node: unknown; workspace: unknown }> => {
    const real = realDirectory()
    const ws = await Workspace.open({ watch: watching })
    const fs = ws.fs as unknown as Fs
    const onReal: At = (path) => (path.startsWith('/') ? real + path : path)
    const onWorkspace: At = (path) => path
    seed(nodeFs, onReal)
    seed(fs, onWorkspace)
    const settle = async (run: () => unknown) => {
      try {
        return await run()
      } catch (error) {
        return error
      }
    }
    // Relative paths: the real side runs in its directory, the workspace in its root.
    const cwd = process.cwd()
    process.chdir(real)
    let node: unknown
    try {
      node = outcome(await settle(() => call(nodeFs, onReal)), real)
    } finally {
      process.chdir(cwd)
    }
    const workspace = outcome(await settle(() => call(fs, onWorkspace)), '')
    await ws.close()
    return { node, workspace }
  }

  /** Asserts both sides agree, showing the call's outcome on failure. */
  const same = async (call: (fs: Fs, at: At) => unknown): Promise<unknown> => {
    const { node, workspace } = await onBoth(call)
    expect(inspect(workspace, { depth: 8 })).toBe(inspect(node, { depth: 8 }))
    return node
  }

  return { onBoth, same, realDirectory }
}
