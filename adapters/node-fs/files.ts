/**
 * Durable file primitives: a file is written to a temp name next to its final one, fsynced, then
 * renamed into place, and the directory is fsynced so the rename itself survives a power cut.
 */
import fs from 'node:fs'
import { codeOf } from './confine.js'

let counter = 0

/** A temp name in the same directory (same file system, so the rename is atomic). */
export function tempName(host: string): string {
  return `${host}.tmp-${process.pid}-${(counter++).toString(36)}`
}

export function isTempName(name: string): boolean {
  return /\.tmp-\d+-[0-9a-z]+$/.test(name)
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
