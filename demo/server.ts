/** Starts the demo on Vite's dev server (used by `npm run demo` and the end-to-end tests). */
import { fileURLToPath } from 'node:url'
import { createServer } from 'vite'

const root = fileURLToPath(new URL('.', import.meta.url))

export interface DemoServer {
  readonly url: string
  close(): Promise<void>
}

export interface DemoServerOptions {
  /** 0 picks a free port; default 5173. */
  port?: number
  /** Where Vite keeps pre-bundled dependencies (tests use their own, so they never share one). */
  cacheDir?: string
  /** Vite's own console output; default 'info'. */
  logLevel?: 'info' | 'warn' | 'error' | 'silent'
}

export async function startDemoServer(options: DemoServerOptions = {}): Promise<DemoServer> {
  const server = await createServer({
    root,
    configFile: `${root}vite.config.ts`,
    logLevel: options.logLevel ?? 'info',
    ...(options.cacheDir !== undefined ? { cacheDir: options.cacheDir } : {}),
    server: { host: '127.0.0.1', port: options.port ?? 5173, strictPort: options.port !== undefined },
  })
  await server.listen()
  const address = server.httpServer?.address()
  if (!address || typeof address === 'string') {
    await server.close()
    throw Object.assign(new Error('rewindfs demo: Vite started without a TCP address'), { code: 'ERR_REWINDFS_DEMO' })
  }
  return { url: `http://127.0.0.1:${address.port}/`, close: () => server.close() }
}
