/**
 * PostgreSQL failures as Node-shaped errors, so callers branch on `code` as they would for a disk or
 * a socket: a refused or lost connection is ECONNREFUSED / ECONNRESET (as Node's net errors are),
 * failed authentication or a missing privilege EACCES, a missing database ENOENT, a full disk
 * ENOSPC, a read-only store EROFS, anything else EIO. What passes if tried again is EAGAIN: the
 * server out of connections or memory, starting up, a lock wait cut short, a serialization failure
 * or a deadlock. EBUSY is never made here: it means another writer holds the session (store.ts),
 * which retrying cannot change, and a reconnecting workspace gives up on it for good. The server's
 * own error stays as `cause`, its SQLSTATE as `sqlState`. Messages never show a password.
 */
import { type ErrnoCode, FsError } from 'rewindfs/adapter-kit'

/** A connection string with its password replaced, for messages. */
export function redact(connectionString: string): string {
  let text = connectionString
  try {
    // As pg reads it: the userinfo ends at the last '@' of the authority, so a password may hold '@'.
    const url = new URL(text)
    if (url.password !== '') {
      url.password = '***'
      text = url.toString()
    }
  } catch {
    // Not a URL: hide up to the last '@' there is (more than the password, never less).
    text = text.replace(/^(\w+:\/\/[^:/@]*:).*@/, '$1***@')
  }
  return text.replace(/([?&]password=)[^&]*/i, '$1***')
}

function withCause<E extends Error>(error: E, cause: unknown, sqlState?: string): E {
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true })
  if (sqlState !== undefined) Object.defineProperty(error, 'sqlState', { value: sqlState, enumerable: true, configurable: true })
  return error
}

export function storeError(code: ErrnoCode, operation: string, where: string, detail: string, cause?: unknown, sqlState?: string): FsError {
  return withCause(new FsError(code, operation, where, undefined, detail), cause, sqlState)
}

const SOCKET_ERRORS = {
  ECONNREFUSED: -111,
  ECONNRESET: -104,
  ETIMEDOUT: -110,
  EHOSTUNREACH: -113,
  ENOTFOUND: -3008,
} as const
type SocketCode = keyof typeof SOCKET_ERRORS

/** A socket-level failure shaped like Node's (`code`, negative `errno`, `syscall`, `address`). */
export function connectionError(code: SocketCode, syscall: string, where: string, detail: string, cause?: unknown, sqlState?: string): Error {
  const error = new Error(`${code}: ${detail}, ${syscall} '${where}'`)
  Object.assign(error, { errno: SOCKET_ERRORS[code], code, syscall, address: where })
  return withCause(error, cause, sqlState)
}

/** SQLSTATE classes and codes that mean the connection is gone (the server shut down or crashed). */
const LOST_STATES = new Set(['57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004'])

export function isConnectionLoss(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null
  if (typeof e?.code === 'string' && (LOST_STATES.has(e.code) || e.code === 'ECONNRESET' || e.code === 'EPIPE')) return true
  return typeof e?.message === 'string' && /Connection terminated|Client has encountered a connection error|not queryable/.test(e.message)
}

/** Whatever a query or connect rejected with, as a clear, coded error (ours pass through). */
export function translate(error: unknown, operation: string, where: string): Error {
  if (error instanceof FsError || (error instanceof Error && (error as { address?: unknown }).address === where)) return error
  const e = error as { code?: unknown; message?: unknown; severity?: unknown } | null
  const message = typeof e?.message === 'string' ? e.message : String(error)
  const code = typeof e?.code === 'string' ? e.code : undefined
  // Node's own socket errors: the server is not there.
  if (code === 'ECONNREFUSED' || code === 'ENOENT') {
    return connectionError('ECONNREFUSED', 'connect', where, `no PostgreSQL server accepts connections at ${where} (${message}); is it running, and is the host or socket directory right?`, error)
  }
  // The socket's file (or its directory) is not ours to open: a permission, not a server failure.
  if (code === 'EACCES' || code === 'EPERM') {
    return storeError('EACCES', 'connect', where, `the socket of PostgreSQL at ${where} cannot be opened by this user (${message})`, error)
  }
  if (code === 'ETIMEDOUT' || /timeout expired|timed out/i.test(message)) return connectionError('ETIMEDOUT', operation, where, `PostgreSQL at ${where} did not answer in time (${message})`, error)
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return connectionError('ENOTFOUND', 'connect', where, `the host in ${where} cannot be resolved (${message})`, error)
  if (code === 'EHOSTUNREACH') return connectionError('EHOSTUNREACH', 'connect', where, `the host in ${where} cannot be reached (${message})`, error)
  // At connect only: not a lost session, a server not ready yet (a restart, a promotion).
  if (code === '57P03') return storeError('EAGAIN', operation, where, `PostgreSQL accepts no connection yet (${message}): it is starting up, shutting down or recovering`, error, code)
  if (isConnectionLoss(error)) return connectionError('ECONNRESET', operation, where, `the connection to PostgreSQL was lost (${message}); what was acknowledged is in the database`, error)
  // A server error: its SQLSTATE says what it is.
  if (code !== undefined && /^[0-9A-Z]{5}$/.test(code)) {
    if (code === '28P01' || code === '28000') return storeError('EACCES', operation, where, `PostgreSQL refused the login (${message})`, error, code)
    if (code === '3D000') return storeError('ENOENT', operation, where, `${message}: create it first (createdb), or name another in the connection string`, error, code)
    if (code === '42501') return storeError('EACCES', operation, where, `PostgreSQL denied a privilege the store needs (${message}); see the README's Postgres section for the grants`, error, code)
    if (code === '53100') return storeError('ENOSPC', operation, where, `PostgreSQL's disk is full (${message}); the last committed state is intact`, error, code)
    // Class 53 but a full disk: the server is out of something that frees up (connection slots, memory).
    if (code === '53300' || code === '53400') return storeError('EAGAIN', operation, where, `PostgreSQL has no connection to spare (${message}); try again once one is free`, error, code)
    if (code === '53000' || code === '53200') return storeError('EAGAIN', operation, where, `PostgreSQL is short of resources (${message}); nothing of this call was written`, error, code)
    if (code === '40001' || code === '40P01') return storeError('EAGAIN', operation, where, `a concurrent transaction got in the way (${message}); nothing of this call was written`, error, code)
    // The server's limits on waiting (set for the role or database): nothing of the call was written.
    if (code === '55P03') return storeError('EAGAIN', operation, where, `PostgreSQL gave up waiting for a lock (${message}: lock_timeout); nothing of this call was written`, error, code)
    if (code === '57014' && /timeout/i.test(message)) {
      return connectionError('ETIMEDOUT', operation, where, `PostgreSQL cancelled the statement (${message}: statement_timeout is shorter than the store's statement took); nothing of this call was written`, error, code)
    }
    if (code === '25006') return storeError('EROFS', operation, where, `PostgreSQL is read-only here (${message})`, error, code)
    return storeError('EIO', operation, where, `PostgreSQL failed (${code}: ${message}); nothing of this call was written`, error, code)
  }
  if (error instanceof TypeError || error instanceof RangeError) return error
  return storeError('EIO', operation, where, `PostgreSQL failed (${message})`, error)
}
