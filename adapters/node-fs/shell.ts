/**
 * Writes from shells and other programs: `hostShell()` is ws.exec's runner on this host (a
 * directory() lower carries one; pass it as `Workspace.open({ exec })` for other lowers);
 * `mountOver` routes a project directory's paths of a node:fs-compatible object to the workspace,
 * and `patchFs` installs it over this process's fs. Node only.
 */
export { DEFAULT_WRITABLE, MAX_OUTPUT, hostShell } from './exec.js'
export type { ExecDefaults, ExecMode, ExecOptions, ExecResult, ExecRunner, ExecSandbox } from './exec.js'
export { mountOver, patchFs } from './mount.js'
