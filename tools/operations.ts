/**
 * How the tools see the journal: the seed's operation types over the engine's finer ones, the
 * config-file rule, and operations as the model reads them (snake_case, ISO times).
 */
import type { Operation, OperationType } from '../src/engine/journal.js'
import { absolute, basename, normalize } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'
import { ToolFailure } from './result.js'
import type { ToolOperationType } from './schemas.js'

/** Engine operation types behind each of the seed's types ('config_change' goes by path). */
const ENGINE_TYPES: Record<'file_edit' | 'file_create' | 'file_delete' | 'restore', readonly OperationType[]> = {
  file_create: ['file_create', 'copy', 'symlink', 'link', 'mkdir'],
  file_edit: ['file_edit', 'truncate', 'chmod'],
  file_delete: ['file_delete', 'rmdir'],
  restore: ['restore', 'reset'],
}

/** Operations that take the whole workspace (or many paths) back: undoing one needs operation_type 'restore'. */
export function isRollback(operation: Operation): boolean {
  return operation.type === 'restore' || operation.type === 'reset'
}

/** Paths listed at most per operation in a result; paths_total gives the count when there are more. */
const PATHS_LISTED = 10

/** `undone` is set on history entries that were undone (they stay in history). */
export type HistoryEntry = Operation & { readonly undone?: boolean }

export function engineTypes(type: ToolOperationType): readonly OperationType[] | undefined {
  return type === 'all' || type === 'config_change' ? undefined : ENGINE_TYPES[type]
}

/** Configuration files by name: .json, .yaml, .yml, .toml, .ini, .conf, and .env files (.env, .env.local, prod.env). */
export function isConfigPath(path: string): boolean {
  const name = basename(path).toLowerCase()
  return /\.(json|ya?ml|toml|ini|conf|env)$/.test(name) || name === '.env' || name.startsWith('.env.')
}

/** The seed's type for an operation, or the engine's when none fits (rename, restore…). */
function seedType(type: OperationType): string {
  for (const [seed, types] of Object.entries(ENGINE_TYPES)) if (types.includes(type)) return seed
  return type
}

export function matchesType(operation: Operation, type: ToolOperationType): boolean {
  if (type === 'config_change') return operation.paths.some(isConfigPath)
  const types = engineTypes(type)
  return types === undefined || types.includes(operation.type)
}

/** The path filter of ws.undo and ws.history: the path itself or anything under it. */
export function under(path: string, targets: readonly string[]): boolean {
  return targets.some((target) => target === '/' || path === target || path.startsWith(target.endsWith('/') ? target : target + '/'))
}

export function resolvePath(ws: Workspace, path: string): string {
  return normalize(absolute(path, ws.cwd()))
}

export function isoTime(ms: number): string {
  return new Date(ms).toISOString()
}

/** ISO 8601 text or epoch milliseconds as milliseconds; refuses anything else with a clear message. */
export function toMilliseconds(value: string | number, field: string): number {
  const ms = typeof value === 'number' ? value : Date.parse(value)
  // Past what a Date holds (±8.64e15 ms) a time has no ISO form to report.
  if (Number.isNaN(new Date(ms).getTime())) throw new ToolFailure('EINVALIDINPUT', `${field}: '${value}' is not a time (use ISO 8601, e.g. 2024-07-15T10:30:00Z, or epoch milliseconds)`)
  return ms
}

export function describe(operation: Operation): string {
  if (operation.description !== undefined) return operation.description
  const shown = operation.paths.slice(0, 3).join(' -> ')
  return `${operation.type.replace('_', ' ')} ${shown}${operation.paths.length > 3 ? ` and ${operation.paths.length - 3} more paths` : ''}`
}

export function operationSummary(operation: HistoryEntry) {
  return {
    operation_id: operation.id,
    type: seedType(operation.type),
    operation: operation.type,
    file_path: operation.paths[0] ?? null,
    paths: operation.paths.slice(0, PATHS_LISTED),
    ...(operation.paths.length > PATHS_LISTED ? { paths_total: operation.paths.length } : {}),
    config_change: operation.paths.some(isConfigPath),
    description: describe(operation),
    timestamp: isoTime(operation.time),
    undone: operation.undone === true,
    ...(operation.group !== undefined ? { group: operation.group } : {}),
    ...(operation.turn !== undefined ? { turn: operation.turn } : {}),
  }
}

/** Sequence number of the newest operation, to tell which operations a tool call recorded. */
export function lastSeq(ws: Workspace): number {
  return ws.history({ limit: 1 })[0]?.seq ?? 0
}

export function recordedSince(ws: Workspace, seq: number): string[] {
  const ids: string[] = []
  for (const operation of ws.history({ limit: 64 })) {
    if (operation.seq <= seq) break
    ids.unshift(operation.id)
  }
  return ids
}
