/**
 * rename's error precedence, with Linux as the oracle: random trees (directories, files, links)
 * built both in a workspace and in a real directory, then random rename pairs biased towards the
 * hard cases (a path and its ancestors or descendants, links, missing names, trailing slashes,
 * '.' and '..'). The outcome (error code, syscall and message) and the tree after must be equal.
 */
import * as nodeFs from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { seeds } from './support/seed.js'

const base = nodeFs.mkdtempSync(join(tmpdir(), 'rewindfs-rename-'))
afterAll(() => nodeFs.rmSync(base, { recursive: true, force: true }))
let counter = 0

type Node = { kind: 'dir' | 'file' } | { kind: 'link'; target: string }
type Tree = Record<string, Node>

const names = ['a', 'b', 'c']
/** Paths up to three deep, each a directory, a file or a link to another path (absolute or relative). */
const tree: fc.Arbitrary<Tree> = fc
  .array(
    fc.record({
      parts: fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }),
      kind: fc.constantFrom('dir', 'dir', 'file', 'link'),
      target: fc.constantFrom('/a', '/a/b', 'b', '..', '../c', 'missing', '.'),
    }),
    { minLength: 1, maxLength: 12 },
  )
  .map((entries) => {
    const out: Tree = {}
    for (const { parts, kind, target } of entries) {
      // Every ancestor is a directory: the first kind given for a path wins.
      for (let i = 1; i < parts.length; i++) {
        const ancestor = '/' + parts.slice(0, i).join('/')
        if (out[ancestor] && out[ancestor].kind !== 'dir') return out
        out[ancestor] ??= { kind: 'dir' }
      }
      const path = '/' + parts.join('/')
      // A top-level link's '..' would leave the host directory standing for the root (chroot differs).
      if (kind === 'link' && parts.length === 1 && target.startsWith('..')) return out
      out[path] ??= kind === 'link' ? { kind, target } : { kind }
    }
    return out
  })

function build(tree: Tree, make: { mkdir(p: string): void; write(p: string): void; link(target: string, p: string): void }) {
  for (const path of Object.keys(tree).sort()) {
    const node = tree[path]
    if (node.kind === 'link') make.link(node.target, path)
    else if (node.kind === 'dir') make.mkdir(path)
    else make.write(path)
  }
}

/** A rename operand: a path of the tree or next to one, with the suffixes that change the rules. */
function operand(tree: Tree): fc.Arbitrary<string> {
  const paths = ['/', ...Object.keys(tree)]
  return fc
    .record({
      path: fc.constantFrom(...paths),
      suffix: fc.constantFrom('', '', '', '/', '/.', '/..', '/x', '/a', '/b/c'),
    })
    .map(({ path, suffix }) => (path === '/' ? suffix : path + suffix))
    // The workspace root is a root (EBUSY); the host directory standing for it is not.
    .filter((p) => !/^\/*$/.test(p) && !p.startsWith('/..'))
}

function snapshot(fs: typeof nodeFs, root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(root + dir) as string[]) {
      const path = dir === '/' ? '/' + name : dir + '/' + name
      const stat = fs.lstatSync(root + path)
      if (stat.isSymbolicLink()) out[path] = 'link ' + String(fs.readlinkSync(root + path)).replace(root, '')
      else if (stat.isDirectory()) {
        out[path + '/'] = 'dir'
        walk(path)
      } else out[path] = 'file ' + fs.readFileSync(root + path, 'utf8')
    }
  }
  walk('/')
  return out
}

function outcome(run: () => void, root: string): unknown {
  try {
    run()
    return 'ok'
  } catch (error) {
    const e = error as { code?: string; syscall?: string; message?: string }
    return { code: e.code, syscall: e.syscall, message: root ? e.message?.split(root).join('') : e.message }
  }
}

describe('rename matches Linux', () => {
  for (const seed of seeds()) {
    it(`error precedence and results over random trees and pairs (seed ${seed})`, async () => {
      await fc.assert(
        fc.asyncProperty(
          tree.chain((t) => fc.tuple(fc.constant(t), fc.array(fc.tuple(operand(t), operand(t)), { minLength: 1, maxLength: 6 }))),
          async ([t, pairs]) => {
            const real = join(base, `t${counter++}`)
            nodeFs.mkdirSync(real)
            const ws = await Workspace.open({ autoCheckpoint: false })
            const fs = ws.fs as unknown as typeof nodeFs
            build(t, {
              mkdir: (p) => {
                nodeFs.mkdirSync(real + p)
                fs.mkdirSync(p)
              },
              write: (p) => {
                nodeFs.writeFileSync(real + p, p)
                fs.writeFileSync(p, p)
              },
              link: (target, p) => {
                nodeFs.symlinkSync(target.startsWith('/') ? real + target : target, real + p)
                fs.symlinkSync(target, p)
              },
            })
            try {
              for (const [from, to] of pairs) {
                const expected = outcome(() => nodeFs.renameSync(real + from, real + to), real)
                const actual = outcome(() => fs.renameSync(from, to), '')
                expect(actual, `rename(${from}, ${to})`).toEqual(expected)
                expect(snapshot(fs, ''), `rename(${from}, ${to})`).toEqual(snapshot(nodeFs, real))
              }
            } finally {
              nodeFs.rmSync(real, { recursive: true, force: true })
            }
          },
        ),
        { seed, numRuns: 200 },
      )
    })
  }

  it('checks ancestry before types: the cases from the issue', async () => {
    const ws = await Workspace.open({ lower: { '/d/e/b': 'file', '/d/a': 'file' } })
    ws.fs.symlinkSync('x', '/d/s')
    expect(() => ws.fs.renameSync('/d/e', '/d/e/b')).toThrow(expect.objectContaining({ code: 'EINVAL', message: "EINVAL: invalid argument, rename '/d/e' -> '/d/e/b'" }))
    expect(() => ws.fs.renameSync('/d/a', '/d')).toThrow(expect.objectContaining({ code: 'ENOTEMPTY' }))
    expect(() => ws.fs.renameSync('/d', '/d/s')).toThrow(expect.objectContaining({ code: 'EINVAL' }))
    ws.chdir('/d')
    expect(() => ws.fs.renameSync('e', 'e/b')).toThrow(expect.objectContaining({ message: "EINVAL: invalid argument, rename 'e' -> 'e/b'" }))
  })
})
