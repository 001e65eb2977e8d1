/**
 * Durable file primitives: a file is written to a temp name next to its final one, fsynced, then
 * renamed into place, and the directory is fsynced so the rename itself survives a power cut.
 */
import { spawnSync } from 'node:child_process'
import { hostFs as fs } from './host-fs.js'
import { codeOf } from './confine.js'

let counter = 0

/** A temp name in the same directory (same file system, so the rename is atomic). */
export function tempName(host: string): string {
  return `${host}.tmp-${process.pid}-${(counter++).toString(36)}`
}

export function isTempName(name: string): boolean {
  return tempOwner(name) !== undefined
}

/** The pid of the process that made a temp name (tempName), or undefined for another name. */
export function tempOwner(name: string): number | undefined {
  const pid = /\.tmp-(\d+)-[0-9a-z]+$/.exec(name)?.[1]
  return pid === undefined ? undefined : Number(pid)
}

/** fsync of a directory: makes the names created, renamed or removed in it durable. */
export function syncDirectory(host: string): void {
  const fd = fs.openSync(host, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Writes `bytes` to `host` atomically: temp, fsync, rename, fsync of the directory. */
export function writeAtomically(host: string, bytes: Uint8Array | string, options: { syncDirectory?: boolean } = {}): void {
  const temp = tempName(host)
  const fd = fs.openSync(temp, 'wx', 0o644)
  try {
    fs.writeFileSync(fd, bytes)
    fs.fsyncSync(fd)
  } catch (error) {
    fs.closeSync(fd)
    fs.rmSync(temp, { force: true })
    throw error
  }
  fs.closeSync(fd)
  fs.renameSync(temp, host)
  if (options.syncDirectory !== false) syncDirectory(host.slice(0, host.lastIndexOf('/')) || '/')
}

/** The same, asynchronously, without the directory fsync: callers batch it once per directory. */
export async function writeDurably(host: string, bytes: Uint8Array | string): Promise<void> {
  const temp = tempName(host)
  const handle = await fs.promises.open(temp, 'wx', 0o644)
  try {
    await handle.writeFile(bytes)
    await handle.sync()
  } catch (error) {
    await handle.close()
    await fs.promises.rm(temp, { force: true })
    throw error
  }
  await handle.close()
  await fs.promises.rename(temp, host)
}

/** Runs `work` over `items` with at most `limit` in flight (fsyncs overlap in libuv's pool). */
export async function inParallel<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      await work(items[index], index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
}

/** unlink that treats a missing file as done (recovery steps are repeated after a crash). */
export function removeIfPresent(host: string): void {
  try {
    fs.unlinkSync(host)
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
}

let syncfsWorks: boolean | undefined

/**
 * syncfs(2) of the file systems holding `paths`, through coreutils' `sync -f` (Node has no
 * binding): one call makes every written file and directory entry on a file system durable, where
 * thousands of fsyncs would each wait for the disk. False when it is not available (not Linux, no
 * `sync -f`): the caller then fsyncs one by one. A failure after it once worked is an I/O error.
 */
export function syncFileSystems(paths: readonly string[]): boolean {
  if (syncfsWorks === false || process.platform !== 'linux' || paths.length === 0) return false
  const byDevice = new Map<number, string>()
  for (const path of paths) {
    const device = fs.statSync(path).dev
    if (!byDevice.has(device)) byDevice.set(device, path)
  }
  const result = spawnSync('sync', ['-f', ...byDevice.values()], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
  if (result.error === undefined && result.status === 0) return (syncfsWorks = true)
  if (syncfsWorks === undefined) return (syncfsWorks = false)
  throw Object.assign(new Error(`rewindfs: sync -f failed: ${result.error?.message ?? result.stderr.trim()}`), { code: 'EIO' })
}

/** Below this many files and directories, fsyncs one by one cost less than starting `sync -f`. */
const BATCH = 64

/** Makes written files and directory entries durable: by file system when there are many, else one by one. */
export async function makeDurable(files: readonly string[], directories: readonly string[]): Promise<void> {
  if (files.length + directories.length >= BATCH && syncFileSystems(directories)) return
  await inParallel(files, 16, async (file) => {
    const handle = await fs.promises.open(file, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  })
  for (const directory of directories) syncDirectory(directory)
}

/** The same for directories only, synchronously (recovery runs on open). */
export function makeDirectoriesDurable(directories: readonly string[]): void {
  if (directories.length >= BATCH && syncFileSystems(directories)) return
  for (const directory of directories) syncDirectory(directory)
}
