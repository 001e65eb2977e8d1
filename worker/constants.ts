/**
 * Names both sides share, without zod: the page's side of the worker loads no schema code.
 */
import type { AsyncFsMember } from '../src/async-workspace.js'
import type { WorkspaceEventType } from '../src/engine/events.js'

export const BAD_CALL = 'ERR_REWINDFS_BAD_CALL'
export const WORKER_CRASHED = 'ERR_REWINDFS_WORKER_CRASHED'
export const WORKER_CLOSED = 'ERR_REWINDFS_WORKER_CLOSED'

/**
 * fs calls that name paths: Node's fs.promises members, and `exists`. The worker runs each by its
 * synchronous form; a batch names them by their index here.
 */
export const fsMembers = [
  'access',
  'appendFile',
  'chmod',
  'chown',
  'copyFile',
  'cp',
  'lchown',
  'lstat',
  'lutimes',
  'mkdir',
  'mkdtemp',
  'readdir',
  'readFile',
  'readlink',
  'realpath',
  'rename',
  'rm',
  'rmdir',
  'stat',
  'symlink',
  'truncate',
  'unlink',
  'utimes',
  'writeFile',
  'lchmod',
  'link',
  'statfs',
  'exists',
] as const satisfies readonly (AsyncFsMember | 'exists')[]

// Compile-time: the list above covers every AsyncFs member.
type Missing = Exclude<AsyncFsMember, (typeof fsMembers)[number]>
const everyMember: [Missing] extends [never] ? true : Missing = true
void everyMember

/** FileHandle methods, run on the worker's descriptor by the matching fd call (read → readSync(fd, …)). */
export const fileMembers = [
  'read',
  'write',
  'readv',
  'writev',
  'readFile',
  'writeFile',
  'appendFile',
  'stat',
  'truncate',
  'chmod',
  'chown',
  'utimes',
  'sync',
  'datasync',
  'close',
] as const
export type FileMember = (typeof fileMembers)[number]

/** ws.events types a page can listen for across the channel. */
export const eventTypes = ['operation', 'undo', 'redo', 'change', 'checkpoint', 'restore', 'reload', 'writer', 'store'] as const satisfies readonly WorkspaceEventType[]

// Compile-time: the list above covers every event type.
type MissingEvent = Exclude<WorkspaceEventType, (typeof eventTypes)[number]>
const everyEvent: [MissingEvent] extends [never] ? true : MissingEvent = true
void everyEvent

/** Marks the worker's event messages (watch events, ws.events) apart from comlink's answers on the same channel. */
export const EVENTS_MESSAGE = 'rewindfs:events'
/** What serve() posts once it listens: a page whose first call the worker's scope dropped (a Web Worker before serve()) learns it serves. */
export const SERVING_MESSAGE = 'rewindfs:serving'
