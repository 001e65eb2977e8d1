/**
 * Helper containers: the only way into a volume through the Engine API. A created (never started)
 * container with the volume mounted at /v serves archive reads, stats and uploads; a command runs
 * in a short-lived container (network none) that is always removed, also when it fails.
 */
import type { Readable } from 'node:stream'
import * as z from 'zod/mini'
import { DockerVolumeError } from './errors.js'
import { type DockerEngine, apiError, messageOf, readAll } from './engine.js'

/** Where helper containers mount the volume. */
export const MOUNT = '/v'
/** Label on every helper container, naming the volume, so a leaked one can be found. */
export const HELPER_LABEL = 'rewindfs.docker-volume'

const created = z.object({ Id: z.string() })
const waited = z.object({ StatusCode: z.number() })
/** The X-Docker-Container-Path-Stat header: Go's os.FileMode and an RFC 3339 mtime. */
const pathStat = z.object({ name: z.string(), size: z.number(), mode: z.number(), mtime: z.string(), linkTarget: z.string() })
export type PathStat = z.infer<typeof pathStat>

/** Container output without a TTY is multiplexed: 8-byte frame headers (stream, 0, 0, 0, size BE). */
function demultiplex(buffer: Buffer): string {
  const parts: Buffer[] = []
  for (let i = 0; i + 8 <= buffer.length; ) {
    const size = buffer.readUInt32BE(i + 4)
    parts.push(buffer.subarray(i + 8, i + 8 + size))
    i += 8 + size
  }
  return Buffer.concat(parts).toString('utf8')
}

const archivePath = (id: string, path: string) => `/containers/${id}/archive?path=${encodeURIComponent(MOUNT + (path === '/' ? '' : path))}`

export class Helper {
  constructor(
    readonly engine: DockerEngine,
    readonly volume: string,
    readonly image: string,
  ) {}

  /** Creates a container with the volume at /v that would run `sh -c command`. */
  async create(command: string): Promise<string> {
    const body = {
      Image: this.image,
      Entrypoint: ['sh', '-c'],
      Cmd: [command],
      NetworkDisabled: true,
      Labels: { [HELPER_LABEL]: this.volume },
      HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: this.volume, Target: MOUNT }] },
    }
    return (await this.engine.json('POST', '/containers/create', created, body)).Id
  }

  async remove(id: string): Promise<void> {
    const answer = await this.engine.send('DELETE', `/containers/${id}?force=true`)
    const text = (await readAll(answer.body)).toString('utf8')
    // 404: already gone, which is what we wanted.
    if (answer.status >= 300 && answer.status !== 404) throw apiError('DELETE', `/containers/${id}`, answer.status, messageOf(text))
  }

  /** Runs `sh -c command` to the end in a fresh container; a non-zero exit throws with its output. */
  async run(command: string, what: string): Promise<void> {
    const id = await this.create(command)
    try {
      await this.engine.call('POST', `/containers/${id}/start`)
      const { StatusCode } = await this.engine.json('POST', `/containers/${id}/wait`, waited)
      if (StatusCode !== 0) {
        const logs = demultiplex(await this.engine.call('GET', `/containers/${id}/logs?stdout=true&stderr=true&tail=20`))
        throw new DockerVolumeError('ERR_DOCKER_HELPER_FAILED', `${what} exited with status ${StatusCode} in a helper container on volume '${this.volume}': ${logs.trim() || '(no output)'}`)
      }
    } finally {
      await this.remove(id)
    }
  }

  /** A tar of `path` in the volume (its entries named from the path's last component), or undefined if absent. */
  async archive(id: string, path: string): Promise<Readable | undefined> {
    const answer = await this.engine.send('GET', archivePath(id, path))
    if (answer.status === 404) {
      answer.body.resume()
      return undefined
    }
    if (answer.status !== 200) throw apiError('GET', archivePath(id, path), answer.status, messageOf((await readAll(answer.body)).toString('utf8')))
    return answer.body
  }

  /** Extracts a tar into directory `path` of the volume (which must exist). */
  async put(id: string, path: string, tar: Readable): Promise<void> {
    const answer = await this.engine.send('PUT', archivePath(id, path), tar, { 'Content-Type': 'application/x-tar' })
    const text = (await readAll(answer.body)).toString('utf8')
    if (answer.status !== 200) throw apiError('PUT', archivePath(id, path), answer.status, messageOf(text))
  }

  /** lstat of one path in the volume without its contents (HEAD archive), or undefined if absent. */
  async stat(id: string, path: string): Promise<PathStat | undefined> {
    const answer = await this.engine.send('HEAD', archivePath(id, path))
    answer.body.resume()
    if (answer.status === 404) return undefined
    // A HEAD answer has no body: the daemon's reason, if any, is only in its log.
    if (answer.status !== 200) throw apiError('HEAD', archivePath(id, path), answer.status, `cannot stat '${path}' in the volume (see the daemon's log)`)
    const header = answer.headers['x-docker-container-path-stat']
    if (typeof header !== 'string') throw apiError('HEAD', archivePath(id, path), answer.status, 'no path stat in the answer')
    let value: unknown
    try {
      value = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    } catch {
      throw apiError('HEAD', archivePath(id, path), answer.status, 'the path stat header is not base64 JSON')
    }
    const parsed = pathStat.safeParse(value)
    if (!parsed.success) throw apiError('HEAD', archivePath(id, path), answer.status, `unexpected path stat: ${parsed.error.message}`)
    return parsed.data
  }
}
