/**
 * The size of the core entry as a browser/edge bundle: src/index.ts bundled by esbuild (bundle,
 * minify, ESM, platform neutral, mainFields module,main), then gzipped with node:zlib. Two figures:
 * the whole core as one unsplit file (what a bundler without code splitting ships: esbuild inlines
 * dynamic imports then, so everything reachable from the entry counts), and with code splitting
 * what `import 'rewindfs'` loads, apart from the chunks loaded on first use (the promise and
 * callback forms' rarer parts, src/fs/async-forms.ts; optional features are entries or passed
 * capabilities, not dynamic imports).
 *
 *   node --import tsx scripts/bundle-size.ts          prints the sizes and the largest inputs
 *   node --import tsx scripts/bundle-size.ts --json   prints them as JSON
 *
 * Also imported by bench/run.ts.
 */
import { build } from 'esbuild'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

export const ENTRY = fileURLToPath(new URL('../src/index.ts', import.meta.url))
/** The goal for the core entry, minified and gzipped: unsplit, and loaded at import when split. */
export const GZIP_BUDGET_BYTES = 45 * 1024

export interface BundleSize {
  /** The whole core as one file (no code splitting: dynamic imports inlined): minified and gzipped. */
  unsplit: { minified: number; gzip: number }
  /** Minified bytes loaded by `import 'rewindfs'`: the entry chunk and the chunks it imports statically. */
  minified: number
  /** The same, gzipped (level 9), chunk by chunk as a browser fetches them. */
  gzip: number
  /** Chunks loaded on first use (the entry's dynamic imports): minified and gzipped. */
  lazy: { minified: number; gzip: number }
  /** Bytes each input contributes to the eagerly loaded output, largest first. */
  inputs: { path: string; bytes: number }[]
}

const OPTIONS = {
  bundle: true,
  minify: true,
  format: 'esm' as const,
  platform: 'neutral' as const,
  mainFields: ['module', 'main'],
  conditions: ['import', 'default'],
  target: 'es2022',
  write: false as const,
  logLevel: 'silent' as const,
}

export async function bundleSize(entry: string = ENTRY): Promise<BundleSize> {
  const single = await build({ ...OPTIONS, entryPoints: [entry], outfile: 'bundle-size-out/unsplit.js' })
  const whole = single.outputFiles[0].contents
  const unsplit = { minified: whole.byteLength, gzip: gzipSync(whole, { level: 9 }).byteLength }
  // Code splitting as a bundler does for an app: dynamic imports become chunks loaded on first use.
  const result = await build({ ...OPTIONS, entryPoints: [entry], splitting: true, outdir: 'bundle-size-out', metafile: true })
  const outputs = result.metafile.outputs
  // Chunks of dynamic imports name their module as entryPoint too: match the entry itself.
  const entryName = Object.keys(outputs).find((name) => outputs[name].entryPoint !== undefined && resolve(outputs[name].entryPoint!) === resolve(entry))
  if (!entryName) throw new Error('esbuild produced no entry chunk')
  // The entry and everything it reaches through static imports load together.
  const eager = new Set<string>()
  const visit = (name: string) => {
    if (eager.has(name)) return
    eager.add(name)
    for (const imported of outputs[name].imports) if (imported.kind === 'import-statement') visit(imported.path)
  }
  visit(entryName)
  const files = new Map(result.outputFiles.map((file) => [file.path.slice(file.path.lastIndexOf('bundle-size-out/')), file.contents]))
  const sizes = (names: string[]) => {
    let minified = 0
    let gzip = 0
    for (const name of names) {
      const contents = files.get(name.slice(name.lastIndexOf('bundle-size-out/')))
      if (!contents) throw new Error(`no output for ${name}`)
      minified += contents.byteLength
      gzip += gzipSync(contents, { level: 9 }).byteLength
    }
    return { minified, gzip }
  }
  const names = Object.keys(outputs).filter((name) => name.endsWith('.js'))
  const inputs = new Map<string, number>()
  for (const name of eager) for (const [path, { bytesInOutput }] of Object.entries(outputs[name].inputs)) inputs.set(path, (inputs.get(path) ?? 0) + bytesInOutput)
  return {
    unsplit,
    ...sizes([...eager]),
    lazy: sizes(names.filter((name) => !eager.has(name))),
    inputs: [...inputs].map(([path, bytes]) => ({ path, bytes })).sort((a, b) => b.bytes - a.bytes),
  }
}

export function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const size = await bundleSize()
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(size, null, 2))
  } else {
    const verdict = (gzip: number) => (gzip <= GZIP_BUDGET_BYTES ? 'within' : 'OVER')
    console.log(`src/index.ts as one file: ${kib(size.unsplit.minified)} minified, ${kib(size.unsplit.gzip)} min+gzip (${verdict(size.unsplit.gzip)} the ${kib(GZIP_BUDGET_BYTES)} goal)`)
    console.log(`split, loaded at import: ${kib(size.minified)} minified, ${kib(size.gzip)} min+gzip (${verdict(size.gzip)} the ${kib(GZIP_BUDGET_BYTES)} goal)`)
    console.log(`loaded on first use: ${size.lazy.minified === 0 ? 'nothing' : `${kib(size.lazy.minified)} minified, ${kib(size.lazy.gzip)} min+gzip`}`)
    console.log('largest inputs (minified bytes in output):')
    for (const input of size.inputs.slice(0, 12)) console.log(`  ${String(input.bytes).padStart(8)}  ${input.path}`)
  }
}
