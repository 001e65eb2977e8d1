/**
 * Which checkpoint trees and operation changes a lazily opened snapshot has not decoded yet. The
 * core asks (garbage collection roots skip what is still in the store); the lazy history, which a
 * store brings with its durability engine, fills it. Kept apart so asking does not bring the decoder
 * (and zod) into the core entry.
 */
import type { DirRef } from './persistence.js'

/** Checkpoint records whose `root` is still a reference into a history part. */
export const pendingRoots = new WeakMap<object, DirRef>()
/** Operation records whose `changes` are still a span of a history part. */
export const pendingChanges = new WeakMap<object, [number, number]>()

/** Whether a checkpoint's tree was not decoded yet (reading `root` decodes it). */
export function rootPending(record: object): boolean {
  return pendingRoots.has(record)
}

/** Whether an operation's changes were not decoded yet (reading `changes` decodes them). */
export function changesPending(record: object): boolean {
  return pendingChanges.has(record)
}
