/**
 * The vi.mock recipe of rewindfs/testing, used as documented: code that imports node:fs, fs and
 * node:fs/promises runs unchanged against a fixture over a real directory, which stays untouched.
 */
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest'

const fixture = await vi.hoisted(async () => {
  const real = await vi.importActual<typeof import('node:fs')>('node:fs')
  const { tmpdir } = await import('node:os')
  const root = real.mkdtempSync(`${tmpdir()}/rewindfs-fixture-`)
  real.mkdirSync(`${root}/app/logs`, { recursive: true })
  real.writeFileSync(`${root}/app/config.json`, '{"port":8080}\n')
  real.writeFileSync(`${root}/app/logs/today.log`, 'started\n')
  real.writeFileSync(`${root}/app/notes.md`, '# notes\n')
  const { createFixture } = await import('../testing/index.js')
  const { syncFsSource } = await import('../src/adapter-kit.js')
  return Object.assign(await createFixture(syncFsSource(real, root)), { root, real })
})
vi.mock('node:fs', () => fixture.modules.fs)
vi.mock('node:fs/promises', () => fixture.modules.promises)

import { hasConfig, loadConfig, readNotes, setPort, wipe } from './testing-app/config-store.js'

/** The real directory's files, read with the real fs. */
function onDisk(dir = fixture.root): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of fixture.real.readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) Object.assign(out, onDisk(path))
    else out[path.slice(fixture.root.length)] = fixture.real.readFileSync(path, 'utf8')
  }
  return out
}

const original = onDisk()

beforeEach(() => fixture.reset())
afterAll(async () => {
  await fixture.close()
  fixture.real.rmSync(fixture.root, { recursive: true, force: true })
})

describe('vi.mock recipe (node:fs, fs, node:fs/promises → fixture.fs)', () => {
  it('lets the code under test read the fixture and change it, while the real directory stays as it was', async () => {
    expect(loadConfig('/app/config.json')).toEqual({ port: 8080 })
    setPort('/app/config.json', 9090)
    await wipe('/app/logs')
    expect(loadConfig('/app/config.json')).toEqual({ port: 9090 })
    expect(fixture.fs.existsSync('/app/logs')).toBe(false)
    expect(fixture.changes().map((c) => `${c.type} ${c.path}`).sort()).toEqual(['deleted /app/logs', 'deleted /app/logs/today.log', 'modified /app/config.json'])
    expect(onDisk()).toEqual(original)
  })

  it('starts the next test from the fixture again (reset in beforeEach), with no history', async () => {
    expect(loadConfig('/app/config.json')).toEqual({ port: 8080 })
    expect(hasConfig('/app/config.json')).toBe(true)
    expect(await readNotes('/app/notes.md')).toBe('# notes\n')
    expect(fixture.history()).toEqual([])
  })

  it('gives the mocked modules the workspace errors, shaped like Node’s', async () => {
    await expect(readNotes('/app/missing.md')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'open', path: '/app/missing.md' })
    expect(() => loadConfig('/app')).toThrow(expect.objectContaining({ code: 'EISDIR' }))
  })
})
