/**
 * A reader following a session on the real server: its backend terminated (pg_terminate_backend,
 * as an administrator or a failover does), it must come back by itself and LISTEN again, or a
 * follower (the worker keeps one reader store for its life) stops hearing the writer's commits.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../adapters/postgres/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const schema = scratchSchema('follow')

afterAll(async () => {
  if (url) await dropSchema(url, schema)
})

/**
 * The backends following the session (a reader that LISTENs holds the followers' lock shared: the
 * writer's key hashed with seed 2), terminated if asked; resolves with how many.
 */
async function listeners(session: string, terminate = false): Promise<number> {
  const client = await rawClient(url!)
  try {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND objsubid = 1 AND granted
          AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 2)`,
      [`${schema}/${session}`],
    )
    if (terminate) for (const { pid } of rows) await client.query(`SELECT pg_terminate_backend($1, 5000)`, [pid])
    return rows.length
  } finally {
    await client.end()
  }
}

describe.skipIf(url === undefined)('a postgres reader follows commits across a lost connection', () => {
  it('reconnects by itself, LISTENs again and hears the commits after it', async () => {
    const writer = await postgresStore({ connectionString: url!, schema, session: 'followed' })
    await writer.appendJournal(['one'])
    const reader = await postgresStore({ connectionString: url!, schema, session: 'followed', readOnly: true })
    let heard = 0
    reader.onChange(() => heard++)
    await expect.poll(() => listeners('followed'), { timeout: 5000 }).toBe(1)
    await writer.appendJournal(['two'])
    await expect.poll(() => heard, { timeout: 5000 }).toBeGreaterThanOrEqual(1)

    let lost = 0
    reader.onLost(() => lost++)
    expect(await listeners('followed', true)).toBe(1)
    await expect.poll(() => lost, { timeout: 5000 }).toBe(1)
    // Committed while the reader was away: its return says so (one change), and it reads it.
    await writer.appendJournal(['three'])
    await expect.poll(() => reader.lost === undefined && heard >= 2, { timeout: 10_000 }).toBe(true)
    expect((await reader.readJournal()).records).toEqual(['one', 'two', 'three'])

    // LISTENing again on the new connection: the next commit is heard.
    const before = heard
    await writer.appendJournal(['four'])
    await writer.putMeta('k', { v: 1 })
    await expect.poll(() => heard, { timeout: 5000 }).toBeGreaterThanOrEqual(before + 2)
    await writer.close()
    await reader.close()
  }, 60_000)
})
