/**
 * WebContainers' FileSystemTree as a read-only lower source, so a tree written for
 * `webcontainer.mount(tree)` can seed a workspace unchanged.
 */
import { join } from '../path.js'
import { MemoryTreeBuilder, copyBytes, describe, isBytes, isPlainObject, utf8Bytes } from './fixture.js'
import type { LowerSource } from './source.js'

/** The same shapes as `@webcontainer/api`'s, read-only so theirs are accepted as they are. */
export interface FileSystemTree {
  readonly [name: string]: DirectoryNode | FileNode | SymlinkNode
}

export interface DirectoryNode {
  readonly directory: FileSystemTree
}

export interface FileNode {
  readonly file: { readonly contents: string | Uint8Array }
}

/** WebContainers spell a symlink as a file with a `symlink` target. */
export interface SymlinkNode {
  readonly file: { readonly symlink: string }
}

const LABEL = 'rewindfs: FileSystemTree'

function fail(path: string, problem: string): never {
  throw new TypeError(`${LABEL}: '${path}' ${problem}`)
}

function walk(tree: unknown, dir: string, builder: MemoryTreeBuilder, ancestors: Set<object>): void {
  if (!isPlainObject(tree)) fail(dir, `must be an object of names to nodes, got ${describe(tree)}`)
  // A tree nested inside itself would recurse forever; a shared subtree (a DAG) is fine.
  if (ancestors.has(tree)) fail(dir, 'contains itself (a cycle)')
  ancestors.add(tree)
  for (const name of Object.keys(tree)) {
    const path = join(dir, name)
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      throw new TypeError(`${LABEL}: ${JSON.stringify(name)} in '${dir}' is not a valid file name`)
    }
    const node = tree[name]
    if (!isPlainObject(node)) fail(path, `must be { directory } or { file }, got ${describe(node)}`)
    const isDir = Object.hasOwn(node, 'directory')
    const isFile = Object.hasOwn(node, 'file')
    if (isDir === isFile) fail(path, `must have exactly one of 'directory' and 'file'`)
    if (isDir) {
      builder.dir(path)
      walk(node.directory, path, builder, ancestors)
      continue
    }
    const file = node.file
    if (!isPlainObject(file)) fail(path, `has 'file' set to ${describe(file)}; expected { contents } or { symlink }`)
    const hasContents = Object.hasOwn(file, 'contents')
    if (hasContents === Object.hasOwn(file, 'symlink')) fail(path, `must have exactly one of 'file.contents' and 'file.symlink'`)
    if (hasContents) {
      const contents = file.contents
      if (typeof contents === 'string') builder.file(path, utf8Bytes(contents))
      else if (isBytes(contents)) builder.file(path, copyBytes(contents))
      else fail(path, `has contents that are ${describe(contents)}; expected a string or a Uint8Array`)
    } else {
      const target = file.symlink
      if (typeof target !== 'string') fail(path, `has a symlink target that is ${describe(target)}; expected a string`)
      // Linux refuses both (ENOENT, EINVAL), so no real tree can hold them.
      if (target === '') fail(path, 'has an empty symlink target')
      if (target.includes('\0')) fail(path, 'has a symlink target containing a NUL byte')
      builder.symlink(path, target)
    }
  }
  ancestors.delete(tree)
}

/**
 * A read-only source from a FileSystemTree. Validated and copied at construction (a clear
 * TypeError names the bad path); files 0o644, directories 0o755, symlinks 0o777.
 */
export function fileSystemTreeSource(tree: FileSystemTree): LowerSource {
  const builder = new MemoryTreeBuilder(LABEL)
  walk(tree, '/', builder, new Set())
  return builder.build('FileSystemTree')
}
