/**
 * What this host lets ws.exec do, found out once per process and cached: whether commands can get
 * private namespaces (as root, or through an unprivileged user namespace), a PID namespace, and
 * kernel overlayfs with the options overlay mode needs. Each "no" carries the reason, which
 * becomes `result.modeReason` or the ENOTSUP error's message.
 *
 * Metadata-only copy-up (`metacopy=on`): without it overlayfs copies a file's whole content up on
 * any attribute change, so `chmod -R` over a big project copied (and the read-back stored again)
 * every file. It is used where a trial mount shows a chmod leaving a metacopy upper file, as root
 * only: the kernel refuses it with `userxattr` (a user could forge user.* xattrs and have a file
 * show another's content), and its trusted.* xattrs can be set by root alone, so the lowers (the
 * project, which the user owns, and the exec layer, which never carries them) cannot forge one.
 * Where it cannot be had, overlay mode runs as before (full copy-up) and `metacopy` says why.
 */
import { execFile, spawn } from 'node:child_process'
import os from 'node:os'
import { hostFs as fs } from './host-fs.js'
import { makeTempDir, removeTree } from './exec-files.js'
import { HELPER_SCRIPT, helperArguments } from './exec-helper.js'

export interface Support {
  /** Why commands cannot get namespaces, or undefined when they can. */
  readonly namespaces: string | undefined
  /** Whether they run as root in the host's user namespace (no user namespace needed). */
  readonly privileged: boolean
  /** A PID namespace: everything the command starts dies with it. */
  readonly pid: boolean
  /**
   * Overlays mount `volatile` (Linux 5.10+): the upper directory is thrown away after the command,
   * so its mount never syncs the file system under it (a sync on unmount flushes everything dirty
   * there, the exec layer's fresh writes and any other process's).
   */
  readonly volatile: boolean
  /** Why overlay mode cannot run here, or undefined when it can. */
  readonly overlay: string | undefined
  /** Why overlays mount without metadata-only copy-up (`metacopy=on`), or undefined when they use it. */
  readonly metacopy: string | undefined
  /** The util-linux tools, resolved on PATH. */
  readonly tools: Readonly<Record<Tool, string>>
}

type Tool = 'unshare' | 'mount' | 'getfattr' | 'setfattr' | 'mknod'
const TOOLS: readonly Tool[] = ['unshare', 'mount', 'getfattr', 'setfattr', 'mknod']
const PACKAGES: Record<Tool, string> = { unshare: 'util-linux', mount: 'util-linux', getfattr: 'attr', setfattr: 'attr', mknod: 'coreutils' }

/** A tool's path: on PATH, then (`system`) in the system's own directories. */
export function which(name: string, system = true): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':').concat(system ? ['/usr/sbin', '/sbin', '/usr/bin', '/bin'] : [])) {
    if (!dir) continue
    const path = `${dir}/${name}`
    try {
      fs.accessSync(path, fs.constants.X_OK)
      return path
    } catch {
      // not here
    }
  }
  return undefined
}

/** Runs a helper tool to its end (C locale: its messages and escapes are stable). */
export function run(file: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, [...args], { encoding: 'utf8', cwd: '/', env: { ...process.env, LC_ALL: 'C' }, maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : null) : 0
      resolve({ code, stdout, stderr: stderr || (error && code === null ? error.message : '') })
    })
  })
}

/** `unshare` arguments for a command's namespaces (before the program). */
export function unshareArguments(support: Pick<Support, 'privileged' | 'pid'>, network: boolean): string[] {
  return [
    // Propagation private (unshare's default): the command's mounts never reach the host.
    '--mount',
    '--propagation=private',
    ...(support.privileged ? [] : ['--user', '--map-root-user']),
    ...(support.pid ? ['--pid', '--fork', '--mount-proc', '--kill-child'] : []),
    ...(network ? [] : ['--net']),
  ]
}

let cached: Promise<Support> | undefined

/** The host's support, probed on first use (one overlay set-up on a usual host; step by step when it fails, for the reason). */
export function support(): Promise<Support> {
  return (cached ??= probe())
}

async function probe(): Promise<Support> {
  const tools = {} as Record<Tool, string>
  const missing: Tool[] = []
  for (const tool of TOOLS) {
    const path = which(tool)
    if (path) tools[tool] = path
    else missing.push(tool)
  }
  const privileged = process.getuid?.() === 0
  const none = (namespaces: string, overlay = namespaces): Support => ({ namespaces, overlay, metacopy: overlay, privileged, pid: false, volatile: false, tools })
  if (process.platform !== 'linux') return none(`namespaces and overlayfs are Linux's (this is ${process.platform})`)
  if (!tools.unshare || !tools.mount) return none(`util-linux's ${!tools.unshare ? 'unshare' : 'mount'} is not on PATH`)

  // The usual host in one round: a volatile overlay that mounts in a PID namespace proves the namespaces too.
  if (missing.length === 0) {
    const usual = await probeMounts(tools, { privileged, pid: true, volatile: true })
    if (usual.overlay === undefined) return { namespaces: undefined, privileged, pid: true, volatile: true, tools, ...usual }
  }
  // Something is missing or failed (an older kernel without volatile, no PID namespace, no overlay):
  // find out what, step by step, for the reason.
  // Namespaces: with a PID namespace if the kernel allows it, else without.
  const trial = (pid: boolean) => run(tools.unshare, [...unshareArguments({ privileged, pid }, true), '/bin/sh', '-c', 'echo ok'])
  let pid = true
  let attempt = await trial(true)
  if (attempt.stdout.trim() !== 'ok') {
    pid = false
    attempt = await trial(false)
  }
  if (attempt.stdout.trim() !== 'ok') {
    const why = (attempt.stderr.trim().split('\n').pop() ?? '') || `exit status ${attempt.code}`
    return none(`${privileged ? 'a mount namespace' : 'an unprivileged user namespace'} cannot be made here (unshare: ${why})`)
  }
  const base = { namespaces: undefined, privileged, pid, volatile: false, tools }
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((tool) => PACKAGES[tool]))].join(', ')
    const overlay = `${missing.join(', ')} not found on PATH (package ${packages})`
    return { ...base, overlay, metacopy: overlay }
  }
  return { ...base, ...(await probeMounts(tools, base)) }
}

/** Why metadata-only copy-up is not asked for in a user namespace (the kernel refuses it there). */
const USER_NAMESPACE_METACOPY = 'overlayfs refuses metacopy=on with userxattr (a user namespace): files are copied up whole on a chmod, chown or touch'

/**
 * Overlay mode's trial mount: with metacopy=on first as root; refused (an older kernel, a kernel
 * built without it), again without it, the refusal kept as the reason.
 */
async function probeMounts(tools: Record<Tool, string>, mode: Pick<Support, 'privileged' | 'pid' | 'volatile'>): Promise<{ overlay: string | undefined; metacopy: string | undefined }> {
  if (!mode.privileged) {
    const overlay = await probeOverlay(tools, { ...mode, metacopy: USER_NAMESPACE_METACOPY })
    return { overlay, metacopy: overlay ?? USER_NAMESPACE_METACOPY }
  }
  const tried = await probeOverlay(tools, { ...mode, metacopy: undefined })
  if (tried === undefined) return { overlay: undefined, metacopy: undefined }
  const overlay = await probeOverlay(tools, { ...mode, metacopy: tried })
  return { overlay, metacopy: overlay ?? tried }
}

/**
 * Mounts an overlay the way exec does (an exec layer with a whiteout and an opaque directory over
 * a lower directory, a fresh upper) and checks the merged view and where a write lands. With
 * metacopy=on (`mode.metacopy` undefined) a chmod must leave an upper file marked as metadata only
 * whose content still reads as the lower's: else the answer says why metacopy cannot be used.
 */
async function probeOverlay(tools: Record<Tool, string>, mode: Pick<Support, 'privileged' | 'pid' | 'volatile' | 'metacopy'>): Promise<string | undefined> {
  const { privileged } = mode
  const metacopy = mode.metacopy === undefined
  const dir = makeTempDir(os.tmpdir(), 'probe-')
  try {
    for (const sub of ['lower/kept', 'lower/hidden', 'layer/hidden', 'upper', 'work', 'stash']) fs.mkdirSync(`${dir}/${sub}`, { recursive: true })
    fs.writeFileSync(`${dir}/lower/gone`, '')
    fs.writeFileSync(`${dir}/lower/kept/meta`, 'data\n')
    fs.writeFileSync(`${dir}/lower/hidden/old`, '')
    fs.writeFileSync(`${dir}/layer/hidden/new`, '')
    const [whiteout, xattr] = await Promise.all([
      run(tools.mknod, [`${dir}/layer/gone`, 'c', '0', '0']),
      run(tools.setfattr, ['-n', `${privileged ? 'trusted' : 'user'}.overlay.opaque`, '-v', 'y', `${dir}/layer/hidden`]),
    ])
    if (whiteout.code !== 0) return `whiteouts cannot be made (mknod c 0 0: ${whiteout.stderr.trim()})`
    if (xattr.code !== 0) return `the opaque xattr cannot be set in ${os.tmpdir()} (setfattr: ${xattr.stderr.trim()})`
    const args = [
      ...unshareArguments(mode, true),
      '/bin/sh',
      '-c',
      HELPER_SCRIPT,
      'rewindfs-exec',
      ...helperArguments({
        root: `${dir}/lower`,
        layer: `${dir}/layer`,
        upper: `${dir}/upper`,
        work: `${dir}/work`,
        overlayOptions: overlayOptions(mode),
        cwd: `${dir}/lower`,
        network: 'on',
        host: 'read-write',
        writable: [],
        map: privileged ? '' : `${process.getuid!()}:${process.getgid!()}`,
        stash: `${dir}/stash`,
        command: 'ls -A . hidden && echo made > made' + (metacopy ? ' && chmod 600 kept/meta && cat kept/meta' : ''),
        project: '',
        pwd: '',
      }),
    ]
    const result = await new Promise<{ stdout: string; status: string; stderr: string }>((resolve) => {
      const child = spawn(tools.unshare, args, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe', 'pipe'] })
      const out: Buffer[] = []
      const err: Buffer[] = []
      const status: Buffer[] = []
      child.stdout!.on('data', (chunk: Buffer) => out.push(chunk))
      child.stderr!.on('data', (chunk: Buffer) => err.push(chunk))
      ;(child.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => status.push(chunk))
      child.on('error', (error) => resolve({ stdout: '', status: `error ${error.message}`, stderr: '' }))
      child.on('close', () => resolve({ stdout: Buffer.concat(out).toString(), status: Buffer.concat(status).toString(), stderr: Buffer.concat(err).toString() }))
    })
    if (!result.status.startsWith('ok')) return `kernel overlayfs cannot be mounted${metacopy ? ' with metacopy=on' : ''} here (${result.status.replace(/^error /, '').trim()})`
    const expected = '.:\nhidden\nkept\n\nhidden:\nnew\n' + (metacopy ? 'data\n' : '')
    if (result.stdout !== expected || !fs.existsSync(`${dir}/upper/made`) || fs.existsSync(`${dir}/lower/made`)) {
      return `kernel overlayfs does not merge as expected${metacopy ? ' with metacopy=on' : ''} here (saw ${JSON.stringify(result.stdout)}${result.stderr ? `, ${result.stderr.trim()}` : ''})`
    }
    if (metacopy) {
      const marked = await run(tools.getfattr, ['--absolute-names', '-h', '-n', `${xattrPrefix(privileged)}metacopy`, '--', `${dir}/upper/kept/meta`])
      if (marked.code !== 0) return `metacopy=on mounts, but a chmod copied the file's content up (getfattr: ${marked.stderr.trim() || `exit status ${marked.code}`})`
    }
    return undefined
  } finally {
    try {
      removeTree(dir)
    } catch {
      // A leftover in the temp directory does not change the answer.
    }
  }
}

/**
 * Mount options beyond the layers: a user namespace needs overlayfs's user.* xattrs; root gets
 * renames of merged directories and the inode index, so a write through one name of a hard-linked
 * file copies the inode up once and every name shows it, as on a plain file system (the kernel falls
 * back to index=off where the file systems cannot give it, and a user namespace cannot have it);
 * metadata-only copy-up where the probe found it (Support.metacopy; root only);
 * `volatile` where the kernel has it (Support.volatile).
 */
export function overlayOptions({ privileged, volatile, metacopy }: Pick<Support, 'privileged' | 'volatile' | 'metacopy'>): string {
  return (privileged ? ',redirect_dir=on,index=on' + (metacopy === undefined ? ',metacopy=on' : '') : ',userxattr') + (volatile ? ',volatile' : '')
}

/** The xattr name prefix overlayfs uses for its own attributes in this mode. */
export function xattrPrefix(privileged: boolean): string {
  return privileged ? 'trusted.overlay.' : 'user.overlay.'
}
