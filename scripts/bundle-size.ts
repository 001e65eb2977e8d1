/**
 * The size of the core entry as a browser/edge bundle: src/index.ts bundled by esbuild (bundle,
 * minify, ESM, platform neutral, mainFields module,main), then gzipped with node:zlib.
 *
 *   node --import tsx scripts/bundle-size.ts          prints the sizes and the largest inputs
 *   node --import tsx scripts/bundle-size.ts --json   prints them as JSON
 *
 * Also imported by bench/run.ts.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

export const ENTRY = fileURLToPath(new URL('../src/index.ts', import.meta.url))
/** The goal for the core entry, minified and gzipped. */
export const GZIP_BUDGET_BYTES = 40 * 1024

export interface BundleSize {
  /** Minified bytes. */
  minified: number
  /** Minified and gzipped (level 9) bytes. */
  gzip: number
  /** Bytes each input contributes to the minified output, largest first. */
  inputs: { path: string; bytes: number }[]
}

export async function bundleSize(entry: string = ENTRY): Promise<BundleSize> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['import', 'default'],
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const output = result.outputFiles[0]
  if (!output) throw new Error('esbuild produced no output')
  const meta = Object.values(result.metafile.outputs)[0]
  const inputs = Object.entries(meta?.inputs ?? {})
    .map(([path, { bytesInOutput }]) => ({ path, bytes: bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes)
  return { minified: output.contents.byteLength, gzip: gzipSync(output.contents, { level: 9 }).byteLength, inputs }
}

export function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const size = await bundleSize()
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(size, null, 2))
  } else {
    const verdict = size.gzip < GZIP_BUDGET_BYTES ? 'within' : 'OVER'
    console.log(`src/index.ts: ${kib(size.minified)} minified, ${kib(size.gzip)} min+gzip (${verdict} the ${kib(GZIP_BUDGET_BYTES)} goal)`)
    console.log('largest inputs (minified bytes in output):')
    for (const input of size.inputs.slice(0, 12)) console.log(`  ${String(input.bytes).padStart(8)}  ${input.path}`)
  }
}
