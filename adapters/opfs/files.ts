/**
 * The Origin Private File System as the OPFS store uses it: a store's directory
 * (`rewindfs/<name>/` under the origin's root), synchronous access handles opened with patience (the
 * previous writer's worker may still be letting go of them), whole small files written atomically
 * (a temp file made durable, then moved over the old one), and browser failures as fs-shaped errors.
 */
import { FsError, type ErrnoCode } from 'rewindfs/adapter-kit'

/** FileSystemSyncAccessHandle (dedicated workers only), as far as the store uses it. */
export interface SyncAccessHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number
  write(buffer: Uint8Array, options?: { at?: number }): number
  truncate(size: number): void
  getSize(): number
  flush(): void
  close(): void
}

interface SyncFileHandle extends FileSystemFileHandle {
  createSyncAccessHandle(): Promise<SyncAccessHandle>
  move(name: string): Promise<void>
}

interface ListableDirectory extends FileSystemDirectoryHandle {
  keys(): AsyncIterableIterator<string>
}

/** How long opening a sync access handle keeps trying while another context holds one (a writer's tab closing). */
const HANDLE_PATIENCE_MS = 10_000
const TOP = 'rewindfs'

function withCause(error: FsError, cause: unknown): FsError {
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true })
  return error
}

export function opfsError(code: ErrnoCode, operation: string, path: string, detail: string, cause?: unknown): FsError {
  return withCause(new FsError(code, operation, path, undefined, detail), cause)
}

function domName(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null)?.name
  return typeof name === 'string' ? name : undefined
}

export function isNotFound(error: unknown): boolean {
  return domName(error) === 'NotFoundError'
}

/** A browser failure as a coded error (ours pass through); what the browser said stays as `cause`. */
export function translate(error: unknown, operation: string, path: string): Error {
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') return error
  const message = error instanceof Error ? error.message : String(error)
  switch (domName(error)) {
    case 'QuotaExceededError':
      return opfsError('ENOSPC', operation, path, "the browser's storage quota for this origin is exhausted (QuotaExceededError); the last committed state is intact", error)
    case 'NoModificationAllowedError':
      return opfsError('EBUSY', operation, path, `another context holds this file open (${message})`, error)
    case 'NotFoundError':
      return opfsError('ENOENT', operation, path, `not found in the origin private file system (${message})`, error)
    case 'SecurityError':
    case 'NotAllowedError':
      return opfsError('EACCES', operation, path, `the origin private file system is not available here (${message}): a private window, or storage blocked for this site`, error)
    default:
      return opfsError('EIO', operation, path, `the origin private file system failed (${domName(error) ?? 'Error'}: ${message})`, error)
  }
}

/** A store name as one directory name: any string, '.' and '/' escaped. */
export function directoryName(name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E')
}

/** The origin's root directory. */
async function originRoot(name: string): Promise<FileSystemDirectoryHandle> {
  const storage = (globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } }).navigator?.storage
  if (typeof storage?.getDirectory !== 'function') {
    throw opfsError('ENOSYS', 'open', name, 'this context has no origin private file system (navigator.storage.getDirectory): run the OPFS store in a browser worker')
  }
  try {
    return await storage.getDirectory()
  } catch (error) {
    throw translate(error, 'open', name)
  }
}

/** The store's directory, made when `create`; undefined when it does not exist. */
export async function storeDirectory(name: string, create: boolean): Promise<FileSystemDirectoryHandle | undefined> {
  const root = await originRoot(name)
  try {
    const top = await root.getDirectoryHandle(TOP, { create })
    return await top.getDirectoryHandle(directoryName(name), { create })
  } catch (error) {
    if (isNotFound(error) && !create) return undefined
    throw translate(error, 'open', name)
  }
}

/**
 * Removes the store's directory and everything in it; false when there was none. A file another
 * context still holds (a worker that is closing) makes it try again for a while, then EBUSY.
 */
export async function removeStoreDirectory(name: string): Promise<boolean> {
  const top = await subdirectory(await originRoot(name), TOP, false)
  if (!top) return false
  const started = Date.now()
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    try {
      await (top as FileSystemDirectoryHandle & { removeEntry(name: string, options: { recursive: boolean }): Promise<void> }).removeEntry(directoryName(name), { recursive: true })
      return true
    } catch (error) {
      if (isNotFound(error)) return false
      if (domName(error) !== 'NoModificationAllowedError' || Date.now() - started > HANDLE_PATIENCE_MS) throw translate(error, 'rm', name)
    }
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

export async function subdirectory(parent: FileSystemDirectoryHandle, name: string, create: boolean): Promise<FileSystemDirectoryHandle | undefined> {
  try {
    return await parent.getDirectoryHandle(name, { create })
  } catch (error) {
    if (isNotFound(error) && !create) return undefined
    throw translate(error, 'open', name)
  }
}

export async function fileNames(directory: FileSystemDirectoryHandle): Promise<string[]> {
  const names: string[] = []
  for await (const name of (directory as ListableDirectory).keys()) names.push(name)
  return names
}

export async function fileHandle(directory: FileSystemDirectoryHandle, name: string, create = false): Promise<FileSystemFileHandle | undefined> {
  try {
    return await directory.getFileHandle(name, { create })
  } catch (error) {
    if (isNotFound(error) && !create) return undefined
    throw translate(error, 'open', name)
  }
}

/**
 * A sync access handle on `file`. Only one context may hold one per file: while another holds it
 * (a writer's tab that is closing lets go a moment after its lock), this tries again for a while,
 * then gives up with EBUSY.
 */
export async function openSyncHandle(file: FileSystemFileHandle): Promise<SyncAccessHandle> {
  const started = Date.now()
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    try {
      return await (file as SyncFileHandle).createSyncAccessHandle()
    } catch (error) {
      if (domName(error) !== 'NoModificationAllowedError' || Date.now() - started > HANDLE_PATIENCE_MS) throw translate(error, 'open', file.name)
    }
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

/** The whole content of a file, read without holding it (a follower's reads); undefined when absent. */
export async function readWhole(directory: FileSystemDirectoryHandle, name: string): Promise<Uint8Array | undefined> {
  try {
    const file = await directory.getFileHandle(name)
    return new Uint8Array(await (await file.getFile()).arrayBuffer())
  } catch (error) {
    if (isNotFound(error)) return undefined
    throw translate(error, 'read', name)
  }
}

/** Names of temp files (a write a crash cut short left them): never listed, removed by the writer. */
export function isTempName(name: string): boolean {
  return name.endsWith('.tmp')
}

/**
 * Replaces (or makes) `name` with `bytes` whole or not at all: written to a temp file and made
 * durable, then moved over the old one.
 */
export async function writeAtomically(directory: FileSystemDirectoryHandle, name: string, bytes: Uint8Array): Promise<void> {
  const temp = `${name}.tmp`
  try {
    const file = (await directory.getFileHandle(temp, { create: true })) as SyncFileHandle
    const handle = await openSyncHandle(file)
    try {
      handle.truncate(0)
      writeFully(handle, bytes, 0)
      handle.flush()
    } finally {
      handle.close()
    }
    await file.move(name)
  } catch (error) {
    await removeIfPresent(directory, temp).catch(() => undefined)
    throw translate(error, 'write', name)
  }
}

export async function removeIfPresent(directory: FileSystemDirectoryHandle, name: string): Promise<void> {
  try {
    await directory.removeEntry(name)
  } catch (error) {
    if (!isNotFound(error)) throw translate(error, 'unlink', name)
  }
}

/** base::File's FILE_ERROR_NO_SPACE (-8) as Chromium's write() returns it: an unsigned 32-bit count. */
const CHROMIUM_NO_SPACE = 2 ** 32 - 8

/** Writes every byte at `position` (a short write continues where it stopped). */
export function writeFully(handle: SyncAccessHandle, bytes: Uint8Array, position: number): void {
  for (let done = 0; done < bytes.length; ) {
    const wrote = handle.write(done === 0 ? bytes : bytes.subarray(done), { at: position + done })
    // Chromium does not throw when the quota runs out: it writes what fits and returns its error
    // code as a count larger than the bytes given. Taken as a count, the write would pass as whole.
    if (wrote > bytes.length - done) {
      if (wrote === CHROMIUM_NO_SPACE) throw new DOMException(`a sync access handle ran out of space at byte ${position + done}`, 'QuotaExceededError')
      throw opfsError('EIO', 'write', '', `a sync access handle failed at byte ${position + done} (it answered ${wrote} for ${bytes.length - done} bytes)`)
    }
    if (wrote <= 0) throw opfsError('EIO', 'write', '', `a sync access handle wrote nothing at byte ${position + done}`)
    done += wrote
  }
}

/** Reads `length` bytes at `position` (fewer where the file ends). */
export function readFully(handle: SyncAccessHandle, length: number, position: number): Uint8Array {
  const buffer = new Uint8Array(length)
  let done = 0
  while (done < length) {
    const read = handle.read(buffer.subarray(done), { at: position + done })
    if (read <= 0) break
    done += read
  }
  return done === length ? buffer : buffer.subarray(0, done)
}
