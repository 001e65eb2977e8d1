/**
 * Overlay mode: a file a command wrote is moved into the exec layer for the next command, not read
 * back from the workspace and written there again (a 512 MiB file cost the next command 7 s and
 * its RSS). The exec layer's counters (bytes written, files moved in) prove it; the content each
 * command sees is checked against the workspace's.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { directory } from '../adapters/node-fs/index.js'
import { layerCounters } from '../adapters/node-fs/exec-layer.js'
import { support } from '../adapters/node-fs/exec-support.js'
import { type ExecOptions, type ExecResult, type Validator, ValidationError, Workspace } from '../src/index.js'
import { project } from './support/exec-scenarios.js'
import { capability } from './support/require.js'

const host = await support()
const here = capability('exec-overlay', host.overlay ?? (host.pid ? undefined : 'no PID namespace: a command\'s files are not held'))

const MiB = 1024 * 1024
const sha = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex')

/** Runs a command, with what the exec layer wrote for it (bytes) and moved in (files). */
async function exec(ws: Workspace, command: string, options: ExecOptions = { mode: 'overlay' }): Promise<ExecResult & { bytes: number; moved: number }> {
  const { bytesWritten, filesMoved } = layerCounters
  const result = await ws.exec(command, options)
  return Object.assign(result, { bytes: layerCounters.bytesWritten - bytesWritten, moved: layerCounters.filesMoved - filesMoved })
}

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true })
})

async function open(options: Parameters<typeof Workspace.open>[0] extends infer O ? Partial<O> : never = {}): Promise<Workspace> {
  const root = project({ '/a.txt': 'a\n', '/lower.bin': 'x'.repeat(2 * MiB) })
  roots.push(root)
  return Workspace.open({ lower: directory(root), ...options })
}


describe.runIf(here)('exec: the files a command wrote, for the next command', () => {
  it('moves a big file the command wrote into the layer: the next command writes none of its bytes', async () => {
    const ws = await open()
    try {
      const wrote = await exec(ws, 'head -c 8M /dev/urandom > big.bin && dd if=/dev/urandom of=lower.bin bs=1M count=3 2>/dev/null')
      expect(wrote.changes).toEqual({ added: ['/big.bin'], modified: ['/lower.bin'], deleted: [] })
      const big = ws.fs.readFileSync('/big.bin')
      const lower = ws.fs.readFileSync('/lower.bin')
      expect(big.length).toBe(8 * MiB)
      const next = await exec(ws, 'sha256sum big.bin lower.bin')
      // Two entries placed in the layer, no byte written: both files moved in.
      expect(next).toMatchObject({ work: { layerWrites: 2 }, bytes: 0, moved: 2 })
      expect(next.stdout).toBe(`${sha(big)}  big.bin\n${sha(lower)}  lower.bin\n`)
      expect(next.changes).toEqual({ added: [], modified: [], deleted: [] })
      const again = await exec(ws, 'sha256sum big.bin')
      expect(again).toMatchObject({ work: { layerWrites: 0 }, bytes: 0, moved: 0 })
      expect(again.stdout).toBe(`${sha(big)}  big.bin\n`)
    } finally {
      await ws.close()
    }
  })

  it('writes what the workspace holds when it changed the file after the command, and takes an undo', async () => {
    const ws = await open()
    try {
      await exec(ws, 'head -c 4M /dev/urandom > big.bin')
      const mine = Buffer.alloc(3 * MiB, 7)
      ws.fs.writeFileSync('/big.bin', mine)
      const next = await exec(ws, 'sha256sum big.bin')
      expect(next.stdout).toBe(`${sha(mine)}  big.bin\n`)
      expect(next).toMatchObject({ bytes: 3 * MiB, moved: 0 })

      await exec(ws, 'head -c 4M /dev/urandom > other.bin')
      await ws.undo()
      const after = await exec(ws, 'ls other.bin 2>&1; true')
      expect(after.stdout).toMatch(/No such file/)
      expect(after).toMatchObject({ bytes: 0, moved: 0 })
    } finally {
      await ws.close()
    }
  })

  it('keeps nothing of a command whose changes were refused', async () => {
    const refuse: Validator = { name: 'no-bin', match: '*.bin', validate: () => 'no binaries' }
    const ws = await open({ validators: [refuse] })
    try {
      const error = await exec(ws, 'head -c 4M /dev/urandom > big.bin').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ValidationError)
      const next = await exec(ws, 'ls big.bin 2>&1; true')
      expect(next.stdout).toMatch(/No such file/)
      expect(next).toMatchObject({ work: { layerWrites: 0 }, bytes: 0, moved: 0 })
    } finally {
      await ws.close()
    }
  })

  it('writes a file the command gave extended attributes from the workspace, which holds none', async () => {
    const ws = await open()
    try {
      const wrote = await exec(ws, 'head -c 1M /dev/urandom > big.bin && setfattr -n user.note -v kept big.bin && getfattr -n user.note --only-values big.bin')
      expect(wrote.stdout).toBe('kept')
      const next = await exec(ws, 'getfattr -d big.bin; sha256sum big.bin')
      expect(next).toMatchObject({ bytes: MiB, moved: 0 })
      expect(next.stdout).toBe(`${sha(ws.fs.readFileSync('/big.bin'))}  big.bin\n`)
    } finally {
      await ws.close()
    }
  })
})
