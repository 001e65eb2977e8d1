/**
 * What the engine's parts share. Checkpoints, restore, undo, side effects, transactions, flushes
 * and the session store each own their state in a module of their own and receive this, not the
 * Workspace: the trees and the journal they change, the queue they take turns on, the options the
 * workspace was opened with, the store once attached, the alert sink, and the gates every change
 * passes (open, not frozen, in turn).
 */
import type { Collector } from '../blob/collector.js'
import { FsError } from '../errors.js'
import type { ExecRunner } from '../exec.js'
import type { Watching } from '../fs/watch.js'
import type { FlushBook } from '../flush/book.js'
import type { PinnedLower } from '../flush/pinned-lower.js'
import type { FsOperations } from '../fs/operations.js'
import type { LowerInput } from '../lower/index.js'
import type { DirNode } from '../layer/nodes.js'
import type { MapRoot } from '../layer/persistent-map.js'
import type { Overlay } from '../overlay.js'
import type { AutoCheckpointOptions } from './auto-checkpoint.js'
import type { Durability } from './durability.js'
import type { Journal } from './journal.js'
import type { TieredRetention } from './retention.js'
import type { SerialQueue } from './serial.js'
import type { JsonValue, SessionState } from './state.js'
import type { Store } from './store.js'
import type { ApprovalHook } from './transaction.js'
import type { Validator } from './validator.js'

/** How a workspace is opened (Workspace.open); the parts read it here when they need it. */
export interface WorkspaceOptions {
  /** The read-only base: a fixture object, a WebContainers FileSystemTree, a sync fs (memfs Volume), or a LowerSource. */
  lower?: LowerInput
  /** File-creation mask, 0o022 by default as on most Linux systems. */
  umask?: number
  /** The largest file a write may make, in bytes (default and maximum 2 GiB − 1, Node's own limit): above it EFBIG, nothing written. */
  maxFileSize?: number
  /** The session's name (checkpoint names are unique per session). */
  session?: string
  retention?: {
    /** Operations kept for undo and history (default 10 000); older ones can no longer be undone. */
    operations?: number
    /**
     * Automatic and turn checkpoints kept per session: the newest N (default 10), or tiered
     * (`{ last: 5, hourly: 24, daily: 7 }`); manual, compact and guard ones are always kept.
     */
    checkpoints?: number | TieredRetention
  }
  /** Validators every transaction runs (see rewindfs/validators). */
  validators?: readonly Validator[]
  /** Approval hook for risky transactions (see TransactionOptions.approve). */
  approve?: ApprovalHook
  /** Automatic checkpoints by risk; `false` turns them off. */
  autoCheckpoint?: AutoCheckpointOptions | false
  /** A durable Store (journal, blobs, metadata); without one the workspace lives in memory. */
  store?: Store
  /** Compact the store's journal once it holds at least this many records past its snapshot, and as many bytes as it (default 10 000). */
  compactEvery?: number
  /**
   * Over a store that reads synchronously (directoryStore; `Store.readBlobSync`): bytes of durable
   * contents kept in memory, least recently used leaving first (default 256 MiB). The rest stays in
   * the store and is read when needed. `ws.storage` reports what is resident.
   */
  cacheBytes?: number
  /** Told when the engine escalates: an undo that failed, a compensation that failed, a safe stop. */
  onAlert?: (alert: Alert) => void
  /** Runs ws.exec's commands (e.g. hostShell() from rewindfs/adapters/node-fs); default: the lower source's own, if it has one. */
  exec?: ExecRunner
  /** Runs fs.watch, fs.promises.watch, fs.watchFile and ws.events 'change' (`watching` from rewindfs/watch); without it they are ENOSYS. */
  watch?: Watching
}

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
  /** Read when used (retention, validators, compactEvery…), as given to Workspace.open. */
  readonly options: WorkspaceOptions
  /**
   * The state the session's history starts from, before its first operation: the lower tree (an
   * empty upper) for a session opened, its source's tree and state at that moment for a fork.
   */
  readonly origin: { readonly root: DirNode; readonly state: MapRoot<JsonValue> }
}

export interface EngineContext extends EngineParts {
  /** The store's write-ahead journal once one is attached (session-store.ts); undefined in memory. */
  durability: Durability | undefined
  closed: boolean
  /** Tells the user (WorkspaceOptions.onAlert) when the engine escalates. */
  alert(alert: Alert): void
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
    alert: (alert) => parts.options.onAlert?.(alert),
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
      context.alert({ kind: 'safe-stop', message: reason })
    },
  }
  return context
}
