/**
 * The core must run in browsers, workers and edge runtimes: bundling src/index.ts for a neutral
 * platform has to succeed, and nothing reached from it may import a Node builtin ('node:fs', or a
 * bare 'fs', 'path', 'crypto', 'stream', 'events', 'buffer', …). memfs (a devDependency used by
 * tests and benches) must not end up in the bundle either.
 *
 * The checker runs a second build in which a plugin marks every builtin external and records who
 * imported it, so a failure names the importing file rather than only "Could not resolve". It is
 * itself tested on small temporary entries that import node:fs directly and through a helper.
 */
import { type BuildOptions, type Metafile, type Plugin, build } from 'esbuild'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const ENTRY = join(ROOT, 'src/index.ts')

const EDGE_OPTIONS = {
  bundle: true,
  write: false,
  metafile: true,
  platform: 'neutral',
  format: 'esm',
  mainFields: ['module', 'main'],
  conditions: ['import', 'default'],
  logLevel: 'silent',
} satisfies BuildOptions

const BUILTINS = new Set(builtinModules.filter((name) => !name.startsWith('_')))

/** 'node:fs', 'fs', 'fs/promises', 'path/posix', … (but not a package such as 'events-polyfill'). */
function isNodeBuiltin(specifier: string): boolean {
  if (specifier.startsWith('node:')) return true
  return BUILTINS.has(specifier) || BUILTINS.has(specifier.split('/')[0] ?? '')
}

interface BuiltinImport {
  specifier: string
  importer: string
  kind: string
}

interface EdgeReport {
  builtinImports: BuiltinImport[]
  /** Metafile input paths (relative to the repository). */
  inputs: string[]
  /** Imports the output still has (external ones). */
  outputImports: string[]
}

/** Bundles `entry` for a neutral platform, recording (instead of failing on) Node builtin imports. */
async function analyse(entry: string): Promise<EdgeReport> {
  const builtinImports: BuiltinImport[] = []
  const recordBuiltins: Plugin = {
    name: 'record-node-builtins',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /.*/ }, (args) => {
        if (!isNodeBuiltin(args.path)) return undefined
        builtinImports.push({ specifier: args.path, importer: relative(ROOT, args.importer), kind: args.kind })
        return { path: args.path, external: true }
      })
    },
  }
  const result = await build({ ...EDGE_OPTIONS, entryPoints: [entry], plugins: [recordBuiltins] })
  const metafile: Metafile = result.metafile
  const outputImports = Object.values(metafile.outputs).flatMap((output) => output.imports.map((imported) => imported.path))
  return { builtinImports, inputs: Object.keys(metafile.inputs), outputImports }
}

function describeImports(imports: BuiltinImport[]): string {
  return imports.map((i) => `${i.importer} imports '${i.specifier}' (${i.kind})`).join('\n')
}

describe('edge bundle of src/index.ts', () => {
  it('builds for platform neutral with the edge options (no plugins)', async () => {
    const result = await build({ ...EDGE_OPTIONS, entryPoints: [ENTRY] })
    expect(result.errors).toEqual([])
    expect(result.outputFiles).toHaveLength(1)
    expect(result.outputFiles[0]!.contents.byteLength).toBeGreaterThan(1000)
    // The bundle has no imports left at all: everything it needs is inside.
    const outputs = Object.values(result.metafile.outputs)
    expect(outputs.flatMap((output) => output.imports.map((i) => i.path))).toEqual([])
  })

  it('reaches no Node builtin from src/ or its dependencies', async () => {
    const report = await analyse(ENTRY)
    expect(describeImports(report.builtinImports)).toBe('')
    expect(report.inputs.filter(isNodeBuiltin)).toEqual([])
    expect(report.outputImports.filter(isNodeBuiltin)).toEqual([])
    // Sanity: the analysis did walk the source tree.
    expect(report.inputs).toContain('src/index.ts')
    expect(report.inputs).toContain('src/workspace.ts')
  })

  it('does not contain memfs (or its @jsonjoy.com internals)', async () => {
    const report = await analyse(ENTRY)
    const offenders = report.inputs.filter((input) => /(^|\/)node_modules\/(memfs|unionfs|@jsonjoy\.com|@zenfs)\//.test(input))
    expect(offenders).toEqual([])
  })
})

describe('the builtin checker itself', () => {
  let dir = ''
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rewindfs-edge-'))
    writeFileSync(join(dir, 'direct.ts'), "import { readFileSync } from 'node:fs'\nexport const read = readFileSync\n")
    writeFileSync(join(dir, 'helper.ts'), "import { createHash } from 'crypto'\nimport { EventEmitter } from 'events'\nexport const h = [createHash, EventEmitter]\n")
    writeFileSync(join(dir, 'indirect.ts'), "import { h } from './helper.ts'\nexport const again = h\n")
    writeFileSync(join(dir, 'dynamic.ts'), "export const load = () => import('node:path')\n")
    writeFileSync(join(dir, 'clean.ts'), "export const ok = new TextEncoder().encode('edge')\n")
    // src/index.ts plus one bad import: what it would look like if someone added import 'node:fs' to src.
    writeFileSync(join(dir, 'src-plus-fs.ts'), `import 'node:fs'\nexport * from ${JSON.stringify(ENTRY)}\n`)
  })
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('classifies specifiers', () => {
    for (const name of ['node:fs', 'fs', 'fs/promises', 'path', 'path/posix', 'crypto', 'stream', 'events', 'buffer', 'node:test']) {
      expect(isNodeBuiltin(name), name).toBe(true)
    }
    for (const name of ['memfs', 'diff', 'zod', './fs.js', 'events-polyfill', '@scope/fs']) expect(isNodeBuiltin(name), name).toBe(false)
  })

  it('catches a direct node:fs import', async () => {
    const report = await analyse(join(dir, 'direct.ts'))
    expect(report.builtinImports.map((i) => i.specifier)).toEqual(['node:fs'])
    expect(report.outputImports).toContain('node:fs')
  })

  it('catches bare builtins imported through a helper, naming the helper', async () => {
    const report = await analyse(join(dir, 'indirect.ts'))
    expect(report.builtinImports.map((i) => i.specifier).sort()).toEqual(['crypto', 'events'])
    expect(report.builtinImports.every((i) => i.importer.endsWith('helper.ts'))).toBe(true)
  })

  it('catches a dynamic import()', async () => {
    const report = await analyse(join(dir, 'dynamic.ts'))
    expect(report.builtinImports).toMatchObject([{ specifier: 'node:path', kind: 'dynamic-import' }])
  })

  it('catches import "node:fs" added next to src/index.ts, and the plain edge build fails on it', async () => {
    const report = await analyse(join(dir, 'src-plus-fs.ts'))
    expect(report.builtinImports.map((i) => i.specifier)).toContain('node:fs')
    await expect(build({ ...EDGE_OPTIONS, entryPoints: [join(dir, 'src-plus-fs.ts')] })).rejects.toThrow(/node:fs/)
  })

  it('passes a clean entry', async () => {
    const report = await analyse(join(dir, 'clean.ts'))
    expect(report.builtinImports).toEqual([])
  })
})
