/**
 * Model tests over random histories: restore(k) gives exactly the tree seen at checkpoint k,
 * applying diff(a, b) to the tree at a gives the tree at b, reset gives the lower tree.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { seeds } from './support/seed.js'

type Tree = Record<string, string>
const lower = { '/a/f': 'lower f', '/a/b/g': 'lower g', '/c': 'lower c', '/e/': '' }

function tree(ws: Workspace): Tree {
  const out: Tree = {}
  const walk = (dir: string) => {
    for (const name of ws.fs.readdirSync(dir) as string[]) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stat = ws.fs.lstatSync(path)
      if (stat.isSymbolicLink()) out[path] = `link ${ws.fs.readlinkSync(path)}`
      else if (stat.isDirectory()) {
        out[path] = `dir ${(stat.mode & 0o777).toString(8)}`
        walk(path)
      } else out[path] = `file ${(stat.mode & 0o777).toString(8)} ${ws.fs.readFileSync(path, 'utf8')}`
    }
  }
  walk('/')
  return out
}

const name = fc.constantFrom('a', 'b', 'c', 'e', 'f', 'g', 'x')
const path = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => '/' + parts.join('/'))
type Step = (ws: Workspace) => unknown
const step: fc.Arbitrary<Step | 'checkpoint'> = fc.oneof(
  { weight: 2, arbitrary: fc.constant('checkpoint' as const) },
  { weight: 3, arbitrary: fc.tuple(path, fc.string({ maxLength: 4 })).map(([p, t]) => (ws: Workspace) => ws.fs.writeFileSync(p, t)) },
  { weight: 2, arbitrary: path.map((p) => (ws: Workspace) => ws.fs.mkdirSync(p, { recursive: true })) },
  { weight: 2, arbitrary: path.map((p) => (ws: Workspace) => ws.fs.rmSync(p, { recursive: true })) },
  { weight: 2, arbitrary: fc.tuple(path, path).map(([a, b]) => (ws: Workspace) => ws.fs.renameSync(a, b)) },
  { weight: 1, arbitrary: fc.tuple(path, path).map(([a, b]) => (ws: Workspace) => ws.fs.symlinkSync(a, b)) },
  { weight: 1, arbitrary: path.map((p) => (ws: Workspace) => ws.fs.chmodSync(p, 0o700)) },
)

/** Makes `ws` match `target` by applying the Change list of diff(from, to), using target's contents. */
function apply(ws: Workspace, changes: ReturnType<Workspace['diff']>, target: Tree): void {
  const ordered = [...changes].sort((x, y) => x.path.localeCompare(y.path))
  for (const change of [...ordered].reverse()) {
    if (change.type === 'added') continue
    // A directory that stays a directory is changed in place (its mode); anything else is replaced.
    const stays = change.type === 'modified' && change.entry === 'dir' && ws.fs.lstatSync(change.path).isDirectory()
    if (!stays) ws.fs.rmSync(change.path, { recursive: true, force: true })
  }
  for (const change of ordered) {
    if (change.type === 'deleted') continue
    const [kind, ...rest] = target[change.path].split(' ')
    if (kind === 'dir') {
      if (!ws.fs.existsSync(change.path)) ws.fs.mkdirSync(change.path)
      ws.fs.chmodSync(change.path, parseInt(rest[0], 8))
    } else if (kind === 'link') ws.fs.symlinkSync(rest.join(' '), change.path)
    else {
      ws.fs.writeFileSync(change.path, rest.slice(1).join(' '))
      ws.fs.chmodSync(change.path, parseInt(rest[0], 8))
    }
  }
}

describe('checkpoint model', () => {
  for (const seed of seeds()) {
    it(`restore, diff and reset agree with recorded trees (seed ${seed})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), fc.nat(), async (steps, pick) => {
          const ws = await Workspace.open({ lower, autoCheckpoint: false })
          const seen: { id: string; tree: Tree }[] = []
          for (const s of steps) {
            if (s === 'checkpoint') seen.push({ id: (await ws.checkpoint()).id, tree: tree(ws) })
            else {
              try {
                s(ws)
              } catch {
                // invalid calls fail with Node's errors; the model only follows successful ones
              }
            }
          }
          const now = tree(ws)
          for (const { id, tree: expected } of [...seen].reverse()) {
            await ws.restore(id)
            expect(tree(ws)).toEqual(expected)
            expect(ws.diff(id)).toEqual([])
          }
          if (seen.length >= 2) {
            const a = seen[pick % seen.length]
            const b = seen[(pick + 1) % seen.length]
            await ws.restore(a.id)
            apply(ws, ws.diff(a.id, b.id), b.tree)
            expect(tree(ws)).toEqual(b.tree)
          }
          await ws.reset()
          expect(ws.changes()).toEqual([])
          expect(tree(ws)).toEqual({ '/a': 'dir 755', '/a/b': 'dir 755', '/a/b/g': 'file 644 lower g', '/a/f': 'file 644 lower f', '/c': 'file 644 lower c', '/e': 'dir 755' })
          // The reset is an operation: undoing it brings back the tree from before it.
          const beforeReset = seen.length >= 2 ? seen[(pick + 1) % seen.length].tree : seen.length === 1 ? seen[0].tree : now
          await ws.undo()
          expect(tree(ws)).toEqual(beforeReset)
        }),
        { seed, numRuns: 120 },
      )
    })
  }
})
