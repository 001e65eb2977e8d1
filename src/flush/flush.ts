/**
 * Flush: apply the workspace's change set to a real place, all or nothing, after a conflict check.
 * Each target keeps a ledger of what we last wrote there (a signature of the entry and the version
 * the target reported), so the next flush sends only what differs from the target's state, a
 * restore to a pre-flush checkpoint is sent back on the next flush, and a path someone else changed
 * since is a conflict. Flushing into the workspace's own lower source is a rebase: the old state of
 * every path it replaces is pinned first (PinnedLower), so no tree's view changes. Names of one
 * inode (hard links) are flushed together, the first with the content and the others as links of
 * it where the target can make hard links; a target that cannot gets copies, named in the report.
 */
import type { BlobId } from '../blob/store.js'
import { FsError } from '../errors.js'
import { diffTrees } from '../diff.js'
import type { Change } from '../diff.js'
import { ABSENT, Overlay, type Entry } from '../overlay.js'
import { components, dirname, join, normalize, relative } from '../path.js'
import { namesOf } from '../layer/inodes.js'
import { versionHolds } from '../lower/source.js'
import { parseFileSignature, writtenBy } from './book.js'
import type { FlushBook, Recorded } from './book.js'
import type { PinnedLower } from './pinned-lower.js'
import type { AppliedNotes, FlushEntry, FlushProgress, FlushTarget } from './target.js'

export interface FlushOptions {
  /** Write even over paths changed in the target since we read or wrote them. */
  force?: boolean
  /** Compute the change set and conflicts; write nothing. */
  dryRun?: boolean
  onProgress?: (progress: FlushProgress & { target: string }) => void
  /** With several targets: apply to this many first, run `verify`, then to the rest. */
  canary?: number
  /** Checks the canary targets; false or a throw rolls them back and rejects the flush. */
  verify?: (targets: readonly FlushTarget[]) => unknown
}

export interface FlushReport {
  applied: boolean
  /** What was (or, for a dry run, would be) written, one entry per path. */
  changes: Change[]
  /** Paths changed in a target since we read or last wrote them. */
  conflicts: { target: string; path: string }[]
  targets: { id: string; applied: boolean }[]
  /** Names of shared inodes (hard links) a target wrote as separate copies, since it cannot make hard links. */
  linksCopied?: { target: string; paths: string[] }[]
  /**
   * A dry run's: paths we flushed that changed in the target since (someone else's edit; a file we
   * deleted there made again), where the workspace still shows what we wrote, and so not what the
   * target holds now. Not in `changes`: the flush does not write them back; a change the workspace
   * makes to one of them is a conflict.
   */
  changedInTarget?: { target: string; path: string }[]
  /**
   * Files a target wrote anew (a temp renamed over the old file) whose extended attributes and
   * ACLs it could not carry over, and why (a directory target without getfattr and setfattr).
   */
  xattrsNotKept?: { target: string; paths: string[]; why: string }[]
}

export interface FlushHost {
  readonly overlay: Overlay
  readonly lower: PinnedLower
  readonly book: FlushBook
  readonly session: string
  /** Makes pins, ledgers and the given blobs durable (no-op without a store). */
  persist(blobs: readonly BlobId[]): Promise<void>
  /**
   * Since when the workspace may have stopped showing the directory at `path` as the target holds
   * it (epoch ms; from its history: deleted, replaced, renamed), undefined when its history does not
   * tell: what changed under it on disk since is a conflict.
   */
  replacedAt?(path: string): number | undefined
}

export interface Planned {
  readonly path: string
  readonly base: string
  readonly desired: string
  /** The workspace's entry at the path now (undefined: absent). */
  readonly current: Entry | undefined
  readonly entries: FlushEntry[]
  readonly change: Change
}

export async function flush(host: FlushHost, targets: readonly FlushTarget[], options: FlushOptions = {}): Promise<FlushReport> {
  if (targets.length === 0) throw new TypeError('rewindfs: flush needs a target')
  const canary = options.canary ?? 0
  if (canary > 0 && (canary >= targets.length || typeof options.verify !== 'function')) {
    throw new TypeError(`rewindfs: a canary flush needs more targets than canaries (${targets.length} ≤ ${canary}) and a verify function`)
  }
  // A dry run writes nothing: what it reports may be stale by the time it returns, as any read.
  return options.dryRun ? flushHeld(host, targets, options) : holding(targets, () => flushHeld(host, targets, options))
}

/**
 * Runs `section` holding every target's flush lock, taken in the order of their ids (one lock per
 * id) so two flushes into the same targets never wait for each other crosswise.
 */
function holding<T>(targets: readonly FlushTarget[], section: () => Promise<T>): Promise<T> {
  const byId = new Map<string, FlushTarget>()
  for (const target of targets) if (typeof target.exclusive === 'function' && !byId.has(target.id)) byId.set(target.id, target)
  const ordered = [...byId.keys()].sort().map((id) => byId.get(id)!)
  const enter = (index: number): Promise<T> => (index === ordered.length ? section() : ordered[index].exclusive!(() => enter(index + 1)))
  return enter(0)
}

async function flushHeld(host: FlushHost, targets: readonly FlushTarget[], options: FlushOptions): Promise<FlushReport> {
  const canary = options.canary ?? 0
  // A dry run takes what a recovery finds into account without saving it (the store may be read-only).
  for (const target of targets) await recover(host, target, !options.dryRun)
  const plans = new Map<FlushTarget, Planned[]>()
  const conflicts: FlushReport['conflicts'] = []
  for (const target of targets) {
    const plan = await planFor(host, target)
    refuseReserved(target, plan)
    plans.set(target, plan)
    for (const path of await conflictsOf(host, target, plan)) conflicts.push({ target: target.id, path })
  }
  const changes = plans.get(targets[0])!.map((p) => p.change)
  const linksCopied = targets
    .filter((target) => target.hardLinks !== true)
    .map((target) => ({ target: target.id, paths: plans.get(target)!.flatMap((p) => p.entries.flatMap((e) => (e.kind === 'file' && e.link !== undefined ? [e.path] : []))) }))
    .filter((copied) => copied.paths.length > 0)
  const xattrsNotKept: NonNullable<FlushReport['xattrsNotKept']> = []
  const report = (applied: boolean, done: readonly FlushTarget[], changedInTarget: FlushReport['changedInTarget'] = []): FlushReport => ({
    applied,
    changes,
    conflicts,
    targets: targets.map((t) => ({ id: t.id, applied: done.includes(t) })),
    ...(linksCopied.length > 0 ? { linksCopied } : {}),
    ...(changedInTarget.length > 0 ? { changedInTarget } : {}),
    ...(xattrsNotKept.length > 0 ? { xattrsNotKept } : {}),
  })
  if (options.dryRun) {
    const changedInTarget: FlushReport['changedInTarget'] = []
    for (const target of targets) for (const path of await changedSinceFlushed(host, target, plans.get(target)!)) changedInTarget.push({ target: target.id, path })
    return report(false, [], changedInTarget)
  }
  if (conflicts.length > 0 && !options.force) throw conflictError(conflicts, targets.length > 1)
  const done: FlushTarget[] = []
  for (const [index, target] of targets.entries()) {
    if (canary > 0 && index === canary) {
      let failure: { why: string; cause?: unknown } | undefined
      try {
        if ((await options.verify!(done)) === false) failure = { why: 'verify returned false' }
      } catch (error) {
        failure = { why: error instanceof Error ? error.message : String(error), cause: error }
      }
      if (failure) {
        for (const canaryTarget of done) await rollBack(host, canaryTarget, plans.get(canaryTarget)!)
        const { why, cause } = failure
        throw Object.assign(new Error(`rewindfs: canary verification failed (${why}); the ${done.length} canary target(s) were rolled back`), {
          code: 'ECANARY',
          rolledBack: done.map((t) => t.id),
          cause,
        })
      }
    }
    const notKept = (await applyPlan(host, target, plans.get(target)!, options))?.xattrsNotKept
    if (notKept && notKept.paths.length > 0) xattrsNotKept.push({ target: target.id, paths: [...notKept.paths], why: notKept.why })
    done.push(target)
  }
  return report(true, done)
}

function conflictError(conflicts: FlushReport['conflicts'], named: boolean): Error {
  const list = conflicts.map((c) => (named ? `${c.target}:${c.path}` : c.path)).join(', ')
  return Object.assign(new Error(`rewindfs: flush refused: changed in the target since it was read or last flushed: ${list}; pass force: true to overwrite`), {
    code: 'ECONFLICT',
    conflicts,
  })
}

/** A path the target keeps to itself (its staging folder) is refused before anything is written. */
function refuseReserved(target: FlushTarget, plan: readonly Planned[]): void {
  if (!target.reserved) return
  for (const p of plan) {
    const why = p.current ? target.reserved(p.path) : undefined
    if (why !== undefined) throw new FsError('EINVAL', 'flush', p.path, undefined, `${why}; rename or delete it in the workspace, then flush again`)
  }
}

/** Rolls an interrupted flush forward: the target finishes its manifest, we record what it holds (saved unless `persist` is false). */
async function recover(host: FlushHost, target: FlushTarget, persist = true): Promise<void> {
  await target.recover?.()
  const intended = host.book.pending.get(target.id)
  if (!intended) return
  const versions = await target.versions(intended.map(([path]) => path))
  // All or nothing: when no path moved from its version before the apply, the apply never committed.
  const applied = intended.some(([, , before], i) => !holds(before, versions[i]))
  const ledger = host.book.ledger(target.id)
  if (applied) {
    intended.forEach(([path, sig], i) => ledger.set(path, { sig, version: versions[i] ?? null, by: host.session, at: writtenBy() }))
    await recordParents(host, target, intended.map(([path]) => path))
  }
  host.book.pending.delete(target.id)
  if (persist) await host.persist([])
}

function isOwnLower(host: FlushHost, target: FlushTarget): boolean {
  return (host.lower.id !== undefined && target.id === host.lower.id) || (target as unknown) === host.lower.source
}

/** The entry at a tree path, walking without following symlinks (a link in the way: nothing). */
function exact(overlay: Overlay, path: string): Entry | undefined {
  let entry: Entry | undefined = overlay.rootEntry()
  for (const name of components(path)) {
    if (entry.type !== 'dir') return undefined
    entry = overlay.child(entry, name)
    if (!entry) return undefined
  }
  return entry
}

/**
 * What a flush writes at a path, as a string the ledger keeps. A file's mtime is part of it (make,
 * ninja and tsc --incremental decide by it: a `touch` is a change); a directory's is not, since
 * every entry written in it moves it on the target, nor is a symlink's, which no target writes (each
 * makes the link anew, stamped at the flush; tools read the time of what it points to). A lower entry's version moves
 * with its time.
 */
function signature(overlay: Overlay, entry: Entry | undefined): string {
  if (!entry) return 'absent'
  const { mode, mtimeMs } = overlay.meta(entry)
  if (entry.type === 'dir') return `d:${mode}`
  if (entry.type === 'symlink') return `l:${overlay.readLink(entry)}`
  // A hard link's inode is part of what was written: linking or unlinking a name changes it.
  if (entry.node?.type === 'file') return `f:${mode}:${entry.node.blob}${entry.link !== undefined ? `:${entry.link}` : ''}@${mtimeMs}`
  return `lower:${mode}:${entry.lowerPath}:${entry.lowerStat?.version ?? ''}`
}

/**
 * What a flush would write at a path whose target holds `before`: the entry's signature, except
 * for a directory copied up whose mode the workspace never changed, which leaves the target's
 * mode as it is (`before`'s): a chmod made there since is someone else's, neither a change to
 * write back nor a conflict.
 */
function desiredOf(overlay: Overlay, current: Entry | undefined, before: string): string {
  const desired = signature(overlay, current)
  const node = current?.node
  if (node?.type !== 'dir' || node.lowerMode === undefined || current!.lowerPath !== current!.path || !before.startsWith('d:')) return desired
  return overlay.meta(current!).mode === node.lowerMode ? before : desired
}

/**
 * Whether the workspace's entry (`current`, signed `desired`) is what the target holds (`before`:
 * the ledger's record of the path, else the lower source's entry). A file's signature
 * recorded before times were part of it (no '@') is compared without the time, or every file a
 * store flushed before would look changed: rewritten or, edited by a human since, a conflict. Its
 * time is unknown, so a change of the entry's metadata after that flush (a ctime past it: a touch)
 * counts as a change; the next flush records the time.
 */
function sameState(overlay: Overlay, current: Entry | undefined, desired: string, before: string, recorded: Recorded | undefined): boolean {
  if (desired === before) return true
  if (recorded === undefined || !before.startsWith('f:') || before.includes('@') || !desired.startsWith('f:')) return false
  const at = desired.lastIndexOf('@')
  if (at < 0 || desired.slice(0, at) !== before) return false
  return current === undefined || recorded.at === undefined || overlay.meta(current).ctimeMs <= recorded.at
}

/** Whether a proper ancestor of `path` is in `dirs`: O(depth), whatever the size of the set. */
function underAny(path: string, dirs: ReadonlySet<string>): boolean {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (dirs.has(dir)) return true
    if (dir === '/') return false
  }
}

/** The target's entry must go before the new one is written: deleted, or of another type. */
const replaces = (p: Planned) => p.base !== 'absent' && (p.desired === 'absent' || kindOf(p.base) !== kindOf(p.desired))

const kindOf = (sig: string): Change['entry'] | undefined =>
  sig === 'absent' ? undefined : sig.startsWith('d:') ? 'dir' : sig.startsWith('l:') ? 'symlink' : 'file'

/**
 * Paths whose state differs from what the target holds: the target's ledger where we wrote it,
 * else the lower source as the trees see it. O(paths changed + paths in the ledger).
 */
export function differences(overlay: Overlay, lower: PinnedLower, ledger: ReadonlyMap<string, Recorded>): Planned[] {
  return overlay.lookingOnly(() => differencesNow(overlay, lower, ledger))
}

function differencesNow(overlay: Overlay, lower: PinnedLower, ledger: ReadonlyMap<string, Recorded>): Planned[] {
  const base = new Overlay(lower, overlay.blobs, overlay.inodes)
  const candidates = new Set<string>(diffTrees(overlay, base.root, overlay.root, { times: true }).map((r) => r.change.path))
  for (const path of ledger.keys()) candidates.add(path)
  // Every name of a shared inode any of whose names is flushed: the target links them to one file.
  const linked = new Set<number>()
  const sent = (path: string) => {
    const current = exact(overlay, path)
    const recorded = ledger.get(path)
    const before = recorded?.sig ?? signature(base, exact(base, path))
    return sameState(overlay, current, desiredOf(overlay, current, before), before, recorded) ? undefined : current
  }
  for (const path of candidates) {
    const current = sent(path)
    if (current?.link !== undefined && current.type === 'file') linked.add(current.link)
  }
  const names = new Set<string>()
  for (const list of namesOf(overlay.root, linked).values()) for (const name of list) names.add(name)
  for (const name of names) candidates.add(name)
  const plan: Planned[] = []
  for (const path of [...candidates].sort()) {
    const current = exact(overlay, path)
    const recorded = ledger.get(path)
    const before = recorded?.sig ?? signature(base, exact(base, path))
    const desired = desiredOf(overlay, current, before)
    if (sameState(overlay, current, desired, before, recorded) && !names.has(path)) continue
    const type = before === 'absent' ? 'added' : desired === 'absent' ? 'deleted' : 'modified'
    plan.push({ path, base: before, desired, current, entries: [], change: { path, type, entry: kindOf(desired) ?? kindOf(before)! } })
  }
  return plan
}

async function planFor(host: FlushHost, target: FlushTarget): Promise<Planned[]> {
  const { overlay } = host
  const plan = differences(overlay, host.lower, host.book.ledger(target.id))
  const lowerFiles: string[] = []
  for (const { current } of plan) if (current?.type === 'file' && current.node === undefined) lowerFiles.push(current.lowerPath!)
  await host.lower.prefetch(lowerFiles)
  // Deletes first (a deleted directory takes its tree), then creations, parents before children
  // (the plan is sorted; an entry that exists has directories for all its ancestors).
  const deleted = new Set<string>()
  for (const p of plan) {
    if (replaces(p) && !underAny(p.path, deleted)) {
      p.entries.push({ path: p.path, kind: 'delete' })
      deleted.add(p.path)
    }
  }
  // The first name of each shared inode carries the content; the others are links of it.
  const firstName = new Map<number, string>()
  for (const p of plan) {
    if (!p.current) continue
    const id = p.current.type === 'file' ? p.current.link : undefined
    p.entries.push(entryOf(overlay, p.current, id === undefined ? undefined : firstName.get(id)))
    if (id !== undefined && !firstName.has(id)) firstName.set(id, p.path)
  }
  return plan.filter((p) => p.entries.length > 0 || p.desired === 'absent')
}

function entryOf(overlay: Overlay, entry: Entry, link?: string): FlushEntry {
  const meta = overlay.meta(entry)
  if (entry.type === 'dir') return { path: entry.path, kind: 'dir', mode: meta.mode, mtimeMs: meta.mtimeMs }
  if (entry.type === 'symlink') return { path: entry.path, kind: 'symlink', target: flushedTarget(overlay, entry.path, overlay.readLink(entry)) }
  const file = { path: entry.path, kind: 'file', mode: meta.mode, mtimeMs: meta.mtimeMs, content: overlay.readBytes(entry) } as const
  return link === undefined ? file : { ...file, link }
}

/**
 * A symlink's target as a flush writes it. The workspace reads an absolute target from its own
 * root, which a target knows only as a path of the host: one that names what the workspace holds
 * (`ln -s $PWD/src/a.js` in a command, read back as /src/a.js) is written relative to the link,
 * which means the same there. Any other stays as it is, for the target to take or refuse (a
 * directory refuses).
 */
function flushedTarget(overlay: Overlay, path: string, target: string): string {
  if (!target.startsWith('/') || overlay.lookup(target, true) === undefined) return target
  return relative(dirname(path), normalize(target)) || '.'
}

/** Whether what a target holds now (undefined: nothing) is what was recorded (null: nothing). */
function holds(recorded: string | null, now: string | undefined): boolean {
  return recorded === null ? now === undefined : now !== undefined && versionHolds(recorded, now)
}

/** What conflictsOf compares: the version recorded for each path it can tell (`expected`), and the directories the plan deletes or replaces. */
function expectations(
  host: FlushHost,
  plan: readonly Planned[],
  own: boolean,
  recordedAt: (path: string) => string | null | false,
  expected: Map<string, string | null>,
  replaced: Set<string>,
): void {
  for (const p of plan) {
    const recorded = recordedAt(p.path)
    if (recorded !== false) expected.set(p.path, recorded)
    else {
      // Never read itself: below a directory the workspace saw absent nothing was there, so anything
      // there now is someone else's; below one it deleted or made anew, what changed on disk since
      // is (changedSince: not the directory's own version, which a flush's temps staged in it move).
      for (let dir = dirname(p.path); dir !== '/'; dir = dirname(dir)) {
        const above = recordedAt(dir)
        if (above === false) continue
        if (above === null) expected.set(p.path, null)
        else if (own) {
          const taken = exact(host.overlay, dir)
          if (!taken || taken.lowerPath === null) replaced.add(dir)
        }
        break
      }
    }
    if (own && kindOf(p.base) === 'dir' && (p.desired === 'absent' || kindOf(p.desired) !== 'dir' || p.current?.lowerPath === null)) replaced.add(p.path)
  }
}

/**
 * The plan's paths changed in the target since the workspace read them or we last wrote them.
 * `staged`: checked again once the target has staged the plan, whose temps moved the versions of
 * the directories they sit in: then only files and symlinks (and what changed under a tree the
 * plan deletes) are compared.
 */
async function conflictsOf(host: FlushHost, target: FlushTarget, plan: readonly Planned[], staged = false): Promise<string[]> {
  const ledger = host.book.ledger(target.id)
  const own = isOwnLower(host, target)
  /** What the target held at `path` when we last wrote it or first read it: a version, null for nothing, false when unknown. */
  const recordedAt = (path: string): string | null | false => {
    const recorded = ledger.get(path)
    if (recorded) return recorded.version
    if (!own) return false // a target we never wrote: nothing to compare with
    // What the workspace showed when it first changed the path; else what it first saw there.
    const seen = host.overlay.bases.get(path) ?? host.overlay.observed.get(path)
    if (seen !== undefined) return seen === ABSENT ? null : seen
    return false
  }
  const expected = new Map<string, string | null>()
  /** Directories the plan deletes or replaces, whose trees on disk are checked for changes made since (changedSince). */
  const replaced = new Set<string>()
  host.overlay.lookingOnly(() => expectations(host, plan, own, recordedAt, expected, replaced))
  const leaves = staged ? new Set(plan.filter((p) => kindOf(p.base) !== 'dir' && kindOf(p.desired) !== 'dir').map((p) => p.path)) : undefined
  const checked = leaves ? [...expected.keys()].filter((path) => leaves.has(path)) : [...expected.keys()]
  const now = checked.length > 0 ? await target.versions(checked) : []
  const conflicts = new Set(checked.filter((path, i) => !holds(expected.get(path)!, now[i])))
  // A tree the workspace deleted or replaced without reading it all: what changed on disk under it
  // since the workspace took it away (an edit, a file added deeper down) is someone else's work.
  if (typeof target.changedSince === 'function') {
    // A directory the workspace renamed (E showing D's entries) takes what is on disk under D with it.
    const carried = new Set(plan.flatMap((p) => (p.current?.type === 'dir' && p.current.node !== undefined && p.current.lowerPath !== null && p.current.lowerPath !== p.path ? [p.current.lowerPath] : [])))
    for (const path of replaced) {
      if (underAny(path, replaced) || carried.has(path)) continue
      const taken = host.replacedAt?.(path)
      if (taken === undefined) continue
      // What this flush's target last got from us there is known: only later changes count.
      let since = taken
      for (let at = path; ; at = dirname(at)) {
        since = Math.max(since, ledger.get(at)?.at ?? 0)
        if (at === '/') break
      }
      for (const changed of await target.changedSince(path, since)) conflicts.add(changed)
    }
  }
  return [...conflicts].sort()
}

/**
 * The paths we flushed into `target` that the plan leaves alone (the workspace shows what we wrote)
 * and that changed there since: a file or symlink whose version moved, a directory that went, an
 * entry we deleted that is there again. A directory's own version moves with every name added in
 * it, so only its going counts. One version query per path of the ledger.
 */
async function changedSinceFlushed(host: FlushHost, target: FlushTarget, plan: readonly Planned[]): Promise<string[]> {
  const planned = new Set(plan.map((p) => p.path))
  const ledger = host.book.ledger(target.id)
  const paths = [...ledger.keys()].filter((path) => !planned.has(path)).sort()
  if (paths.length === 0) return []
  const now = await target.versions(paths)
  return paths.filter((path, i) => {
    const { sig, version } = ledger.get(path)!
    if (kindOf(sig) === 'dir') return now[i] === undefined
    return !holds(version, now[i])
  })
}

async function applyPlan(host: FlushHost, target: FlushTarget, plan: readonly Planned[], options: FlushOptions): Promise<AppliedNotes | undefined> {
  if (plan.length === 0) return undefined
  const stored: BlobId[] = []
  if (isOwnLower(host, target)) {
    // Write-ahead: the old state is in the blob store (and durable) before the source changes.
    for (const p of plan) stored.push(...(await host.lower.pin(p.path)))
  }
  // What the target holds now, so recovery can tell an apply that committed from one that did not.
  const before = await target.versions(plan.map((p) => p.path))
  host.book.pending.set(target.id, plan.map((p, i) => [p.path, p.desired, before[i] ?? null]))
  await host.persist(stored)
  const entries = plan.flatMap((p) => p.entries)
  const onProgress = options.onProgress
  // Checked again once everything is staged, just before the commit point: a save made on disk
  // while the new contents were written and synced is a conflict too, and nothing is changed.
  let late: FlushReport['conflicts'] = []
  const beforeCommit = async () => {
    late = (await conflictsOf(host, target, plan, true)).map((path) => ({ target: target.id, path }))
    if (late.length > 0 && !options.force) throw conflictError(late, false)
  }
  let versions: (string | undefined)[] & AppliedNotes
  try {
    versions = await target.apply(entries, onProgress ? (progress) => onProgress({ ...progress, target: target.id }) : undefined, beforeCommit)
  } catch (error) {
    if (late.length > 0 && !options.force) {
      // Refused before the commit point: the target holds what it held, and recovery must not take
      // a version moved by that save for one this flush wrote.
      host.book.pending.delete(target.id)
      await host.persist([])
    }
    throw error
  }
  const ledger = host.book.ledger(target.id)
  const byPath = new Map<string, string | null>()
  entries.forEach((entry, i) => byPath.set(entry.path, versions[i] ?? null))
  for (const p of plan) {
    if (p.desired === 'absent') {
      for (const [path, recorded] of ledger) if (path.startsWith(p.path + '/')) ledger.set(path, { ...recorded, sig: 'absent', version: null })
    }
    ledger.set(p.path, { sig: p.desired, version: byPath.get(p.path) ?? null, by: host.session, at: writtenBy() })
  }
  await recordParents(host, target, plan.map((p) => p.path))
  host.book.pending.delete(target.id)
  await host.persist([])
  return versions
}

/**
 * The directories a flush of `paths` wrote into moved (their mtime, their ctime) by its own hand:
 * their versions now are the base a later flush compares with, or writing into or deleting one
 * would be a conflict with nobody. After an apply, and after a recovery finds one committed.
 */
async function recordParents(host: FlushHost, target: FlushTarget, paths: readonly string[]): Promise<void> {
  const ledger = host.book.ledger(target.id)
  const own = isOwnLower(host, target)
  const written = new Set(paths)
  const parents = [...new Set(paths.map((path) => dirname(path)))].filter((dir) => !written.has(dir) && (ledger.has(dir) || (own && host.overlay.observed.has(dir))))
  const moved = parents.length > 0 ? await target.versions(parents) : []
  parents.forEach((dir, i) => {
    const entry = host.overlay.lookingOnly(() => exact(host.overlay, dir))
    if (entry?.type === 'dir' && moved[i] !== undefined) ledger.set(dir, { sig: signature(host.overlay, entry), version: moved[i]!, by: host.session, at: writtenBy() })
  })
}

/** Puts a canary target back to what it held before: the inverse of its plan. */
async function rollBack(host: FlushHost, target: FlushTarget, plan: readonly Planned[]): Promise<void> {
  const base = new Overlay(host.lower, host.overlay.blobs, host.overlay.inodes)
  const ledger = host.book.ledger(target.id)
  // What the target held before this flush: the plan's bases (the ledger already has the new state).
  const before = new Map(plan.map((p) => [p.path, p.base]))
  const entries: FlushEntry[] = []
  const restored = new Set<string>()
  const restoreTree = (path: string, sig: string) => {
    if (restored.has(path)) return
    restored.add(path)
    const kind = kindOf(sig)
    const file = parseFileSignature(sig)
    if (file) {
      entries.push({ path, kind: 'file', mode: file.mode, mtimeMs: file.mtimeMs ?? Date.now(), content: host.overlay.blobs.get(file.blob) })
      return
    }
    if (kind === 'symlink') {
      entries.push({ path, kind: 'symlink', target: sig.slice(2) })
      return
    }
    const entry = exact(base, path)
    if (!entry || entry.type !== kind) return
    entries.push(entryOf(base, entry))
    if (entry.type !== 'dir') return
    for (const name of base.names(entry)) {
      const child = join(path, name)
      restoreTree(child, before.get(child) ?? ledger.get(child)?.sig ?? signature(base, base.child(entry, name)))
    }
  }
  // Take away what the flush created or retyped, then put back what was there.
  const deleted = new Set<string>()
  for (const p of plan) {
    if (p.desired === 'absent' || (p.base !== 'absent' && !replaces(p)) || underAny(p.path, deleted)) continue
    entries.push({ path: p.path, kind: 'delete' })
    deleted.add(p.path)
  }
  for (const p of plan) if (p.base !== 'absent') restoreTree(p.path, p.base)
  await target.apply(entries)
  for (const p of plan) ledger.delete(p.path)
  await host.persist([])
}
