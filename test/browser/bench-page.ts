/**
 * The IndexedDB bench's page module (bundled by driver.ts, driven by bench/indexeddb.ts): group
 * commits of 1 KiB journal records through indexedDbStore against idb-keyval's setMany of the same
 * records, sequentially, as a workspace commits them.
 */
import { createStore, promisifyRequest, setMany, type UseStore } from 'idb-keyval'
import { indexedDbStore } from '../../adapters/indexeddb/index.js'

const status = document.getElementById('status') as HTMLElement

function records(group: number, size: number, recordBytes: number): string[] {
  return Array.from({ length: size }, (_, i) => `${group}:${i}:`.padEnd(recordBytes, 'x'))
}

/** idb-keyval's store shape with strict durability, to tell the cost of durability from ours. */
function strictStore(name: string): UseStore {
  const db = new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(name)
    request.onupgradeneeded = () => request.result.createObjectStore('keyval')
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
  return (mode, callback) => db.then((d) => callback(d.transaction('keyval', mode, { durability: 'strict' }).objectStore('keyval')))
}

type Subject = 'rewindfs' | 'idb-keyval' | 'idb-keyval-strict'

/** Milliseconds for `groups` sequential commits of `size` records of `recordBytes` each. */
async function run(subject: Subject, name: string, groups: number, size: number, recordBytes: number): Promise<number> {
  const batches = Array.from({ length: groups }, (_, g) => records(g, size, recordBytes))
  if (subject === 'rewindfs') {
    const store = indexedDbStore(name)
    await store.ready
    const start = performance.now()
    for (const batch of batches) await store.appendJournal(batch)
    const elapsed = performance.now() - start
    await store.close()
    return elapsed
  }
  const use = subject === 'idb-keyval' ? createStore(name, 'keyval') : strictStore(name)
  await use('readonly', (store) => promisifyRequest(store.count()))
  let seq = 1
  const start = performance.now()
  // The store's own key shape, so the difference is the adapter, not the keys.
  for (const batch of batches) await setMany(batch.map((record) => [`j:${String(seq++).padStart(16, '0')}`, record]), use)
  return performance.now() - start
}

const bench = { run }
export type Bench = typeof bench

declare global {
  interface Window {
    rewindfsBench: Bench
  }
}

window.rewindfsBench = bench
status.textContent = 'ready'
