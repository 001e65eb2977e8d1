/**
 * ws.exec's contract. The browser-safe core cannot start processes: running commands is a
 * capability, either of the lower source (a `directory(path)` from rewindfs/adapters/node-fs runs
 * commands over itself) or passed to `Workspace.open({ exec })`. The Workspace only wires it: one
 * ExecSession per workspace, opened on the first exec and closed with the workspace.
 */
import type { BisectEngine } from './engine/bisect.js'
import type { DirNode } from './layer/nodes.js'
import type { Overlay } from './overlay.js'
import type { Workspace } from './workspace.js'

/** Limits a command's reach beyond the workspace (Linux namespaces; see the node-fs adapter's README section). */
export interface ExecSandbox {
  /** false: a fresh network namespace with loopback only. Default true (the host's network). */
  network?: boolean
  /** 'read-only': everything outside the project is read-only, /tmp private. Default 'read-write'. */
  host?: 'read-write' | 'read-only'
  /**
   * With host 'read-only': host paths that stay writable (existing ones; `~` is $HOME). Default: tool
   * caches (~/.cache, ~/.npm, ~/.yarn, ~/.local/share/pnpm, ~/.cargo/registry, ~/go/pkg/mod).
   */
  writable?: readonly string[]
}

/** ws.exec's options. */
export interface ExecOptions {
  /** Workspace directory to run in (absolute, or relative to ws.cwd()); default ws.cwd(). */
  cwd?: string
  /** Variables set over the environment; a variable set to undefined is removed. */
  env?: Record<string, string | undefined>
  /** Milliseconds the command may run (counted once its namespaces are set up) before it and everything it started are killed. */
  timeout?: number
  /** Where the private temp directory is made (overlay mode: the first exec's choice holds for the workspace). */
  tmpdir?: string
  /** Forces a mode: 'overlay' where it cannot run is an ENOTSUP error naming the reason. Default: overlay where it can run. */
  mode?: ExecMode
  sandbox?: ExecSandbox
  /**
   * 'pipe' (default): stdin closed, stdout and stderr collected into the result. 'inherit': the
   * command uses this process's terminal (an interactive shell); the result's output is empty.
   */
  stdio?: 'pipe' | 'inherit'
  /** The recorded operation's description; default `exec: <command>`. */
  label?: string
  /**
   * true: what the command writes is thrown away unread, nothing is recorded and `changes` stays
   * empty (ws.bisect's probes; a run whose output is all that matters). Default false.
   */
  discard?: boolean
  /**
   * Withdraws the call: aborted, the command and everything it started are killed as at the
   * timeout (its set-up included), nothing of it is recorded, and the promise rejects with Node's
   * AbortError (name 'AbortError', code 'ABORT_ERR', the signal's reason as `cause`); aborted
   * already, nothing runs. Once the command's changes are being recorded, an abort changes nothing.
   */
  signal?: AbortSignal
}

export type ExecMode = 'overlay' | 'copy'

export interface ExecResult {
  /**
   * The shell's exit code; null when a signal ended it from outside (the timeout). Where the command
   * runs in its own PID namespace, a signal it got from within (kill $$, Ctrl-C) shows as
   * 128 + its number, as a shell reports it.
   */
  exitCode: number | null
  signal: string | null
  /** The timeout ran out and the command was killed with everything it started. */
  timedOut: boolean
  stdout: string
  stderr: string
  /** Output beyond the runner's limit per stream (16 MiB) was dropped. */
  truncated: boolean
  /** Workspace paths the command created, changed and deleted (recorded as one transaction). */
  changes: { added: string[]; modified: string[]; deleted: string[] }
  /** FIFOs, sockets or devices the command made, names that are not UTF-8 (U+FFFD for their bytes), and names the lower source reserves (a directory's `.rewindfs-flush`) and files larger than the workspace's maxFileSize (the workspace keeps what it had there): a workspace cannot hold them. */
  skipped: string[]
  /** How the command saw the workspace: kernel overlayfs over the lower directory, or a temporary copy. */
  mode: ExecMode
  /** Why that mode ran (forced, or what made overlay mode unavailable). */
  modeReason: string
  /**
   * Work done around the command (overlay mode): entries written to or removed from the exec
   * layer to bring it up to date, entries read back from the command's upper directory, and
   * lookups in the workspace's tree for both. Each is O(paths changed), not O(files in the project).
   */
  work?: { layerWrites: number; upperEntries: number; lookups: number }
}

/**
 * What a runner gets from the workspace beyond its public API: the live tree (frozen, so it can be
 * kept and diffed against later trees in O(paths that differ)) and a read-only view of a kept tree.
 */
export interface ExecHost {
  readonly workspace: Workspace
  /** The live upper tree, frozen: later writes copy the nodes they change. */
  tree(): DirNode
  /** A read-only merged view of `root` over the workspace's lower layer. */
  view(root: DirNode): Overlay
  /** Paths whose view differs between two trees (O(paths that differ)). */
  changed(from: DirNode, to: DirNode): string[]
  /** The largest file the workspace holds (WorkspaceOptions.maxFileSize): a command's larger files are skipped. */
  readonly maxFileSize: number
}

export interface ExecSession {
  run(command: string, options: ExecOptions): Promise<ExecResult>
  /** Removes what the session keeps (its temp directory); called by ws.close(). */
  close(): Promise<void>
}

/** Runs commands against workspaces: one session per workspace. */
export interface ExecRunner {
  open(host: ExecHost): ExecSession
  /**
   * The search ws.bisect runs, probing with this runner's commands (`bisectEngine` from
   * rewindfs/adapter-kit), carried as a store carries its journal: a workspace that cannot run
   * commands does not load it. Without it ws.bisect is ENOSYS.
   */
  readonly bisector?: BisectEngine
}
