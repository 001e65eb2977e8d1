/**
 * The default Web Worker entry, for bundling (`new Worker(new URL('rewindfs/worker/browser-entry', …),
 * { type: 'module' })`): the built-in validators and the IndexedDB and OPFS adapters, then serve.
 */
import * as indexeddb from '../adapters/indexeddb/index.js'
import * as opfs from '../adapters/opfs/index.js'
import { registerBuiltInValidators } from './builtins.js'
import { registerAdapter, serve } from './serve.js'

registerBuiltInValidators()
registerAdapter('indexeddb', indexeddb)
registerAdapter('opfs', opfs)
// No top-level await: a bundler's default output (esbuild's iife) cannot hold one. A failure to
// serve is thrown from a task of its own, so the page's Worker gets an 'error' event.
serve().catch((error: unknown) => setTimeout(() => {
  throw error
}))
