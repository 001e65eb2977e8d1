/**
 * patchFs(mountOver(ws, root)) and modules: `import()` and `require()` of files that exist only in
 * the workspace load as Node loads them from disk (the oracle: the same project written to a real
 * directory, nothing patched), a node:test suite runs in-process over the workspace, and the undo
 * leaves the hooks inert. Each run is a process of its own: module hooks are process-wide.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

const driver = fileURLToPath(new URL('./support/module-driver.ts', import.meta.url))
const scratch: string[] = []
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function run(mode: 'disk' | 'workspace' | 'node-test', env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), `rewindfs-modules-${mode}-`))
  scratch.push(dir)
  const result = spawnSync(process.execPath, ['--import', 'tsx', driver, mode, dir], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

const lastLine = (text: string) => JSON.parse(text.trim().split('\n').at(-1) ?? 'null') as Record<string, unknown>

describe('patchFs: modules that exist only in the workspace', () => {
  it('import() and require() resolve and load them as Node does from disk; after the undo they are gone', () => {
    const disk = run('disk')
    expect(disk.status, disk.stderr).toBe(0)
    const workspace = run('workspace')
    expect(workspace.status, workspace.stderr).toBe(0)
    const { 'after the undo': after, ...seen } = lastLine(workspace.stdout)
    expect(seen).toEqual(lastLine(disk.stdout))
    expect(seen['import main']).toEqual({ sum: 5, product: 20, version: '1.2.3', square: 49, legacy: 'legacy', shout: 'HI!', greeting: 'hello', answer: 42 })
    expect(after).toEqual({ import: 'ERR_MODULE_NOT_FOUND', require: 'MODULE_NOT_FOUND' })
  })

  it('runs a node:test suite in-process over the workspace, and reports its failures', () => {
    const passing = run('node-test')
    expect(passing.stdout).toMatch(/^# pass 3$/m)
    expect(passing.status, passing.stderr).toBe(0)
    const failing = run('node-test', { MAKE_IT_FAIL: '1' })
    expect(failing.stdout).toMatch(/^# pass 2$/m)
    expect(failing.stdout).toMatch(/^not ok 3 - fails when asked to$/m)
    expect(failing.status).toBe(1)
  })
})
