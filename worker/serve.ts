/**
 * Serves the engine on a worker's channel through comlink. A worker entry module registers its
 * validators, compensators and (when bundled) adapters, then calls `serve()`; rewindfs/worker/entry
 * (Node) and rewindfs/worker/browser-entry are two that do.
 */
import * as Comlink from 'comlink'
import type { Endpoint } from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { SERVING_MESSAGE } from './constants.js'
import { type CallCallbacks, type Hooks, WorkspaceHost } from './host.js'
import type { Outcome, ServingMessage } from './protocol.js'

export { registerAdapter, registerValidator } from './host.js'
export type { AdapterName } from './host.js'

/** What the page's side sees through comlink: one method, every message checked. */
export interface WorkerApi {
  request(message: unknown, callbacks?: CallCallbacks, hooks?: Hooks): Promise<Outcome>
}

/** The channel of the current worker: a Web Worker's global scope, or Node's parentPort. */
async function currentEndpoint(): Promise<Endpoint> {
  const scope = globalThis as { WorkerGlobalScope?: unknown; postMessage?: unknown }
  if (scope.WorkerGlobalScope !== undefined) return globalThis as unknown as Endpoint
  // Through getBuiltinModule, not import(): a bundler for the browser must not meet a node: module.
  const host = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
  const threads = host.process?.getBuiltinModule?.('node:worker_threads') as typeof import('node:worker_threads') | undefined
  if (!threads) throw new Error('rewindfs: serve() runs inside a Web Worker or a Node worker thread (Node ≥ 20.16)')
  const { parentPort } = threads
  if (!parentPort) throw new Error('rewindfs: serve() runs inside a worker (no parentPort: this is the main thread)')
  return nodeEndpoint(parentPort as unknown as Parameters<typeof nodeEndpoint>[0])
}

export async function serve(endpoint?: Endpoint): Promise<void> {
  const channel = endpoint ?? (await currentEndpoint())
  // Event messages take the answers' channel: in order with them, so a call's events come first.
  const host = new WorkspaceHost((message) => channel.postMessage(message))
  const api: WorkerApi = {
    async request(message, callbacks, hooks) {
      const transfers: Transferable[] = []
      const outcome = await host.request(message, callbacks, hooks, transfers)
      host.flushEvents()
      return Comlink.transfer(outcome, transfers)
    },
  }
  Comlink.expose(api, channel)
  // openWorkerWorkspace waits for this or its hello's answer, whichever comes: a page's first message
  // may have reached a Web Worker's scope before this listened, and been dropped.
  const serving: ServingMessage = { kind: SERVING_MESSAGE }
  channel.postMessage(serving)
}
