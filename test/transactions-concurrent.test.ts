/**
 * Transactions running at the same time (Promise.all, or one started while another's body awaits)
 * stage, validate and commit each on its own: none joins another's staging, so none is lost with
 * another's throw, skips its own validators, or lands inside another's operation.
 */
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/adapter-kit.js'
import { Workspace } from '../src/index.js'
import type { Validator } from '../src/engine/validator.js'

/** A gate the first transaction's body waits at, opened from the second's body: both bodies run interleaved. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

/** Refuses /second.txt and notes every path it was asked about. */
function refusing(seen: string[], refuse: boolean): Validator {
  return {
    name: 'no-second',
    match: '**',
    validate(_content, path) {
      seen.push(path)
      return refuse && path === '/second.txt' ? 'second refused' : true
    },
  }
}

const listed = (ws: Workspace): string[] => ws.history().map((op) => `${op.type} ${op.group ?? '-'} ${op.description ?? '-'} ${op.paths.join(',')}`)

describe('concurrent transactions', () => {
  it('when the first throws, the second still commits its own write as its own operation, after its own validators', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    const { opened, open } = gate()
    const seen: string[] = []
    const first = ws.transaction(
      async (fs) => {
        fs.writeFileSync('/first.txt', 'one')
        await opened
        throw new Error('first fails')
      },
      { label: 'first' },
    )
    const second = ws.transaction(
      (fs) => {
        fs.writeFileSync('/second.txt', 'two')
        open()
        return 'second done'
      },
      { label: 'second', validators: [refusing(seen, false)] },
    )
    const [one, two] = await Promise.allSettled([first, second])
    expect(one).toMatchObject({ status: 'rejected', reason: { message: 'first fails' } })
    expect(two).toEqual({ status: 'fulfilled', value: 'second done' })
    expect(seen).toEqual(['/second.txt'])
    expect(ws.fs.readFileSync('/second.txt', 'utf8')).toBe('two')
    expect(ws.fs.existsSync('/first.txt')).toBe(false)
    expect(listed(ws)).toEqual(['transaction - second /second.txt'])
    await ws.close()
  })

  it('when both commit, each is its own operation in its own group, and undo({ group }) takes back each', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    const { opened, open } = gate()
    const first = ws.transaction(
      async (fs) => {
        fs.writeFileSync('/first.txt', 'one')
        await opened
      },
      { label: 'first', group: 'g1' },
    )
    const second = ws.transaction(
      (fs) => {
        fs.writeFileSync('/second.txt', 'two')
        open()
      },
      { label: 'second', group: 'g2' },
    )
    await Promise.all([first, second])
    // The second's body finished first: it committed first.
    expect(listed(ws)).toEqual(['transaction g1 first /first.txt', 'transaction g2 second /second.txt'])
    const undoneFirst = await ws.undo({ group: 'g1' })
    expect(undoneFirst.undone.map((op) => op.group)).toEqual(['g1'])
    expect([ws.fs.existsSync('/first.txt'), ws.fs.existsSync('/second.txt')]).toEqual([false, true])
    const undoneSecond = await ws.undo({ group: 'g2' })
    expect(undoneSecond.undone.map((op) => op.group)).toEqual(['g2'])
    expect([ws.fs.existsSync('/first.txt'), ws.fs.existsSync('/second.txt')]).toEqual([false, false])
    await ws.close()
  })

  it("when the second's own validator refuses, the second rejects (ValidationError) and the first commits alone", async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    const { opened, open } = gate()
    const seen: string[] = []
    const first = ws.transaction(
      async (fs) => {
        fs.writeFileSync('/first.txt', 'one')
        await opened
        return 'first done'
      },
      { label: 'first', group: 'g1' },
    )
    const second = ws.transaction(
      (fs) => {
        fs.writeFileSync('/second.txt', 'two')
        open()
        return 'second done'
      },
      { label: 'second', group: 'g2', validators: [refusing(seen, true)] },
    )
    const [one, two] = await Promise.allSettled([first, second])
    expect(one).toEqual({ status: 'fulfilled', value: 'first done' })
    expect(two).toMatchObject({ status: 'rejected', reason: { name: 'ValidationError', code: 'EVALIDATION', failures: [{ path: '/second.txt', validator: 'no-second', message: 'second refused' }] } })
    // The second's validators saw only its own staged files, and the first's none of them.
    expect(seen).toEqual(['/second.txt'])
    expect([ws.fs.existsSync('/first.txt'), ws.fs.existsSync('/second.txt')]).toEqual([true, false])
    expect(listed(ws)).toEqual(['transaction g1 first /first.txt'])
    await ws.close()
  })

  it('when both staged the same path, the one committing second is a ConflictError and the first commit stays', async () => {
    const ws = await Workspace.open({ lower: { '/shared.txt': 'base' }, autoCheckpoint: false })
    const { opened, open } = gate()
    const first = ws.transaction(
      async (fs) => {
        fs.writeFileSync('/shared.txt', 'first')
        await opened
      },
      { group: 'g1' },
    )
    const second = ws.transaction(
      (fs) => {
        fs.writeFileSync('/shared.txt', 'second')
        open()
      },
      { group: 'g2' },
    )
    const [one, two] = await Promise.allSettled([first, second])
    expect(two.status).toBe('fulfilled')
    expect(one).toMatchObject({ status: 'rejected', reason: { name: 'ConflictError', code: 'ECONFLICT', paths: ['/shared.txt'] } })
    expect(ws.fs.readFileSync('/shared.txt', 'utf8')).toBe('second')
    expect(listed(ws)).toEqual(['transaction g2 - /shared.txt'])
    await ws.close()
  })

  it('both operations are durable: a reopen over the same store lists and undoes each', async () => {
    const store = new MemoryStore()
    let ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    const { opened, open } = gate()
    const first = ws.transaction(
      async (fs) => {
        fs.writeFileSync('/first.txt', 'one')
        await opened
      },
      { label: 'first', group: 'g1' },
    )
    const second = ws.transaction(
      (fs) => {
        fs.writeFileSync('/second.txt', 'two')
        open()
      },
      { label: 'second', group: 'g2' },
    )
    await Promise.all([first, second])
    await ws.close()
    ws = await Workspace.open({ lower: {}, store, autoCheckpoint: false })
    expect(listed(ws)).toEqual(['transaction g1 first /first.txt', 'transaction g2 second /second.txt'])
    expect([ws.fs.readFileSync('/first.txt', 'utf8'), ws.fs.readFileSync('/second.txt', 'utf8')]).toEqual(['one', 'two'])
    await ws.undo({ group: 'g1' })
    expect([ws.fs.existsSync('/first.txt'), ws.fs.existsSync('/second.txt')]).toEqual([false, true])
    await ws.undo({ group: 'g2' })
    expect([ws.fs.existsSync('/first.txt'), ws.fs.existsSync('/second.txt')]).toEqual([false, false])
    await ws.close()
  })
})

describe('undoing one transaction of several in a directory', () => {
  it('takes back the older one alone: the directory times a transaction records are not a dependency of what is written beside them', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    await ws.transaction((fs) => fs.writeFileSync('/first.txt', 'one'), { group: 'g1' })
    await ws.transaction((fs) => fs.writeFileSync('/second.txt', 'two'), { group: 'g2' })
    const undone = await ws.undo({ group: 'g1' })
    expect(undone.undone.map((op) => op.group)).toEqual(['g1'])
    expect(ws.fs.readdirSync('/')).toEqual(['second.txt'])
  })

  it('still refuses when a later one wrote inside a directory the older one made, or changed that directory', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    await ws.transaction((fs) => fs.mkdirSync('/made'), { group: 'made' })
    await ws.transaction((fs) => fs.writeFileSync('/made/inside.txt', 'x'), { group: 'inside' })
    await expect(ws.undo({ group: 'made' })).rejects.toMatchObject({ code: 'EDEPENDENT' })
    const other = await Workspace.open({ lower: {}, autoCheckpoint: false })
    await other.transaction((fs) => fs.mkdirSync('/made'), { group: 'made' })
    await other.transaction((fs) => fs.chmodSync('/made', 0o700), { group: 'mode' })
    await expect(other.undo({ group: 'made' })).rejects.toMatchObject({ code: 'EDEPENDENT' })
  })
})
