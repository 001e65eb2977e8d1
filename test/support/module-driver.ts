/**
 * A process of its own for the module-loading tests (module hooks are process-wide): loads a small
 * project's modules by `import()` and `require()`, or runs its node:test files in this process, and
 * prints what it saw as one JSON line. Run as `node --import tsx module-driver.ts <mode> <dir>`:
 *   disk       the project is written to <dir>, nothing is patched (Node's own behaviour: the oracle)
 *   workspace  <dir> is empty on disk; the project exists only in a workspace mounted over it
 *   node-test  like workspace, then imports the project's *.test.js (node:test reports; exit code)
 */
import nodeFs from 'node:fs'
import { createRequire } from 'node:module'
import nodePath from 'node:path'
import { pathToFileURL } from 'node:url'
import { mountOver, patchFs } from '../../adapters/node-fs/index.js'
import { Workspace } from '../../src/index.js'

/** An ESM package with "exports" (conditions, a pattern, "imports"), a CommonJS dependency, JSON, and an app using them. */
export const project: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'app', type: 'module', imports: { '#config': './config.json' } }),
  'config.json': '{ "greeting": "hello" }',
  'main.js': [
    "import { add, mul } from 'calc'",
    "import { version } from 'calc/meta'",
    "import square from 'calc/ops/square'",
    "import legacy, { shout } from 'legacy'",
    "import config from '#config' with { type: 'json' }",
    "import { answer } from './lib/answer.cjs'",
    'export default { sum: add(2, 3), product: mul(4, 5), version, square: square(7), legacy: legacy.name, shout: shout("hi"), greeting: config.greeting, answer }',
  ].join('\n'),
  'lib/answer.cjs': "exports.answer = require('./forty-two.cjs') + 0",
  'lib/forty-two.cjs': 'module.exports = 42',
  'node_modules/calc/package.json': JSON.stringify({
    name: 'calc',
    type: 'module',
    exports: { '.': { import: './esm/index.js', require: './cjs/index.cjs' }, './meta': './esm/meta.js', './ops/*': './esm/ops/*.js', './private/*': null },
  }),
  'node_modules/calc/esm/index.js': 'export const add = (a, b) => a + b\nexport const mul = (a, b) => a * b',
  'node_modules/calc/esm/meta.js': "export const version = '1.2.3'",
  'node_modules/calc/esm/ops/square.js': 'export default (x) => x * x',
  'node_modules/calc/esm/private/secret.js': "export default 'secret'",
  'node_modules/calc/cjs/index.cjs': 'exports.add = (a, b) => a + b\nexports.flavour = "cjs"',
  'node_modules/legacy/package.json': JSON.stringify({ name: 'legacy', main: 'lib/main' }),
  'node_modules/legacy/lib/main.js': "module.exports = require('./impl')",
  'node_modules/legacy/lib/impl.js': "exports.name = 'legacy'\nexports.shout = (s) => s.toUpperCase() + '!'",
  'math.test.js': [
    "import { test } from 'node:test'",
    "import assert from 'node:assert/strict'",
    "import { add } from 'calc'",
    "import app from './main.js'",
    "test('adds through the package', () => assert.equal(add(1, 2), 3))",
    "test('the app sees every module', () => assert.equal(app.product, 20))",
    "test('fails when asked to', () => assert.equal(process.env.MAKE_IT_FAIL, undefined))",
  ].join('\n'),
}

async function probe(dir: string): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {}
  const attempt = async (label: string, body: () => unknown) => {
    try {
      seen[label] = await body()
    } catch (error) {
      seen[label] = { error: (error as { code?: string }).code ?? (error as Error).name }
    }
  }
  const require = createRequire(pathToFileURL(nodePath.join(dir, 'entry.cjs')))
  await attempt('import main', async () => (await import(pathToFileURL(nodePath.join(dir, 'main.js')).href)).default)
  await attempt('require calc', () => require('calc'))
  await attempt('require legacy', () => require('legacy').shout('x'))
  await attempt('require a relative file without its extension', () => require('./lib/forty-two'))
  await attempt('import a missing file', () => import(pathToFileURL(nodePath.join(dir, 'lib/missing.js')).href))
  await attempt('import a subpath not exported', () => import(pathToFileURL(nodePath.join(dir, 'entry-private.js')).href))
  await attempt('import a directory', () => import(pathToFileURL(nodePath.join(dir, 'lib')).href))
  return seen
}

const [mode, dir] = process.argv.slice(2)
const files = { ...project, 'entry-private.js': "import secret from 'calc/private/secret.js'\nexport default secret" }
if (mode === 'disk') {
  for (const [name, contents] of Object.entries(files)) {
    nodeFs.mkdirSync(nodePath.dirname(nodePath.join(dir, name)), { recursive: true })
    nodeFs.writeFileSync(nodePath.join(dir, name), contents)
  }
  console.log(JSON.stringify(await probe(dir)))
} else {
  const ws = await Workspace.open()
  for (const [name, contents] of Object.entries(files)) {
    ws.fs.mkdirSync(nodePath.posix.dirname(`/${name}`), { recursive: true })
    ws.fs.writeFileSync(`/${name}`, contents)
  }
  const undo = patchFs(mountOver(ws, dir))
  if (mode === 'node-test') {
    // node:test runs the tests of the files imported into this process and reports at exit.
    await import(pathToFileURL(nodePath.join(dir, 'math.test.js')).href)
  } else {
    const seen = await probe(dir)
    undo()
    const after: Record<string, unknown> = {}
    try {
      await import(pathToFileURL(nodePath.join(dir, 'lib/answer.cjs')).href)
      after.import = 'loaded'
    } catch (error) {
      after.import = (error as { code?: string }).code
    }
    try {
      createRequire(pathToFileURL(nodePath.join(dir, 'entry.cjs')))('./lib/forty-two.cjs')
      after.require = 'loaded'
    } catch (error) {
      after.require = (error as { code?: string }).code
    }
    console.log(JSON.stringify({ ...seen, 'after the undo': after }))
  }
}
