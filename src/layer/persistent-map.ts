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
  readonly key: string
  readonly hash: number
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

function merge<V>(a: Leaf<V>, b: Leaf<V>, shift: number, token: EditToken): Slot<V> {
  if (shift > MAX_SHIFT) return { hash: a.hash, leaves: [a, b], token }
  const ia = (a.hash >>> shift) & MASK
  const ib = (b.hash >>> shift) & MASK
  if (ia === ib) return { bitmap: 1 << ia, slots: [merge(a, b, shift + BITS, token)], token }
  return { bitmap: (1 << ia) | (1 << ib), slots: ia < ib ? [a, b] : [b, a], token }
}

/** Whether the last insert added a key (rather than replacing a value): no closure per mapSet. */
let added = false

/** Returns the new root; `root` stays valid unless its nodes carry `token`. */
export function mapSet<V>(root: MapRoot<V>, key: string, value: V, token: EditToken): MapRoot<V> {
  added = false
  const node = insert(root.node, 0, key, hashString(key), value, token) as Branch<V>
  const size = added ? root.size + 1 : root.size
  if (node === root.node && size === root.size) return root
  return { node, size }
}

/** `key` set to `value` in the subtree at `node` (at depth `shift`): the subtree's new node (itself when it was editable). */
function insert<V>(node: Slot<V>, shift: number, key: string, hash: number, value: V, token: EditToken): Slot<V> {
  if (isLeaf(node)) {
    // A new value keeps the key string the map holds already (the caller's copy can go).
    if (node.key === key) return { key: node.key, hash, value }
    added = true
    return merge(node, { key, hash, value }, shift, token)
  }
  if (isCollision(node)) {
    const leaves = node.token === token ? node.leaves : node.leaves.slice()
    const index = leaves.findIndex((l) => l.key === key)
    if (index >= 0) leaves[index] = { key: leaves[index].key, hash, value }
    else {
      leaves.push({ key, hash, value })
      added = true
    }
    if (node.token === token) return node
    return { hash: node.hash, leaves, token }
  }
  const bit = 1 << ((hash >>> shift) & MASK)
  const index = popcount(node.bitmap & (bit - 1))
  const target = editable(node, token)
  if ((node.bitmap & bit) === 0) {
    added = true
    // Shifted by hand: splice would allocate the (empty) array of what it removed.
    const slots = target.slots
    const leaf: Leaf<V> = { key, hash, value }
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
  const hash = hashString(key)
  let removed = false
  // Returns the replacement slot, or undefined when the slot disappears.
  const remove = (node: Slot<V>, shift: number): Slot<V> | undefined => {
    if (isLeaf(node)) {
      if (node.key !== key) return node
      removed = true
      return undefined
    }
    if (isCollision(node)) {
      const leaves = node.leaves.filter((l) => l.key !== key)
      if (leaves.length === node.leaves.length) return node
      removed = true
      return leaves.length === 1 ? leaves[0] : { hash: node.hash, leaves, token }
    }
    const bit = 1 << ((hash >>> shift) & MASK)
    if ((node.bitmap & bit) === 0) return node
    const index = popcount(node.bitmap & (bit - 1))
    const child = remove(node.slots[index], shift + BITS)
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
  const node = (remove(root.node, 0) as Branch<V> | undefined) ?? (EMPTY_BRANCH as Branch<V>)
  if (!removed) return root
  return { node, size: root.size - 1 }
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
