/**
 * Vite serves the page and bundles its worker. The page imports the engine straight from the
 * repository (../src, ../worker, ../adapters), so those folders are served too.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const repository = fileURLToPath(new URL('..', import.meta.url))

export default defineConfig({
  server: { fs: { allow: [repository] } },
  worker: { format: 'es' },
  // Pre-bundled up front: a dependency discovered on first load would make Vite reload the page.
  optimizeDeps: {
    entries: ['index.html', 'worker.ts'],
    include: ['comlink', 'comlink/dist/esm/node-adapter.mjs', 'idb-keyval', 'zod', 'zod/mini', 'diff', 'yaml', 'smol-toml'],
  },
  build: { target: 'es2022' },
})
