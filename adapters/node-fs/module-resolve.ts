/**
 * Node's module resolution (ESM's and CommonJS's) over a view of the file system, so modules that
 * exist only in a workspace resolve as they would on disk: relative and absolute specifiers,
 * packages in node_modules with "exports" (conditions and patterns, via resolve.exports), "main"
 * and index files, "imports" (#internal), self-reference, and the package scope's "type" for the
 * format. Node's own resolver reads the disk through internal bindings, which no fs patch reaches.
 */
import { builtinModules } from 'node:module'
import nodePath from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { exports as resolveExports, imports as resolveImports } from 'resolve.exports'

/** What resolution reads: the view, by host path. */
export interface ModuleView {
  kind(path: string): 'file' | 'dir' | undefined
  read(path: string): string | undefined
  realpath(path: string): string
}

export type Mode = 'import' | 'require'

interface PackageJson {
  name?: unknown
  main?: unknown
  type?: unknown
  exports?: unknown
  imports?: unknown
}

function moduleError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code })
}

const builtins = new Set(builtinModules)

export function isBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || builtins.has(specifier)
}

function readPackage(view: ModuleView, dir: string): PackageJson | undefined {
  const text = view.read(nodePath.join(dir, 'package.json'))
  if (text === undefined) return undefined
  try {
    const parsed = JSON.parse(text) as unknown
    return typeof parsed === 'object' && parsed !== null ? (parsed as PackageJson) : {}
  } catch (error) {
    throw moduleError('ERR_INVALID_PACKAGE_CONFIG', `Invalid package config ${nodePath.join(dir, 'package.json')}: ${(error as Error).message}`)
  }
}

/** The nearest directory at or above `dir` with a package.json (stopping at node_modules, as Node does), and its contents. */
export function packageScope(view: ModuleView, dir: string): { dir: string; json: PackageJson } | undefined {
  for (let at = dir; ; at = nodePath.dirname(at)) {
    if (nodePath.basename(at) === 'node_modules') return undefined
    const json = readPackage(view, at)
    if (json) return { dir: at, json }
    if (at === nodePath.dirname(at)) return undefined
  }
}

/** How Node runs a file: by extension, and for .js by the package scope's "type". */
export function moduleFormat(view: ModuleView, file: string): 'module' | 'commonjs' | 'json' | undefined {
  const extension = nodePath.extname(file)
  if (extension === '.mjs') return 'module'
  if (extension === '.cjs') return 'commonjs'
  if (extension === '.json') return 'json'
  if (extension === '.js' || extension === '') return packageScope(view, nodePath.dirname(file))?.json.type === 'module' ? 'module' : 'commonjs'
  return undefined
}

function conditionsFor(mode: Mode, extra: readonly string[]): string[] {
  return [...new Set(['node', mode, ...extra])]
}

function splitPackage(specifier: string): { name: string; subpath: string } | undefined {
  const parts = specifier.split('/')
  const count = specifier.startsWith('@') ? 2 : 1
  if (parts.length < count || parts.slice(0, count).some((part) => part === '')) return undefined
  const name = parts.slice(0, count).join('/')
  return { name, subpath: parts.length > count ? `./${parts.slice(count).join('/')}` : '.' }
}

export class ModuleResolver {
  constructor(private readonly view: ModuleView) {}

  /**
   * The file `specifier` names from `parent` (a host path), or undefined for a builtin. Throws
   * Node's errors (ERR_MODULE_NOT_FOUND, MODULE_NOT_FOUND, ERR_PACKAGE_PATH_NOT_EXPORTED…).
   */
  resolve(specifier: string, parent: string, mode: Mode, conditions: readonly string[] = []): string | undefined {
    if (isBuiltin(specifier)) return undefined
    const all = conditionsFor(mode, conditions)
    const from = nodePath.dirname(parent)
    let found: string
    if (specifier.startsWith('file:')) found = this.file(fileURLToPath(specifier), specifier, parent, mode)
    else if (specifier.startsWith('/') || specifier.startsWith('./') || specifier.startsWith('../') || specifier === '.' || specifier === '..') {
      const target = mode === 'import' ? fileURLToPath(new URL(specifier, pathToFileURL(parent))) : nodePath.resolve(from, specifier)
      found = this.file(target, specifier, parent, mode)
    } else if (specifier.startsWith('#')) found = this.internal(specifier, parent, mode, all)
    else found = this.bare(specifier, parent, mode, all)
    return this.view.realpath(found)
  }

  /** A path as the specifier gave it: ESM takes it exactly; CommonJS tries extensions and directories. */
  private file(path: string, specifier: string, parent: string, mode: Mode): string {
    if (mode === 'import') {
      const kind = this.view.kind(path)
      if (kind === 'file') return path
      if (kind === 'dir') throw moduleError('ERR_UNSUPPORTED_DIR_IMPORT', `Directory import '${path}' is not supported resolving ES modules imported from ${parent}`)
      throw moduleError('ERR_MODULE_NOT_FOUND', `Cannot find module '${path}' imported from ${parent}`)
    }
    const found = this.loadAsFile(path) ?? this.loadAsDirectory(path)
    if (found) return found
    throw this.requireError(specifier, parent)
  }

  private requireError(specifier: string, parent: string): Error {
    return Object.assign(moduleError('MODULE_NOT_FOUND', `Cannot find module '${specifier}'\nRequire stack:\n- ${parent}`), { requireStack: [parent] })
  }

  private loadAsFile(path: string): string | undefined {
    for (const candidate of [path, `${path}.js`, `${path}.json`, `${path}.node`]) if (this.view.kind(candidate) === 'file') return candidate
    return undefined
  }

  private loadAsDirectory(path: string): string | undefined {
    if (this.view.kind(path) !== 'dir') return undefined
    const main = readPackage(this.view, path)?.main
    if (typeof main === 'string' && main !== '') {
      const target = nodePath.resolve(path, main)
      const found = this.loadAsFile(target) ?? this.index(target)
      if (found) return found
    }
    return this.index(path)
  }

  private index(dir: string): string | undefined {
    for (const name of ['index.js', 'index.json', 'index.node']) if (this.view.kind(nodePath.join(dir, name)) === 'file') return nodePath.join(dir, name)
    return undefined
  }

  /** "imports" of the package scope of `parent`: internal paths, or other packages. */
  private internal(specifier: string, parent: string, mode: Mode, conditions: string[]): string {
    const scope = packageScope(this.view, nodePath.dirname(parent))
    let targets: string[] | void = undefined
    try {
      targets = scope?.json.imports ? resolveImports(scope.json, specifier, { conditions, unsafe: true }) : undefined
    } catch {
      targets = undefined
    }
    if (!scope || !targets || targets.length === 0) {
      throw moduleError('ERR_PACKAGE_IMPORT_NOT_DEFINED', `Package import specifier "${specifier}" is not defined${scope ? ` in package ${nodePath.join(scope.dir, 'package.json')}` : ''} imported from ${parent}`)
    }
    const target = targets[0]
    if (target.startsWith('./')) return this.file(nodePath.resolve(scope.dir, target), specifier, parent, mode === 'import' ? 'import' : 'require')
    return this.bare(target, parent, mode, conditions)
  }

  private bare(specifier: string, parent: string, mode: Mode, conditions: string[]): string {
    const parsed = splitPackage(specifier)
    if (!parsed) throw moduleError('ERR_INVALID_MODULE_SPECIFIER', `Invalid module "${specifier}" is not a valid package name imported from ${parent}`)
    const { name, subpath } = parsed
    // Self-reference: the package a module belongs to, by its own name, through its "exports".
    const scope = packageScope(this.view, nodePath.dirname(parent))
    if (scope && scope.json.name === name && scope.json.exports !== undefined) return this.exported(scope.dir, scope.json, subpath, specifier, parent, mode, conditions)
    for (let dir = nodePath.dirname(parent); ; dir = nodePath.dirname(dir)) {
      if (nodePath.basename(dir) !== 'node_modules') {
        const root = nodePath.join(dir, 'node_modules', name)
        if (this.view.kind(root) === 'dir') {
          const json = readPackage(this.view, root) ?? {}
          if (json.exports !== undefined && json.exports !== null) return this.exported(root, json, subpath, specifier, parent, mode, conditions)
          if (subpath === '.') return this.main(root, json, specifier, parent, mode)
          return this.file(nodePath.join(root, subpath), specifier, parent, mode)
        }
      }
      if (dir === nodePath.dirname(dir)) break
    }
    if (mode === 'require') throw this.requireError(specifier, parent)
    throw moduleError('ERR_MODULE_NOT_FOUND', `Cannot find package '${name}' imported from ${parent}`)
  }

  private exported(root: string, json: PackageJson, subpath: string, specifier: string, parent: string, mode: Mode, conditions: string[]): string {
    let targets: string[] | void = undefined
    try {
      targets = resolveExports(json, subpath, { conditions, unsafe: true })
    } catch {
      targets = undefined
    }
    if (!targets || targets.length === 0) {
      const where = nodePath.join(root, 'package.json')
      const message = subpath === '.' ? `No "exports" main defined in ${where}` : `Package subpath '${subpath}' is not defined by "exports" in ${where}`
      throw moduleError('ERR_PACKAGE_PATH_NOT_EXPORTED', `${message}${mode === 'import' ? ` imported from ${parent}` : ''}`)
    }
    const path = nodePath.resolve(root, targets[0])
    if (this.view.kind(path) === 'file') return path
    if (mode === 'require') throw this.requireError(specifier, parent)
    throw moduleError('ERR_MODULE_NOT_FOUND', `Cannot find module '${path}' imported from ${parent}`)
  }

  /** A package without "exports": its "main" (with Node's legacy fallbacks), else index.js. */
  private main(root: string, json: PackageJson, specifier: string, parent: string, mode: Mode): string {
    if (mode === 'require') {
      const found = this.loadAsDirectory(root)
      if (found) return found
      throw this.requireError(specifier, parent)
    }
    const main = typeof json.main === 'string' && json.main !== '' ? nodePath.resolve(root, json.main) : undefined
    const candidates = main ? [main, `${main}.js`, `${main}.json`, `${main}.node`, `${main}/index.js`, `${main}/index.json`, `${main}/index.node`] : []
    for (const candidate of [...candidates, nodePath.join(root, 'index.js'), nodePath.join(root, 'index.json'), nodePath.join(root, 'index.node')]) {
      if (this.view.kind(candidate) === 'file') return candidate
    }
    throw moduleError('ERR_MODULE_NOT_FOUND', `Cannot find package '${root}' imported from ${parent}`)
  }
}
