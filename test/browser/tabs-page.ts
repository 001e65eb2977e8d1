/**
 * A tab of the tabs tests (bundled by test/tabs.test.ts): the engine in a Web Worker
 * (worker/browser-entry) over a store the tabs share, driven through `window.tab`, answering plain data.
 */
import type { WorkspaceEvent } from '../../src/engine/events.js'
import { openWorkerWorkspace, type WorkerWorkspace } from '../../worker/index.js'

let ws: WorkerWorkspace | undefined
const heard: { type: string; paths?: readonly string[]; operations?: string[] }[] = []
const watched: string[] = []
let wake: () => void = () => undefined

const codeOf = (error: unknown) => (error as { code?: string }).code ?? String(error)

function workspace(): WorkerWorkspace {
  if (!ws) throw new Error('no workspace open in this tab')
  return ws
}

const tab = {
  async open(kind: 'indexeddb' | 'opfs', name: string) {
    ws = await openWorkerWorkspace(new Worker('/engine.js', { type: 'module' }), {
      lower: { kind: 'fixture', files: { '/app/a.txt': 'from the lower layer' } },
      store: { kind, name },
      autoCheckpoint: false,
    })
    const note = (event: WorkspaceEvent) => {
      if (event.type === 'reload') heard.push({ type: 'reload', paths: event.paths, operations: event.operations.map((op) => op.type) })
      else heard.push({ type: event.type })
      wake()
    }
    ws.events.on('reload', note)
    ws.events.on('writer', note)
    ws.fs.watch('/', { recursive: true }, (type, name) => {
      watched.push(`${type} ${String(name)}`)
      wake()
    })
    return tab.status()
  },

  status() {
    const { tab: role, frozen } = workspace().status
    return { tab: role ?? null, frozen: frozen ?? null }
  },

  async write(path: string, content: string) {
    try {
      await workspace().fs.promises.writeFile(path, content)
      await workspace().sync()
      return 'written'
    } catch (error) {
      return codeOf(error)
    }
  },

  async transaction(path: string) {
    try {
      await workspace().transaction(async (fs) => fs.promises.writeFile(path, 'in a transaction'))
      return 'committed'
    } catch (error) {
      return codeOf(error)
    }
  },

  /** An engine member that changes state (undo, unfreeze…): 'done' or the error's code. */
  async member(name: 'undo' | 'unfreeze' | 'checkpoint') {
    try {
      await workspace()[name]()
      return 'done'
    } catch (error) {
      return codeOf(error)
    }
  },

  async files() {
    const out: Record<string, string> = {}
    const fs = workspace().fs.promises
    const walk = async (dir: string) => {
      for (const name of ((await fs.readdir(dir)) as string[]).sort()) {
        const path = dir === '/' ? `/${name}` : `${dir}/${name}`
        if ((await fs.stat(path)).isDirectory()) await walk(path)
        else out[path] = (await fs.readFile(path, 'utf8')) as string
      }
    }
    await walk('/')
    return out
  },

  heard() {
    return heard
  },

  watched() {
    return watched
  },

  /** Resolves once `count` events of `type` were heard (the worker tells them without being asked). */
  async waitFor(type: string, count: number) {
    while (heard.filter((event) => event.type === type).length < count) await new Promise<void>((resolve) => (wake = resolve))
    return heard.filter((event) => event.type === type)
  },

  async close() {
    await ws?.close()
    ws = undefined
    return 'closed'
  },
}

export type Tab = typeof tab

declare global {
  interface Window {
    tab: Tab
  }
}

window.tab = tab
document.getElementById('status')!.textContent = 'ready'
