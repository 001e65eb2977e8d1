/**
 * checkpointInfo costs O(paths changed): proven by work counters (lower-source reads and the
 * overlay's lookups), never by clocks, and its numbers checked against a full count of the
 * checkpoint's tree read back through the fs after restoring it.
 */
import { describe, expect, it } from 'vitest'
import { type LowerSource, Workspace, fixtureSource } from '../src/index.js'

/** A lower source that counts what it is asked. */
function counting(files: Record<string, string>): { source: LowerSource; counts: { readFile: number; readdir: number; stat: number } } {
  const inner = fixtureSource(files)
  const counts = { readFile: 0, readdir: 0, stat: 0 }
  const source: LowerSource = {
    kind: 'counting',
    stat: (path) => (counts.stat++, inner.stat(path)),
    readdir: (path) => (counts.readdir++, inner.readdir(path)),
    readFile: (path) => (counts.readFile++, inner.readFile(path)),
    readlink: (path) => inner.readlink(path),
  }
  return { source, counts }
}

/** Files, lines and bytes of the live tree, counted through ws.fs. */
function fullCount(ws: Workspace, dir = '/'): { files: number; totalLines: number; bytes: number } {
  const size = { files: 0, totalLines: 0, bytes: 0 }
  for (const name of ws.fs.readdirSync(dir) as string[]) {
    const path = dir === '/' ? `/${name}` : `${dir}/${name}`
    if (ws.fs.lstatSync(path).isDirectory()) {
      const inner = fullCount(ws, path)
      size.files += inner.files
      size.totalLines += inner.totalLines
      size.bytes += inner.bytes
    } else {
      const content = ws.fs.readFileSync(path) as Uint8Array
      size.files++
      size.bytes += content.byteLength
      size.totalLines += content.filter((byte) => byte === 10).length
    }
  }
  return size
}

describe('checkpointInfo', () => {
  it('reads the lower layer once; after that each call costs the paths the checkpoint changed', async () => {
    const files = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`/pkg${i % 30}/file${i}.js`, `line one ${i}\nline two\n`]))
    const { source, counts } = counting(files)
    const ws = await Workspace.open({ lower: source, autoCheckpoint: false })
    const start = await ws.checkpoint({ name: 'start' })
    expect(await ws.checkpointInfo(start.id)).toMatchObject({ files: 3000, totalLines: 6000, changesSincePrevious: 0 })
    expect(counts.readFile).toBeGreaterThanOrEqual(3000) // the one full read

    ws.fs.writeFileSync('/pkg1/file1.js', 'rewritten\nwith\nthree lines\n')
    ws.fs.writeFileSync('/pkg2/new.js', 'one line\n')
    ws.fs.unlinkSync('/pkg3/file3.js')
    ws.fs.rmSync('/pkg4', { recursive: true })
    const edited = await ws.checkpoint({ name: 'edited' })
    const reads = { ...counts }
    const lookups = ws.counters.lookups
    const info = await ws.checkpointInfo(edited.id)
    const changed = 3 + 101 // three files, and /pkg4 with its 100
    expect(counts.readFile - reads.readFile).toBeLessThanOrEqual(4 * changed) // a few reads per changed path, none of the 2 900 others
    expect(counts.readdir - reads.readdir).toBeLessThanOrEqual(10)
    expect(ws.counters.lookups - lookups).toBeLessThanOrEqual(10 * changed)
    expect(info.changesSincePrevious).toBe(changed)
    expect({ files: info.files, totalLines: info.totalLines, bytes: info.bytes }).toEqual(fullCount(ws))

    // The first checkpoint's numbers are still its own, at the same small cost.
    const again = { ...counts }
    expect(await ws.checkpointInfo(start.id)).toMatchObject({ files: 3000, totalLines: 6000 })
    expect(counts.readFile - again.readFile).toBe(0)
    await ws.restore(start.id)
    expect(fullCount(ws)).toMatchObject({ files: 3000, totalLines: 6000 })
  })
})
