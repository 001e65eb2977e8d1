/**
 * Images read_file shows to the model, as Claude Code's Read does: PNG, JPEG, GIF and WebP, known
 * by their magic bytes (a name says nothing of what a file holds), with the pixel size read from
 * the header. A header that is cut short or does not hold together is refused with what is wrong,
 * rather than guessed at: the model's API would refuse the image anyway, with less to go on.
 * Small pure functions over the bytes; no image library.
 */

export type ImageMimeType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'

/** The formats' names, for messages. */
export const IMAGE_FORMATS: Readonly<Record<ImageMimeType, string>> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP' }

export interface ImageSize {
  readonly width: number
  readonly height: number
}

/** read_file's answer for an image: snake_case as its text answer, the base64 last. */
export interface ImageResult {
  readonly path: string
  readonly type: 'image'
  readonly mime_type: ImageMimeType
  readonly bytes: number
  readonly width: number
  readonly height: number
  /** The file's bytes in base64 (RFC 4648, with padding). */
  readonly data: string
}

/**
 * Bytes of an image read_file returns by default: 3.75 MiB, whose base64 is 5 MiB, the most the
 * Anthropic API takes for one image (it measures the base64).
 */
export const DEFAULT_IMAGE_BYTES = 3.75 * 1024 * 1024

/**
 * Pixels a side the Anthropic API takes for an image: it refuses one larger than 8000×8000, and
 * the whole request with it ("Images larger than 8000x8000 px will be rejected"; 2000×2000 in a
 * request of more than 20 images: docs.claude.com, Build with Claude, Vision, limits).
 */
export const DEFAULT_IMAGE_SIDE = 8000

/** A header that is cut short or inconsistent; the message says which and where. */
export class ImageHeaderError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ImageHeaderError'
  }
}

/**
 * The header goes on past the bytes given, which are the start of a longer file (`fileBytes`):
 * the caller reads up to `needed` bytes and asks again. A file too big to return is read no
 * further than its header.
 */
export class MoreBytesNeeded extends Error {
  constructor(readonly needed: number) {
    super(`the image header goes on to byte ${needed}`)
    this.name = 'MoreBytesNeeded'
  }
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  if (bytes.length < at + prefix.length) return false
  return prefix.every((byte, index) => bytes[at + index] === byte)
}

function ascii(text: string): number[] {
  return Array.from(text, (char) => char.charCodeAt(0))
}

/** The image type the magic bytes name, or undefined (any other file, or one too short to tell). */
export function imageMimeType(bytes: Uint8Array): ImageMimeType | undefined {
  if (startsWith(bytes, PNG_SIGNATURE)) return 'image/png'
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'image/gif'
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp'
  return undefined
}

function u16be(bytes: Uint8Array, at: number): number {
  return (bytes[at] << 8) | bytes[at + 1]
}

function u16le(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8)
}

function u24le(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16)
}

function u32be(bytes: Uint8Array, at: number): number {
  return ((bytes[at] << 24) >>> 0) + ((bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3])
}

function u32le(bytes: Uint8Array, at: number): number {
  return ((bytes[at + 3] << 24) >>> 0) + ((bytes[at + 2] << 16) | (bytes[at + 1] << 8) | bytes[at])
}

/**
 * Refuses a header the file ends inside: `needed` bytes hold `what`. `bytes` may be the start of a
 * file of `fileBytes`: a header that goes on past them asks for more (MoreBytesNeeded).
 */
function need(bytes: Uint8Array, needed: number, what: string, fileBytes: number): void {
  if (bytes.length >= needed) return
  if (fileBytes >= needed) throw new MoreBytesNeeded(needed)
  throw new ImageHeaderError(`its header is cut short: ${what} needs ${needed} bytes and the file has ${fileBytes}`)
}

function positive(size: ImageSize, format: string): ImageSize {
  if (size.width === 0 || size.height === 0) throw new ImageHeaderError(`its ${format} header gives a size of ${size.width}×${size.height} pixels, an image with no pixels`)
  return size
}

let crcTable: Uint32Array | undefined

/** CRC-32 as PNG computes it (ISO 3309, the one zlib has). */
export function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      crcTable[n] = c >>> 0
    }
  }
  let crc = 0xffffffff
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff] ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** PNG: the IHDR chunk, which must come first (signature 8, length 4, type 4, 13 bytes of data, CRC 4). */
export function pngSize(bytes: Uint8Array, fileBytes = bytes.length): ImageSize {
  need(bytes, 33, 'the IHDR chunk', fileBytes)
  const length = u32be(bytes, 8)
  const type = String.fromCharCode(...bytes.subarray(12, 16))
  if (type !== 'IHDR' || length !== 13) throw new ImageHeaderError(`its first PNG chunk is '${type}' of ${length} bytes where IHDR of 13 bytes must be`)
  const stored = u32be(bytes, 29)
  const computed = crc32(bytes.subarray(12, 29))
  if (stored !== computed) throw new ImageHeaderError(`its PNG IHDR chunk's CRC is ${hex(stored)} where its bytes give ${hex(computed)}: the header is damaged`)
  const width = u32be(bytes, 16)
  const height = u32be(bytes, 20)
  // The PNG specification caps each side at 2^31 - 1.
  if (width > 0x7fffffff || height > 0x7fffffff) throw new ImageHeaderError(`its PNG IHDR gives ${width}×${height} pixels, past the 2^31 - 1 a side PNG allows`)
  return positive({ width, height }, 'PNG IHDR')
}

function hex(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`
}

/** The JPEG markers that start a frame (SOF0–SOF15) and carry its size; C4, C8 and CC are other markers. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc
}

/**
 * JPEG: the segments after SOI are walked to the first SOFn, whose data is the sample precision
 * (1 byte), the height and the width (2 bytes each, big-endian). A scan or the end of the image
 * before any frame header is inconsistent.
 */
export function jpegSize(bytes: Uint8Array, fileBytes = bytes.length): ImageSize {
  let at = 2 // after SOI (FF D8)
  for (;;) {
    need(bytes, at + 2, `the JPEG marker at byte ${at}`, fileBytes)
    if (bytes[at] !== 0xff) throw new ImageHeaderError(`its JPEG segment at byte ${at} does not start with a marker (0xFF), found 0x${bytes[at].toString(16).padStart(2, '0')}`)
    // A marker may be preceded by any number of fill bytes (0xFF).
    let markerAt = at + 1
    while (markerAt < bytes.length && bytes[markerAt] === 0xff) markerAt++
    need(bytes, markerAt + 1, `the JPEG marker at byte ${at}`, fileBytes)
    const marker = bytes[markerAt]
    at = markerAt + 1
    // Markers without a segment: TEM, RST0–RST7 (and a stray SOI).
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue
    const name = `0xFF${marker.toString(16).toUpperCase().padStart(2, '0')}`
    if (marker === 0xd9 || marker === 0xda || marker === 0x00) {
      throw new ImageHeaderError(`its JPEG data reaches ${marker === 0xd9 ? 'the end of the image (EOI)' : marker === 0xda ? 'a scan (SOS)' : 'a stuffed 0x00'} at byte ${markerAt - 1} before any frame header (SOFn) gives its size`)
    }
    need(bytes, at + 2, `the length of the JPEG segment ${name} at byte ${markerAt - 1}`, fileBytes)
    const length = u16be(bytes, at)
    if (length < 2) throw new ImageHeaderError(`its JPEG segment ${name} at byte ${markerAt - 1} gives a length of ${length}, less than the 2 bytes of the length itself`)
    if (isStartOfFrame(marker)) {
      // Precision, height, width, component count: 6 bytes after the length.
      if (length < 8) throw new ImageHeaderError(`its JPEG frame header ${name} at byte ${markerAt - 1} gives a length of ${length}, too short for the image size (at least 8)`)
      need(bytes, at + 7, `the JPEG frame header ${name} at byte ${markerAt - 1}`, fileBytes)
      const height = u16be(bytes, at + 3)
      const width = u16be(bytes, at + 5)
      // A height of 0 is defined later by a DNL marker after the first scan; not looked for.
      if (height === 0) throw new ImageHeaderError(`its JPEG frame header ${name} leaves the height to a DNL marker after the first scan, which read_file does not read`)
      return positive({ width, height }, `JPEG frame header ${name}`)
    }
    at += length
    need(bytes, at, `the JPEG segment ${name} at byte ${markerAt - 1} (${length} bytes)`, fileBytes)
  }
}

/** GIF: the logical screen descriptor after the 6-byte signature: width and height, 2 bytes each, little-endian. */
export function gifSize(bytes: Uint8Array, fileBytes = bytes.length): ImageSize {
  need(bytes, 13, 'the GIF signature and logical screen descriptor', fileBytes)
  return positive({ width: u16le(bytes, 6), height: u16le(bytes, 8) }, 'GIF logical screen')
}

/**
 * WebP: a RIFF container ('RIFF', size, 'WEBP') whose first chunk is VP8 (lossy), VP8L (lossless)
 * or VP8X (extended: the canvas size). The RIFF size must not claim more bytes than the file has.
 */
export function webpSize(bytes: Uint8Array, fileBytes = bytes.length): ImageSize {
  need(bytes, 20, 'the RIFF header and the first WebP chunk header', fileBytes)
  const riff = u32le(bytes, 4)
  if (riff + 8 > fileBytes) throw new ImageHeaderError(`it is cut short: its RIFF header gives ${riff + 8} bytes and the file has ${fileBytes}`)
  const chunk = String.fromCharCode(...bytes.subarray(12, 16))
  const size = u32le(bytes, 16)
  const data = 20
  if (data + size > riff + 8) throw new ImageHeaderError(`its first WebP chunk '${chunk}' gives ${size} bytes, past the end of its RIFF container (${riff + 8} bytes)`)
  if (chunk === 'VP8 ') {
    // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height (the top 2 bits are scaling).
    if (size < 10) throw new ImageHeaderError(`its WebP VP8 chunk gives ${size} bytes, too few for a key frame header (10)`)
    need(bytes, data + 10, 'the WebP VP8 key frame header', fileBytes)
    if ((bytes[data] & 1) !== 0) throw new ImageHeaderError('its WebP VP8 data does not start with a key frame')
    if (!startsWith(bytes, [0x9d, 0x01, 0x2a], data + 3)) throw new ImageHeaderError('its WebP VP8 key frame lacks the start code 9D 01 2A')
    return positive({ width: u16le(bytes, data + 6) & 0x3fff, height: u16le(bytes, data + 8) & 0x3fff }, 'WebP VP8')
  }
  if (chunk === 'VP8L') {
    // Signature 0x2F, then 14 bits width - 1, 14 bits height - 1, 1 bit alpha, 3 bits version (0).
    if (size < 5) throw new ImageHeaderError(`its WebP VP8L chunk gives ${size} bytes, too few for its header (5)`)
    need(bytes, data + 5, 'the WebP VP8L header', fileBytes)
    if (bytes[data] !== 0x2f) throw new ImageHeaderError(`its WebP VP8L data starts with 0x${bytes[data].toString(16).padStart(2, '0')} where the signature 0x2f must be`)
    const bits = u32le(bytes, data + 1)
    const version = bits >>> 29
    if (version !== 0) throw new ImageHeaderError(`its WebP VP8L header gives version ${version}; only version 0 exists`)
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
  }
  if (chunk === 'VP8X') {
    // Flags (1 byte), reserved (3), canvas width - 1 and height - 1 (3 bytes each).
    if (size < 10) throw new ImageHeaderError(`its WebP VP8X chunk gives ${size} bytes where its header takes 10`)
    need(bytes, data + 10, 'the WebP VP8X header', fileBytes)
    return { width: u24le(bytes, data + 4) + 1, height: u24le(bytes, data + 7) + 1 }
  }
  throw new ImageHeaderError(`its first WebP chunk is '${chunk}' where VP8, VP8L or VP8X must be`)
}

/**
 * The pixel size of an image of the given type; throws ImageHeaderError. `bytes` may be the start
 * of a file of `fileBytes`; then it throws MoreBytesNeeded when the header goes on past them.
 */
export function imageSize(bytes: Uint8Array, type: ImageMimeType, fileBytes = bytes.length): ImageSize {
  switch (type) {
    case 'image/png':
      return pngSize(bytes, fileBytes)
    case 'image/jpeg':
      return jpegSize(bytes, fileBytes)
    case 'image/gif':
      return gifSize(bytes, fileBytes)
    case 'image/webp':
      return webpSize(bytes, fileBytes)
  }
}

/** Whether a tool's result is read_file's image (budget.ts leaves its base64 whole; the MCP server sends it as an image). */
export function isImageResult(value: unknown): value is ImageResult {
  if (value === null || typeof value !== 'object') return false
  const result = value as Record<string, unknown>
  return result.type === 'image' && typeof result.data === 'string' && typeof result.mime_type === 'string'
}
