/**
 * The demo's Web Worker: the engine with the IndexedDB and OPFS adapters and the validators the
 * page names. `project-json` is the check the agent's config write runs into (story 1).
 */
import * as indexeddb from '../adapters/indexeddb/index.js'
import * as opfs from '../adapters/opfs/index.js'
import { json } from '../validators/index.js'
import { registerAdapter, registerValidator, serve } from '../worker/serve.js'

registerAdapter('indexeddb', indexeddb)
registerAdapter('opfs', opfs)
registerValidator('project-json', json())
await serve()
