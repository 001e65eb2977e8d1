/**
 * The child the postgres crash test kills: opens the session (PGlite on a directory, or a server),
 * prints `OPEN <digest> <damage>` (what the reopen after the last kill found), then runs steps
 * `from`..`to` of the seeded script, printing `BEGIN n` before a step and `ACK n` once its sync
 * resolved (acknowledged: durable). argv: pglite|postgres, dataDir|url, schema, seed, last, next, to:
 * the store holds the state after step `last` (acknowledged) or after `last + 1` (committed, not
 * yet acknowledged), whose digest is `next`; the child goes on from the step after the one it holds.
 */
import { pgliteStore, postgresStore } from '../../adapters/postgres/index.js'
import { Workspace } from '../../src/index.js'
import { COMPACT_EVERY, digest, runStep, stepKind } from './postgres-crash-script.js'

const [kind, where, schema, seedText, lastText, next, toText] = process.argv.slice(2)
const seed = Number(seedText)
const say = (line: string) => process.stdout.write(`${line}\n`)

async function open() {
  // The server frees a killed writer's lock once it notices the connection is gone: a moment.
  for (let tries = 0; ; tries++) {
    try {
      return kind === 'pglite' ? await pgliteStore({ dataDir: where, session: 'crash', schema }) : await postgresStore({ connectionString: where, session: 'crash', schema })
    } catch (error) {
      if ((error as { code?: string }).code !== 'EBUSY' || tries > 100) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

const store = await open()
const ws = await Workspace.open({ store, autoCheckpoint: false, compactEvery: COMPACT_EVERY })
const damage = { corrupt: ws.status.corrupt ?? null, warnings: ws.status.warnings, verify: (await ws.verify()).corrupt }
const opened = await digest(ws)
say(`OPEN ${opened} ${JSON.stringify(damage)}`)
for (let n = Number(lastText) + (opened === next ? 2 : 1); n <= Number(toText); n++) {
  say(`BEGIN ${n} ${stepKind(seed, n)}`)
  await runStep(ws, seed, n)
  await ws.sync()
  say(`ACK ${n}`)
}
await ws.close()
say('DONE')
