/**
 * fs.openAsBlob of a file this process may not read (mode 000) or of a directory, with Node's own
 * fs on the same kind of project as the oracle: Node 20 answers with a Blob of the file's size and
 * reads the file only when the Blob is read, which then fails (NotReadableError, 'The blob could
 * not be read'), or succeeds once the file may be read. The workspace threw EACCES at once (and
 * rejected a directory with EISDIR). Run as the unprivileged test user (root reads everything).
 * Also the type a readable file's Blob has: as given, where the workspace's was lowercased.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { capability } from './support/require.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-blob-unreadable-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const asRoot = process.getuid?.() === 0

const CHILD = `
import fs from 'node:fs'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'

const [forNode, forWorkspace] = process.argv.slice(2)

const settle = async (run) => {
  try {
    const value = await run()
    if (value instanceof Blob) return { blob: value.size, type: value.type }
    if (value instanceof ArrayBuffer) return { arrayBuffer: new TextDecoder().decode(value) }
    if (value instanceof Uint8Array) return { bytes: new TextDecoder().decode(value) }
    if (value && typeof value === 'object' && 'done' in value) return { chunk: new TextDecoder().decode(value.value), done: value.done }
    return { value }
  } catch (error) {
    return { error: error.name, message: error.message, code: error.code, domException: error instanceof DOMException }
  }
}

/** The same steps on either side: 'project' is the real directory of that side (chmod on disk). */
async function steps(f, at, project) {
  const out = {}
  let blob
  try {
    blob = await f.openAsBlob(at('/secret'), { type: 'text/plain' })
  } catch (error) {
    return { openAsBlob: { error: error.name, code: error.code, message: error.message.replace(project, '') } }
  }
  out.openAsBlob = { size: blob.size, type: blob.type, isBlob: blob instanceof Blob }
  out.text = await settle(() => blob.text())
  out.arrayBuffer = await settle(() => blob.arrayBuffer())
  out.bytes = await settle(() => blob.bytes())
  const part = blob.slice(1, 4, 'x/y')
  out.slice = [part.size, part.type, blob.slice(-2).size, blob.slice(5, 2).size, blob.slice().type, await settle(() => part.text())]
  out.stream = await settle(() => blob.stream().getReader().read())
  const dir = await settle(() => f.openAsBlob(at('/dir')))
  out.dir = dir
  if (dir.blob !== undefined) out.dirText = await settle(async () => (await f.openAsBlob(at('/dir'))).text())
  out.plain = await settle(async () => (await f.openAsBlob(at('/plain'))).text())
  const second = await f.openAsBlob(at('/secret'))
  // Node reads when the Blob is read: once the file may be read, it reads.
  fs.chmodSync(project + '/secret', 0o600)
  out.afterChmod = await settle(() => blob.text())
  out.partAfterChmod = await settle(() => part.text())
  // But not a file changed since the call (here of the same size).
  fs.writeFileSync(project + '/secret', 'HIDDEN')
  out.changed = await settle(() => second.text())
  return out
}

const node = await steps(fs, (p) => forNode + p, forNode)
const ws = await Workspace.open({ lower: directory(forWorkspace) })
const workspace = await steps(ws.fs, (p) => p, forWorkspace)
await ws.close()
console.log(JSON.stringify({ node, workspace }))
`

describe('openAsBlob of a file this process may not read', () => {
  const user = asRoot ? spawnSync('id', ['-u', 'rewindfs-exec'], { encoding: 'utf8' }) : undefined
  const canRun = asRoot && capability('exec-user', user?.status === 0 ? undefined : 'the user rewindfs-exec does not exist (run scripts/provision-exec-user.sh as root)')
  it.skipIf(!canRun)('answers a Blob of its size whose reads fail as Node’s do, and read once the file may be read, unless it changed (run as an unprivileged user)', async () => {
    const child = path.join(root, 'child.mjs')
    await build({ stdin: { contents: CHILD, resolveDir: new URL('.', import.meta.url).pathname, loader: 'js' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
    const uid = Number(user!.stdout.trim())
    const projects = ['node', 'workspace'].map((name) => path.join(root, name))
    for (const project of projects) {
      fs.mkdirSync(path.join(project, 'dir'), { recursive: true })
      fs.writeFileSync(path.join(project, 'secret'), 'hidden')
      fs.writeFileSync(path.join(project, 'plain'), 'shown')
      // The user's own file, which it may not read (mode 000) but may chmod.
      fs.chmodSync(path.join(project, 'secret'), 0o000)
      for (const name of ['', 'dir', 'secret', 'plain']) fs.chownSync(path.join(project, name), uid, uid)
    }
    fs.chmodSync(root, 0o755)
    const result = spawnSync('runuser', ['-u', 'rewindfs-exec', '--', process.execPath, child, ...projects], { encoding: 'utf8', timeout: 60_000 })
    expect(result.status, result.stderr).toBe(0)
    const { node, workspace } = JSON.parse(result.stdout.trim())
    const unreadable = { error: 'NotReadableError', message: 'The blob could not be read', code: 0, domException: true }
    // The oracle, as probed on Node 20.20.
    expect(node).toMatchObject({
      openAsBlob: { size: 6, type: 'text/plain', isBlob: true },
      text: unreadable,
      arrayBuffer: unreadable,
      slice: [3, 'x/y', 2, 0, '', unreadable],
      stream: unreadable,
      dir: { blob: 4096, type: '' },
      dirText: unreadable,
      plain: { value: 'shown' },
      afterChmod: { value: 'hidden' },
      partAfterChmod: { value: 'idd' },
      changed: unreadable,
    })
    expect(workspace).toEqual(node)
  }, 60_000)
})

describe('openAsBlob of a directory (any user)', () => {
  it('is a Blob of the directory\'s size whose reads fail with NotReadableError, as Node\'s, with its type as given', async () => {
    const real = path.join(root, 'dirs')
    fs.mkdirSync(path.join(real, 'd'), { recursive: true })
    const ws = await Workspace.open()
    ws.fs.mkdirSync('/d')
    const observe = async (blob: Promise<Blob>) => {
      const opened = await blob
      const failure = await opened.text().then(
        (text) => ({ text }),
        (error: DOMException) => ({ error: error.name, message: error.message, domException: error instanceof DOMException }),
      )
      const slice = opened.slice(1, undefined, 'X/Y')
      return { size: opened.size, type: opened.type, failure, part: [slice.size, slice.type, await slice.text().catch((error: DOMException) => error.name)] }
    }
    const node = await observe(fs.openAsBlob(path.join(real, 'd'), { type: 'Text/Plain' }))
    // The type as given: Node does not lowercase it as the Blob constructor does.
    expect(node).toEqual({ size: 4096, type: 'Text/Plain', failure: { error: 'NotReadableError', message: 'The blob could not be read', domException: true }, part: [4095, 'x/y', 'NotReadableError'] })
    expect(await observe(ws.fs.openAsBlob('/d', { type: 'Text/Plain' }))).toEqual(node)
    await ws.close()
  })
})

describe('openAsBlob of a readable file (any user)', () => {
  it('keeps the type as given, as Node does (the Blob constructor lowercases it); a slice\'s type is lowercased', async () => {
    const real = path.join(root, 'types')
    fs.mkdirSync(real, { recursive: true })
    fs.writeFileSync(path.join(real, 'a.txt'), 'hello')
    const ws = await Workspace.open({ lower: { '/a.txt': 'hello' } })
    const observe = async (open: (type: string) => Promise<Blob>) => {
      const out: unknown[] = []
      for (const type of ['Text/Plain', 'text/plain;charset=UTF-8', 'Text/Plain\u00e9', '']) {
        const blob = await open(type)
        out.push([blob.type, blob.slice(0, 2, type).type, await blob.text(), Object.keys(blob)])
      }
      return out
    }
    const node = await observe((type) => fs.openAsBlob(path.join(real, 'a.txt'), { type }))
    expect(node[0]).toEqual(['Text/Plain', 'text/plain', 'hello', []])
    expect(await observe((type) => ws.fs.openAsBlob('/a.txt', { type }))).toEqual(node)
    await ws.close()
  })
})
