/**
 * The worker's side of one fs (a workspace's, or a transaction's staged one): path calls,
 * FileHandle calls on its descriptors and Dir reads, each answered as an Outcome. Calls run by
 * their synchronous forms, the fastest path through the engine; contents an asynchronous lower
 * has not loaded yet are loaded and the call runs again. Dirs and descriptors opened here are
 * released with the server.
 */
import type { LowerSource } from '../src/lower/source.js'
import { isNotLoaded } from '../src/lower/source.js'
import type { FileMember } from './constants.js'
import { type FsCall, type FsMessage, type Outcome, badCall } from './protocol.js'
import { encodeValue, errorRecord } from './values.js'

type Run = (...args: unknown[]) => unknown
export type FsFunctions = Record<string, Run>

interface DirLike {
  readonly path: string
  readSync(): unknown
  closeSync(): void
}

/** Each path member's sync form by name, made once rather than per call. */
const syncName: Record<string, string> = {}
const syncOf = (op: string) => (syncName[op] ??= `${op}Sync`)

/** FileHandle methods by the descriptor call that runs them (appendFile on a descriptor is writeFile, as Node's). */
const descriptorCall: Record<FileMember, string> = {
  read: 'readSync',
  write: 'writeSync',
  readv: 'readvSync',
  writev: 'writevSync',
  readFile: 'readFileSync',
  writeFile: 'writeFileSync',
  appendFile: 'writeFileSync',
  stat: 'fstatSync',
  truncate: 'ftruncateSync',
  chmod: 'fchmodSync',
  chown: 'fchownSync',
  utimes: 'futimesSync',
  sync: 'fsyncSync',
  datasync: 'fdatasyncSync',
  close: 'closeSync',
}

/** A read's stand-in buffer is as big as the caller's: bounded by what a typed array can be. */
const MAX_BUFFER = 2 ** 32

/** Runs `body` synchronously if it can; `undefined` when it needs contents an asynchronous lower has not loaded. */
export function tryRun(body: () => unknown): Outcome | undefined {
  try {
    return { ok: true, value: body() }
  } catch (error) {
    return isNotLoaded(error) ? undefined : { ok: false, error: errorRecord(error) }
  }
}

/** Runs `body`; contents of an asynchronous lower load on demand (a call can name several: cp), then it runs again. */
export async function runLoading(lower: LowerSource, body: () => unknown): Promise<Outcome> {
  for (let loads = 0; ; loads++) {
    try {
      return { ok: true, value: body() }
    } catch (error) {
      if (!isNotLoaded(error) || !lower.prefetch || loads >= 64) return { ok: false, error: errorRecord(error) }
      await lower.prefetch([error.path])
    }
  }
}

/** A single call's answer: its value ready to post (contents as their own transferred buffer). */
export function encoded(outcome: Outcome, transfers: Transferable[]): Outcome {
  return outcome.ok ? { ok: true, value: encodeValue(outcome.value, transfers) } : outcome
}

/** The byte offset a read's data starts at in the caller's buffer (the arguments were valid: the read ran). */
function readOffset(offsetOrOptions: unknown): number {
  const offset = typeof offsetOrOptions === 'object' && offsetOrOptions !== null ? (offsetOrOptions as { offset?: unknown }).offset : offsetOrOptions
  return typeof offset === 'number' ? offset : 0
}

function isSize(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= MAX_BUFFER
}

export class FsServer {
  private readonly dirs = new Map<number, DirLike>()
  private readonly descriptors = new Set<number>()
  private nextDir = 1

  constructor(
    private readonly fs: FsFunctions,
    private readonly lower: LowerSource,
  ) {}

  /**
   * A call's sync form, where its answers are the async forms' too. Node 20's opendirSync names no
   * path in its errors and cpSync lists through it, where their callback and promise forms (what
   * the page calls) name it: those answer by their promise forms, as does lchmod, which has no sync form.
   */
  private syncForm(op: string): Run | undefined {
    return op === 'cp' ? undefined : this.fs[syncOf(op)]
  }

  /** A path call by its sync form, or by its promise form (syncForm says when). */
  runPath(call: FsCall): () => unknown {
    const run = this.syncForm(call.op)
    if (run) return () => run(...call.args)
    const promised = (this.fs.promises as unknown as FsFunctions | undefined)?.[call.op]
    return () => promised?.(...call.args)
  }

  async serve(message: FsMessage, transfers: Transferable[]): Promise<Outcome> {
    switch (message.t) {
      case 'fs': {
        const run = this.runPath(message)
        if (!this.syncForm(message.op)) return this.settled(run, transfers)
        return encoded(await runLoading(this.lower, run), transfers)
      }
      case 'file':
        return this.file(message, transfers)
      case 'dir':
        return this.dir(message, transfers)
    }
  }

  /** A member without a sync form runs by its promise form. */
  private async settled(run: () => unknown, transfers: Transferable[]): Promise<Outcome> {
    try {
      return encoded({ ok: true, value: await run() }, transfers)
    } catch (error) {
      return { ok: false, error: errorRecord(error) }
    }
  }

  private async file(message: Extract<FsMessage, { t: 'file' }>, transfers: Transferable[]): Promise<Outcome> {
    const { args } = message
    if (message.op === 'open') {
      const outcome = await runLoading(this.lower, () => this.fs.openSync(args[0], args[1] ?? 'r', args[2]))
      if (outcome.ok) this.descriptors.add(outcome.value as number)
      return outcome
    }
    const fd = message.fd!
    const run = this.fs[descriptorCall[message.op]]
    switch (message.op) {
      case 'read': {
        // The caller's buffer stays on its side: a stand-in of its size takes the read, and only the bytes read travel back.
        const [size, offset, length, position] = args
        // null: the caller's argument was no buffer, and follows; the read refuses it with Node's error.
        if (size === null) return runLoading(this.lower, () => run(fd, ...args.slice(1)))
        if (!isSize(size)) return { ok: false, error: badCall(`read: ${String(size)} is not a buffer size`) }
        const target = new Uint8Array(size)
        const outcome = await runLoading(this.lower, () => run(fd, target, offset, length, position))
        if (!outcome.ok) return outcome
        const bytesRead = outcome.value as number
        const start = readOffset(offset)
        const bytes = start === 0 && bytesRead === size ? target : target.slice(start, start + bytesRead)
        transfers.push(bytes.buffer)
        return { ok: true, value: { bytesRead, bytes } }
      }
      case 'readv': {
        const [sizes, position] = args
        if (sizes === null) return runLoading(this.lower, () => run(fd, ...args.slice(1)))
        if (!Array.isArray(sizes) || !sizes.every(isSize)) return { ok: false, error: badCall('readv: expected the sizes of the buffers') }
        const targets = sizes.map((size: number) => new Uint8Array(size))
        const outcome = await runLoading(this.lower, () => run(fd, targets, position))
        if (!outcome.ok) return outcome
        const bytesRead = outcome.value as number
        const bytes = new Uint8Array(bytesRead)
        let at = 0
        for (const target of targets) {
          if (at >= bytesRead) break
          const part = target.subarray(0, Math.min(target.byteLength, bytesRead - at))
          bytes.set(part, at)
          at += part.byteLength
        }
        transfers.push(bytes.buffer)
        return { ok: true, value: { bytesRead, bytes } }
      }
      case 'close': {
        const outcome = await runLoading(this.lower, () => run(fd))
        this.descriptors.delete(fd)
        return outcome
      }
      default:
        return encoded(await runLoading(this.lower, () => run(fd, ...args)), transfers)
    }
  }

  private async dir(message: Extract<FsMessage, { t: 'dir' }>, transfers: Transferable[]): Promise<Outcome> {
    if (message.op === 'open') {
      const args = message.args ?? []
      // By the promise form: its errors name the path, as the page's opendir does (syncForm says why).
      const opendir = (this.fs.promises as unknown as FsFunctions).opendir
      let dir: DirLike
      try {
        dir = (await opendir(...args)) as DirLike
      } catch (error) {
        return { ok: false, error: errorRecord(error) }
      }
      const id = this.nextDir++
      this.dirs.set(id, dir)
      return { ok: true, value: { id, path: dir.path } }
    }
    const dir = this.dirs.get(message.id!)
    if (!dir) return { ok: false, error: { name: 'Error', code: 'ERR_DIR_CLOSED', message: 'Directory handle was closed' } }
    if (message.op === 'close') {
      this.dirs.delete(message.id!)
      return encoded(await runLoading(this.lower, () => dir.closeSync()), transfers)
    }
    const count = message.count ?? 32
    return encoded(
      await runLoading(this.lower, () => {
        const entries: unknown[] = []
        for (let entry = dir.readSync(); entry !== null; entry = entries.length < count ? dir.readSync() : null) entries.push(entry)
        return entries
      }),
      transfers,
    )
  }

  /** Closes what was opened here and is still open (a transaction's staged fs ends with its body). */
  dispose(): void {
    for (const fd of this.descriptors) {
      try {
        this.fs.closeSync(fd)
      } catch {
        // Closed already by a call that failed after closing it.
      }
    }
    this.descriptors.clear()
    this.dirs.clear()
  }
}
