/**
 * A tiny real Node package (sum and a helper, with node:test tests) and a scripted history of
 * operations over it: fillers that keep the tests green (the library grows, docs and a changelog
 * change, a note is renamed), one operation that breaks `sum`, and any extra steps a test asks for
 * at given positions. Shared by the bisect tests and the bench.
 */
import fs from 'node:fs'
import type { Workspace } from '../../src/index.js'

export const TEST_FILE = `import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sum } from '../src/sum.js'
import { twice } from '../src/util.js'

test('sum adds', () => assert.equal(sum(2, 3), 5))
test('twice doubles', () => assert.equal(twice(4), 8))
`

/** Writes the package into `root` (an existing empty directory). */
export function writeProject(root: string): void {
  fs.mkdirSync(`${root}/src`)
  fs.mkdirSync(`${root}/test`)
  fs.writeFileSync(`${root}/package.json`, JSON.stringify({ name: 'tiny', version: '1.0.0', type: 'module', private: true, scripts: { test: 'node --test' } }, null, 2) + '\n')
  fs.writeFileSync(`${root}/src/sum.js`, 'export const sum = (a, b) => a + b\n')
  fs.writeFileSync(`${root}/src/util.js`, "import { sum } from './sum.js'\n\nexport const twice = (x) => sum(x, x)\n")
  fs.writeFileSync(`${root}/test/sum.test.js`, TEST_FILE)
  fs.writeFileSync(`${root}/README.md`, '# tiny\n')
}

export type Step = (fs: Workspace['fs']) => void

/** The filler for operation n (1-based): each is exactly one operation and keeps the tests passing. */
function filler(n: number): Step {
  if (n === 2) return (fs) => fs.mkdirSync('/docs')
  if (n === 20) return (fs) => fs.renameSync('/docs/note-6.md', '/docs/old-6.md')
  switch (n % 4) {
    case 0:
      return (fs) => fs.appendFileSync('/README.md', `- line ${n}\n`)
    case 1:
      return (fs) => fs.appendFileSync('/src/util.js', `export const value${n} = () => ${n}\n`)
    case 2:
      return (fs) => fs.writeFileSync(`/docs/note-${n}.md`, `# note ${n}\n`)
    default:
      return (fs) => fs.writeFileSync('/CHANGELOG.md', `## ${n}\n`)
  }
}

/** The operation that breaks the tests: sum subtracts. */
export const BREAK: Step = (fs) => fs.writeFileSync('/src/sum.js', 'export const sum = (a, b) => a - b\n')

/**
 * Runs `count` operations on `ws`, operation `breakAt` being BREAK and `extra[n]` replacing the
 * filler at n; `between(n)` runs after operation n (checkpoints). Returns the operations' ids in order.
 */
export async function scriptHistory(ws: Workspace, options: { count?: number; breakAt?: number; extra?: Record<number, Step>; between?: (n: number) => Promise<unknown> } = {}): Promise<string[]> {
  const { count = 64, breakAt = 37, extra = {}, between } = options
  for (let n = 1; n <= count; n++) {
    const before = ws.history().length
    ;(n === breakAt ? BREAK : (extra[n] ?? filler(n)))(ws.fs)
    if (ws.history().length !== before + 1) throw new Error(`step ${n} made ${ws.history().length - before} operations, not one`)
    await between?.(n)
  }
  return ws
    .history()
    .reverse()
    .map((op) => op.id)
}
