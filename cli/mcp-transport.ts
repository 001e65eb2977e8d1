/**
 * MCP over stdio that bad input cannot take down. The SDK's stdio transport closes the session on
 * a message over its 10 MiB buffer (the server then exits without a word) and drops malformed
 * lines unanswered (the client waits forever). This one reads one JSON-RPC message per line with
 * stated limits: a line over `maxMessageBytes` is discarded as it streams in (never buffered), a
 * line that is not UTF-8, not JSON, nested deeper than `maxDepth` or not a JSON-RPC message is
 * refused before it is parsed (deep JSON is slow to parse and breaks code that recurses). Each
 * refusal is answered: a tools/call gets a tool result with isError naming the limit, any other
 * request a JSON-RPC error, and a line with no recognisable id an error with id null. The session
 * goes on either way.
 *
 * To answer a line it will not parse, the transport outlines every line as it streams: the
 * top-level `id` and `method` and `params.name`, and the deepest nesting, in one pass over the
 * bytes.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, type JSONRPCMessage, JSONRPCMessageSchema, type RequestId } from '@modelcontextprotocol/sdk/types.js'

export interface StdioLimits {
  /** Bytes in one message (one line), its line end excluded. */
  readonly maxMessageBytes: number
  /** Nesting of arrays and objects in one message. */
  readonly maxDepth: number
}

/** 32 MiB a message: a file written in one call can be about that large. */
export const DEFAULT_LIMITS: StdioLimits = { maxMessageBytes: 32 * 1024 * 1024, maxDepth: 64 }

const QUOTE = 0x22
const BACKSLASH = 0x5c
const NEWLINE = 0x0a
/** Characters of a captured string (id, method, tool name) kept at most. */
const CAPTURE = 256

/** The top-level id and method, params.name, and the nesting of one message, from its bytes as they arrive. */
export class Outline {
  depth = 0
  deepest = 0
  id: RequestId | undefined
  method: string | undefined
  tool: string | undefined
  /** It has a top-level result or error: a response (whose id is the other side's own). */
  response = false
  private inString = false
  private escaped = false
  /** Per open container: '{' or '['. Only the first levels are kept (the outline needs two). */
  private readonly containers: number[] = []
  /** The current key at depth 1 and 2. */
  private readonly keys: (string | undefined)[] = [undefined, undefined, undefined]
  private expectKey = false
  private captured: number[] | undefined
  private number = ''

  feed(bytes: Uint8Array, from = 0, to = bytes.length): void {
    for (let i = from; i < to; i++) {
      const b = bytes[i]
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (b === BACKSLASH) this.escaped = true
        else if (b === QUOTE) {
          this.inString = false
          this.endString()
          continue
        }
        if (this.captured && this.captured.length < CAPTURE * 4) this.captured.push(b)
        continue
      }
      switch (b) {
        case QUOTE:
          this.inString = true
          this.captured = this.depth <= 2 ? [] : undefined
          break
        case 0x7b: // {
        case 0x5b: // [
          this.endNumber()
          this.depth++
          if (this.depth > this.deepest) this.deepest = this.depth
          if (this.depth <= 3) this.containers[this.depth] = b
          if (this.depth <= 2) this.keys[this.depth] = undefined
          this.expectKey = b === 0x7b
          break
        case 0x7d: // }
        case 0x5d: // ]
          this.endNumber()
          this.depth = Math.max(0, this.depth - 1)
          this.expectKey = false
          break
        case 0x3a: // :
          this.expectKey = false
          break
        case 0x2c: // ,
          this.endNumber()
          this.expectKey = this.containers[Math.min(this.depth, 3)] === 0x7b
          break
        default:
          // A number (or literal) as the value of the top-level id.
          if (this.depth === 1 && this.keys[1] === 'id' && b > 0x20 && this.number.length < CAPTURE) this.number += String.fromCharCode(b)
      }
    }
  }

  private endString(): void {
    const bytes = this.captured
    this.captured = undefined
    if (!bytes || this.depth > 2) return
    let text: string | undefined
    try {
      text = JSON.parse(`"${new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes))}"`) as string
    } catch {
      text = undefined // cut at the capture limit, or not UTF-8: no key or value the outline uses
    }
    if (this.expectKey) {
      this.keys[this.depth] = text
      if (this.depth === 1 && (text === 'result' || text === 'error')) this.response = true
      return
    }
    if (text === undefined) return
    if (this.depth === 1 && this.keys[1] === 'id') this.id = text
    else if (this.depth === 1 && this.keys[1] === 'method') this.method = text
    else if (this.depth === 2 && this.keys[1] === 'params' && this.keys[2] === 'name') this.tool = text
  }

  private endNumber(): void {
    if (this.number === '') return
    const value = Number(this.number)
    if (this.depth === 1 && Number.isFinite(value)) this.id = value
    this.number = ''
  }
}

/** Why a line was refused, with a tool error code (for a tools/call) and a JSON-RPC code. */
interface Refusal {
  readonly code: string
  readonly rpc: number
  readonly message: string
}

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(bytes % (1024 * 1024) === 0 ? 0 : 1)} MiB`

export class LimitedStdioTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  /** The line being read: its chunks (until it is over the limit), size and outline. */
  private chunks: Uint8Array[] = []
  private size = 0
  private outline = new Outline()
  private started = false
  private closed = false
  private readonly decoder = new TextDecoder('utf-8', { fatal: true })

  constructor(
    private readonly stdin: NodeJS.ReadableStream = process.stdin,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    readonly limits: StdioLimits = DEFAULT_LIMITS,
  ) {}

  async start(): Promise<void> {
    if (this.started) throw new Error('rewindfs: the stdio transport is started already')
    this.started = true
    this.stdin.on('data', this.ondata)
    this.stdin.on('error', this.onstreamerror)
  }

  private readonly onstreamerror = (error: Error): void => {
    this.onerror?.(error)
  }

  private readonly ondata = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    let start = 0
    for (let end = bytes.indexOf(NEWLINE, start); end >= 0; end = bytes.indexOf(NEWLINE, start)) {
      this.take(bytes, start, end)
      this.endLine()
      start = end + 1
    }
    if (start < bytes.length) this.take(bytes, start, bytes.length)
  }

  /** Adds bytes to the line: outlined always, kept only while the line is within the limit. */
  private take(bytes: Uint8Array, from: number, to: number): void {
    if (to <= from) return
    this.outline.feed(bytes, from, to)
    this.size += to - from
    if (this.size <= this.limits.maxMessageBytes + 1) this.chunks.push(bytes.subarray(from, to))
    else this.chunks = [] // over the limit: what came so far is let go as well
  }

  private endLine(): void {
    const { chunks, size, outline } = this
    this.chunks = []
    this.size = 0
    this.outline = new Outline()
    // A CRLF line end counts as one.
    let line = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
    let length = size
    if (length <= this.limits.maxMessageBytes + 1 && line[line.length - 1] === 0x0d) {
      line = line.subarray(0, line.length - 1)
      length--
    }
    if (length === 0) return
    const refusal = this.check(length, outline)
    if (refusal) return this.refuse(outline, refusal)
    let message: unknown
    try {
      message = JSON.parse(this.decoder.decode(line))
    } catch (error) {
      if (error instanceof TypeError) return this.refuse(outline, { code: 'EILSEQ', rpc: ErrorCode.ParseError, message: 'the message is not valid UTF-8 (JSON-RPC messages are UTF-8 text)' })
      return this.refuse(outline, { code: 'EINVALIDINPUT', rpc: ErrorCode.ParseError, message: `the message is not JSON: ${(error as Error).message}` })
    }
    const parsed = JSONRPCMessageSchema.safeParse(message)
    if (!parsed.success) return this.refuse(outline, { code: 'EINVALIDINPUT', rpc: ErrorCode.InvalidRequest, message: 'the message is not a JSON-RPC 2.0 request, notification or response' })
    this.onmessage?.(parsed.data)
  }

  /** The limits a line breaks, before it is parsed. */
  private check(length: number, outline: Outline): Refusal | undefined {
    const { maxMessageBytes, maxDepth } = this.limits
    if (length > maxMessageBytes) {
      return {
        code: 'EMSGSIZE',
        rpc: ErrorCode.InvalidRequest,
        message: `the message is ${mib(length)}; this server accepts messages of at most ${mib(maxMessageBytes)} (${maxMessageBytes} bytes). Send less per call (write a large file in parts).`,
      }
    }
    if (outline.deepest > maxDepth) {
      return { code: 'EINVALIDINPUT', rpc: ErrorCode.InvalidRequest, message: `the message nests arrays and objects ${outline.deepest} deep; this server accepts at most ${maxDepth}` }
    }
    return undefined
  }

  /** Answers a refused line: a tool error for a tools/call, else a JSON-RPC error (id null when none was found). */
  private refuse(outline: Outline, refusal: Refusal): void {
    const what = outline.method === 'tools/call' && outline.tool !== undefined ? `tools/call ${outline.tool}` : (outline.method ?? 'a message')
    this.onerror?.(new Error(`refused ${what}: ${refusal.message}`))
    if (outline.method !== undefined && outline.id === undefined) return // a notification: nothing to answer
    // A response's id is the server's own: only a request's id is answered.
    const id = outline.response ? null : (outline.id ?? null)
    if (outline.method === 'tools/call' && id !== null) {
      const body = { error: { code: refusal.code, message: refusal.message } }
      void this.write({ jsonrpc: '2.0', id, result: { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] } })
      return
    }
    void this.write({ jsonrpc: '2.0', id, error: { code: refusal.rpc, message: refusal.message } })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(message)
  }

  private write(message: unknown): Promise<void> {
    if (this.closed) return Promise.resolve()
    return new Promise((resolve) => {
      if (this.stdout.write(JSON.stringify(message) + '\n')) resolve()
      else this.stdout.once('drain', resolve)
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.stdin.off('data', this.ondata)
    this.stdin.off('error', this.onstreamerror)
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause()
    this.chunks = []
    this.onclose?.()
  }
}
