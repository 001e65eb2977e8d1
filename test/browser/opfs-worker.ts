/**
 * A dedicated worker for the OPFS store tests (sync access handles exist only in one): runs the
 * Store contract's checks by index, and scenarios the tests call by name, each answering plain data.
 */
import { opfsStore, type OpfsStore } from '../../adapters/opfs/index.js'
import { IndexedSource } from '../../src/lower/indexed.js'
import { Workspace } from '../../src/workspace.js'
import { type StoreSubject, type StoreUnderTest, storeContract } from '../../testing/store-contract.js'
import * as raw from './opfs-raw.js'

let serial = 0
const prefix = `contract-${Date.now()}`

function subject(): StoreSubject<OpfsStore> {
  const handle = async (name: string): Promise<StoreUnderTest<OpfsStore>> => {
    const store = opfsStore(name)
    await store.ready
    return {
      store,
      raw: raw.rawStore(name),
      reopen: async () => {
        await store.close()
        return handle(name)
      },
    }
  }
  return { name: 'opfsStore', tears: true, create: () => handle(`${prefix}-${++serial}`) }
}

const checks = storeContract(subject())

const lower = () =>
  new IndexedSource('fixture', 'opfs-test-lower', [
    ['/app', { type: 'dir', mode: 0o755, size: 4096, mtimeMs: 0, version: 'd' }],
    ['/app/readme.md', { type: 'file', mode: 0o644, size: 6, mtimeMs: 0, version: 'f', content: new TextEncoder().encode('lower\n') }],
  ], async () => new Map())

function files(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      if (ws.fs.statSync(path).isDirectory()) walk(path)
      else {
        try {
          out[path] = ws.fs.readFileSync(path, 'utf8') as string
        } catch (error) {
          out[path] = `<${(error as { code?: string }).code}>`
        }
      }
    }
  }
  walk('/')
  return out
}

const codeOf = (error: unknown) => (error as { code?: string }).code ?? String(error)

/** Workspaces a scenario left open for the next one (by store name). */
const held = new Map<string, Workspace>()

const scenarios: Record<string, (...args: never[]) => Promise<unknown>> = {
  async contractNames() {
    return checks.map((check) => check.name)
  },

  async contract(index: number) {
    await checks[index].run()
    return 'ok'
  },

  /** A session of group commits, each acknowledged; answers the files and the store's counters. */
  async session(name: string, commits: number) {
    const store = opfsStore(name)
    const ws = await Workspace.open({ lower: lower(), store, autoCheckpoint: false })
    const before = store.stats!
    for (let i = 0; i < commits; i++) {
      ws.fs.writeFileSync(`/app/f${i}.txt`, `commit ${i}\n`)
      await ws.sync()
    }
    await ws.checkpoint({ name: 'after' })
    const after = store.stats!
    const result = { files: files(ws), writes: after.writes - before.writes, flushes: after.flushes - before.flushes, segments: after.segments }
    await ws.close()
    return result
  },

  /** Opens the store again and answers what a workspace over it sees, with its status and what is kept aside. */
  async reopen(name: string) {
    const store = opfsStore(name)
    const ws = await Workspace.open({ lower: lower(), store, autoCheckpoint: false })
    const result = {
      files: files(ws),
      checkpoints: ws.checkpoints().map((c) => c.name),
      frozen: ws.frozen ?? null,
      corrupt: ws.status.corrupt ?? null,
      warnings: ws.status.warnings,
      kept: await store.keptAside(),
      unreadable: (await ws.verify()).corrupt,
    }
    await ws.close()
    return result
  },

  /** Opens the store read-only (as a follower) and answers what a workspace over it sees. */
  async reopenReadOnly(name: string) {
    const store = opfsStore(name, { readOnly: true })
    const ws = await Workspace.open({ lower: lower(), store, autoCheckpoint: false })
    const result = { files: files(ws), warnings: ws.status.warnings }
    await ws.close()
    return result
  },

  /** Removes something kept aside, as a user who has looked at it would. */
  async removeKept(name: string, kept: string) {
    const store = opfsStore(name)
    await store.ready
    await store.removeKept([kept])
    await store.close()
    return 'ok'
  },

  /** The format file's text (null when missing). */
  async formatText(name: string) {
    return (await raw.formatText(name)) ?? null
  },

  /** Replaces the format file's text, or removes it (null). */
  async setFormat(name: string, text: string | null) {
    await raw.setFormat(name, text ?? undefined)
    return 'ok'
  },

  /** Writes one more file through a workspace and syncs; answers the error code if it is refused. */
  async write(name: string, path: string, content: string) {
    const ws = await Workspace.open({ lower: lower(), store: opfsStore(name), autoCheckpoint: false })
    try {
      ws.fs.writeFileSync(path, content)
      await ws.sync()
      return 'written'
    } catch (error) {
      return codeOf(error)
    } finally {
      await ws.close()
    }
  },

  /** What a crash in the middle of a group commit leaves at the end of the last segment. */
  /** A group commit larger than what is left of the quota (the test lowered it): how its sync ends. */
  async overQuota(name: string, bytes: number) {
    const ws = await Workspace.open({ lower: lower(), store: opfsStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/app/big.bin', new Uint8Array(bytes).fill(7))
    const sync = await ws.sync().then(
      () => 'acknowledged',
      (error: Error) => `${codeOf(error)}: ${error.message}`,
    )
    await ws.close().catch(() => undefined)
    return sync
  },

  /**
   * A group commit larger than what is left of the quota (the test lowered it), then a small write
   * while degraded; the workspace stays open for roomAgain.
   */
  async quotaFull(name: string, bytes: number) {
    const ws = await Workspace.open({ lower: lower(), store: opfsStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/app/big.bin', new Uint8Array(bytes).fill(7))
    const sync = await ws.sync().then(
      () => 'acknowledged',
      (error: Error) => `${codeOf(error)}: ${error.message}`,
    )
    ws.fs.writeFileSync('/app/while-full.txt', 'written while the quota was full')
    held.set(name, ws)
    return { sync, degraded: ws.status.degraded ?? null }
  },

  /** After the test gave the quota back: waits for the store to take what was kept back, commits once more, closes. */
  async roomAgain(name: string) {
    const ws = held.get(name)!
    held.delete(name)
    const started = Date.now()
    while (ws.status.reconnect?.state !== 'reconnected' && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 50))
    const { state, resent, landed } = ws.status.reconnect ?? {}
    let after = 'committed'
    try {
      ws.fs.writeFileSync('/app/after.txt', 'after the room came back')
      await ws.sync()
    } catch (error) {
      after = `${codeOf(error)}: ${(error as Error).message}`
    }
    const result = { state: state ?? null, resent, landed, after, degraded: ws.status.degraded ?? null }
    await ws.close()
    return result
  },

  async tear(name: string, partial: string) {
    await raw.tearAppend(name, partial)
    return (await raw.segments(name)).map((s) => s.name)
  },

  /** What a crash while a group commit's blob was written leaves: a blob record cut short. */
  async tearBlob(name: string) {
    await raw.tearBlob(name, 'an-id-never-committed', new TextEncoder().encode('half of the bytes'))
    return (await raw.segments(name)).map((s) => s.name)
  },

  /** Flips a byte of a record header in the middle of the log (not the last record). */
  async flipHeader(name: string, which: number) {
    const all = await raw.records(name)
    const record = all[which]
    await raw.flipByte(name, record.name, record.offset + 8)
    return { kind: record.kind, offset: record.offset, of: all.length }
  },

  /**
   * Blobs over small segments, the journal compacted, three blobs in four deleted: sealed segments
   * that are mostly dead are collected. A follower that read the log before reads the moved blobs
   * (it looks again), and a reopen finds exactly the blobs kept.
   */
  async collect(name: string) {
    const filled = (i: number) => new Uint8Array(1000).fill(i)
    const writer = opfsStore(name, { segmentBytes: 4096 })
    await writer.ready
    const kept: string[] = []
    const dropped: string[] = []
    for (let i = 0; i < 40; i++) {
      await writer.putBlobs([[`b${i}`, filled(i)]])
      await writer.appendJournal([`record ${i}`])
      ;(i % 4 === 0 ? kept : dropped).push(`b${i}`)
    }
    const follower = opfsStore(name, { readOnly: true })
    await follower.ready
    const heard = await follower.readJournal()
    const before = writer.stats!
    await writer.replaceJournal(['snapshot'])
    await writer.deleteBlobs(dropped)
    const after = writer.stats!
    const same = async (store: OpfsStore, id: string) => (await store.getBlob(id))?.every((byte) => byte === Number(id.slice(1))) === true
    const followerReads = await Promise.all(kept.map((id) => same(follower, id)))
    const followerDropped = await Promise.all(dropped.map((id) => follower.getBlob(id)))
    await follower.close()
    await writer.close()
    const reopened = opfsStore(name)
    await reopened.ready
    const result = {
      heardRecords: heard.records.length,
      segmentsBefore: before.segments,
      segmentsAfter: after.segments,
      collected: after.collected,
      files: (await raw.segments(name)).length,
      followerReads: followerReads.every(Boolean),
      followerDropped: followerDropped.filter((bytes) => bytes !== undefined).length,
      ids: (await reopened.blobIds()).sort(),
      reads: (await Promise.all(kept.map((id) => same(reopened, id)))).every(Boolean),
      journal: (await reopened.readJournal()).records,
    }
    await reopened.close()
    return result
  },

  /** The writer reads blobs synchronously (its handles); a follower offers no sync read. */
  async syncReads(name: string) {
    const writer = opfsStore(name)
    await writer.ready
    const blobs: [string, Uint8Array][] = Array.from({ length: 5 }, (_, i) => [`s${i}`, new Uint8Array(3000 + i).fill(i + 1)])
    await writer.putBlobs(blobs.slice(0, 4))
    await writer.appendJournal(['four blobs'])
    await writer.putBlobs(blobs.slice(4)) // put, not yet committed: read from memory
    const follower = opfsStore(name, { readOnly: true })
    await follower.ready
    const reads = blobs.map(([id, bytes]) => {
      const read = writer.readBlobSync!(id)
      return read !== undefined && read.length === bytes.length && read.every((byte, i) => byte === bytes[i])
    })
    const result = {
      reads,
      syncReads: writer.stats!.syncReads,
      absent: writer.readBlobSync!('nope') ?? null,
      sizes: (await writer.blobSizes!()).sort(),
      follower: typeof follower.readBlobSync,
    }
    await follower.close()
    await writer.close()
    return { ...result, closed: typeof writer.readBlobSync }
  },

  /**
   * Writes and syncs in a loop from `from` on, posting each acknowledged step to the page, until the
   * page's process is killed (the crash test). Step i writes `v<i>` to /app/f<i % 16>.txt.
   */
  async hammer(name: string, from: number) {
    const ws = await Workspace.open({ lower: lower(), store: opfsStore(name, { segmentBytes: 64 * 1024 }), autoCheckpoint: false, compactEvery: 50 })
    for (let i = from; ; i++) {
      ws.fs.writeFileSync(`/app/f${i % 16}.txt`, `v${i}`.padEnd(200 + (i % 7) * 300, '.'))
      await ws.sync()
      self.postMessage({ acknowledged: i })
    }
  },

  /** What a reopen finds after a crash: the files and the status. */
  async afterCrash(name: string) {
    const ws = await Workspace.open({ lower: lower(), store: opfsStore(name, { segmentBytes: 64 * 1024 }), autoCheckpoint: false, compactEvery: 50 })
    const result = { files: files(ws), frozen: ws.frozen ?? null, corrupt: ws.status.corrupt ?? null, degraded: ws.status.degraded ?? null }
    await ws.close()
    return result
  },

  /** A purged secret, then every file of the store searched for its bytes. */
  async purge(name: string) {
    const secret = `ghp_${'q'.repeat(36)}`
    let ws = await Workspace.open({ store: opfsStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/token', secret)
    await ws.checkpoint({ name: 'leak' })
    ws.fs.writeFileSync('/token', `${secret}\n`)
    await ws.close()
    ws = await Workspace.open({ store: opfsStore(name), autoCheckpoint: false })
    const report = await ws.purge('/token')
    await ws.close()
    const needle = new TextEncoder().encode(secret)
    const hits: string[] = []
    const folder = await raw.storeFolder(name)
    const search = async (dir: FileSystemDirectoryHandle, path: string): Promise<void> => {
      for await (const [entry, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (handle.kind === 'directory') await search(handle as FileSystemDirectoryHandle, `${path}/${entry}`)
        else {
          const bytes = new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer())
          for (let at = 0; at + needle.length <= bytes.length; at++) if (needle.every((byte, i) => bytes[at + i] === byte)) hits.push(`${path}/${entry}@${at}`)
        }
      }
    }
    if (folder) await search(folder, '')
    ws = await Workspace.open({ store: opfsStore(name), autoCheckpoint: false })
    const after = { token: ws.fs.readFileSync('/token', 'utf8'), warnings: ws.status.warnings, corrupt: (await ws.verify()).corrupt }
    await ws.close()
    return { report, hits, after }
  },

  async fingerprint(name: string) {
    return raw.rawStore(name).fingerprint()
  },

  async segmentNames(name: string) {
    return (await raw.segments(name)).map((s) => s.name)
  },
}

self.onmessage = async (event: MessageEvent<{ id: number; scenario: string; args: unknown[] }>) => {
  const { id, scenario, args } = event.data
  try {
    const value = await (scenarios[scenario] as (...a: unknown[]) => Promise<unknown>)(...args)
    self.postMessage({ id, ok: true, value })
  } catch (error) {
    self.postMessage({ id, ok: false, error: error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error), code: codeOf(error) })
  }
}
