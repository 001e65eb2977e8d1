/**
 * The scripted "agent": two seed stories played against the worker workspace, each line of its
 * progress reported through `log` so the page can show it as it happens.
 */
import type { Checkpoint } from '../src/workspace.js'
import type { WorkerWorkspace } from '../worker/index.js'

export type LogKind = 'step' | 'error' | 'ok'
export type Log = (kind: LogKind, text: string) => void

export const CONFIG = '/project/config.json'
export const SCHEMA = '/project/schema.sql'
export const MIGRATIONS = '/project/migrations'

/** A config write with a trailing comma: the `project-json` validator in the worker refuses it. */
const BAD_CONFIG = '{\n  "port": 9090,\n  "database": "postgres://localhost/shop",\n  "features": { "search": true },\n}\n'

export interface ValidationFailure {
  path: string
  validator: string
  message: string
}

function failuresOf(error: unknown): ValidationFailure[] | undefined {
  const failures = (error as { failures?: unknown } | null)?.failures
  return (error as Error | null)?.name === 'ValidationError' && Array.isArray(failures) ? (failures as ValidationFailure[]) : undefined
}

/** Story 1: the agent changes the port but writes invalid JSON; the transaction is refused whole. */
export async function badConfigStory(ws: WorkerWorkspace, log: Log): Promise<{ refused: boolean; failures: ValidationFailure[] }> {
  const before = await ws.fs.readFile(CONFIG, 'utf8')
  log('step', `agent: set the port to 9090 in ${CONFIG} (in a transaction, validators run before commit)`)
  try {
    await ws.transaction((fs) => fs.promises.writeFile(CONFIG, BAD_CONFIG), { label: 'agent: change the port' })
  } catch (error) {
    const failures = failuresOf(error)
    if (!failures) throw error
    for (const failure of failures) log('error', `refused by ${failure.validator}: ${failure.path}: ${failure.message}`)
    const after = await ws.fs.readFile(CONFIG, 'utf8')
    log(after === before ? 'ok' : 'error', after === before ? `nothing landed: ${CONFIG} is unchanged` : `${CONFIG} changed although the transaction was refused`)
    return { refused: true, failures }
  }
  log('error', 'the invalid config was accepted: is the project-json validator registered in the worker?')
  return { refused: false, failures: [] }
}

interface Step {
  name: string
  sql: string
  /** Why this step fails when run (the simulated database error). */
  fails?: string
}

export const MIGRATION: readonly Step[] = [
  { name: 'add-email', sql: 'ALTER TABLE users ADD COLUMN email TEXT;' },
  { name: 'backfill-email', sql: "UPDATE users SET email = name || '@example.com';" },
  { name: 'add-orders-total', sql: 'ALTER TABLE orders ADD COLUMN total INTEGER;' },
  { name: 'unique-email', sql: 'CREATE UNIQUE INDEX users_email ON users (email);', fails: 'duplicate key value violates unique constraint "users_email" (two users share a name)' },
  { name: 'add-orders-status', sql: "ALTER TABLE orders ADD COLUMN status TEXT DEFAULT 'new';" },
  { name: 'index-orders-user', sql: 'CREATE INDEX orders_user ON orders (user_id);' },
  { name: 'drop-orders-legacy', sql: 'ALTER TABLE orders DROP COLUMN legacy;' },
]

/** A checkpoint name not taken yet: the story can run more than once. */
function freeName(checkpoints: readonly Checkpoint[], base: string): string {
  const taken = new Set(checkpoints.map((c) => c.name))
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`
    if (!taken.has(name)) return name
  }
}

/**
 * Story 2: a 7-step migration. A checkpoint first; each step writes its migration file and appends
 * to the schema; step 4 fails after its write; the agent previews and restores to the checkpoint.
 */
export async function migrationStory(ws: WorkerWorkspace, log: Log): Promise<{ failedAt: number; restoredTo: string; reverted: number }> {
  const start = await ws.checkpoint({ name: freeName(await ws.checkpoints(), 'before-migration') })
  log('step', `agent: checkpoint '${start.name}' before a ${MIGRATION.length}-step migration`)
  await ws.fs.mkdir(MIGRATIONS, { recursive: true })
  let failedAt = 0
  for (const [i, step] of MIGRATION.entries()) {
    const number = i + 1
    const file = `${MIGRATIONS}/${String(number).padStart(3, '0')}-${step.name}.sql`
    await ws.fs.writeFile(file, `${step.sql}\n`)
    await ws.fs.appendFile(SCHEMA, `${step.sql}\n`)
    if (step.fails) {
      log('error', `step ${number}/${MIGRATION.length} ${step.name} failed: ${step.fails}`)
      failedAt = number
      break
    }
    log('step', `step ${number}/${MIGRATION.length} ${step.name}: wrote ${file}`)
  }
  if (failedAt === 0) return { failedAt, restoredTo: '', reverted: 0 }
  const preview = await ws.restore(start.id, { dryRun: true })
  log('step', `agent: restore to '${start.name}' would revert ${preview.changes.length} paths: ${preview.changes.map((c) => `${c.type} ${c.path}`).join(', ')}`)
  const report = await ws.restore(start.id)
  log('ok', `restored to '${start.name}': steps 1–${failedAt} are gone, the project is as before the migration`)
  return { failedAt, restoredTo: start.name, reverted: report.changes.length }
}
