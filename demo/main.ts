/**
 * The demo page: the engine runs in a Web Worker (./worker.ts) over the seed project in an IndexedDB
 * tree, with its journal in the OPFS store where the browser has one (IndexedDB otherwise), so every
 * change and checkpoint survives a reload. A second tab follows the first: it shows the first tab's
 * changes as they commit, and takes over writing when the first tab closes; "Start over" in any tab
 * has every tab let go of the store before it is deleted, and all of them reload onto the seed
 * project. Every action disables the buttons (body[data-busy]) until the views are fresh again.
 */
import { removeOpfsStore } from '../adapters/opfs/index.js'
import type { Change } from '../src/diff.js'
import type { Operation } from '../src/engine/journal.js'
import type { Checkpoint } from '../src/workspace.js'
import { openWorkerWorkspace, type WorkerWorkspace } from '../worker/index.js'
import { type Log, badConfigStory, migrationStory } from './agent.js'
import { PROJECT_DATABASE, STORE_DATABASE, seedProject } from './seed.js'
import { type TreeEntry, listTree } from './tree.js'

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T

const view = {
  status: $('status'),
  storeName: $('store-name'),
  tree: $<HTMLUListElement>('tree'),
  path: $<HTMLInputElement>('path'),
  editor: $<HTMLTextAreaElement>('editor'),
  message: $('message'),
  previewTitle: $('preview-title'),
  previewChanges: $('preview-changes'),
  restore: $<HTMLButtonElement>('restore'),
  checkpointName: $<HTMLInputElement>('checkpoint-name'),
  timeline: $<HTMLOListElement>('timeline'),
  agentLog: $<HTMLOListElement>('agent-log'),
}

function element<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> & { dataset?: Record<string, string> } = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const { dataset, ...rest } = props
  const node = Object.assign(document.createElement(tag), rest)
  if (dataset) Object.assign(node.dataset, dataset)
  node.append(...children)
  return node
}

let ws: WorkerWorkspace
/** The checkpoint the preview shows, which the Restore button restores. */
let previewed: Checkpoint | undefined
/** The file in the editor as the workspace last gave it: while the text is untouched, it follows restores and undos. */
let opened: { path: string; text: string } | undefined
/** This tab is starting over, or following another tab's start over (its workspace closes): the page reloads next. */
let leaving = false

/** One line per validation failure, or the error's message (Node-shaped errors start with their code). */
function describe(error: unknown): string {
  const { failures, message } = (error ?? {}) as { failures?: { path: string; validator: string; message: string }[]; message?: string }
  if (Array.isArray(failures)) return ['Refused, nothing was written:', ...failures.map((f) => `${f.path} (${f.validator}): ${f.message}`)].join('\n')
  return typeof message === 'string' ? message : String(error)
}

function say(text: string, kind: 'ok' | 'error'): void {
  view.message.textContent = text
  view.message.className = kind
}

/** Runs an action with the buttons off, shows its outcome, makes it durable and redraws. */
async function act(action: () => Promise<string | undefined>): Promise<void> {
  document.body.dataset.busy = 'true'
  try {
    const outcome = await action()
    await ws.sync()
    if (!leaving) say(outcome ?? '', 'ok')
  } catch (error) {
    // A start over closed the workspace meanwhile: the page is about to reload, and says so.
    if (!leaving) say(describe(error), 'error')
  } finally {
    try {
      if (!leaving) await refresh()
    } catch (error) {
      if (!leaving) say(describe(error), 'error')
    }
    if (!leaving) document.body.dataset.busy = 'false'
  }
}

function renderTree(entries: readonly TreeEntry[]): void {
  view.tree.replaceChildren(
    ...entries.map((entry) => {
      const depth = entry.path.split('/').length - 2
      const name = entry.path.slice(entry.path.lastIndexOf('/') + 1) + (entry.entry === 'dir' ? '/' : '')
      const badge = element('span', { className: `badge ${entry.layer}`, textContent: entry.layer === 'upper' ? `upper · ${entry.change}` : entry.layer })
      // Files open in the editor; directories and symlinks are only listed.
      const row = entry.entry === 'file' ? element('button', { type: 'button', title: entry.path }) : element('span', { className: 'row-label', title: entry.path })
      row.append(element('span', { className: 'name', textContent: name }), badge)
      row.style.paddingLeft = `${4 + depth * 14}px`
      if (entry.entry === 'file') row.addEventListener('click', () => void act(() => openFile(entry)))
      const item = element('li', { dataset: { path: entry.path, layer: entry.layer, entry: entry.entry } }, row)
      if (entry.path === view.path.value) item.classList.add('selected')
      return item
    }),
  )
}

async function openFile(entry: TreeEntry): Promise<string | undefined> {
  view.path.value = entry.path
  view.editor.value = entry.layer === 'whiteout' ? '' : await ws.fs.readFile(entry.path, 'utf8')
  opened = { path: entry.path, text: view.editor.value }
  if (entry.layer === 'whiteout') return `${entry.path} is deleted (a whiteout hides the lower file): restore a checkpoint to bring it back, or save to write it again`
  return undefined
}

/** Shows the open file as it is now, unless it has edits not saved yet (those are never thrown away). */
async function followEditor(): Promise<void> {
  if (!opened || view.path.value !== opened.path || view.editor.value !== opened.text) return
  const text = await ws.fs.readFile(opened.path, 'utf8').catch((error: { code?: string }) => {
    if (error.code === 'ENOENT') return ''
    throw error
  })
  view.editor.value = text
  opened = { path: opened.path, text }
}

function time(ms: number): string {
  return new Date(ms).toLocaleTimeString()
}

function operationItem(op: Operation, undone: boolean): HTMLLIElement {
  const paths = op.paths.length > 3 ? `${op.paths.slice(0, 3).join(' ')} +${op.paths.length - 3}` : op.paths.join(' ')
  const label = op.description ?? op.type.replaceAll('_', ' ')
  return element(
    'li',
    { className: undone ? 'operation undone' : 'operation', dataset: { type: op.type } },
    element('span', { textContent: undone ? `${label} (undone)` : label }),
    element('span', { className: 'paths', textContent: paths }),
    element('span', { className: 'tag', textContent: time(op.time) }),
  )
}

function checkpointItem(checkpoint: Checkpoint): HTMLLIElement {
  const tags = [checkpoint.kind, checkpoint.superseded ? 'superseded' : '', checkpoint.broken ? 'broken' : ''].filter(Boolean).join(' · ')
  const preview = element('button', { type: 'button', textContent: 'Preview', title: `Preview a restore to ${checkpoint.name}` })
  preview.addEventListener('click', () => void act(() => showPreview(checkpoint)))
  return element(
    'li',
    { className: 'checkpoint', dataset: { name: checkpoint.name, id: checkpoint.id } },
    element('span', { textContent: checkpoint.name }),
    element('span', { className: 'tag', textContent: `${tags} · ${time(checkpoint.createdAt)}` }),
    preview,
  )
}

/**
 * Operations and checkpoints, newest first. Checkpoints and operations count their seq apart, so a
 * checkpoint goes just above the last operation it saw (checkpointInfo), or by time when that is
 * unknown (a broken checkpoint's info cannot be read).
 */
function renderTimeline(operations: readonly Operation[], undone: ReadonlySet<string>, checkpoints: readonly { checkpoint: Checkpoint; lastOperation?: Operation }[]): void {
  const seen = (checkpoint: Checkpoint, lastOperation?: Operation) => lastOperation?.seq ?? operations.find((op) => op.time <= checkpoint.createdAt)?.seq ?? 0
  const rows = [
    ...operations.map((op) => ({ order: op.seq, node: operationItem(op, undone.has(op.id)) })),
    ...checkpoints.map(({ checkpoint, lastOperation }) => ({ order: seen(checkpoint, lastOperation) + 0.5, node: checkpointItem(checkpoint) })),
  ]
  rows.sort((a, b) => b.order - a.order)
  view.timeline.replaceChildren(...rows.map((row) => row.node))
}

function patchView(patch: string): HTMLPreElement {
  const lines = patch.split('\n').map((line) => {
    const kind = line.startsWith('@@') ? 'hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'remove' : ''
    return element('span', { className: kind, textContent: `${line}\n` })
  })
  return element('pre', { className: 'patch' }, ...lines)
}

function renderPreview(checkpoint: Checkpoint | undefined, changes: readonly Change[]): void {
  view.restore.disabled = checkpoint === undefined
  if (!checkpoint) {
    view.previewTitle.textContent = 'Pick a checkpoint in the timeline and press “Preview” to see what a restore would change.'
    view.previewChanges.replaceChildren()
    return
  }
  view.previewTitle.textContent =
    changes.length === 0 ? `Restore to ${checkpoint.name}: nothing would change` : `Restore to ${checkpoint.name} would change ${changes.length} path${changes.length === 1 ? '' : 's'}:`
  view.previewChanges.replaceChildren(
    ...changes.map((change) =>
      element('div', { className: 'change', dataset: { path: change.path, type: change.type } }, element('h3', { textContent: `${change.type} ${change.path}` }), ...(change.patch ? [patchView(change.patch)] : [])),
    ),
  )
}

async function showPreview(checkpoint: Checkpoint): Promise<undefined> {
  const report = await ws.restore(checkpoint.id, { dryRun: true })
  previewed = checkpoint
  renderPreview(checkpoint, report.changes)
  return undefined
}

async function refresh(): Promise<void> {
  const [entries, operations, checkpoints] = await Promise.all([listTree(ws), ws.history({ limit: 40 }), ws.checkpoints()])
  const placed = await Promise.all(
    checkpoints.map(async (checkpoint) => ({ checkpoint, lastOperation: (await ws.checkpointInfo(checkpoint.id).catch(() => undefined))?.lastOperation })),
  )
  // history() does not say which operations were undone; only restores can be here (undo-restore).
  const restores = await Promise.all(operations.filter((op) => op.type === 'restore').map((op) => ws.operation(op.id)))
  const undone = new Set(restores.flatMap((op) => (op?.undone ? [op.id] : [])))
  renderTree(entries)
  renderTimeline(operations, undone, placed)
  await followEditor()
}

const agentLog: Log = (kind, text) => {
  view.agentLog.append(element('li', { className: kind, textContent: text }))
}

function on(id: string, action: () => Promise<string | undefined>): void {
  $(id).addEventListener('click', () => void act(action))
}

function wire(): void {
  const save = async () => {
    const path = view.path.value.trim()
    if (!path.startsWith('/')) throw new Error('The path must be absolute, e.g. /project/notes.md')
    const text = view.editor.value
    await ws.transaction(async (fs) => {
      await fs.promises.mkdir(path.slice(0, path.lastIndexOf('/')) || '/', { recursive: true })
      await fs.promises.writeFile(path, text)
    }, { label: `edit ${path}` })
    opened = { path, text }
    return `Saved ${path}`
  }
  on('save', save)
  view.editor.addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === 's') {
      event.preventDefault()
      void act(save)
    }
  })
  on('delete', async () => {
    const path = view.path.value.trim()
    await ws.fs.rm(path, { recursive: true })
    view.editor.value = ''
    opened = { path, text: '' }
    return `Deleted ${path}`
  })
  on('checkpoint', async () => {
    const name = view.checkpointName.value.trim()
    const checkpoint = await ws.checkpoint(name === '' ? {} : { name })
    view.checkpointName.value = ''
    return `Checkpoint ${checkpoint.name} made`
  })
  on('restore', async () => {
    if (!previewed) return 'Preview a checkpoint first'
    const target = previewed
    const report = await ws.restore(target.id)
    previewed = undefined
    renderPreview(undefined, [])
    return `Restored to ${target.name}: ${report.changes.length} path${report.changes.length === 1 ? '' : 's'} changed back`
  })
  on('undo-restore', async () => {
    const { undone, redone } = await ws.undoRestore()
    return undone ? 'The last restore is undone (press again to re-apply it)' : redone ? 'The restore is applied again' : 'There is no restore to undo'
  })
  on('agent-config', async () => {
    const { refused } = await badConfigStory(ws, agentLog)
    return refused ? 'Story 1: the validator refused the bad config; nothing was written' : undefined
  })
  on('agent-migration', async () => {
    const { failedAt, restoredTo } = await migrationStory(ws, agentLog)
    return `Story 2: the migration failed at step ${failedAt}; restored to ${restoredTo}`
  })
  $('start-over').addEventListener('click', () => void startOver())
}

// ---- Start over, with other tabs open --------------------------------------------------------
//
// Every tab holds OPEN_LOCK (shared) while its workspace is open. "Start over" tells the other tabs
// (TABS), which close their workspaces, let go of the lock and wait; it closes its own, takes the lock
// exclusively (so no demo tab holds the store, nor is promoted to write it, while it is deleted),
// deletes the store and the seed project, tells the tabs it is done, and every tab reloads onto the
// seed project. Refused (the store held for writing by something else, or a tab that does not let
// go), nothing is deleted and the message says why after the reload.

/** The demo's tabs: 'start-over' asks them to let go of the store; 'done' and 'refused' say how it ended. */
const TABS = typeof BroadcastChannel === 'function' ? new BroadcastChannel('rewindfs-demo') : undefined
const OPEN_LOCK = 'rewindfs-demo:open'
/** Held while a tab seeds the project and opens its workspace: two tabs starting together seed it once, and the second opens on the first's store. */
const START_LOCK = 'rewindfs-demo:start'
/** How long the other tabs get to let go of the store before "Start over" gives up. */
const LET_GO_MS = 10_000
/** How long a tab waits for the one starting over before it reloads anyway. */
const FOLLOW_MS = 30_000
/** A message shown after the reload (sessionStorage: this tab only). */
const FLASH = 'rewindfs-demo:message'

let releaseOpen: (() => void) | undefined

/** Holds the Web Lock `name` until the returned function is called (none without Web Locks). */
function hold(name: string, mode: LockMode, signal?: AbortSignal): Promise<() => void> {
  if (!navigator.locks) return Promise.resolve(() => undefined)
  return new Promise((granted, refused) => {
    navigator.locks.request(name, { mode, ...(signal ? { signal } : {}) }, () => new Promise<void>((release) => granted(release))).catch(refused)
  })
}

/** Closes the workspace (its store's writer lock or place in line goes with it) and lets go of OPEN_LOCK. */
async function letGo(): Promise<void> {
  try {
    await ws.close()
  } finally {
    releaseOpen?.()
    releaseOpen = undefined
  }
}

async function startOver(): Promise<void> {
  if (leaving) return
  leaving = true
  document.body.dataset.busy = 'true'
  say('Starting over: the other tabs of the demo let go of the store…', 'ok')
  TABS?.postMessage({ kind: 'start-over' })
  let outcome: 'done' | 'refused' = 'refused'
  let removed = false
  try {
    await letGo()
    const release = await hold(OPEN_LOCK, 'exclusive', AbortSignal.timeout(LET_GO_MS)).catch((error: unknown) => {
      if ((error as { name?: string })?.name !== 'TimeoutError') throw error
      throw new Error(`another tab of the demo did not let go of the store within ${LET_GO_MS / 1000} s`)
    })
    try {
      // The store first: the one removal that is refused while something holds it, before anything else is deleted.
      if (hasOpfs()) await removeOpfsStore(STORE_DATABASE)
      removed = true
      for (const name of [STORE_DATABASE, PROJECT_DATABASE]) await deleted(name)
      outcome = 'done'
    } finally {
      release()
    }
  } catch (error) {
    const what = removed ? 'Start over was cut short (the store is deleted, the seed project may not be)' : 'Start over did not delete anything'
    sessionStorage.setItem(FLASH, `${what}: ${describe(error)}. Close the other tabs of this demo (or whatever else has its store open) and try again.`)
  } finally {
    TABS?.postMessage({ kind: outcome })
    location.reload()
  }
}

/** Another tab starts over: let go of the store, wait until it is done (or gives up), reload. */
function followStartOver(): void {
  if (leaving) return
  leaving = true
  document.body.dataset.busy = 'true'
  say('Another tab is starting over: this tab reloads when it is done', 'ok')
  const ended = new Promise<void>((resolve) => {
    TABS?.addEventListener('message', (event: MessageEvent<{ kind?: string }>) => {
      if (event.data?.kind === 'done' || event.data?.kind === 'refused') resolve()
    })
    setTimeout(resolve, FOLLOW_MS)
  })
  // A tab still starting lets go once it has started: nothing it opens is left holding the store.
  void started
    .then(letGo)
    .catch(() => undefined) // the page reloads: its workspace is opened anew
    .then(() => ended)
    .then(() => location.reload())
}

/** Deletes an IndexedDB database; one another connection keeps open (it would wait for it) fails after LET_GO_MS. */
function deleted(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name)
    let timer: ReturnType<typeof setTimeout> | undefined
    request.onsuccess = () => {
      clearTimeout(timer)
      resolve()
    }
    request.onerror = () => {
      clearTimeout(timer)
      reject(request.error)
    }
    request.onblocked = () => {
      timer = setTimeout(() => reject(new Error(`the IndexedDB database ${name} is open elsewhere`)), LET_GO_MS)
    }
  })
}

/** Whether the browser has an origin private file system (its workers then have sync access handles). */
function hasOpfs(): boolean {
  return typeof navigator.storage?.getDirectory === 'function'
}

function open(store: 'opfs' | 'indexeddb'): Promise<WorkerWorkspace> {
  return openWorkerWorkspace(new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }), {
    lower: { kind: 'indexeddb-tree', name: PROJECT_DATABASE },
    store: { kind: store, name: STORE_DATABASE },
    validators: ['project-json'],
    // The demo shows the checkpoints people and the agent make, not automatic ones.
    autoCheckpoint: false,
    onCrash: (error) => say(describe(error), 'error'),
  })
}

/** Says which tab writes: a follower is read-only until the writing tab closes. */
function showTab(): void {
  const follower = ws.status.tab === 'follower'
  document.body.dataset.tab = ws.status.tab ?? 'writer'
  if (follower) say('Another tab is writing: this one follows its changes and takes over when it closes', 'ok')
}

async function start(): Promise<void> {
  TABS?.addEventListener('message', (event: MessageEvent<{ kind?: string }>) => {
    if (event.data?.kind === 'start-over') followStartOver()
  })
  // Held from before the seed is written: a start over in another tab waits for this tab to let go.
  releaseOpen = await hold(OPEN_LOCK, 'shared')
  let store: 'opfs' | 'indexeddb' = hasOpfs() ? 'opfs' : 'indexeddb'
  const starting = await hold(START_LOCK, 'exclusive')
  try {
    await seedProject()
    try {
      ws = await open(store)
    } catch (error) {
      // No OPFS after all (a private window, storage blocked): the IndexedDB store does.
      if (store !== 'opfs') throw error
      store = 'indexeddb'
      ws = await open(store)
    }
  } catch (error) {
    releaseOpen()
    releaseOpen = undefined
    throw error
  } finally {
    starting()
  }
  document.body.dataset.store = store
  view.storeName.textContent = store === 'opfs' ? 'OPFS' : 'IndexedDB'
  wire()
  // Another tab's commits, and this tab taking over from it.
  ws.events.on('reload', () => void refresh().catch((error: unknown) => say(describe(error), 'error')))
  ws.events.on('writer', () => {
    if (leaving) return // promoted while a start over closes the tabs: it reloads next
    showTab()
    say('The writing tab closed: this tab writes now', 'ok')
  })
  await refresh()
  showTab()
  if (ws.status.degraded) say(`The store is degraded, changes live in memory only: ${ws.status.degraded}`, 'error')
  // What a start over that failed had to say, before it reloaded the page.
  const flash = sessionStorage.getItem(FLASH)
  if (flash !== null) {
    sessionStorage.removeItem(FLASH)
    say(flash, 'error')
  }
  view.status.textContent = 'ready'
  document.body.dataset.busy = 'false'
}

const started = start()
started.catch((error: unknown) => {
  view.status.textContent = `failed to start: ${describe(error)}`
  view.status.className = 'error'
})
