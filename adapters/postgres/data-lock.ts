/**
 * One PGlite per data directory. PGlite is a whole Postgres server in this process with no lock of
 * its own on its files: a second instance on the same directory (another process, or a second
 * store of this one) writes the same heap and WAL files behind the first one's back, and commits
 * both acknowledged are lost. So a store or fleet opening PGlite on a directory first takes a lock
 * file in it (rewindfs/adapter-kit/node's LockFile, naming its pid and host); anyone else gets EBUSY
 * until it is closed. A lock whose process is gone (a crash, SIGKILL, or a predecessor that had this
 * pid) is stale and taken over. Directories only in Node: PGlite's other places (idb://, memory://)
 * are not files, and the Node modules are loaded only for a directory.
 */
import { storeError } from './errors.js'

/** The lock file's name inside the data directory (Postgres ignores files it does not know). */
export const LOCK_NAME = 'rewindfs.lock'

/** A path PGlite keeps on the file system, in Node; undefined for its other places. */
function fileDirectory(dataDir: string): string | undefined {
  if (typeof process === 'undefined' || typeof process.versions?.node !== 'string') return undefined
  if (dataDir.startsWith('file://')) return dataDir.slice('file://'.length)
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(dataDir) ? undefined : dataDir
}

export interface DataDirLock {
  release(): void
  /** Bytes free to this process on the directory's file system, or undefined when that cannot be told. */
  free(): number | undefined
}

/**
 * Takes the lock on a PGlite data directory (made if missing), or throws EBUSY naming the process
 * that holds it. Resolves to undefined where there is nothing to lock (not a directory, not Node).
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock | undefined> {
  const directory = fileDirectory(dataDir)
  if (directory === undefined) return undefined
  const fs = await import('node:fs')
  const path = await import('node:path')
  const { LockFile } = await import('rewindfs/adapter-kit/node')
  // Pids are per machine (per container): a lock taken elsewhere on a shared volume cannot be checked here.
  const host = (await import('node:os')).hostname()
  const root = path.resolve(directory)
  const file = path.join(root, LOCK_NAME)
  // mkdir of a path that is a file says EEXIST: say what is wrong with it instead.
  if (fs.statSync(root, { throwIfNoEntry: false })?.isDirectory() === false) {
    throw storeError('ENOTDIR', 'open', root, 'the PGlite data directory is a file, not a directory')
  }
  fs.mkdirSync(root, { recursive: true })
  const taken = LockFile.tryAcquire(file, { host, predecessors: true })
  if ('lock' in taken) {
    const { lock } = taken
    return {
      release: () => lock.release(),
      free: () => {
        try {
          const stats = fs.statfsSync(root)
          return stats.bavail * stats.bsize
        } catch {
          return undefined
        }
      },
    }
  }
  const owner = taken.owner
  if (owner.host !== undefined && owner.host !== host) {
    throw busy(root, file, `process ${owner.pid} on ${owner.host} (a lock taken on another machine or container cannot be checked from here)`)
  }
  if (owner.pid === process.pid) throw busy(root, file, 'this process (another store or fleet opened it; pass one PGlite instance to both as `db`)')
  throw busy(root, file, `process ${owner.pid || 'unknown'}`)
}

function busy(root: string, file: string, owner: string): Error {
  return storeError(
    'EBUSY',
    'open',
    root,
    `the PGlite data directory is in use by ${owner}: PGlite serves one process, and a second instance on its files loses commits (use a PostgreSQL server to share sessions between processes, or remove ${file} if that process is not a rewindfs one)`,
  )
}
