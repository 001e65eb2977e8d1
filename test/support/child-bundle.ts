/**
 * Bundles a test's child-process script (a fleet machine, a racing writer) into one ES module.
 * Dependencies stay external, but the package's own names (rewindfs, rewindfs/adapter-kit and its /node) go to
 * the sources, as vitest.config.ts does: the child runs the engine under test, not a stale dist/.
 */
import path from 'node:path'
import { build } from 'esbuild'

const REPO = path.resolve(import.meta.dirname, '../..')

const sources = {
  name: 'rewindfs-sources',
  setup(builder: { onResolve(options: { filter: RegExp }, run: (args: { path: string }) => { path: string }): void }) {
    const entries: Record<string, string> = { rewindfs: 'src/index.ts', 'rewindfs/adapter-kit': 'src/adapter-kit.ts', 'rewindfs/adapter-kit/node': 'src/adapter-kit-node.ts' }
    builder.onResolve({ filter: /^rewindfs(\/adapter-kit(\/node)?)?$/ }, (args) => ({ path: path.join(REPO, entries[args.path]) }))
  },
}

/** `entry` relative to the repository; the bundle is written to `outfile`. */
export async function bundleChild(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [path.join(REPO, entry)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    plugins: [sources],
    outfile,
    logLevel: 'error',
  })
}
