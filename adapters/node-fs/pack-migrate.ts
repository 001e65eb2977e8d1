/**
 * The directory store's first layout — a `journal` file of lines and one file per blob under
 * `blobs/ab/<hex id>` — read as it is when the store is opened read-only, and migrated into pack
 * segments when it is opened for writing. Migration copies every blob and the journal, bytes as
 * they are (damage stays damage, a torn tail stays torn for the engine to handle), makes the pack
 * durable, and only then writes the `format` file: the one step that switches the store over. A
 * crash before it leaves the old layout in charge (the half-made pack is discarded on the next
 * open); after it, the old files are removed.
 */
import { hostFs as fs } from './host-fs.js'
import { codeOf } from './confine.js'
import { isTempName, syncDirectory } from './files.js'
import type { PackLog } from './pack.js'

/** Migration writes blobs to the pack in batches of about this many bytes. */
const BATCH = 16 * 1024 * 1024

function unhex(name: string): string | undefined {
  return /^(?:[0-9a-f]{2})+$/.test(name) ? Buffer.from(name, 'hex').toString('utf8') : undefined
}

/** Whether the directory holds a store in the first layout. */
export function isFirstLayout(root: string): boolean {
  return fs.existsSync(`${root}/journal`) || fs.existsSync(`${root}/blobs`)
}

/** Every blob file of the first layout: its id and path. */
function blobFiles(root: string): [string, string][] {
  const folder = `${root}/blobs`
  const files: [string, string][] = []
  let buckets: string[]
  try {
    buckets = fs.readdirSync(folder)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return files
    throw error
  }
  for (const bucket of buckets.sort()) {
    for (const name of fs.readdirSync(`${folder}/${bucket}`).sort()) {
      const id = isTempName(name) ? undefined : unhex(name)
      if (id !== undefined) files.push([id, `${folder}/${bucket}/${name}`])
    }
  }
  return files
}

/** The first layout, read-only: what a reader opened beside a writer of an older rewindfs, or `rewindfs verify`, sees. */
export class FirstLayout {
  constructor(private readonly root: string) {}

  private blobFile(id: string): string {
    const name = Buffer.from(id, 'utf8').toString('hex')
    return `${this.root}/blobs/${name.slice(0, 2)}/${name}`
  }

  async journalText(): Promise<string> {
    try {
      return await fs.promises.readFile(`${this.root}/journal`, 'utf8')
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return ''
      throw error
    }
  }

  async read(id: string): Promise<Uint8Array | undefined> {
    try {
      const data = await fs.promises.readFile(this.blobFile(id))
      return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined
      throw error
    }
  }

  readSync(id: string): Uint8Array | undefined {
    try {
      const data = fs.readFileSync(this.blobFile(id))
      return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined
      throw error
    }
  }

  ids(): string[] {
    return blobFiles(this.root).map(([id]) => id)
  }

  sizes(): [string, number][] {
    return blobFiles(this.root).map(([id, file]) => [id, fs.statSync(file).size])
  }

  /** One blob file's size (a stat: this layout has no index). */
  sizeOf(id: string): number | undefined {
    try {
      return fs.statSync(this.blobFile(id)).size
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined
      throw error
    }
  }

  /** Every blob file listed and its size summed: this layout has no index to keep totals in. */
  totals(): { blobs: number; bytes: number; unreadable: string[] } {
    const sizes = this.sizes()
    return { blobs: sizes.length, bytes: sizes.reduce((sum, [, size]) => sum + size, 0), unreadable: [] }
  }
}

/**
 * Moves a first-layout store into `packs` (empty, just opened for writing): blobs, then the
 * journal as one reset record, fdatasync, then `commit()` (writes the format file), then the old
 * files go. A pack left by a migration a crash interrupted must be removed before.
 */
export function migrate(root: string, packs: PackLog, commit: () => void): void {
  const files = blobFiles(root)
  let batch: [string, Uint8Array][] = []
  let bytes = 0
  for (const [id, file] of files) {
    const data = fs.readFileSync(file)
    batch.push([id, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)])
    bytes += data.byteLength
    if (bytes >= BATCH) {
      packs.putBlobs(batch)
      batch = []
      bytes = 0
    }
  }
  packs.putBlobs(batch)
  let journal: string | undefined
  try {
    journal = fs.readFileSync(`${root}/journal`, 'utf8')
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
  // Byte for byte, a torn tail or damage included: the engine deals with them as it did before.
  if (journal !== undefined && journal !== '') packs.appendReset([journal])
  packs.syncNow()
  commit()
  removeFirstLayout(root)
}

/** Removes what the first layout left once the pack holds it (after a migration, or one a crash cut short after its commit). */
export function removeFirstLayout(root: string): void {
  const folder = `${root}/blobs`
  const buckets = new Set<string>()
  for (const [, file] of blobFiles(root)) {
    fs.unlinkSync(file)
    buckets.add(file.slice(0, file.lastIndexOf('/')))
  }
  for (const bucket of buckets) removeIfEmpty(bucket)
  if (fs.existsSync(folder)) {
    for (const name of fs.readdirSync(folder)) {
      // Temp files of writes a crash cut short are rewindfs's own; anything else is left.
      const bucket = `${folder}/${name}`
      if (fs.statSync(bucket).isDirectory()) for (const entry of fs.readdirSync(bucket)) if (isTempName(entry)) fs.unlinkSync(`${bucket}/${entry}`)
      removeIfEmpty(bucket)
    }
    removeIfEmpty(folder)
  }
  try {
    fs.unlinkSync(`${root}/journal`)
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error
  }
  syncDirectory(root)
}

/** rmdir that leaves a folder holding anything rewindfs did not write (a stray file is not ours to delete). */
function removeIfEmpty(folder: string): void {
  try {
    fs.rmdirSync(folder)
  } catch (error) {
    const code = codeOf(error)
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT' && code !== 'ENOTDIR') throw error
  }
}
