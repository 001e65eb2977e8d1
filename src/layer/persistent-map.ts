/**
 * A persistent hash array mapped trie keyed by strings: the children of one directory.
 *
 * Persistence is what makes checkpoints O(1): a checkpoint keeps a root and later writes copy only
 * the nodes on their path. To keep writes as cheap as a mutable map between checkpoints, nodes carry
 * an edit token (Clojure's transients): a node whose token is the caller's current one was created
 * since the last freeze and is changed in place; any other node is copied first. Freezing is
 * therefore just switching to a new token.
 */

export type EditToken = object

const BITS = 5
const MASK = (1 << BITS) - 1
const MAX_SHIFT = 30

/**
 * A branch: for each bit set in `bitmap`, lowest first, two places in `entries`: a key and its
 * value, or null and the subtree (branch or collision) of the keys whose hashes lead there. Keys
 * and values sit in the branch's own array, not in an object per entry: one load fewer per lookup,
 * a new value is a store (no allocation) while the branch is owned, and 20 bytes less per entry.
 * No hash is kept: it is computed again from the key on the rare split.
 */
interface Branch<V> {
  bitmap: number
  entries: (string | null | V | Subtree<V>)[]
  token: EditToken | null
}

/** Keys whose hashes are all equal: key, value, key, value… */
interface Collision<V> {
  readonly hash: number
  entries: (string | V)[]
  token: EditToken | null
}

type Subtree<V> = Branch<V> | Collision<V>

export interface MapRoot<V> {
  readonly node: Branch<V>
  readonly size: number
}

const isCollision = <V>(node: Subtree<V>): node is Collision<V> => 'hash' in node

/** FNV-1a over UTF-16 code units; names are short, so this is cheaper than anything fancier. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

const popcount = (x: number): number => {
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  x = (x + (x >>> 4)) & 0x0f0f0f0f
  return Math.imul(x, 0x01010101) >>> 24
}

const EMPTY_BRANCH: Branch<never> = Object.freeze({ bitmap: 0, entries: [], token: null }) as Branch<never>
export const emptyMap = <V>(): MapRoot<V> => ({ node: EMPTY_BRANCH as Branch<V>, size: 0 })

export function mapGet<V>(root: MapRoot<V>, key: string): V | undefined {
  const hash = hashString(key)
  let node: Subtree<V> = root.node
  for (let shift = 0; ; shift += BITS) {
    const entries = node.entries
    if (isCollision(node)) {
      for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return entries[i + 1] as V
      return undefined
    }
    const bit = 1 << ((hash >>> shift) & MASK)
    if ((node.bitmap & bit) === 0) return undefined
    const at = 2 * popcount(node.bitmap & (bit - 1))
    const found = entries[at]
    if (found !== null) return found === key ? (entries[at + 1] as V) : undefined
    node = entries[at + 1] as Subtree<V>
  }
}

function editable<V>(node: Branch<V>, token: EditToken): Branch<V> {
  return node.token === token ? node : { bitmap: node.bitmap, entries: node.entries.slice(), token }
}

/** The subtree at depth `shift` holding two keys whose hashes agree above it. */
function merge<V>(a: string, aValue: V, aHash: number, b: string, bValue: V, bHash: number, shift: number, token: EditToken): Subtree<V> {
  if (shift > MAX_SHIFT) return { hash: aHash, entries: [a, aValue, b, bValue], token }
  const ia = (aHash >>> shift) & MASK
  const ib = (bHash >>> shift) & MASK
  if (ia === ib) return { bitmap: 1 << ia, entries: [null, merge(a, aValue, aHash, b, bValue, bHash, shift + BITS, token)], token }
  return { bitmap: (1 << ia) | (1 << ib), entries: ia < ib ? [a, aValue, b, bValue] : [b, bValue, a, aValue], token }
}

/** A root whose fields change in place (only while its node carries the caller's token). */
type MutableRoot<V> = { node: Branch<V>; size: number }

/**
 * What the last insert or remove found under its key (undefined: nothing): kept here rather than
 * returned, so neither allocates a result, and a caller that needs the old value makes no second walk.
 */
let previous: unknown
/** Whether the last insert or remove found its key. */
let found = false
/** Set with a null from remove: the one key and value left in a subtree, which its parent holds instead. */
let collapsedKey = ''
let collapsedValue: unknown

/** Returns the new root; `root` stays valid unless its nodes carry `token`. */
export function mapSet<V>(root: MapRoot<V>, key: string, value: V, token: EditToken): MapRoot<V> {
  previous = undefined
  found = false
  const node = insert(root.node, 0, key, hashString(key), value, token) as Branch<V>
  const size = found ? root.size : root.size + 1
  return rooted(root, node, size, token)
}

/** `root` with `node` and `size`: itself, changed in place when its node is one the token owns (then only the token's nodes hold it). */
function rooted<V>(root: MapRoot<V>, node: Branch<V>, size: number, token: EditToken): MapRoot<V> {
  if (node === root.node && size === root.size) return root
  if (node === root.node && node.token === token) {
    ;(root as MutableRoot<V>).size = size
    return root
  }
  return { node, size }
}

/** Sets `key` in `holder.children` (as mapSet) and returns the value it replaced: one walk for both. */
export function mapReplace<V>(holder: { children: MapRoot<V> }, key: string, value: V, token: EditToken): V | undefined {
  holder.children = mapSet(holder.children, key, value, token)
  return previous as V | undefined
}

/** Deletes `key` from `holder.children` (as mapDelete) and returns the value it held: one walk for both. */
export function mapRemove<V>(holder: { children: MapRoot<V> }, key: string, token: EditToken): V | undefined {
  holder.children = mapDelete(holder.children, key, token)
  return previous as V | undefined
}

/** `key` set to `value` in the subtree at `node` (at depth `shift`): the subtree's new node (itself when it was editable). */
function insert<V>(node: Subtree<V>, shift: number, key: string, hash: number, value: V, token: EditToken): Subtree<V> {
  if (isCollision(node)) {
    const entries = node.token === token ? node.entries : node.entries.slice()
    let at = 0
    while (at < entries.length && entries[at] !== key) at += 2
    if (at < entries.length) {
      found = true
      previous = entries[at + 1]
      entries[at + 1] = value
    } else entries.push(key, value)
    return node.token === token ? node : { hash: node.hash, entries, token }
  }
  const bit = 1 << ((hash >>> shift) & MASK)
  const at = 2 * popcount(node.bitmap & (bit - 1))
  const target = editable(node, token)
  const entries = target.entries
  if ((node.bitmap & bit) === 0) {
    // Shifted by hand: splice would allocate the (empty) array of what it removed.
    let from = entries.length
    entries.push(key, value)
    while (--from >= at) entries[from + 2] = entries[from]
    entries[at] = key
    entries[at + 1] = value
    target.bitmap |= bit
    return target
  }
  const existing = entries[at]
  if (existing === null) entries[at + 1] = insert(entries[at + 1] as Subtree<V>, shift + BITS, key, hash, value, token)
  else if (existing === key) {
    found = true
    previous = entries[at + 1]
    entries[at + 1] = value
  } else {
    const other = existing as string
    entries[at + 1] = merge(other, entries[at + 1] as V, hashString(other), key, value, hash, shift + BITS, token)
    entries[at] = null
  }
  return target
}

export function mapDelete<V>(root: MapRoot<V>, key: string, token: EditToken): MapRoot<V> {
  previous = undefined
  found = false
  const node = (remove(root.node, 0, key, hashString(key), token) as Branch<V> | undefined) ?? (EMPTY_BRANCH as Branch<V>)
  if (!found) return root
  return rooted(root, node, root.size - 1, token)
}

/**
 * `key` removed from the subtree at `node` (at depth `shift`): its replacement, undefined when the
 * subtree is gone, or null when one key is left in it (collapsedKey and collapsedValue), which the
 * parent then holds itself, keeping the trie canonical.
 */
function remove<V>(node: Subtree<V>, shift: number, key: string, hash: number, token: EditToken): Subtree<V> | undefined | null {
  if (isCollision(node)) {
    const entries = node.entries
    let at = 0
    while (at < entries.length && entries[at] !== key) at += 2
    if (at === entries.length) return node
    found = true
    previous = entries[at + 1]
    if (entries.length === 4) {
      collapsedKey = entries[2 - at] as string
      collapsedValue = entries[3 - at]
      return null
    }
    return { hash: node.hash, entries: entries.filter((_, i) => i !== at && i !== at + 1), token }
  }
  const bit = 1 << ((hash >>> shift) & MASK)
  if ((node.bitmap & bit) === 0) return node
  const at = 2 * popcount(node.bitmap & (bit - 1))
  const entries = node.entries
  const existing = entries[at]
  let child: Subtree<V> | undefined | null
  if (existing === null) {
    const subtree = entries[at + 1] as Subtree<V>
    child = remove(subtree, shift + BITS, key, hash, token)
    if (child === subtree) return node
  } else if (existing === key) {
    found = true
    previous = entries[at + 1]
    child = undefined
  } else return node
  const target = editable(node, token)
  const kept = target.entries
  if (child === undefined) {
    kept.splice(at, 2)
    target.bitmap &= ~bit
    // A branch left holding one key and value collapses into its parent.
    if (shift > 0 && kept.length === 2 && kept[0] !== null) {
      collapsedKey = kept[0] as string
      collapsedValue = kept[1]
      return null
    }
    if (shift > 0 && kept.length === 0) return undefined
  } else if (child === null) {
    kept[at] = collapsedKey
    kept[at + 1] = collapsedValue as V
  } else kept[at + 1] = child
  return target
}

/** Every key and value: each branch's last place first, a subtree as soon as it is reached. */
export function* mapEntries<V>(root: MapRoot<V>): Generator<[string, V]> {
  const nodes: Subtree<V>[] = [root.node]
  // Per node on the stack: the next key's place in its entries (counting down).
  const places: number[] = [root.node.entries.length - 2]
  while (nodes.length > 0) {
    const top = nodes.length - 1
    const node = nodes[top]
    const entries = node.entries
    if (isCollision(node)) {
      nodes.pop()
      places.pop()
      for (let i = 0; i < entries.length; i += 2) yield [entries[i] as string, entries[i + 1] as V]
      continue
    }
    const at = places[top]
    if (at < 0) {
      nodes.pop()
      places.pop()
      continue
    }
    places[top] = at - 2
    const key = entries[at]
    if (key !== null) yield [key as string, entries[at + 1] as V]
    else {
      const subtree = entries[at + 1] as Subtree<V>
      nodes.push(subtree)
      places.push(subtree.entries.length - 2)
    }
  }
}

export function mapKeys<V>(root: MapRoot<V>): string[] {
  const keys: string[] = []
  for (const [key] of mapEntries(root)) keys.push(key)
  return keys
}

/**
 * Calls `visit` for every key whose value differs (by identity) between two maps, skipping every
 * shared subtree: the cost is proportional to what changed, not to the size of the maps.
 */
export function mapDiff<V>(
  a: MapRoot<V>,
  b: MapRoot<V>,
  visit: (key: string, before: V | undefined, after: V | undefined) => void,
): void {
  if (a.node === b.node) return
  const collect = (key: unknown, value: unknown, into: Map<string, V>) => {
    if (key !== null) {
      into.set(key as string, value as V)
      return
    }
    const node = value as Subtree<V>
    if (isCollision(node)) for (let i = 0; i < node.entries.length; i += 2) into.set(node.entries[i] as string, node.entries[i + 1] as V)
    else for (let i = 0; i < node.entries.length; i += 2) collect(node.entries[i], node.entries[i + 1], into)
  }
  const compare = (x: Branch<V>, y: Branch<V>) => {
    for (let i = 0; i < 32; i++) {
      const bit = 1 << i
      const inX = (x.bitmap & bit) !== 0
      const inY = (y.bitmap & bit) !== 0
      if (!inX && !inY) continue
      const xAt = 2 * popcount(x.bitmap & (bit - 1))
      const yAt = 2 * popcount(y.bitmap & (bit - 1))
      const xKey = inX ? x.entries[xAt] : undefined
      const xValue = inX ? x.entries[xAt + 1] : undefined
      const yKey = inY ? y.entries[yAt] : undefined
      const yValue = inY ? y.entries[yAt + 1] : undefined
      if (xKey === yKey && xValue === yValue) continue
      if (xKey === null && yKey === null && !isCollision(xValue as Subtree<V>) && !isCollision(yValue as Subtree<V>)) {
        compare(xValue as Branch<V>, yValue as Branch<V>)
        continue
      }
      // Single entries and collisions are small: compare them by content.
      const before = new Map<string, V>()
      const after = new Map<string, V>()
      if (inX) collect(xKey, xValue, before)
      if (inY) collect(yKey, yValue, after)
      for (const [key, value] of before) {
        const other = after.get(key)
        if (other !== value) visit(key, value, other)
      }
      for (const [key, value] of after) if (!before.has(key)) visit(key, undefined, value)
    }
  }
  compare(a.node, b.node)
}
