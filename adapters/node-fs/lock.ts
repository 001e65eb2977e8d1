/**
 * An exclusive lock file holding its owner's pid. It is created whole (written under a temp name,
 * then hard-linked into place, which fails if the lock exists), so a reader never sees a lock
 * without a pid. A lock whose pid is no longer alive is stale and taken over.
 */
import { hostFs as fs } from './host-fs.js'
import { FsError } from 'rewindfs/adapter-kit'
import { codeOf } from './confine.js'
import { removeIfPresent, tempName } from './files.js'

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return codeOf(error) === 'EPERM'
  }
}

function ownerOf(host: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(host, 'utf8'), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : 0
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  }
}

export class LockFile {
  private released = false

  private constructor(readonly host: string) {}

  /** Takes the lock, or undefined with the live owner's pid when another process (or this one) holds it. */
  static tryAcquire(host: string): { lock: LockFile } | { owner: number } {
    for (let attempt = 0; attempt < 5; attempt++) {
      const temp = tempName(host)
      fs.writeFileSync(temp, `${process.pid}\n`, { flag: 'wx' })
      try {
        fs.linkSync(temp, host)
        return { lock: new LockFile(host) }
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error
      } finally {
        removeIfPresent(temp)
      }
      const owner = ownerOf(host)
      if (owner === undefined) continue // released meanwhile: try again
      if (owner !== 0 && isAlive(owner)) return { owner }
      LockFile.takeOver(host, owner)
    }
    return { owner: ownerOf(host) ?? 0 }
  }

  /** Takes the lock or throws EBUSY naming the owner. */
  static acquire(host: string, what: string): LockFile {
    const result = LockFile.tryAcquire(host)
    if ('lock' in result) return result.lock
    const owner = result.owner === process.pid ? 'this process' : `process ${result.owner}`
    throw new FsError('EBUSY', 'open', host, undefined, `${what} is locked by ${owner} (lock file)`)
  }

  /**
   * Moves a stale lock aside; if what was moved turns out to be a fresh lock another process took
   * over meanwhile, it is put back.
   */
  private static takeOver(host: string, stale: number): void {
    const aside = tempName(host + '.stale')
    try {
      fs.renameSync(host, aside)
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return
      throw error
    }
    if (ownerOf(aside) !== stale) {
      try {
        fs.linkSync(aside, host)
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error
      }
    }
    removeIfPresent(aside)
  }

  /** Removes the lock if it is still this process's. */
  release(): void {
    if (this.released) return
    this.released = true
    if (ownerOf(this.host) === process.pid) removeIfPresent(this.host)
  }
}
