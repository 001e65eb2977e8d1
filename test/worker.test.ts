import { Worker } from 'node:worker_threads'
import { directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/workspace.js'
import type { AsyncWorkspace } from '../src/async-workspace.js'
import { openWorkerWorkspace } from '../worker/index.js'
import { asyncWorkspaceSuite } from './support/async-workspace-suite.js'

const bootstrap = new URL('../worker/bootstrap.mjs', import.meta.url)

// Compile-time: the in-process Workspace is an AsyncWorkspace as it stands.
const satisfied = (ws: Workspace): AsyncWorkspace => ws
void satisfied

asyncWorkspaceSuite('in-process Workspace', (files, store) => Workspace.open({ lower: files, ...(store ? { store: directoryStore(store) } : {}) }))
asyncWorkspaceSuite('engine in a worker thread', (files, store) =>
  openWorkerWorkspace(new Worker(bootstrap), { lower: files ? { kind: 'fixture', files } : undefined, ...(store ? { store: { kind: 'directory', path: store } } : {}) }),
)
