/**
 * Raw access to an OPFS store for tests (in a dedicated worker), below the Store interface and
 * written apart from adapters/opfs/log.ts (only the kit's byte format is shared): the records of
 * every segment read independently, the journal they hold, and the rewrites a crash or disk rot
 * would make (a torn append, a blob whose bytes changed, a flipped byte, unreadable metadata).
 */
import { pack } from '../../src/adapter-kit.js'
import type { JournalRead } from '../../src/engine/store.js'
import type { RawStore } from '../../testing/store-contract.js'

const { Kind, RECORD_END, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, crc32, decodePlaces, placeKey, readRecordHeader, recordChecksum, recordHead, segmentHeader } = pack

interface SyncHandle {
  write(buffer: Uint8Array, options: { at: number }): number
  truncate(size: number): void
  flush(): void
  close(): void
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface RawRecord {
  segment: number
  name: string
  offset: number
  payloadAt: number
  kind: number
  id: string
  bytes: Uint8Array
  payload: Uint8Array
  torn: boolean
}

const hex = (text: string) => Array.from(encoder.encode(text), (byte) => byte.toString(16).padStart(2, '0')).join('')

export async function storeFolder(name: string, create = false): Promise<FileSystemDirectoryHandle | undefined> {
  const root = await navigator.storage.getDirectory()
  try {
    const top = await root.getDirectoryHandle('rewindfs', { create })
    return await top.getDirectoryHandle(encodeURIComponent(name).replace(/\./g, '%2E'), { create })
  } catch (error) {
    if ((error as Error).name === 'NotFoundError') return undefined
    throw error
  }
}

async function child(folder: FileSystemDirectoryHandle, name: string): Promise<FileSystemDirectoryHandle | undefined> {
  try {
    return await folder.getDirectoryHandle(name)
  } catch {
    return undefined
  }
}

async function names(folder: FileSystemDirectoryHandle): Promise<string[]> {
  const out: string[] = []
  for await (const name of (folder as unknown as { keys(): AsyncIterable<string> }).keys()) out.push(name)
  return out.sort()
}

async function readFile(folder: FileSystemDirectoryHandle, name: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await (await (await folder.getFileHandle(name)).getFile()).arrayBuffer())
  } catch (error) {
    if ((error as Error).name === 'NotFoundError') return undefined
    throw error
  }
}

/** Writes `bytes` at `at` of a file (made if missing), cutting it there when `truncate` says so. */
export async function writeFile(folder: FileSystemDirectoryHandle, name: string, bytes: Uint8Array, at = 0, truncate = true): Promise<void> {
  const file = await folder.getFileHandle(name, { create: true })
  const handle = (await (file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle())
  try {
    if (truncate) handle.truncate(at)
    for (let done = 0; done < bytes.length; ) done += handle.write(bytes.subarray(done), { at: at + done })
    handle.flush()
  } finally {
    handle.close()
  }
}

/** The format file's text (undefined when missing). */
export async function formatText(name: string): Promise<string | undefined> {
  const bytes = await readFile((await storeFolder(name))!, 'format')
  return bytes && decoder.decode(bytes)
}

/** Replaces the format file's text, or removes the file (undefined). */
export async function setFormat(name: string, text: string | undefined): Promise<void> {
  const folder = (await storeFolder(name))!
  if (text === undefined) await folder.removeEntry('format')
  else await writeFile(folder, 'format', new TextEncoder().encode(text))
}

export async function salt(name: string): Promise<number> {
  const folder = (await storeFolder(name))!
  return (JSON.parse(decoder.decode((await readFile(folder, 'format'))!)) as { salt: number }).salt
}

export async function segments(name: string): Promise<{ segment: number; name: string }[]> {
  const folder = await storeFolder(name)
  if (!folder) return []
  return (await names(folder)).flatMap((file) => (/^\d{8,}\.pack$/.test(file) ? [{ segment: Number(file.slice(0, -5)), name: file }] : [])).sort((a, b) => a.segment - b.segment)
}

/** Every record of every segment, in log order; stops at the first bytes that are no whole record header. */
export async function records(name: string): Promise<RawRecord[]> {
  const folder = await storeFolder(name)
  if (!folder) return []
  const seed = await salt(name)
  const out: RawRecord[] = []
  for (const { segment, name: file } of await segments(name)) {
    const bytes = (await readFile(folder, file))!
    let at = SEGMENT_HEADER_BYTES
    while (at < bytes.length) {
      const head = readRecordHeader(bytes, at, bytes.length, seed)
      if (typeof head !== 'object') break
      const payloadAt = at + RECORD_HEADER_BYTES + head.idLength
      const end = payloadAt + head.length + RECORD_END.length
      out.push({
        segment,
        name: file,
        offset: at,
        payloadAt,
        kind: head.kind,
        id: decoder.decode(bytes.subarray(at + RECORD_HEADER_BYTES, payloadAt)),
        bytes: bytes.slice(at, Math.min(end, bytes.length)),
        payload: bytes.slice(payloadAt, Math.min(payloadAt + head.length, bytes.length)),
        torn: end > bytes.length,
      })
      at = end
    }
  }
  return out
}

function forgotten(all: readonly RawRecord[]): Set<string> {
  const places = new Set<string>()
  for (const record of all) if (record.kind === Kind.Forget && !record.torn) for (const place of decodePlaces(record.payload) ?? []) places.add(placeKey(place))
  return places
}

/** The live blob records, one per id (the first in log order). */
export async function blobRecords(name: string): Promise<Map<string, RawRecord>> {
  const all = await records(name)
  const gone = forgotten(all)
  const blobs = new Map<string, RawRecord>()
  for (const record of all) if (record.kind === Kind.Blob && !record.torn && !gone.has(placeKey(record)) && !blobs.has(record.id)) blobs.set(record.id, record)
  return blobs
}

/** The journal text the records hold: the last reset, every append after it, a torn append's bytes last. */
export async function journalText(name: string): Promise<string> {
  let parts: Uint8Array[] = []
  for (const record of await records(name)) {
    if (record.kind === Kind.Reset && !record.torn) parts = [record.payload]
    else if (record.kind === Kind.Append) parts.push(record.payload)
  }
  return parts.map((part) => decoder.decode(part)).join('')
}

export function splitJournal(text: string): JournalRead {
  if (text === '') return { records: [] }
  const lines = text.split('\n')
  const torn = lines.pop()!
  return torn === '' ? { records: lines } : { records: lines, torn }
}

function concat(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0))
  let at = 0
  for (const piece of pieces) {
    out.set(piece, at)
    at += piece.length
  }
  return out
}

/** Rewrites the log as one segment: the live blobs' records as they are, the whole records as one reset, a torn tail as an append cut short. */
export async function setJournal(name: string, journal: JournalRead): Promise<void> {
  const folder = (await storeFolder(name))!
  const seed = await salt(name)
  const blobs = [...(await blobRecords(name)).values()].map((record) => record.bytes)
  const whole = encoder.encode(journal.records.map((record) => record + '\n').join(''))
  const pieces: Uint8Array[] = [segmentHeader(1, seed), ...blobs]
  if (whole.length > 0) pieces.push(recordHead(Kind.Reset, new Uint8Array(0), whole.length, crc32(whole), seed), whole, RECORD_END)
  if (journal.torn !== undefined) {
    const torn = encoder.encode(journal.torn)
    // The append it was part of was longer: its header names one more byte than the file holds.
    pieces.push(recordHead(Kind.Append, new Uint8Array(0), torn.length + 1, 0, seed), torn)
  }
  for (const { name: file } of await segments(name)) await folder.removeEntry(file)
  await writeFile(folder, '00000001.pack', concat(pieces))
}

/** Overwrites a blob's stored bytes in place with checksums that match them: the content no longer matches its id. */
export async function setBlob(name: string, id: string, bytes: Uint8Array): Promise<void> {
  const record = (await blobRecords(name)).get(id)
  if (!record) throw new Error(`no blob '${id}' in ${name}`)
  if (record.payload.length !== bytes.length) throw new Error(`setBlob keeps the length: ${record.payload.length} bytes, got ${bytes.length}`)
  const idBytes = encoder.encode(id)
  const head = recordHead(Kind.Blob, idBytes, bytes.length, recordChecksum(idBytes, bytes), await salt(name))
  await writeFile((await storeFolder(name))!, record.name, concat([head, bytes]), record.offset, false)
}

/** Appends what a crash in the middle of a group commit leaves: a record header naming more bytes than follow it. */
export async function tearAppend(name: string, partial: string): Promise<void> {
  const bytes = encoder.encode(partial)
  const last = (await segments(name)).at(-1)!
  const folder = (await storeFolder(name))!
  const size = (await readFile(folder, last.name))!.length
  await writeFile(folder, last.name, concat([recordHead(Kind.Append, new Uint8Array(0), bytes.length + 10, 0, await salt(name)), bytes]), size, false)
}

/** The same for a blob record: its header names more bytes than follow it. */
export async function tearBlob(name: string, id: string, partial: Uint8Array): Promise<void> {
  const idBytes = encoder.encode(id)
  const last = (await segments(name)).at(-1)!
  const folder = (await storeFolder(name))!
  const size = (await readFile(folder, last.name))!.length
  await writeFile(folder, last.name, concat([recordHead(Kind.Blob, idBytes, partial.length + 100, 0, await salt(name)), idBytes, partial]), size, false)
}

/** Flips one byte of the file at `at` (xor `mask`). */
export async function flipByte(name: string, file: string, at: number, mask = 0x01): Promise<void> {
  const folder = (await storeFolder(name))!
  const bytes = (await readFile(folder, file))!
  await writeFile(folder, file, new Uint8Array([bytes[at] ^ mask]), at, false)
}

/** RawStore for the contract checks. */
export function rawStore(name: string): RawStore {
  const kept = async (file: string) => {
    const folder = await storeFolder(name)
    const keptFolder = folder && (await child(folder, 'kept'))
    return keptFolder && (await readFile(keptFolder, file))
  }
  return {
    journal: async () => splitJournal(await journalText(name)),
    setJournal: (journal) => setJournal(name, journal),
    keptJournal: async (file) => {
      const bytes = await kept(file)
      return bytes === undefined ? undefined : splitJournal(decoder.decode(bytes))
    },
    blob: async (id) => (await blobRecords(name)).get(id)?.payload,
    setBlob: (id, bytes) => setBlob(name, id, bytes),
    keptBlob: (file) => kept(file),
    spoilMeta: async (key) => {
      const folder = (await storeFolder(name))!
      await writeFile(await folder.getDirectoryHandle('meta', { create: true }), `${hex(key)}.json`, encoder.encode('{"half-writ'))
    },
    fingerprint: async () => {
      const parts: string[] = []
      const walk = async (folder: FileSystemDirectoryHandle, path: string) => {
        for (const entry of await names(folder)) {
          const sub = await child(folder, entry)
          if (sub) await walk(sub, `${path}/${entry}`)
          else parts.push(`${path}/${entry}:${crc32((await readFile(folder, entry))!)}`)
        }
      }
      const folder = await storeFolder(name)
      if (folder) await walk(folder, '')
      return parts.join('\n')
    },
  }
}
