/**
 * cp's paths as Node 20 takes them, with real node:fs on a real directory as the oracle (the
 * outcome, error fields and message, and what was copied): its argument checks take a string, a
 * Buffer or a file: URL, but its copy resolves the paths with node:path, which takes strings only,
 * so a Buffer (or any Uint8Array) path fails there with ERR_INVALID_ARG_TYPE, after the filter,
 * the lstat of both paths and their checks, and before anything is copied; in the callback form it
 * comes to the callback. A URL is made a string first and copies.
 */
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { type At, type Fs, fsOracle } from './support/fs-oracle.js'

function seed(fs: Fs, at: At): void {
  fs.mkdirSync(at('/d/sub'), { recursive: true })
  fs.writeFileSync(at('/f'), 'abc')
  fs.writeFileSync(at('/d/g'), 'gee')
  fs.symlinkSync('f', at('/lf'))
  fs.symlinkSync('d', at('/ld'))
}

const { same } = fsOracle('rewindfs-cp-paths-', seed)

type Path = string | Buffer | Uint8Array | URL
type Form = 'sync' | 'callback' | 'promise'

/** The call in one form: what it returned or threw at once, what it called back with, what its promise settled to. */
async function cpIn(fs: Fs, form: Form, src: Path, dest: Path, options?: Record<string, unknown>): Promise<unknown> {
  const args = (options === undefined ? [src, dest] : [src, dest, options]) as [string, string]
  if (form === 'sync') {
    try {
      return ['returned', fs.cpSync(...args)]
    } catch (error) {
      return ['thrown', error]
    }
  }
  if (form === 'promise') return fs.promises.cp(...args).then((value) => ['resolved', value], (error: unknown) => ['rejected', error])
  return new Promise((resolve) => {
    try {
      ;(fs.cp as (...all: unknown[]) => void)(...args, (error: Error | null) => resolve(['called back', error]))
    } catch (error) {
      resolve(['thrown', error])
    }
  })
}

/** What is there after the call: the names at the top, and the copy's content where one was made. */
function after(fs: Fs, at: At): unknown {
  const made = fs.readdirSync(at('/')).sort()
  return { made, t: fs.existsSync(at('/t')) ? (fs.lstatSync(at('/t')).isDirectory() ? fs.readdirSync(at('/t')).sort() : fs.readFileSync(at('/t'), 'utf8')) : null }
}

const bytes = (path: string) => Buffer.from(path)
const plainBytes = (path: string) => new Uint8Array(Buffer.from(path))
const url = (path: string) => pathToFileURL(path)

describe('cp, cpSync and promises.cp with Buffer and URL paths, as Node 20 runs them', () => {
  const forms: Form[] = ['sync', 'callback', 'promise']

  it('a Buffer or Uint8Array source or destination fails with ERR_INVALID_ARG_TYPE before anything is copied', async () => {
    for (const form of forms) {
      // A file, a link, a directory (where Node's path.resolve names 'paths[0]'), a link to one followed.
      const cases: [Path | ((at: At) => Path), Path | ((at: At) => Path), Record<string, unknown>?][] = [
        [(at) => bytes(at('/f')), (at) => at('/t')],
        [(at) => at('/f'), (at) => bytes(at('/t'))],
        // Before the destination's missing parents are made.
        [(at) => at('/f'), (at) => bytes(at('/new/t'))],
        [(at) => bytes(at('/f')), (at) => bytes(at('/t'))],
        [(at) => plainBytes(at('/f')), (at) => at('/t')],
        [(at) => at('/f'), (at) => plainBytes(at('/t'))],
        [(at) => bytes(at('/lf')), (at) => at('/t')],
        [(at) => bytes(at('/d')), (at) => at('/t'), { recursive: true }],
        [(at) => at('/d'), (at) => bytes(at('/t')), { recursive: true }],
        [(at) => bytes(at('/ld')), (at) => at('/t'), { recursive: true, dereference: true }],
        [(at) => bytes(at('/d')), (at) => at('/t')],
      ]
      for (const [src, dest, options] of cases) {
        const outcome = await same(async (fs, at) => [
          await cpIn(fs, form, typeof src === 'function' ? src(at) : src, typeof dest === 'function' ? dest(at) : dest, options),
          after(fs, at),
        ])
        expect(outcome).toMatchObject([[form === 'sync' ? 'thrown' : form === 'promise' ? 'rejected' : 'called back', { code: 'ERR_INVALID_ARG_TYPE', name: 'TypeError' }], { t: null }])
      }
    }
  })

  it('what Node checks before it comes to the paths comes first: the filter (which gets the Buffer), a missing source, the same file, a directory over a file', async () => {
    for (const form of forms) {
      const filtered = await same(async (fs, at) => {
        const seen: unknown[] = []
        const filter = (source: unknown, destination: unknown) => {
          seen.push([Buffer.isBuffer(source) ? 'Buffer' : typeof source, Buffer.isBuffer(destination) ? 'Buffer' : typeof destination])
          return false
        }
        return [await cpIn(fs, form, bytes(at('/f')), at('/t'), { filter }), await cpIn(fs, form, at('/f'), bytes(at('/t')), { filter }), seen, after(fs, at)]
      })
      const done = form === 'sync' ? ['returned', undefined] : form === 'promise' ? ['resolved', undefined] : ['called back', null]
      expect(filtered).toEqual([done, done, [['Buffer', 'string'], ['string', 'Buffer']], { made: ['d', 'f', 'ld', 'lf'], t: null }])
      expect(await same(async (fs, at) => [await cpIn(fs, form, bytes(at('/none')), at('/t')), after(fs, at)])).toMatchObject([[expect.any(String), { code: 'ENOENT', syscall: 'lstat' }], { t: null }])
      expect(await same(async (fs, at) => [await cpIn(fs, form, at('/f'), bytes(at('/f'))), after(fs, at)])).toMatchObject([[expect.any(String), { code: 'ERR_FS_CP_EINVAL' }], expect.anything()])
      expect(await same(async (fs, at) => [await cpIn(fs, form, bytes(at('/d')), at('/f'), { recursive: true }), after(fs, at)])).toMatchObject([[expect.any(String), { code: 'ERR_FS_CP_DIR_TO_NON_DIR' }], expect.anything()])
      expect(await same(async (fs, at) => [await cpIn(fs, form, at('/f'), bytes(at('/d'))), after(fs, at)])).toMatchObject([[expect.any(String), { code: 'ERR_FS_CP_NON_DIR_TO_DIR' }], expect.anything()])
    }
  })

  it('a file: URL copies, as a string would (the filter gets strings); another scheme is ERR_INVALID_URL_SCHEME, thrown at once even by the callback form', async () => {
    for (const form of forms) {
      const copied = await same(async (fs, at) => {
        const seen: unknown[] = []
        const filter = (source: unknown, destination: unknown) => (seen.push([typeof source, typeof destination]), true)
        return [await cpIn(fs, form, url(at('/f')), url(at('/t')), { filter }), seen, after(fs, at)]
      })
      expect(copied).toMatchObject([expect.anything(), [['string', 'string']], { t: 'abc' }])
      expect(await same(async (fs, at) => [await cpIn(fs, form, url(at('/d')), at('/t'), { recursive: true }), after(fs, at)])).toMatchObject([expect.anything(), { t: ['g', 'sub'] }])
      expect(await same(async (fs, at) => [await cpIn(fs, form, new URL('http://host/f'), at('/t')), after(fs, at)])).toMatchObject([
        [form === 'promise' ? 'rejected' : 'thrown', { code: 'ERR_INVALID_URL_SCHEME' }],
        { t: null },
      ])
    }
  })
})
