/**
 * What the engine's parts share. Checkpoints, restore, undo, side effects, transactions, flushes
 * and the session store each own their state in a module of their own and receive this, not the
 * Workspace: the trees and the journal they change, the queue they take turns on, the store once
 * attached, the alert sink, and the gates every change passes (open, not frozen, in turn).
 */
import type { Collector } from '../blob/collector.js'
import { FsError } from '../errors.js'
import type { FlushBook } from '../flush/book.js'
import type { PinnedLower } from '../flush/pinned-lower.js'
import type { FsOperations } from '../fs/operations.js'
import type { Overlay } from '../overlay.js'
import type { Durability } from './durability.js'
import type { Journal } from './journal.js'
import type { SerialQueue } from './serial.js'
import type { SessionState } from './state.js'

export interface Alert {
  kind: 'undo-failed' | 'uncompensated' | 'safe-stop' | 'integrity'
  message: string
  operations?: string[]
}

/** The parts the Workspace makes for one session. */
export interface EngineParts {
  readonly session: string
  readonly overlay: Overlay
  /** The fs layer: `settle()` before the tree is read; its `frozenReason` is the write gate. */
  readonly ops: FsOperations
  readonly journal: Journal
  readonly state: SessionState
  readonly lower: PinnedLower
  /** The flush ledgers of every session over this lower source. */
  readonly book: FlushBook
  readonly collector: Collector
  /** Recording calls run in turn and resolve once durable (see serial.ts). */
  readonly serial: SerialQueue
  /** Tells the user (WorkspaceOptions.onAlert) when the engine escalates. */
  readonly alert: (alert: Alert) => void
}

export interface EngineContext extends EngineParts {
  /** The store's write-ahead journal once one is attached (session-store.ts); undefined in memory. */
  durability: Durability | undefined
  closed: boolean
  /**
   * A recording call: run in turn with the others and acknowledged once durable (serial.ts), and
   * refused while the workspace is frozen, as fs writes are (checked when its turn comes). A dry
   * run records nothing, so a frozen workspace answers it (restore, undo, flush --dry-run on a
   * read-only store).
   */
  recording<T>(syscall: string, body: () => Promise<T>, dryRun?: boolean): Promise<T>
  /** EROFS naming the reason, while frozen (a safe stop, a read-only or damaged store). */
  assertWritable(syscall: string): void
  assertOpen(): void
  /** Runs `body` so that everything it records lands in the store as one group commit. */
  atomically<T>(body: () => Promise<T>): Promise<T>
  /** Safe stop: keeps every record and refuses writes until unfrozen. */
  freeze(reason: string): void
}

export function engineContext(parts: EngineParts): EngineContext {
  const context: EngineContext = {
    ...parts,
    durability: undefined,
    closed: false,
    recording: (syscall, body, dryRun = false) =>
      parts.serial.call(async () => {
        if (!dryRun) context.assertWritable(syscall)
        return body()
      }),
    assertWritable(syscall) {
      const reason = parts.ops.frozenReason
      if (reason !== undefined) throw new FsError('EROFS', syscall, undefined, undefined, `read-only file system: the workspace is frozen (${reason})`)
    },
    assertOpen() {
      if (context.closed) throw new Error('rewindfs: this workspace is closed')
    },
    atomically: (body) => (context.durability ? context.durability.atomically(body) : body()),
    freeze(reason) {
      parts.ops.frozenReason = reason
      parts.alert({ kind: 'safe-stop', message: reason })
    },
  }
  return context
}
