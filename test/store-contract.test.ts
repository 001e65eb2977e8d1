// @vitest-environment happy-dom
/**
 * The Store contract (testing/store-contract.ts, exported from rewindfs/testing) on the three stores
 * rewindfs ships: MemoryStore, directoryStore on real files, and indexedDbStore under
 * fake-indexeddb in happy-dom's browser globals. Each subject gives raw access below the Store
 * interface, so the checks can tear and damage what it holds as a crash or disk rot would.
 */
import 'fake-indexeddb/auto'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import { promisifyRequest } from 'idb-keyval'
import { afterAll, describe, it } from 'vitest'
import { Database, prefixRange } from '../adapters/indexeddb/database.js'
import { type IndexedDbStore, indexedDbStore } from '../adapters/indexeddb/index.js'
import { type DirectoryStore, directoryStore } from '../adapters/node-fs/index.js'
import type { JournalRead, StoreImage } from '../src/engine/store.js'
import { MemoryStore } from '../src/adapter-kit.js'
import { type RawStore, type StoreSubject, type StoreUnderTest, storeContract } from '../testing/index.js'
import * as pack from './support/pack-raw.js'

const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex')

function splitJournal(text: string): JournalRead {
  if (text === '') return { records: [] }
  const records = text.split('\n')
  const torn = records.pop()!
  return torn === '' ? { records } : { records, torn }
}

function joinJournal(journal: JournalRead): string {
  return journal.records.map((record) => record + '\n').join('') + (journal.torn ?? '')
}

function memorySubject(): StoreSubject<MemoryStore> {
  const handle = (store: MemoryStore): StoreUnderTest<MemoryStore> => {
    // Raw changes go to an image the next reopen starts from, as a file's changes would.
    let pending: StoreImage | undefined
    const image = () => pending ?? store.image()
    const edit = () => (pending ??= store.image())
    const kept = (name: string) => image().kept?.find(([kept]) => kept === name)?.[1]
    const raw: RawStore = {
      journal: async () => splitJournal(image().journal),
      setJournal: async (journal) => {
        edit().journal = joinJournal(journal)
      },
      keptJournal: async (name) => {
        const value = kept(name)
        return value && 'journal' in value ? splitJournal(value.journal) : undefined
      },
      blob: async (id) => image().blobs.find(([blob]) => blob === id)?.[1],
      setBlob: async (id, bytes) => {
        const entry = edit().blobs.find(([blob]) => blob === id)
        if (entry) entry[1] = bytes
        else edit().blobs.push([id, bytes])
      },
      keptBlob: async (name) => {
        const value = kept(name)
        return value && 'blob' in value ? value.blob : undefined
      },
      // A memory store holds values, not bytes: "unreadable" is a value rewindfs never wrote there.
      spoilMeta: async (key) => {
        const meta = edit().meta.filter(([k]) => k !== key)
        edit().meta = [...meta, [key, { spoiled: true }]]
      },
      fingerprint: async () => JSON.stringify(image(), (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value)),
    }
    return { store, raw, reopen: async () => handle(MemoryStore.from(image())) }
  }
  return { name: 'MemoryStore', tears: true, create: async () => handle(new MemoryStore()) }
}

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-store-contract-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let serial = 0

function directorySubject(): StoreSubject<DirectoryStore> {
  const handle = (path: string): StoreUnderTest<DirectoryStore> => {
    const store = directoryStore(path)
    const read = (file: string) => (fs.existsSync(file) ? new Uint8Array(fs.readFileSync(file)) : undefined)
    const raw: RawStore = {
      // The pack read apart from the store (test/support/pack-raw.ts), written as a crash or disk rot would.
      journal: async () => pack.splitJournal(pack.journalText(path)),
      setJournal: async (journal) => pack.setJournal(path, journal),
      keptJournal: async (name) => (fs.existsSync(`${path}/${name}`) ? splitJournal(fs.readFileSync(`${path}/${name}`, 'utf8')) : undefined),
      blob: async (id) => {
        const record = pack.blobRecords(path).get(id)
        return record && new Uint8Array(record.payload)
      },
      setBlob: async (id, bytes) => pack.setBlob(path, id, bytes),
      keptBlob: async (name) => read(`${path}/${name}`),
      spoilMeta: async (key) => fs.writeFileSync(`${path}/meta/${hex(key)}.json`, '{"half-writ'),
      fingerprint: async () => {
        const hash = createHash('sha1')
        const walk = (dir: string) => {
          for (const name of fs.readdirSync(dir).sort()) {
            const file = `${dir}/${name}`
            if (file === `${path}/lock`) continue
            if (fs.statSync(file).isDirectory()) walk(file)
            else hash.update(`${file}\0`).update(fs.readFileSync(file))
          }
        }
        walk(path)
        return hash.digest('hex')
      },
    }
    return {
      store,
      raw,
      reopen: async () => {
        await store.close()
        return handle(path)
      },
    }
  }
  return { name: 'directoryStore', tears: true, create: async () => handle(`${scratch}/s${serial++}`) }
}

function indexedDbSubject(): StoreSubject<IndexedDbStore> {
  const handle = async (name: string): Promise<StoreUnderTest<IndexedDbStore>> => {
    const store = indexedDbStore(name)
    await store.ready
    const database = new Database(name)
    const get = (key: string) => database.use('readonly', (objects) => promisifyRequest(objects.get(key)))
    const put = (key: string, value: unknown) => database.use('readwrite', (objects) => (objects.put(value, key), promisifyRequest(objects.transaction)))
    const raw: RawStore = {
      journal: async () => ({ records: await database.use('readonly', (objects) => promisifyRequest(objects.getAll(prefixRange('j:')))) }),
      setJournal: async (journal) => {
        if (journal.torn !== undefined) throw new Error('an IndexedDB append never tears')
        await database.use('readwrite', (objects) => {
          objects.delete(prefixRange('j:'))
          journal.records.forEach((record, i) => objects.put(record, `j:${String(i + 1).padStart(16, '0')}`))
          return promisifyRequest(objects.transaction)
        })
      },
      keptJournal: async (kept) => {
        const value: unknown = await get(`k:${kept}`)
        return Array.isArray(value) ? { records: value as string[] } : undefined
      },
      blob: async (id) => (await get(`b:${id}`)) as Uint8Array | undefined,
      setBlob: async (id, bytes) => put(`b:${id}`, bytes),
      keptBlob: async (kept) => (await get(`k:${kept}`)) as Uint8Array | undefined,
      // A value that is not JSON where metadata belongs: what something else writing there leaves.
      spoilMeta: async (key) => put(`m:${key}`, new Date(0)),
      fingerprint: async () => {
        const [keys, values] = await database.use('readonly', (objects) => Promise.all([promisifyRequest(objects.getAllKeys()), promisifyRequest(objects.getAll())]))
        return JSON.stringify(keys.map((key, i) => [key, values[i]]), (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value))
      },
    }
    return {
      store,
      raw,
      reopen: async () => {
        await store.close()
        database.close()
        return handle(name)
      },
    }
  }
  return { name: 'indexedDbStore', tears: false, create: () => handle(`rewindfs-contract-${++serial}-${Date.now()}`) }
}

for (const subject of [memorySubject(), directorySubject(), indexedDbSubject()] as StoreSubject[]) {
  describe(`the Store contract: ${subject.name}`, () => {
    for (const check of storeContract(subject)) it(check.name, check.run, 60_000)
  })
}
