/**
 * Names both sides share, without zod: the page's side of the worker loads no schema code.
 */
import type { AsyncFsMember } from '../src/async-workspace.js'

export const BAD_CALL = 'ERR_REWINDFS_BAD_CALL'
export const WORKER_CRASHED = 'ERR_REWINDFS_WORKER_CRASHED'
export const WORKER_CLOSED = 'ERR_REWINDFS_WORKER_CLOSED'

/** Node's fs.promises members the worker serves, each run by its synchronous form. */
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
] as const satisfies readonly AsyncFsMember[]

// Compile-time: the list above covers every AsyncFs member.
type Missing = Exclude<AsyncFsMember, (typeof fsMembers)[number]>
const everyMember: Missing extends never ? true : Missing = true
void everyMember

