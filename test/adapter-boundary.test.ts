/**
 * The adapters are written against public contracts only, as a third party's would be: every file
 * under adapters/ imports its own adapter's files by relative path, `rewindfs`,
 * `rewindfs/adapter-kit`, Node builtins and the package's npm dependencies, nothing else (no core
 * file by path, no other adapter's internals). The Node adapters (node-fs, postgres, docker-volume)
 * may also import `rewindfs/adapter-kit/node`, the Node-only helpers; the browser adapters
 * (indexeddb, opfs) may not. Specifiers come from TypeScript's own parser: import
 * and export-from declarations, `import x = require()`, dynamic `import()`, `require()` and
 * `import('…')` types. The scanner is tested on a sample holding each form.
 *
 * The package names resolve to the sources in typechecking (tsconfig.json paths) and tests
 * (vitest.config.ts aliases), and to dist through package.json "exports" once built: one instance of
 * each class, so an adapter's FsError is the core's.
 */
import fs from 'node:fs'
import { builtinModules } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { corruptError } from '../adapters/indexeddb/errors.js'
import { FsError as KitFsError } from '../src/adapter-kit.js'
import { FsError, isFsError } from '../src/index.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const ADAPTERS = path.join(ROOT, 'adapters')
const PUBLIC = new Set(['rewindfs', 'rewindfs/adapter-kit'])
/** The Node-only entry, and the adapters that may import it (not the browser ones). */
const NODE_PUBLIC = new Set(['rewindfs/adapter-kit/node'])
const NODE_ADAPTERS = new Set(['node-fs', 'postgres', 'docker-volume'])

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, { types: string; default: string } | string>
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}
/** What an installed adapter can load: dependencies, not devDependencies. */
const DEPENDENCIES = new Set(Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies }))
const BUILTINS = new Set(builtinModules)

interface Specifier {
  readonly text: string | undefined // undefined: computed, cannot be checked
  readonly line: number
}

/** Every module specifier `source` names, with its line. */
function specifiersOf(fileName: string, source: string): Specifier[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true)
  const out: Specifier[] = []
  const add = (node: ts.Node, expression: ts.Node | undefined) => {
    const text = expression && ts.isStringLiteralLike(expression) ? expression.text : undefined
    out.push({ text, line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1 })
  }
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) add(node, node.moduleSpecifier)
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node, node.moduleReference.expression)
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal)
    else if (ts.isCallExpression(node)) {
      const callee = node.expression
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) add(node, node.arguments[0])
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return out
}

/** Why `specifier` (imported by `file`, in adapters/<adapter>/) is not allowed, or undefined. */
function refusal(file: string, adapter: string, specifier: string | undefined): string | undefined {
  if (specifier === undefined) return 'a computed specifier (cannot be checked: name the module)'
  if (specifier.startsWith('.')) {
    const own = path.join(ADAPTERS, adapter)
    const target = path.resolve(path.dirname(file), specifier)
    return target.startsWith(own + path.sep) ? undefined : `reaches outside adapters/${adapter}/ by path: import it from 'rewindfs' or 'rewindfs/adapter-kit'`
  }
  if (PUBLIC.has(specifier)) return undefined
  if (NODE_PUBLIC.has(specifier)) return NODE_ADAPTERS.has(adapter) ? undefined : `a Node-only entry, for the Node adapters (${[...NODE_ADAPTERS].join(', ')}), not adapters/${adapter}/`
  if (specifier.startsWith('node:') || BUILTINS.has(specifier)) return undefined
  if (specifier.startsWith('/')) return 'an absolute path'
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]
  if (name === 'rewindfs') return `a rewindfs entry other than ${[...PUBLIC].join(' and ')}`
  return DEPENDENCIES.has(name) ? undefined : `'${name}' is not in package.json's dependencies`
}

function sourcesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.[cm]?[jt]sx?$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort()
}

describe('adapters import only rewindfs, rewindfs/adapter-kit (the Node ones also rewindfs/adapter-kit/node), their own files, builtins and dependencies', () => {
  const adapters = fs.readdirSync(ADAPTERS, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name)

  it('finds the adapters', () => {
    expect(adapters).toEqual(expect.arrayContaining(['docker-volume', 'indexeddb', 'node-fs']))
  })

  for (const adapter of adapters) {
    it(`adapters/${adapter}`, () => {
      const violations: string[] = []
      for (const file of sourcesUnder(path.join(ADAPTERS, adapter))) {
        for (const { text, line } of specifiersOf(file, fs.readFileSync(file, 'utf8'))) {
          const why = refusal(file, adapter, text)
          if (why) violations.push(`${path.relative(ROOT, file)}:${line} '${text ?? '?'}': ${why}`)
        }
      }
      expect(violations).toEqual([])
    })
  }
})

describe('the scanner', () => {
  it('finds every form of import, export-from, require and import type', () => {
    const sample = [
      "import a from 'one'",
      "import type { B } from 'two'",
      "import 'three'",
      "export { c } from 'four'",
      "export * from 'five'",
      "export type { D } from 'six'",
      "import e = require('seven')",
      "const f = await import('eight')",
      "const g = require('nine')",
      "let h: typeof import('ten')",
      'const i = await import(`eleven`)',
      'const j = await import(name)',
    ].join('\n')
    expect(specifiersOf('sample.ts', sample).map((s) => s.text)).toEqual(['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', undefined])
  })

  it('refuses core files by path, other adapters, devDependencies, other rewindfs entries, and the Node entry to browser adapters', () => {
    const file = path.join(ADAPTERS, 'indexeddb', 'store.ts')
    expect(refusal(file, 'indexeddb', '../../src/errors.js')).toMatch(/outside adapters\/indexeddb/)
    expect(refusal(file, 'indexeddb', '../node-fs/confine.js')).toMatch(/outside adapters\/indexeddb/)
    expect(refusal(file, 'indexeddb', 'memfs')).toMatch(/not in package.json's dependencies/)
    expect(refusal(file, 'indexeddb', 'rewindfs/tools')).toMatch(/other than/)
    expect(refusal(file, 'indexeddb', 'rewindfs/adapter-kit/node')).toMatch(/Node-only entry/)
    expect(refusal(path.join(ADAPTERS, 'opfs', 'store.ts'), 'opfs', 'rewindfs/adapter-kit/node')).toMatch(/Node-only entry/)
    expect(refusal(path.join(ADAPTERS, 'node-fs', 'store.ts'), 'node-fs', 'rewindfs/adapter-kit/node')).toBeUndefined()
    expect(refusal(path.join(ADAPTERS, 'postgres', 'data-lock.ts'), 'postgres', 'rewindfs/adapter-kit/node')).toBeUndefined()
    expect(refusal(file, 'indexeddb', './database.js')).toBeUndefined()
    expect(refusal(file, 'indexeddb', 'rewindfs/adapter-kit')).toBeUndefined()
    expect(refusal(file, 'indexeddb', 'idb-keyval')).toBeUndefined()
    expect(refusal(file, 'indexeddb', 'zod/mini')).toBeUndefined()
    expect(refusal(file, 'indexeddb', 'node:fs')).toBeUndefined()
  })
})

describe('the public names resolve to the same modules everywhere', () => {
  it('package.json exports, tsconfig.json paths and vitest.config.ts aliases agree', async () => {
    const tsconfig = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } }
    const { default: config } = await import('../vitest.config.js')
    const aliases = (config.resolve?.alias ?? []) as { find: RegExp; replacement: string }[]
    for (const name of [...PUBLIC, ...NODE_PUBLIC]) {
      const entry = pkg.exports[name === 'rewindfs' ? '.' : `./${name.slice('rewindfs/'.length)}`]
      const source = tsconfig.compilerOptions.paths[name]?.[0]
      expect(typeof entry === 'object' && source !== undefined, name).toBe(true)
      if (typeof entry !== 'object' || source === undefined) continue
      // ./src/x.ts builds to ./dist/src/x.js and .d.ts
      expect(entry.default).toBe(source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.js'))
      expect(entry.types).toBe(source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.d.ts'))
      const alias = aliases.find((a) => a.find.test(name))
      expect(alias && path.relative(ROOT, alias.replacement), name).toBe(path.normalize(source))
    }
  })

  it('an error an adapter raises is the core FsError', () => {
    const error = corruptError('read', 'b:x', 'not bytes')
    expect(KitFsError).toBe(FsError)
    expect(error).toBeInstanceOf(FsError)
    expect(isFsError(error, 'EIO')).toBe(true)
  })
})
