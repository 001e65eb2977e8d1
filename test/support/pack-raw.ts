/**
 * Raw access to a directory store's pack segments for tests, below the Store interface and written
 * apart from adapters/node-fs/pack.ts (only the byte format is shared), so what the store reads is
 * checked against an independent reading: the records of every segment, the journal they hold, and
 * rewrites a crash or disk rot would make (a torn append, a blob whose bytes changed).
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { Kind, RECORD_END, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, crc32, decodePlaces, placeKey, readRecordHeader, recordChecksum, recordHead, segmentHeader } from '../../adapters/node-fs/pack-format.js'
import type { JournalRead } from '../../src/engine/store.js'

export interface RawRecord {
  segment: number
  /** File of the segment. */
  file: string
  offset: number
  /** Where its payload starts in the file. */
  payloadAt: number
  kind: number
  id: string
  /** Header, id and payload as stored. */
  bytes: Buffer
  payload: Buffer
  /** Whether the record runs past the end of its file (a torn tail). */
  torn: boolean
}

/** The store's salt, from its format file: record headers are checksummed with it. */
export function salt(root: string): number {
  return (JSON.parse(fs.readFileSync(`${root}/format`, 'utf8')) as { salt: number }).salt
}

export function segmentFiles(root: string): { segment: number; file: string }[] {
  const folder = `${root}/packs`
  if (!fs.existsSync(folder)) return []
  return fs
    .readdirSync(folder)
    .flatMap((name) => (/^\d{8,}\.pack$/.test(name) ? [{ segment: Number(name.slice(0, -5)), file: `${folder}/${name}` }] : []))
    .sort((a, b) => a.segment - b.segment)
}

/** Every record of every segment, in log order; stops at the first bytes that are no whole record header. */
export function records(root: string): RawRecord[] {
  const out: RawRecord[] = []
  const seed = salt(root)
  for (const { segment, file } of segmentFiles(root)) {
    const bytes = fs.readFileSync(file)
    let at = SEGMENT_HEADER_BYTES
    while (at < bytes.length) {
      const head = readRecordHeader(bytes, at, bytes.length, seed)
      if (typeof head !== 'object') break
      const payloadAt = at + RECORD_HEADER_BYTES + head.idLength
      const end = payloadAt + head.length + RECORD_END.length
      out.push({
        segment,
        file,
        offset: at,
        payloadAt,
        kind: head.kind,
        id: bytes.subarray(at + RECORD_HEADER_BYTES, payloadAt).toString('utf8'),
        bytes: bytes.subarray(at, Math.min(end, bytes.length)),
        payload: bytes.subarray(payloadAt, Math.min(payloadAt + head.length, bytes.length)),
        torn: end > bytes.length,
      })
      at = end
    }
  }
  return out
}

/** Places forgotten by forget records. */
function forgotten(all: readonly RawRecord[]): Set<string> {
  const places = new Set<string>()
  for (const record of all) if (record.kind === Kind.Forget && !record.torn) for (const place of decodePlaces(record.payload) ?? []) places.add(placeKey(place))
  return places
}

/** The live blob records, one per id (the first in log order). */
export function blobRecords(root: string): Map<string, RawRecord> {
  const all = records(root)
  const gone = forgotten(all)
  const blobs = new Map<string, RawRecord>()
  for (const record of all) if (record.kind === Kind.Blob && !record.torn && !gone.has(placeKey(record)) && !blobs.has(record.id)) blobs.set(record.id, record)
  return blobs
}

/** The journal text the records hold: the last reset, every append after it, a torn append's bytes last. */
export function journalText(root: string): string {
  let parts: Buffer[] = []
  for (const record of records(root)) {
    if (record.kind === Kind.Reset && !record.torn) parts = [record.payload]
    else if (record.kind === Kind.Append) parts.push(record.payload)
  }
  return Buffer.concat(parts).toString('utf8')
}

export function splitJournal(text: string): JournalRead {
  if (text === '') return { records: [] }
  const lines = text.split('\n')
  const torn = lines.pop()!
  return torn === '' ? { records: lines } : { records: lines, torn }
}

export function joinJournal(journal: JournalRead): string {
  return journal.records.map((record) => record + '\n').join('') + (journal.torn ?? '')
}

/**
 * Rewrites the pack as one segment: the live blobs' records as they are (damage included), the
 * journal's whole records as one reset, and a torn tail as an append record cut short.
 */
export function setJournal(root: string, journal: JournalRead): void {
  const blobs = [...blobRecords(root).values()].map((record) => Buffer.from(record.bytes))
  const whole = Buffer.from(journal.records.map((record) => record + '\n').join(''), 'utf8')
  const seed = salt(root)
  const pieces: Uint8Array[] = [segmentHeader(1, seed), ...blobs]
  if (whole.length > 0) pieces.push(recordHead(Kind.Reset, new Uint8Array(0), whole.length, crc32(whole), seed), whole, RECORD_END)
  if (journal.torn !== undefined) {
    const torn = Buffer.from(journal.torn, 'utf8')
    // The append it was part of was longer: its header names one more byte than the file holds.
    pieces.push(recordHead(Kind.Append, new Uint8Array(0), torn.length + 1, 0, seed), torn)
  }
  for (const { file } of segmentFiles(root)) fs.rmSync(file)
  removeIndexes(root)
  fs.mkdirSync(`${root}/packs`, { recursive: true })
  fs.writeFileSync(`${root}/packs/00000001.pack`, Buffer.concat(pieces))
}

/** The segments' index files (pack-index.ts): a test that rewrites segments removes them, as they describe the old ones. */
export function indexFiles(root: string): string[] {
  const folder = `${root}/packs`
  return fs.existsSync(folder) ? fs.readdirSync(folder).filter((name) => /^\d{8,}\.idx$/.test(name)).map((name) => `${folder}/${name}`) : []
}

/** The state a clean close saved (pack-state.ts): an index of every segment at once. */
export function stateFile(root: string): string {
  return `${root}/packs/state`
}

/** Removes the index files and the saved state: the next open scans the segments. */
export function removeIndexes(root: string): void {
  for (const file of indexFiles(root)) fs.rmSync(file)
  fs.rmSync(stateFile(root), { force: true })
}

/**
 * Overwrites a blob's stored bytes in place with checksums that match them: the content no longer
 * matches its id. The index files go (they list the old checksum, which the store would notice).
 */
export function setBlob(root: string, id: string, bytes: Uint8Array): void {
  const record = blobRecords(root).get(id)
  if (!record) throw new Error(`no blob '${id}' in ${root}`)
  removeIndexes(root)
  if (record.payload.length !== bytes.length) throw new Error(`setBlob keeps the length: ${record.payload.length} bytes, got ${bytes.length}`)
  const name = Buffer.from(id, 'utf8')
  const head = recordHead(Kind.Blob, name, bytes.length, recordChecksum(name, bytes), salt(root))
  const fd = fs.openSync(record.file, 'r+')
  try {
    fs.writeSync(fd, head, 0, head.length, record.offset)
    fs.writeSync(fd, bytes, 0, bytes.length, record.offset + head.length)
  } finally {
    fs.closeSync(fd)
  }
}

/** Flips byte `at` of the journal's text (xor `mask`) where its record holds it in the pack. */
export function flipJournalByte(root: string, at: number, mask = 0x01): void {
  let skipped = 0
  // The journal starts at the last reset.
  const all = records(root)
  const start = Math.max(0, all.findLastIndex((record) => record.kind === Kind.Reset && !record.torn))
  for (const record of all.slice(start)) {
    if (record.kind !== Kind.Append && record.kind !== Kind.Reset) continue
    if (at < skipped + record.payload.length) {
      const position = record.payloadAt + at - skipped
      const fd = fs.openSync(record.file, 'r+')
      try {
        fs.writeSync(fd, Buffer.from([record.payload[at - skipped] ^ mask]), 0, 1, position)
      } finally {
        fs.closeSync(fd)
      }
      return
    }
    skipped += record.payload.length
  }
  throw new Error(`the journal of ${root} has fewer than ${at + 1} bytes`)
}

/** What a crash in the middle of an append leaves: the start of a journal record, its header naming more bytes than the file holds. */
export function tearAppend(root: string, partial: string): void {
  const bytes = Buffer.from(partial, 'utf8')
  const last = segmentFiles(root).at(-1)!.file
  fs.appendFileSync(last, Buffer.concat([recordHead(Kind.Append, new Uint8Array(0), bytes.length + 10, 0, salt(root)), bytes]))
}

/** Flips byte `at` of a blob's payload as stored (its checksum no longer matches). */
export function flipBlobByte(root: string, id: string, at = 0, mask = 0x20): void {
  const record = blobRecords(root).get(id)
  if (!record) throw new Error(`no blob '${id}' in ${root}`)
  const fd = fs.openSync(record.file, 'r+')
  try {
    fs.writeSync(fd, Buffer.from([record.payload[at] ^ mask]), 0, 1, record.payloadAt + at)
  } finally {
    fs.closeSync(fd)
  }
}

/** How many live copies of each blob the pack holds (more than one: a collection a crash interrupted). */
export function blobCopies(root: string): Map<string, number> {
  const all = records(root)
  const gone = forgotten(all)
  const copies = new Map<string, number>()
  for (const record of all) if (record.kind === Kind.Blob && !record.torn && !gone.has(placeKey(record))) copies.set(record.id, (copies.get(record.id) ?? 0) + 1)
  return copies
}

/** A hash of every file of the store but its lock. */
export function fingerprint(root: string): string {
  const hash = createHash('sha1')
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const file = `${dir}/${name}`
      if (name === 'lock') continue
      if (fs.statSync(file).isDirectory()) walk(file)
      else hash.update(`${file}\0`).update(fs.readFileSync(file))
    }
  }
  walk(root)
  return hash.digest('hex')
}
