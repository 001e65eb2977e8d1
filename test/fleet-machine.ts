/**
 * One machine of the fleet test (test/fleet.test.ts), run as its own process: it opens its sessions
 * in the shared database over the shared base directory and, until the deadline, does random
 * writes, checkpoints, undos, restores, forks and flushes on them. It reports on stdout, one JSON
 * line each (synchronous on Linux pipes, so a line written is a line the parent gets, even if the
 * machine is killed right after):
 *   pending  just before a group commit is sent: the session's state that commit makes durable
 *   durable  once the commit is in the database
 *   adopted  a session taken over from a killed machine, as it reopened
 *   conflict a flush refused (ECONFLICT), each path checked against the shared ledgers
 *   final    the state each session closed with
 * A session's state (its digest) is what only it writes: the tree under /work/<session> and its
 * checkpoint names. Forks never flush: a fork holds its source's changes under /work/<source>, and
 * flushing them would change what the source sees there through the base. Flushes ask the parent first (stdin 'go'), so the parent never kills a machine
 * in the middle of one (a directory flush killed half-way is the node-fs crash test's business).
 */
import readline from 'node:readline'
import { directory } from '../adapters/node-fs/index.js'
import { type Fleet, type PostgresStore, postgresFleet, postgresStore } from '../adapters/postgres/index.js'
import { type Store, Workspace } from '../src/index.js'
import { digest, sessionDigest } from './fleet-digest.js'
import { generator } from './support/seed.js'

interface Config {
  url: string
  schema: string
  base: string
  machine: string
  seed: number
  /** When to stop; 0: when the parent says (stdin 'start <endAt>', once every machine is ready). */
  endAt: number
  create: string[]
  adopt: string[]
  shared: string[]
  baseFiles: string[]
}

const config = JSON.parse(process.argv[2]) as Config

function say(message: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify({ machine: config.machine, ...message }) + '\n')
}

// Seeded: runs are reproducible from the seed the parent prints.
const { next: random, pick } = generator(config.seed)

interface Session {
  readonly name: string
  ws: Workspace
}

const lower = directory(config.base)
const sessions: Session[] = []
let fleet: Fleet

/** The store as the workspace sees it, reporting each group commit before and after it is sent. */
function reporting(store: PostgresStore, session: string, ws: () => Workspace | undefined): Store {
  return {
    kind: store.kind,
    durability: store.durability,
    get readOnly() {
      return store.readOnly
    },
    appendJournal: async (records) => {
      const current = ws()
      const pending = current && digest(current, session)
      if (pending) say({ t: 'pending', session, digest: pending })
      await store.appendJournal(records)
      if (pending) say({ t: 'durable', session, digest: pending })
    },
    readJournal: () => store.readJournal(),
    replaceJournal: (records) => store.replaceJournal(records),
    putBlobs: (blobs) => store.putBlobs(blobs),
    getBlob: (id) => store.getBlob(id),
    deleteBlobs: (ids) => store.deleteBlobs(ids),
    blobIds: () => store.blobIds(),
    getMeta: (key) => store.getMeta(key),
    putMeta: (key, value) => store.putMeta(key, value),
    deleteMeta: (key) => store.deleteMeta(key),
    setAside: (item, label) => store.setAside(item, label),
    keptAside: () => store.keptAside(),
    removeKept: (names) => store.removeKept(names),
    close: () => store.close(),
  }
}

async function openSession(name: string): Promise<Session> {
  // The lock of a killed machine's connection goes when the server sees the socket close: a moment.
  let store: PostgresStore | undefined
  for (let attempt = 0; store === undefined; attempt++) {
    try {
      store = await postgresStore({ connectionString: config.url, schema: config.schema, session: name })
    } catch (error) {
      if ((error as { code?: string }).code !== 'EBUSY' || attempt > 100) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const session = { name } as Session
  session.ws = await Workspace.open({ lower, store: reporting(store, name, () => session.ws), session: name, autoCheckpoint: false, compactEvery: 150 })
  if (session.ws.status.degraded) throw new Error(`session ${name} opened degraded: ${session.ws.status.degraded}`)
  return session
}

// ---- what the parent says on stdin ---------------------------------------------------------------

const goes: (() => void)[] = []
let started: (endAt: number) => void
const start = new Promise<number>((resolve) => (started = resolve))
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') goes.shift()?.()
  else if (line.startsWith('start ')) started(Number(line.slice('start '.length)))
})

function askToFlush(): Promise<void> {
  return new Promise((resolve) => {
    goes.push(resolve)
    say({ t: 'flush-request' })
  })
}

// ---- the random operations ------------------------------------------------------------------------

async function operate(session: Session): Promise<void> {
  const { ws, name } = session
  const root = `/work/${name}`
  ws.fs.mkdirSync(root, { recursive: true })
  const own = () => (ws.fs.readdirSync(root) as string[]).filter((n) => n.endsWith('.txt'))
  const roll = random()
  if (roll < 0.2) {
    ws.fs.writeFileSync(`${root}/f${Math.floor(random() * 10)}.txt`, `${name} ${random().toString(36)}\n`.repeat(1 + Math.floor(random() * 40)))
  } else if (roll < 0.28) {
    // The base's bytes under another name: the fleet stores them once however many sessions do this.
    ws.fs.copyFileSync(`/${pick(config.baseFiles)}`, `${root}/copy${Math.floor(random() * 6)}.txt`)
  } else if (roll < 0.48) {
    // An edit: read first (what the session read is what a later flush checks the base against).
    const file = `/${pick(config.shared)}`
    const text = ws.fs.readFileSync(file, 'utf8') as string
    ws.fs.writeFileSync(file, `${text.split('\n').slice(-4).join('\n')}${name} was here ${random().toString(36)}\n`)
  } else if (roll < 0.52) {
    const files = own()
    if (files.length > 0) ws.fs.rmSync(`${root}/${pick(files)}`)
  } else if (roll < 0.62) {
    await ws.checkpoint({ name: `cp-${Math.floor(random() * 1e9).toString(36)}` })
  } else if (roll < 0.69) {
    await ws.undo().catch(() => undefined) // nothing to undo is fine
  } else if (roll < 0.75) {
    const checkpoints = ws.checkpoints().filter((c) => !c.broken)
    if (checkpoints.length > 0) await ws.restore(pick(checkpoints).id, { force: true }).catch(ignoreConflict)
  } else if (roll < 0.78) {
    await fork(session)
  } else if (!name.includes('.f')) {
    await flush(session)
  }
  await ws.sync()
}

function ignoreConflict(error: unknown): void {
  if ((error as { code?: string }).code !== 'ECONFLICT') throw error
}

async function fork(session: Session): Promise<void> {
  // The forks the database has, whichever machine made them: a session adopted from a killed
  // machine may have forks already, and a name taken is EEXIST.
  const prefix = `${session.name}.f`
  const taken = new Set((await fleet.sessions()).map((s) => s.session).filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length))))
  if (taken.size >= 2) return
  let number = 1
  while (taken.has(`${prefix}${number}`)) number++
  const to = `${prefix}${number}`
  const checkpoints = session.ws.checkpoints().filter((c) => c.kind === 'manual')
  const checkpoint = checkpoints.length > 0 && random() < 0.7 ? pick(checkpoints).name : undefined
  // What the copy holds: the source's committed state (every op on it was acknowledged), seen
  // from the fork, which has written nothing under /work/<fork> yet.
  const copied = sessionDigest([], session.ws.checkpoints().map((c) => c.name))
  say({ t: 'pending', session: to, digest: copied, creating: true })
  await fleet.fork({ from: session.name, to, ...(checkpoint ? { checkpoint } : {}) })
  say({ t: 'durable', session: to, digest: copied })
  const forked = await openSession(to)
  sessions.push(forked)
  if (checkpoint) await forked.ws.restore(checkpoint, { force: true }).catch(ignoreConflict)
  await forked.ws.sync()
}

async function flush(session: Session): Promise<void> {
  const { ws, name } = session
  await askToFlush()
  try {
    try {
      await ws.flush()
      say({ t: 'flushed', session: name })
    } catch (error) {
      const { code, conflicts } = error as { code?: string; conflicts?: { path: string }[] }
      if (code !== 'ECONFLICT') throw error
      // The flush checked under the directory's flush lock, as every flush into the base does, and
      // each records its ledger before it lets go: under that lock, what the base holds now was
      // written by a flush some other session's ledger records, with the version it recorded.
      const paths = conflicts!.map((c) => c.path)
      const explained = await lower.exclusive(async () => {
        const now = await lower.versions(paths)
        // One query at a time: the fleet view has one connection.
        const found: boolean[] = []
        for (const [i, path] of paths.entries()) {
          const rows = await fleet.flushes({ target: lower.id, path })
          found.push(rows.some((row) => row.session !== name && (row.version ?? undefined) === now[i]))
        }
        return found
      })
      say({ t: 'conflict', session: name, paths, explained })
      if (random() < 0.5) {
        await ws.flush(undefined, { force: true })
        say({ t: 'flushed', session: name, forced: true })
      }
    }
  } finally {
    say({ t: 'flush-end' })
  }
}

// ---- the machine --------------------------------------------------------------------------------

async function main(): Promise<void> {
  fleet = await postgresFleet({ connectionString: config.url, schema: config.schema })
  for (const name of config.adopt) {
    // A session a killed machine held: it may never have been created (killed before its fork).
    const exists = (await fleet.sessions()).some((s) => s.session === name)
    if (!exists) {
      say({ t: 'adopted', session: name, absent: true })
      continue
    }
    const session = await openSession(name)
    say({ t: 'adopted', session: name, digest: digest(session.ws, name) })
    sessions.push(session)
  }
  for (const name of config.create) {
    const session = await openSession(name)
    // First sightings of the shared files: a flush that changes one later is what this session's
    // own flush of its edit conflicts with.
    for (const file of config.shared) session.ws.fs.readFileSync(`/${file}`)
    await session.ws.sync()
    sessions.push(session)
  }
  say({ t: 'ready' })
  const endAt = config.endAt || (await start)
  while (Date.now() < endAt && sessions.length > 0) await operate(pick(sessions))
  for (const session of sessions) {
    await session.ws.sync()
    say({ t: 'final', session: session.name, digest: digest(session.ws, session.name) })
    await session.ws.close()
  }
  await fleet.close()
  say({ t: 'done' })
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say({ t: 'error', message: (error as Error)?.stack ?? String(error) })
    process.exit(1)
  },
)
