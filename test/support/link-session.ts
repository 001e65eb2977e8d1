/**
 * One session with hard links over a durable store, reopened twice (from the journal, then from a
 * compacted snapshot): the names must come back as one shared inode each time. Used for every store.
 */
import { expect } from 'vitest'
import type { Workspace } from '../../src/index.js'

/** A session over `store`: links, a checkpoint, writes, unlinks; reopened, the inode is still shared. */
export async function durableLinkSession(open: () => Promise<Workspace>): Promise<void> {
  let ws = await open()
  ws.fs.writeFileSync('/f', 'one')
  ws.fs.linkSync('/f', '/g')
  const one = await ws.checkpoint({ name: 'one' })
  ws.fs.writeFileSync('/g', 'two')
  ws.fs.mkdirSync('/d')
  ws.fs.linkSync('/g', '/d/h')
  ws.fs.unlinkSync('/f')
  await ws.close()
  ws = await open()
  expect([ws.fs.readFileSync('/d/h', 'utf8'), ws.fs.statSync('/g').nlink, ws.fs.statSync('/g').ino]).toEqual(['two', 2, ws.fs.statSync('/d/h').ino])
  ws.fs.writeFileSync('/d/h', 'three')
  expect(ws.fs.readFileSync('/g', 'utf8')).toBe('three')
  // A new file after reopening gets an inode of its own.
  ws.fs.writeFileSync('/new', 'n')
  expect(ws.fs.statSync('/new').ino).not.toBe(ws.fs.statSync('/g').ino)
  await ws.undo()
  expect(ws.fs.existsSync('/new')).toBe(false)
  await ws.restore(one.id)
  expect([ws.fs.readFileSync('/f', 'utf8'), ws.fs.statSync('/f').nlink]).toEqual(['one', 2])
  // Compacted into one snapshot, then reopened.
  await ws.compact()
  await ws.close()
  ws = await open()
  ws.fs.writeFileSync('/g', 'after compact')
  expect([ws.fs.readFileSync('/f', 'utf8'), ws.fs.statSync('/f').nlink]).toEqual(['after compact', 2])
  await ws.close()
}

