/** Scenario tests from the seed stories (../shared/seeds), run against the real engine. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Workspace } from '../src/index.js'
import type { Validator } from '../src/engine/validator.js'
import { seeds } from './support/seed.js'

function tree(ws: Workspace, dir = '/'): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of ws.fs.readdirSync(dir) as string[]) {
    const path = dir === '/' ? `/${name}` : `${dir}/${name}`
    const stat = ws.fs.lstatSync(path)
    if (stat.isDirectory()) Object.assign(out, { [path + '/']: '' }, tree(ws, path))
    else if (stat.isSymbolicLink()) out[path] = '-> ' + ws.fs.readlinkSync(path)
    else out[path] = ws.fs.readFileSync(path, 'utf8') as string
  }
  return out
}

const portValidator: Validator = {
  name: 'port-range',
  match: '*.json',
  validate(content) {
    const config = JSON.parse(new TextDecoder().decode(content)) as { port: number }
    return config.port > 0 && config.port < 65536 ? true : `port ${config.port} is out of range`
  },
}

describe('transactions (stage → validate → commit)', () => {
  it('rolls a config out to 14 servers as 14 transactions; server 9 fails validation and lands nothing; undo({ group }) takes back 1–8', async () => {
    const lower: Record<string, string> = {}
    for (let i = 1; i <= 14; i++) lower[`/servers/s${i}/config.json`] = JSON.stringify({ port: 8080, version: 1 })
    const ws = await Workspace.open({ lower, validators: [portValidator] })
    const before = tree(ws)
    const landed: number[] = []
    for (let i = 1; i <= 14; i++) {
      try {
        await ws.transaction(
          (fs) => {
            fs.writeFileSync(`/servers/s${i}/config.json`, JSON.stringify({ port: i === 9 ? 70000 : 9090, version: 2 }))
            fs.writeFileSync(`/servers/s${i}/DEPLOYED`, 'v2')
          },
          { group: 'rollout-v2', label: `server ${i}` },
        )
        landed.push(i)
      } catch (error) {
        expect(error).toMatchObject({ name: 'ValidationError', failures: [{ path: '/servers/s9/config.json', validator: 'port-range', message: 'port 70000 is out of range' }] })
        break
      }
    }
    expect(landed).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(ws.fs.existsSync('/servers/s9/DEPLOYED')).toBe(false)
    expect(JSON.parse(ws.fs.readFileSync('/servers/s9/config.json', 'utf8') as string).version).toBe(1)
    expect(ws.history({ group: 'rollout-v2' })).toHaveLength(8)
    const result = await ws.undo({ group: 'rollout-v2' })
    expect(result.undone.map((op) => op.description)).toEqual([8, 7, 6, 5, 4, 3, 2, 1].map((i) => `server ${i}`))
    expect(tree(ws)).toEqual(before)
  })

  it('keeps staged writes invisible until commit and leaves the workspace byte-identical after a throw', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a' } })
    const before = tree(ws)
    await expect(
      ws.transaction(async (fs) => {
        fs.writeFileSync('/a.txt', 'staged')
        fs.mkdirSync('/new')
        expect(ws.fs.readFileSync('/a.txt', 'utf8')).toBe('a')
        expect(fs.readFileSync('/a.txt', 'utf8')).toBe('staged')
        throw new Error('agent changed its mind')
      }),
    ).rejects.toThrow('agent changed its mind')
    expect(tree(ws)).toEqual(before)
    expect(ws.history()).toEqual([])
  })

  it('commits a transaction started inside another as its own operation; what the outer staged, before it or after, commits with the outer', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a' } })
    await ws.transaction(
      async (fs) => {
        fs.writeFileSync('/a.txt', 'b')
        // The inner stages over the live tree, not over the outer's staged files.
        const seen = await ws.transaction(
          (inner) => {
            inner.writeFileSync('/c.txt', 'c')
            return inner.readFileSync('/a.txt', 'utf8')
          },
          { group: 'inner' },
        )
        expect(seen).toBe('a')
        // Committed already: the live tree has it, the outer's staging (taken before) does not.
        expect(tree(ws)).toEqual({ '/a.txt': 'a', '/c.txt': 'c' })
        expect(fs.existsSync('/c.txt')).toBe(false)
        fs.rmSync('/a.txt')
        fs.writeFileSync('/d.txt', 'd')
      },
      { group: 'outer' },
    )
    expect(tree(ws)).toEqual({ '/c.txt': 'c', '/d.txt': 'd' })
    expect(ws.history().map((op) => `${op.type} ${op.group} ${op.paths.join(',')}`)).toEqual(['transaction outer /a.txt,/d.txt', 'transaction inner /c.txt'])
    await ws.undo()
    expect(tree(ws)).toEqual({ '/a.txt': 'a', '/c.txt': 'c' })
    await ws.undo()
    expect(tree(ws)).toEqual({ '/a.txt': 'a' })
  })

  it('refuses the outer commit (ConflictError) when a transaction started inside it changed a path it staged; the inner commit stays', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'a' } })
    await expect(
      ws.transaction(async (fs) => {
        fs.writeFileSync('/a.txt', 'outer')
        await ws.transaction((inner) => inner.writeFileSync('/a.txt', 'inner'), { group: 'inner' })
        fs.writeFileSync('/b.txt', 'outer')
      }),
    ).rejects.toMatchObject({ name: 'ConflictError', code: 'ECONFLICT', paths: ['/a.txt'] })
    expect(tree(ws)).toEqual({ '/a.txt': 'inner' })
    expect(ws.history().map((op) => `${op.type} ${op.group} ${op.paths.join(',')}`)).toEqual(['transaction inner /a.txt'])
  })

  it('refuses to commit over paths changed outside the transaction meanwhile (ConflictError)', async () => {
    const ws = await Workspace.open({ lower: { '/shared.txt': 'v1' } })
    await expect(
      ws.transaction(async (fs) => {
        fs.writeFileSync('/shared.txt', 'from transaction')
        ws.fs.writeFileSync('/shared.txt', 'from outside')
      }),
    ).rejects.toMatchObject({ name: 'ConflictError', paths: ['/shared.txt'] })
    expect(ws.fs.readFileSync('/shared.txt', 'utf8')).toBe('from outside')
  })

  it('asks the approval hook above the risk threshold and lands nothing when it refuses', async () => {
    const requests: number[] = []
    const ws = await Workspace.open({
      lower: { '/d/1': '1', '/d/2': '2', '/d/3': '3', '/d/4': '4' },
      approve: ({ risk }) => {
        requests.push(risk.score)
        return false
      },
    })
    await ws.transaction((fs) => fs.writeFileSync('/small.txt', 'x'))
    expect(requests).toEqual([])
    await expect(ws.transaction((fs) => fs.rmSync('/d', { recursive: true }))).rejects.toMatchObject({ name: 'ApprovalError' })
    expect(requests).toHaveLength(1)
    expect(requests[0]).toBeGreaterThan(10)
    expect(ws.fs.readdirSync('/d')).toEqual(['1', '2', '3', '4'])
  })
})

describe('undo, redo and history', () => {
  it('undoes LIFO; selective undo of a file a later step edits is refused unless cascade', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/step1.txt', 'one')
    ws.fs.writeFileSync('/step2.txt', 'created by step 2')
    ws.fs.appendFileSync('/step2.txt', '\nedited by step 3')
    const create = ws.history({ type: 'file_create', path: '/step2.txt' })[0]
    expect(create).toBeDefined()
    await expect(ws.undo({ types: ['file_create'], paths: ['/step2.txt'] })).rejects.toMatchObject({ code: 'EDEPENDENT' })
    expect(ws.fs.readFileSync('/step2.txt', 'utf8')).toBe('created by step 2\nedited by step 3')
    const result = await ws.undo({ types: ['file_create'], paths: ['/step2.txt'], cascade: true })
    expect(result.undone.map((op) => op.type)).toEqual(['file_edit', 'file_create'])
    expect(ws.fs.existsSync('/step2.txt')).toBe(false)
    expect(ws.fs.readFileSync('/step1.txt', 'utf8')).toBe('one')
    expect(result.changesReverted['/step2.txt']).toEqual({ linesRestored: 0, linesRemoved: 2 })
    await ws.redo()
    expect(ws.fs.readFileSync('/step2.txt', 'utf8')).toBe('created by step 2\nedited by step 3')
  })

  it('reports line counts at undo time and the next undo available', async () => {
    const ws = await Workspace.open({ lower: { '/f.txt': 'a\nb\nc\n' }, autoCheckpoint: false })
    ws.fs.writeFileSync('/f.txt', 'a\nB\nc\nd\n')
    ws.fs.writeFileSync('/g.txt', 'g')
    const dry = await ws.undo({ steps: 2, dryRun: true })
    expect(dry.undone).toHaveLength(2)
    expect(ws.fs.existsSync('/g.txt')).toBe(true)
    const result = await ws.undo({ steps: 2 })
    expect(result.filesAffected).toBe(2)
    expect(result.changesReverted['/f.txt']).toEqual({ linesRestored: 1, linesRemoved: 2 })
    expect(result.next).toBeUndefined()
    expect(ws.fs.readFileSync('/f.txt', 'utf8')).toBe('a\nb\nc\n')
    const op = ws.operation(ws.history({ path: '/f.txt' })[0].id)
    expect(op?.diff[0].patch).toContain('+B')
    await expect(ws.undo({ steps: 51 })).rejects.toThrow(RangeError)
  })

  it('counts files in filesAffected: not state keys, nor a directory whose times a restore moved', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/x', '1')
    await ws.state.set('plan', 1)
    expect((await ws.undo({ steps: 2, dryRun: true })).filesAffected).toBe(1)
    ws.fs.writeFileSync('/f1', '1')
    await ws.checkpoint({ name: 'c' })
    ws.fs.writeFileSync('/f2', '2')
    await ws.restore('c')
    expect((await ws.undo({ dryRun: true })).filesAffected).toBe(1)
    await ws.close()
  })

  for (const seed of seeds()) {
    it(`n undos after n operations give the start, and redo gives the end (seed ${seed})`, async () => {
      const names = ['a', 'b', 'c', 'd/e', 'd/f']
      const op = fc.oneof(
        fc.record({ kind: fc.constant('write' as const), path: fc.constantFrom(...names), text: fc.string({ maxLength: 5 }) }),
        fc.record({ kind: fc.constant('rm' as const), path: fc.constantFrom(...names, 'd') }),
        fc.record({ kind: fc.constant('mkdir' as const), path: fc.constantFrom('d', 'x', 'd/y') }),
        fc.record({ kind: fc.constant('rename' as const), path: fc.constantFrom(...names, 'd'), to: fc.constantFrom(...names, 'z') }),
        fc.record({ kind: fc.constant('chmod' as const), path: fc.constantFrom(...names, 'd'), mode: fc.constantFrom(0o600, 0o755) }),
        fc.record({ kind: fc.constant('state' as const), path: fc.constantFrom('plan', 'todo'), text: fc.string({ maxLength: 3 }) }),
      )
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (ops) => {
          const ws = await Workspace.open({ lower: { '/a': 'lower a', '/d/e': 'lower e' }, autoCheckpoint: false })
          const start = { files: tree(ws), state: await ws.state.entries() }
          let recorded = 0
          for (const o of ops) {
            const before = ws.history().length
            try {
              if (o.kind === 'write') ws.fs.writeFileSync('/' + o.path, o.text)
              else if (o.kind === 'rm') ws.fs.rmSync('/' + o.path, { recursive: true })
              else if (o.kind === 'mkdir') ws.fs.mkdirSync('/' + o.path)
              else if (o.kind === 'rename') ws.fs.renameSync('/' + o.path, '/' + o.to)
              else if (o.kind === 'chmod') ws.fs.chmodSync('/' + o.path, o.mode)
              else await ws.state.set(o.path, o.text)
            } catch {
              // A failed call must record nothing.
              expect(ws.history().length).toBe(before)
            }
            recorded = ws.history().length
          }
          const end = { files: tree(ws), state: await ws.state.entries() }
          let remaining = recorded
          while (remaining > 0) {
            const n = Math.min(50, remaining)
            await ws.undo({ steps: n })
            remaining -= n
            if (remaining > 0) {
              expect((await ws.redo()).redone).toHaveLength(n)
              await ws.undo({ steps: n })
            }
          }
          expect({ files: tree(ws), state: await ws.state.entries() }).toEqual(start)
          if (recorded > 0 && recorded <= 50) {
            await ws.redo()
            expect({ files: tree(ws), state: await ws.state.entries() }).toEqual(end)
          }
        }),
        { seed, numRuns: 60 },
      )
    })
  }
})

describe('checkpoints as full restore points', () => {
  it('restores a 7-step migration that fails at step 4 to its start, files and state together', async () => {
    const ws = await Workspace.open({ lower: { '/db/schema.sql': 'create table users (id int);\n' } })
    await ws.state.set('plan', ['add column', 'backfill', 'index', 'swap', 'drop old', 'vacuum', 'verify'])
    await ws.state.set('done', [])
    const start = await ws.checkpoint({ name: 'migration-start' })
    for (let step = 1; step <= 7; step++) {
      if (step === 4) {
        ws.fs.writeFileSync('/db/schema.sql', 'create table users (id int, email text NOT NULL, -- broken\n')
        break
      }
      ws.fs.mkdirSync('/db/migrations', { recursive: true })
      ws.fs.writeFileSync(`/db/migrations/00${step}.sql`, `-- step ${step}\n`)
      await ws.state.set('done', Array.from({ length: step }, (_, i) => i + 1))
    }
    expect(await ws.state.get('done')).toEqual([1, 2, 3])
    const report = await ws.restore(start.id)
    expect(report.applied).toBe(true)
    expect(report.state).toEqual({ plan: ['add column', 'backfill', 'index', 'swap', 'drop old', 'vacuum', 'verify'], done: [] })
    expect(await ws.state.get('done')).toEqual([])
    expect(ws.fs.readFileSync('/db/schema.sql', 'utf8')).toBe('create table users (id int);\n')
    expect(ws.fs.existsSync('/db/migrations')).toBe(false)
    expect(report.guard?.kind).toBe('guard')
  })

  it('restore, undoRestore, and a second undoRestore', async () => {
    const ws = await Workspace.open()
    ws.fs.writeFileSync('/f', 'v1')
    const cp = await ws.checkpoint({ name: 'v1' })
    ws.fs.writeFileSync('/f', 'v2')
    const later = await ws.checkpoint({ name: 'v2' })
    await ws.restore('v1')
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('v1')
    expect(ws.checkpoints().find((c) => c.id === later.id)?.superseded).toBe(true)
    expect(ws.checkpoints().find((c) => c.id === cp.id)?.superseded).toBeUndefined()
    await ws.undoRestore()
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('v2')
    await ws.undoRestore()
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('v1')
  })

  it('compensates an external call recorded after the target, and reports it as compensated', async () => {
    const sent: string[] = []
    Workspace.registerCompensator('unsend', (args) => {
      sent.splice(sent.indexOf(String(args)), 1)
    })
    const ws = await Workspace.open()
    const cp = await ws.checkpoint({ name: 'before-email' })
    sent.push('hello')
    await ws.recordSideEffect({ description: 'sent email hello', compensate: { name: 'unsend', args: 'hello' } })
    sent.push('again')
    await ws.recordSideEffect({ description: 'sent email again', compensate: () => void sent.splice(sent.indexOf('again'), 1) })
    const report = await ws.restore(cp.id)
    expect(report.compensated).toEqual(['sent email again', 'sent email hello'])
    expect(sent).toEqual([])
    expect(ws.history({ type: 'side_effect' })).toHaveLength(2)
  })

  it('undo of a side effect runs its compensation; a failing one is reported and redo refuses to re-run it', async () => {
    const ws = await Workspace.open()
    let calls = 0
    await ws.recordSideEffect({
      description: 'charged card',
      compensate: () => {
        calls++
        throw new Error('payment API down')
      },
    })
    const result = await ws.undo()
    expect(calls).toBe(2) // retried once
    expect(result.uncompensated).toEqual([{ description: 'charged card', error: 'payment API down' }])
    await expect(ws.redo()).rejects.toMatchObject({ code: 'EEFFECT' })
  })

  it('keeps the last 10 turn checkpoints plus every manual and guard one over 25 turns', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    for (let turn = 1; turn <= 25; turn++) {
      await ws.beginTurn(turn)
      ws.fs.writeFileSync('/log.txt', `turn ${turn}`)
      if (turn % 5 === 0) await ws.checkpoint({ name: `manual-${turn}` })
      if (turn === 12) await ws.restore(`turn-${turn}`)
    }
    const kinds = ws.checkpoints().map((c) => `${c.kind}:${c.name}`)
    expect(kinds.filter((k) => k.startsWith('turn:'))).toEqual(Array.from({ length: 10 }, (_, i) => `turn:turn-${16 + i}`))
    expect(kinds.filter((k) => k.startsWith('manual:'))).toEqual(['manual:manual-5', 'manual:manual-10', 'manual:manual-15', 'manual:manual-20', 'manual:manual-25'])
    expect(kinds.filter((k) => k.startsWith('guard:'))).toHaveLength(1)
    expect(ws.history({ path: '/log.txt' })[0].turn).toBe(25)
  })

  it('restores to a time and to just after an operation by replaying from the nearest checkpoint', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/f', '1')
    await ws.checkpoint()
    ws.fs.writeFileSync('/f', '2')
    const second = ws.history()[0]
    ws.fs.writeFileSync('/f', '3')
    ws.fs.writeFileSync('/g', 'x')
    await ws.restore({ operation: second.id })
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('2')
    expect(ws.fs.existsSync('/g')).toBe(false)
    await ws.restore({ time: Date.now() + 1000 })
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('2')
  })

  it('makes automatic checkpoints before high-risk operations', async () => {
    const ws = await Workspace.open({ lower: { '/src/a.ts': 'a', '/src/b.ts': 'b' } })
    ws.fs.rmSync('/src', { recursive: true })
    const auto = ws.checkpoints().filter((c) => c.kind === 'auto')
    expect(auto).toHaveLength(1)
    await ws.restore(auto[0].id)
    expect(ws.fs.readdirSync('/src')).toEqual(['a.ts', 'b.ts'])
  })

  it('renames, deletes and describes checkpoints; resume points persist per session', async () => {
    const ws = await Workspace.open({ lower: { '/a.txt': 'one\ntwo\n' }, autoCheckpoint: false })
    ws.fs.writeFileSync('/b.txt', 'three\n')
    const cp = await ws.checkpoint({ name: 'x' })
    await ws.renameCheckpoint('x', 'y')
    await expect(ws.renameCheckpoint('y', 'y')).resolves.toMatchObject({ name: 'y' })
    const info = await ws.checkpointInfo('y')
    expect(info).toMatchObject({ files: 2, totalLines: 3, bytes: 14, changesSincePrevious: 1 })
    expect(info.lastOperation?.paths).toEqual(['/b.txt'])
    await ws.deleteCheckpoint(cp.id)
    expect(ws.checkpoints()).toEqual([])
    await ws.setResume({ phase: 'execute', turn: 3, data: { step: 2 } })
    expect(ws.resume).toEqual({ phase: 'execute', turn: 3, data: { step: 2 } })
    await expect(ws.setResume({ phase: 'nap' as 'plan', turn: 1 })).rejects.toThrow(TypeError)
  })
})

describe('sessions, purge and safe stop', () => {
  it('forks a session that shares the lower layer and blobs but has its own files, history and checkpoints', async () => {
    const main = await Workspace.open({ lower: { '/a.txt': 'lower' }, autoCheckpoint: false })
    main.fs.writeFileSync('/a.txt', 'main edit')
    await main.state.set('plan', 'shared start')
    await main.checkpoint({ name: 'start' })
    const fork = await main.fork('experiment')
    expect(fork.session).toBe('experiment')
    expect(fork.fs.readFileSync('/a.txt', 'utf8')).toBe('main edit')
    expect(await fork.state.get('plan')).toBe('shared start')
    fork.fs.writeFileSync('/a.txt', 'fork edit')
    fork.fs.writeFileSync('/only-fork.txt', 'x')
    expect(main.fs.readFileSync('/a.txt', 'utf8')).toBe('main edit')
    expect(main.fs.existsSync('/only-fork.txt')).toBe(false)
    expect(fork.checkpoints()).toEqual([])
    await fork.checkpoint({ name: 'start' }) // names are unique per session, not across sessions
    await main.restore('start')
    expect(fork.fs.readFileSync('/a.txt', 'utf8')).toBe('fork edit')
    expect(fork.history().every((op) => op.session === 'experiment')).toBe(true)
    await expect(main.fork('experiment')).rejects.toThrow(/already open/)
  })

  it('purges a leaked secret from the live tree, checkpoints and undo records', async () => {
    const secret = 'AKIA' + 'Q'.repeat(16)
    const ws = await Workspace.open({ autoCheckpoint: false })
    ws.fs.writeFileSync('/.env', `KEY=${secret}\n`)
    await ws.checkpoint({ name: 'leaky' })
    ws.fs.writeFileSync('/.env', `KEY=${secret}\nOTHER=1\n`)
    const report = await ws.purge('/.env')
    expect(report).toMatchObject({ erased: 2, checkpoints: 1, sharedElsewhere: 0, lowerStillHasIt: false })
    expect(ws.fs.readFileSync('/.env', 'utf8')).toBe('')
    await ws.restore('leaky')
    expect(ws.fs.readFileSync('/.env', 'utf8')).toBe('')
    for (const op of ws.history()) {
      for (const d of ws.operation(op.id)?.diff ?? []) expect(d.patch ?? '').not.toContain(secret)
    }
    while (ws.history().some((op) => !('undone' in op))) await ws.undo({ steps: 1 })
    expect(ws.fs.existsSync('/.env') ? ws.fs.readFileSync('/.env', 'utf8') : '').not.toContain(secret)
  })

  it('refuses to purge a path that never held a file (ENOENT) or a directory (EISDIR), and changes nothing', async () => {
    const ws = await Workspace.open({ autoCheckpoint: false, lower: { '/project/README.md': 'lower', '/project/src/a.ts': 'a' } })
    ws.fs.mkdirSync('/dir')
    ws.fs.writeFileSync('/dir/kept', 'kept')
    const history = ws.history().length
    await expect(ws.purge('/dir/typo')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'purge', path: '/dir/typo' })
    await expect(ws.purge('/dir')).rejects.toMatchObject({ code: 'EISDIR', syscall: 'purge', path: '/dir' })
    await expect(ws.purge('/project/src')).rejects.toMatchObject({ code: 'EISDIR', path: '/project/src' })
    expect(ws.history()).toHaveLength(history)
    expect(ws.fs.readFileSync('/dir/kept', 'utf8')).toBe('kept')
    // A lower file never copied up: nothing of ours to erase, said so.
    expect(await ws.purge('/project/README.md')).toMatchObject({ erased: 0, lowerStillHasIt: true })
    // A directory now that was a file in history: its history is purged.
    ws.fs.writeFileSync('/was-file', 'SECRET')
    ws.fs.unlinkSync('/was-file')
    ws.fs.mkdirSync('/was-file')
    expect(await ws.purge('/was-file')).toMatchObject({ erased: 1, operations: 2 })
    // Deleted, with only its history left: purged, not ENOENT.
    ws.fs.writeFileSync('/gone', 'SECRET 2')
    ws.fs.unlinkSync('/gone')
    expect(await ws.purge('/gone')).toMatchObject({ erased: 1 })
  })

  it('stops safely when an undo cannot be carried out and no checkpoint can be restored', async () => {
    const alerts: string[] = []
    const ws = await Workspace.open({ autoCheckpoint: false, onAlert: (alert) => alerts.push(alert.kind) })
    ws.fs.writeFileSync('/f', '1')
    const journal = (ws as unknown as { journal: { revert(): void } }).journal
    journal.revert = () => {
      throw new Error('disk on fire')
    }
    await expect(ws.undo()).rejects.toMatchObject({ code: 'ESAFESTOP' })
    expect(alerts).toEqual(['undo-failed', 'safe-stop'])
    expect(ws.frozen).toMatch(/disk on fire/)
    expect(() => ws.fs.writeFileSync('/g', 'x')).toThrow(expect.objectContaining({ code: 'EROFS' }))
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('1')
    expect(ws.history()).toHaveLength(1)
    ws.unfreeze()
    ws.fs.writeFileSync('/g', 'x')
  })

  it('falls back to the nearest checkpoint when an undo fails twice', async () => {
    const alerts: string[] = []
    const ws = await Workspace.open({ autoCheckpoint: false, onAlert: (alert) => alerts.push(alert.kind) })
    ws.fs.writeFileSync('/f', 'checkpointed')
    await ws.checkpoint({ name: 'safe' })
    ws.fs.writeFileSync('/f', 'later')
    const journal = (ws as unknown as { journal: { revert(): void } }).journal
    let attempts = 0
    journal.revert = () => {
      attempts++
      throw new Error('broken record')
    }
    await ws.undo()
    expect(attempts).toBe(2)
    expect(alerts).toEqual(['undo-failed'])
    expect(ws.fs.readFileSync('/f', 'utf8')).toBe('checkpointed')
    expect(ws.frozen).toBeUndefined()
  })
})
