/**
 * Less common fs paths, each run on a real Linux directory with node:fs and on a workspace: the
 * outcome (result, or the error's class, code, errno, syscall, path, dest and message, the real
 * directory's name taken out) must be the same. Each case was a divergence once.
 */
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'

process.umask(0o022)
const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-parity-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let count = 0

type Fs = typeof nodeFs
/** A path on one side: absolute ones under that side's root. */
type At = (path: string) => string

/** The same small tree on both sides: files, a directory with a subdirectory, links (one dangling). */
function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/d/sub'), { recursive: true })
  fs.writeFileSync(at('/f'), 'hello')
  fs.writeFileSync(at('/d/g'), 'gee')
  fs.mkdirSync(at('/e'))
  fs.symlinkSync('f', at('/lf'))
  fs.symlinkSync('d', at('/ld'))
  fs.symlinkSync('missing', at('/dangle'))
}

/** What a call gave, comparable across the sides: errors by their Node fields, bytes as text. */
function outcome(value: unknown, root: string): unknown {
  const strip = (text: string) => text.split(root).join('')
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

/** Runs `call` on a fresh seeded real directory and a fresh seeded workspace; returns both outcomes. */
async function onBoth(call: (fs: Fs, at: At) => unknown): Promise<{ node: unknown; workspace: unknown }> {
  const real = join(base, String(count++))
  nodeFs.mkdirSync(real)
  const ws = await Workspace.open()
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
  const node = outcome(await settle(() => call(nodeFs, onReal)), real)
  const workspace = outcome(await settle(() => call(fs, onWorkspace)), '')
  await ws.close()
  return { node, workspace }
}

/** Asserts both sides agree, showing the call's outcome on failure. */
async function same(call: (fs: Fs, at: At) => unknown): Promise<unknown> {
  const { node, workspace } = await onBoth(call)
  expect(inspect(workspace, { depth: 8 })).toBe(inspect(node, { depth: 8 }))
  return node
}

describe('less common paths match node:fs on a real directory', () => {
  it('a name over 255 bytes is ENAMETOOLONG wherever a directory is searched for it (after ENOENT/ENOTDIR of the path before it), 255 bytes is fine', async () => {
    const long = 'a'.repeat(256)
    const wide = 'é'.repeat(128) // 256 bytes in 128 characters
    expect(await same((fs, at) => fs.statSync(at('/' + long)))).toMatchObject({ code: 'ENAMETOOLONG', syscall: 'stat' })
    await same((fs, at) => fs.openSync(at('/' + wide), 'w'))
    await same((fs, at) => fs.mkdirSync(at('/d/' + long)))
    await same((fs, at) => fs.mkdirSync(at('/x/' + long + '/y'), { recursive: true }))
    await same((fs, at) => fs.writeFileSync(at('/d/' + long), 'x'))
    await same((fs, at) => fs.renameSync(at('/f'), at('/' + long)))
    await same((fs, at) => fs.linkSync(at('/f'), at('/' + long)))
    await same((fs, at) => fs.rmSync(at('/' + long), { force: true }))
    await same((fs, at) => fs.statSync(at('/missing/' + long)))
    await same((fs, at) => fs.statSync(at('/f/' + long)))
    await same((fs, at) => fs.existsSync(at('/' + long)))
    await same((fs, at) => fs.promises.readFile(at('/' + long)))
    await same((fs, at) => {
      fs.symlinkSync(long, at('/to-long'))
      return fs.statSync(at('/to-long'))
    })
    await same((fs, at) => {
      fs.writeFileSync(at('/d/' + 'b'.repeat(255)), 'x')
      return fs.readdirSync(at('/d'))
    })
  })
})
