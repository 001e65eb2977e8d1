/**
 * IndexedDB failures as fs-shaped errors, so callers branch on `code` as they would for a disk:
 * a full quota is ENOSPC, a blocked upgrade or a held writer lock EBUSY, a read-only instance
 * EROFS, a record that is not what we wrote EIO. The browser's own error stays as `cause`.
 */
import { type ErrnoCode, FsError } from 'rewindfs/adapter-kit'

function withCause(error: FsError, cause: unknown): FsError {
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true })
  return error
}

export function indexedDbError(code: ErrnoCode, operation: string, name: string, detail: string, cause?: unknown): FsError {
  return withCause(new FsError(code, operation, name, undefined, detail), cause)
}

export function readOnlyError(operation: string, name: string): FsError {
  return indexedDbError('EROFS', operation, name, `the IndexedDB store is open read-only (another tab holds the writer lock, or readOnly was asked for)`)
}

export function blockedError(name: string): FsError {
  return indexedDbError('EBUSY', 'open', name, 'the database upgrade is blocked: another tab keeps an older version open; close it and retry')
}

export function deletedError(name: string): FsError {
  return indexedDbError(
    'ENOENT',
    'open',
    name,
    "the IndexedDB database was deleted while it was open (another tab removed it, or the site's data was cleared); nothing more is written to it",
  )
}

export function corruptError(operation: string, key: string, problem: string): FsError {
  return indexedDbError('EIO', operation, key, `the IndexedDB record is not what rewindfs wrote: ${problem}`)
}

/** Turns whatever a transaction rejected with into a clear, coded error (fs errors pass through). */
export function translate(error: unknown, operation: string, name: string): Error {
  const dom = error as { name?: unknown; message?: unknown; code?: unknown } | null
  // Ours (fs errors, argument errors) pass through; a DOMException's numeric code does not count.
  if (error instanceof Error && typeof dom?.code === 'string') return error
  if (dom?.name === 'QuotaExceededError') {
    return indexedDbError('ENOSPC', operation, name, "the browser's storage quota for this origin is exhausted (QuotaExceededError); the last committed state is intact", error)
  }
  // An aborted transaction rejects with its `error`, which is null when it was aborted on purpose.
  const message = typeof dom?.message === 'string' && dom.message !== '' ? dom.message : 'the transaction was aborted'
  const kind = typeof dom?.name === 'string' ? `${dom.name}: ` : ''
  return indexedDbError('EIO', operation, name, `IndexedDB failed (${kind}${message}); nothing of this call was written`, error)
}
