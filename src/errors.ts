/**
 * Errors shaped exactly like Node's on Linux: the same `code`, negative `errno`, `syscall`,
 * `path`/`dest` and message format, so code written against node:fs handles ours unchanged.
 */

const descriptions = {
  EPERM: [1, 'operation not permitted'],
  ENOENT: [2, 'no such file or directory'],
  EIO: [5, 'i/o error'],
  EBADF: [9, 'bad file descriptor'],
  EAGAIN: [11, 'resource temporarily unavailable'],
  EACCES: [13, 'permission denied'],
  EBUSY: [16, 'resource busy or locked'],
  EEXIST: [17, 'file already exists'],
  EXDEV: [18, 'cross-device link not permitted'],
  ENOTDIR: [20, 'not a directory'],
  EISDIR: [21, 'illegal operation on a directory'],
  EINVAL: [22, 'invalid argument'],
  EMFILE: [24, 'too many open files'],
  EFBIG: [27, 'file too large'],
  ENOSPC: [28, 'no space left on device'],
  EROFS: [30, 'read-only file system'],
  ENAMETOOLONG: [36, 'name too long'],
  ENOSYS: [38, 'function not implemented'],
  ENOTEMPTY: [39, 'directory not empty'],
  ELOOP: [40, 'too many symbolic links encountered'],
} as const satisfies Record<string, readonly [number, string]>

export type ErrnoCode = keyof typeof descriptions

/** A system error as Node raises it from libuv: `ENOENT: no such file or directory, open '/a'`. */
export class FsError extends Error {
  declare readonly errno: number
  declare readonly code: ErrnoCode
  declare readonly syscall: string
  declare readonly path?: string
  declare readonly dest?: string

  constructor(code: ErrnoCode, syscall: string, path?: string, dest?: string, detail?: string) {
    const [errno, description] = descriptions[code]
    let message = `${code}: ${detail ?? description}, ${syscall}`
    if (path !== undefined) message += ` '${path}'`
    if (dest !== undefined) message += ` -> '${dest}'`
    super(message)
    // Own enumerable properties in Node's order, so inspection and JSON look the same.
    Object.assign(this, { errno: -errno, code, syscall })
    if (path !== undefined) Object.assign(this, { path })
    if (dest !== undefined) Object.assign(this, { dest })
  }
}
// Node's are plain Errors: util.inspect names the constructor where it differs ('FsError: ENOENT: …').
Object.defineProperty(FsError, 'name', { value: 'Error' })

/** Node's own codes that are not errno values (TypeError/RangeError/SystemError shaped). */
export type NodeErrorCode =
  | 'ERR_INVALID_ARG_TYPE'
  | 'ERR_INVALID_ARG_VALUE'
  | 'ERR_OUT_OF_RANGE'
  | 'ERR_FS_EISDIR'
  | 'ERR_FS_CP_EINVAL'
  | 'ERR_FS_CP_DIR_TO_NON_DIR'
  | 'ERR_FS_CP_NON_DIR_TO_DIR'
  | 'ERR_FS_CP_EEXIST'
  | 'ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY'
  | 'ERR_FS_CP_UNKNOWN'
  | 'ERR_DIR_CLOSED'
  | 'ERR_METHOD_NOT_IMPLEMENTED'
  | 'ERR_UNKNOWN_ENCODING'
  | 'ERR_FS_FILE_TOO_LARGE'
  | 'ERR_INVALID_URL_SCHEME'
  | 'ERR_INVALID_FILE_URL_HOST'
  | 'ERR_INVALID_FILE_URL_PATH'

export interface NodeError extends Error {
  readonly code: NodeErrorCode
}

/** Prototypes whose toString writes the code, as Node's: `TypeError [ERR_X]: message`. */
const coded = new Map<object, object>()

function codedPrototype(base: object): object {
  let prototype = coded.get(base)
  if (prototype === undefined) {
    prototype = Object.create(base, {
      toString: {
        value(this: Error & { code: string }) {
          return `${this.name} [${this.code}]: ${this.message}`
        },
        writable: true,
        configurable: true,
      },
    }) as object
    coded.set(base, prototype)
  }
  return prototype
}

function nodeError<E extends Error>(Base: new (message: string) => E, code: NodeErrorCode, message: string, name = Base.name): E & NodeError {
  const error = new Base(message) as E & { code: NodeErrorCode }
  Object.setPrototypeOf(error, codedPrototype(Base.prototype))
  // The stack's first line names the code too (it is written when first read): the name for that moment only.
  Object.defineProperty(error, 'name', { value: `${name} [${code}]`, writable: true, configurable: true })
  void error.stack
  if (name === Base.name) delete (error as { name?: string }).name
  else Object.defineProperty(error, 'name', { value: name, enumerable: false, writable: true, configurable: true })
  Object.defineProperty(error, 'code', { value: code, enumerable: true, writable: true, configurable: true })
  return error
}

export const typeError = (code: NodeErrorCode, message: string) => nodeError(TypeError, code, message)
export const rangeError = (code: NodeErrorCode, message: string) => nodeError(RangeError, code, message)
/** Node's plain coded Error (ERR_METHOD_NOT_IMPLEMENTED and the like), neither a TypeError nor a RangeError. */
export const codedError = (code: NodeErrorCode, message: string) => nodeError(Error, code, message)

/**
 * Node's SystemError, e.g. rm/cp on a directory without `recursive`:
 * `Path is a directory: rm returned EISDIR (is a directory) /a`.
 */
export function systemError(
  code: NodeErrorCode,
  prefix: string,
  errnoCode: ErrnoCode,
  syscall: string,
  path: string,
  detail?: string,
): Error & NodeError {
  const [errno, description] = descriptions[errnoCode]
  const message = `${prefix}: ${syscall} returned ${errnoCode} (${detail ?? description}) ${path}`
  const error = nodeError(Error, code, message, 'SystemError')
  const info = { errno, code: errnoCode, message: detail ?? description, path, syscall }
  Object.assign(error, { info, errno, syscall, path })
  return error
}

export function isFsError(value: unknown, code?: ErrnoCode): value is FsError {
  return value instanceof FsError && (code === undefined || value.code === code)
}
