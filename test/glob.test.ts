/**
 * Include/exclude globs: the same answers as the regular expressions they replaced (the oracle,
 * on inputs small enough for its backtracking), in steps linear in the path: the automaton's work
 * counter bounds it, no clock. From ../shared/repros/glob-redos.js.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import { compileGlob, globCounters, pathMatcher } from '../src/glob.js'
import { callTool, createAgentTools } from '../tools/index.js'

/**
 * The previous implementation, kept here as the oracle of the semantics; one fix: it did not escape
 * '*' and '?' inside braces, so '{*}' (how rollback_to_checkpoint quotes a literal '*') was an
 * invalid regular expression.
 */
function oracle(glob: string): RegExp {
  const escape = (text: string) => text.replace(/[.*?+^${}()|[\]\\]/g, '\\$&')
  let source = ''
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++
        if (glob[i + 1] === '/') {
          i++
          source += '(?:.*/)?'
        } else source += '.*'
      } else source += '[^/]*'
    } else if (c === '?') source += '[^/]'
    else if (c === '{') {
      const end = glob.indexOf('}', i)
      if (end < 0) source += '\\{'
      else {
        source += '(?:' + glob.slice(i + 1, end).split(',').map(escape).join('|') + ')'
        i = end
      }
    } else source += escape(c)
  }
  const anchored = glob.startsWith('/') ? source : '(?:.*/)?' + source
  return new RegExp('^' + (glob.startsWith('/') ? '' : '/?') + anchored + '(?:/.*)?$')
}

/** Steps the automaton may take for a glob and a path: every state at most twice per character. */
const bound = (glob: string, path: string) => (path.length + 1) * 2 * (4 * glob.length + 16)

function steps(glob: string, path: string): { matched: boolean; steps: number } {
  const compiled = compileGlob(glob)
  const before = globCounters.steps
  const matched = compiled.test(path)
  return { matched, steps: globCounters.steps - before }
}

describe('globs', () => {
  it('match as documented: *, **, ?, {a,b}, anchoring, directories cover what is under them', () => {
    const cases: [string, string, boolean][] = [
      ['*.json', '/app/config.json', true],
      ['*.json', '/config.json', true],
      ['*.json', '/app/config.json.bak', false],
      ['/app/*.json', '/app/config.json', true],
      ['/app/*.json', '/app/deep/config.json', false],
      ['/app/**/*.json', '/app/config.json', true],
      ['/app/**/*.json', '/app/a/b/config.json', true],
      ['/app/**', '/app/a/b', true],
      ['/app', '/app/a/b', true],
      ['/app', '/application', false],
      ['src', '/x/src/y.ts', true],
      ['?.md', '/a.md', true],
      ['?.md', '/ab.md', false],
      ['?', '/a/b', true],
      ['*.{ts,tsx}', '/a/b.tsx', true],
      ['*.{ts,tsx}', '/a/b.js', false],
      ['{*}', '/a/*', true],
      ['{*}', '/a/b', false],
      ['a{b', '/a{b', true],
      ['/{a,}b', '/b', true],
    ]
    for (const [glob, path, expected] of cases) {
      expect([glob, path, compileGlob(glob).test(path)]).toEqual([glob, path, expected])
      expect([glob, path, oracle(glob).test(path)]).toEqual([glob, path, expected])
    }
    const matches = pathMatcher(['/src/**'], ['*.test.ts'])
    expect(['/src/a.ts', '/src/a.test.ts', '/lib/a.ts'].filter(matches)).toEqual(['/src/a.ts'])
  })

  it("take a bracket as one character of its set, as ripgrep's and Claude Code's globs do, or as its own text (a Next.js '[slug]' directory); it was only its own text", () => {
    const cases: [string, string, boolean][] = [
      ['[ab]*.ts', '/src/a1.ts', true],
      ['[ab]*.ts', '/src/b.ts', true],
      ['[ab]*.ts', '/src/c.ts', false],
      ['*.[jt]s', '/x/y.js', true],
      ['*.[jt]s', '/x/y.cs', false],
      ['/v[0-9]', '/v7', true],
      ['/v[0-9]', '/vx', false],
      ['/[!a]x', '/bx', true],
      ['/[!a]x', '/ax', false],
      ['/[^a]x', '/ax', false],
      ['/[]a]', '/]', true],
      ['/[]a]', '/a', true],
      ['/a[/]b', '/a/b', false],
      ['/a[!b]c', '/a/c', false],
      ['app/[slug]/page.tsx', '/app/[slug]/page.tsx', true],
      ['app/[slug]/page.tsx', '/app/s/page.tsx', true],
      ['app/[slug]/page.tsx', '/app/x/page.tsx', false],
      ['/a[b', '/a[b', true],
      ['/a[b', '/ab', false],
    ]
    for (const [glob, path, expected] of cases) expect([glob, path, compileGlob(glob).test(path)]).toEqual([glob, path, expected])
  })

  it('agree with the regular expressions they replaced on random globs and paths', () => {
    const token = fc.constantFrom('a', 'b', '.', '/', '*', '**', '**/', '?', '{a,b}', '{a,}', '{', '}', ',', '{*}', '{b/a,a}')
    const globs = fc.tuple(fc.boolean(), fc.array(token, { maxLength: 7 })).map(([anchored, tokens]) => (anchored ? '/' : '') + tokens.join(''))
    const paths = fc.array(fc.constantFrom('a', 'b', '.', 'ab', '*', '{', 'a.b'), { minLength: 1, maxLength: 5 }).map((parts) => '/' + parts.join('/'))
    fc.assert(
      fc.property(globs, paths, (glob, path) => {
        expect(compileGlob(glob).test(path)).toBe(oracle(glob).test(path))
      }),
      { numRuns: 5000 },
    )
  })

  it('take steps linear in the path for globs that made the regular expressions backtrack exponentially', () => {
    const path = `/d/${'a'.repeat(200)}1/${'b'.repeat(200)}.txt`
    expect(path.length).toBeGreaterThan(400)
    const hostile = [
      '*'.repeat(8) + 'x',
      '*'.repeat(60) + 'x',
      '**/' + 'a*'.repeat(30) + 'z',
      '{'.repeat(5000),
      Array(40).fill('{a,b}').join(''),
      '{'.repeat(200) + 'a' + '}'.repeat(200),
      Array(20).fill('**/').join('') + 'z',
      '?'.repeat(3000) + 'z',
      '**'.repeat(100) + 'y',
    ]
    for (const glob of hostile) {
      const { matched, steps: taken } = steps(glob, path)
      expect(matched).toBe(false)
      expect(taken).toBeLessThanOrEqual(bound(glob, path))
    }
    // Doubling the path doubles the work (within the bound), never squares it.
    const glob = '*'.repeat(60) + 'x'
    const short = steps(glob, path).steps
    const long = steps(glob, path + path).steps
    expect(long).toBeLessThanOrEqual(2 * short + bound(glob, ''))
  })

  it('rollback_to_checkpoint with hostile include globs answers (the repro: it blocked the event loop for over 30 s)', async () => {
    const lower: Record<string, string> = {}
    for (let i = 0; i < 50; i++) lower[`/d/${'a'.repeat(200)}${i}/${'b'.repeat(200)}.txt`] = 'x'
    const ws = await Workspace.open({ lower })
    const tools = createAgentTools(ws)
    await callTool(tools, 'manage_checkpoint', { action: 'create', checkpoint_name: 'cp1' })
    for (const path of Object.keys(lower)) ws.fs.writeFileSync(path, 'changed')
    const before = globCounters.steps
    const outcome = await callTool(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'cp1' }, scope: 'files', include_files: ['*'.repeat(8) + 'x'] })
    expect(outcome).toMatchObject({ isError: false, result: { summary: { paths: 0 } } })
    // 50 changed files and their directories, each matched within the bound.
    expect(globCounters.steps - before).toBeLessThanOrEqual(200 * bound('*'.repeat(8) + 'x', Object.keys(lower)[0]))
    const all = await callTool(tools, 'rollback_to_checkpoint', { target: { checkpoint_id: 'cp1' }, scope: 'files', include_files: ['/d/**/*.txt'] })
    expect(all).toMatchObject({ isError: false, result: { summary: { paths: 50 } } })
  })
})
