/** ws.events: operations, undo/redo, checkpoints, restores and changed paths, in order, from one subscription. */
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import type { WorkspaceEvent } from '../src/engine/events.js'
import { watching } from '../src/watch.js'

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** One line per event, for comparing sequences. */
function describeEvent(event: WorkspaceEvent): string {
  switch (event.type) {
    case 'operation':
    case 'undo':
    case 'redo':
      return `${event.type} ${event.operation.type} ${event.operation.paths.join(',')}`
    case 'change':
      return `change(${event.cause}${event.operation ? ` ${event.operation.type}` : ''}) ${event.changes.map((c) => `${c.kind}:${c.entry}:${c.path}${c.from ? `<${c.from}` : ''}`).join(' ')}`
    case 'checkpoint':
      return `checkpoint ${event.checkpoint.name}`
    case 'restore':
      return `restore ${event.target} ${event.changes}`
    case 'reload':
      return `reload ${event.paths.join(',')}`
    case 'writer':
      return `writer ${event.reason}`
    case 'store':
      return `store ${event.state}`
  }
}

async function recorded() {
  const ws = await Workspace.open({ watch: watching, lower: { '/src/a.ts': 'a', '/src/lib/b.ts': 'b' }, autoCheckpoint: false })
  const log: string[] = []
  for (const type of ['operation', 'undo', 'redo', 'change', 'checkpoint', 'restore'] as const) ws.events.on(type, (event) => log.push(describeEvent(event as WorkspaceEvent)))
  return { ws, log }
}

describe('ws.events', () => {
  it('tells operations and the paths they changed, in order; reads are not operations', async () => {
    const { ws, log } = await recorded()
    await ws.checkpoint({ name: 'start' })
    ws.fs.readFileSync('/src/a.ts')
    ws.fs.writeFileSync('/src/a.ts', 'A')
    ws.fs.writeFileSync('/src/a.ts', 'A') // the same bytes: no operation, still a write
    ws.fs.mkdirSync('/src/new/deep', { recursive: true })
    ws.fs.renameSync('/src/lib', '/src/lib2')
    ws.fs.chmodSync('/src/lib2/b.ts', 0o600)
    ws.fs.rmSync('/src/new', { recursive: true })
    await settle()
    expect(log).toEqual([
      'checkpoint start',
      'change(operation file_edit) modified:file:/src/a.ts',
      'operation file_edit /src/a.ts',
      'change(operation) modified:file:/src/a.ts',
      'change(operation mkdir) created:dir:/src/new created:dir:/src/new/deep',
      'operation mkdir /src/new/deep',
      'change(operation rename) moved:dir:/src/lib2</src/lib',
      'operation rename /src/lib,/src/lib2',
      'change(operation chmod) attributes:file:/src/lib2/b.ts',
      'operation chmod /src/lib2/b.ts',
      'change(operation rmdir) deleted:dir:/src/new/deep deleted:dir:/src/new',
      'operation rmdir /src/new',
    ])
  })

  it('tells undo, redo and restores, with what they changed', async () => {
    const { ws, log } = await recorded()
    await ws.checkpoint({ name: 'start' })
    ws.fs.writeFileSync('/src/c.ts', 'c')
    await ws.undo()
    await ws.redo()
    await settle()
    log.length = 0
    const report = await ws.restore('start')
    await settle()
    expect(log).toEqual([`checkpoint ${report.guard!.name}`, 'change(operation restore) deleted:file:/src/c.ts', 'operation restore /src/c.ts', 'restore start 1'])
    log.length = 0
    await ws.undo()
    await settle()
    expect(log).toEqual(['change(undo restore) created:file:/src/c.ts', 'undo restore /src/c.ts'])
  })

  it('streams events until the signal aborts or the workspace closes; unsubscribing stops a listener', async () => {
    const ws = await Workspace.open({ watch: watching, autoCheckpoint: false })
    const controller = new AbortController()
    const seen: string[] = []
    const reading = (async () => {
      for await (const event of ws.events.stream({ types: ['operation', 'checkpoint'], signal: controller.signal })) {
        seen.push(describeEvent(event))
        if (seen.length === 2) controller.abort()
      }
      return 'ended'
    })()
    ws.fs.writeFileSync('/a', 'a')
    await ws.checkpoint({ name: 'one' })
    ws.fs.writeFileSync('/b', 'b')
    expect(await reading).toBe('ended')
    expect(seen).toEqual(['operation file_create /a', 'checkpoint one'])

    const untilClose = (async () => {
      const events: string[] = []
      for await (const event of ws.events.stream()) events.push(event.type)
      return events
    })()
    let count = 0
    const off = ws.events.on('operation', () => count++)
    ws.fs.writeFileSync('/c', 'c')
    await settle()
    off()
    ws.fs.writeFileSync('/d', 'd')
    await settle()
    expect(count).toBe(1)
    await ws.close()
    expect(await untilClose).toEqual(['change', 'operation', 'change', 'operation'])
    expect(() => ws.events.on('nothing' as 'operation', () => undefined)).toThrow(/unknown event type/)
  })

  it('collects changed paths only while someone listens for them', async () => {
    const ws = await Workspace.open({ watch: watching, autoCheckpoint: false })
    const feed = (ws as unknown as { ops: { changes: { active: boolean; listening: boolean } } }).ops.changes
    expect([feed.active, feed.listening]).toEqual([false, false])
    const off = ws.events.on('operation', () => undefined)
    expect([feed.active, feed.listening]).toEqual([false, true])
    const offChange = ws.events.on('change', () => undefined)
    expect(feed.active).toBe(true)
    offChange()
    off()
    const watcher = ws.fs.watch('/')
    expect(feed.active).toBe(true)
    watcher.close()
    expect([feed.active, feed.listening]).toEqual([false, false])
  })
})
