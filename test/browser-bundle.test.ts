/**
 * The entries meant for browsers bundle with esbuild and Vite at their defaults, as a user's app
 * would bundle them: imported by package name from a project that has rewindfs installed (the
 * package's "exports", the built dist/), no flags, no externals. A node: import anywhere they reach
 * is an error in esbuild and a "externalized for browser compatibility" warning in Vite, which
 * breaks at run time: both fail here.
 */
import { build as esbuild } from 'esbuild'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** What README tells browser users to import (the worker entry runs inside a Web Worker). */
const ENTRIES = ['rewindfs', 'rewindfs/export', 'rewindfs/watch', 'rewindfs/rollback-stack', 'rewindfs/worker', 'rewindfs/worker/browser-entry', 'rewindfs/adapters/indexeddb', 'rewindfs/adapters/opfs', 'rewindfs/validators']

let project = ''

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'rewindfs-browser-bundle-'))
  mkdirSync(join(project, 'node_modules'))
  // Installed as `npm install <repo>` installs a local package: a link to it.
  symlinkSync(ROOT, join(project, 'node_modules', 'rewindfs'), 'dir')
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
})

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true })
})

describe.each(ENTRIES)('%s', (entry) => {
  it('bundles with esbuild at its defaults (bundle only)', async () => {
    const result = await esbuild({
      stdin: { contents: `export * from ${JSON.stringify(entry)}\nimport ${JSON.stringify(entry)}\n`, resolveDir: project, loader: 'js' },
      bundle: true,
      write: false,
      logLevel: 'silent',
    })
    expect(result.errors).toEqual([])
    expect(result.warnings.map((warning) => warning.text)).toEqual([])
    expect(result.outputFiles[0]!.contents.byteLength).toBeGreaterThan(500)
  })

  it('bundles with Vite at its defaults (vite build of a page importing it)', async () => {
    const { build, createLogger } = await import('vite')
    const root = join(project, `vite-${entry.replace(/\W/g, '-')}`)
    mkdirSync(root)
    writeFileSync(join(root, 'index.html'), `<!doctype html><script type="module" src="./main.js"></script>\n`)
    writeFileSync(join(root, 'main.js'), `import * as entry from ${JSON.stringify(entry)}\nglobalThis.entry = entry\n`)
    const warnings: string[] = []
    const logger = createLogger('warn', { allowClearScreen: false })
    logger.warn = (message) => void warnings.push(message)
    logger.warnOnce = (message) => void warnings.push(message)
    logger.error = (message) => void warnings.push(message)
    // As in a user's shell: vitest sets NODE_ENV=test, under which Vite keeps its browser warnings quiet.
    const environment = process.env.NODE_ENV
    process.env.NODE_ENV = 'production'
    try {
      await build({ root, configFile: false, logLevel: 'warn', customLogger: logger, build: { outDir: join(root, 'dist'), write: true } })
    } finally {
      process.env.NODE_ENV = environment
    }
    expect(warnings.filter((message) => /externali[sz]ed|node:|could not resolve/i.test(message))).toEqual([])
  })
})
