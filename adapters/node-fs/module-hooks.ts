/**
 * Module loading over a mounted workspace: Node's ESM loader and CommonJS resolver read the disk
 * through internal bindings that no fs patch reaches, so patchFs also installs module hooks.
 *
 * ESM: `module.register` hooks (on Node 20 they run on a hooks thread) ask this thread, over a
 * MessagePort, to resolve and load; the answers come from the mounted fs here. A CommonJS file in
 * the workspace is loaded as an ES wrapper that require()s it, so its own require() calls run on
 * this thread (source handed to Node's CommonJS translator would send them back through the hooks
 * synchronously, while this thread waits: a deadlock). The hooks thread reads the mounts' roots
 * from shared memory and asks about nothing else, so imports elsewhere cost no round trip and
 * the hooks are inert without a patch. CommonJS: `Module._resolveFilename`
 * resolves requests from, or into, the mount the same way; the loader then reads through the
 * patched fs. Hooks cannot be unregistered on Node 20: once no patch is active they pass every
 * request to Node's own resolution.
 */
import Module, { register } from 'node:module'
import nodePath from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import type { NodeFs } from 'rewindfs'
import { type ModuleView, ModuleResolver, isBuiltin, moduleFormat } from './module-resolve.js'

/** A mount whose modules load through the hooks: its host roots and the fs that reads it. */
export interface ModuleMount {
  readonly roots: readonly string[]
  readonly fs: NodeFs
}

interface Request {
  id: number
  op: 'resolve' | 'load'
  specifier?: string
  parentURL?: string
  conditions?: string[]
  url?: string
}

/** The hooks thread's side (plain JavaScript, loaded from a data: URL so it runs from source and from dist alike). */
const THREAD = `
let port
let shared
let next = 1
const pending = new Map()
const decoder = new TextDecoder()
/** The roots of the active mounts, written by the other thread: nothing else is asked about. */
function roots() {
  const length = Atomics.load(shared.length, 0)
  return length === 0 ? [] : JSON.parse(decoder.decode(shared.bytes.slice(0, length)))
}
function mounted(path, list) {
  return list.some((root) => path === root || path.startsWith(root + '/'))
}
function concerns(specifier, parentURL) {
  const list = roots()
  if (list.length === 0) return false
  if (parentURL?.startsWith('file:') && mounted(decodeURIComponent(new URL(parentURL).pathname), list)) return true
  if (specifier.startsWith('file:')) return mounted(decodeURIComponent(new URL(specifier).pathname), list)
  return specifier.startsWith('/') && mounted(specifier, list)
}
export async function initialize(data) {
  port = data.port
  shared = { length: new Int32Array(data.roots, 0, 1), bytes: new Uint8Array(data.roots, 4) }
  port.on('message', (answer) => {
    pending.get(answer.id)?.(answer)
    pending.delete(answer.id)
  })
  port.unref()
}
// A synchronous resolve (import.meta.resolve) blocks the thread that answers: after a while, Node's own resolution runs.
const ask = (request) => new Promise((resolve) => {
  const id = next++
  const timer = setTimeout(() => { pending.delete(id); resolve({}) }, 2000)
  pending.set(id, (answer) => { clearTimeout(timer); resolve(answer) })
  port.postMessage({ ...request, id })
})
function failure(error) {
  return Object.assign(new Error(error.message), { code: error.code })
}
export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith('node:') || specifier.startsWith('data:') || !concerns(specifier, context.parentURL)) return nextResolve(specifier, context)
  const answer = await ask({ op: 'resolve', specifier, parentURL: context.parentURL, conditions: [...(context.conditions ?? [])] })
  if (answer.error) throw failure(answer.error)
  if (answer.url) return { url: answer.url, format: answer.format, shortCircuit: true }
  return nextResolve(specifier, context)
}
export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !concerns(url)) return nextLoad(url, context)
  const answer = await ask({ op: 'load', url })
  if (answer.error) throw failure(answer.error)
  if (answer.format) return { format: answer.format, source: answer.source, shortCircuit: true }
  return nextLoad(url, context)
}
`

const mounts: ModuleMount[] = []
let port: MessagePort | undefined
/** The active mounts' roots as JSON, for the hooks thread to read synchronously: [length: Int32][bytes]. */
const ROOTS_BYTES = 64 * 1024
let shared: { buffer: SharedArrayBuffer; length: Int32Array; bytes: Uint8Array } | undefined

function publishRoots(): void {
  if (!shared) return
  let json = new TextEncoder().encode(JSON.stringify([...new Set(mounts.flatMap((mount) => mount.roots))]))
  // Too many roots to share: the hooks thread then asks about everything (the answer is still right).
  if (json.byteLength > ROOTS_BYTES - 4) json = new TextEncoder().encode('["/"]')
  Atomics.store(shared.length, 0, 0)
  shared.bytes.set(json)
  Atomics.store(shared.length, 0, json.byteLength)
}
let lexer: typeof import('cjs-module-lexer') | undefined
const originalResolveFilename = (Module as unknown as { _resolveFilename: ResolveFilename })._resolveFilename
type ResolveFilename = (request: string, parent: { filename?: string | null } | undefined, isMain?: boolean, options?: unknown) => string

function within(path: string): ModuleMount | undefined {
  return mounts.findLast((mount) => mount.roots.some((root) => path === root || path.startsWith(root + '/')))
}

function viewOf(fs: NodeFs): ModuleView {
  return {
    kind(path) {
      const stat = fs.statSync(path, { throwIfNoEntry: false })
      return stat?.isFile() ? 'file' : stat?.isDirectory() ? 'dir' : undefined
    },
    read(path) {
      try {
        return fs.readFileSync(path, 'utf8')
      } catch {
        return undefined
      }
    },
    realpath(path) {
      try {
        return fs.realpathSync(path)
      } catch {
        return path
      }
    },
  }
}

function errorRecord(error: unknown): { code?: string; message: string } {
  const { code, message } = error as { code?: string; message?: string }
  return { code, message: message ?? String(error) }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/** The names Node's lexer finds as a CommonJS file's exports, following `module.exports = require(…)` as Node does. */
function exportNames(fs: NodeFs, file: string, seen = new Set<string>()): string[] {
  if (seen.has(file) || seen.size > 32) return []
  seen.add(file)
  try {
    const { exports, reexports } = lexer!.parse(fs.readFileSync(file, 'utf8'))
    const resolver = new ModuleResolver(viewOf(fs))
    const followed = reexports.flatMap((specifier) => {
      try {
        const target = resolver.resolve(specifier, file, 'require')
        return target && moduleFormat(viewOf(fs), target) === 'commonjs' ? exportNames(fs, target, seen) : []
      } catch {
        return []
      }
    })
    return [...exports, ...followed]
  } catch {
    return []
  }
}

/** An ES module that require()s a CommonJS file of the workspace, with the names Node's lexer finds as named exports. */
async function wrapper(fs: NodeFs, file: string): Promise<string> {
  if (!lexer) {
    lexer = await import('cjs-module-lexer')
    await lexer.init()
  }
  const unique = [...new Set(exportNames(fs, file).filter((name) => name !== 'default' && IDENTIFIER.test(name)))]
  return [
    `import { createRequire } from 'node:module'`,
    `const exported = createRequire(${JSON.stringify(pathToFileURL(file).href)})(${JSON.stringify(file)})`,
    `export default exported`,
    ...(unique.length > 0 ? [`export const { ${unique.join(', ')} } = exported`] : []),
  ].join('\n')
}

async function answer(request: Request): Promise<Record<string, unknown>> {
  try {
    if (request.op === 'resolve') {
      const specifier = request.specifier ?? ''
      if (isBuiltin(specifier)) return {}
      const parent = request.parentURL?.startsWith('file:') ? fileURLToPath(request.parentURL) : undefined
      const target = specifier.startsWith('file:') ? fileURLToPath(specifier) : specifier.startsWith('/') ? specifier : undefined
      const mount = (parent && within(parent)) ?? (target && within(nodePath.resolve(target))) ?? undefined
      if (!mount) return {}
      const resolver = new ModuleResolver(viewOf(mount.fs))
      const file = resolver.resolve(specifier, parent ?? nodePath.join(process.cwd(), '[eval]'), 'import', request.conditions ?? [])
      if (file === undefined) return {}
      return { url: pathToFileURL(file).href, format: moduleFormat(viewOf(mount.fs), file) }
    }
    const file = fileURLToPath(request.url ?? '')
    const mount = within(file)
    if (!mount) return {}
    const view = viewOf(mount.fs)
    const format = moduleFormat(view, file)
    if (format === undefined) return {}
    if (format === 'commonjs') return { format: 'module', source: await wrapper(mount.fs, file) }
    const source = mount.fs.readFileSync(file, 'utf8')
    return { format, source }
  } catch (error) {
    return { error: errorRecord(error) }
  }
}

function ensureRegistered(): void {
  if (port) return
  const channel = new MessageChannel()
  port = channel.port1
  port.on('message', (request: Request) => {
    void answer(request).then((reply) => port!.postMessage({ ...reply, id: request.id }))
  })
  port.unref()
  const buffer = new SharedArrayBuffer(ROOTS_BYTES)
  shared = { buffer, length: new Int32Array(buffer, 0, 1), bytes: new Uint8Array(buffer, 4) }
  register(`data:text/javascript,${encodeURIComponent(THREAD)}`, { data: { port: channel.port2, roots: buffer }, transferList: [channel.port2] })
}

/** CommonJS: requests from a module in a mount, or naming a path in one, resolve over the mounted fs. */
function resolveFilename(this: unknown, request: string, parent: { filename?: string | null } | undefined, isMain?: boolean, options?: unknown): string {
  const from = typeof parent?.filename === 'string' ? parent.filename : undefined
  const target = nodePath.isAbsolute(request) ? nodePath.resolve(request) : undefined
  const mount = (from && within(from)) ?? (target && within(target)) ?? undefined
  if (!mount || isBuiltin(request) || options !== undefined) return originalResolveFilename.call(this, request, parent, isMain, options)
  const file = new ModuleResolver(viewOf(mount.fs)).resolve(request, from ?? nodePath.join(process.cwd(), '[eval]'), 'require')
  return file ?? originalResolveFilename.call(this, request, parent, isMain, options)
}

/** Routes module loading of `mount` through its fs until the returned undo runs. */
export function installModuleHooks(mount: ModuleMount): () => void {
  ensureRegistered()
  mounts.push(mount)
  publishRoots()
  ;(Module as unknown as { _resolveFilename: ResolveFilename })._resolveFilename = resolveFilename
  return () => {
    const at = mounts.lastIndexOf(mount)
    if (at >= 0) mounts.splice(at, 1)
    publishRoots()
    if (mounts.length === 0) (Module as unknown as { _resolveFilename: ResolveFilename })._resolveFilename = originalResolveFilename
  }
}
