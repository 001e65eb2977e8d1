// Runs the TypeScript worker entry under tsx (tests, bench): a worker's entry must be JavaScript.
// workerData.entry names another .ts entry (a file URL or a path relative to this folder).
import { workerData } from 'node:worker_threads'
import { register } from 'tsx/esm/api'

register()
await import(new URL(workerData?.entry ?? './entry.ts', import.meta.url).href)
