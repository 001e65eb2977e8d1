/**
 * A large blob is read back a few chunks per query into one buffer of its size: reading all its
 * chunk rows at once held them beside the whole (about twice its size). Counted through a pool
 * whose clients record how many chunk rows each query returned; damage (a chunk missing, one more
 * than the count, one too large) is still EIO.
 */
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { type PgPoolLike, postgresStore } from '../adapters/postgres/index.js'
import { CHUNKS_PER_READ } from '../adapters/postgres/store.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const schema = scratchSchema('chunks')
const MiB = 1024 * 1024

/** Byte equality without the matcher's element-by-element walk (minutes for 10 MiB). */
const same = (a: Uint8Array | undefined, b: Uint8Array) => a !== undefined && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0

afterAll(async () => {
  if (url) await dropSchema(url, schema)
})

/** A pool whose clients record the rows of each query that read chunk bytes. */
function countingPool(pool: pg.Pool, rowsPerQuery: number[]): PgPoolLike {
  return {
    connect: async () => {
      const client = await pool.connect()
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<pg.QueryResult>
      Object.assign(client, {
        query: async (text: string, values?: unknown[]) => {
          const result = await query(text, values)
          if (/^SELECT n, bytes FROM .*blob_chunks/.test(text)) rowsPerQuery.push(result.rows.length)
          return result
        },
      })
      return client as unknown as Awaited<ReturnType<PgPoolLike['connect']>>
    },
  }
}

describe.skipIf(url === undefined)('a chunked blob on postgres', () => {
  it(`is read ${CHUNKS_PER_READ} chunks per query at most, whole and exact; damage is EIO`, async () => {
    const bytes = new Uint8Array(10 * MiB + 5)
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i / 4096) % 251
    bytes[bytes.length - 1] = 7
    const writer = await postgresStore({ connectionString: url!, schema, session: 'large' })
    await writer.putBlobs([['big', bytes]])
    await writer.close()

    const pool = new pg.Pool({ connectionString: url!, max: 2 })
    const rowsPerQuery: number[] = []
    const read = async () => {
      const store = await postgresStore({ pool: countingPool(pool, rowsPerQuery), schema, session: 'large', readOnly: true })
      try {
        return await store.getBlob('big')
      } finally {
        await store.close()
      }
    }
    try {
      const back = await read()
      expect(back?.byteLength).toBe(bytes.byteLength)
      expect(same(back, bytes)).toBe(true)
      // 11 chunks: 4 + 4 + 3, never all of them in one reply.
      expect(rowsPerQuery).toEqual([4, 4, 3])
      expect(Math.max(...rowsPerQuery)).toBeLessThanOrEqual(CHUNKS_PER_READ)

      const client = await rawClient(url!)
      const chunks = `"${schema}".blob_chunks`
      try {
        // One chunk more than the count.
        await client.query(`INSERT INTO ${chunks} (blob, n, bytes) VALUES ('big', 11, '\\x01')`)
        await expect(read()).rejects.toMatchObject({ code: 'EIO', message: expect.stringMatching(/do not add up/) })
        await client.query(`DELETE FROM ${chunks} WHERE blob = 'big' AND n = 11`)
        // A chunk missing in the middle.
        const [{ bytes: fifth }] = (await client.query(`DELETE FROM ${chunks} WHERE blob = 'big' AND n = 5 RETURNING bytes`)).rows
        await expect(read()).rejects.toMatchObject({ code: 'EIO', message: expect.stringMatching(/do not add up/) })
        // A chunk larger than the blob's size leaves room for.
        await client.query(`INSERT INTO ${chunks} (blob, n, bytes) VALUES ('big', 5, $1)`, [Buffer.concat([fifth, Buffer.from([1])])])
        await expect(read()).rejects.toMatchObject({ code: 'EIO', message: expect.stringMatching(/do not add up/) })
        await client.query(`UPDATE ${chunks} SET bytes = $1 WHERE blob = 'big' AND n = 5`, [fifth])
      } finally {
        await client.end()
      }
      expect(same(await read(), bytes)).toBe(true)
    } finally {
      await pool.end()
    }
  }, 60_000)
})
