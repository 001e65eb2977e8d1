/**
 * A Docker volume as a lower source and a flush target, through the Docker Engine API only (no
 * docker CLI, no host path of the volume): reads go through a created, never started helper
 * container with the volume at /v; a flush uploads a staging folder and a manifest, then one helper
 * command moves everything into place. The index (and contents up to `preloadBytes`) is read on open.
 */
import {
  type EntryType,
  type FlushEntry,
  type FlushProgress,
  type FlushTarget,
  FsError,
  type IndexedEntry,
  IndexedSource,
  PRELOAD_BYTES,
  basename,
  dirname,
  flushEngine,
  isWithin,
  normalize,
} from 'rewindfs/adapter-kit'
import { STAGING, readIndex, readSingleFile, versionIn, versionOf, versionOfStat, wholeSeconds } from './archive.js'
import { DockerEngine } from './engine.js'
import { DockerVolumeError, invalid, noHelperImage, noVolume } from './errors.js'
import { Helper, MOUNT } from './helper.js'
import { RUNNER, flushId, stagingTar } from './manifest.js'

export { DockerVolumeError, type DockerVolumeErrorCode } from './errors.js'
export { PRELOAD_BYTES } from 'rewindfs/adapter-kit'

export interface DockerVolumeOptions {
  /** The volume's name (it must exist: nothing is created for you). */
  name: string
  /** The daemon's unix socket, default /var/run/docker.sock ('unix://' prefix accepted). */
  socketPath?: string
  /** An image with busybox-style sh, mv, rm, mkdir, chmod, touch (-d @seconds), tail and find; default 'busybox'. */
  helperImage?: string
  /** Contents loaded on open up to this many bytes in total; the rest load on prefetch. Default PRELOAD_BYTES. */
  preloadBytes?: number
}

const RUNNER_STAYS = 'the flush runner (the staged flush stays in the volume and is retried on the next open or flush)'
const VOLUME_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/
const IMAGE_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.:/@-]*$/
/** Requests in flight at once for per-path work (prefetch, versions). */
const PARALLEL = 8

async function eachLimited<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index])
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker))
  return results
}

function checkOptions(options: DockerVolumeOptions): Required<DockerVolumeOptions> {
  if (typeof options !== 'object' || options === null) throw invalid('dockerVolume needs an options object { name, socketPath?, helperImage?, preloadBytes? }')
  const { name, socketPath = '/var/run/docker.sock', helperImage = 'busybox', preloadBytes = PRELOAD_BYTES } = options
  if (typeof name !== 'string' || !VOLUME_NAME.test(name)) throw invalid(`name must be a Docker volume name ([a-zA-Z0-9][a-zA-Z0-9_.-]+), got ${JSON.stringify(name)}`)
  if (typeof socketPath !== 'string' || socketPath.replace(/^unix:\/\//, '') === '') throw invalid(`socketPath must be the path of a unix socket, got ${JSON.stringify(socketPath)}`)
  if (typeof helperImage !== 'string' || !IMAGE_NAME.test(helperImage) || helperImage.includes('..')) throw invalid(`helperImage must be an image reference, got ${JSON.stringify(helperImage)}`)
  if (typeof preloadBytes !== 'number' || Number.isNaN(preloadBytes) || preloadBytes < 0) throw invalid(`preloadBytes must be a number ≥ 0, got ${String(preloadBytes)}`)
  return { name, socketPath: socketPath.replace(/^unix:\/\//, ''), helperImage, preloadBytes }
}

/** Opens a volume: checks daemon, volume and helper image, finishes any interrupted flush, reads the index. */
export async function dockerVolume(options: DockerVolumeOptions): Promise<DockerVolume> {
  const { name, socketPath, helperImage, preloadBytes } = checkOptions(options)
  const engine = new DockerEngine(socketPath)
  try {
    await engine.call('GET', '/_ping')
    if (!(await engine.exists(`/volumes/${name}`))) throw noVolume(name)
    if (!(await engine.exists(`/images/${helperImage}/json`))) throw noHelperImage(helperImage)
    const helper = new Helper(engine, name, helperImage)
    const reader = await helper.create('exit 0')
    try {
      if (await helper.stat(reader, STAGING)) await helper.run(RUNNER, RUNNER_STAYS)
      return new DockerVolume(helper, reader, await readVolume(helper, reader, preloadBytes), preloadBytes)
    } catch (error) {
      // The open failed already: that error is the one to report, removal is best effort.
      await helper.remove(reader).catch(() => undefined)
      throw error
    }
  } catch (error) {
    engine.close()
    throw error
  }
}

/** Where each entry leaves the volume, in index terms: what `apply` resolves to and the index takes. */
function outcome(entry: FlushEntry, now: Date): IndexedEntry | undefined {
  if (entry.kind === 'delete') return undefined
  if (entry.kind === 'symlink') {
    const size = Buffer.byteLength(entry.target)
    const at = wholeSeconds(now.getTime())
    return { type: 'symlink', mode: 0o777, size, mtimeMs: at * 1000, target: entry.target, version: versionOf('symlink', 0o777, size, at) }
  }
  const mode = entry.mode & 0o7777
  const at = wholeSeconds(entry.mtimeMs)
  if (entry.kind === 'dir') return { type: 'dir', mode, size: 0, mtimeMs: at * 1000, version: versionOf('dir', mode, 0, at) }
  const size = entry.content.byteLength
  return { type: 'file', mode, size, mtimeMs: at * 1000, version: versionOf('file', mode, size, at), content: entry.content }
}

export class DockerVolume extends IndexedSource implements FlushTarget {
  readonly flusher = flushEngine
  private closed = false
  /**
   * An apply that failed after it started uploading: whether its manifest landed whole (and a later
   * run applied it) or torn (never applied) cannot be told from here, so the next recover rereads the index.
   */
  private unfinished = false

  constructor(
    private readonly helper: Helper,
    /** The created, never started container that serves reads and uploads. */
    private readonly reader: string,
    entries: Map<string, IndexedEntry>,
    private readonly preloadBytes: number,
  ) {
    super('docker-volume', `docker-volume:${helper.volume}`, entries, (paths) => loadContents(helper, reader, paths))
  }

  get name(): string {
    return this.helper.volume
  }

  /** The flush staging folder at the volume root. */
  reserved(path: string): string | undefined {
    return isWithin(path, STAGING) ? `${STAGING} is the volume's flush staging folder, which rewindfs keeps to itself` : undefined
  }

  private open(operation: string): void {
    if (this.closed) throw new DockerVolumeError('ERR_DOCKER_VOLUME_CLOSED', `${operation} on volume '${this.name}' after close()`)
  }

  override async prefetch(paths: readonly string[]): Promise<void> {
    this.open('prefetch')
    await super.prefetch(paths)
  }

  /**
   * One path stat per path, shallowest first: nothing is under a path found absent or not a directory,
   * so a new tree of a thousand files costs one stat of its root.
   */
  async versions(paths: readonly string[]): Promise<(string | undefined)[]> {
    this.open('versions')
    const versions: (string | undefined)[] = new Array(paths.length)
    const leaves = new Set<string>()
    const underLeaf = (path: string) => {
      for (let parent = dirname(path); parent !== '/'; parent = dirname(parent)) if (leaves.has(parent)) return true
      return false
    }
    const depth = (path: string) => (path === '/' ? 0 : path.split('/').length - 1)
    const levels = [...new Set(paths.map(depth))].sort((a, b) => a - b)
    for (const level of levels) {
      const indices = [...paths.keys()].filter((i) => depth(paths[i]) === level)
      await eachLimited(indices, async (i) => {
        const path = paths[i]
        if (isWithin(path, STAGING) || underLeaf(path)) return
        versions[i] = await this.versionOf(path)
        if (!versions[i]?.startsWith('d:')) leaves.add(path)
      })
    }
    return versions
  }

  private async versionOf(path: string): Promise<string | undefined> {
    try {
      const stat = await this.helper.stat(this.reader, path)
      return stat && versionOfStat(stat)
    } catch (error) {
      // Docker's path stat resolves a symlink's target and fails on a loop or an overlong name: the
      // parent's archive still lists the link itself.
      if (!(error instanceof DockerVolumeError && error.status === 500) || path === '/') throw error
      const parent = dirname(path)
      const archive = await this.helper.archive(this.reader, parent)
      return archive && versionIn(archive, `${parent === '/' ? MOUNT.slice(1) : basename(parent)}/${basename(path)}`)
    }
  }

  async recover(): Promise<void> {
    this.open('recover')
    if (await this.helper.stat(this.reader, STAGING)) await this.helper.run(RUNNER, RUNNER_STAYS)
    if (!this.unfinished) return
    const entries = await readVolume(this.helper, this.reader, this.preloadBytes)
    this.delete('/')
    for (const [path, entry] of entries) this.set(path, entry)
    this.unfinished = false
  }

  async apply(entries: readonly FlushEntry[], onProgress?: (progress: FlushProgress) => void): Promise<(string | undefined)[]> {
    this.open('apply')
    await this.recover()
    this.check(entries)
    const total = entries.length
    if (total === 0) return []
    const now = new Date()
    const outcomes = entries.map((entry) => outcome(entry, now))
    onProgress?.({ done: 0, total })
    this.unfinished = true
    await this.helper.put(this.reader, '/', stagingTar(flushId(now.getTime()), entries, now))
    // Staged with its manifest: from here the flush happens, now or on the next recover.
    await this.helper.run(RUNNER, RUNNER_STAYS)
    this.unfinished = false
    this.record(entries, outcomes)
    onProgress?.({ done: total, total, path: entries[total - 1].path })
    return outcomes.map((entry) => entry?.version)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    try {
      await this.helper.remove(this.reader)
    } finally {
      this.helper.engine.close()
    }
  }

  /** Refuses entries the volume could not take, before anything is sent: bad paths, missing parents. */
  private check(entries: readonly FlushEntry[]): void {
    if (!Array.isArray(entries)) throw invalid('apply needs an array of flush entries')
    const made = new Map<string, EntryType>()
    const deleted: string[] = []
    const typeAt = (path: string): EntryType | undefined => {
      if (made.has(path)) return made.get(path)
      if (deleted.some((root) => isWithin(path, root))) return undefined
      return this.stat(path)?.type
    }
    for (const entry of entries) {
      const path: unknown = entry?.path
      if (typeof path !== 'string' || !path.startsWith('/') || normalize(path) !== path || path === '/') throw invalid(`a flush entry needs a normalised absolute path other than '/', got ${JSON.stringify(path)}`)
      if (isWithin(path, STAGING)) throw invalid(`'${path}' is inside the flush staging folder ${STAGING}, which rewindfs keeps to itself`)
      if (entry.kind === 'delete') {
        deleted.push(path)
        for (const key of made.keys()) if (isWithin(key, path)) made.delete(key)
        continue
      }
      if (entry.kind === 'file') {
        if (!(entry.content instanceof Uint8Array)) throw invalid(`the flush entry for '${path}' has no Uint8Array content`)
      } else if (entry.kind === 'symlink') {
        if (typeof entry.target !== 'string' || entry.target === '' || entry.target.includes('\0')) throw invalid(`the symlink '${path}' needs a non-empty target without NUL`)
      } else if (entry.kind !== 'dir') throw invalid(`the flush entry for '${path}' has an unknown kind ${JSON.stringify((entry as { kind?: unknown }).kind)}`)
      if (entry.kind !== 'symlink' && (!Number.isInteger(entry.mode) || !Number.isFinite(entry.mtimeMs))) throw invalid(`the flush entry for '${path}' needs an integer mode and a finite mtimeMs`)
      if (made.has(path)) throw invalid(`'${path}' is made twice in one flush`)
      const parent = dirname(path)
      if (parent !== '/' && typeAt(parent) !== 'dir') throw new FsError('ENOENT', 'flush', path, undefined, `no directory '${parent}' in volume '${this.name}' or earlier in the flush`)
      made.set(path, entry.kind)
    }
  }

  /** The index after an apply, so reads show the new state without reading the volume again. */
  private record(entries: readonly FlushEntry[], outcomes: readonly (IndexedEntry | undefined)[]): void {
    entries.forEach((entry, index) => {
      const next = outcomes[index]
      const existing = this.stat(entry.path)
      if (!next || (existing?.type === 'dir' && next.type !== 'dir')) this.delete(entry.path)
      if (next) this.set(entry.path, next)
    })
  }
}

async function readVolume(helper: Helper, reader: string, preloadBytes: number): Promise<Map<string, IndexedEntry>> {
  const archive = await helper.archive(reader, '/')
  if (!archive) throw new DockerVolumeError('ERR_DOCKER_API', `the volume '${helper.volume}' is mounted but its root cannot be read`)
  return readIndex(archive, preloadBytes)
}

async function loadContents(helper: Helper, reader: string, paths: readonly string[]): Promise<Map<string, Uint8Array>> {
  const contents = await eachLimited(paths, async (path) => {
    const archive = await helper.archive(reader, path)
    const content = archive && (await readSingleFile(archive))
    if (content === undefined) throw new FsError('ENOENT', 'open', path, undefined, `no longer a file in volume '${helper.volume}'`)
    return [path, content] as const
  })
  return new Map(contents)
}
