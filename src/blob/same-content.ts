/**
 * Confirms that content whose hash matches a stored blob really is that blob. Why the bytes are
 * compared at all: the native hash is SHA-1, which has practical chosen-prefix collisions
 * (SHAttered 2017, Shambles 2020), and the pure-JS fallback is a 64-bit non-cryptographic hash.
 * Content in a workspace is written by agents and the tools they run, so it is attacker-influenced:
 * trusting a hash match would let a crafted file silently take another file's place in every tree
 * that shares the blob. The compare stays, and is made cheap instead: the host's native memcmp
 * (Node's Buffer.compare, reached at run time: the core never imports node:) where it exists,
 * 32-bit words elsewhere.
 */
import { builtin } from '../host.js'

interface NodeBuffer {
  compare(a: Uint8Array, b: Uint8Array): number
}

const nativeCompare = builtin<{ Buffer: NodeBuffer }>('node:buffer')?.Buffer.compare

/** Below this a JS loop beats crossing into C++ (measured on Node 20: about 16 bytes). */
const NATIVE_FROM = 16

export function sameContent(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true
  if (nativeCompare && a.byteLength >= NATIVE_FROM) return a.byteLength === b.byteLength && nativeCompare(a, b) === 0
  return wordsEqual(a, b)
}

/** Compares 4 bytes at a time where both views are 4-byte aligned, the rest byte by byte. */
export function wordsEqual(a: Uint8Array, b: Uint8Array): boolean {
  const length = a.byteLength
  if (length !== b.byteLength) return false
  let i = 0
  if (length >= 64 && (a.byteOffset & 3) === 0 && (b.byteOffset & 3) === 0) {
    const words = length >>> 2
    const left = new Uint32Array(a.buffer, a.byteOffset, words)
    const right = new Uint32Array(b.buffer, b.byteOffset, words)
    for (let w = 0; w < words; w++) if (left[w] !== right[w]) return false
    i = words << 2
  }
  for (; i < length; i++) if (a[i] !== b[i]) return false
  return true
}
