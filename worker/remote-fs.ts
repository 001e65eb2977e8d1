/**
 * fs.promises on the page's side: each member sends one call and rebuilds its answer (Buffers,
 * Stats, Dirents, Node-shaped errors).
 */
import type { AsyncFs, AsyncFsMember } from '../src/async-workspace.js'
import { fsMembers } from './constants.js'
import { decodeValue } from './values.js'

/** `transfer: true` hands the data's buffer to the worker (it is detached here) instead of copying it. */
export interface TransferOption {
  transfer?: boolean
}

type WriteData = Uint8Array
type WriteOptions = TransferOption & { encoding?: null; mode?: number; flag?: string }

/** Node's fs.promises subset, plus `{ transfer: true }` on writes of bytes. */
export type WorkerFs = AsyncFs & {
  readonly promises: WorkerFs
  writeFile(file: string, data: WriteData, options: WriteOptions): Promise<void>
  appendFile(file: string, data: WriteData, options: WriteOptions): Promise<void>
}

/** Strips `transfer: true` from a write's options and lists the buffer to hand over. */
function transferable(op: AsyncFsMember, args: readonly unknown[], transfers: Transferable[]): readonly unknown[] {
  if (op !== 'writeFile' && op !== 'appendFile') return args
  const options = args[2]
  if (typeof options !== 'object' || options === null || !('transfer' in options)) return args
  const { transfer, ...rest } = options as TransferOption
  if (transfer && ArrayBuffer.isView(args[1])) transfers.push(args[1].buffer as ArrayBuffer)
  return [args[0], args[1], rest, ...args.slice(3)]
}

/** A batch packs contents anyway: `transfer` is only taken out of the options. */
export function withoutTransfer(op: AsyncFsMember, args: readonly unknown[]): readonly unknown[] {
  return transferable(op, args, [])
}

export function createWorkerFs(send: (call: { op: AsyncFsMember; args: readonly unknown[] }, transfers: Transferable[]) => Promise<unknown>): WorkerFs {
  const fs: Record<string, unknown> = {}
  for (const op of fsMembers) {
    fs[op] = async (...args: unknown[]) => {
      const transfers: Transferable[] = []
      return decodeValue(await send({ op, args: transferable(op, args, transfers) }, transfers))
    }
  }
  fs.promises = fs
  return fs as unknown as WorkerFs
}
