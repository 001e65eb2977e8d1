/**
 * The file tree with each entry's layer: what ws.changes() names is in the upper layer (added or
 * modified) or a whiteout (deleted, so absent from readdir); everything else shows through from the
 * lower layer.
 */
import type { Change } from '../src/diff.js'
import type { WorkerWorkspace } from '../worker/index.js'

export type Layer = 'lower' | 'upper' | 'whiteout'

export interface TreeEntry {
  path: string
  entry: Change['entry']
  layer: Layer
  change?: Change['type']
}

interface StatsLike {
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

function kindOf(stats: StatsLike): Change['entry'] {
  return stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'symlink' : 'file'
}

/** Parents before children, siblings by name ('\0' sorts the separator before every name character). */
const treeOrder = (a: TreeEntry, b: TreeEntry) => {
  const x = a.path.replaceAll('/', '\0')
  const y = b.path.replaceAll('/', '\0')
  return x < y ? -1 : x > y ? 1 : 0
}

export async function listTree(ws: WorkerWorkspace): Promise<TreeEntry[]> {
  const [names, changes] = await Promise.all([ws.fs.readdir('/', { recursive: true }), ws.changes()])
  const paths = names.map((name) => `/${name}`)
  const stats = await ws.batch(paths.map((path) => ({ op: 'lstat' as const, args: [path] })))
  const changed = new Map(changes.map((change) => [change.path, change]))
  const entries: TreeEntry[] = []
  paths.forEach((path, i) => {
    const result = stats[i]
    if (!result.ok) return // gone between the two calls: the next refresh shows it right
    const change = changed.get(path)
    entries.push({ path, entry: kindOf(result.value as StatsLike), layer: change ? 'upper' : 'lower', ...(change ? { change: change.type } : {}) })
  })
  for (const change of changes) {
    if (change.type === 'deleted') entries.push({ path: change.path, entry: change.entry, layer: 'whiteout', change: 'deleted' })
  }
  return entries.sort(treeOrder)
}
