/** rewindfs/testing: createFixture and reset between tests. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { fixtureSource } from '../src/lower/index.js'
import type { LowerSource } from '../src/lower/source.js'
import { type Fixture, createFixture } from '../testing/index.js'

/** Wraps a source and counts every call into it, and closes. */
function counting(source: LowerSource) {
  const counts = { calls: 0, closes: 0 }
  const counted: LowerSource = {
    kind: source.kind,
    stat: (path) => (counts.calls++, source.stat(path)),
    readdir: (path) => (counts.calls++, source.readdir(path)),
    readFile: (path) => (counts.calls++, source.readFile(path)),
    readlink: (path) => (counts.calls++, source.readlink(path)),
    close: () => {
      counts.closes++
    },
  }
  return { counted, counts }
}

describe('createFixture', () => {
  let fixture: Fixture
  beforeEach(async () => {
    fixture = await createFixture({ '/app/config.json': '{"port":8080}\n', '/app/src/main.ts': 'main()\n', '/empty/': '' })
  })
  afterEach(() => fixture.close())

  it('reset brings back the fixture and clears history and checkpoints', async () => {
    const { fs } = fixture
    await fixture.checkpoint({ name: 'mine' })
    fs.writeFileSync('/app/config.json', '{ broken')
    fs.rmSync('/app/src', { recursive: true })
    fs.mkdirSync('/new/deep', { recursive: true })
    expect(fixture.history().length).toBe(3)

    await fixture.reset()

    expect(fs.readFileSync('/app/config.json', 'utf8')).toBe('{"port":8080}\n')
    expect(fs.readFileSync('/app/src/main.ts', 'utf8')).toBe('main()\n')
    expect(fs.existsSync('/new')).toBe(false)
    expect(fs.readdirSync('/').sort()).toEqual(['app', 'empty'])
    expect(fixture.history()).toEqual([])
    expect(fixture.checkpoints()).toEqual([])
    expect(fixture.changes()).toEqual([])
    // A checkpoint name used before the reset is free again.
    await expect(fixture.checkpoint({ name: 'mine' })).resolves.toMatchObject({ name: 'mine' })
  })

  it('keeps fs the same object across resets, and functions captured before a reset act on the fixture after it', async () => {
    const { fs } = fixture
    const { readFileSync, writeFileSync, promises } = fs
    writeFileSync('/app/config.json', 'before reset')
    const workspace = fixture.workspace
    await fixture.reset()
    expect(fixture.fs).toBe(fs)
    expect(fixture.fs.promises).toBe(promises)
    expect(fixture.workspace).not.toBe(workspace)
    expect(readFileSync('/app/config.json', 'utf8')).toBe('{"port":8080}\n')
    writeFileSync('/app/new.txt', 'after')
    expect(fixture.workspace.fs.readFileSync('/app/new.txt', 'utf8')).toBe('after')
    expect(await promises.readFile('/app/new.txt', 'utf8')).toBe('after')
    expect(workspace.fs.existsSync('/app/new.txt')).toBe(false)
  })

  it('forwards function properties, classes and constants of fs (realpath.native, Stats, constants)', async () => {
    fixture.fs.symlinkSync('/app/src', '/link')
    await fixture.reset()
    fixture.fs.symlinkSync('/app', '/link')
    expect(fixture.fs.realpathSync.native('/link/src')).toBe('/app/src')
    expect(fixture.fs.statSync('/app')).toBeInstanceOf(fixture.fs.Stats)
    expect(fixture.fs.constants.O_CREAT).toBe(fixture.workspace.fs.constants.O_CREAT)
    await new Promise<void>((resolve, reject) =>
      fixture.fs.realpath.native('/link', (error, resolved) => (error ? reject(error) : (expect(resolved).toBe('/app'), resolve()))),
    )
  })

  it('is workspace-like: checkpoint, restore, undo and diff go to the current workspace', async () => {
    fixture.chdir('/app')
    const good = await fixture.checkpoint({ name: 'good' })
    fixture.fs.writeFileSync('config.json', '{ broken')
    expect(fixture.diff('good').map((c) => c.path)).toEqual(['/app/config.json'])
    await fixture.restore(good.id)
    expect(fixture.fs.readFileSync('/app/config.json', 'utf8')).toBe('{"port":8080}\n')
    fixture.fs.appendFileSync('/app/config.json', 'more')
    await fixture.undo()
    expect(fixture.fs.readFileSync('/app/config.json', 'utf8')).toBe('{"port":8080}\n')
    expect(fixture.cwd()).toBe('/app')
    await fixture.reset()
    expect(fixture.cwd()).toBe('/')
  })

  it('gives vi.mock module namespaces with named and default exports', () => {
    expect(fixture.modules.fs.default).toBe(fixture.fs)
    expect(fixture.modules.fs.readFileSync).toBe(fixture.fs.readFileSync)
    expect(fixture.modules.promises.default).toBe(fixture.fs.promises)
    expect(fixture.modules.promises.readFile).toBe(fixture.fs.promises.readFile)
  })
})

describe('reset cost and the lower source', () => {
  it('costs the same few lower-source calls to reset a 5000-file fixture as a 1-file one (no copy of the fixture)', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 5000; i++) files[`/d${i % 50}/f${i}.txt`] = `file ${i}\n`
    /** Lower-source calls per reset after damaging the fixture. */
    const perReset = async (fixture: Fixture, counts: { calls: number }) => {
      const before = counts.calls
      for (let i = 0; i < 20; i++) await fixture.reset()
      return (counts.calls - before) / 20
    }
    const big = counting(fixtureSource(files))
    const fixture = await createFixture(big.counted)
    for (let i = 0; i < 200; i++) fixture.fs.writeFileSync(`/d${i % 50}/f${i}.txt`, 'changed')
    fixture.fs.rmSync('/d7', { recursive: true })
    const bigCost = await perReset(fixture, big.counts)
    const small = counting(fixtureSource({ '/a.txt': 'a' }))
    const tiny = await createFixture(small.counted)
    tiny.fs.writeFileSync('/a.txt', 'changed')
    expect(bigCost).toBe(await perReset(tiny, small.counts))
    expect(bigCost).toBeLessThanOrEqual(2) // the root's stat
    expect(fixture.fs.readFileSync('/d0/f0.txt', 'utf8')).toBe('file 0\n')
    expect(fixture.fs.readdirSync('/d7')).toHaveLength(100)
    expect(big.counts.closes).toBe(0) // resets close workspaces, never the shared source
    await fixture.close()
    await tiny.close()
    expect(big.counts.closes).toBe(1)
    await expect(fixture.reset()).rejects.toThrow('this fixture is closed')
  })

  it('takes the fixture in any form a workspace takes, and refuses what is not one', async () => {
    const tree = await createFixture({ app: { directory: { 'a.txt': { file: { contents: 'tree' } } } } })
    expect(tree.fs.readFileSync('/app/a.txt', 'utf8')).toBe('tree')
    await tree.close()
    await expect(createFixture(42 as never)).rejects.toThrow('cannot use a number as a lower source')
  })

  it('passes workspace options through (umask, autoCheckpoint) to every workspace it opens', async () => {
    const fixture = await createFixture({}, { umask: 0o077, autoCheckpoint: false })
    await fixture.reset()
    fixture.fs.writeFileSync('/a', 'x')
    expect(fixture.fs.statSync('/a').mode & 0o777).toBe(0o600)
    fixture.fs.rmSync('/a')
    expect(fixture.checkpoints()).toEqual([])
    await fixture.close()
  })
})
