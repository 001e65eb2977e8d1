/**
 * A minimal Docker Engine API client: plain HTTP over the daemon's unix socket (node:http with
 * `socketPath`), unversioned paths so any daemon answers in its own API version. Connection
 * failures become ERR_DOCKER_UNAVAILABLE; non-2xx answers ERR_DOCKER_API with the daemon's message.
 */
import { Agent, request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import * as z from 'zod/mini'
import { DockerVolumeError, unavailable } from './errors.js'

export interface Answer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: IncomingMessage
}

const errorBody = z.object({ message: z.string() })

/** The daemon's error text, or the raw body when it is not the usual `{ message }`. */
export function messageOf(text: string): string {
  try {
    const parsed = errorBody.safeParse(JSON.parse(text))
    if (parsed.success) return parsed.data.message
  } catch {
    // not JSON: the raw text says it
  }
  return text.trim() || '(empty answer)'
}

export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of body) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

export class DockerEngine {
  // Keep-alive: a prefetch or a versions() check is many small requests.
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 8 })

  constructor(readonly socketPath: string) {}

  /** Sends a request; resolves with the streaming answer whatever its status. */
  send(method: string, path: string, body?: Buffer | Readable, headers: Record<string, string> = {}): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: this.socketPath, agent: this.agent, method, path, headers: { Host: 'docker', ...headers } }, (res) =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }),
      )
      let answered = false
      req.on('response', () => (answered = true))
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (answered) return
        const code = error.code ?? ''
        reject(['ENOENT', 'ECONNREFUSED', 'EACCES', 'EPERM', 'ENOTSOCK'].includes(code) ? unavailable(this.socketPath, error) : apiError(method, path, 0, `${code} ${error.message}`, error))
      })
      if (body === undefined) req.end()
      else if (Buffer.isBuffer(body)) req.end(body)
      else {
        body.on('error', (error) => req.destroy(error))
        body.pipe(req)
      }
    })
  }

  /** A request whose answer must be 2xx; resolves with the whole body. */
  async call(method: string, path: string, json?: unknown): Promise<Buffer> {
    const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json))
    const answer = await this.send(method, path, payload, payload ? { 'Content-Type': 'application/json' } : {})
    const text = await readAll(answer.body)
    if (answer.status < 200 || answer.status >= 300) throw apiError(method, path, answer.status, messageOf(text.toString('utf8')))
    return text
  }

  /** Whether something is there: true on 2xx, false on 404, the daemon's error otherwise. */
  async exists(path: string): Promise<boolean> {
    const answer = await this.send('GET', path)
    const text = (await readAll(answer.body)).toString('utf8')
    if (answer.status === 404) return false
    if (answer.status < 200 || answer.status >= 300) throw apiError('GET', path, answer.status, messageOf(text))
    return true
  }

  /** A JSON answer, checked against its schema (the daemon is outside our trust boundary). */
  async json<T>(method: string, path: string, schema: z.ZodMiniType<T>, body?: unknown): Promise<T> {
    const text = (await this.call(method, path, body)).toString('utf8')
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw apiError(method, path, 200, `the answer is not JSON: ${text.slice(0, 200)}`)
    }
    const parsed = schema.safeParse(value)
    if (!parsed.success) throw apiError(method, path, 200, `unexpected answer shape: ${parsed.error.message}`)
    return parsed.data
  }

  close(): void {
    this.agent.destroy()
  }
}

export function apiError(method: string, path: string, status: number, message: string, cause?: unknown): DockerVolumeError {
  const where = `${method} ${path.split('?')[0]}`
  return new DockerVolumeError('ERR_DOCKER_API', `the Docker Engine answered ${status || 'nothing'} to ${where}: ${message}`, status || undefined, { cause })
}
