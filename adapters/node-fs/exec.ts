/**
 * `exec(ws, command)`: runs a shell command against a workspace. The current view is written into
 * a private temp directory, `sh -c command` runs there, and everything it created, changed or
 * deleted comes back as one `ws.transaction` (validators apply; one undo takes it all back). The
 * temp directory is removed in all cases. Node only.
 */
import { execFile, spawn } from 'node:child_process'
import { hostFs as fs, onHost } from './host-fs.js'
import os from 'node:os'
import { FsError } from '../../src/errors.js'
import { ConflictError } from '../../src/engine/transaction.js'
import { type ExecOptions, type ExecResult, Workspace } from '../../src/workspace.js'
import { DirectorySource } from './directory.js'
import { type CloneSource, type Scan, apply, materialise, scan } from './exec-tree.js'

/** The core declares ws.exec's contract; this adapter is its runner (the core cannot start processes). */
export type { ExecOptions, ExecResult } from '../../src/workspace.js'

/** Per stream: an agent needs the gist, and a runaway command must not exhaust memory. */
export const MAX_OUTPUT = 16 * 1024 * 1024

/** After the shell exits, how long its output pipes may stay open (held by a process that left its group). */
const DRAIN_MS = 1000

function invalid(message: string): TypeError {
  return Object.assign(new TypeError(`rewindfs: exec: ${message}`), { code: 'ERR_INVALID_ARG_VALUE' })
}

function checkOptions(ws: unknown, command: unknown, options: ExecOptions): void {
  if (!(ws instanceof Workspace)) throw invalid('the first argument must be a Workspace')
  if (typeof command !== 'string' || command.trim() === '') throw invalid('the command must be a non-empty string')
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object')
  const { cwd, env, timeout, tmpdir } = options
  if (cwd !== undefined && typeof cwd !== 'string') throw invalid('cwd must be a string')
  if (tmpdir !== undefined && typeof tmpdir !== 'string') throw invalid('tmpdir must be a string')
  if (timeout !== undefined && !(typeof timeout === 'number' && timeout > 0 && Number.isFinite(timeout))) throw invalid('timeout must be a positive number of milliseconds')
  if (env !== undefined) {
    if (typeof env !== 'object' || env === null) throw invalid('env must be an object of strings')
    for (const [name, value] of Object.entries(env)) if (value !== undefined && typeof value !== 'string') throw invalid(`env.${name} must be a string or undefined`)
  }
}

interface Outcome {
  exitCode: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  stdout: string
  stderr: string
  truncated: boolean
}

/** Kills the whole process group (the shell was made its leader), so nothing it started keeps writing. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // ESRCH: the group is already gone.
  }
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv, timeout: number | undefined): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let truncated = false
    const collect = (stream: NodeJS.ReadableStream) => {
      const chunks: Buffer[] = []
      let size = 0
      stream.on('data', (chunk: Buffer) => {
        if (size + chunk.length > MAX_OUTPUT) {
          truncated = true
          chunk = chunk.subarray(0, Math.max(0, MAX_OUTPUT - size))
        }
        size += chunk.length
        if (chunk.length > 0) chunks.push(chunk)
      })
      return () => Buffer.concat(chunks).toString('utf8')
    }
    const stdout = collect(child.stdout!)
    const stderr = collect(child.stderr!)
    let timedOut = false
    const timer = timeout === undefined ? undefined : setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, timeout)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('exit', (exitCode, signal) => {
      clearTimeout(timer)
      // Background processes of the command would keep writing into a directory about to be read and removed.
      killGroup(child.pid)
      const finish = () => resolve({ exitCode, signal, timedOut, stdout: stdout(), stderr: stderr(), truncated })
      const drained = setTimeout(() => {
        child.stdout!.destroy()
        child.stderr!.destroy()
        finish()
      }, DRAIN_MS)
      child.on('close', () => {
        clearTimeout(drained)
        finish()
      })
    })
  })
}

/**
 * Removes the temp directory. `rm -rf` is many times faster than fs.rmSync on a large tree; where
 * it cannot (directories the command left without write permission, for a non-root user), they are
 * opened up and removed here.
 */
async function remove(path: string): Promise<void> {
  await new Promise<void>((resolve) => execFile('/bin/rm', ['-rf', '--', path], () => resolve()))
  if (!fs.existsSync(path)) return
  const open = (dir: string) => {
    fs.chmodSync(dir, 0o700)
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) open(`${dir}/${entry.name}`)
  }
  open(path)
  fs.rmSync(path, { recursive: true, force: true })
}

/**
 * Runs `command` with `sh -c` in a materialised copy of the workspace's current view and records
 * what it changed as one transaction. A command that exits non-zero or times out still has its
 * writes recorded (a failed build's output is what an agent needs to see); the exit code, signal
 * and `timedOut` say how it ended. If validators refuse, or a path the command changed was changed
 * in the workspace while it ran, the promise rejects (ValidationError, ConflictError) with the
 * command's `result` attached, and nothing lands.
 */
export function exec(ws: Workspace, command: string, options: ExecOptions = {}): Promise<ExecResult> {
  // Host access throughout: with a mount patched over fs, the lower directory's reads and the
  // workspace's own work still reach the disk (validators and approve hooks run inside too).
  return onHost(() => execute(ws, command, options))
}

async function execute(ws: Workspace, command: string, options: ExecOptions): Promise<ExecResult> {
  checkOptions(ws, command, options)
  const view = ws.fs
  const cwd = view.realpathSync(options.cwd ?? ws.cwd())
  if (!view.statSync(cwd).isDirectory()) throw new FsError('ENOTDIR', 'exec', options.cwd ?? ws.cwd())
  const source = ws.lower.source
  // Sources that load lazily (IndexedDB, Docker volumes) must have the view's files in memory first.
  if (source.prefetch) await ws.prefetch(listFiles(ws))

  const temp = fs.mkdtempSync(`${options.tmpdir ?? os.tmpdir()}/rewindfs-exec-`)
  let checkpoint: string | undefined
  try {
    // The checkpoint and the materialised view are taken in one synchronous stretch: the same state.
    const before = ws.checkpoint({ name: `exec-${temp.slice(temp.lastIndexOf('-') + 1)}`, description: `before exec: ${command}` })
    const lower: CloneSource | undefined = source instanceof DirectorySource ? { root: source.root, changed: new Set(ws.changes().map((c) => c.path)) } : undefined
    const materialised = attempt(() => materialise(view, `${temp}/root`, `${temp}/clock`, lower))
    checkpoint = (await before).id
    if ('error' in materialised) throw materialised.error
    const manifest = materialised.value

    const hostCwd = manifest.root + (cwd === '/' ? '' : cwd)
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name]
      else env[name] = value
    }
    env.PWD = hostCwd
    const outcome = await run(command, hostCwd, env, options.timeout)
    const found = scan(manifest)
    const result: ExecResult = { ...outcome, changes: { added: found.added, modified: found.modified, deleted: found.deleted }, skipped: found.skipped }
    try {
      if (found.removals.length + found.edits.length > 0) await record(ws, checkpoint, found, command)
    } catch (error) {
      throw Object.assign(error as Error, { result })
    }
    return result
  } finally {
    await remove(temp)
    if (checkpoint !== undefined) await ws.deleteCheckpoint(checkpoint)
  }
}

function attempt<T>(body: () => T): { value: T } | { error: unknown } {
  try {
    return { value: body() }
  } catch (error) {
    return { error }
  }
}

/** The files of the current view (for a lazily loading source to fetch before materialising). */
function listFiles(ws: Workspace): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of ws.fs.readdirSync(dir, { withFileTypes: true })) {
      const path = dir === '/' ? '/' + entry.name : `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) files.push(path)
    }
  }
  walk('/')
  return files
}

const parent = (path: string): string | undefined => (path === '/' ? undefined : path.slice(0, path.lastIndexOf('/')) || '/')

/** One transaction, refused when the workspace changed a path the command changed since the checkpoint. */
async function record(ws: Workspace, checkpoint: string, found: Scan, command: string): Promise<void> {
  const touched = new Set([...found.added, ...found.modified, ...found.deleted])
  // A path is related to what the command touched when it is one of them, above one or below one.
  const above = new Set<string>()
  for (const path of touched) for (let at = parent(path); at !== undefined && !above.has(at); at = parent(at)) above.add(at)
  const related = (path: string) => {
    for (let at: string | undefined = path; at !== undefined; at = parent(at)) if (touched.has(at)) return true
    return above.has(path)
  }
  await ws.transaction(
    (staged) => {
      const conflicts = ws.diff(checkpoint).map((c) => c.path).filter(related)
      if (conflicts.length > 0) throw new ConflictError(conflicts)
      apply(staged, found)
    },
    { label: `exec: ${command}` },
  )
}
