/**
 * A writer notifies only while a reader follows its session: NOTIFY makes every notifying commit of
 * the database wait its turn for one lock, so a fleet of writers nobody follows paid for it at each
 * commit. Watched from a raw connection LISTENing on the session's channel (it does not register
 * as a follower): a marker it notifies itself arrives after every notification committed before it.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../adapters/postgres/index.js'
import { dropSchema, rawClient, scratchSchema, serverUrl } from './postgres-server.js'

const url = await serverUrl()
const schema = scratchSchema('notify')

afterAll(async () => {
  if (url) await dropSchema(url, schema)
})

describe.skipIf(url === undefined)('a postgres writer notifies only while a reader follows', () => {
  it('is silent without a follower, heard while one follows, silent again once it closed', async () => {
    const writer = await postgresStore({ connectionString: url!, schema, session: 'quiet' })
    const raw = await rawClient(url!)
    const payloads: string[] = []
    raw.on('notification', (message) => payloads.push(message.payload ?? ''))
    const [{ channel }] = (await raw.query<{ channel: string }>(`SELECT 'rewindfs_' || md5($1) AS channel`, [`${schema}/quiet`])).rows
    await raw.query(`LISTEN "${channel}"`)
    let markers = 0
    /** What the writer notified since the last call: everything before the marker. */
    const notified = async () => {
      const marker = `marker-${markers++}`
      await raw.query(`SELECT pg_notify($1, $2)`, [channel, marker])
      await expect.poll(() => payloads.includes(marker), { timeout: 5000 }).toBe(true)
      return payloads.splice(0).filter((payload) => !payload.startsWith('marker-'))
    }
    try {
      await writer.appendJournal(['one'])
      await writer.putMeta('k', { v: 1 })
      await writer.deleteMeta('k')
      await writer.replaceJournal(['one'])
      expect(await notified()).toEqual([])

      const reader = await postgresStore({ connectionString: url!, schema, session: 'quiet', readOnly: true })
      let heard = 0
      reader.onChange(() => heard++)
      // A read made after onChange runs after the reader registered: from here every commit notifies.
      expect((await reader.readJournal()).records).toEqual(['one'])
      await writer.appendJournal(['two'])
      await writer.putMeta('k', { v: 2 })
      await writer.deleteMeta('k')
      await writer.replaceJournal(['one', 'two'])
      expect(await notified()).toEqual(['journal', 'meta', 'meta', 'journal'])
      // The four, and the marker notified on the same channel.
      await expect.poll(() => heard, { timeout: 5000 }).toBe(5)

      await reader.close()
      await writer.appendJournal(['three'])
      expect(await notified()).toEqual([])
    } finally {
      await raw.end()
      await writer.close()
    }
  }, 60_000)

  it('a reader registering while a commit that found no follower is under way waits for it, and reads it', async () => {
    const writer = await postgresStore({ connectionString: url!, schema, session: 'race' })
    await writer.appendJournal(['one'])
    // A writer's commit halfway: it took the followers' lock (the session's key, seed 2) and found
    // no follower, so it will not notify; its row is not committed yet.
    const committing = await rawClient(url!)
    try {
      await committing.query('BEGIN')
      const [{ alone }] = (await committing.query<{ alone: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtextextended($1, 2)) AS alone`, [`${schema}/race`])).rows
      expect(alone).toBe(true)
      await committing.query(`INSERT INTO "${schema}".journal (session, seq, record) VALUES ('race', 1000, 'unheard')`)
      const reader = await postgresStore({ connectionString: url!, schema, session: 'race', readOnly: true })
      reader.onChange(() => undefined)
      const reading = reader.readJournal()
      await new Promise((resolve) => setTimeout(resolve, 200))
      await committing.query('COMMIT')
      // Not heard, but read: the reader's registration waited for that commit, its read came after.
      expect((await reading).records).toEqual(['one', 'unheard'])
      await reader.close()
    } finally {
      await committing.end()
      await writer.close()
    }
  }, 60_000)
})
