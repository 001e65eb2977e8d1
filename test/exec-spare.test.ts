/**
 * The namespace helper started ahead of its command (a spare, exec-process.ts's SpareProcess): its
 * arguments travel on stdin as shell words, so any text must arrive exactly as given; its timeout
 * starts with the command; and one left waiting keeps no process alive, neither this one nor itself.
 * The helper runs here without namespaces (no layer: nothing to mount), which any user can do.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { HELPER_SCRIPT, type HelperArguments, helperRequest } from '../adapters/node-fs/exec-helper.js'
import { SpareProcess } from '../adapters/node-fs/exec-process.js'
import { withMarker } from './support/processes.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-exec-spare-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

const spec = { file: '/bin/sh', args: ['-c', HELPER_SCRIPT, 'rewindfs-exec'], cwd: '/', env: process.env }

function request(command: string, cwd: string): string {
  const args: HelperArguments = { root: cwd, layer: '', upper: '', work: '', overlayOptions: '', cwd, network: 'on', host: 'read-write', writable: [], map: '', stash: '', command, project: '', pwd: '' }
  return helperRequest(args)
}

describe('a spare namespace helper', () => {
  it("receives any text as given: quotes, backslashes, newlines, '$', control and non-ASCII characters", async () => {
    let payload = ''
    for (let code = 1; code < 128; code++) payload += String.fromCharCode(code)
    payload += "\n'\\''\"$(echo no)`echo no`\\\n${HOME}é✓😀\n\n"
    // The heredoc's delimiter is quoted: the shell prints its body untouched.
    const body = payload.split('\n').filter((line) => line !== 'END').join('\n')
    const cwd = `${scratch}/it's a "dir" $x`
    fs.mkdirSync(cwd)
    const spare = new SpareProcess(spec)
    expect(spare.ready).toBe(true)
    const outcome = await spare.run(request(`cat <<'END'\n${body}\nEND\npwd`, cwd), 10_000)
    expect(outcome).toMatchObject({ exitCode: 0, status: 'ok\n', stderr: '', timedOut: false })
    expect(outcome.stdout).toBe(`${body}\n${cwd}\n`)
    expect(spare.ready).toBe(false)
  })

  it('starts its timeout with the command, not when it was started, and kills it then', async () => {
    const spare = new SpareProcess(spec)
    // Waiting longer than the timeout before the request costs nothing.
    await new Promise((resolve) => setTimeout(resolve, 500))
    const started = Date.now()
    const outcome = await spare.run(request('echo begun; sleep 30', scratch), 300)
    expect(outcome).toMatchObject({ timedOut: true, signal: 'SIGKILL', stdout: 'begun\n', status: 'ok\n' })
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it('keeps nothing alive while it waits: a process that leaves one unused exits, and the spare with it', async () => {
    const marker = `REWINDFS_SPARE_TEST=${process.pid}-${Date.now()}`
    const [name, value] = marker.split('=')
    const module = new URL('../adapters/node-fs/exec-process.ts', import.meta.url).pathname
    const helper = new URL('../adapters/node-fs/exec-helper.ts', import.meta.url).pathname
    const script = `
      const { SpareProcess } = await import(${JSON.stringify(module)})
      const { HELPER_SCRIPT } = await import(${JSON.stringify(helper)})
      new SpareProcess({ file: '/bin/sh', args: ['-c', HELPER_SCRIPT, 'rewindfs-exec'], cwd: '/', env: process.env })
      console.log('started')
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, [name]: value }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect({ status, stdout, stderr }).toEqual({ status: 0, stdout: 'started\n', stderr: '' })
    // Its stdin ended with the process: the spare reads the end of file and exits.
    let left = withMarker(marker)
    for (let tries = 0; left.length > 0 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      left = withMarker(marker)
    }
    expect(left).toEqual([])
  }, 60_000)
})
