// comlink ships this adapter's types as node-adapter.d.ts, which NodeNext does not pair with an .mjs file.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink'
  export interface NodeEndpoint {
    postMessage(message: unknown, transfer?: readonly unknown[]): void
    on(type: string, listener: (value: unknown) => void): void
    off(type: string, listener: (value: unknown) => void): void
    start?: () => void
  }
  export default function nodeEndpoint(endpoint: NodeEndpoint): Endpoint
}
