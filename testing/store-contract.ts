/**
 * The Store contract as runnable checks, for any Store implementation (rewindfs runs them on
 * MemoryStore, directoryStore and indexedDbStore; an adapter author runs them on theirs). Each check
 * is a named async function that throws on a violation, so any test runner can run them:
 *
 * ```ts
 * import { storeContract } from 'rewindfs/testing'
 * for (const check of storeContract(mySubject)) it(check.name, check.run)
 * ```
 *
 * Besides the calls themselves, the checks hold a store to the engine's promise: a crash loses at
 * most what was never acknowledged; damage is reported and kept, never deleted. For that they need
 * to reach below the Store interface (`RawStore`) to tear and damage what it holds, as a crash or
 * disk rot would.
 */
import type { BlobId } from '../src/blob/store.js'
import { hashBytes } from '../src/blob/hash.js'
import type { JsonValue } from '../src/engine/state.js'
import type { JournalRead, Store } from '../src/engine/store.js'
import { IndexedSource } from '../src/lower/indexed.js'
import { Workspace } from '../src/workspace.js'

/** What a store holds, reached below the Store interface. Use it while the store is closed. */
export interface RawStore {
  /** The journal as stored: whole records, and the bytes of a torn last one. */
  journal(): Promise<JournalRead>
  /** Stores exactly this journal (`torn` only for a store whose appends can tear). */
  setJournal(journal: JournalRead): Promise<void>
  /** A journal kept aside under `name`, as kept. */
  keptJournal(name: string): Promise<JournalRead | undefined>
  blob(id: BlobId): Promise<Uint8Array | undefined>
  /** Overwrites a stored blob's bytes in place. */
  setBlob(id: BlobId, bytes: Uint8Array): Promise<void>
  /** A blob kept aside under `name`, as kept. */
  keptBlob(name: string): Promise<Uint8Array | undefined>
  /** Makes the metadata under `key` unreadable: what a half-written or rotted entry is to the store. */
  spoilMeta(key: string): Promise<void>
  /** Changes whenever anything the store holds changes, what was set aside included. */
  fingerprint(): Promise<string>
}

/** One store under test: the instance, the way to open it again, and raw access to what it holds. */
export interface StoreUnderTest<S extends Store = Store> {
  readonly store: S
  /** Closes `store` (if it is open) and opens what it holds again, as the next process would. */
  reopen(): Promise<StoreUnderTest<S>>
  readonly raw: RawStore
}

export interface StoreSubject<S extends Store = Store> {
  /** Shown in the checks' names. */
  readonly name: string
  /** Whether an append can tear (a file can be cut mid-write); false for atomic appends (IndexedDB). */
  readonly tears: boolean
  /** A new, empty store. */
  create(): Promise<StoreUnderTest<S>>
}

export interface ContractCheck {
  readonly name: string
  run(): Promise<void>
}

class ContractViolation extends Error {
  override name = 'ContractViolation'
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ContractViolation(message)
}

function same(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual, jsonBytes)
  const e = JSON.stringify(expected, jsonBytes)
  if (a !== e) throw new ContractViolation(`${what}: expected ${e.slice(0, 400)}, got ${a.slice(0, 400)}`)
}

function jsonBytes(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? `bytes:${Array.from(value).join(',')}` : value
}

const encode = (text: string) => new TextEncoder().encode(text)

/** A lower source with an identity, so the store records which source it was made over. */
function contractLower(): IndexedSource {
  const content = encode('lower content\n')
  return new IndexedSource('contract', 'rewindfs-store-contract', [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd1' }],
    ['/app/lower.txt', { type: 'file', mode: 0o644, size: content.byteLength, mtimeMs: 0, version: 'f1', content }],
  ], async () => new Map())
}

async function open(store: Store): Promise<Workspace> {
  return Workspace.open({ lower: contractLower(), store, autoCheckpoint: false })
}

/** Everything a reopen must bring back: files, checkpoints, history. */
function view(ws: Workspace): JsonValue {
  const files: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      if (ws.fs.statSync(path).isDirectory()) walk(path)
      else {
        try {
          files[path] = ws.fs.readFileSync(path, 'utf8') as string
        } catch (error) {
          files[path] = `<${(error as { code?: string }).code}>`
        }
      }
    }
  }
  walk('/')
  return { files, checkpoints: ws.checkpoints().map((c) => c.name), history: ws.history().map((op) => `${op.type}:${op.paths.join(',')}${op.undone ? ':undone' : ''}`) }
}

/** A store with several group commits: writes, a checkpoint, an undo, a restore. Returns the state after each commit. */
async function session(subject: StoreUnderTest): Promise<{ ws: Workspace; states: JsonValue[] }> {
  const ws = await open(subject.store)
  const states: JsonValue[] = [view(ws)]
  const steps: (() => unknown)[] = [
    () => ws.fs.writeFileSync('/app/a.txt', 'first'),
    () => ws.fs.mkdirSync('/app/lib'),
    () => ws.fs.writeFileSync('/app/lib/b.txt', 'second'),
    () => ws.checkpoint({ name: 'cp' }),
    () => ws.fs.writeFileSync('/app/a.txt', 'changed'),
    () => ws.undo(),
    () => ws.fs.rmSync('/app/lower.txt'),
    () => ws.restore('cp'),
    () => ws.fs.writeFileSync('/app/c.txt', 'last'),
  ]
  for (const step of steps) {
    await step()
    await ws.sync()
    states.push(view(ws))
  }
  return { ws, states }
}

/** Changes one character in the middle of a record, to another that keeps the line one line. */
function flip(record: string): string {
  const at = Math.floor(record.length / 2)
  const code = record.charCodeAt(at)
  const other = code === 0x61 ? 'b' : 'a'
  return record.slice(0, at) + other + record.slice(at + 1)
}

export function storeContract<S extends Store>(subject: StoreSubject<S>): ContractCheck[] {
  const checks: ContractCheck[] = []
  const add = (name: string, run: () => Promise<void>) => checks.push({ name: `${subject.name}: ${name}`, run })

  add('appends records in order and reads them back whole, also after a reopen', async () => {
    let under = await subject.create()
    same(await under.store.readJournal(), { records: [] }, 'an empty journal')
    await under.store.appendJournal(['one', 'two'])
    await Promise.all([under.store.appendJournal(['three']), under.store.appendJournal(['four'])])
    same(await under.store.readJournal(), { records: ['one', 'two', 'three', 'four'] }, 'appended records')
    under = await under.reopen()
    same(await under.store.readJournal(), { records: ['one', 'two', 'three', 'four'] }, 'after a reopen')
    await under.store.appendJournal(['five'])
    same((await under.store.readJournal()).records.slice(-1), ['five'], 'appending after a reopen')
    await under.store.replaceJournal(['snapshot', 'commit'])
    await under.store.appendJournal(['after'])
    same(await under.store.readJournal(), { records: ['snapshot', 'commit', 'after'] }, 'after replaceJournal')
    await under.store.close?.()
  })

  add('replaces the journal with a record of megabytes in any Unicode: read back exactly, also after a reopen', async () => {
    let under = await subject.create()
    // Characters of one, two and three bytes in UTF-8, and a surrogate pair (four) straddling every
    // 64 Ki characters: where a store that encodes a long record in slices cuts it.
    let big = ''
    for (let k = 1; k <= 16; k++) {
      const pieces: string[] = []
      for (let at = big.length; at < k * 65536 - 1; at++) pieces.push(at % 7 === 0 ? 'é' : at % 11 === 0 ? '€' : 'x')
      big += `${pieces.join('')}😀`
    }
    await under.store.replaceJournal([big, 'commit'])
    await under.store.appendJournal(['after'])
    const read = await under.store.readJournal()
    check(read.records.length === 3 && read.records[0] === big && read.records[1] === 'commit' && read.records[2] === 'after' && read.torn === undefined, 'the replaced journal reads back exactly')
    under = await under.reopen()
    const reopened = await under.store.readJournal()
    check(reopened.records.length === 3 && reopened.records[0] === big && reopened.torn === undefined, 'and after a reopen')
    if (under.store.replaceJournalPieces) {
      // The same record in pieces (Store.replaceJournalPieces), cut anywhere: between the halves of a pair too.
      const cuts = [0, 1, 65535, 65536, 65537, 300001, big.length - 2, big.length - 1]
      const pieces = cuts.map((at, i) => big.slice(at, cuts[i + 1] ?? big.length))
      check(pieces.join('') === big && pieces.some((piece) => (piece.charCodeAt(piece.length - 1) & 0xfc00) === 0xd800), 'the pieces cut a pair')
      await under.store.replaceJournalPieces([pieces, ['commit'], [], ['a', 'fter']])
      const fromPieces = await under.store.readJournal()
      check(fromPieces.records.length === 4 && fromPieces.records[0] === big && fromPieces.records[2] === '' && fromPieces.records[3] === 'after' && fromPieces.torn === undefined, 'a journal replaced from pieces reads back as their concatenation')
      under = await under.reopen()
      check((await under.store.readJournal()).records[0] === big, 'and after a reopen')
    }
    await under.store.close?.()
  })

  add('stores blobs and metadata under their keys, lists and deletes them', async () => {
    let under = await subject.create()
    const { store } = under
    const ids = ['qUiQTy8PR5uPgZdpSzAYSw0u0cE=', 'a/b+c==', 'x~1']
    await store.putBlobs(ids.map((id) => [id, encode(`content of ${id}`)] as const))
    same([...(await store.blobIds())].sort(), [...ids].sort(), 'blob ids')
    for (const id of ids) same(await store.getBlob(id), encode(`content of ${id}`), `blob ${id}`)
    same(await store.getBlob('missing'), undefined, 'a missing blob')
    await store.deleteBlobs([ids[1], 'missing'])
    same([...(await store.blobIds())].sort(), [ids[0], ids[2]].sort(), 'after deleteBlobs')
    await store.putMeta('flush-state', { v: 1, list: [1, 'two', null], nested: { ok: true } })
    same(await store.getMeta('flush-state'), { v: 1, list: [1, 'two', null], nested: { ok: true } }, 'metadata')
    same(await store.getMeta('absent'), undefined, 'absent metadata')
    await store.deleteMeta('flush-state')
    same(await store.getMeta('flush-state'), undefined, 'deleted metadata')
    under = await under.reopen()
    same([...(await under.store.blobIds())].sort(), [ids[0], ids[2]].sort(), 'blob ids after a reopen')
    await under.store.close?.()
  })

  add('reads a blob synchronously, when it offers to, as getBlob does, and lists sizes without reading (readBlobSync, blobSizes, blobSize, blobTotals)', async () => {
    let under = await subject.create()
    if (!under.store.readBlobSync) return void (await under.store.close?.()) // optional: the store is read whole on open
    const ids = ['qUiQTy8PR5uPgZdpSzAYSw0u0cE=', 'a/b+c==', 'empty']
    const bytes = (id: string) => (id === 'empty' ? new Uint8Array(0) : encode(`content of ${id}`.repeat(3)))
    /** blobSize and blobTotals, where offered, say what is held: `held` and nothing else. */
    const sizes = (held: readonly string[], when: string) => {
      const { blobSize, blobTotals } = under.store
      if (!blobSize || !blobTotals) return
      for (const id of ids) same(blobSize.call(under.store, id), held.includes(id) ? bytes(id).byteLength : undefined, `blobSize of ${id} ${when}`)
      same(blobSize.call(under.store, 'missing'), undefined, `blobSize of a missing blob ${when}`)
      const totals = blobTotals.call(under.store)
      same({ blobs: totals.blobs, bytes: totals.bytes, unreadable: [...totals.unreadable] }, { blobs: held.length, bytes: held.reduce((sum, id) => sum + bytes(id).byteLength, 0), unreadable: [] }, `blobTotals ${when}`)
    }
    sizes([], 'of an empty store')
    const given = ids.map((id) => [id, bytes(id)] as const)
    await under.store.putBlobs(given)
    // Once putBlobs resolved the arrays are the engine's again, which reuses them (Store.putBlobs).
    for (const [, array] of given) array.fill(0)
    sizes(ids, 'once put')
    for (const id of ids) same(under.store.readBlobSync(id), bytes(id), `readBlobSync of ${id}`)
    same(under.store.readBlobSync('missing'), undefined, 'readBlobSync of a missing blob')
    await under.store.deleteBlobs([ids[1]])
    same(under.store.readBlobSync(ids[1]), undefined, 'readBlobSync of a deleted blob')
    sizes([ids[0], ids[2]], 'after deleteBlobs')
    under = await under.reopen()
    for (const id of [ids[0], ids[2]]) same(under.store.readBlobSync!(id), bytes(id), `readBlobSync of ${id} after a reopen`)
    sizes([ids[0], ids[2]], 'after a reopen')
    if (under.store.blobSizes) {
      const sizes = new Map(await under.store.blobSizes())
      same([...sizes.keys()].sort(), [ids[0], ids[2]].sort(), 'blobSizes ids')
      for (const id of [ids[0], ids[2]]) same(sizes.get(id), bytes(id).byteLength, `blobSizes of ${id}`)
    }
    // A workspace over it reads on demand: nothing on open, one read for one file.
    const ws = await open(under.store)
    ws.fs.writeFileSync('/app/new.txt', 'on demand')
    await ws.close()
    under = await under.reopen()
    const reopened = await open(under.store)
    check(reopened.storage.contents === 'on-demand', `contents are read on demand: ${reopened.storage.contents}`)
    const before = reopened.counters.blobsRead
    same(reopened.fs.readFileSync('/app/new.txt', 'utf8'), 'on demand', 'a file read on demand')
    same(reopened.counters.blobsRead - before, 1, 'blobs read for one file')
    await reopened.close()
  })

  add('sets the journal aside as a copy, byte for byte, lists it, and removes it only when asked', async () => {
    let under = await subject.create()
    await under.store.appendJournal(['one', 'two'])
    const name = await under.store.setAside({ journal: true }, 'torn')
    check(/^journal\.torn-/.test(name), `a kept journal's name starts with journal.torn-: ${name}`)
    same(await under.store.readJournal(), { records: ['one', 'two'] }, 'the journal stays in place')
    await under.store.replaceJournal(['new'])
    same(await under.store.keptAside(), [name], 'keptAside')
    const second = await under.store.setAside({ journal: true }, 'torn')
    check(second !== name, 'a second journal set aside gets its own name')
    await under.store.removeKept(['not-kept', second])
    under = await under.reopen()
    same(await under.store.keptAside(), [name], 'keptAside after removeKept and a reopen')
    await under.store.close?.()
    same(await under.raw.keptJournal(name), { records: ['one', 'two'] }, 'the kept copy')
    under = await under.reopen()
    await under.store.removeKept([name])
    same(await under.store.keptAside(), [], 'keptAside after removing everything')
    await under.store.close?.()
  })

  add('sets a blob or metadata aside by moving it: no longer listed or read, kept under its name; the id can be stored again', async () => {
    let under = await subject.create()
    await under.store.putBlobs([['blob-1', encode('bad bytes')]])
    await under.store.putMeta('key', { v: 1 })
    const blob = await under.store.setAside({ blob: 'blob-1' }, 'damaged')
    const meta = await under.store.setAside({ meta: 'key' }, 'damaged')
    check(/^blob\.damaged-/.test(blob) && /^meta\.damaged-/.test(meta), `kept names: ${blob}, ${meta}`)
    same(await under.store.blobIds(), [], 'blob ids after setting the blob aside')
    same(await under.store.getBlob('blob-1'), undefined, 'the blob set aside')
    same(await under.store.getMeta('key'), undefined, 'the metadata set aside')
    await under.store.putBlobs([['blob-1', encode('good bytes')]])
    same(await under.store.getBlob('blob-1'), encode('good bytes'), 'the id stored again')
    same(await under.store.keptAside(), [blob, meta].sort(), 'keptAside')
    let missing: unknown
    await under.store.setAside({ blob: 'absent' }, 'damaged').catch((error: unknown) => (missing = error))
    check((missing as { code?: string } | undefined)?.code === 'ENOENT', 'setting aside a blob that is not there fails with ENOENT')
    await under.store.close?.()
    same(await under.raw.keptBlob(blob), encode('bad bytes'), 'the kept blob')
    under = await under.reopen()
    await under.store.close?.()
  })

  if (subject.tears) {
    add('a torn last append (cut at every byte) reopens silently to the last acknowledged state, the journal kept aside', async () => {
      let under = await subject.create()
      const { ws, states } = await session(under)
      await ws.close()
      const whole = await under.raw.journal()
      const lines = whole.records
      // The last group commit: the last operation's records and its commit marker.
      let start = lines.length - 1
      while (start > 0 && !/"t":"commit"/.test(lines[start - 1])) start--
      const text = lines.slice(start).join('\n') + '\n'
      for (let cut = 0; cut < text.length; cut++) {
        const kept = text.slice(0, cut)
        const pieces = kept.split('\n')
        const torn = pieces.pop()!
        const damaged: JournalRead = { records: [...lines.slice(0, start), ...pieces], ...(torn !== '' ? { torn } : {}) }
        await under.raw.setJournal(damaged)
        const before = cut === 0 ? await under.raw.fingerprint() : undefined
        under = await under.reopen()
        const reopened = await open(under.store)
        const complete = cut === text.length - 1 // only the line end missing: the commit is whole
        same(view(reopened), states[complete ? states.length - 1 : states.length - 2], `the state after a cut at byte ${cut} of the last append`)
        check(reopened.status.corrupt === undefined && reopened.frozen === undefined, `a torn append is not damage (cut at ${cut}): ${reopened.frozen}`)
        const keptNames = await under.store.keptAside()
        if (cut > 0) {
          check(keptNames.length === 1, `the journal is kept aside once before its torn tail is dropped (cut at ${cut}): ${keptNames.join(', ')}`)
          same(await under.raw.keptJournal(keptNames[0]), damaged, `the kept journal (cut at ${cut})`)
          await under.store.removeKept(keptNames)
        }
        await reopened.close()
        if (before !== undefined) same(await under.raw.fingerprint(), before, 'a cut at a group boundary changes nothing')
      }
      await under.raw.setJournal(whole)
    })
  }

  add('a damaged record in the middle: opens read-only at the state before it, reports where, and changes nothing', async () => {
    let under = await subject.create()
    const { ws, states } = await session(under)
    await ws.close()
    const { records } = await under.raw.journal()
    const commits = records.flatMap((line, i) => (/"t":"commit"/.test(line) ? [i] : []))
    const victim = commits[3] + 1 // the first record of the fifth group commit
    await under.raw.setJournal({ records: records.map((line, i) => (i === victim ? flip(line) : line)) })
    const before = await under.raw.fingerprint()
    under = await under.reopen()
    const alerts: string[] = []
    const opened = await Workspace.open({ lower: contractLower(), store: under.store, autoCheckpoint: false, onAlert: (alert) => alerts.push(alert.kind) })
    same(opened.status.corrupt?.record, victim, 'the damaged record index')
    check(typeof opened.status.corrupt?.offset === 'number' && opened.status.corrupt.offset > 0, 'the damaged record offset')
    same(view(opened), states[4], 'the state before the damage')
    same(alerts, ['integrity'], 'alerts')
    check(opened.frozen !== undefined, 'a damaged store freezes the workspace')
    await opened.compact()
    await opened.close()
    same(await under.raw.fingerprint(), before, 'the store after opening it')
  })

  add('duplicated and reordered records are damage, reported and kept', async () => {
    let under = await subject.create()
    const { ws } = await session(under)
    await ws.close()
    const { records } = await under.raw.journal()
    for (const damaged of [[...records.slice(0, 5), records[4], ...records.slice(5)], [...records.slice(0, 4), records[5], records[4], ...records.slice(6)]]) {
      await under.raw.setJournal({ records: damaged })
      const before = await under.raw.fingerprint()
      under = await under.reopen()
      const opened = await open(under.store)
      check(/a duplicated, reordered or lost record/.test(opened.status.corrupt?.reason ?? ''), `reported: ${JSON.stringify(opened.status.corrupt)}`)
      await opened.close()
      same(await under.raw.fingerprint(), before, 'the store after opening it')
    }
  })

  add('a blob whose bytes no longer match: reads fail with EIO, its checkpoint is broken, and its bytes stay in the store', async () => {
    let under = await subject.create()
    const { ws } = await session(under)
    await ws.close()
    const id = hashBytes(encode('second'))
    const bad = encode('sEcond')
    await under.raw.setBlob(id, bad)
    const before = await under.raw.fingerprint()
    under = await under.reopen()
    let opened = await open(under.store)
    same((await opened.verify()).corrupt, [id], 'the corrupt blobs')
    check(opened.checkpoints().find((c) => c.name === 'cp')?.broken === true, 'the checkpoint needing it is broken')
    let code: string | undefined
    try {
      opened.fs.readFileSync('/app/lib/b.txt')
    } catch (error) {
      code = (error as { code?: string }).code
    }
    same(code, 'EIO', 'reading the file that needs it')
    await opened.close()
    same(await under.raw.fingerprint(), before, 'the store after opening and verifying it')
    under = await under.reopen()
    opened = await open(under.store)
    await opened.verify()
    await opened.compact()
    await opened.close()
    same(await under.raw.blob(id), bad, 'the damaged blob after a compaction')
  })

  add('unreadable metadata: opens read-only naming the key, changes nothing; repair sets it aside and writes it again', async () => {
    let under = await subject.create()
    const { ws, states } = await session(under)
    await ws.close()
    await under.raw.spoilMeta('lower')
    const before = await under.raw.fingerprint()
    under = await under.reopen()
    const opened = await open(under.store)
    same({ part: opened.status.corrupt?.part, key: opened.status.corrupt?.key }, { part: 'meta', key: 'lower' }, 'the damage')
    same(view(opened), states[states.length - 1], 'the state')
    check(opened.frozen !== undefined, 'the workspace is frozen')
    await opened.close()
    same(await under.raw.fingerprint(), before, 'the store after opening it')
    under = await under.reopen()
    const repairing = await open(under.store)
    const report = await repairing.repair()
    same(report.meta.map((m) => [m.key, m.rewritten]), [['lower', true]], 'repaired metadata')
    await repairing.close()
    under = await under.reopen()
    const again = await open(under.store)
    same(again.status.corrupt, undefined, 'after repair')
    await again.close()
  })

  add('repair with salvage: a fresh journal of every group commit that still applies, the old one kept aside, reopens clean', async () => {
    let under = await subject.create()
    const { ws, states } = await session(under)
    await ws.close()
    const { records } = await under.raw.journal()
    const commits = records.flatMap((line, i) => (/"t":"commit"/.test(line) ? [i] : []))
    // The mkdir of /app/lib: later groups write into it, so without it they cannot apply.
    const victim = commits[0] + 1
    const damaged = records.map((line, i) => (i === victim ? flip(line) : line))
    await under.raw.setJournal({ records: damaged })
    under = await under.reopen()
    const opened = await open(under.store)
    const report = await opened.repair({ salvage: true })
    check(report.repaired && report.keptAside !== undefined, 'repaired, the old journal kept aside')
    check(report.lost.some((lost) => lost.first <= victim && victim <= lost.last), `the damaged record is reported lost: ${JSON.stringify(report.lost)}`)
    check(report.kept.salvaged > 0, 'group commits after the damage are kept')
    const repaired = view(opened)
    check(opened.frozen === undefined, 'writable after repair')
    opened.fs.writeFileSync('/app/after-repair.txt', 'yes')
    await opened.close()
    same(await under.raw.keptJournal(report.keptAside!), { records: damaged }, 'the kept journal')
    under = await under.reopen()
    const again = await open(under.store)
    same(again.status.corrupt, undefined, 'no damage after repair')
    same(again.fs.readFileSync('/app/after-repair.txt', 'utf8'), 'yes', 'a write after repair')
    again.fs.rmSync('/app/after-repair.txt')
    const after = view(again) as { files: Record<string, string> }
    same(after.files, (repaired as { files: Record<string, string> }).files, 'the repaired state')
    check((states[states.length - 1] as { files: Record<string, string> }).files['/app/c.txt'] === after.files['/app/c.txt'], 'the last write, after the damage, is kept')
    await again.close()
  })

  add('reconnect (where offered) answers how many records the journal holds, and is EBADF once closed', async () => {
    let under = await subject.create()
    if (!under.store.reconnect) {
      await under.store.close?.()
      return
    }
    same(await under.store.reconnect(), { records: 0 }, 'an empty journal')
    await under.store.appendJournal(['one', 'two'])
    same(await under.store.reconnect(), { records: 2 }, 'after two records')
    await under.store.replaceJournal(['snapshot', 'commit', 'after'])
    same(await under.store.reconnect(), { records: 3 }, 'after replaceJournal')
    // The workspace retries the commit in flight on this answer: the store writes on as before.
    await under.store.appendJournal(['four'])
    same(await under.store.readJournal(), { records: ['snapshot', 'commit', 'after', 'four'] }, 'appending after a reconnect')
    under = await under.reopen()
    same(await under.store.reconnect!(), { records: 4 }, 'after a reopen')
    await under.store.close?.()
    let code: unknown
    try {
      await under.store.reconnect!()
    } catch (error) {
      code = (error as { code?: unknown }).code
    }
    same(code, 'EBADF', 'reconnect once closed')
  })

  return checks
}
