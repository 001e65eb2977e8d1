/**
 * The browser tests' page module (bundled by driver.ts): scenarios the tests call by name through
 * `window.rewindfsTest`, each returning plain data. The page shows the last result, for screenshots.
 */
import { indexedDbStore, indexedDbTree, type IndexedDbStore } from '../../adapters/indexeddb/index.js'
import type { FlushEntry } from '../../src/flush/target.js'
import { Workspace } from '../../src/index.js'

const status = document.getElementById('status') as HTMLElement

function show<T>(title: string, value: T): T {
  status.textContent = `${title}\n${JSON.stringify(value, null, 2)}`
  return value
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : String(error)
}

function files(ws: Workspace): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stat = ws.fs.lstatSync(path)
      if (stat.isDirectory()) {
        out[`${path}/`] = (stat.mode & 0o777).toString(8)
        walk(path)
      } else if (stat.isSymbolicLink()) out[path] = `-> ${ws.fs.readlinkSync(path)}`
      else out[path] = `${(stat.mode & 0o777).toString(8)} ${ws.fs.readFileSync(path, 'utf8')}`
    }
  }
  walk('/')
  return out
}

async function describeWorkspace(ws: Workspace) {
  return {
    files: files(ws),
    checkpoints: ws.checkpoints().map((c) => `${c.kind}:${c.name}`),
    state: await ws.state.entries(),
    history: ws.history().map((op) => op.type),
    degraded: ws.status.degraded ?? null,
  }
}

const text = (value: string) => new TextEncoder().encode(value)

const seed: FlushEntry[] = [
  { path: '/site', kind: 'dir', mode: 0o755, mtimeMs: 1000 },
  { path: '/site/index.html', kind: 'file', mode: 0o644, mtimeMs: 2000, content: text('<h1>hello</h1>') },
  { path: '/site/assets', kind: 'dir', mode: 0o755, mtimeMs: 3000 },
  { path: '/site/assets/app.js', kind: 'file', mode: 0o644, mtimeMs: 4000, content: text('console.log(1)') },
  { path: '/site/home', kind: 'symlink', target: 'index.html' },
]

/** This tab's long-lived store (a writer or a reader), as a tab keeps one for its life. */
let held: IndexedDbStore | undefined
let writerWorkspace: Workspace | undefined
let changes = 0
let lastChange = ''
let changed: () => void = () => undefined
let foreign: IDBDatabase | undefined

const scenarios = {
  /** A session through the IndexedDB store, synced and closed. */
  async storeSession(name: string) {
    const ws = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    ws.fs.mkdirSync('/app/src', { recursive: true })
    ws.fs.writeFileSync('/app/src/main.ts', 'export {}\n')
    ws.fs.writeFileSync('/app/data.bin', new Uint8Array([0, 1, 2, 250]))
    await ws.checkpoint({ name: 'before-edit' })
    ws.fs.writeFileSync('/app/src/main.ts', 'export const edited = true\n')
    ws.fs.symlinkSync('src/main.ts', '/app/entry')
    await ws.state.set('plan', { step: 2, todo: ['reload', 'compare'] })
    await ws.sync()
    const result = await describeWorkspace(ws)
    await ws.close()
    return show('store session written', result)
  },

  /**
   * The store's database deleted while a workspace writes it (another tab's "start over", the site's
   * data cleared): how the next sync ends, and what a reopen finds.
   */
  async deletedUnderneath(name: string) {
    const ws = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/before.txt', 'before')
    await ws.sync()
    const deleted = await new Promise<string>((resolve) => {
      const request = indexedDB.deleteDatabase(name)
      request.onsuccess = () => resolve('deleted')
      request.onerror = () => resolve(`error: ${String(request.error)}`)
      request.onblocked = () => resolve('blocked')
    })
    ws.fs.writeFileSync('/after.txt', 'after')
    const sync = await ws.sync().then(
      () => 'acknowledged',
      (error: Error) => `${codeOf(error)}: ${error.message}`,
    )
    await ws.close().catch(() => undefined)
    const reopened = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    const result = { deleted, sync, files: files(reopened), frozen: reopened.frozen ?? null, warnings: [...reopened.status.warnings] }
    await reopened.close()
    return show('database deleted underneath', result)
  },

  /** Reopens the store (after a reload) and describes it; then restores the checkpoint to prove it works. */
  async storeReopen(name: string) {
    const ws = await Workspace.open({ store: indexedDbStore(name), autoCheckpoint: false })
    const reopened = await describeWorkspace(ws)
    await ws.restore('before-edit')
    const restored = ws.fs.readFileSync('/app/src/main.ts', 'utf8') as string
    await ws.close()
    return show('store reopened after reload', { ...reopened, restored })
  },

  async treeFlush(name: string) {
    const tree = await indexedDbTree(name)
    const versions = await tree.apply(seed)
    tree.close()
    return show('tree flushed', versions)
  },

  /** Reads the tree as a lower layer; below `preloadBytes` a sync read must wait for prefetch. */
  async treeRead(name: string, preloadBytes?: number) {
    const tree = await indexedDbTree(name, { preloadBytes })
    const ws = await Workspace.open({ lower: tree })
    let beforePrefetch = 'read'
    try {
      ws.fs.readFileSync('/site/index.html')
    } catch (error) {
      beforePrefetch = codeOf(error)
    }
    await tree.prefetch(['/site/index.html', '/site/assets/app.js'])
    const result = { beforePrefetch, files: files(ws), versions: await tree.versions(['/site/index.html']) }
    await ws.close()
    return show('tree read', result)
  },

  /** The browser setup: the tree as lower layer, the journal in the same database; edits flushed into the tree. */
  async treeWorkspace(name: string) {
    const ws = await Workspace.open({ lower: await indexedDbTree(name), store: indexedDbStore(name), autoCheckpoint: false })
    ws.fs.writeFileSync('/site/index.html', '<h1>edited</h1>')
    ws.fs.writeFileSync('/site/new.txt', 'new')
    await ws.checkpoint({ name: 'edited' })
    const report = await ws.flush()
    ws.fs.writeFileSync('/site/draft.txt', 'not flushed')
    await ws.sync()
    const result = { applied: report.applied, changes: report.changes.map((c) => `${c.type} ${c.path}`).sort(), files: files(ws) }
    await ws.close()
    return show('tree workspace flushed', result)
  },

  async treeWorkspaceReopen(name: string) {
    const tree = await indexedDbTree(name)
    const ws = await Workspace.open({ lower: tree, store: indexedDbStore(name), autoCheckpoint: false })
    const result = {
      files: files(ws),
      checkpoints: ws.checkpoints().map((c) => c.name),
      unflushed: ws.changes().map((c) => `${c.type} ${c.path}`),
      inTree: new TextDecoder().decode(tree.readFile('/site/index.html')),
    }
    await ws.close()
    return show('tree workspace reopened', result)
  },

  async openWriter(name: string) {
    held = indexedDbStore(name)
    writerWorkspace = await Workspace.open({ store: held, autoCheckpoint: false })
    return show('writer opened', { readOnly: held.readOnly })
  },

  async writerWrite(path: string, content: string) {
    if (!writerWorkspace) throw new Error('no writer in this tab')
    writerWorkspace.fs.writeFileSync(path, content)
    await writerWorkspace.sync()
    return show('writer wrote', files(writerWorkspace))
  },

  async closeWriter() {
    await writerWorkspace?.close()
    writerWorkspace = held = undefined
    return show('writer closed', true)
  },

  async openReader(name: string) {
    held = indexedDbStore(name)
    await held.ready
    held.onChange((change) => {
      changes++
      lastChange = change.kind
      changed()
    })
    return show('reader opened', { readOnly: held.readOnly })
  },

  readerChanges() {
    return changes
  },

  /** The reader's role now, and what it was last told ('commit', or 'writer' once it took over). */
  readerRole() {
    return { readOnly: held?.readOnly ?? null, last: lastChange }
  },

  /** Writes through a workspace over this tab's store (it took over writing). */
  async readerWrite(path: string, content: string) {
    if (!held) throw new Error('no store in this tab')
    const ws = await Workspace.open({ store: held, autoCheckpoint: false })
    ws.fs.writeFileSync(path, content)
    await ws.sync()
    return show('took over and wrote', files(ws))
  },

  /** Resolves once more than `seen` commits were announced. */
  async readerWaitForChange(seen: number) {
    while (changes <= seen) await new Promise<void>((resolve) => (changed = resolve))
    return changes
  },

  /** What a workspace over the read-only store sees now (the store stays open: it is the tab's). */
  async readerFiles() {
    if (!held) throw new Error('no reader in this tab')
    const ws = await Workspace.open({ store: held, autoCheckpoint: false })
    return show('reader sees', files(ws))
  },

  async readerTryWrite() {
    try {
      await held?.appendJournal(['not allowed'])
      return 'written'
    } catch (error) {
      return codeOf(error)
    }
  },

  /** Another app's connection to `name` (without our object store) that ignores version changes. */
  async holdForeignDatabase(name: string) {
    foreign = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(name, 1)
      request.onupgradeneeded = () => request.result.createObjectStore('theirs')
      request.onsuccess = () => resolve(request.result)
      request.onerror = () => reject(request.error)
    })
    return show('holding a foreign connection', name)
  },

  releaseForeignDatabase() {
    foreign?.close()
    foreign = undefined
    return show('foreign connection closed', true)
  },

  /** Sets the journal, a blob and metadata aside (reads inside one transaction), then lists what is kept. */
  async setAsideRoundTrip(name: string) {
    const store = indexedDbStore(name)
    try {
      await store.appendJournal(['one', 'two'])
      await store.putBlobs([['blob', new TextEncoder().encode('bytes')]])
      await store.putMeta('key', { v: 1 })
      const names = [await store.setAside({ journal: true }, 'torn'), await store.setAside({ blob: 'blob' }, 'damaged'), await store.setAside({ meta: 'key' }, 'damaged')]
      return show('set aside', { names, kept: await store.keptAside(), journal: (await store.readJournal()).records, blobs: await store.blobIds(), meta: (await store.getMeta('key')) ?? null })
    } finally {
      await store.close()
    }
  },

  /** Opens the store, appends, reads back: the journal, or the error code. */
  async storeRoundTrip(name: string) {
    const store = indexedDbStore(name)
    try {
      await store.appendJournal(['round trip'])
      return show('round trip', (await store.readJournal()).records)
    } catch (error) {
      return show('round trip failed', codeOf(error))
    } finally {
      await store.close()
    }
  },

  /** Asks to be the writer outright: refused while another tab holds the lock. */
  async strictWriter(name: string) {
    const store = indexedDbStore(name, { readOnly: false })
    try {
      await store.ready
      return 'writer'
    } catch (error) {
      return codeOf(error)
    } finally {
      await store.close()
    }
  },
}

export type Scenarios = typeof scenarios

declare global {
  interface Window {
    rewindfsTest: Scenarios
  }
}

window.rewindfsTest = scenarios
status.textContent = 'ready'
