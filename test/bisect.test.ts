/**
 * ws.bisect over a real project: a tiny Node package whose `node --test` suite operation 37 of a
 * scripted history breaks. The search must name that operation in a logarithmic number of probes
 * and leave the workspace byte-identical (files, history, checkpoints, the store's journal on
 * disk, the project directory), skip what cannot be tested as `git bisect skip` does, report a
 * flaky command instead of blaming a state, and search checkpoints or several states at once.
 */
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore } from '../adapters/node-fs/index.js'
import { BisectError, Workspace } from '../src/index.js'
import { MemoryStore, bisectEngine } from '../src/adapter-kit.js'
import { watching } from '../src/watch.js'
import type { BisectProbe, WorkspaceOptions } from '../src/index.js'
import { scriptHistory, writeProject } from './support/bisect-project.js'
import { withMarker } from './support/processes.js'
import { workspaceSnapshot } from './support/workspace-snapshot.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-bisect-test-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

let serial = 0
function project(): string {
  const root = `${scratch}/p${serial++}`
  fs.mkdirSync(root)
  writeProject(root)
  return root
}

/** Every file under `root` with its bytes, as Linux sees it. */
function bytesUnder(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const path = `${dir}/${name}`
      const stats = fs.lstatSync(path)
      if (stats.isDirectory()) walk(path)
      else out[path.slice(root.length)] = `${(stats.mode & 0o7777).toString(8)} ${fs.readFileSync(path).toString('base64')}`
    }
  }
  walk(root)
  return out
}

/** The test as a single process: faster than `node --test`'s runner for the tests that do not need it. */
const QUICK = 'node test/sum.test.js'

async function open(root: string, options: WorkspaceOptions = {}): Promise<Workspace> {
  return Workspace.open({ lower: directory(root), autoCheckpoint: false, ...options })
}

describe('ws.bisect', () => {
  it('names operation 37 of 64 in at most 7 probes and leaves the workspace byte-identical', async () => {
    const root = project()
    const storeDir = `${scratch}/store-${serial++}`
    const ws = await open(root, { store: directoryStore(storeDir), watch: watching })
    const ids = await scriptHistory(ws, { between: async (n) => (n % 16 === 0 ? ws.checkpoint({ name: `at-${n}` }) : undefined) })
    expect(ids).toHaveLength(64)
    // Everything a user can see of the workspace, then the bytes of its store and of the project.
    const observe = async () => {
      const seen = {
        snapshot: await workspaceSnapshot(ws),
        history: JSON.stringify(ws.history()),
        checkpoints: JSON.stringify(ws.checkpoints()),
        changes: JSON.stringify(ws.changes()),
        // statfs counts the inode numbers handed out: a probe's writes take none of this session's.
        inodes: ws.fs.statfsSync('/').ffree,
      }
      // Reading the tree records first sightings of lower files in the journal: durable first.
      await ws.sync()
      ws.collectGarbage()
      return { ...seen, storage: ws.storage, store: bytesUnder(storeDir), project: bytesUnder(root) }
    }
    const before = await observe()
    const events: string[] = []
    for (const type of ['operation', 'undo', 'redo', 'change', 'checkpoint', 'restore'] as const) ws.events.on(type, (event) => events.push(event.type))

    // Each probe also writes a file: nothing a probe writes may be kept anywhere.
    const seen: { probe: BisectProbe; left: number }[] = []
    const result = await ws.bisect('echo probed > probe-output.txt && node --test', { onProbe: (probe, progress) => seen.push({ probe, left: progress.left }) })

    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    expect(result.firstBad).toMatchObject({ kind: 'operation', operationSeq: result.suspects[0].seq, operation: { id: ids[36], type: 'file_edit', paths: ['/src/sum.js'] } })
    expect(result.lastGood).toMatchObject({ kind: 'operation', operation: { id: ids[35] } })
    expect(result.probes.length).toBeLessThanOrEqual(7)
    expect(result.probes.filter((p) => p.repeat)).toHaveLength(1) // the blamed state, probed twice
    expect(result.skipped).toEqual([])
    expect(result.diff).toContain('--- /src/sum.js')
    expect(result.diff).toContain('-export const sum = (a, b) => a + b')
    expect(result.diff).toContain('+export const sum = (a, b) => a - b')
    // Probes report what node --test said: a failing one names the failed test.
    const bad = result.probes.find((p) => p.verdict === 'bad')!
    expect(bad.exitCode).toBe(1)
    expect(bad.stdoutTail).toMatch(/not ok .*sum adds/)
    expect(result.probes.find((p) => p.verdict === 'good')!.stdoutTail).toMatch(/# pass 2/)
    for (const probe of result.probes) expect(probe.durationMs).toBeGreaterThan(0)
    expect(seen.map((s) => s.probe)).toEqual(result.probes)
    expect(seen.map((s) => s.left)).toEqual([...seen.map((s) => s.left)].sort((a, b) => b - a))

    expect(await observe()).toEqual(before)
    expect(events).toEqual([])
    expect(ws.fs.existsSync('/probe-output.txt')).toBe(false)
    await ws.close()
  })

  it('skips states the command cannot test (exit 125, a timeout) and says so; skipped states next to the break leave several suspects', async () => {
    const root = project()
    const ws = await open(root)
    // A work-in-progress marker makes the command exit 125 (git bisect run's "cannot be tested"),
    // a slow marker makes it outlast the timeout.
    const ids = await scriptHistory(ws, {
      extra: {
        30: (f) => f.writeFileSync('/WIP', ''),
        33: (f) => f.rmSync('/WIP'),
        36: (f) => f.writeFileSync('/SLOW', ''),
        38: (f) => f.rmSync('/SLOW'),
      },
    })
    const command = `test -e WIP && exit 125; test -e SLOW && sleep 30; ${QUICK}`
    const result = await ws.bisect(command, { timeout: 3000 })
    // States 36 and 37 time out: the break is one of operations 36, 37, 38.
    expect(result.lastGood.operation?.id).toBe(ids[34])
    expect(result.firstBad.operation?.id).toBe(ids[37])
    expect(result.suspects.map((op) => op.id)).toEqual([ids[35], ids[36], ids[37]])
    const skipped = Object.fromEntries(result.skipped.map((s) => [s.state.operation!.id, s.reason]))
    expect(skipped[ids[35]]).toMatch(/timed out after 3000 ms/)
    expect(skipped[ids[36]]).toMatch(/timed out/)
    for (const [id, reason] of Object.entries(skipped)) if (reason.includes('125')) expect([ids[29], ids[30], ids[31]]).toContain(id)
    expect(result.probes.filter((p) => p.verdict === 'skip').length).toBe(result.skipped.length)
    expect(result.diff).toContain('+export const sum = (a, b) => a - b')
    await ws.close()
  })

  it('steps around skipped states far from the break and still names it exactly', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws, { extra: { 30: (f) => f.writeFileSync('/WIP', ''), 34: (f) => f.rmSync('/WIP') } })
    const result = await ws.bisect(`test -e WIP && exit 125; ${QUICK}`)
    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    expect(result.skipped.length).toBeGreaterThan(0)
    for (const s of result.skipped) expect(s).toMatchObject({ reason: 'exit code 125 (cannot be tested)' })
    await ws.close()
  })

  it('skips a checkpoint marked broken without running anything there', async () => {
    const root = project()
    const store = new MemoryStore()
    const ws = await open(root, { store })
    // Content only checkpoint at-40 holds among the checkpoints: damaging it breaks at-40.
    await scriptHistory(ws, {
      count: 48,
      extra: { 33: (f) => f.writeFileSync('/docs/only-here.md', 'only at 40'), 41: (f) => f.rmSync('/docs/only-here.md') },
      between: async (n) => (n % 8 === 0 ? ws.checkpoint({ name: `at-${n}` }) : undefined),
    })
    await ws.sync()
    await ws.close()
    const image = store.image()
    image.blobs.find(([, bytes]) => new TextDecoder().decode(bytes) === 'only at 40')![1][0] ^= 1
    const reopened = await open(root, { store: MemoryStore.from(image) })
    expect((await reopened.verify()).broken).toHaveLength(1)
    const result = await reopened.bisect(QUICK, { granularity: 'checkpoint' })
    expect(result.skipped.map((s) => [s.state.checkpoint?.name, s.reason])).toEqual([['at-40', 'the checkpoint is broken (content it needs is missing from the store)']])
    expect(result.probes.map((p) => p.state.checkpoint?.name)).not.toContain('at-40')
    // The break is at-40's: with it skipped, the answer spans at-32 to at-48.
    expect([result.lastGood.checkpoint?.name, result.firstBad.checkpoint?.name]).toEqual(['at-32', 'at-48'])
    expect(result.suspects).toHaveLength(16)
    await reopened.close()
  })

  it('reports a flaky command and blames nothing', async () => {
    const root = project()
    const ws = await open(root)
    await scriptHistory(ws)
    // The first run fails whatever the state (a flaky test); every later run tells the truth.
    const counter = `${scratch}/runs-${serial++}`
    const command = `n=$(cat ${counter} 2>/dev/null || echo 0); echo $((n + 1)) > ${counter}; test "$n" = 0 && exit 1; ${QUICK}`
    const error = await ws.bisect(command).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BisectError)
    expect(error).toMatchObject({ code: 'EFLAKY' })
    const { probes, message } = error as BisectError
    // The spurious failure sent the search below it; the second look at the state it would have blamed passes.
    const blamed = probes.at(-1)!
    expect(blamed).toMatchObject({ repeat: true, verdict: 'good' })
    expect(probes.find((p) => p.state === blamed.state && !p.repeat)).toMatchObject({ verdict: 'bad' })
    expect(message).toContain(`${blamed.state.label} was bad, then good`)
    expect(message).toMatch(/nothing is blamed/)
    await ws.close()
  })

  it('searches checkpoints with granularity checkpoint: the suspects are the operations between the two', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws, { between: async (n) => (n % 8 === 0 ? ws.checkpoint({ name: `at-${n}` }) : undefined) })
    const result = await ws.bisect(QUICK, { granularity: 'checkpoint' })
    expect(result.lastGood).toMatchObject({ kind: 'checkpoint', checkpoint: { name: 'at-32' } })
    expect(result.firstBad).toMatchObject({ kind: 'checkpoint', checkpoint: { name: 'at-40' } })
    expect(result.suspects.map((op) => op.id)).toEqual(ids.slice(32, 40))
    // 8 checkpoints (the last is now): 3 probes, the blamed one again, and `from` (the start) never needed.
    expect(result.probes.length).toBeLessThanOrEqual(4)
    expect(result.diff).toContain('+export const sum = (a, b) => a - b')
    expect(result.diff).toContain('+# note 34')
    await ws.close()
  })

  it('refuses with clear errors when from fails or to passes, after probing them', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws)
    await expect(ws.bisect(QUICK, { from: { operation: ids[39] } })).rejects.toMatchObject({
      code: 'EBISECTFROM',
      message: expect.stringContaining(`the command already fails at from (after ${ids[39]}`),
    })
    await expect(ws.bisect(QUICK, { to: { operation: ids[29] } })).rejects.toMatchObject({ code: 'EBISECTTO', message: expect.stringContaining('the command passes at to') })
    await expect(ws.bisect(QUICK, { from: { operation: ids[40] }, to: { operation: ids[10] } })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('nothing to bisect') })
    await expect(ws.bisect(QUICK, { from: 'no-such-checkpoint' })).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(ws.bisect('', {})).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(ws.bisect(QUICK, { concurrency: 0 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await ws.close()
  })

  it('bisects between two given states, judged by isGood', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws)
    await ws.checkpoint({ name: 'end' })
    const result = await ws.bisect('node -e "import(\'./src/sum.js\').then(m => console.log(m.sum(2, 3)))"', {
      from: { operation: ids[19] },
      to: 'end',
      isGood: (run) => run.stdout.trim() === '5',
    })
    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    expect(result.firstBad.operation?.id).toBe(ids[36])
    await ws.close()
  })

  it('probes several states at once with concurrency (k-ary search)', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws)
    const rounds: number[] = []
    const result = await ws.bisect(QUICK, { concurrency: 3, onProbe: (_probe, progress) => rounds.push(progress.left) })
    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    // 63 states between: three rounds of three (quarters), then the blamed and the last good state again.
    expect(result.probes.length).toBeLessThanOrEqual(3 * 3 + 2)
    expect(result.probes.filter((p) => p.repeat).map((p) => p.state.operation?.id)).toEqual([ids[36], ids[35]])
    expect(new Set(rounds).size).toBeLessThanOrEqual(4)
    await ws.close()
  })

  it('runs the command only at the states it reports, and leaves nothing running', async () => {
    const root = project()
    const ws = await open(root)
    const ids = await scriptHistory(ws)
    // Outside the workspace, so every run of the command is seen; the marker finds what is left.
    const log = `${scratch}/runs-${serial++}.log`
    const marker = `p${process.pid}-${serial++}`
    const result = await ws.bisect(`echo run >> ${log} && ${QUICK}`, { env: { REWINDFS_BISECT_MARKER: marker } })
    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    expect(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)).toHaveLength(result.probes.length)
    expect(withMarker(`REWINDFS_BISECT_MARKER=${marker}`)).toEqual([])
    await ws.close()
  })

  it('withdrawn by its signal: the probes running are killed, no new one starts, AbortError; aborted already, nothing runs', async () => {
    const root = project()
    const temps = `${scratch}/tmp-${serial++}`
    fs.mkdirSync(temps)
    const ws = await open(root)
    await scriptHistory(ws)
    const before = JSON.stringify(ws.history())
    const log = `${scratch}/runs-${serial++}.log`
    const marker = `p${process.pid}-${serial++}`
    const controller = new AbortController()
    const reason = new Error('the caller went away')
    // Two probes at once, each running until killed: the search cannot end by itself.
    const running = ws.bisect(`echo run >> ${log}; sleep 30`, { env: { REWINDFS_BISECT_MARKER: marker }, concurrency: 2, tmpdir: temps, signal: controller.signal })
    const started = Date.now()
    const runs = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0)
    while (runs() < 2 && Date.now() - started < 30_000) await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort(reason)
    const aborted = Date.now()
    await expect(running).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason })
    expect(Date.now() - aborted).toBeLessThan(5000)
    expect(withMarker(`REWINDFS_BISECT_MARKER=${marker}`)).toEqual([])
    // The two probes started, and no round after them.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(runs()).toBe(2)
    expect(fs.readdirSync(temps)).toEqual([])
    expect(JSON.stringify(ws.history())).toBe(before)
    // Aborted already: rejected before any command runs.
    const never = `${scratch}/never-${serial++}`
    await expect(ws.bisect(`touch ${never}`, { signal: AbortSignal.abort('gone') })).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: 'gone' })
    expect(fs.existsSync(never)).toBe(false)
    await expect(ws.bisect('true', { signal: 'stop' as unknown as AbortSignal })).rejects.toThrow(/signal must be an AbortSignal/)
    // The workspace bisects as before.
    expect((await ws.bisect(QUICK)).suspects).toHaveLength(1)
    await ws.close()
  })

  it('needs a runner: a workspace that cannot exec says so before anything runs', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a' } })
    ws.fs.writeFileSync('/a.txt', 'b')
    await expect(ws.bisect('true')).rejects.toMatchObject({ code: 'ENOSYS' })
    await ws.close()
  })

  it('the search comes with the runner: one that carries none (runner.bisector) is refused, one given bisectEngine searches', async () => {
    const root = project()
    const lower = directory(root)
    // The directory's own runner carries it, but the runner given to open is the one used.
    const bare = await Workspace.open({ lower, exec: { open: (host) => lower.exec.open(host) } })
    bare.fs.writeFileSync('/a.txt', 'b')
    await expect(bare.bisect('true')).rejects.toThrow(/runner\.bisector/)
    await expect(bare.bisect('true')).rejects.toMatchObject({ code: 'ENOSYS' })
    await bare.close()
    const ws = await Workspace.open({ lower, autoCheckpoint: false, exec: { open: (host) => lower.exec.open(host), bisector: bisectEngine } })
    const ids = await scriptHistory(ws)
    const result = await ws.bisect(QUICK)
    expect(result.suspects.map((op) => op.id)).toEqual([ids[36]])
    await ws.close()
  })
})
