/**
 * Runs exec scenarios in this process and prints what they observed as one JSON object: the
 * unprivileged half of test/exec-overlay.test.ts starts it as another user (runuser … node
 * --import tsx test/support/exec-user.ts name…).
 */
import { type ScenarioName, scenarios } from './exec-scenarios.js'
import { differential } from './exec-differential.js'

const out: Record<string, unknown> = {}
for (const name of process.argv.slice(2)) {
  try {
    if (name.startsWith('differential:')) out[name] = await differential(Number(name.slice('differential:'.length)), Number(process.env.REWINDFS_DIFFERENTIAL_RUNS ?? 8))
    else out[name] = { value: await scenarios[name as ScenarioName]() }
  } catch (error) {
    out[name] = { error: error instanceof Error ? `${error.message}\n${error.stack}` : String(error) }
  }
}
process.stdout.write(JSON.stringify(out))
