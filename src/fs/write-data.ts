/**
 * What the promise API's readFile, writeFile and appendFile (and a FileHandle's) check before the
 * call itself, as Node's do: an aborted `signal` rejects with AbortError, and the data to write may
 * be an iterable or async iterable (a Readable too) of chunks, which ./async-forms.ts reads.
 */
import { typeError } from '../errors.js'
import { describeReceived } from './arguments.js'

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
