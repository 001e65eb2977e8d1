/**
 * `rewindfs run` and `rewindfs shell` as a person uses them: run as a child process (exit codes,
 * --json, the sandbox flags, usage errors), and shell driven through a real terminal with tmux
 * (send-keys, capture-pane): the marked prompt, commands in the workspace, the summary on exit,
 * and diff and flush working on what it recorded. The project on disk changes only at flush.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { support } from '../adapters/node-fs/exec-support.js'
import { CLI, buildCli, removeCli, runCli } from './cli-process.js'
import { capability } from './support/require.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-cli-shell-`)
let serial = 0
beforeAll(buildCli)
afterAll(() => {
  removeCli()
  fs.rmSync(scratch, { recursive: true, force: true })
})

function project(files: Record<string, string>): { dir: string; store: string } {
  const dir = `${scratch}/p${serial}`
  const store = `${scratch}/s${serial++}`
  fs.mkdirSync(dir)
  for (const [path, content] of Object.entries(files)) fs.writeFileSync(dir + path, content)
  return { dir, store }
}

const host = await support()

describe('rewindfs run', () => {
  it("runs one command in the workspace, prints its changes, exits with the command's code, and records it in --store, where diff, log and undo work on it", () => {
    const { dir, store } = project({ '/a.txt': 'hello\n' })
    const result = runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'echo world >> a.txt; echo new > b.txt; echo out; exit 3'])
    expect(result.code).toBe(3)
    expect(result.stdout).toBe('out\n')
    expect(result.stderr).toContain('2 change(s)')
    expect(result.stderr).toMatch(/modified \/a\.txt/)
    expect(result.stderr).toMatch(/added {4}\/b\.txt/)
    expect(fs.readFileSync(`${dir}/a.txt`, 'utf8')).toBe('hello\n') // the project is untouched
    expect(fs.existsSync(`${dir}/b.txt`)).toBe(false)
    const diff = runCli(['diff', '--dir', dir, '--store', store, '--json'])
    expect(JSON.parse(diff.stdout).changes.map((c: { path: string }) => c.path)).toEqual(['/a.txt', '/b.txt'])
    const log = runCli(['log', '--dir', dir, '--store', store, '--json'])
    expect(JSON.parse(log.stdout).operations[0].description).toBe("exec: sh -c 'echo world >> a.txt; echo new > b.txt; echo out; exit 3'")
    expect(result.stderr).toContain(`rewindfs diff / undo / flush --dir ${dir} --store ${store}`)

    // undo takes the command back in the workspace (a dry run first changes nothing).
    const dry = runCli(['undo', '--dir', dir, '--store', store, '--dry-run', '--json'])
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, undone: [{ description: expect.stringMatching(/^exec: sh -c/) }] })
    expect(JSON.parse(runCli(['diff', '--dir', dir, '--store', store, '--json']).stdout).changes).toHaveLength(2)
    const undone = runCli(['undo', '--dir', dir, '--store', store])
    expect(undone).toMatchObject({ code: 0, stdout: expect.stringMatching(/^undid 1 operation\(s\):\n.*exec: sh -c/) })
    expect(JSON.parse(runCli(['diff', '--dir', dir, '--store', store, '--json']).stdout).changes).toEqual([])
    expect(runCli(['undo', '--dir', dir, '--store', store]).stdout).toBe('nothing to undo\n')
    expect(fs.readdirSync(dir)).toEqual(['a.txt'])
    // The undo is taken back, in a later process, by restoring the checkpoint it made first.
    const guard = undone.stdout.match(/checkpoint (\S+) holds the workspace as it was: rewindfs restore \1 --dir \S+ --store \S+ takes this undo back/)
    expect(guard).not.toBeNull()
    expect(runCli(['restore', guard![1], '--dir', dir, '--store', store]).code).toBe(0)
    expect(JSON.parse(runCli(['diff', '--dir', dir, '--store', store, '--json']).stdout).changes.map((c: { path: string }) => c.path)).toEqual(['/a.txt', '/b.txt'])
    // Nothing undone (and a dry run) makes no checkpoint.
    const checkpoints = () => JSON.parse(runCli(['checkpoints', '--dir', dir, '--store', store, '--json']).stdout).checkpoints.length
    const before = checkpoints()
    runCli(['undo', '--dir', dir, '--store', store, '--dry-run'])
    expect(checkpoints()).toBe(before)
  })

  it("a link out of the project a command made (a venv's bin/python3) works in the next run; flush refuses it, naming the way out, until --allow-links-outside", () => {
    const { dir, store } = project({ '/a.txt': 'hello\n' })
    expect(runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'mkdir bin && ln -s /bin/sh bin/sh && ln -s "$PWD/a.txt" bin/a']).code).toBe(0)
    const next = runCli(['run', '--dir', dir, '--store', store, '--', 'sh', '-c', 'bin/sh -c "echo ran"; cat bin/a'])
    expect(next).toMatchObject({ code: 0, stdout: 'ran\nhello\n' })
    const refused = runCli(['flush', '--dir', dir, '--store', store])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('refusing to flush the symlink /bin/sh')
    expect(refused.stderr).toContain('--allow-links-outside')
    expect(fs.readdirSync(dir)).toEqual(['a.txt'])
    expect(runCli(['flush', '--dir', dir, '--store', store, '--allow-links-outside']).code).toBe(0)
    expect(fs.readlinkSync(`${dir}/bin/sh`)).toBe('/bin/sh')
    expect(fs.readlinkSync(`${dir}/bin/a`)).toBe('../a.txt')
    expect(JSON.parse(runCli(['diff', '--dir', dir, '--store', store, '--json']).stdout).changes).toEqual([])
  })

  it('shows a name holding a control character quoted, on one line, in run, diff and log; --json gives it as it is', () => {
    const { dir, store } = project({ '/a.txt': 'hello\n' })
    const result = runCli(['run', '--dir', dir, '--store', store, '--', 'bash', '-c', `touch $'two\\nlines' $'esc\\x1b[31mred'`])
    expect(result.code).toBe(0)
    expect(result.stderr).toContain('added    "/esc\\u001b[31mred"')
    expect(result.stderr).toContain('added    "/two\\nlines"')
    expect(result.stderr).not.toContain('\x1b[31m')
    expect(runCli(['diff', '--dir', dir, '--store', store]).stdout).toContain('"/two\\nlines"')
    expect(runCli(['log', '--dir', dir, '--store', store]).stdout).toContain('"/esc\\u001b[31mred", "/two\\nlines"')
    expect(JSON.parse(runCli(['diff', '--dir', dir, '--store', store, '--json']).stdout).changes.map((c: { path: string }) => c.path)).toEqual(['/esc\x1b[31mred', '/two\nlines'])
  })

  it("starts in the caller's working directory when it is inside the project, else at the project's root", () => {
    const { dir } = project({ '/a.txt': 'hello\n' })
    fs.mkdirSync(`${dir}/src/deep`, { recursive: true })
    const inside = runCli(['run', '--dir', dir, '--json', '--', 'pwd; echo made > here.txt'], {}, `${dir}/src/deep`)
    expect(JSON.parse(inside.stdout)).toMatchObject({ stdout: `${dir}/src/deep\n`, changes: { added: ['/src/deep/here.txt'] } })
    const outside = runCli(['run', '--dir', dir, '--json', '--', 'pwd'], {}, scratch)
    expect(JSON.parse(outside.stdout).stdout).toBe(`${dir}\n`)
  })

  it('takes one argument as a shell command line; --json gives the result; --mode copy forces copy mode', () => {
    const { dir } = project({ '/a.txt': 'hello\n' })
    const result = runCli(['run', '--dir', dir, '--json', '--mode', 'copy', '--', 'cat a.txt && echo x > x.txt'])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ exitCode: 0, stdout: 'hello\n', mode: 'copy', modeReason: 'options.mode is copy', changes: { added: ['/x.txt'] }, stored: false })
  })

  it('reports a signal as 128 + its number, like a shell', () => {
    const { dir } = project({})
    expect(runCli(['run', '--dir', dir, '--', 'kill -TERM $$']).code).toBe(128 + os.constants.signals.SIGTERM)
  })

  it.runIf(capability('exec-overlay', host.namespaces))('passes the sandbox flags: --no-network and --read-only-host', () => {
    const { dir } = project({})
    const outside = fs.mkdtempSync(`${os.homedir()}/rewindfs-cli-outside-`)
    try {
      const result = runCli(['run', '--dir', dir, '--no-network', '--read-only-host', '--json', '--', `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; touch ${outside}/x; echo inside > in.txt`])
      const parsed = JSON.parse(result.stdout)
      expect(parsed.stdout).toBe('lo\n')
      expect(parsed.stderr).toContain('Read-only file system')
      expect(parsed.changes.added).toEqual(['/in.txt'])
      expect(fs.readdirSync(outside)).toEqual([])
    } finally {
      fs.rmSync(outside, { recursive: true, force: true })
    }
  })

  it('refuses a bad command line with exit code 2', () => {
    const { dir } = project({})
    expect(runCli(['run', '--dir', dir])).toMatchObject({ code: 2, stderr: expect.stringContaining("needs a command after '--'") })
    expect(runCli(['run', '--dir', dir, '--mode', 'fast', '--', 'true'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--mode takes overlay or copy') })
    expect(runCli(['run', '--', 'true'])).toMatchObject({ code: 2, stderr: expect.stringContaining('needs --dir') })
    expect(runCli(['shell', '--dir', dir])).toMatchObject({ code: 2, stderr: expect.stringContaining('needs a terminal') })
    expect(runCli(['undo', '--dir', dir, '--store', `${dir}-store`, '--steps', '51'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--steps takes a whole number from 1 to 50') })
  })
})

function tmuxProblem(): string | undefined {
  if (host.overlay !== undefined) return `overlay mode cannot run here: ${host.overlay}`
  const found = spawnSync('tmux', ['-V'], { encoding: 'utf8' })
  return found.status === 0 ? undefined : 'tmux is not installed (scripts/provision-exec-user.sh installs it)'
}
const terminal = capability('tmux', tmuxProblem())

describe.skipIf(!terminal)('rewindfs shell in a terminal (tmux)', () => {
  const socket = `rewindfs-test-${process.pid}`
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })
  const screen = () => tmux('capture-pane', '-p', '-J', '-t', 'shell', '-S', '-200')
  async function waitFor(text: string | RegExp, timeout = 60_000): Promise<string> {
    const started = Date.now()
    for (;;) {
      const shown = screen()
      if (typeof text === 'string' ? shown.includes(text) : text.test(shown)) return shown
      if (Date.now() - started > timeout) throw new Error(`the terminal never showed ${String(text)}; it shows:\n${shown}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  afterAll(() => {
    spawnSync('tmux', ['-L', socket, 'kill-server'])
  })

  it('opens a marked shell over the project, records what was done in it as one operation, and diff, flush and undo work on it', { timeout: 180_000 }, async () => {
    const { dir, store } = project({ '/a.txt': 'hello\n' })
    const home = fs.mkdtempSync(`${scratch}/home-`)
    fs.writeFileSync(`${home}/.bashrc`, "PS1='\\w\\$ '\n")
    const command = `cd ${dir} && ${process.execPath} ${CLI} shell --dir ${dir} --store ${store}; echo "shell exited with $?"; sleep 600`
    tmux('new-session', '-d', '-s', 'shell', '-x', '160', '-y', '50', '-e', 'SHELL=/bin/bash', '-e', `HOME=${home}`, '-e', 'NO_COLOR=1', command)
    // The prompt: the user's own (~/.bashrc), marked.
    await waitFor(`(rewindfs) ${dir}# `)
    tmux('send-keys', '-t', 'shell', 'echo made > made.txt && echo more >> a.txt && rm -f gone.txt && cat a.txt && echo "[$(ls | tr "\\n" " ")]"', 'Enter')
    await waitFor('[a.txt made.txt ]')
    expect(screen()).toContain('hello\nmore\n')
    // Meanwhile the project on disk is as it was.
    expect(fs.readdirSync(dir)).toEqual(['a.txt'])
    tmux('send-keys', '-t', 'shell', 'exit', 'Enter')
    const shown = await waitFor('shell exited with 0')
    expect(shown).toMatch(/rewindfs: 2 change\(s\) \(overlay mode/)
    expect(shown).toMatch(/modified \/a\.txt/)
    expect(shown).toMatch(/added {4}\/made\.txt/)
    expect(fs.readFileSync(`${dir}/a.txt`, 'utf8')).toBe('hello\n')

    const log = JSON.parse(runCli(['log', '--dir', dir, '--store', store, '--json']).stdout)
    expect(log.operations).toHaveLength(1)
    expect(log.operations[0].description).toBe('exec: /bin/bash (rewindfs shell)')
    const diff = runCli(['diff', '--dir', dir, '--store', store])
    expect(diff.stdout).toMatch(/modified +file +\/a\.txt/)
    expect(diff.stdout).toMatch(/added +file +\/made\.txt/)
    expect(runCli(['flush', '--dir', dir, '--store', store]).code).toBe(0)
    expect(fs.readFileSync(`${dir}/a.txt`, 'utf8')).toBe('hello\nmore\n')
    expect(fs.readFileSync(`${dir}/made.txt`, 'utf8')).toBe('made\n')
    // undo takes the whole session back in the workspace; the next flush brings the disk back too.
    expect(runCli(['undo', '--dir', dir, '--store', store]).stdout).toContain('exec: /bin/bash (rewindfs shell)')
    expect(runCli(['flush', '--dir', dir, '--store', store]).code).toBe(0)
    expect(fs.existsSync(`${dir}/made.txt`)).toBe(false)
    expect(fs.readFileSync(`${dir}/a.txt`, 'utf8')).toBe('hello\n')
  })

  it("exits with the shell's exit status, as run exits with the command's", { timeout: 120_000 }, async () => {
    const { dir, store } = project({ '/a.txt': 'hello\n' })
    const home = fs.mkdtempSync(`${scratch}/home-`)
    fs.writeFileSync(`${home}/.bashrc`, "PS1='\\w\\$ '\n")
    const command = `cd ${dir} && ${process.execPath} ${CLI} shell --dir ${dir} --store ${store}; echo "status was $?"; sleep 600`
    tmux('new-session', '-d', '-s', 'status', '-x', '160', '-y', '50', '-e', 'SHELL=/bin/bash', '-e', `HOME=${home}`, '-e', 'NO_COLOR=1', command)
    const shown = () => tmux('capture-pane', '-p', '-J', '-t', 'status', '-S', '-200')
    const started = Date.now()
    while (!shown().includes(`(rewindfs) ${dir}# `)) {
      if (Date.now() - started > 60_000) throw new Error(`no prompt; the terminal shows:\n${shown()}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    tmux('send-keys', '-t', 'status', 'echo made > made.txt; exit 4', 'Enter')
    while (!/status was \d+/.test(shown())) {
      if (Date.now() - started > 60_000) throw new Error(`the shell never ended; the terminal shows:\n${shown()}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(shown()).toContain('status was 4')
    // What it did is recorded all the same.
    expect(shown()).toMatch(/added {4}\/made\.txt/)
    tmux('kill-session', '-t', 'status')
  })
})
