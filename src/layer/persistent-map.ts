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

interface Leaf<V> {
  // No hash kept: it is computed again from the key on the rare split, and a 32-bit hash held in
  // a field is a boxed number in V8 (most are beyond its small integers): bytes on every entry.
  readonly key: string
  value: V
}

interface Branch<V> {
  bitmap: number
  slots: Slot<V>[]
  token: EditToken | null
}

interface Collision<V> {
  readonly hash: number
  leaves: Leaf<V>[]
  token: EditToken | null
}

type Slot<V> = Leaf<V> | Branch<V> | Collision<V>

export interface MapRoot<V> {
  readonly node: Branch<V>
  readonly size: number
}

const isLeaf = <V>(slot: Slot<V>): slot is Leaf<V> => 'key' in slot
const isCollision = <V>(slot: Slot<V>): slot is Collision<V> => 'leaves' in slot

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

const EMPTY_BRANCH: Branch<never> = Object.freeze({ bitmap: 0, slots: [], token: null }) as Branch<never>
export const emptyMap = <V>(): MapRoot<V> => ({ node: EMPTY_BRANCH as Branch<V>, size: 0 })

export function mapGet<V>(root: MapRoot<V>, key: string): V | undefined {
  const hash = hashString(key)
  let node: Slot<V> = root.node
  for (let shift = 0; ; shift += BITS) {
    if (isLeaf(node)) return node.key === key ? node.value : undefined
    if (isCollision(node)) {
      for (const leaf of node.leaves) if (leaf.key === key) return leaf.value
      return undefined
    }
    const bit = 1 << ((hash >>> shift) & MASK)
    if ((node.bitmap & bit) === 0) return undefined
    node = node.slots[popcount(node.bitmap & (bit - 1))]
  }
}

export function mapHas<V>(root: MapRoot<V>, key: string): boolean {
  return mapGet(root, key) !== undefined
}

function editable<V>(node: Branch<V>, token: EditToken): Branch<V> {
  return node.token === token ? node : { bitmap: node.bitmap, slots: node.slots.slice(), token }
}

function merge<V>(a: Leaf<V>, aHash: number, b: Leaf<V>, bHash: number, shift: number, token: EditToken): Slot<V> {
  if (shift > MAX_SHIFT) return { hash: aHash, leaves: [a, b], token }
  const ia = (aHash >>> shift) & MASK
  const ib = (bHash >>> shift) & MASK
  if (ia === ib) return { bitmap: 1 << ia, slots: [merge(a, aHash, b, bHash, shift + BITS, token)], token }
  return { bitmap: (1 << ia) | (1 << ib), slots: ia < ib ? [a, b] : [b, a], token }
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
function insert<V>(node: Slot<V>, shift: number, key: string, hash: number, value: V, token: EditToken): Slot<V> {
  if (isLeaf(node)) {
    // A new value keeps the key string the map holds already (the caller's copy can go).
    if (node.key === key) {
      found = true
      previous = node.value
      return { key: node.key, value }
    }
    return merge(node, hashString(node.key), { key, value }, hash, shift, token)
  }
  if (isCollision(node)) {
    const leaves = node.token === token ? node.leaves : node.leaves.slice()
    const index = leaves.findIndex((l) => l.key === key)
    if (index >= 0) {
      found = true
      previous = leaves[index].value
      leaves[index] = { key: leaves[index].key, value }
    } else leaves.push({ key, value })
    if (node.token === token) return node
    return { hash: node.hash, leaves, token }
  }
  const bit = 1 << ((hash >>> shift) & MASK)
  const index = popcount(node.bitmap & (bit - 1))
  const target = editable(node, token)
  if ((node.bitmap & bit) === 0) {
    // Shifted by hand: splice would allocate the (empty) array of what it removed.
    const slots = target.slots
    const leaf: Leaf<V> = { key, value }
    let at = slots.length
    slots.push(leaf)
    for (; at > index; at--) slots[at] = slots[at - 1]
    slots[index] = leaf
    target.bitmap |= bit
  } else {
    target.slots[index] = insert(node.slots[index], shift + BITS, key, hash, value, token)
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

/** `key` removed from the subtree at `node` (at depth `shift`): its replacement slot, or undefined when the slot disappears. */
function remove<V>(node: Slot<V>, shift: number, key: string, hash: number, token: EditToken): Slot<V> | undefined {
  if (isLeaf(node)) {
    if (node.key !== key) return node
    found = true
    previous = node.value
    return undefined
  }
  if (isCollision(node)) {
    const index = node.leaves.findIndex((l) => l.key === key)
    if (index < 0) return node
    found = true
    previous = node.leaves[index].value
    const leaves = node.leaves.filter((l) => l.key !== key)
    return leaves.length === 1 ? leaves[0] : { hash: node.hash, leaves, token }
  }
  const bit = 1 << ((hash >>> shift) & MASK)
  if ((node.bitmap & bit) === 0) return node
  const index = popcount(node.bitmap & (bit - 1))
  const child = remove(node.slots[index], shift + BITS, key, hash, token)
  if (child === node.slots[index]) return node
  const target = editable(node, token)
  if (child === undefined) {
    target.slots.splice(index, 1)
    target.bitmap &= ~bit
    // A branch left holding one leaf collapses into it, keeping the trie canonical.
    if (shift > 0 && target.slots.length === 1 && isLeaf(target.slots[0])) return target.slots[0]
    if (shift > 0 && target.slots.length === 0) return undefined
  } else target.slots[index] = child
  return target
}

export function* mapEntries<V>(root: MapRoot<V>): Generator<[string, V]> {
  const stack: Slot<V>[] = [root.node]
  while (stack.length > 0) {
    const node = stack.pop()!
    if (isLeaf(node)) yield [node.key, node.value]
    else if (isCollision(node)) for (const leaf of node.leaves) yield [leaf.key, leaf.value]
    else for (const slot of node.slots) stack.push(slot)
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
  const collect = (slot: Slot<V>, into: Map<string, V>) => {
    if (isLeaf(slot)) into.set(slot.key, slot.value)
    else if (isCollision(slot)) for (const leaf of slot.leaves) into.set(leaf.key, leaf.value)
    else for (const child of slot.slots) collect(child, into)
  }
  const compare = (x: Slot<V> | undefined, y: Slot<V> | undefined) => {
    if (x === y) return
    if (x !== undefined && y !== undefined && !isLeaf(x) && !isLeaf(y) && !isCollision(x) && !isCollision(y)) {
      for (let i = 0; i < 32; i++) {
        const bit = 1 << i
        const xs = x.bitmap & bit ? x.slots[popcount(x.bitmap & (bit - 1))] : undefined
        const ys = y.bitmap & bit ? y.slots[popcount(y.bitmap & (bit - 1))] : undefined
        if (xs !== ys) compare(xs, ys)
      }
      return
    }
    // Leaves and collisions are small: compare them by content.
    const before = new Map<string, V>()
    const after = new Map<string, V>()
    if (x) collect(x, before)
    if (y) collect(y, after)
    for (const [key, value] of before) {
      const other = after.get(key)
      if (other !== value) visit(key, value, other)
    }
    for (const [key, value] of after) if (!before.has(key)) visit(key, undefined, value)
  }
  compare(a.node, b.node)
}
