/**
 * Repair of a damaged store, asked for explicitly (`ws.repair()`, `rewindfs repair`): open only
 * reports damage and never changes a damaged store. Repair rebuilds the workspace from what the
 * journal proves — with `salvage`, also from the group commits after the damage that still apply,
 * found by their record numbers even when lines were duplicated or reordered — keeps the old
 * journal aside, and switches to a fresh one atomically. What it could not keep is reported.
 */
import type { BlobId } from '../blob/store.js'
import type { Durability, StoreDamage } from './durability.js'
import { type Group, type RecordBody, decodeJournal, decodeLine, journalOffset } from './persistence.js'
import { LOWER_KEY, type Store } from './store.js'

export interface RepairOptions {
  /**
   * Also keep the group commits after the damage whose records still apply to the rebuilt state
   * (the directories, operations and checkpoints they refer to are there). Without it the journal
   * ends at the damage; either way the old journal is kept aside whole.
   */
  salvage?: boolean
  /** Work out and report what would be kept and lost; change nothing. */
  dryRun?: boolean
}

/** Journal records repair did not keep: lines `first`..`last` (0-based) and why. */
export type LostRecords = {
  first: number
  last: number
  /** Byte offset of `first` in the journal. */
  offset: number
  reason: string
}

export interface RepairReport {
  /** Whether the store was changed (false: nothing was damaged, or a dry run). */
  repaired: boolean
  /** The damage found when the store was opened. */
  damage: StoreDamage[]
  /** The name the old journal is kept aside under (Store.keptAside lists it). */
  keptAside?: string
  kept: {
    /** Group commits in the fresh journal's state, and the records they held. */
    groups: number
    records: number
    operations: number
    checkpoints: number
    /** Of those, group commits after the damage that salvage kept. */
    salvaged: number
  }
  lost: LostRecords[]
  /** Metadata set aside (and rewritten, for the lower source's name). */
  meta: { key: string; keptAs: string; rewritten: boolean }[]
  /** Blobs that failed their checksum: kept in the store as they are; what needs them stays unreadable. */
  corruptBlobs: BlobId[]
  /**
   * Damaged bytes the store's scrub found (Store.scrub: records nothing reads any more among them,
   * a failing disk's sign), set aside so the store holds none: `keptAs` names the kept copy (none in
   * a dry run). A content they held was unreadable already; nothing readable is lost.
   */
  damagedBytes: { id: string; reason: string; keptAs?: string }[]
}

interface Candidate {
  readonly group: Group
  /** Journal lines of its records, in record order. */
  readonly lines: number[]
}

export async function repair(durability: Durability, options: RepairOptions & { lowerId?: string }): Promise<RepairReport> {
  const { store } = durability
  const damage = [...durability.damage]
  const report: RepairReport = {
    repaired: false,
    damage,
    kept: { groups: 0, records: 0, operations: 0, checkpoints: 0, salvaged: 0 },
    lost: [],
    meta: [],
    corruptBlobs: [...durability.corrupt],
    damagedBytes: [],
  }
  // The scrub the verify before a repair ran (session-store.ts), else one now.
  const findings = durability.integrity.lastScrub ?? (store.scrub ? await store.scrub() : [])
  if (damage.length === 0 && findings.length === 0) return report
  if (durability.readOnly && !options.dryRun) throw Object.assign(new Error(`rewindfs: the ${store.kind} store is open read-only; repair needs the writer's lock`), { code: 'EROFS' })
  for (const finding of findings) report.damagedBytes.push({ id: finding.id, reason: finding.reason })
  if (damage.length === 0) {
    // Damaged bytes alone: the journal and metadata are whole, so nothing is rebuilt.
    if (options.dryRun) return report
    await setAsideDamagedBytes(store, report)
    report.repaired = true
    return report
  }
  if (durability.pending > 0) {
    throw Object.assign(new Error(`rewindfs: the workspace changed after it was opened on the damaged store (${durability.pending} record(s) only in memory); repair rebuilds it from the store: close it, reopen and repair first`), { code: 'EBUSY' })
  }
  const read = await store.readJournal()
  // A torn tail open left alone (the store was damaged) goes with the rest.
  const untidy = read.torn !== undefined || decodeJournal({ records: read.records }).tail > 0
  const journalDamaged = damage.some((d) => d.part === 'journal') || untidy
  if (journalDamaged) {
    const plan = options.salvage ? numberedPlan(read.records) : positionalPlan(read.records)
    report.lost.push(...plan.lost)
    if (read.torn !== undefined) {
      const at = read.records.length
      report.lost.push({ first: at, last: at, offset: journalOffset(read.records, at), reason: 'torn: an append a crash cut short, never acknowledged' })
    }
    const accepted: Candidate[] = []
    durability.resetHost()
    for (const candidate of plan.candidates) {
      const { failed } = durability.replay([candidate.group])
      if (!failed) {
        accepted.push(candidate)
        continue
      }
      const line = candidate.lines[failed.body]
      report.lost.push({
        first: candidate.lines[0],
        last: candidate.lines[candidate.lines.length - 1],
        offset: journalOffset(read.records, candidate.lines[0]),
        reason: `its record ${line} cannot be applied: ${failed.error.replace(/^rewindfs: /, '')}`,
      })
      // Rebuild without it: the group may have been applied half-way.
      durability.resetHost()
      durability.replay(accepted.map((c) => c.group))
    }
    const damagedAt = Math.min(...damage.map((d) => d.record ?? Number.POSITIVE_INFINITY))
    for (const candidate of accepted) {
      report.kept.groups++
      report.kept.records += candidate.lines.length
      report.kept.operations += candidate.group.bodies.filter((b) => b.t === 'op').length
      report.kept.checkpoints += candidate.group.bodies.filter((b) => b.t === 'checkpoint').length
      if (candidate.lines[candidate.lines.length - 1] > damagedAt) report.kept.salvaged++
    }
    report.lost.sort((a, b) => a.first - b.first)
    if (options.dryRun) {
      // Back to what open proved.
      durability.resetHost()
      durability.replay(decodeJournal(read).groups)
      return report
    }
  }
  if (options.dryRun) return report
  for (const entry of damage) {
    if (entry.part !== 'meta' || entry.key === undefined) continue
    const keptAs = await store.setAside({ meta: entry.key }, 'damaged')
    const rewritten = entry.key === LOWER_KEY && options.lowerId !== undefined
    if (rewritten) await store.putMeta(LOWER_KEY, options.lowerId!)
    report.meta.push({ key: entry.key, keptAs, rewritten })
  }
  durability.checkIntegrity()
  if (journalDamaged) report.keptAside = await durability.rewrite('damaged')
  else durability.clearDamage()
  // After the rewrite, whose copy of the old journal keeps damage within it as it was.
  await setAsideDamagedBytes(store, report)
  report.repaired = true
  return report
}

/**
 * The scrub's damaged bytes set aside (kept, under names keptAside lists), so the store holds none.
 * Bytes that can no longer be set aside (their segment collected meanwhile) stay listed without
 * `keptAs`: a later verify shows what is left.
 */
async function setAsideDamagedBytes(store: Store, report: RepairReport): Promise<void> {
  for (const entry of report.damagedBytes) {
    try {
      entry.keptAs = await store.setAside({ blob: entry.id }, 'damaged')
    } catch {
      // Reported without keptAs.
    }
  }
}

/** Without salvage: the whole group commits before the first damage; everything from it on is lost. */
function positionalPlan(records: readonly string[]): { candidates: Candidate[]; lost: LostRecords[] } {
  const decoded = decodeJournal({ records }, 'schema')
  const candidates = decoded.groups.map((group) => ({ group, lines: range(group.start, group.end) }))
  const lost: LostRecords[] = []
  if (decoded.proven < records.length) {
    const reason = decoded.damage ? `from the damage on (record ${decoded.damage.record}: ${decoded.damage.reason}); repair with salvage to keep what still applies` : 'never acknowledged (no commit marker follows)'
    lost.push({ first: decoded.proven, last: records.length - 1, offset: journalOffset(records, decoded.proven), reason })
  }
  return { candidates, lost }
}

/**
 * With salvage: every intact record by its number, so duplicated and reordered lines fall back
 * into place. A number no intact record has loses the group commit around it (the missing record
 * may have been any of it, its commit marker included); records after the last commit marker
 * were never acknowledged, unless a record after them could not be read (their marker, maybe).
 */
function numberedPlan(records: readonly string[]): { candidates: Candidate[]; lost: LostRecords[] } {
  const lost: LostRecords[] = []
  const byNumber = new Map<number, { line: number; text: string; body: RecordBody }>()
  const unreadable: number[] = []
  const one = (line: number, reason: string) => lost.push({ first: line, last: line, offset: journalOffset(records, line), reason })
  for (let line = 0; line < records.length; line++) {
    const verdict = decodeLine(records[line], 'schema')
    if (!verdict.ok) {
      unreadable.push(line)
      one(line, verdict.reason)
      continue
    }
    const n = verdict.n ?? line
    const known = byNumber.get(n)
    if (known === undefined) byNumber.set(n, { line, text: records[line], body: verdict.body })
    else one(line, known.text === records[line] ? `a duplicate of record ${n} (line ${known.line}), dropped` : `a second, different record numbered ${n} (line ${known.line} kept)`)
  }
  const candidates: Candidate[] = []
  let bodies: RecordBody[] = []
  let lines: number[] = []
  let gap: number | undefined
  let from = 0
  let expected = 0
  for (const n of [...byNumber.keys()].sort((a, b) => a - b)) {
    const entry = byNumber.get(n)!
    if (n > expected) gap ??= expected
    expected = n + 1
    lines.push(entry.line)
    if (entry.body.t !== 'commit') {
      bodies.push(entry.body)
      continue
    }
    if (gap !== undefined) {
      const reason = `in a group commit (records ${from}..${n}) that lost record ${gap}`
      for (const line of lines) one(line, reason)
    } else {
      candidates.push({ group: { start: lines[0], end: entry.line, bodies }, lines })
    }
    bodies = []
    lines = []
    gap = undefined
    from = n + 1
  }
  // After them, a record that could not be read may have been their commit marker: then they were
  // acknowledged, and only the damage says why they are lost.
  const tail = lines.length > 0 && unreadable.some((line) => line > lines[0]) ? 'no readable commit marker follows (a damaged record after it may have been its marker: acknowledged, then)' : 'never acknowledged (no commit marker follows)'
  for (const line of lines) one(line, tail)
  return { candidates, lost }
}

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i)
}
