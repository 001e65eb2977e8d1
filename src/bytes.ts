/**
 * Bytes and text. Data handed to callers is a Buffer where the host has one, a Uint8Array
 * elsewhere, and always a copy: nobody can reach into the blob store and change history.
 */
import { HostBuffer } from './host.js'

export type Encoding =
  | 'utf8' | 'utf-8' | 'ascii' | 'latin1' | 'binary' | 'base64' | 'base64url' | 'hex'
  | 'ucs2' | 'ucs-2' | 'utf16le' | 'utf-16le'

const encodings = new Set<string>([
  'utf8', 'utf-8', 'ascii', 'latin1', 'binary', 'base64', 'base64url', 'hex', 'ucs2', 'ucs-2', 'utf16le', 'utf-16le',
])

export function isEncoding(value: unknown): value is Encoding {
  return typeof value === 'string' && (encodings.has(value) || encodings.has(value.toLowerCase()))
}

const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder()

export function encode(text: string, encoding: Encoding = 'utf8'): Uint8Array {
  if (HostBuffer) return HostBuffer.from(text, encoding)
  const name = encoding.toLowerCase()
  if (name === 'utf8' || name === 'utf-8') return textEncoder.encode(text)
  if (name === 'latin1' || name === 'binary' || name === 'ascii') {
    const out = new Uint8Array(text.length)
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0xff
    return out
  }
  if (name === 'hex') {
    const out = new Uint8Array(text.length >> 1)
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(i * 2, i * 2 + 2), 16)
    return out
  }
  if (name === 'base64' || name === 'base64url') {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
    return encode(binary, 'latin1')
  }
  const out = new Uint8Array(text.length * 2)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    out[i * 2] = code & 0xff
    out[i * 2 + 1] = code >> 8
  }
  return out
}

/** Bytes as the characters of those codes, a slice at a time: one argument a byte overflowed the stack past about 100k. */
function charCodes(bytes: Uint8Array): string {
  let text = ''
  for (let at = 0; at < bytes.length; at += 0x4000) text += String.fromCharCode(...bytes.subarray(at, at + 0x4000))
  return text
}

export function decode(bytes: Uint8Array, encoding: Encoding = 'utf8'): string {
  if (HostBuffer) {
    const view = HostBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as Uint8Array & {
      toString(encoding: string): string
    }
    return view.toString(encoding)
  }
  const name = encoding.toLowerCase()
  if (name === 'utf8' || name === 'utf-8') return textDecoder.decode(bytes)
  if (name === 'latin1' || name === 'binary') return charCodes(bytes)
  if (name === 'ascii') return charCodes(bytes.map((b) => b & 0x7f))
  if (name === 'hex') return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
  if (name === 'base64' || name === 'base64url') {
    const base64 = btoa(charCodes(bytes))
    return name === 'base64' ? base64 : base64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  }
  let text = ''
  for (let i = 0; i + 1 < bytes.length; i += 2) text += String.fromCharCode(bytes[i] | (bytes[i + 1] << 8))
  return text
}

/** A caller-owned copy: Buffer on Node, Uint8Array elsewhere. */
export function toCallerBytes(bytes: Uint8Array): Uint8Array {
  return HostBuffer ? HostBuffer.from(bytes) : bytes.slice()
}

/** A view (no copy) typed as the host's Buffer, for data that is already a private copy. */
export function asCallerBytes(bytes: Uint8Array): Uint8Array {
  return HostBuffer ? HostBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0
  for (const part of parts) length += part.byteLength
  const out = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}

/** A heuristic good enough to decide whether a unified diff is meaningful: no NUL, valid UTF-8. */
export function isProbablyText(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 8192)
  if (sample.includes(0)) return false
  try {
    // Streaming where the sample is cut: a multi-byte character cut at its edge is held, not an error; any other bad byte is.
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: sample.byteLength < bytes.byteLength })
    return true
  } catch {
    return false
  }
}
