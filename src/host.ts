/**
 * What the host offers at run time. src/ never imports `node:` modules (it must bundle for the
 * browser); where Node is present its builtins are reached through `process.getBuiltinModule`.
 */

interface HostProcess {
  getBuiltinModule?: (id: string) => unknown
}

const hostProcess = (globalThis as { process?: HostProcess }).process

/** A Node builtin when running on Node ≥ 20.16, otherwise undefined. */
export function builtin<T>(id: string): T | undefined {
  try {
    return hostProcess?.getBuiltinModule?.(id) as T | undefined
  } catch {
    return undefined
  }
}

/** Node's Buffer constructor where the host has one. */
export interface HostBufferConstructor {
  from(data: ArrayBufferLike, byteOffset?: number, length?: number): Uint8Array
  from(data: Uint8Array | readonly number[]): Uint8Array
  from(data: string, encoding?: string): Uint8Array
  isEncoding(encoding: string): boolean
  byteLength(data: string, encoding?: string): number
  allocUnsafe(size: number): Uint8Array
}

export const HostBuffer = (globalThis as { Buffer?: HostBufferConstructor }).Buffer
