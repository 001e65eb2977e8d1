/**
 * Commit-and-validate transactions: writes go to a staging overlay (a frozen copy of the current
 * tree, so starting one is O(1)) that `ws.fs` cannot see; validators run on the staged files; only
 * if all pass, and nothing staged was changed meanwhile, does the change set land as one operation.
 * A throw, a failed validator, a refused approval or a conflict leaves the workspace untouched.
 * `Transactions` is how a workspace runs them: each on its own, committing in the engine's turn.
 */
import type { Change } from '../diff.js'
import { diffTrees, upperSlotDiff } from '../diff.js'
import { FsOperations } from '../fs/operations.js'
import { createFs } from '../fs/surface.js'
import type { Watching } from '../fs/watch.js'
import type { DirNode, Meta, UpperNode } from '../layer/nodes.js'
import { INODES_PATH } from '../layer/inodes.js'
import { mapEntries } from '../layer/persistent-map.js'
import { Overlay } from '../overlay.js'
import type { EngineContext } from './context.js'
import type { Journal, OperationType } from './journal.js'
import { type ValidationResult, type Validator, ValidationError, runValidators } from './validator.js'

export interface RiskFactors {
  deletes: number
  directoryRenames: number
  filesTouched: number
  lowerOverwrites: number
  sideEffects: number
}

export interface ApprovalRequest {
  changes: Change[]
  /** Unified diffs of the staged text files, concatenated. */
  diff: string
  validatorResults: ValidationResult[]
  risk: { score: number; factors: RiskFactors; threshold: number }
  /** How the commit would be undone. */
  rollbackPlan: string
}

export type ApprovalHook = (request: ApprovalRequest) => boolean | Promise<boolean>

/**
 * What a transaction's operation may be typed as (TransactionOptions.type): 'transaction', or the
 * type of a change a workspace call makes. Not a restore, reset, state or side effect, which undo
 * and restore tell apart by their types.
 */
export type TransactionType = Exclude<OperationType, 'state_set' | 'side_effect' | 'restore' | 'reset'>

const TRANSACTION_TYPES: ReadonlySet<string> = new Set<TransactionType>(['transaction', 'file_create', 'file_edit', 'file_delete', 'rename', 'mkdir', 'rmdir', 'chmod', 'symlink', 'link', 'truncate', 'copy'])

export interface TransactionOptions {
  validators?: readonly Validator[]
  label?: string
  group?: string
  /**
   * The operation's type in history and for undo's type filter (default 'transaction'): what the
   * change set is when one call's worth of change takes several (a file written into directories
   * made for it is a 'file_create').
   */
  type?: TransactionType
  /** Called when the risk score exceeds `riskThreshold`; false refuses the commit. */
  approve?: ApprovalHook
  riskThreshold?: number
  /**
   * Versions of the lower source the changes rest on that the body does not read itself (what a
   * command ws.exec ran saw there when it started): at the commit each becomes its path's conflict
   * base (what a flush and a restore compare the lower source with), unless the workspace has one
   * already, ahead of what the body's own reads found. '' stands for nothing there. Read at the
   * commit: the body may still add to it.
   */
  seen?: ReadonlyMap<string, string>
}

/** Default score above which `approve` is asked: e.g. four deletes, or two directory renames. */
export const DEFAULT_RISK_THRESHOLD = 10

export class ConflictError extends Error {
  readonly code = 'ECONFLICT'
  constructor(readonly paths: string[]) {
    super(`rewindfs: the transaction's staged paths were changed outside it meanwhile: ${paths.join(', ')}`)
    this.name = 'ConflictError'
  }
}

export class ApprovalError extends Error {
  readonly code = 'EAPPROVAL'
  constructor(readonly risk: number) {
    super(`rewindfs: the transaction (risk ${risk}) was not approved`)
    this.name = 'ApprovalError'
  }
}

export function riskScore(factors: RiskFactors): number {
  return factors.deletes * 3 + factors.directoryRenames * 5 + factors.filesTouched + factors.lowerOverwrites * 2 + factors.sideEffects * 5
}

export interface TransactionHost {
  overlay: Overlay
  journal: Journal
  cwd: string
  umask: number
  /** The workspace's limit on a file's size (Workspace.open's maxFileSize): staged files are held to it too. */
  maxFileSize: number
  /** The workspace's watching capability: the staged fs is watched as the workspace's is. */
  watch?: Watching
  validators: readonly Validator[]
  approve?: ApprovalHook
  /** Runs the commit (conflict check and journal append) in the engine's turn; at once without it. */
  exclusive?: (commit: () => void) => Promise<void>
}

export type StagedFs = ReturnType<typeof createFs>

/** Where upperSlotDiff names shared inodes' records. */
const INODE_RECORDS = `${INODES_PATH}/`

/** Whether a file copied up from the lower source (at `path` in `view`, the tree before) has other times or mode than there. */
function timesMoved(view: Overlay, path: string, meta: Meta): boolean {
  const entry = view.lookup(path, false)
  if (entry === undefined || entry.type !== 'file') return true
  const was = view.meta(entry)
  return was.mtimeMs !== meta.mtimeMs || was.atimeMs !== meta.atimeMs || was.mode !== meta.mode || was.uid !== meta.uid || was.gid !== meta.gid
}

/** Whether a mode or an owner differs (what a chmod or chown of a directory or symlink changes). */
function modeOrOwnerMoved(before: Meta, after: Meta): boolean {
  return before.mode !== after.mode || before.uid !== after.uid || before.gid !== after.gid
}

/** Runs `body` against a staging fs and commits its changes as one 'transaction' operation. */
export async function runTransaction<T>(host: TransactionHost, body: (fs: StagedFs) => T | Promise<T>, options: TransactionOptions): Promise<T> {
  const { overlay } = host
  const base: DirNode = overlay.freeze()
  const staging = new Overlay(overlay.lower, overlay.blobs, overlay.inodes, base)
  // What the body reads is what the agent was shown, as a read outside a transaction is.
  staging.shownInBody = new Map<string, string>()
  const done = { committed: false }
  try {
    return await stageAndCommit(host, base, staging, body, options, done)
  } finally {
    // Nothing committed (no change, a throw, a failed validator, a refusal, a conflict), but the
    // body saw the disk: a change made outside afterwards rests on what it read, and one on a save
    // made since is still a conflict (a first sighting taken later would hide it).
    if (!done.committed) {
      for (const [path, version] of staging.observed) if (!overlay.observed.has(path)) overlay.observe(path, version)
      for (const [path, version] of staging.shownInBody) overlay.showVersion(path, version)
    }
  }
}

async function stageAndCommit<T>(
  host: TransactionHost,
  base: DirNode,
  staging: Overlay,
  body: (fs: StagedFs) => T | Promise<T>,
  options: TransactionOptions,
  done: { committed: boolean },
): Promise<T> {
  const { overlay, journal } = host
  const ops = new FsOperations(staging)
  ops.cwd = host.cwd
  ops.umask = host.umask
  ops.maxFileSize = host.maxFileSize
  const fs = createFs(ops, host.watch ? { watch: host.watch } : {})
  const result = await body(fs)
  ops.settle()
  const staged = staging.freeze()
  const records = diffTrees(staging, base, staged)
  const paths = records.map((r) => r.change.path)
  // A file's times alone (utimes, a command's touch or its rewrite of the same bytes) change no
  // record above: the commit takes them all the same, and names them. Directories' times alone (a
  // temporary file made and removed) are not a change, nor a lower file copied up as it was.
  if (staged !== base) {
    const listed = new Set(paths)
    const view = new Overlay(overlay.lower, overlay.blobs, overlay.inodes, base)
    const slot = (path: string, before: UpperNode | undefined, after: UpperNode | undefined): void => {
      // A shared inode's record (never a lower file): named by one of its names.
      if (path.startsWith(INODE_RECORDS)) {
        const name = before?.type === 'file' && after?.type === 'file' ? staging.nameOfInode(after.meta.ino)?.path : undefined
        if (name !== undefined && !listed.has(name)) paths.push(name)
        return
      }
      // A lower directory copied up to hold such a file: its upper children are the candidates;
      // itself, when a chmod or chown moved its mode or owner.
      if (before === undefined && after?.type === 'dir' && after.lower !== null) {
        const was = view.lookup(path, false)
        if (!listed.has(path) && was?.type === 'dir' && modeOrOwnerMoved(view.meta(was), after.meta)) paths.push(path)
        for (const [name, child] of mapEntries<UpperNode>(after.children)) slot(`${path}/${name}`, undefined, child)
        return
      }
      // A symlink's owner (lchown): diffTrees compares its target and mode.
      if (before?.type === 'symlink' && after?.type === 'symlink' && !listed.has(path) && modeOrOwnerMoved(before.meta, after.meta)) paths.push(path)
      if (after?.type !== 'file' || listed.has(path)) return
      if (before?.type === 'file' || (before === undefined && timesMoved(view, path, after.meta))) paths.push(path)
    }
    // A directory's mode or owner alone (its times alone are no change).
    const meta = (path: string, before: Meta, after: Meta): void => {
      if (!listed.has(path) && modeOrOwnerMoved(before, after)) paths.push(path)
    }
    upperSlotDiff(base, staged, slot, meta)
  }
  if (paths.length === 0) return result

  const files = records.filter((r) => r.after?.type === 'file').map((r) => ({ path: r.change.path, content: staging.readBytes(r.after!) }))
  const report = await runValidators([...host.validators, ...(options.validators ?? [])], files)
  if (report.failures.length > 0) throw new ValidationError(report.failures)

  const factors: RiskFactors = {
    deletes: records.filter((r) => r.change.type === 'deleted').length,
    directoryRenames: 0,
    filesTouched: records.filter((r) => r.change.entry === 'file').length,
    lowerOverwrites: records.filter((r) => r.change.type !== 'added' && r.before?.node === undefined).length,
    sideEffects: 0,
  }
  // A directory that disappeared while a directory with the same lower contents appeared is a rename.
  const removedDirs = new Set(records.filter((r) => r.change.type === 'deleted' && r.before?.type === 'dir').map((r) => r.before!.lowerPath))
  factors.directoryRenames = records.filter((r) => r.change.type === 'added' && r.after?.type === 'dir' && removedDirs.has(r.after.lowerPath)).length
  const threshold = options.riskThreshold ?? DEFAULT_RISK_THRESHOLD
  const score = riskScore(factors)
  const approve = options.approve ?? host.approve
  if (approve && score > threshold) {
    const request: ApprovalRequest = {
      changes: records.map((r) => r.change),
      diff: records.map((r) => r.change.patch ?? '').join(''),
      validatorResults: report.results,
      risk: { score, factors, threshold },
      rollbackPlan: `one undo step (or undo({ group })) puts back ${records.length} paths from blob references`,
    }
    if ((await approve(request)) !== true) throw new ApprovalError(score)
  }

  const commit = () => {
    // Conflict: a staged path (or its parent chain) changed in the live tree since the base.
    const live = overlay.freeze()
    if (live !== base) {
      const changedLive = diffTrees(overlay, base, live).map((r) => r.change.path)
      const conflicts = changedLive.filter((p) => paths.some((q) => p === q || q.startsWith(p + '/') || p.startsWith(q + '/')))
      if (conflicts.length > 0) throw new ConflictError(conflicts)
    }

    // What the body saw of the lower source (read, or replaced unread) the workspace has seen: a
    // flush then finds what changed there since, as it does after a write outside a transaction.
    // The versions the changes rest on come first: the body's staging read the disk later.
    for (const [path, version] of options.seen ?? []) overlay.observe(path, version)
    for (const [path, version] of staging.observed) overlay.observe(path, version)
    // The body's reads, before its changes take their bases: a change it made on a save it read
    // again rests on that save (an editor's check against the file it loaded), as outside one.
    for (const [path, version] of staging.shownInBody!) overlay.showVersion(path, version)
    done.committed = true
    journal.run({ type: options.type ?? 'transaction', paths, group: options.group, description: options.label }, () => {
      upperSlotDiff(
        base,
        staged,
        (path, _before, after) => overlay.setSlot(path, after),
        (path, _before, after) => overlay.setDirMeta(path, after),
      )
    })
  }
  if (host.exclusive) await host.exclusive(commit)
  else commit()
  return result
}

/**
 * A workspace's transactions. Each one stages on its own (over the live tree as it is when it
 * starts), runs its own validators and approval, and commits, conflicts or fails on its own: the
 * engine cannot tell a transaction started inside another's body from one started beside it
 * (Promise.all) without async context tracking, so a nested one is independent too, never merged.
 * No automatic checkpoint is made while any runs (each commit is one operation), only the commit
 * takes the engine's turn, and the result is returned once durable.
 */
export class Transactions {
  /** Transactions started and not yet settled. */
  private count = 0

  constructor(
    private readonly context: EngineContext,
    private readonly acknowledge: () => Promise<void>,
  ) {}

  get running(): boolean {
    return this.count > 0
  }

  async run<T>(body: (fs: StagedFs) => T | Promise<T>, options: TransactionOptions): Promise<T> {
    const { ops, overlay, journal, serial, options: defaults } = this.context
    this.context.assertOpen()
    if (typeof body !== 'function') throw new TypeError('rewindfs: transaction(body) needs a function')
    if (options.type !== undefined && !TRANSACTION_TYPES.has(options.type)) {
      throw new TypeError(`rewindfs: transaction type must be one of ${[...TRANSACTION_TYPES].join(', ')}; got ${String(options.type)}`)
    }
    this.context.assertWritable('transaction')
    ops.settle()
    this.count++
    let result: T
    try {
      result = await runTransaction(
        {
          overlay,
          journal,
          cwd: ops.cwd,
          umask: ops.umask,
          maxFileSize: ops.maxFileSize,
          ...(defaults.watch ? { watch: defaults.watch } : {}),
          validators: defaults.validators ?? [],
          ...(defaults.approve ? { approve: defaults.approve } : {}),
          // Only the commit takes a turn: the body, validators and approval run before it.
          exclusive: (commit) =>
            serial.run(async () => {
              this.context.assertWritable('transaction')
              return commit()
            }),
        },
        body,
        options,
      )
    } finally {
      this.count--
    }
    await this.acknowledge()
    return result
  }
}
