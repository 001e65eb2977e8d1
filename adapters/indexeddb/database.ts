/**
 * One IndexedDB database with one object store, reached through idb-keyval. idb-keyval's
 * `createStore` opens without a version and leaves out what a durable store needs; `use` has the same
 * shape (so idb-keyval's setMany, getMany, delMany and friends run on it) plus: a blocked upgrade is
 * an EBUSY error, the connection closes on `versionchange` so we never block another tab, writes ask
 * for strict durability (acknowledged means on disk), and a body that throws aborts its transaction
 * instead of letting the half-queued writes commit.
 */
import type { UseStore } from 'idb-keyval'
import { blockedError, deletedError, translate } from './errors.js'

export const OBJECT_STORE = 'rewindfs'

/** The first key after every key that starts with `prefix`: the prefix with its last character + 1. */
function after(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
}

/** Every key that starts with `prefix`. */
export function prefixRange(prefix: string): IDBKeyRange {
  return IDBKeyRange.bound(prefix, after(prefix), false, true)
}

/** The keys that start with `prefix`, from `first` on. */
export function prefixRangeFrom(prefix: string, first: string): IDBKeyRange {
  return IDBKeyRange.bound(first, after(prefix), false, true)
}

/**
 * A copy when `bytes` is a view into a larger buffer (structured clone would store the whole buffer,
 * e.g. Node's 8 KiB Buffer pool) or a subclass (read back, it would come out a plain Uint8Array anyway).
 */
export function tight(bytes: Uint8Array): Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  return whole && bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes)
}

/**
 * `existed`: this database was open before (a reconnection). Gone since (deleted by another tab,
 * or the site's data cleared), it is not made again empty: a store written on from there would
 * hold a journal without its beginning, acknowledged and damaged.
 */
function open(name: string, version?: number, existed = false): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    let settled = false
    const request = version === undefined ? indexedDB.open(name) : indexedDB.open(name, version)
    request.onupgradeneeded = (event) => {
      if (existed && event.oldVersion === 0) {
        settled = true
        abort(request.transaction!) // nothing is created
        reject(deletedError(name))
        return
      }
      if (!request.result.objectStoreNames.contains(OBJECT_STORE)) request.result.createObjectStore(OBJECT_STORE)
    }
    request.onblocked = () => {
      settled = true
      reject(blockedError(name))
    }
    request.onerror = () => {
      if (!settled) reject(request.error)
      settled = true
    }
    request.onsuccess = () => {
      const db = request.result
      // Unblocked after we gave up: the caller has its EBUSY, so do not leak the connection.
      if (settled) return db.close()
      settled = true
      if (db.objectStoreNames.contains(OBJECT_STORE)) return resolve(db)
      // The database exists without our object store (something else made it): add it in an upgrade.
      const next = db.version + 1
      db.close()
      open(name, next, existed).then(resolve, reject)
    }
  })
}

function abort(transaction: IDBTransaction): void {
  try {
    transaction.abort()
  } catch {
    // Already committed or aborted (the failure was the transaction's own): nothing left to undo.
  }
}

export class Database {
  private connection: Promise<IDBDatabase> | undefined
  /** A connection was made once: a reconnection must find the database, not make it anew. */
  private opened = false

  constructor(readonly name: string) {}

  readonly use: UseStore = (mode, callback) =>
    this.connect().then(async (db) => {
      const transaction = db.transaction(OBJECT_STORE, mode, { durability: mode === 'readwrite' ? 'strict' : 'default' })
      const ended = new Promise<DOMException | null>((resolve) => {
        transaction.addEventListener('complete', () => resolve(null))
        transaction.addEventListener('abort', () => resolve(transaction.error))
      })
      try {
        return await callback(transaction.objectStore(OBJECT_STORE))
      } catch (error) {
        abort(transaction)
        // A failed request's error event reaches the transaction before the abort sets its `error`, so
        // idb-keyval rejects with null: the reason is on the transaction once it has aborted.
        throw error ?? (await ended)
      }
    })

  /** Runs `body` (one transaction) and turns its failure into a coded error naming `operation`. */
  async run<T>(operation: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body()
    } catch (error) {
      throw translate(error, operation, this.name)
    }
  }

  /** Opens the connection now, so a blocked upgrade or a refused open surfaces at once. */
  async open(): Promise<void> {
    await this.run('open', () => this.connect())
  }

  close(): void {
    const connection = this.connection
    this.connection = undefined
    void connection?.then((db) => db.close(), () => undefined)
  }

  private connect(): Promise<IDBDatabase> {
    this.connection ??= open(this.name, undefined, this.opened).then(
      (db) => {
        this.opened = true
        db.onversionchange = () => {
          db.close()
          this.connection = undefined
        }
        // The browser closed it (site data cleared): the next call reopens.
        db.onclose = () => {
          this.connection = undefined
        }
        return db
      },
      (error: unknown) => {
        this.connection = undefined
        throw error
      },
    )
    return this.connection
  }
}
