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
export function chunkEncoding(options: unknown): Encoding {
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

/** What a Blob's read of a file it may not read rejects with, as Node's does. */
function notReadable(): DOMException {
  return new DOMException('The blob could not be read', 'NotReadableError')
}

/**
 * openAsBlob's Blob of a file it could not read when it was opened (mode 000, a directory): as
 * Node's, it has the file's size and reads the file when it is read, failing then with
 * NotReadableError, or giving the bytes if the file may be read by then (see FsOperations.openAsBlob).
 * Its bytes are not the Blob's own (those are empty): what reads a Blob's bytes without its methods
 * (new Response(blob), structuredClone) sees none.
 */
export class FileBlob extends Blob {
  readonly #read: () => Uint8Array
  readonly #type: string
  readonly #start: number
  readonly #end: number

  constructor(read: () => Uint8Array, size: number, type: string, start = 0, end = size) {
    super([])
    this.#read = read
    this.#type = type
    this.#start = start
    this.#end = end
  }

  override get size(): number {
    return this.#end - this.#start
  }

  /** openAsBlob's type as given (Node does not lowercase it, as the Blob constructor does). */
  override get type(): string {
    return this.#type
  }

  #bytes(): Uint8Array<ArrayBuffer> {
    let all: Uint8Array
    try {
      all = this.#read()
    } catch {
      throw notReadable()
    }
    return all.slice(this.#start, this.#end) as Uint8Array<ArrayBuffer>
  }

  override async text(): Promise<string> {
    return new TextDecoder().decode(this.#bytes())
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    return this.#bytes().buffer
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return this.#bytes()
  }

  /** Blob.slice's arithmetic (negative from the end, clamped), over this Blob's part of the file. */
  override slice(start?: number, end?: number, type?: string): Blob {
    const size = this.size
    const at = (value: number | undefined, fallback: number) => {
      if (value === undefined) return fallback
      const whole = Math.trunc(Number(value)) || 0
      return whole < 0 ? Math.max(size + whole, 0) : Math.min(whole, size)
    }
    const from = at(start, 0)
    const to = Math.max(at(end, size), from)
    // A slice's type as Blob makes it: lowercased, or '' with a character outside U+0020–U+007E.
    return new FileBlob(this.#read, 0, type === undefined ? '' : new Blob([], { type: String(type) }).type, this.#start + from, this.#start + to)
  }

  override stream(): ReadableStream<Uint8Array<ArrayBuffer>> {
    return new ReadableStream<Uint8Array<ArrayBuffer>>({
      pull: (controller) => {
        try {
          controller.enqueue(this.#bytes())
          controller.close()
        } catch (error) {
          controller.error(error)
        }
      },
    })
  }
}
