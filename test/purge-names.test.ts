/**
 * Purge takes a file's contents out of history under every name they had there: the file's names
 * before a rename (of it or of a directory above it), a copy since deleted, a hard link's other
 * name. Purging by path alone left a checkpoint made before `mv .env .env.local` holding the
 * secret; the live tree keeping the same bytes elsewhere keeps them (sharedElsewhere).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { directoryStore } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-purge-names-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const SECRET = 'TOKEN=sk-live-0123456789abcdef'

/** Every byte under a directory, file by file. */
const everyFile = (dir: string): Buffer[] =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => fs.readFileSync(`${entry.parentPath}/${entry.name}`))

describe('purge under earlier names', () => {
  it('a file renamed after a checkpoint: the checkpoint and the undo of the rename read it empty', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/.env', SECRET)
    await ws.checkpoint({ name: 'c1' })
    ws.fs.renameSync('/.env', '/.env.local')
    expect(await ws.purge('/.env.local')).toMatchObject({ erased: 1, sharedElsewhere: 0 })
    await ws.restore('c1')
    expect(ws.fs.readFileSync('/.env', 'utf8')).toBe('')
    await ws.undoRestore()
    await ws.undo({ types: ['rename'] })
    expect(ws.fs.readFileSync('/.env', 'utf8')).toBe('')
    await ws.close()
  })

  it('a directory renamed above it, and a copy since deleted, in a directory store: no file of the store holds it', async () => {
    const dir = path.join(root, 'store')
    const ws = await Workspace.open({ lower: {}, store: directoryStore(dir), autoCheckpoint: false })
    ws.fs.mkdirSync('/config')
    ws.fs.writeFileSync('/config/secrets.env', SECRET)
    ws.fs.copyFileSync('/config/secrets.env', '/backup.env')
    await ws.checkpoint({ name: 'before-move' })
    ws.fs.renameSync('/config', '/settings')
    ws.fs.unlinkSync('/backup.env')
    await ws.sync()
    expect(await ws.purge('/settings/secrets.env')).toMatchObject({ erased: 1, sharedElsewhere: 0, storeOverwrote: true })
    await ws.restore('before-move')
    expect([ws.fs.readFileSync('/config/secrets.env', 'utf8'), ws.fs.readFileSync('/backup.env', 'utf8')]).toEqual(['', ''])
    await ws.close()
    expect(everyFile(dir).filter((bytes) => bytes.includes(SECRET))).toEqual([])
  })

  it('keeps the contents another live file still holds, everywhere, and says so', async () => {
    const ws = await Workspace.open({ lower: {}, autoCheckpoint: false })
    ws.fs.writeFileSync('/a.env', SECRET)
    ws.fs.copyFileSync('/a.env', '/b.env')
    await ws.checkpoint({ name: 'both' })
    expect(await ws.purge('/a.env')).toMatchObject({ erased: 0, sharedElsewhere: 1 })
    expect([ws.fs.readFileSync('/a.env', 'utf8'), ws.fs.readFileSync('/b.env', 'utf8')]).toEqual(['', SECRET])
    await ws.restore('both')
    expect(ws.fs.readFileSync('/b.env', 'utf8')).toBe(SECRET)
    await ws.close()
  })
})
