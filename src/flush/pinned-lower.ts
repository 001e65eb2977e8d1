/**
 * The lower source as every tree of the workspace first saw it. Checkpoints, undo records and the
 * live tree all fall through to the lower source for what they never changed, so before a flush
 * rewrites a path of the workspace's own lower source, that path's old state is pinned here (its
 * content goes into the blob store). Trees keep reading the generation they were made over, so
 * history, undo and restore stay exact and never read the new bytes on disk. With nothing pinned,
 * every call goes straight to the source.
 */
import type { BlobId, BlobStore } from '../blob/store.js'
import type { JsonValue } from '../engine/state.js'
import { dirname } from '../path.js'
import type { LowerSource, LowerStat, WalkerEntry } from '../lower/source.js'

/** A pinned path: its old stat and content (file blob or symlink target), or null for "absent". */
interface Pin {
  readonly stat: LowerStat
  readonly blob?: BlobId
  readonly target?: string
}

export class PinnedLower implements LowerSource {
  readonly kind: string
  readonly id: string | undefined
  private readonly pins = new Map<string, Pin | null>()
  /** Directory listings as they were, for directories whose names a flush changes. */
  private readonly listings = new Map<string, string[]>()

  constructor(
    readonly source: LowerSource,
    private readonly blobs: BlobStore,
  ) {
    this.kind = source.kind
    this.id = source.id
    if (source.reserved) this.reserved = (path) => source.reserved!(path)
    if (source.readdirTypes) this.readdirTypes = (path) => this.typed(path)
    if (source.readInto) this.readInto = (path, target, offset, length, position) => this.part(path, target, offset, length, position)
  }

  /** The source's part reads (see LowerSource.readInto), where it has them. */
  readonly readInto?: (path: string, target: Uint8Array, offset: number, length: number, position: number) => number

  /** A part of a pinned file is read from its pinned content, of any other from the source. */
  private part(path: string, target: Uint8Array, offset: number, length: number, position: number): number {
    const pin = this.pins.size > 0 ? this.pins.get(path) : undefined
    if (pin?.blob === undefined) return this.source.readInto!(path, target, offset, length, position)
    const bytes = this.blobs.get(pin.blob).subarray(position, position + length)
    target.set(bytes, offset)
    return bytes.byteLength
  }

  /** The source's typed listing (see LowerSource.readdirTypes), where it has one. */
  readonly readdirTypes?: (path: string) => WalkerEntry[]

  /** A pinned listing with each name's type as this source's stat gives it (rare: the source's own listing is not the one shown). */
  private typed(path: string): WalkerEntry[] {
    const names = this.listings.get(path)
    if (names === undefined) return this.source.readdirTypes!(path)
    return names.flatMap((name) => {
      const type = this.stat(path === '/' ? `/${name}` : `${path}/${name}`)?.type
      return type === undefined ? [] : [{ name, type }]
    })
  }

  /** The source's reserved paths (see LowerSource.reserved). */
  readonly reserved?: (path: string) => string | undefined

  stat(path: string): LowerStat | undefined {
    if (this.pins.size > 0) {
      const pin = this.pins.get(path)
      if (pin !== undefined) return pin?.stat
    }
    return this.source.stat(path)
  }

  readdir(path: string): string[] {
    return this.listings.get(path)?.slice() ?? this.source.readdir(path)
  }

  readFile(path: string): Uint8Array {
    const pin = this.pins.size > 0 ? this.pins.get(path) : undefined
    return pin?.blob !== undefined ? this.blobs.get(pin.blob) : this.source.readFile(path)
  }

  readlink(path: string): string {
    const pin = this.pins.size > 0 ? this.pins.get(path) : undefined
    return pin?.target ?? this.source.readlink(path)
  }

  prefetch(paths: readonly string[]): Promise<void> {
    return this.source.prefetch?.(paths.filter((path) => !this.pins.has(path))) ?? Promise.resolve()
  }

  close(): Promise<void> | void {
    return this.source.close?.()
  }

  get pinned(): number {
    return this.pins.size
  }

  /** The paths pinned so far, whose old state the trees still show (an exec runner's layer needs them). */
  pinnedPaths(): IterableIterator<string> {
    return this.pins.keys()
  }

  /**
   * Pins `path` (and, for a directory, everything under it) and its parent's listing, as they are
   * now, unless already pinned: the first pin is the generation the trees were made over.
   * Resolves to the blobs it stored (to make durable before the source changes).
   */
  async pin(path: string): Promise<BlobId[]> {
    const stored: BlobId[] = []
    const visit = async (at: string) => {
      if (this.pins.has(at)) return
      const stat = this.source.stat(at)
      if (!stat) {
        this.pins.set(at, null)
        return
      }
      if (stat.type === 'file') {
        await this.source.prefetch?.([at])
        const blob = this.blobs.put(this.source.readFile(at).slice())
        this.blobs.retain(blob)
        stored.push(blob)
        this.pins.set(at, { stat, blob })
      } else if (stat.type === 'symlink') this.pins.set(at, { stat, target: this.source.readlink(at) })
      else {
        this.pins.set(at, { stat })
        if (!this.listings.has(at)) this.listings.set(at, this.source.readdir(at))
        for (const name of this.listings.get(at)!) await visit(at === '/' ? `/${name}` : `${at}/${name}`)
      }
    }
    await visit(path)
    // The parent's listing and times change with this name; higher directories change only if the
    // parent is new, and then the parent is an entry of the flush and pins its own parent.
    const parent = dirname(path)
    if (path !== '/' && !this.listings.has(parent)) {
      const stat = this.source.stat(parent)
      if (stat?.type === 'dir') {
        this.listings.set(parent, this.source.readdir(parent))
        if (!this.pins.has(parent)) this.pins.set(parent, { stat })
      }
    }
    return stored
  }

  /** Replaces a pinned file's content with `empty` (purge); returns the blob it held. */
  forget(path: string, empty: BlobId): BlobId | undefined {
    const pin = this.pins.get(path)
    if (pin?.blob === undefined) return undefined
    this.pins.set(path, { stat: { ...pin.stat, size: 0 }, blob: empty })
    return pin.blob
  }

  /** Blobs pinned content lives in (garbage-collection roots). */
  *pinnedBlobs(): Iterable<BlobId> {
    for (const pin of this.pins.values()) if (pin?.blob !== undefined) yield pin.blob
  }

  /** Everything pinned, for the durable store. */
  toJSON(): JsonValue {
    return {
      pins: [...this.pins].map(([path, pin]) => [path, pin === null ? null : ({ ...pin, stat: { ...pin.stat } } as unknown as JsonValue)]),
      listings: [...this.listings],
    }
  }

  /** Loads what toJSON wrote (after the store's blobs are loaded). */
  load(data: { pins: [string, Pin | null][]; listings: [string, string[]][] }): void {
    for (const [path, pin] of data.pins) this.pins.set(path, pin)
    for (const [path, names] of data.listings) this.listings.set(path, names)
  }
}
