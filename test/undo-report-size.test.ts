/**
 * Undo's report and ws.operation() read a file's contents to count lines and diff: a file larger
 * than REPORTED_BYTES is not read for them (work counters prove it), whether its content is in the
 * store (read back on demand) or in the project directory, and the undo itself is exact.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { REPORTED_BYTES } from '../src/engine/undo.js'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-undo-report-'))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const big = Buffer.alloc(REPORTED_BYTES + 1, 0x61)

describe('undo of a large file', () => {
  it('deleted after its content went to the store: undone without reading it back, counted as no lines', async () => {
    const store = path.join(scratch, 'store')
    let ws = await Workspace.open({ store: directoryStore(store), cacheBytes: 0 })
    ws.fs.writeFileSync('/big.bin', big)
    ws.fs.writeFileSync('/small.txt', 'one\ntwo\n')
    await ws.close()
    ws = await Workspace.open({ store: directoryStore(store), cacheBytes: 0 })
    ws.fs.rmSync('/big.bin')
    ws.fs.rmSync('/small.txt')
    const before = ws.counters.blobsRead
    const report = await ws.undo({ steps: 2 })
    expect(ws.counters.blobsRead - before).toBe(1) // small.txt's, for its line counts
    expect(report.changesReverted['/big.bin']).toEqual({ linesRestored: 0, linesRemoved: 0 })
    expect(report.changesReverted['/small.txt']).toEqual({ linesRestored: 2, linesRemoved: 0 })
    const read = ws.counters.blobsRead
    const diff = ws.operation(ws.history().find((op) => op.paths[0] === '/big.bin')!.id)!.diff
    expect(diff.find((d) => d.path === '/big.bin')).toEqual({ path: '/big.bin' })
    expect(ws.counters.blobsRead).toBe(read)
    expect(ws.fs.statSync('/big.bin').size).toBe(big.length)
    expect(Buffer.compare(ws.fs.readFileSync('/big.bin'), big)).toBe(0)
    await ws.close()
  })

  it('a project file: its lower content is not read for the report', async () => {
    const project = path.join(scratch, 'project')
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, 'big.bin'), big)
    const lower = directory(project)
    // The real directory, its reads counted.
    const reads: string[] = []
    const readFile = lower.readFile.bind(lower)
    lower.readFile = (at: string) => (reads.push(at), readFile(at))
    const ws = await Workspace.open({ lower })
    ws.fs.rmSync('/big.bin')
    const report = await ws.undo()
    expect(report.changesReverted['/big.bin']).toEqual({ linesRestored: 0, linesRemoved: 0 })
    expect(reads).toEqual([])
    expect(ws.fs.statSync('/big.bin').size).toBe(big.length)
    await ws.close()
  })
})
