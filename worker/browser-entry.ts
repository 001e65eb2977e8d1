/**
 * The default Web Worker entry, for bundling (`new Worker(new URL('rewindfs/worker/browser-entry', …),
 * { type: 'module' })`): the built-in validators and the IndexedDB adapter, then serve.
 */
import * as indexeddb from '../adapters/indexeddb/index.js'
import { registerBuiltInValidators } from './builtins.js'
import { registerAdapter, serve } from './serve.js'

registerBuiltInValidators()
registerAdapter('indexeddb', indexeddb)
await serve()
