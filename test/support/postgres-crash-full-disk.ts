/**
 * The child of the PGlite full-disk test (test/postgres-crash.test.ts): on a small tmpfs holding a
 * copy of an initialised data directory and a ballast file, it writes one acknowledged commit at a
 * time until one fails, then frees the ballast and tries to go on; it prints what it saw as JSON.
 * Then a second open (argv[3] === 'check') lists what the directory holds.
 */
import fs from 'node:fs'
import { pgliteStore } from '../../adapters/postgres/index.js'
import { Workspace } from '../../src/index.js'

const [dataDir, mode] = process.argv.slice(2)
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)
/** 64 KiB that PostgreSQL cannot compress (TOAST would fit a thousand patterned ones in 3 MiB): file i's own. */
function chunk(i: number): Uint8Array {
  const bytes = new Uint8Array(64 * 1024)
  let x = (i + 1) * 2654435761
  for (let j = 0; j < bytes.length; j++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    bytes[j] = x & 0xff
  }
  return bytes
}

if (mode === 'check') {
  const ws = await Workspace.open({ store: await pgliteStore({ dataDir, session: 'full' }), autoCheckpoint: false })
  const names = (ws.fs.readdirSync('/') as string[]).filter((n) => /^f\d+$/.test(n))
  const intact = names.filter((n) => Buffer.compare(ws.fs.readFileSync(`/${n}`), Buffer.from(chunk(Number(n.slice(1))))) === 0).length
  say({ files: names.length, others: (ws.fs.readdirSync('/') as string[]).filter((n) => !/^f\d+$/.test(n)).sort(), intact, corrupt: ws.status.corrupt ?? null, degraded: ws.status.degraded ?? null, verify: (await ws.verify()).corrupt })
  await ws.close()
} else {
  const ballast = `${dataDir}/../ballast`
  const ws = await Workspace.open({ store: await pgliteStore({ dataDir, session: 'full' }), autoCheckpoint: false })
  let acknowledged = 0
  let failure = ''
  for (let i = 0; i < 10_000; i++) {
    ws.fs.writeFileSync(`/f${i}`, chunk(i))
    try {
      await ws.sync()
      acknowledged = i + 1
      say({ ack: i })
    } catch (error) {
      failure = `${(error as { code?: string }).code}: ${(error as Error).message}`
      break
    }
  }
  // A write made while degraded is kept back; once the ballast is gone the store is retried by itself.
  ws.fs.writeFileSync('/while-full.txt', 'kept back')
  fs.rmSync(ballast, { force: true })
  for (let waited = 0; ws.status.reconnect?.state !== 'reconnected' && ws.status.reconnect?.state !== 'refused' && waited < 15_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const reconnect = ws.status.reconnect ?? null
  let after = ''
  try {
    ws.fs.writeFileSync('/after.txt', 'after')
    await ws.sync()
    after = 'committed'
  } catch (error) {
    after = `${(error as { code?: string }).code}: ${(error as Error).message}`
  }
  say({ acknowledged, failure, reconnect, after, degraded: ws.status.degraded ?? null })
  await ws.close().catch((error: unknown) => say({ close: String(error) }))
}
