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
    const findings: readonly ScrubFinding[] = durability.store.scrub ? await durability.store.scrub() : []
    this.lastScrub = findings
    if (findings.length === 0) return report
    const reasons = new Map(findings.map((finding) => [finding.id, finding.reason]))
    this.say([...reasons.keys()], (fresh) => `a scrub of everything the ${durability.store.kind} store holds found damaged bytes: ${fresh.map((id) => reasons.get(id)).join('; ')}`)
    const corrupt = [...new Set([...report.corrupt, ...reasons.keys()])]
    return { ...report, corrupt, damagedPaths: durability.pathsHolding(new Set(corrupt)) }
  }

  /** A check's report: the damaged blobs not said before, said. */
  private reported(report: IntegrityReport): IntegrityReport {
    this.say(report.corrupt, (fresh) => `${fresh.length} blob(s) in the ${this.durability.store.kind} store did not match their checksums and were dropped; broken checkpoints: ${report.broken.join(', ') || 'none'}`)
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
