/**
 * Node's argument validation for fs calls, reproduced: the same error codes, classes and messages
 * (checked against node:fs in test/arguments.test.ts), so callers' error handling keeps working.
 */
import { type Encoding, decode, encode, isEncoding } from '../bytes.js'
import { FsError, rangeError, typeError } from '../errors.js'

/** Linux values, identical to Node's `fs.constants` there. */
export const constants = Object.freeze({
  UV_FS_SYMLINK_DIR: 1,
  UV_FS_SYMLINK_JUNCTION: 2,
  O_RDONLY: 0,
  O_WRONLY: 1,
  O_RDWR: 2,
  UV_DIRENT_UNKNOWN: 0,
  UV_DIRENT_FILE: 1,
  UV_DIRENT_DIR: 2,
  UV_DIRENT_LINK: 3,
  UV_DIRENT_FIFO: 4,
  UV_DIRENT_SOCKET: 5,
  UV_DIRENT_CHAR: 6,
  UV_DIRENT_BLOCK: 7,
  S_IFMT: 0o170000,
  S_IFREG: 0o100000,
  S_IFDIR: 0o040000,
  S_IFCHR: 0o020000,
  S_IFBLK: 0o060000,
  S_IFIFO: 0o010000,
  S_IFLNK: 0o120000,
  S_IFSOCK: 0o140000,
  O_CREAT: 0o100,
  O_EXCL: 0o200,
  UV_FS_O_FILEMAP: 0,
  O_NOCTTY: 0o400,
  O_TRUNC: 0o1000,
  O_APPEND: 0o2000,
  O_DIRECTORY: 0o200000,
  O_NOATIME: 0o1000000,
  O_NOFOLLOW: 0o400000,
  O_SYNC: 0o4010000,
  O_DSYNC: 0o10000,
  O_DIRECT: 0o40000,
  O_NONBLOCK: 0o4000,
  S_IRWXU: 0o700,
  S_IRUSR: 0o400,
  S_IWUSR: 0o200,
  S_IXUSR: 0o100,
  S_IRWXG: 0o70,
  S_IRGRP: 0o40,
  S_IWGRP: 0o20,
  S_IXGRP: 0o10,
  S_IRWXO: 0o7,
  S_IROTH: 0o4,
  S_IWOTH: 0o2,
  S_IXOTH: 0o1,
  F_OK: 0,
  R_OK: 4,
  W_OK: 2,
  X_OK: 1,
  UV_FS_COPYFILE_EXCL: 1,
  COPYFILE_EXCL: 1,
  UV_FS_COPYFILE_FICLONE: 2,
  COPYFILE_FICLONE: 2,
  UV_FS_COPYFILE_FICLONE_FORCE: 4,
  COPYFILE_FICLONE_FORCE: 4,
})

/** Node's " Received …" suffix for invalid argument messages. */
export function describeReceived(value: unknown): string {
  if (value === undefined || value === null) return ` Received ${value}`
  if (typeof value === 'function') return ` Received function ${value.name}`
  if (typeof value === 'object') {
    const name = (value as { constructor?: { name?: string } }).constructor?.name
    return name ? ` Received an instance of ${name}` : ' Received [Object: null prototype]'
  }
  let shown = typeof value === 'string' ? quote(value.length > 28 ? value.slice(0, 25) + '...' : value) : String(value)
  if (typeof value === 'bigint') shown += 'n'
  return ` Received type ${typeof value} (${shown})`
}

function quote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\0/g, '\\x00')}'`
}

function invalidType(name: string, expected: string, value: unknown): Error {
  // Node says "property" for an option ('options.recursive'), "argument" otherwise.
  const what = name.includes(' ') ? name : `"${name}" ${name.includes('.') ? 'property' : 'argument'}`
  return typeError('ERR_INVALID_ARG_TYPE', `The ${what} must be ${expected}.${describeReceived(value)}`)
}

// A leading BOM is part of the name, not a marker to drop.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
/** The bytes as Node shows them in messages: U+FFFD where they do not decode. */
const display = new TextDecoder('utf-8', { ignoreBOM: true })

/**
 * A path as Node accepts it: string, Buffer/Uint8Array or file: URL; no NUL bytes. Bytes that are
 * not UTF-8 are refused with EINVAL naming `syscall`, before anything happens: a workspace name
 * is a string, and decoded with U+FFFD, distinct names ('a\xff', 'a\xfe') would be one file. A
 * file: URL whose escapes are not UTF-8 throws Node's own URIError.
 */
export function pathArgument(value: unknown, name: string, syscall: string): string {
  let path: string
  let bytes: Uint8Array | undefined
  if (typeof value === 'string') path = value
  else if (value instanceof Uint8Array) path = display.decode((bytes = value))
  else if (isUrl(value)) path = fileUrlToPath(value)
  else throw invalidType(name, 'of type string or an instance of Buffer or URL', value)
  if (path.includes('\0')) {
    throw typeError('ERR_INVALID_ARG_VALUE', `The argument '${name}' must be a string, Uint8Array, or URL without null bytes. Received ${quote(path)}`)
  }
  if (bytes !== undefined && path.includes('\uFFFD') && !isUtf8(bytes)) {
    throw new FsError('EINVAL', syscall, path, undefined, 'invalid argument: a workspace name must be UTF-8')
  }
  return path
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    decoder.decode(bytes)
    return true
  } catch {
    return false
  }
}

function isUrl(value: unknown): value is URL {
  return typeof value === 'object' && value !== null && typeof (value as URL).href === 'string' && typeof (value as URL).protocol === 'string'
}

function fileUrlToPath(url: URL): string {
  if (url.protocol !== 'file:') throw typeError('ERR_INVALID_URL_SCHEME', 'The URL must be of scheme file')
  if (url.hostname !== '' && url.hostname !== 'localhost') {
    throw typeError('ERR_INVALID_FILE_URL_HOST', 'File URL host must be "localhost" or empty on linux')
  }
  if (/%2f/i.test(url.pathname)) throw typeError('ERR_INVALID_FILE_URL_PATH', 'File URL path must not include encoded / characters')
  return decodeURIComponent(url.pathname)
}

/**
 * The file offset libuv is given: a safe integer from 0 up, else -1, the descriptor's own position
 * (what Node's C++ makes of a negative, fractional, bigint or non-number position for writes).
 */
export function fileOffset(position: unknown): number | null {
  return typeof position === 'number' && Number.isSafeInteger(position) && position >= 0 ? position : null
}

/**
 * access and copyFile's mode as Node 20 checks it (in C++): left out or null is `fallback`; else
 * a number, cut to an int32, from 0 to 7 (1.5 is 1).
 */
export function accessModeArgument(mode: unknown, fallback: number): number {
  if (mode === undefined || mode === null) return fallback
  if (typeof mode !== 'number') throw typeError('ERR_INVALID_ARG_TYPE', 'mode must be int32 or null/undefined')
  const bits = mode | 0
  if (bits < 0 || bits > 7) throw rangeError('ERR_OUT_OF_RANGE', 'mode is out of range: >= 0 && <= 7')
  return bits
}

/** An error with a Node error code (a TypeError unless `Base` says), for the codes only the fs surface raises. */
export function codedTypeError(
  code: 'ERR_INCOMPATIBLE_OPTION_PAIR' | 'ERR_INVALID_RETURN_VALUE' | 'ERR_FS_INVALID_SYMLINK_TYPE',
  message: string,
  Base: new (message: string) => Error = TypeError,
): Error {
  const error = new Base(message)
  Object.defineProperty(error, 'code', { value: code, enumerable: true, writable: true, configurable: true })
  return error
}

/** Node's ERR_INCOMPATIBLE_OPTION_PAIR: two options given that cannot go together. */
export function incompatibleOptions(first: string, second: string): Error {
  return codedTypeError('ERR_INCOMPATIBLE_OPTION_PAIR', `Option "${first}" cannot be used in combination with option "${second}"`)
}

export function validateFunction(value: unknown, name: string): asserts value is (...args: unknown[]) => unknown {
  if (typeof value !== 'function') throw invalidType(name, 'of type function', value)
}

export function validateBoolean(value: unknown, name: string): asserts value is boolean {
  if (typeof value !== 'boolean') throw invalidType(name, 'of type boolean', value)
}

export function validateObject(value: unknown, name: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidType(name, 'of type object', value)
}

export function validateInteger(value: unknown, name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  if (!Number.isInteger(value)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be an integer. Received ${value}`)
  }
  if (value < min || value > max) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be >= ${min} && <= ${max}. Received ${formatNumber(value)}`)
  }
  return value
}

/** Node prints large numbers with underscores: 4_294_967_296. */
function formatNumber(value: number): string {
  const text = String(value)
  if (Math.abs(value) < 2 ** 32) return text
  return text.replace(/\B(?=(\d{3})+(?!\d))/g, '_')
}

/** parseFileMode: a uint32 or an octal string; without a fallback (chmod, fchmod) the mode is required. */
export function modeArgument(value: unknown, name: string, fallback?: number): number {
  if (value === undefined || value === null) {
    if (fallback !== undefined) return fallback
    value = undefined // Node's `value ??= fallback`: a null mode is reported as undefined
  }
  if (typeof value === 'string') {
    if (!/^[0-7]+$/.test(value)) {
      throw typeError('ERR_INVALID_ARG_VALUE', `The argument '${name}' must be a 32-bit unsigned integer or an octal string. Received ${quote(value)}`)
    }
    return parseInt(value, 8)
  }
  return validateInteger(value, name, 0, 4294967295)
}

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_SYNC } = constants
const flagTable: Record<string, number> = {
  r: O_RDONLY,
  rs: O_RDONLY | O_SYNC,
  sr: O_RDONLY | O_SYNC,
  'r+': O_RDWR,
  'rs+': O_RDWR | O_SYNC,
  'sr+': O_RDWR | O_SYNC,
  w: O_TRUNC | O_CREAT | O_WRONLY,
  wx: O_TRUNC | O_CREAT | O_WRONLY | O_EXCL,
  xw: O_TRUNC | O_CREAT | O_WRONLY | O_EXCL,
  'w+': O_TRUNC | O_CREAT | O_RDWR,
  'wx+': O_TRUNC | O_CREAT | O_RDWR | O_EXCL,
  'xw+': O_TRUNC | O_CREAT | O_RDWR | O_EXCL,
  a: O_APPEND | O_CREAT | O_WRONLY,
  ax: O_APPEND | O_CREAT | O_WRONLY | O_EXCL,
  xa: O_APPEND | O_CREAT | O_WRONLY | O_EXCL,
  as: O_APPEND | O_CREAT | O_WRONLY | O_SYNC,
  sa: O_APPEND | O_CREAT | O_WRONLY | O_SYNC,
  'a+': O_APPEND | O_CREAT | O_RDWR,
  'ax+': O_APPEND | O_CREAT | O_RDWR | O_EXCL,
  'xa+': O_APPEND | O_CREAT | O_RDWR | O_EXCL,
  'as+': O_APPEND | O_CREAT | O_RDWR | O_SYNC,
  'sa+': O_APPEND | O_CREAT | O_RDWR | O_SYNC,
}

/** stringToFlags: Node's flag strings or a number. */
export function flagsArgument(value: unknown, fallback = 'r'): number {
  if (value === undefined || value === null) return flagTable[fallback]
  if (typeof value === 'number') return value
  if (typeof value === 'string' && value in flagTable) return flagTable[value]
  throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'flags' is invalid. Received ${typeof value === 'string' ? quote(value) : String(value)}`)
}

/** The encoding from a string or `{ encoding }` options; 'buffer' and null mean bytes. */
export function encodingOption(options: unknown, fallback: Encoding | 'buffer' | null): Encoding | 'buffer' | null {
  let encoding: unknown = fallback
  if (typeof options === 'string') encoding = options
  else if (typeof options === 'object' && options !== null) {
    if ('encoding' in options) encoding = (options as { encoding?: unknown }).encoding ?? fallback
  } else if (options !== undefined && options !== null && typeof options !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be one of type string or object.${describeReceived(options)}`)
  }
  if (encoding === null || encoding === 'buffer') return encoding
  if (!isEncoding(encoding)) {
    throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'encoding' is invalid encoding. Received ${typeof encoding === 'string' ? quote(encoding) : String(encoding)}`)
  }
  return encoding
}

/** Node's Buffer error for an encoding it cannot encode or decode with ('buffer' names no text encoding). */
export function unknownEncoding(encoding: string): Error {
  return typeError('ERR_UNKNOWN_ENCODING', `Unknown encoding: ${encoding}`)
}

/**
 * readFile's text: Node reads the bytes, then decodes them with buffer.toString(encoding), which
 * takes no 'buffer' (the read happens first: a missing file is ENOENT whatever the encoding).
 */
export function decodeRead(bytes: Uint8Array, encoding: Encoding | 'buffer'): string {
  if (encoding === 'buffer') throw unknownEncoding(encoding)
  return decode(bytes, encoding)
}

/** writeFile's data: a string (encoded) or any ArrayBufferView (a view of its bytes, not a copy). */
export function dataArgument(data: unknown, encoding: Encoding | null | undefined, name = 'data'): Uint8Array {
  if (typeof data === 'string') return encode(data, encoding ?? 'utf8')
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
  throw invalidType(name, 'of type string or an instance of Buffer, TypedArray, or DataView', data)
}

/**
 * Node's toUnixTimestamp, in milliseconds as libuv stores it: a numeric string as it is, a
 * finite number (a negative one is now), a Date; anything else (NaN, ±Infinity) is refused, naming
 * `name` (utimes and lutimes say 'time' for either, futimes 'atime' or 'mtime'). libuv keeps whole
 * microseconds, cut toward zero, and takes an infinite time ('Infinity') as now.
 */
export function timeArgument(value: unknown, name: string): number {
  // Node's own test: the string equals its number loosely ('' and ' ' are 0).
  if (typeof value === 'string' && +value == (value as unknown as number)) return libuvTime(+value)
  if (typeof value === 'number' && Number.isFinite(value)) return value < 0 ? Date.now() : libuvTime(value)
  if (value instanceof Date) return libuvTime(value.getTime() / 1000)
  throw invalidType(name, 'an instance of Date or an Time in seconds', value)
}

/** Seconds as libuv's uv__fs_to_timespec sets them: whole microseconds, cut toward zero; infinite is now. */
function libuvTime(seconds: number): number {
  if (!Number.isFinite(seconds)) return Date.now()
  const whole = Math.trunc(seconds)
  let micros = Math.trunc(Math.trunc((seconds - whole) * 1e9) / 1000)
  let secondsPart = whole
  if (micros < 0) {
    micros += 1e6
    secondsPart -= 1
  }
  return secondsPart * 1000 + micros / 1000
}

