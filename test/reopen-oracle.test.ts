/**
 * What a reopen shows is what was acknowledged, to the last stat field: random sessions over a
 * directory lower and a directory store (writes, renames, links, truncates, chmod, utimes, copies,
 * descriptor writes, transactions, commands, undo, redo, restores, compactions) are synced, closed
 * and reopened at random points, and every entry's mode, times, inode, link count, size and content
 * must be what they were. Contents are unique per write: a rewrite with a file's own bytes records
 * nothing (README, The rollback engine), and change times are left out for the same reason.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { directory, directoryStore, hostShell } from '../adapters/node-fs/index.js'
import { Workspace } from '../src/index.js'
import { generator, seeds } from './support/seed.js'

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-reopen-oracle-`)
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** Errors a random call may meet as Node would answer it (a name taken, a path gone, a copy into itself). */
const EXPECTED = new Set(['ENOENT', 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EINVAL', 'EPERM', 'EBUSY', 'ELOOP'])

/** Every entry's stat as a line (change times aside), the root's times first. */
function statLines(ws: Workspace): string[] {
  const view = ws.fs
  const lines: string[] = []
  const root = view.lstatSync('/')
  lines.push(`/ m=${root.mtimeMs}`)
  const walk = (dir: string) => {
    for (const name of (view.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const st = view.lstatSync(path)
      const base = `${path} mode=${st.mode.toString(8)} m=${st.mtimeMs} b=${st.birthtimeMs} ino=${st.ino}`
      if (st.isSymbolicLink()) lines.push(`${base} -> ${view.readlinkSync(path)}`)
      else if (st.isDirectory()) {
        lines.push(base)
        walk(path)
      } else lines.push(`${base} nlink=${st.nlink} size=${st.size} ${createHash('sha1').update(view.readFileSync(path) as Uint8Array).digest('hex')}`)
    }
  }
  walk('/')
  return lines
}

describe('a reopen shows every stat field as acknowledged', () => {
  for (const seed of seeds()) {
    it(`random sessions with reopens (seed ${seed})`, async () => {
      const { next: random, below, pick } = generator(seed)
      const root = fs.mkdtempSync(`${scratch}/s${seed}-`)
      fs.mkdirSync(`${root}/lower/src/lib`, { recursive: true })
      fs.writeFileSync(`${root}/lower/src/a.txt`, 'a')
      fs.writeFileSync(`${root}/lower/src/lib/b.txt`, 'b')
      fs.writeFileSync(`${root}/lower/top.txt`, 'top')
      const open = () => Workspace.open({ lower: directory(`${root}/lower`), store: directoryStore(`${root}/store`), ...(random() < 0.5 ? { autoCheckpoint: false as const } : {}), exec: hostShell({ mode: 'copy' }) })
      let ws = await open()
      const names = ['a', 'b', 'c']
      let reopens = 0
      for (let n = 0; n < 200; n++) {
        const view = ws.fs
        const all: string[] = []
        const dirs = ['/']
        const files: string[] = []
        const walk = (dir: string) => {
          for (const name of view.readdirSync(dir) as string[]) {
            const path = dir === '/' ? `/${name}` : `${dir}/${name}`
            const st = view.lstatSync(path)
            all.push(path)
            if (st.isDirectory()) {
              dirs.push(path)
              walk(path)
            } else if (st.isFile()) files.push(path)
          }
        }
        walk('/')
        const child = (prefix: string) => {
          const dir = pick(dirs)
          return `${dir === '/' ? '' : dir}/${prefix}${pick(names)}`
        }
        const anyFile = () => (files.length > 0 ? pick(files) : '/missing')
        const anyEntry = () => (all.length > 0 ? pick(all) : '/missing')
        const r = random()
        try {
          if (r < 0.18) view.writeFileSync(random() < 0.4 ? anyFile() : child('f'), `content ${n}`)
          else if (r < 0.25) view.mkdirSync(child('d'))
          else if (r < 0.32) view.renameSync(anyEntry(), child('r'))
          else if (r < 0.37) view.rmSync(anyEntry(), { recursive: true, force: true })
          else if (r < 0.4) view.symlinkSync(anyEntry(), child('l'))
          else if (r < 0.43) view.linkSync(anyFile(), child('h'))
          else if (r < 0.46) {
            const file = anyFile()
            const size = view.statSync(file).size
            view.truncateSync(file, size === 0 ? 1 : size - 1)
          } else if (r < 0.49) view.chmodSync(anyEntry(), 0o600 + below(0o100))
          else if (r < 0.52) view.utimesSync(anyEntry(), 1e9 + below(1e6), 1e9 + below(1e6))
          else if (r < 0.55) view.copyFileSync(anyFile(), `${child('c')}${n}`) // a new name: a copy over an equal file is a rewrite
          else if (r < 0.58) view.cpSync(anyFile(), `${child('p')}${n}`, { preserveTimestamps: true })
          else if (r < 0.61) view.appendFileSync(anyFile(), `more ${n}`)
          else if (r < 0.64) {
            const fd = view.openSync(anyFile(), 'r+')
            view.writeSync(fd, `w${n}`, below(4))
            view.closeSync(fd)
          } else if (r < 0.7) await ws.undo()
          else if (r < 0.73) await ws.redo()
          else if (r < 0.77) await ws.checkpoint({ name: `c${n}` })
          else if (r < 0.8) {
            const checkpoints = ws.checkpoints()
            if (checkpoints.length > 0) await ws.restore(pick(checkpoints).id)
          } else if (r < 0.82) await ws.compact()
          else if (r < 0.85) await ws.transaction((staged) => staged.writeFileSync(child('t'), `staged ${n}`))
          else if (r < 0.9) {
            const target = anyEntry().slice(1) || 'missing'
            await ws.exec(`${pick([`touch -d @${1e9 + below(1e6)} ${target}`, `echo ${n} > n${n}`, `chmod 640 ${target}`, `mv ${target} m${n}`, `rm -rf ${target}`])} 2>/dev/null; true`)
          } else {
            await ws.sync()
            const before = statLines(ws)
            await ws.close()
            ws = await open()
            reopens++
            expect(statLines(ws), `reopened after operation ${n}`).toEqual(before)
          }
        } catch (error) {
          const code = (error as { code?: string }).code ?? ''
          if (!EXPECTED.has(code) && !code.startsWith('ERR_FS_CP')) throw error
        }
      }
      await ws.sync()
      const before = statLines(ws)
      await ws.close()
      ws = await open()
      expect(statLines(ws), 'reopened at the end').toEqual(before)
      expect(reopens).toBeGreaterThan(0)
      await ws.close()
    }, 60_000)
  }
})
