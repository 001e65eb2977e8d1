/**
 * Blob integrity as the workspace reports it: the background check of checksums that open
 * starts, damage a read on demand finds (said at once), and `ws.verify()` — every blob checked,
 * then the store's scrub. Each damaged blob is said once, in a warning and an alert, whichever
 * found it first. It comes with the durable journal (Durability.integrity), so a workspace without
 * a store never loads it.
 */
import type { BlobId } from '../blob/store.js'
import { INODES, recordIn, tableOf } from '../layer/inodes.js'
import type { DirNode, UpperNode } from '../layer/nodes.js'
import { mapEntries } from '../layer/persistent-map.js'
import type { Durability, IntegrityReport } from './durability.js'
import type { ScrubFinding } from './store.js'

/** The paths of `root`'s tree whose content is one of `ids` (a hard link's name by its inode's), sorted: O(upper tree), only asked when something is damaged. */
export function pathsHolding(root: DirNode, ids: ReadonlySet<BlobId>): string[] {
  if (ids.size === 0) return []
  const table = tableOf(root)
  const out: string[] = []
  const walk = (dir: DirNode, path: string) => {
    for (const [name, node] of mapEntries<UpperNode>(dir.children)) {
      if (dir === root && name === INODES) continue
      const at = path === '/' ? `/${name}` : `${path}/${name}`
      const file = node.type === 'link' ? recordIn(table, node.id) : node
      if (file?.type === 'file' && ids.has(file.blob)) out.push(at)
      else if (node.type === 'dir') walk(node, at)
    }
  }
  walk(root, '/')
  return out.sort()
}

/** What open says of contents the store does not hold: how many, the live paths that read as EIO, and that the rest is history's. */
function missingMessage(durability: Durability, ids: readonly string[]): string {
  const paths = durability.pathsHolding(new Set(ids))
  const shown = paths.length > 10 ? [...paths.slice(0, 10), `and ${paths.length - 10} more`] : paths
  const where = paths.length > 0 ? `the live tree's ${shown.join(', ')} ${paths.length === 1 ? 'reads' : 'read'} as EIO` : 'only the kept history needs them'
  return (
    `${ids.length} content(s) the workspace refers to ${ids.length === 1 ? 'is' : 'are'} missing from the ${durability.store.kind} store (removed from it outside rewindfs): ${where}; ` +
    `ws.verify() lists them as corrupt, and writing the same content again stores it`
  )
}

/** Where what is found goes: the workspace's warnings, and its alerts. */
export interface IntegritySink {
  warn(message: string): void
  alert(message: string): void
}

export class IntegrityWatch {
  /** Damaged blobs said already (by a read, a check or a scrub). */
  private readonly told = new Set<string>()
  /** The background check open starts. */
  private check: Promise<IntegrityReport> | undefined
  private sink: IntegritySink | undefined
  /** What the store's scrub found when verify() last ran it (repair sets these bytes aside without reading every segment again). */
  lastScrub: readonly ScrubFinding[] | undefined

  constructor(private readonly durability: Durability) {}

  /** From open on: checks the store's blobs in the background and says what it, or a read, finds damaged. */
  watch(sink: IntegritySink): void {
    const { durability } = this
    this.sink = sink
    // Blobs open could not read are in its warnings already: an alert now, and not said again by the check.
    const unreadable = durability.unreadableOnOpen.filter((id) => !this.told.has(id))
    if (unreadable.length > 0) {
      for (const id of unreadable) this.told.add(id)
      sink.alert(`${unreadable.length} blob(s) in the ${durability.store.kind} store cannot be read (ws.status.warnings says why); what needs them reads as EIO, and they are kept in the store`)
    }
    // Contents open found missing from the store: said now, before the background check lists them.
    this.say(durability.missingContents(), (fresh) => missingMessage(durability, fresh))
    this.check = durability.verify().then((report) => this.reported(report))
    // On demand, each content is checked when it is read: damage found then is said at once.
    durability.onDamagedBlob = (id) => {
      this.told.add(id)
      const message = `blob ${id} in the ${durability.store.kind} store cannot be read or does not match its checksum; what needs it reads as EIO (its bytes stay in the store)`
      sink.warn(message)
      queueMicrotask(() => {
        durability.checkIntegrity()
        sink.alert(message)
      })
    }
  }

  /**
   * Waits for the background check; on demand, reads and checks every blob the store holds (none
   * kept in memory); then the store's scrub (bytes no read reaches: dead records, segment headers),
   * whose findings are listed as corrupt under the ids the store lists such damage as.
   */
  async verify(): Promise<IntegrityReport> {
    const { durability } = this
    let report = (await this.check) ?? { verified: 0, corrupt: [], broken: [], damagedPaths: [] }
    if (durability.onDemand) report = this.reported(await durability.verify(undefined, { stored: true }))
    else {
      // The open's check reported once; contents missing from the store are listed as they are now (written again since, or not).
      const corrupt = durability.currentCorrupt(report.corrupt)
      if (corrupt.length !== report.corrupt.length || corrupt.some((id, i) => id !== report.corrupt[i])) report = { ...report, corrupt, damagedPaths: durability.pathsHolding(new Set(corrupt)) }
    }
    const findings: readonly ScrubFinding[] = durability.store.scrub ? await durability.store.scrub() : []
    this.lastScrub = findings
    if (findings.length === 0) return report
    const reasons = new Map(findings.map((finding) => [finding.id, finding.reason]))
    this.say([...reasons.keys()], (fresh) => `a scrub of everything the ${durability.store.kind} store holds found damaged bytes: ${fresh.map((id) => reasons.get(id)).join('; ')}`)
    const corrupt = [...new Set([...report.corrupt, ...reasons.keys()])]
    return { ...report, corrupt, damagedPaths: durability.pathsHolding(new Set(corrupt)) }
  }

  /** A check's report: the damaged blobs not said before, said; contents missing from the store (found on demand by the check) as such. */
  private reported(report: IntegrityReport): IntegrityReport {
    const { durability } = this
    const missing = new Set(durability.missingContents())
    this.say(
      report.corrupt.filter((id) => !missing.has(id)),
      (fresh) => `${fresh.length} blob(s) in the ${durability.store.kind} store did not match their checksums and were dropped; broken checkpoints: ${report.broken.join(', ') || 'none'}`,
    )
    this.say([...missing], (fresh) => missingMessage(durability, fresh))
    return report
  }

  /** Says the ids not said before, once, in a warning and an alert. */
  private say(ids: readonly string[], message: (fresh: string[]) => string): void {
    const fresh = ids.filter((id) => !this.told.has(id))
    if (fresh.length === 0) return
    for (const id of fresh) this.told.add(id)
    const text = message(fresh)
    this.sink?.warn(text)
    this.sink?.alert(text)
  }
}
