/**
 * One writer of the flush lock test (test/flush-lock.test.ts), run as its own process: a
 * read-modify-write loop on one shared file of a real directory, each attempt a fresh workspace
 * over it that reads the file, appends its own line and flushes. A refused flush (ECONFLICT) is
 * retried from a new read or, for a writer told to, forced. One JSON line per attempt on stdout:
 *   applied  the flush went in: what it read and what it wrote, and whether it was forced
 *   refused  ECONFLICT
 *   error    anything else (a failure of the test)
 */
import readline from 'node:readline'
import { directory } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { generator } from './support/seed.js'

interface Config {
  base: string
  writer: string
  /** Flushes to get in before stopping. */
  wanted: number
  /** The chance a refused flush is forced rather than retried. */
  forceChance: number
  seed: number
}

const config = JSON.parse(process.argv[2]) as Config
const say = (message: Record<string, unknown>) => process.stdout.write(JSON.stringify({ writer: config.writer, ...message }) + '\n')

const random = generator(config.seed).next

async function main(): Promise<void> {
  // Every writer starts at once, when the parent says so.
  await new Promise<void>((resolve) => readline.createInterface({ input: process.stdin }).once('line', () => resolve()))
  const lower = directory(config.base)
  let applied = 0
  for (let attempt = 0; applied < config.wanted; attempt++) {
    if (attempt > 500) throw new Error(`${config.writer}: ${config.wanted} flushes did not go in after 500 attempts`)
    const ws = await Workspace.open({ lower })
    try {
      const read = ws.fs.readFileSync('/log.txt', 'utf8') as string
      const wrote = `${read}${config.writer} ${applied}\n`
      ws.fs.writeFileSync('/log.txt', wrote)
      try {
        await ws.flush()
        applied++
        say({ t: 'applied', read, wrote, forced: false })
      } catch (error) {
        if ((error as { code?: string }).code !== 'ECONFLICT') throw error
        say({ t: 'refused' })
        if (random() < config.forceChance) {
          await ws.flush(undefined, { force: true })
          applied++
          say({ t: 'applied', read, wrote, forced: true })
        }
      }
    } finally {
      await ws.close()
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say({ t: 'error', message: (error as Error)?.stack ?? String(error) })
    process.exit(1)
  },
)
