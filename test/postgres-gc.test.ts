/**
 * Blob collection must not stall the fleet. A deletion takes the GC lock exclusively, and Postgres
 * queues every later shared request (each writer's put) behind a waiting exclusive one: while one
 * session's long put held the lock shared (a 300 MiB file: 13 s), another's compaction sweep waited
 * for it, and every other session's commit waited behind that (a 1 KiB put took 10.5 s). Now a
 * deletion waits at most LOCK_WAIT_MS at a time and gives way; what it could not delete goes at its
 * next chance (a session's next sweep or close; collectGarbage's later attempts, or `deferred`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const HOLD_MS = 3000

describe.skipIf(url === undefined)('garbage collection beside a long put', () => {
  const schema = scratchSchema('pggc')
  let holder: Awaited<ReturnType<typeof rawClient>>
  let query: Awaited<ReturnType<typeof rawClient>>
  const open = (session: string) => postgresStore({ connectionString: url!, schema, session })

  beforeAll(async () => {
    holder = await rawClient(url!)
    query = await rawClient(url!)
  })
  afterAll(async () => {
    await holder.end()
    await query.end()
    await dropSchema(url!, schema)
  })

  /** What a session putting a large file holds for its whole transaction: the GC lock, shared, for HOLD_MS; resolves when it ended. */
  async function longPut(): Promise<{ ended: Promise<void> }> {
    await holder.query(`BEGIN; SELECT pg_advisory_xact_lock_shared(hashtextextended('rewindfs:blob-gc', 0))`)
    const ended = new Promise((resolve) => setTimeout(resolve, HOLD_MS)).then(async () => {
      await holder.query('COMMIT')
    })
    return { ended }
  }

  /** How long a small put of another session takes. */
  async function putTime(writer: PostgresStore, n: number): Promise<number> {
    const started = Date.now()
    await writer.putBlobs([[`small-${n}-${Math.random()}`, new Uint8Array(1024)]])
    return Date.now() - started
  }

  const stored = async (id: string) => (await query.query(`SELECT 1 FROM "${schema}".blobs WHERE id = $1`, [id])).rowCount === 1

  it("a compaction's sweep gives way: other sessions' commits go on, and the blob goes once the lock is free", async () => {
    const compactor = await open('compactor')
    const writer = await open('writer')
    await compactor.putBlobs([['dropped-by-compaction', new Uint8Array([1, 2, 3])]])
    const { ended: end } = await longPut()
    const started = Date.now()
    const deleting = compactor.deleteBlobs(['dropped-by-compaction'])
    await new Promise((resolve) => setTimeout(resolve, 30))
    const times = [await putTime(writer, 1), await putTime(writer, 2)]
    await deleting
    expect(Date.now() - started).toBeLessThan(HOLD_MS / 2)
    expect(Math.max(...times)).toBeLessThan(1000)
    await end
    // Not referenced, not deleted yet: its session sweeps it at its next chance (here its close).
    expect(await compactor.blobIds()).toEqual([])
    expect(await stored('dropped-by-compaction')).toBe(true)
    await compactor.close()
    expect(await stored('dropped-by-compaction')).toBe(false)
    await writer.close()
  }, 30_000)

  it('collectGarbage gives way between attempts, finishes once the lock is free, and reports what it left when out of patience', async () => {
    const fleet = await postgresFleet({ connectionString: url!, schema })
    const writer = await open('collect-writer')
    const dropped = await open('collect-dropped')
    await dropped.putBlobs([['orphan-a', new Uint8Array([1])], ['orphan-b', new Uint8Array([2])]])
    await dropped.deleteBlobs([]) // nothing: the refs stay until the session is dropped
    await dropped.close()
    await query.query(`DELETE FROM "${schema}".blob_refs WHERE session = 'collect-dropped'`)

    let end = (await longPut()).ended
    const impatient = await fleet.collectGarbage({ graceMs: 0, patienceMs: 300 })
    expect(impatient).toMatchObject({ deleted: 0, deferred: 2 })
    await end
    end = (await longPut()).ended
    const collecting = fleet.collectGarbage({ graceMs: 0 })
    await new Promise((resolve) => setTimeout(resolve, 30))
    const times = [await putTime(writer, 1), await putTime(writer, 2), await putTime(writer, 3)]
    expect(Math.max(...times)).toBeLessThan(1000)
    await end
    expect(await collecting).toMatchObject({ deleted: 2, deferred: 0 })
    expect(await stored('orphan-a')).toBe(false)

    // A drop's sweep gives way too, and a drop never fails for it.
    await writer.putBlobs([['only-in-writer', new Uint8Array([9])]])
    await writer.close()
    end = (await longPut()).ended
    const dropping = fleet.drop('collect-writer')
    const other = await open('bystander')
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(await putTime(other, 1)).toBeLessThan(1000)
    await end
    await dropping
    expect(await stored('only-in-writer')).toBe(false)
    await other.close()
    await fleet.close()
  }, 30_000)

  it("a pass's marks skip the rows a writer holds, never wait for them: a writer's put (rows in id order) and the marks (the table's order) cannot deadlock", async () => {
    const fleet = await postgresFleet({ connectionString: url!, schema })
    const writer = await open('marks')
    // Two blobs nobody refers to any more: the marks want both.
    await writer.putBlobs([['mark-a', new Uint8Array([1])], ['mark-b', new Uint8Array([2])]])
    await query.query(`DELETE FROM "${schema}".blob_refs WHERE blob IN ('mark-a', 'mark-b')`)
    // A put in flight holds mark-b's row (ON CONFLICT locks it) until it commits.
    await holder.query(`BEGIN; SELECT 1 FROM "${schema}".blobs WHERE id = 'mark-b' FOR UPDATE`)
    let released = false
    const release = new Promise((resolve) => setTimeout(resolve, HOLD_MS)).then(async () => {
      released = true
      await holder.query('COMMIT')
    })
    const report = await fleet.collectGarbage({ graceMs: 60_000 })
    // Done while the row was still held: it marked the other one and left the held one for the next pass.
    expect(released).toBe(false)
    expect(report).toMatchObject({ marked: 1, deleted: 0 })
    const orphaned = async () => (await query.query(`SELECT id FROM "${schema}".blobs WHERE id IN ('mark-a', 'mark-b') AND orphaned_at IS NOT NULL ORDER BY id`)).rows.map((row) => row.id)
    expect(await orphaned()).toEqual(['mark-a'])
    await release
    expect(await fleet.collectGarbage({ graceMs: 60_000 })).toMatchObject({ marked: 1 })
    expect(await orphaned()).toEqual(['mark-a', 'mark-b'])
    await writer.close()
    await fleet.close()
  }, 30_000)
})
