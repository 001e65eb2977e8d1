/**
 * What only the promise and callback forms use, loaded on their first use (surface.ts imports it
 * dynamically), so `import 'rewindfs'` does not carry it: FileHandle (fs.promises.open), the
 * chunks a promise writeFile takes, and the walk that awaits cp's filter. The sync API never needs
 * it: it cannot wait for a module.
 */
import type { Encoding, concatBytes, isEncoding } from '../bytes.js'
import type { FsError, typeError } from '../errors.js'
import type { builtin } from '../host.js'
import type { joinLexically } from '../path.js'
import type { dataArgument, describeReceived, fileOffset } from './arguments.js'
import type { FsOperations, cpArguments } from './operations.js'

/** cp's arguments as checked at the call. */
type CheckedCp = ReturnType<typeof cpArguments>
import type { abortError, isChunks, signalOption } from './write-data.js'

export { FileHandle } from './file-handle.js'

/**
 * The core's helpers this module and FileHandle use, handed over by the loader (surface.ts): were
 * they imported, esbuild would wrap each core module they come from in a lazy initialiser (to run
 * it before this one), split or not: 0.5 KiB min+gzip more loaded at import.
 */
export interface Kit {
  concatBytes: typeof concatBytes
  isEncoding: typeof isEncoding
  FsError: typeof FsError
  typeError: typeof typeError
  builtin: typeof builtin
  joinLexically: typeof joinLexically
  dataArgument: typeof dataArgument
  describeReceived: typeof describeReceived
  fileOffset: typeof fileOffset
  abortError: typeof abortError
  isChunks: typeof isChunks
  signalOption: typeof signalOption
  /** A zeroed buffer of the host's kind: a Buffer on Node, as Node's own reads allocate. */
  newBuffer: (size: number) => Uint8Array
}

export let kit: Kit

export function provide(given: Kit): void {
  kit = given
}

/** A chunk's bytes as Node's Buffer.from makes them: a string, bytes, an ArrayBuffer, an array-like of byte values. */
function chunkBytes(chunk: unknown, encoding: Encoding): Uint8Array {
  // A copy: a chunk's memory may be the producer's to use again.
  if (typeof chunk === 'string' || ArrayBuffer.isView(chunk)) return kit.dataArgument(chunk, encoding, 'data').slice()
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk.slice(0))
  if (typeof chunk === 'object' && chunk !== null && typeof (chunk as ArrayLike<unknown>).length === 'number') {
    return Uint8Array.from(Array.from(chunk as ArrayLike<unknown>, (value) => Number(value) & 255))
  }
  throw kit.typeError(
    'ERR_INVALID_ARG_TYPE',
    `The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.${kit.describeReceived(chunk)}`,
  )
}

/** The encoding writeFile's options give chunks that are strings (UTF-8 when none). */
function chunkEncoding(options: unknown): Encoding {
  const encoding = typeof options === 'string' ? options : typeof options === 'object' && options !== null ? (options as { encoding?: unknown }).encoding : undefined
  return kit.isEncoding(encoding) ? encoding : 'utf8'
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
      if (signal?.aborted) throw kit.abortError(signal)
      chunks.push(chunkBytes(chunk, encoding))
    }
  } catch (failure) {
    partial(kit.concatBytes(chunks))
    throw failure
  }
  return kit.concatBytes(chunks)
}

/**
 * cp's callback and promise forms await the filter, as Node's do. cp itself runs synchronously,
 * so the answers are gathered first: the filter is asked for every entry cp will reach (the source
 * walked as cp walks it: into directories the filter keeps), then cp runs with those answers.
 * `opts` and the paths were checked by the caller (argument errors are thrown at once).
 */
export async function cpFilterAnswers(ops: FsOperations, args: unknown[], checked: CheckedCp): Promise<unknown[]> {
  const { opts, src, dest } = checked
  const filter = opts.filter!
  const answers = new Map<string, boolean>()
  const key = (source: string, destination: string) => source + '\0' + destination
  const visit = async (source: string, destination: string, isTop: boolean): Promise<void> => {
    // At the top the filter gets the paths as Node's argument check leaves them (a Buffer stays one).
    const keep = Boolean(await (isTop ? filter(checked.filterSrc, checked.filterDest) : filter(source, destination)))
    answers.set(key(source, destination), keep)
    if (!keep || (isTop && !opts.recursive)) return
    let names: string[]
    try {
      if (!(opts.dereference ? ops.stat(source) : ops.lstat(source))!.isDirectory()) return
      names = ops.readdir(source) as string[]
    } catch {
      return // cp reports it
    }
    for (const name of names) await visit(kit.joinLexically(source, name), kit.joinLexically(destination, name), false)
  }
  await visit(src, dest, true)
  const top = answers.get(key(src, dest)) ?? true
  // cp asks again with the same paths: strings, but a Buffer where the caller gave one (only at the top).
  const answer = (source: unknown, destination: unknown) => (typeof source === 'string' && typeof destination === 'string' ? (answers.get(key(source, destination)) ?? true) : top)
  return [args[0], args[1], { ...opts, filter: answer }]
}
