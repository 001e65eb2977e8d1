/**
 * Writes from shells and other programs: `exec` runs a command in a materialised copy of the
 * workspace and records what it changed; `mountOver` routes a project directory's paths of a
 * node:fs-compatible object to the workspace, and `patchFs` installs it over this process's fs.
 * Node only.
 */
import { Workspace } from '../../src/workspace.js'
import { exec } from './exec.js'

// ws.exec runs through this adapter: the browser-safe core cannot start processes.
Workspace.useShell(exec)

export { exec }
export { MAX_OUTPUT } from './exec.js'
export type { ExecOptions, ExecResult } from './exec.js'
export { mountOver, patchFs } from './mount.js'
