/**
 * What the promise API's readFile, writeFile and appendFile (and a FileHandle's) do before the call
 * itself, as Node's do: an aborted `signal` rejects with AbortError, and the data to write may be
 * an iterable or async iterable (a Readable too) of strings and bytes, not only a string or bytes.
 */
import { type Encoding, concatBytes, isEncoding } from '../bytes.js'
import { typeError } from '../errors.js'
import { dataArgument, describeReceived } from './arguments.js'

/** Node's AbortError: name 'AbortError', code 'ABORT_ERR', the signal's reason as its cause. */
export function abortError(signal: AbortSignal | undefined): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal?.reason }), { name: 'AbortError', code: 'ABORT_ERR' })
}

/** The `signal` option, checked as Node's validateAbortSignal does; undefined when there is none. */
export function signalOption(options: unknown): AbortSignal | undefined {
  if (typeof options !== 'object' || options === null) return undefined
  const signal = (options as { signal?: unknown }).signal
  if (signal === undefined) return undefined
  if (typeof signal !== 'object' || signal === null || typeof (signal as AbortSignal).aborted !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.signal" property must be an instance of AbortSignal.${describeReceived(signal)}`)
  }
  return signal as AbortSignal
}

/** Whether Node takes `data` as chunks to write: iterable, not a string or bytes. */
export function isChunks(data: unknown): data is Iterable<unknown> | AsyncIterable<unknown> {
  if (typeof data !== 'object' || data === null || ArrayBuffer.isView(data)) return false
  return typeof (data as Iterable<unknown>)[Symbol.iterator] === 'function' || typeof (data as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function'
}

/** A chunk's bytes as Node's Buffer.from makes them: a string, bytes, an ArrayBuffer, an array-like of byte values. */
function chunkBytes(chunk: unknown, encoding: Encoding): Uint8Array {
  // A copy: a chunk's memory may be the producer's to use again.
  if (typeof chunk === 'string' || ArrayBuffer.isView(chunk)) return dataArgument(chunk, encoding, 'data').slice()
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk.slice(0))
  if (typeof chunk === 'object' && chunk !== null && typeof (chunk as ArrayLike<unknown>).length === 'number') {
    return Uint8Array.from(Array.from(chunk as ArrayLike<unknown>, (value) => Number(value) & 255))
  }
  throw typeError(
    'ERR_INVALID_ARG_TYPE',
    `The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.${describeReceived(chunk)}`,
  )
}

/** The encoding writeFile's options give chunks that are strings (UTF-8 when none). */
function chunkEncoding(options: unknown): Encoding {
  const encoding = typeof options === 'string' ? options : typeof options === 'object' && options !== null ? (options as { encoding?: unknown }).encoding : undefined
  return isEncoding(encoding) ? encoding : 'utf8'
}

/**
 * The chunks of `data`, joined, read until it ends. Node writes each chunk as it comes, so a
 * failure (the iterable's, or the signal's between chunks) leaves the chunks before it written:
 * `partial` then writes those (its own error, the file's, comes first, as Node's open does) and
 * the failure is thrown.
 */
export async function collectChunks(
  data: Iterable<unknown> | AsyncIterable<unknown>,
  options: unknown,
  signal: AbortSignal | undefined,
  partial: (bytes: Uint8Array) => void,
): Promise<Uint8Array> {
  const encoding = chunkEncoding(options)
  const chunks: Uint8Array[] = []
  try {
    for await (const chunk of data as AsyncIterable<unknown>) {
      if (signal?.aborted) throw abortError(signal)
      chunks.push(chunkBytes(chunk, encoding))
    }
  } catch (failure) {
    partial(concatBytes(chunks))
    throw failure
  }
  return concatBytes(chunks)
}
