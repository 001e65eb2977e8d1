/**
 * One PGlite per data directory. PGlite is a whole Postgres server in this process with no lock of
 * its own on its files: a second instance on the same directory (another process, or a second
 * store of this one) writes the same heap and WAL files behind the first one's back, and commits
 * both acknowledged are lost. So a store or fleet opening PGlite on a directory first takes a lock
 * file in it holding its pid (created whole: written under a temp name, then hard-linked into
 * place, which fails if it exists); anyone else gets EBUSY until it is closed. A lock whose process
 * is gone (a crash, SIGKILL) is stale and taken over. Directories only in Node: PGlite's other
 * places (idb://, memory://) are not files.
 */
import { storeError } from './errors.js'

/** The lock file's name inside the data directory (Postgres ignores files it does not know). */
export const LOCK_NAME = 'rewindfs.lock'

type Fs = typeof import('node:fs')

/** The data directories this process holds a lock on (a lock naming our pid but missing here is a dead predecessor's). */
const held = new Set<string>()
let counter = 0

/** A path PGlite keeps on the file system, in Node; undefined for its other places. */
function fileDirectory(dataDir: string): string | undefined {
  if (typeof process === 'undefined' || typeof process.versions?.node !== 'string') return undefined
  if (dataDir.startsWith('file://')) return dataDir.slice('file://'.length)
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(dataDir) ? undefined : dataDir
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return codeOf(error) === 'EPERM'
  }
}

/**
 * The pid in a lock file (0 when it cannot be read as one) and the host it was taken on (when the
 * file names one); undefined when there is no file.
 */
function ownerOf(fs: Fs, file: string): { pid: number; host?: string } | undefined {
  try {
    const [first, host] = fs.readFileSync(file, 'utf8').split('\n')
    const pid = Number.parseInt(first, 10)
    return { pid: Number.isSafeInteger(pid) && pid > 0 ? pid : 0, ...(host ? { host } : {}) }
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  }
}

function removeIfPresent(fs: Fs, file: string): void {
  try {
    fs.unlinkSync(file)
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
}

export interface DataDirLock {
  release(): void
}

/**
 * Takes the lock on a PGlite data directory (made if missing), or throws EBUSY naming the process
 * that holds it. Resolves to undefined where there is nothing to lock (not a directory, not Node).
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock | undefined> {
  const directory = fileDirectory(dataDir)
  if (directory === undefined) return undefined
  const fs: Fs = await import('node:fs')
  const path = await import('node:path')
  // Pids are per machine (per container): a lock taken elsewhere on a shared volume cannot be checked here.
  const host = (await import('node:os')).hostname()
  const root = path.resolve(directory)
  const file = path.join(root, LOCK_NAME)
  // mkdir of a path that is a file says EEXIST: say what is wrong with it instead.
  if (fs.statSync(root, { throwIfNoEntry: false })?.isDirectory() === false) {
    throw storeError('ENOTDIR', 'open', root, 'the PGlite data directory is a file, not a directory')
  }
  fs.mkdirSync(root, { recursive: true })
  for (let attempt = 0; attempt < 5; attempt++) {
    const temp = `${file}.tmp-${process.pid}-${(counter++).toString(36)}`
    fs.writeFileSync(temp, `${process.pid}\n${host}\n`, { flag: 'wx' })
    try {
      fs.linkSync(temp, file)
      held.add(root)
      return lock(fs, root, file)
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
    } finally {
      removeIfPresent(fs, temp)
    }
    const owner = ownerOf(fs, file)
    if (owner === undefined) continue // released meanwhile: try again
    if (owner.host !== undefined && owner.host !== host) {
      throw busy(root, file, `process ${owner.pid} on ${owner.host} (a lock taken on another machine or container cannot be checked from here)`)
    }
    if (owner.pid === process.pid && held.has(root)) throw busy(root, file, 'this process (another store or fleet opened it; pass one PGlite instance to both as `db`)')
    if (owner.pid !== process.pid && owner.pid !== 0 && isAlive(owner.pid)) throw busy(root, file, `process ${owner.pid}`)
    takeOver(fs, file, owner.pid)
  }
  throw busy(root, file, `process ${ownerOf(fs, file)?.pid ?? 'unknown'}`)
}

function busy(root: string, file: string, owner: string): Error {
  return storeError(
    'EBUSY',
    'open',
    root,
    `the PGlite data directory is in use by ${owner}: PGlite serves one process, and a second instance on its files loses commits (use a PostgreSQL server to share sessions between processes, or remove ${file} if that process is not a rewindfs one)`,
  )
}

/** Moves a stale lock aside; a fresh one another process took over meanwhile is put back. */
function takeOver(fs: Fs, file: string, stale: number): void {
  const aside = `${file}.stale-${process.pid}-${(counter++).toString(36)}`
  try {
    fs.renameSync(file, aside)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return
    throw error
  }
  if (ownerOf(fs, aside)?.pid !== stale) {
    try {
      fs.linkSync(aside, file)
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
    }
  }
  removeIfPresent(fs, aside)
}

function lock(fs: Fs, root: string, file: string): DataDirLock {
  let released = false
  return {
    release: () => {
      if (released) return
      released = true
      held.delete(root)
      if (ownerOf(fs, file)?.pid === process.pid) removeIfPresent(fs, file)
    },
  }
}
