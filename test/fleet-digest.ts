/**
 * A fleet session's own state as one short string (test/fleet.test.ts and its machines): the tree
 * under /work/<session>, which only that session writes, and its checkpoint names in order.
 */
import { createHash } from 'node:crypto'
import type { Workspace } from '../src/index.js'

export function sessionDigest(entries: readonly string[], checkpoints: readonly string[]): string {
  return createHash('sha1').update(JSON.stringify({ entries, checkpoints })).digest('hex').slice(0, 16)
}

export function digest(ws: Workspace, session: string): string {
  const root = `/work/${session}`
  const entries: string[] = []
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = `${dir}/${name}`
      if (ws.fs.lstatSync(path).isDirectory()) {
        entries.push(`${path}/`)
        walk(path)
      } else entries.push(`${path}=${createHash('sha1').update(ws.fs.readFileSync(path) as Uint8Array).digest('hex').slice(0, 12)}`)
    }
  }
  if (ws.fs.existsSync(root)) walk(root)
  return sessionDigest(entries, ws.checkpoints().map((c) => c.name))
}
