import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  // The adapters import the package by name (rewindfs, rewindfs/adapter-kit, rewindfs/adapter-kit/node): to the sources here,
  // as tsconfig.json's paths do, so tests and adapters share one instance of each class (FsError).
  resolve: {
    alias: [
      { find: /^rewindfs$/, replacement: source('./src/index.ts') },
      { find: /^rewindfs\/adapter-kit$/, replacement: source('./src/adapter-kit.ts') },
      { find: /^rewindfs\/adapter-kit\/node$/, replacement: source('./src/adapter-kit-node.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
})
