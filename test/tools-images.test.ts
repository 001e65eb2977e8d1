/**
 * read_file returns images (PNG, JPEG, GIF, WebP) as Claude Code's Read does. The images are built
 * here byte by byte from their specifications (PNG's chunks with zlib's CRC-32 and a deflated
 * IDAT, a JPEG's segments up to SOF0, GIF's logical screen, WebP's RIFF chunks), so the expected
 * pixel sizes come from the formats, not from the code under test; `file(1)`, where installed,
 * reads the same sizes. Also: headers cut short or inconsistent are refused, the size cap, the
 * base64 left whole by the result budget, and the MCP server's image content item.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { DEFAULT_IMAGE_BYTES, ImageHeaderError, MoreBytesNeeded, crc32, gifSize, imageMimeType, imageSize, jpegSize, pngSize, webpSize } from '../tools/images.js'
import { type AgentTool, type ToolResult, callTool, createAgentTools } from '../tools/index.js'
import { CLI, REPO, buildCli, removeCli } from './cli-process.js'

/** Tool results are plain JSON, picked apart by the tests. */
type Json = any

const latin1 = (text: string) => Buffer.from(text, 'latin1')

function u32be(value: number): Buffer {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(value)
  return out
}

function u32le(value: number): Buffer {
  const out = Buffer.alloc(4)
  out.writeUInt32LE(value)
  return out
}

function u16be(value: number): Buffer {
  const out = Buffer.alloc(2)
  out.writeUInt16BE(value)
  return out
}

function u16le(value: number): Buffer {
  const out = Buffer.alloc(2)
  out.writeUInt16LE(value)
  return out
}

/** A PNG chunk: length, type, data, CRC-32 of type and data (zlib's, not the one under test). */
function pngChunk(type: string, data: Uint8Array): Buffer {
  return Buffer.concat([u32be(data.length), latin1(type), data, u32be(zlib.crc32(Buffer.concat([latin1(type), data])))])
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A valid truecolour 8-bit PNG of width × height, with an optional private ancillary chunk of `padding` bytes (to make it large). */
function png(width: number, height: number, padding = 0): Buffer {
  const ihdr = Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]) // depth 8, colour type 2 (RGB), deflate, adaptive filters, no interlace
  const rows: Buffer[] = []
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3) // filter type 0, then RGB
    for (let x = 0; x < width; x++) row.set([x * 40, y * 80, 200], 1 + x * 3)
    rows.push(row)
  }
  const extra = padding > 0 ? [pngChunk('prVt', noise(padding))] : []
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    ...extra,
    pngChunk('IDAT', zlib.deflateSync(Buffer.concat(rows))),
    pngChunk('IEND', new Uint8Array(0)),
  ])
}

/** A PNG's signature and IHDR chunk alone: enough for the header, for sizes no test should allocate. */
function pngHeader(width: number, height: number): Buffer {
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]))])
}

/** Bytes that do not compress and cover every value (a linear congruential generator). */
function noise(length: number): Buffer {
  const out = Buffer.alloc(length)
  let state = 12345
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    out[i] = state >>> 24
  }
  return out
}

/** A JPEG segment: marker, then a length that counts itself. */
function jpegSegment(marker: number, data: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([0xff, marker]), u16be(data.length + 2), data])
}

/**
 * A baseline JPEG's header: SOI, APP0 (JFIF), a comment, a DQT, a DHT whose bytes would read as a
 * size if taken for a frame header, fill bytes (T.81 B.1.1.2 allows them before any marker; file(1)
 * does not skip them), then SOF0 (precision 8, height, width, 3
 * components), then a scan and EOI.
 */
function jpeg(width: number, height: number, sof = 0xc0, fill = true): Buffer {
  const jfif = Buffer.concat([latin1('JFIF\0'), Buffer.from([1, 1, 0]), u16be(1), u16be(1), Buffer.from([0, 0])])
  const dqt = Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])
  const dht = Buffer.concat([Buffer.from([0x00, 0x00, 0x7f, 0x7f, 0x7f, 0x7f]), Buffer.alloc(10), Buffer.from([0])])
  const components = Buffer.from([1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0])
  const frame = Buffer.concat([Buffer.from([8]), u16be(height), u16be(width), Buffer.from([3]), components])
  const scan = Buffer.from([3, 1, 0, 2, 0, 3, 0, 0, 63, 0])
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    jpegSegment(0xe0, jfif),
    jpegSegment(0xfe, latin1('made by hand')),
    jpegSegment(0xdb, dqt),
    jpegSegment(0xc4, dht),
    Buffer.from(fill ? [0xff, 0xff] : []), // fill bytes before the next marker
    jpegSegment(sof, frame),
    jpegSegment(0xda, scan),
    Buffer.from([0x12, 0x34, 0xff, 0x00, 0x56]), // entropy-coded data with a stuffed 0xFF
    Buffer.from([0xff, 0xd9]),
  ])
}

/** A GIF: signature, logical screen descriptor (width, height little-endian), a 2-colour table, one image, trailer. */
function gif(width: number, height: number, version = '89a'): Buffer {
  return Buffer.concat([
    latin1(`GIF${version}`),
    u16le(width),
    u16le(height),
    Buffer.from([0x80, 0, 0]), // global colour table of 2 entries, background 0, no aspect ratio
    Buffer.from([0, 0, 0, 255, 255, 255]),
    Buffer.from([0x2c]),
    u16le(0),
    u16le(0),
    u16le(width),
    u16le(height),
    Buffer.from([0]),
    Buffer.from([2, 2, 0x4c, 0x01, 0]), // LZW minimum code size 2, one sub-block, terminator
    Buffer.from([0x3b]),
  ])
}

function riff(chunks: Buffer[]): Buffer {
  const body = Buffer.concat([latin1('WEBP'), ...chunks])
  return Buffer.concat([latin1('RIFF'), u32le(body.length), body])
}

function webpChunk(type: string, data: Buffer): Buffer {
  return Buffer.concat([latin1(type), u32le(data.length), data, data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)])
}

/** VP8L: signature 0x2F, then width - 1 (14 bits), height - 1 (14 bits), alpha (1), version 0 (3), little-endian. */
function webpLossless(width: number, height: number, version = 0): Buffer {
  const bits = ((width - 1) | ((height - 1) << 14) | (1 << 28) | (version << 29)) >>> 0
  return webpChunk('VP8L', Buffer.concat([Buffer.from([0x2f]), u32le(bits), Buffer.from([0, 0, 0])]))
}

/** VP8 key frame: frame tag (bit 0 clear: a key frame), start code 9D 01 2A, width and height in 14 bits with 2 bits of scaling above. */
function webpLossy(width: number, height: number): Buffer {
  const data = Buffer.concat([Buffer.from([0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a]), u16le(width | (1 << 14)), u16le(height | (2 << 14)), Buffer.alloc(8)])
  return webpChunk('VP8 ', data)
}

/** VP8X: flags, 3 reserved bytes, canvas width - 1 and height - 1 in 24 bits each, little-endian. */
function webpExtended(width: number, height: number): Buffer {
  const w = width - 1
  const h = height - 1
  const data = Buffer.from([0x10, 0, 0, 0, w & 0xff, (w >> 8) & 0xff, w >> 16, h & 0xff, (h >> 8) & 0xff, h >> 16])
  return webpChunk('VP8X', data)
}

async function ok(tools: readonly AgentTool[], name: string, input: unknown): Promise<Json> {
  const outcome = await callTool(tools, name, input)
  if (outcome.isError) throw new Error(`${name} failed: ${outcome.error.code} ${outcome.error.message}`)
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome) // plain JSON, as a model receives it
  return outcome.result
}

async function fails(tools: readonly AgentTool[], name: string, input: unknown): Promise<Extract<ToolResult, { isError: true }>['error']> {
  const outcome = await callTool(tools, name, input)
  if (!outcome.isError) throw new Error(`${name} succeeded: ${JSON.stringify(outcome.result).slice(0, 200)}`)
  return outcome.error
}

const images = {
  '/shots/screen': png(3, 2), // no extension: known by its bytes
  '/shots/photo.png': jpeg(640, 480), // a JPEG whatever its name says
  '/shots/progressive.jpg': jpeg(1, 65535, 0xc2),
  '/shots/anim.gif': gif(300, 2),
  '/shots/old.gif': gif(1, 1, '87a'),
  '/shots/lossless.webp': riff([webpLossless(16384, 3)]),
  '/shots/lossy.webp': riff([webpLossy(1000, 750)]),
  '/shots/extended.webp': riff([webpExtended(16777216, 5), webpLossless(16, 5)]),
}

describe('the image headers, as the formats define them', () => {
  it('the PNG built here is what file(1) reads, and its CRCs are the ones zlib computes', () => {
    const bytes = png(3, 2)
    expect(crc32(bytes.subarray(12, 29))).toBe(zlib.crc32(bytes.subarray(12, 29)))
    const probe = spawnSync('file', ['-b', '-'], { input: bytes, encoding: 'utf8' })
    if (probe.error) return // file(1) not installed: the sizes below stand on the specifications alone
    expect(probe.stdout).toMatch(/^PNG image data, 3 x 2, 8-bit\/color RGB/)
    expect(spawnSync('file', ['-b', '-'], { input: gif(300, 2), encoding: 'utf8' }).stdout).toMatch(/GIF image data, version 89a, 300 x 2/)
    expect(spawnSync('file', ['-b', '-'], { input: jpeg(640, 480, 0xc0, false), encoding: 'utf8' }).stdout).toMatch(/JPEG image data.*baseline, precision 8, 640x480/)
    expect(jpegSize(jpeg(640, 480, 0xc0, false))).toEqual(jpegSize(jpeg(640, 480)))
    expect(spawnSync('file', ['-b', '-'], { input: riff([webpLossless(16384, 3)]), encoding: 'utf8' }).stdout).toMatch(/Web\/P image/)
    // file(1) reads VP8's size too, without its scaling bits.
    expect(spawnSync('file', ['-b', '-'], { input: riff([webpLossy(1000, 750)]), encoding: 'utf8' }).stdout).toMatch(/Web\/P image, VP8 encoding, 1000x750/)
  })

  it('reads each format by its magic bytes', () => {
    const expected: Record<string, [string, number, number]> = {
      '/shots/screen': ['image/png', 3, 2],
      '/shots/photo.png': ['image/jpeg', 640, 480],
      '/shots/progressive.jpg': ['image/jpeg', 1, 65535],
      '/shots/anim.gif': ['image/gif', 300, 2],
      '/shots/old.gif': ['image/gif', 1, 1],
      '/shots/lossless.webp': ['image/webp', 16384, 3],
      '/shots/lossy.webp': ['image/webp', 1000, 750],
      '/shots/extended.webp': ['image/webp', 16777216, 5],
    }
    for (const [name, bytes] of Object.entries(images)) {
      const type = imageMimeType(bytes)!
      expect([name, type, imageSize(bytes, type).width, imageSize(bytes, type).height]).toEqual([name, ...expected[name]])
    }
    for (const other of ['<svg xmlns="http://www.w3.org/2000/svg"/>', 'RIFF....WAVE', 'GIF8', '\x89PNG\r\n']) expect(imageMimeType(latin1(other))).toBeUndefined()
  })

  it('refuses every header cut short, at each length, rather than guessing a size', () => {
    const cases: [Buffer, (bytes: Uint8Array) => unknown, number][] = [
      [png(3, 2), pngSize, 33], // signature, IHDR length, type, 13 bytes, CRC
      [gif(300, 2), gifSize, 13],
      // A WebP's RIFF size gives the whole file: cut anywhere, it is refused as cut short.
      [riff([webpLossless(16, 3)]), webpSize, riff([webpLossless(16, 3)]).length],
      [riff([webpLossy(16, 3)]), webpSize, riff([webpLossy(16, 3)]).length],
      [riff([webpExtended(16, 3)]), webpSize, riff([webpExtended(16, 3)]).length],
      [jpeg(640, 480), jpegSize, jpeg(640, 480).indexOf(Buffer.from([0xff, 0xc0])) + 9],
    ]
    let cut = 0
    for (const [bytes, size, header] of cases) {
      expect(() => size(bytes.subarray(0, header))).not.toThrow()
      for (let length = 0; length < header; length++) {
        expect(() => size(bytes.subarray(0, length))).toThrow(ImageHeaderError)
        cut++
      }
    }
    expect(cut).toBeGreaterThan(100)
    expect(() => pngSize(png(3, 2).subarray(0, 20))).toThrow('its header is cut short: the IHDR chunk needs 33 bytes and the file has 20')
  })

  it('refuses headers that do not hold together', () => {
    const damaged = png(3, 2)
    damaged[19] ^= 1 // the width's last byte: the IHDR CRC no longer matches
    expect(() => pngSize(damaged)).toThrow(/IHDR chunk's CRC is 0x[0-9a-f]{8} where its bytes give 0x[0-9a-f]{8}/)
    expect(() => pngSize(Buffer.concat([png(3, 2).subarray(0, 8), pngChunk('IDAT', Buffer.alloc(13))]))).toThrow("its first PNG chunk is 'IDAT' of 13 bytes where IHDR of 13 bytes must be")
    expect(() => pngSize(pngHeader(0, 2))).toThrow('0×2 pixels')
    expect(() => pngSize(pngHeader(0x80000000, 1))).toThrow('past the 2^31 - 1')
    expect(pngSize(pngHeader(0x7fffffff, 1))).toEqual({ width: 0x7fffffff, height: 1 })
    // A scan before any frame header.
    const noFrame = Buffer.concat([Buffer.from([0xff, 0xd8]), jpegSegment(0xda, Buffer.alloc(10)), Buffer.from([0xff, 0xd9])])
    expect(() => jpegSize(noFrame)).toThrow('a scan (SOS) at byte 2 before any frame header (SOFn)')
    expect(() => jpegSize(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01, 0, 0]))).toThrow('gives a length of 1')
    expect(() => jpegSize(Buffer.from([0xff, 0xd8, 0x00, 0xe0]))).toThrow('does not start with a marker')
    expect(() => jpegSize(jpeg(640, 0))).toThrow('DNL marker')
    expect(() => webpSize(riff([webpLossless(16, 3, 1)]))).toThrow('version 1')
    expect(() => webpSize(riff([webpChunk('ALPH', Buffer.alloc(10))]))).toThrow("its first WebP chunk is 'ALPH'")
    const longer = riff([webpLossless(16, 3)])
    longer.writeUInt32LE(longer.length, 4) // the RIFF size claims 8 bytes more than there are
    expect(() => webpSize(longer)).toThrow(`it is cut short: its RIFF header gives ${longer.length + 8} bytes and the file has ${longer.length}`)
    const chunkPast = riff([webpLossless(16, 3)])
    chunkPast.writeUInt32LE(100, 16)
    expect(() => webpSize(chunkPast)).toThrow("its first WebP chunk 'VP8L' gives 100 bytes, past the end of its RIFF container")
    const notKey = riff([webpLossy(16, 3)])
    notKey[20] |= 1
    expect(() => webpSize(notKey)).toThrow('key frame')
  })
})

describe('read_file of an image', () => {
  let ws: Workspace
  let tools: AgentTool[]

  beforeAll(async () => {
    ws = await Workspace.open({
      lower: {
        ...images,
        '/shots/cut.png': png(3, 2).subarray(0, 24),
        '/shots/logo.svg': '<svg xmlns="http://www.w3.org/2000/svg" width="3" height="2"/>\n',
        '/notes/gif.txt': 'GIF89a is the version of GIF with extensions\n',
        '/bin/tool': new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0]),
      },
    })
    // Sides up to what the formats hold (16384, 65535, 2^24): the API's 8000 has its own test below.
    tools = createAgentTools(ws, { budget: { imageSide: 2 ** 24 } })
  })

  it('returns the image whole, in base64, with its type and pixel size', async () => {
    for (const [name, bytes] of Object.entries(images)) {
      const result = await ok(tools, 'read_file', { path: name })
      expect(Object.keys(result)).toEqual(['path', 'type', 'mime_type', 'bytes', 'width', 'height', 'data'])
      expect(result).toMatchObject({ path: name, type: 'image', mime_type: imageMimeType(bytes), bytes: bytes.length })
      expect(Buffer.from(result.data, 'base64').equals(bytes)).toBe(true)
      expect(result.data).toBe(bytes.toString('base64'))
    }
    expect(await ok(tools, 'read_file', { path: '/shots/screen' })).toMatchObject({ width: 3, height: 2 })
  })

  it('ignores offset and limit for an image, as Claude Code does', async () => {
    const whole = await ok(tools, 'read_file', { path: '/shots/anim.gif' })
    expect(await ok(tools, 'read_file', { path: '/shots/anim.gif', offset: 5, limit: 1 })).toEqual(whole)
  })

  it('refuses a damaged image saying what is wrong; another binary file saying what read_file reads and what to do instead; SVG and text that starts like a GIF are text', async () => {
    expect(await fails(tools, 'read_file', { path: '/shots/cut.png' })).toEqual({
      code: 'EBINARY',
      message: "'/shots/cut.png' starts as a PNG image (24 bytes), but its header is cut short: the IHDR chunk needs 33 bytes and the file has 24; read_file cannot show it",
    })
    // It says what read_file reads (no longer "text only") and what to do instead.
    expect(await fails(tools, 'read_file', { path: '/bin/tool' })).toEqual({
      code: 'EBINARY',
      message:
        "'/bin/tool' is a binary file (10 bytes): read_file shows text, and PNG, JPEG, GIF and WebP images, and it is neither. " +
        "Look into it with run_command instead, e.g. in cwd '/bin': file 'tool', or xxd 'tool' | head",
    })
    expect(await ok(tools, 'read_file', { path: '/shots/logo.svg' })).toMatchObject({ content: '<svg xmlns="http://www.w3.org/2000/svg" width="3" height="2"/>', total_lines: 1 })
    expect(await ok(tools, 'read_file', { path: '/notes/gif.txt' })).toMatchObject({ content: 'GIF89a is the version of GIF with extensions' })
    // Editing is still text only, and says so.
    expect(await fails(tools, 'edit_file', { path: '/shots/screen', old_string: 'PNG', new_string: 'GIF' })).toEqual({
      code: 'EBINARY',
      message: `'/shots/screen' is a binary file (${images['/shots/screen'].length} bytes); edit_file and insert_text change text only (change it with run_command instead)`,
    })
  })

  it('says in its description and schema what it does with images', () => {
    const read = tools.find((tool) => tool.name === 'read_file')!
    expect(read.description).toContain('PNG, JPEG, GIF or WebP')
    expect(read.description).toContain('offset and limit are ignored')
    expect(read.description).toContain(String(DEFAULT_IMAGE_BYTES))
    const validate = new Ajv2020({ strict: false }).compile(read.inputSchema)
    expect([validate({ path: '/shots/screen' }), validate({ path: '/a', offset: 1, limit: 1 }), validate({ path: '/a', offset: 0 }), validate({ file_path: '/a' })]).toEqual([true, true, false, false])
    expect(read.inputSchema).toMatchObject({ type: 'object', additionalProperties: false, required: ['path'] })
    expect(read.inputSchema).toMatchObject({ properties: { offset: { description: expect.stringContaining('ignored for an image') }, limit: { description: expect.stringContaining('ignored for an image') } } })
  })
})

describe('the image size cap and the result budget', () => {
  it('refuses an image over the cap (default 3.75 MiB) with its size and how to make a smaller copy', async () => {
    const big = png(40, 30, DEFAULT_IMAGE_BYTES) // over the cap by its other chunks
    const ws = await Workspace.open({ lower: { '/img/big.png': big } })
    const error = await fails(createAgentTools(ws), 'read_file', { path: '/img/big.png' })
    expect(error).toMatchObject({ code: 'EFBIG', details: { bytes: big.length, max_bytes: 3932160, width: 40, height: 30 } })
    expect(error.message).toContain(`'/img/big.png' is a 40×30 PNG image of ${big.length} bytes (3.75 MiB), over the 3932160 bytes (3.75 MiB)`)
    expect(error.message).toContain("run_command and read that, e.g. with ImageMagick in cwd '/img': convert 'big.png' -resize 50% -quality 85 'big-small.jpg'")
    // budget.imageBytes moves the cap; an image at it exactly is returned.
    const exact = createAgentTools(ws, { budget: { imageBytes: big.length } })
    expect((await ok(exact, 'read_file', { path: '/img/big.png' })).bytes).toBe(big.length)
    expect(await fails(createAgentTools(ws, { budget: { imageBytes: big.length - 1 } }), 'read_file', { path: '/img/big.png' })).toMatchObject({ code: 'EFBIG' })
    for (const bad of [0, 1.5, Number.NaN]) expect(() => createAgentTools(ws, { budget: { imageBytes: bad } })).toThrow('budget.imageBytes must be a whole number of bytes')
  })

  it('refuses an image over 8000 pixels a side, which the API refuses (and the request with it), saying how to make a copy that fits', async () => {
    const files = {
      '/img/wide.png': png(8001, 1),
      '/img/edge.png': png(8000, 2),
      '/img/tall.gif': gif(3, 8001),
      '/img/both.png': png(9000, 1, DEFAULT_IMAGE_BYTES),
      '/img/mid.png': png(2001, 1),
    }
    const ws = await Workspace.open({ lower: files })
    const tools = createAgentTools(ws)
    const wide = await fails(tools, 'read_file', { path: '/img/wide.png' })
    const bytes = files['/img/wide.png'].length
    expect(wide).toEqual({
      code: 'EFBIG',
      message:
        `'/img/wide.png' is a 8001×1 PNG image of ${bytes} bytes, over the 8000 pixels a side the model's API takes for an image (it refuses a larger one, and the whole request with it). ` +
        "Make a smaller copy with run_command and read that, e.g. with ImageMagick in cwd '/img': convert 'wide.png' -resize 2000x2000 -quality 85 'wide-small.jpg' (then delete the copy)",
      details: { bytes, max_bytes: DEFAULT_IMAGE_BYTES, width: 8001, height: 1, max_side: 8000 },
    })
    // 8000 itself is taken ("larger than 8000x8000 px" is refused).
    expect(await ok(tools, 'read_file', { path: '/img/edge.png' })).toMatchObject({ type: 'image', width: 8000, height: 2 })
    expect(await fails(tools, 'read_file', { path: '/img/tall.gif' })).toMatchObject({ code: 'EFBIG', details: { width: 3, height: 8001, max_side: 8000 } })
    // Over both limits (read by its header alone, being over the byte cap): both are named.
    const both = await fails(tools, 'read_file', { path: '/img/both.png' })
    expect(both).toMatchObject({ code: 'EFBIG', details: { width: 9000, height: 1, max_side: 8000, bytes: files['/img/both.png'].length } })
    expect(both.message).toContain('(3.75 MiB) read_file returns for an image (its base64 must stay within the 5 MB the model\'s API takes), and over the 8000 pixels a side')
    expect(both.message).toContain("convert 'both.png' -resize 2000x2000 -quality 85 'both-small.jpg'")
    // budget.imageSide moves the limit (2000: a request of more than 20 images).
    expect(await ok(tools, 'read_file', { path: '/img/mid.png' })).toMatchObject({ width: 2001 })
    const many = createAgentTools(ws, { budget: { imageSide: 2000 } })
    expect(await fails(many, 'read_file', { path: '/img/mid.png' })).toMatchObject({ code: 'EFBIG', details: { width: 2001, max_side: 2000 } })
    const read = many.find((tool) => tool.name === 'read_file')!
    expect(read.description).toContain('2000 pixels a side is refused')
    for (const bad of [0, 1.5, Number.NaN]) expect(() => createAgentTools(ws, { budget: { imageSide: bad } })).toThrow('budget.imageSide must be a whole number of pixels')
  })

  it('the base64 is not cut by the character budget of results, whatever the budget', async () => {
    const image = png(5, 4, 1_000_000) // 1.33 M characters of base64, far past readChars (100 000)
    const ws = await Workspace.open({ lower: { '/img/wide.png': image } })
    for (const budget of [{}, { chars: 1000, readChars: 1000 }]) {
      const result = await ok(createAgentTools(ws, { budget }), 'read_file', { path: '/img/wide.png' })
      expect(result).toMatchObject({ type: 'image', width: 5, height: 4, bytes: image.length })
      expect(result.truncated_to_budget).toBeUndefined()
      expect(result.data).toBe(image.toString('base64'))
    }
  })
})

/**
 * The bytes read_file asks the workspace for: its synchronous reads (readSync, readFileSync; the
 * promise forms too, should it use them), counted as they come back (a work counter: what the tool
 * reads, not how long it takes).
 */
function countReads(ws: Workspace): { bytes: number } {
  const counter = { bytes: 0 }
  const fs = ws.fs
  const readSync = fs.readSync
  fs.readSync = ((...args: Parameters<typeof readSync>) => {
    const bytesRead = readSync(...args)
    counter.bytes += bytesRead
    return bytesRead
  }) as typeof readSync
  const readFileSync = fs.readFileSync
  fs.readFileSync = ((...args: Parameters<typeof readFileSync>) => {
    const out = readFileSync(...args)
    counter.bytes += out.length
    return out
  }) as typeof readFileSync
  const promises = fs.promises
  const readFile = promises.readFile
  promises.readFile = (async (...args: Parameters<typeof readFile>) => {
    const out = await readFile(...args)
    counter.bytes += out.length
    return out
  }) as typeof readFile
  return counter
}

describe('a file over the image cap is looked at by its first bytes, not read whole', () => {
  const MiB = 1024 * 1024
  /** A JPEG whose frame header comes after `segments` APP1 segments of 60 000 bytes (EXIF, XMP, ICC come there). */
  const jpegAfter = (segments: number) => Buffer.concat([Buffer.from([0xff, 0xd8]), ...Array.from({ length: segments }, () => jpegSegment(0xe1, Buffer.alloc(60_000, 0x45))), jpeg(4000, 3000).subarray(2)])
  const files = {
    '/big/shot.png': Buffer.concat([png(40, 30), Buffer.alloc(16 * MiB)]),
    '/big/photo.jpg': Buffer.concat([jpegAfter(2), Buffer.alloc(16 * MiB)]),
    '/big/deep.jpg': Buffer.concat([jpegAfter(20), Buffer.alloc(16 * MiB)]),
    '/big/data.bin': Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(16 * MiB - 8)]),
    '/big/log.txt': Buffer.from('a line of the log\n'.repeat(300_000)),
    '/big/small.png': png(3, 2),
  }

  it('a header given in part asks for the bytes it goes on to; only the end of the file cuts it short', () => {
    const needed = (read: () => unknown) => {
      try {
        read()
      } catch (error) {
        if (error instanceof MoreBytesNeeded) return error.needed
        throw error
      }
      throw new Error('no more bytes were asked for')
    }
    expect(needed(() => pngSize(png(3, 2).subarray(0, 20), 1000))).toBe(33)
    expect(() => pngSize(png(3, 2).subarray(0, 20), 30)).toThrow('its header is cut short: the IHDR chunk needs 33 bytes and the file has 30')
    // The WebP's RIFF size is checked against the file's length, not against the part read.
    const webp = riff([webpLossless(16, 3)])
    expect(webpSize(webp.subarray(0, 25), webp.length)).toEqual({ width: 16, height: 3 })
    const photo = jpegAfter(2)
    const frame = photo.indexOf(Buffer.from([0xff, 0xc0]))
    expect(needed(() => jpegSize(photo.subarray(0, 100), photo.length))).toBe(2 + 60_004)
    expect(jpegSize(photo.subarray(0, frame + 9), photo.length)).toEqual({ width: 4000, height: 3000 })
    expect(needed(() => imageSize(gif(300, 2).subarray(0, 12), 'image/gif', 100))).toBe(13)
  })

  it('an image is refused after its header, any other binary file after its first 8 KiB; text is read whole', async () => {
    const ws = await Workspace.open({ lower: files })
    const tools = createAgentTools(ws)
    const counter = countReads(ws)
    const read = async (path: string) => {
      counter.bytes = 0
      const outcome = await callTool(tools, 'read_file', { path })
      return { outcome, bytes: counter.bytes }
    }
    const shot = await read('/big/shot.png')
    expect(shot.outcome).toMatchObject({ isError: true, error: { code: 'EFBIG', details: { bytes: files['/big/shot.png'].length, width: 40, height: 30 } } })
    expect(shot.bytes).toBeLessThanOrEqual(8196)
    // The JPEG's frame header is past its first 8 KiB: read up to it, no further than four times as far.
    const photo = await read('/big/photo.jpg')
    expect(photo.outcome).toMatchObject({ isError: true, error: { code: 'EFBIG', details: { bytes: files['/big/photo.jpg'].length, width: 4000, height: 3000 } } })
    expect(photo.bytes).toBeGreaterThan(120_000)
    expect(photo.bytes).toBeLessThanOrEqual(4 * 120_100)
    // Past the first MiB the header is not looked for: refused for its bytes, without a pixel size.
    const deep = await read('/big/deep.jpg')
    expect(deep.outcome).toMatchObject({ isError: true, error: { code: 'EFBIG', details: { bytes: files['/big/deep.jpg'].length } } })
    expect(deep.outcome.isError && deep.outcome.error.message).toMatch(/^'\/big\/deep.jpg' is a JPEG image of \d+ bytes/)
    expect(deep.outcome.isError && (deep.outcome.error.details as Json).width).toBeUndefined()
    expect(deep.bytes).toBe(MiB)
    const data = await read('/big/data.bin')
    expect(data.outcome).toMatchObject({ isError: true, error: { code: 'EBINARY', message: expect.stringContaining(`'/big/data.bin' is a binary file (${16 * MiB} bytes): read_file shows text`) } })
    expect(data.bytes).toBeLessThanOrEqual(8196)
    // Text over the cap is text: read whole, shown as before.
    const log = await read('/big/log.txt')
    expect(log.outcome).toMatchObject({ isError: false, result: { total_lines: 300_000, start_line: 1, end_line: 2000, truncated: true } })
    expect(log.bytes).toBe(files['/big/log.txt'].length + 8196)
    // An image within the cap is read once, whole; a missing file is open's ENOENT, as it was.
    const small = await read('/big/small.png')
    expect(small.outcome).toMatchObject({ isError: false, result: { type: 'image', width: 3, height: 2 } })
    expect(small.bytes).toBe(files['/big/small.png'].length)
    expect(await read('/big/none')).toMatchObject({ outcome: { isError: true, error: { code: 'ENOENT', message: "ENOENT: no such file or directory, open '/big/none'" } } })
  })
})

describe('rewindfs mcp: read_file of an image', () => {
  let tmp: string
  let client: Client

  beforeAll(async () => {
    await buildCli()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-mcp-images-'))
    fs.mkdirSync(path.join(tmp, 'shots'))
    fs.writeFileSync(path.join(tmp, 'shots/screen.png'), png(3, 2))
    fs.writeFileSync(path.join(tmp, 'shots/cut.png'), png(3, 2).subarray(0, 24))
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--dir', tmp], cwd: REPO, stderr: 'pipe' })
    client = new Client({ name: 'rewindfs-test', version: '1.0.0' })
    await client.connect(transport)
  })

  afterAll(async () => {
    await client?.close()
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
    removeCli()
  })

  it('answers with an image content item and the rest of the result as JSON text', async () => {
    const result = (await client.callTool({ name: 'read_file', arguments: { path: 'shots/screen.png' } })) as CallToolResult
    expect(result.isError).toBe(false)
    expect(result.content).toEqual([
      { type: 'image', data: png(3, 2).toString('base64'), mimeType: 'image/png' },
      { type: 'text', text: expect.any(String) },
    ])
    const text = result.content[1]
    if (text.type !== 'text') throw new Error('expected text')
    expect(JSON.parse(text.text)).toEqual({ path: '/shots/screen.png', type: 'image', mime_type: 'image/png', bytes: png(3, 2).length, width: 3, height: 2 })
  })

  it('answers a damaged image with the error as text, as any error', async () => {
    const result = (await client.callTool({ name: 'read_file', arguments: { path: 'shots/cut.png' } })) as CallToolResult
    expect(result.isError).toBe(true)
    expect(result.content).toHaveLength(1)
    const [content] = result.content
    if (content.type !== 'text') throw new Error('expected text')
    expect(JSON.parse(content.text)).toMatchObject({ error: { code: 'EBINARY', message: expect.stringContaining('cut short') } })
  })

  it("lists read_file with a description that names images", async () => {
    const { tools } = await client.listTools()
    expect(tools.find((tool) => tool.name === 'read_file')!.description).toContain('PNG, JPEG, GIF or WebP')
  })
})
