/**
 * Lower sources, and `toLowerSource`, which turns whatever the caller has into one by its shape.
 * Shapes are probed with `in` before any member is read, so a guarded object (a Proxy that allows
 * only some members) is asked for nothing beyond what its kind needs. A synchronous fs (node:fs, a
 * memfs Volume) is passed as a source, `syncFsSource(fs, root?)` from rewindfs/adapter-kit, so the
 * core entry does not carry that adapter.
 */
import { emptySource } from './empty.js'
import { type FileSystemTree, fileSystemTreeSource } from './file-system-tree.js'
import { type FixtureFiles, describe, fixtureSource, isBytes, isPlainObject } from './fixture.js'
import type { LowerSource } from './source.js'

export type { EntryType, LowerSource, LowerStat } from './source.js'
export type { DirectoryNode, FileNode, FileSystemTree, SymlinkNode } from './file-system-tree.js'
export type { FixtureFiles } from './fixture.js'
export type { SyncDirent, SyncReadableFs, SyncStats } from './sync-fs.js'
export { emptySource, fileSystemTreeSource, fixtureSource }

/** Everything `toLowerSource` accepts (plus undefined, for an empty workspace). */
export type LowerInput = LowerSource | FileSystemTree | FixtureFiles

const ACCEPTED =
  'expected undefined (empty), a LowerSource (a synchronous fs such as a memfs Volume is one through syncFsSource(fs, root?) ' +
  "from rewindfs/adapter-kit), a WebContainers FileSystemTree ({ name: { file } | { directory } }) or a fixture " +
  "({ '/path': string | Uint8Array, 'dir/': '' })"

function hasFunctions(value: object, names: readonly string[]): boolean {
  return names.every((name) => name in value && typeof (value as Record<string, unknown>)[name] === 'function')
}

function isLowerSource(value: object): value is LowerSource {
  return 'kind' in value && typeof value.kind === 'string' && hasFunctions(value, ['stat', 'readdir', 'readFile', 'readlink'])
}

/** `{ directory }` or `{ file }`: enough to pick the format; fileSystemTreeSource validates the rest. */
function isTreeNode(value: unknown): boolean {
  return isPlainObject(value) && (Object.hasOwn(value, 'directory') || Object.hasOwn(value, 'file'))
}

function isContent(value: unknown): boolean {
  return typeof value === 'string' || isBytes(value)
}

export function toLowerSource(input: LowerInput | undefined): LowerSource {
  const value: unknown = input
  if (value === undefined) return emptySource()
  if ((typeof value === 'object' || typeof value === 'function') && value !== null) {
    if (isLowerSource(value)) return value
    if (hasFunctions(value, ['readFileSync', 'readdirSync', 'lstatSync'])) {
      throw new TypeError('rewindfs: a synchronous fs is a lower source through syncFsSource(fs, root?) from rewindfs/adapter-kit: pass lower: syncFsSource(fs)')
    }
    if (isPlainObject(value)) {
      const keys = Object.keys(value)
      // {} fits both formats and means the same either way: only the root.
      if (keys.length === 0) return fixtureSource({})
      const tree = isTreeNode(value[keys[0]])
      const bad = keys.find((key) => (tree ? !isTreeNode(value[key]) : !isContent(value[key])))
      if (bad === undefined) return tree ? fileSystemTreeSource(value as FileSystemTree) : fixtureSource(value as FixtureFiles)
      const first = keys[0]
      const problem = tree
        ? `'${bad}' holds ${describe(value[bad])} but '${first}' is a FileSystemTree node`
        : isTreeNode(value[bad])
          ? `'${bad}' is a FileSystemTree node but '${first}' holds fixture content`
          : `'${bad}' holds ${describe(value[bad])}`
      throw new TypeError(`rewindfs: cannot use this object as a lower source: ${problem}; ${ACCEPTED}`)
    }
  }
  throw new TypeError(`rewindfs: cannot use ${describe(value)} as a lower source; ${ACCEPTED}`)
}
