/**
 * Content hashing for the blob store. Synchronous, because the sync fs API stores blobs inline.
 * The host's native SHA-1 is used where present (Node's crypto through getBuiltinModule); a
 * 64-bit pure-JS hash elsewhere. Either way the store compares bytes on a match, so the hash only
 * has to be fast and well spread, not cryptographic.
 */
import { builtin } from '../host.js'

interface NodeHash {
  update(data: Uint8Array): NodeHash
  digest(encoding: 'hex' | 'base64'): string
  copy(): NodeHash
}

interface NodeCrypto {
  hash?: (algorithm: string, data: Uint8Array, encoding: 'hex' | 'base64') => string
  createHash(algorithm: string): NodeHash
}

const crypto = builtin<NodeCrypto>('node:crypto')

/** cyrb53-style 2×32-bit mixing over bytes, as hex, prefixed with the length. */
function jsHash(bytes: Uint8Array): string {
  let h1 = 0xdeadbeef ^ bytes.length
  let h2 = 0x41c6ce57 ^ bytes.length
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    h1 = Math.imul(h1 ^ b, 2654435761)
    h2 = Math.imul(h2 ^ b, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0')
}

export const hashBytes: (bytes: Uint8Array) => string = crypto?.hash
  ? (bytes) => crypto.hash!('sha1', bytes, 'base64')
  : crypto
    ? (bytes) => crypto.createHash('sha1').update(bytes).digest('base64')
    : (bytes) => `${bytes.length.toString(36)}-${jsHash(bytes)}`

export const hashKind: 'native' | 'js' = crypto ? 'native' : 'js'

/**
 * hashBytes of bytes given a part at a time (an appended file: growing.ts): `update` with the next
 * part, `id()` of all so far. Undefined where the hash cannot go on from a state (the JS hash,
 * whose seed is the length): the whole bytes are hashed again then.
 */
export interface GrowingHash {
  update(bytes: Uint8Array): void
  id(): string
}

export function growingHash(): GrowingHash | undefined {
  if (!crypto) return undefined
  const state = crypto.createHash('sha1')
  return {
    update: (bytes) => void state.update(bytes),
    id: () => state.copy().digest('base64'),
  }
}

/** Whether `id` was made by this host's hash, so its bytes can be checked against it. */
export function madeHere(id: string): boolean {
  return hashKind === 'native' ? id.length === 28 && id.endsWith('=') && !id.includes('-') : id.includes('-')
}
