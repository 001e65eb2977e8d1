/**
 * The fs surface in a real browser (bundled by driver.ts for the browser platform, so no Node
 * builtins are there): watching, ws.events, web streams and the stat watcher run on the core's own
 * emitter and the page's timers; Node streams are absent and say why.
 */
import { Workspace } from '../../src/index.js'
import { openWorkerWorkspace } from '../../worker/index.js'
import { watching } from '../../src/watch.js'

const status = document.getElementById('status') as HTMLElement
const pause = (ms = 10) => new Promise((resolve) => setTimeout(resolve, ms))

async function surface() {
  const ws = await Workspace.open({ watch: watching, lower: { '/app/a.txt': 'a', '/big': 'x'.repeat(40_000) }, autoCheckpoint: false })
  const fs = ws.fs
  const dir: string[] = []
  const all: string[] = []
  const timeline: string[] = []
  const watcher = fs.watch('/app', (type, name) => dir.push(`${type}:${String(name)}`))
  const everything = fs.watch('/', { recursive: true }, (type, name) => all.push(`${type}:${String(name)}`))
  const offOperation = ws.events.on('operation', (event) => timeline.push(`${event.operation.type}`))
  const offUndo = ws.events.on('undo', (event) => timeline.push(`undo ${event.operation.type}`))
  fs.writeFileSync('/app/b.txt', 'b')
  fs.renameSync('/app/a.txt', '/app/c.txt')
  await ws.undo()
  await pause()
  watcher.close()
  everything.close()
  offOperation()
  offUndo()

  const controller = new AbortController()
  const iterated: string[] = []
  const iterating = (async () => {
    try {
      for await (const event of fs.promises.watch('/app', { signal: controller.signal })) {
        iterated.push(`${event.eventType}:${event.filename}`)
        if (iterated.length === 2) controller.abort()
      }
    } catch (error) {
      return (error as Error).name
    }
  })()
  fs.writeFileSync('/app/d.txt', 'd')
  const aborted = await iterating

  const polled: string[] = []
  fs.watchFile('/app/e.txt', { interval: 5 }, (current, previous) => polled.push(`${current.size}/${previous.size}`))
  await pause(30)
  fs.writeFileSync('/app/e.txt', 'eee')
  await pause(40)
  fs.unwatchFile('/app/e.txt')

  const handle = await fs.promises.open('/big', 'r')
  const sizes: number[] = []
  for await (const chunk of handle.readableWebStream() as unknown as AsyncIterable<Uint8Array>) sizes.push(chunk.byteLength)
  await handle.close()

  let streams: string
  try {
    fs.createReadStream('/big')
    streams = 'created'
  } catch (error) {
    streams = (error as { code?: string }).code ?? String(error)
  }
  const members = Object.keys(fs).length > 50 && fs.ReadStream === undefined
  const result = { dir, all, timeline, iterated, aborted, polled, sizes, streams, members }
  status.textContent = JSON.stringify(result, null, 2)
  return result
}

/**
 * The same from a Web Worker (its bundle handed in by the test, started from a blob URL): events of
 * the worker's change feed, one message per delivery, before the answer of the call that caused it.
 */
async function acrossWorker(workerSource: string) {
  const worker = new Worker(URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' })), { type: 'module' })
  let messages = 0
  worker.addEventListener('message', (event: MessageEvent) => {
    if ((event.data as { kind?: string })?.kind === 'rewindfs:events') messages++
  })
  const files = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`/src/f${i}.ts`, `${i}`]))
  const ws = await openWorkerWorkspace(worker, { lower: { kind: 'fixture', files }, autoCheckpoint: false })
  const all: string[] = []
  const timeline: string[] = []
  const watcher = ws.fs.watch('/', { recursive: true }, (type, name) => all.push(`${type}:${String(name)}`))
  ws.events.on('operation', (event) => timeline.push(event.operation.type))
  ws.events.on('undo', (event) => timeline.push(`undo ${event.operation.type}`))
  await ws.fs.promises.writeFile('/src/new.ts', 'new')
  const seenBeforeAnswer = [...all]
  await ws.fs.promises.rename('/src/new.ts', '/src/renamed.ts')
  await ws.undo()
  const single = { all: [...all], timeline: [...timeline], messages }

  messages = 0
  all.length = 0
  await ws.batch(Array.from({ length: 500 }, (_, i) => ({ op: 'writeFile' as const, args: [`/src/f${i}.ts`, `changed ${i}`] })))
  const batch = { messages, events: all.length, distinct: new Set(all).size }

  const controller = new AbortController()
  const iterated: string[] = []
  const iterating = (async () => {
    try {
      for await (const event of ws.fs.promises.watch('/src', { signal: controller.signal })) {
        iterated.push(`${event.eventType}:${String(event.filename)}`)
        if (iterated.length === 2) controller.abort()
      }
      return 'ended'
    } catch (error) {
      return (error as Error).name
    }
  })()
  await ws.fs.promises.writeFile('/src/d.ts', 'd')
  const aborted = await iterating
  const failed = await new Promise<string>((resolve) => ws.fs.watch('/nope').once('error', (error: Error & { code?: string }) => resolve(error.code!)))
  watcher.close()
  await ws.close()
  return { seenBeforeAnswer, single, batch, iterated, aborted, failed }
}

/** A 1 MiB file read back in each byte encoding, by the core's own conversions (there is no Buffer here). */
async function encodings() {
  const ws = await Workspace.open({ autoCheckpoint: false })
  const bytes = new Uint8Array(1 << 20)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 9)) & 0xff
  ws.fs.writeFileSync('/big.bin', bytes)
  const read: Record<string, string> = {}
  for (const encoding of ['base64', 'base64url', 'latin1', 'ascii', 'hex', 'utf16le'] as const) {
    try {
      const text = ws.fs.readFileSync('/big.bin', encoding)
      read[encoding] = `${text.length}:${text.slice(0, 16)}:${text.slice(-16)}`
    } catch (error) {
      read[encoding] = `${(error as Error).name}: ${(error as Error).message}`
    }
  }
  return read
}

const scenarios = { surface, acrossWorker, encodings }
export type FsScenarios = typeof scenarios

declare global {
  interface Window {
    rewindfsFs: FsScenarios
  }
}

window.rewindfsFs = scenarios
status.textContent = 'ready'
